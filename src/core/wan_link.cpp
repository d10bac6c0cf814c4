// The link under the `wan` route (issue 13; docs/design/reconnect.md): writes and reads through
// TLS, the send log of a resumable stream and its acknowledgements, a broken connection going
// down instead of dead, and the two sides of a reconnect (the higher host dials again, the
// other accepts on the host socket kept from the dance). The wire formats are wanlink's.
// Every lane of a link (issue 14) is such a stream of its own: a reconnect names its lane in the
// HELLO, and an extra lane's first connection is a "reconnect" from offset 0 (HELLO kind 2),
// so opening lanes and resuming them after a reset are one code path.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/wan_impl.hpp"

namespace wanmpi::core::wan_internal {

namespace {
int64_t now_ms() { return base::now_ns() / 1000000; }
}  // namespace

ssize_t Wan::io_writev(Lane& p, const iovec* iov, int n) {
    ssize_t w = p.tls ? p.tls->writev(iov, n) : base::send_iov(p.fd, iov, n);
    if (w > 0 && p.resume) {
        p.log.append(iov, n, size_t(w));
        p.replay_pos = p.log.end();
        p.doubt = true;
    }
    return w;
}

ssize_t Wan::raw_recv(Lane& p, void* buf, size_t n) {
    return p.tls ? p.tls->recv(buf, n) : ::recv(p.fd, buf, n, MSG_DONTWAIT);
}

ssize_t Wan::io_recv(Lane& p, void* buf, size_t n) {
    // After a reconnect we accepted while the old connection still delivered: the peer
    // resends from the offset our HELLO named, and what we consumed since is dropped here.
    while (p.skip_in > 0) {
        char tmp[65536];
        ssize_t r = raw_recv(p, tmp, size_t(std::min<uint64_t>(sizeof tmp, p.skip_in)));
        if (r <= 0) return r;
        p.skip_in -= uint64_t(r);
    }
    ssize_t r = raw_recv(p, buf, n);
    if (r > 0) p.recv_off += uint64_t(r);
    return r;
}

std::string Wan::io_error(const Lane& p) const {
    const int e = errno;
    std::string t = std::strerror(e);
    if (p.tls && !p.tls->error().empty()) t += " (TLS: " + p.tls->error() + ")";
    if (e == EBADMSG) t += "; a TLS record failed authentication: the data was altered on the way";
    return t;
}

void Wan::broken(Lane& p, const std::string& why) {
    if (!p.peer->alive || p.down) return;
    if (!p.resume) return fail(*p.peer, why);
    WANMPI_LOG(warn, "%s; reconnecting (up to %lld s, WANMPI_WAN_RECONNECT_S)", why.c_str(),
               (long long)(reconnect_ms_ / 1000));
    close_lane(p);
    p.down = true;
    p.down_why = why;
    p.down_since = now_ms();
    p.next_try = p.down_since;
    p.backoff_ms = 10;
    arm_timer(1'000'000);
}

void Wan::queue_ack(Lane& p) {
    Packet pk = base_packet(*p.peer, impi::PK_WAN_ACK);
    pk.srqid = p.recv_off;
    Out o;
    impi::encode_packet(pk, o.hdr);
    o.counted = false;
    o.is_ack = true;
    auto at = p.wire.begin();
    if (at != p.wire.end() && at->off > 0) ++at;
    p.wire.insert(at, std::move(o));
    p.acked_out = p.recv_off;
}

wanlink::Hello Wan::hello_for(const Lane& p) const {
    wanlink::Hello h;
    h.flags = links_.link.flags;
    h.kind = p.opening ? 2 : 1;
    h.lane = p.idx;
    h.from = uint32_t(me_);
    h.to = uint32_t(p.rank);
    // Where the peer must resend from: never inside a packet header (an impi-relay between us
    // parses the resent stream from there on, handshake.hpp); the partial header we hold is
    // skipped when its bytes come again (the caller passes recv_off - this as skip_in).
    if (!p.in_payload) {
        h.recv_off = p.recv_off - p.hdr_got;
    } else {
        h.recv_off = p.recv_off;
        h.pay_left = uint32_t(p.pk.len - p.got);
    }
    h.epoch = p.reconnects + 1;
    return h;
}

bool Wan::resume_on(Lane& p, base::Fd fd, std::unique_ptr<wanlink::Tls> tls,
                    uint64_t peer_recv_off, uint64_t skip_in) {
    if (peer_recv_off < p.log.begin() || peer_recv_off > p.log.end()) {
        fail(*p.peer, "reconnected to " + lane_name(p) + ", but it asks to resume at byte " +
                std::to_string(peer_recv_off) + " while this side keeps bytes " +
                std::to_string(p.log.begin()) + ".." + std::to_string(p.log.end()));
        return false;
    }
    close_lane(p);  // the peer found the old connection dead before we did
    p.log.ack(peer_recv_off);
    p.replay_pos = peer_recv_off;
    p.skip_in = skip_in;
    p.fd = fd.release();
    p.tls = std::move(tls);
    start_socket(p);
    const int64_t took = p.down ? now_ms() - p.down_since : 0;
    p.down = false;
    p.suspended = false;
    if (p.opening) {
        p.opening = false;
        WANMPI_LOG(info, "opened %s in %lld ms", lane_name(p).c_str(), (long long)took);
        return true;
    }
    p.reconnects++;
    p.ctr.reconnects++;
    p.ctr.resent_bytes += p.log.end() - peer_recv_off;
    WANMPI_LOG(warn, "reconnected to %s after %lld ms; resending %llu bytes it had not "
                     "received",
               lane_name(p).c_str(), (long long)took,
               (unsigned long long)(p.log.end() - peer_recv_off));
    return true;
}

int Wan::reconnect_step(Lane& p) {
    const int64_t now = now_ms();
    if (p.opening && me_ > p.rank && now - p.down_since >= down_limit_ms(p)) {
        drop_lane(p, "not opened within " + std::to_string(down_limit_ms(p) / 1000) +
                         " s (WANMPI_WAN_LANE_OPEN_S)" +
                         (p.last_err.empty() ? "" : "; the last attempt: " + p.last_err),
                  true);
        return 1;
    }
    if (now - p.down_since >= down_limit_ms(p)) {
        fail(*p.peer, p.down_why + (p.opening ? "; not opened within " : "; no reconnect within ") +
                          std::to_string(down_limit_ms(p) / 1000) +
                          " s (WANMPI_WAN_RECONNECT_S)");
        return 0;
    }
    if (me_ < p.rank || now < p.next_try) return 0;
    p.next_try = now + p.backoff_ms;
    p.backoff_ms = std::min<int64_t>(p.backoff_ms * 2, 1000);
    const auto& h = job_.hosts[size_t(job_.procs[size_t(p.rank)].host)];
    // A lane being opened: short attempts (each blocks this rank's progress), several of them
    // within WANMPI_WAN_LANE_OPEN_S.
    const int64_t budget = std::clamp<int64_t>(down_limit_ms(p) - (now - p.down_since), 1,
                                               p.opening ? 1000 : 5000);
    const int64_t deadline = now + budget;
    std::string err;
    int fd = base::tcp_connect(h.addr(), h.port, int(budget), &err);
    if (fd < 0) {
        WANMPI_LOG(info, "reconnect to %s: %s", lane_name(p).c_str(), err.c_str());
        p.last_err = "connect: " + err;
        return 0;
    }
    base::Fd f(fd);
    const int64_t connected_ms = base::now_ns() / 1000000;
    base::set_nonblock(fd, true);
    // The handshakes are small messages back to back: Nagle would hold each behind the
    // peer's delayed ACK (40 ms a step).
    base::set_nodelay(fd);
    uint8_t rk[4];
    base::put_be32(rk, uint32_t(me_));
    if (::send(fd, rk, 4, MSG_NOSIGNAL) != 4) return 0;
    const wanlink::Hello mine = hello_for(p);
    wanlink::LinkHandshake hs(true, links_.link.keyed ? &links_.link.key : nullptr,
                              links_.link.session.data(), mine, uint32_t(p.rank));
    for (;;) {
        auto r = hs.step(fd);
        if (r == wanlink::LinkHandshake::done) break;
        if (r == wanlink::LinkHandshake::failed) {
            WANMPI_LOG(warn, "reconnect to %s: %s", lane_name(p).c_str(), hs.reason().c_str());
            p.last_err = hs.reason();
            return 0;
        }
        pollfd pf{fd, POLLIN, 0};
        const int64_t left = deadline - now_ms();
        if (left <= 0 || ::poll(&pf, 1, int(left)) <= 0) {
            WANMPI_LOG(info, "reconnect to %s: no handshake answer", lane_name(p).c_str());
            p.last_err = "connected, but no link handshake answer within " +
                         std::to_string(budget) + " ms";
            return 0;
        }
    }
    // Through impi-relay the handshake was with the relay: where the peer stopped comes next,
    // in the relay's FAR (handshake.hpp), once the relay reached the peer.
    uint64_t peer_off = hs.peer().recv_off;
    if (!impi::relay_of(p.peer->proc).empty()) {
        uint8_t rec[wanlink::kHello + wanlink::kMac];
        size_t got = 0;
        while (got < sizeof rec) {
            ssize_t r = ::recv(fd, rec + got, sizeof rec - got, MSG_DONTWAIT);
            if (r > 0) {
                got += size_t(r);
                continue;
            }
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                WANMPI_LOG(info, "reconnect to %s: the relay closed before it reached the peer",
                           lane_name(p).c_str());
                p.last_err = "the relay closed before it reached the peer";
                return 0;
            }
            pollfd pf{fd, POLLIN, 0};
            const int64_t left = deadline - now_ms();
            if (left <= 0 || ::poll(&pf, 1, int(left)) <= 0) {
                WANMPI_LOG(info, "reconnect to %s: the relay did not reach the peer",
                           lane_name(p).c_str());
                p.last_err = "the relay did not reach the peer within " + std::to_string(budget) +
                             " ms";
                return 0;
            }
        }
        wanlink::Hello far;
        std::string err = hs.decode_far(rec, &far);
        if (err.empty() && (far.from != uint32_t(p.rank) || far.to != uint32_t(me_)))
            err = "FAR names the wrong hosts";
        if (!err.empty()) {
            WANMPI_LOG(warn, "reconnect to %s: %s", lane_name(p).c_str(), err.c_str());
            return 0;
        }
        peer_off = far.recv_off;
    }
    std::unique_ptr<wanlink::Tls> tls;
    if (hs.tls()) {
        const auto psk = hs.tls_psk();
        base::Status st = wanlink::Tls::handshake(fd, true, psk.data(),
                                                  std::max<int64_t>(1, deadline - now_ms()), &tls);
        if (!st.ok()) {
            WANMPI_LOG(warn, "reconnect to %s: %s", lane_name(p).c_str(),
                       st.message().c_str());
            return 0;
        }
    }
    WANMPI_LOG(info, "reconnect to %s: connected in %lld ms, handshake%s in %lld ms",
               lane_name(p).c_str(), (long long)(connected_ms - now),
               tls ? " and TLS" : "", (long long)(base::now_ns() / 1000000 - connected_ms));
    return resume_on(p, std::move(f), std::move(tls), peer_off,
                     p.recv_off - mine.recv_off)
               ? 1
               : 0;
}

// Connections on the host socket after the dance: peers reconnecting, or strangers. Each must
// send a host rank that is a higher peer of ours able to resume, then prove it holds the job's
// key in the link handshake; anything else is logged and closed, and the job goes on.
int Wan::serve_reconnects() {
    const int64_t now_ns = base::now_ns();
    if (incoming_.empty() && now_ns - accept_checked_ < 1'000'000) return 0;
    accept_checked_ = now_ns;
    const int64_t now = now_ns / 1'000'000;
    int n = 0;
    for (;;) {
        int fd = ::accept4(links_.listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        Pending c;
        c.fd = base::Fd(fd);
        c.from = base::peer_text(fd);
        base::set_nodelay(fd);
        // Its handshake bytes must wake a sleeping rank (closing the fd takes it out again).
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = kListenTag;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
        c.deadline = now + 10'000;
        if (incoming_.size() >= 64) {
            WANMPI_LOG(warn, "host socket: too many unproven connections; closing the one from %s",
                       incoming_.front().from.c_str());
            incoming_.erase(incoming_.begin());
        }
        incoming_.push_back(std::move(c));
    }
    for (size_t k = 0; k < incoming_.size();) {
        Pending& c = incoming_[k];
        auto drop = [&](const std::string& why) {
            WANMPI_LOG(warn, "host socket: refused the connection from %s: %s", c.from.c_str(),
                       why.c_str());
            incoming_.erase(incoming_.begin() + long(k));
        };
        if (now > c.deadline) {
            drop("no link handshake within 10 s");
            continue;
        }
        bool closed = false;
        while (c.got < 4) {
            ssize_t r = ::recv(c.fd.get(), c.rank + c.got, 4 - c.got, MSG_DONTWAIT);
            if (r > 0) {
                c.got += size_t(r);
                continue;
            }
            closed = r == 0 || (errno != EAGAIN && errno != EINTR);
            break;
        }
        if (closed && c.got == 0) {
            // Closed without a byte: a peer's stall watch testing the path (watch_stalls), or
            // a port scan. Nothing was claimed, so there is nothing to refuse.
            WANMPI_LOG(info, "host socket: %s connected and closed without a word", c.from.c_str());
            incoming_.erase(incoming_.begin() + long(k));
            continue;
        }
        if (c.got < 4) {
            ++k;
            continue;
        }
        if (!c.hs) {
            const uint32_t r = base::get_be32(c.rank);
            bool takes = false;  // a lane of it can resume or is still to be opened
            if (r < uint32_t(job_.size()) && int(r) > me_ && peers_[r].alive)
                for (const auto& l : peers_[r].lanes) takes = takes || l->resume || l->opening;
            if (!takes) {
                drop("it claims host " + std::to_string(r) +
                     ", which does not reconnect to this host");
                continue;
            }
            c.peer = int(r);
            // Which lane it is comes with its HELLO: our answer waits for it (defer).
            wanlink::Hello h = hello_for(*peers_[r].lanes[0]);
            c.hs = std::make_unique<wanlink::LinkHandshake>(
                false, links_.link.keyed ? &links_.link.key : nullptr,
                links_.link.session.data(), h, r, true);
        }
        auto res = c.hs->step(c.fd.get());
        if (res == wanlink::LinkHandshake::ready) {
            const wanlink::Hello& hc = c.hs->peer();
            Peer& p = peers_[size_t(c.peer)];
            Lane* l = hc.lane < p.k() ? p.lanes[hc.lane].get() : nullptr;
            // Kind 2 opens a lane, kind 1 resumes one. The two sides may disagree on whether
            // the lane was opened (a cut during the opening: one side finished its handshake,
            // the other did not), so either kind is taken for a lane that is opening or can
            // resume; the offsets in the HELLOs settle where each stream goes on (resume_on
            // refuses impossible ones).
            if (!l || hc.kind == 0 || l->dropped || !(l->opening || l->resume)) {
                drop("claiming to be " + peer_name(c.peer) + ": it names lane " +
                     std::to_string(hc.lane) + " (kind " + std::to_string(hc.kind) +
                     "), which this link of " + std::to_string(p.k()) +
                     " lanes does not expect");
                continue;
            }
            const wanlink::Hello h = hello_for(*l);
            c.lane = l;
            c.hello_recv_off = h.recv_off;
            c.hs->answer(h.flags, h.recv_off, h.pay_left, h.epoch);
            res = c.hs->step(c.fd.get());
        }
        if (res == wanlink::LinkHandshake::again || res == wanlink::LinkHandshake::ready) {
            ++k;
            continue;
        }
        if (res == wanlink::LinkHandshake::failed) {
            drop("claiming to be " + peer_name(c.peer) + ": " + c.hs->reason());
            continue;
        }
        Peer& p = peers_[size_t(c.peer)];
        Lane& l = *c.lane;
        std::unique_ptr<wanlink::Tls> tls;
        if (c.hs->tls()) {
            const auto psk = c.hs->tls_psk();
            base::Status st = wanlink::Tls::handshake(c.fd.get(), false, psk.data(), 5000, &tls);
            if (!st.ok()) {
                drop("TLS: " + st.message());
                continue;
            }
        }
        if (!p.alive || l.dropped) {  // (dropped meanwhile: the peer's notice came first)
            incoming_.erase(incoming_.begin() + long(k));
            continue;
        }
        const uint64_t skip = l.recv_off - c.hello_recv_off;
        const uint64_t peer_off = c.hs->peer().recv_off;
        epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd.get(), nullptr);
        base::Fd fd = std::move(c.fd);
        incoming_.erase(incoming_.begin() + long(k));
        n += resume_on(l, std::move(fd), std::move(tls), peer_off, skip) ? 1 : 0;
    }
    return n;
}

// ---- the stall watch (WANMPI_WAN_STALL_MS) ---------------------------------------------------
// After an outage TCP resends at its next retransmission timeout, which backs off to
// WANMPI_WAN_RTO_MAX_MS (1 s at least), and under bbr F-RTO may take that first
// retransmission's success for a spurious timeout and leave the rest for the next one: traffic
// resumed 0.9-2.2 s after the link's return (docs/benchmarks.md "Outage"). A new connection is
// not backed off. So while a lane is stalled (wanlink/stall.hpp) the rank probes the path to
// the peer's host socket (behind impi-relay: the relay's port for it, the lane's first hop),
// and once that answers, every lane of the peer still stalled is reset (RST, so its
// retransmissions stop) and resumes on a new connection through the reconnect path: the higher
// host dials at once; the lower waits, and its RST makes the higher find the old connection
// broken (if it has not already: its own lanes stall too when it has data out). Through a
// relay the RST ends the relayed pair, and both hosts resume through the relay as after any
// break of a leg. A lane to the host's own relay, inside its cluster, does not stall in an
// outage of the WAN: the relay stops reading it and its window closes (nothing unacknowledged);
// the relay watches its outer legs itself (impi_relay_data.cpp).
// A lane stays `stalled` until its data is all acknowledged: a retransmission that got through
// before the probe does not clear it, since F-RTO may still leave the rest for the next timeout.
// Only an answer after unanswered probes (an outage that ended) replaces: a path that answers
// at once is up, and the stall is TCP's loss recovery on a lossy link, left to TCP.
// Only resumable lanes (two wanmpi hosts) are watched: anything else cannot be replaced.
int Wan::watch_stalls() {
    const int64_t now = base::now_ns();
    if (now - stall_checked_ < wanlink::kStallCheckNs) return 0;
    stall_checked_ = now;
    int n = 0;
    for (int r : list_) {
        Peer& p = peers_[size_t(r)];
        if (!p.alive) continue;
        bool any = false;
        for (auto& lp : p.lanes) {
            Lane& l = *lp;
            if (!l.resume || l.fd < 0 || l.down || !l.doubt) {
                l.stalled = false;
                continue;
            }
            const wanlink::TcpInfo t = wanlink::read_tcp_info(l.fd);
            if (!t.ok) continue;
            if (t.unacked == 0) {
                l.doubt = l.stalled = false;
                continue;
            }
            if (!l.stalled && wanlink::is_stalled(t, stall_ms_)) {
                l.stalled = true;
                WANMPI_LOG(info, "%s: %u segments unacknowledged, no ACK for %u ms: stalled; "
                                 "probing the path",
                           lane_name(l).c_str(), t.unacked, t.last_ack_ms);
            }
            any = any || l.stalled;
        }
        if (!any || now < p.probe_hold) {
            end_probe(p);
            continue;
        }
        const auto& h = job_.hosts[size_t(job_.procs[size_t(p.rank)].host)];
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(h.port);
        if (inet_pton(AF_INET, h.addr().c_str(), &to.sin_addr) != 1) continue;
        const wanlink::PathProbe::Result pr = p.probe.poll(to, now);
        if (pr == wanlink::PathProbe::waiting) continue;
        if (pr == wanlink::PathProbe::up) {
            // The path never went away: the stall is TCP's loss recovery on a lossy link,
            // which a new connection would only make longer (wanlink/stall.hpp).
            for (auto& lp : p.lanes) lp->stalled = false;
            p.probe_hold = now + wanlink::kProbeHoldNs;
            WANMPI_LOG(info, "the path to %s answers at once: a stalled lane is left to TCP",
                       peer_name(p.rank).c_str());
            continue;
        }
        for (auto& lp : p.lanes) {
            Lane& l = *lp;
            if (!l.stalled || l.fd < 0 || l.down) continue;
            const wanlink::TcpInfo t = wanlink::read_tcp_info(l.fd);
            l.stalled = false;
            const linger rst{1, 0};
            setsockopt(l.fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
            broken(l, "the connection to " + lane_name(l) + " stalled (" +
                          std::to_string(t.unacked) + " segments unacknowledged, no ACK for " +
                          std::to_string(t.last_ack_ms) + " ms) and " +
                          (impi::relay_of(p.proc).empty() ? "the peer's host" : "the relay") +
                          " answers again: replacing it");
            ++n;
        }
    }
    return n;
}

// ---- lanes that cannot be opened ------------------------------------------------------------
// Only a lane that never carried a byte is dropped, so nothing of it is in flight: the packets
// queued for it were never written, and both ends agree on the lanes in use once the notice is
// in. Order: every (context id, tag) stream of lane l was queued on l alone, in order; its
// packets move to the end of one other lane's queue in that order, and its later packets follow
// on that lane (route), so each stream stays on one FIFO lane, which is all the receiver's
// order rule needs (the sequence numbers are per context id, not per lane). The answers to its
// messages (SYNCACK, CANCEL replies) and a long message's DATA follow the message's lane as
// recorded, which is rewritten too. The peer's own queue for the lane moves the same way when
// it reads the notice; which lane a packet arrives on never matters to a receiver.
void Wan::drop_lane(Lane& l, const std::string& why, bool tell) {
    Peer& p = *l.peer;
    std::vector<uint8_t> live;
    for (const auto& x : p.lanes)
        if (!x->dropped && x.get() != &l) live.push_back(x->idx);
    const uint8_t from = l.idx, to = live[from % live.size()];  // lane 0 is never dropped
    Lane& t = *p.lanes[to];
    close_lane(l);
    l.dropped = true;
    l.opening = l.down = l.suspended = false;
    l.open = false;
    for (auto& r : p.route)
        if (r == from) r = to;
    for (Out& o : l.wire) {
        o.lane = to;
        to_wire(t, std::move(o));
    }
    l.wire.clear();
    for (Bulk& b : l.bulk) t.bulk.push_back(b);
    l.bulk.clear();
    for (Out& o : p.held)
        if (o.lane == from) o.lane = to;
    for (auto& [id, s] : p.sends)
        if (s.lane == from) s.lane = to;
    for (auto& [id, s] : p.long_sends)
        if (s.lane == from) s.lane = to;
    for (auto& [id, f] : p.firsts)
        if (f.lane == from) f.lane = to;
    for (auto& [id, a] : p.answer_lane)
        if (a == from) a = to;
    unsigned used = 0;
    for (const auto& x : p.lanes) used += x->dropped ? 0 : 1;
    WANMPI_LOG(warn, "lane %u to %s %s: %s; going on with %u of %u lanes (its streams move to "
                     "lane %u)",
               unsigned(from), peer_name(p.rank).c_str(),
               tell ? "given up" : "given up by the peer", why.c_str(), used, p.k(),
               unsigned(to));
    if (!tell) return;
    // On lane 0, ahead of queued data (it is no stream's packet), like an acknowledgement.
    Packet pk = base_packet(p, impi::PK_WAN_LANES);
    pk.srqid = uint64_t(1) << from;
    Out o;
    impi::encode_packet(pk, o.hdr);
    o.counted = false;
    Lane& l0 = *p.lanes[0];
    auto at = l0.wire.begin();
    if (at != l0.wire.end() && at->off > 0) ++at;
    l0.wire.insert(at, std::move(o));
}

bool Wan::on_lanes_dropped(Peer& p, uint64_t mask) {
    for (unsigned i = 1; i < p.k() && p.alive; ++i) {
        if (!(mask & (uint64_t(1) << i))) continue;
        Lane& l = *p.lanes[i];
        if (l.dropped) continue;
        // It may have opened on this side only (the peer's attempt failed after our handshake
        // finished): then nothing may have been written on it yet.
        if (!l.opening && (l.log.end() > 0 || l.ctr.bytes_sent > 0 || l.recv_off > 0 ||
                           (!l.wire.empty() && l.wire.front().off > 0))) {
            fail(p, lane_name(l) + " was given up by the peer after this side had sent on it");
            return false;
        }
        drop_lane(l, "the peer could not open it", false);
    }
    if (mask & 1) fail(p, peer_name(p.rank) + " gave up lane 0, which cannot be");
    return p.alive;
}

}  // namespace wanmpi::core::wan_internal
