// impi-relay's data plane (impi_relay_data.hpp).
//
// A pair of hosts (h of the cluster, j outside it) is joined by two connections: fd_in to h and
// fd_out to j. Each direction is a small pipeline over one buffer:
//
//   [0, w)  written to the other side     [w, r)  checked, rewritten, waiting to be written
//   [r, e)  read, not yet parsed           pay     payload bytes of the current packet still due
//
// Headers are rewritten in place; payload bytes are passed as they are. When the rest of a
// payload is at least splice_min bytes and the buffer is empty, it moves socket -> pipe ->
// socket by splice(2), never entering user space. A direction stops reading while its buffer is
// full (the other side does not take its bytes): that, and IMPI's own per-pair window, bound what
// the relay holds. The relay never acknowledges anything itself.
//
// Pairs of two wanmpi hosts first run the link handshake (wanlink/handshake.hpp) on each leg,
// the relay being the acceptor towards the host that connected and the connector towards the
// other, with the job's key: a stranger is refused before anything reaches a host, and a leg
// that crosses the WAN (the outer one: to an outside host, or to the next relay) gets TLS when
// either host or this relay asks for it; the inner leg, inside the relay's own cluster, does not
// (kFlagInner). Each host's recv_off, pay_left, epoch and stream flags are carried over to the
// other leg, so the two hosts agree as if connected directly. At the dance (kind 0) the relay
// answers the connecting host first, with its own flags and the connector's stream flags, and
// dials the other host only once the connector proved itself; a reconnect (kind 1) must carry
// the other host's recv_off back, so the relay answers only once that host answered it.
// Resumable pairs keep no state here across a break: a broken leg resets both, the hosts
// reconnect through the relay, and HELLO's recv_off and pay_left say where the next packet
// header is in each direction (the bytes in the relay's buffers are resent by the hosts).
//
// Lanes (issue 14, docs/design/lanes.md "Through impi-relay and trunks") are end to end: every
// lane of a link is a pair here of its own (lane i of one leg joined to lane i of the other, the
// lane index carried over in the HELLO of kinds 1 and 2), forwarded byte for byte like any
// pair, so the hosts' per-lane offsets, acknowledgements and resumes hold through the relay and
// each lane's loss stays on that lane. At the dance the relay settles k with both hosts (its
// answer, its offer to the other host, and FAR back to the connector: handshake.hpp).
#include "runtime/impi_relay_data.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <vector>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/log.hpp"
#include "wanlink/lanes.hpp"
#include "wanlink/stall.hpp"
#include "wanlink/tcp_stats.hpp"
#include "wanlink/tcp_tune.hpp"

namespace wanmpi::impi {

namespace {
constexpr size_t kBuf = 256 * 1024;
constexpr size_t kMaxPending = 256;
constexpr size_t kPipe = 1 << 20;
}  // namespace

struct RelayData::Pending {
    int fd = -1;
    int rep = 0;  // the host the port represents
    std::string peer;
    uint8_t rank[4]{};
    size_t got = 0;
    uint64_t timer = 0;
    std::unique_ptr<wanlink::LinkHandshake> hs;  // wanmpi pairs: until the HELLO is in
};

struct RelayData::Dir {
    int from = -1, to = -1;
    wanlink::Tls* rtls = nullptr;  // TLS of the leg read from / written to (outer legs only)
    wanlink::Tls* wtls = nullptr;
    bool outward = false;
    std::unique_ptr<uint8_t[]> buf{new uint8_t[kBuf]};
    size_t cap = kBuf, w = 0, r = 0, e = 0;
    uint64_t pay = 0;
    int pr = -1, pw = -1;
    size_t pipe_cap = 0, in_pipe = 0;
    uint64_t splice_left = 0;
    bool eof = false, shut = false;
    ~Dir() {
        if (pr >= 0) ::close(pr);
        if (pw >= 0) ::close(pw);
    }
    bool want_read() const {
        if (eof) return false;
        if (splice_left > 0) return in_pipe < pipe_cap;
        // A payload's tail still in the pipe: pump() reads nothing more until it drained, so
        // waiting for input would only spin (the receiver is slow; test impi.relay.slow_receiver).
        if (in_pipe > 0) return false;
        return e < cap;
    }
    bool want_write() const { return r > w || in_pipe > 0 || (wtls && wtls->backlog() > 0); }
    bool idle() const {
        return w == e && in_pipe == 0 && splice_left == 0 && pay == 0 &&
               !(wtls && wtls->backlog() > 0);
    }
};

struct RelayData::Pair {
    int h = 0, j = 0;
    int fd_in = -1, fd_out = -1;
    int fd_connect = -1;  // the one being connected
    int fd_acc = -1;      // the one accepted
    bool connected = false;  // forwarding
    std::string name;
    std::string peer;  // the connecting side's address, for messages
    Dir a, b;  // a: h -> j (outward), b: j -> h
    uint32_t ev_in = 0, ev_out = 0;
    // wanmpi pairs (both hosts wanmpi): the legs' link handshakes, then TLS where they say.
    uint32_t rank = 0;  // the connecting host
    std::unique_ptr<wanlink::LinkHandshake> hs_acc, hs_con;
    bool acc_done = false, con_done = false, dialled = false;
    std::unique_ptr<wanlink::Tls> tls_acc, tls_con;
    bool tls_acc_done = false, tls_con_done = false;
    bool resumable = false;
    int lane = 0;        // the lane of the link this pair carries (0: the dance's connection)
    unsigned k = 1;      // at the dance: the link's lanes, as settled with both hosts
    uint64_t timer = 0;  // the handshakes' deadline
    wanlink::Hello far;  // the other host's numbers: its HELLO, or a next relay's FAR
    bool far_in = false;
    uint8_t far_buf[wanlink::kHello + wanlink::kMac];
    size_t far_got = 0;
    // The stall watch (watch_stalls): the leg found stalled (until its data is acknowledged or
    // the pair is reset), and the probe of the path to its far end.
    int stalled_fd = -1;
    wanlink::PathProbe probe;
    int64_t probe_hold = 0;  // no probe before (the path answered at once last time)
};

RelayData::RelayData(runtime::EventLoop& loop, const RelayMap& map, const RelayConfig& cfg,
                     const RelayLinkKeys& keys)
    : loop_(loop), map_(map), cfg_(cfg), keys_(keys), tuning_(wanlink::tcp_tuning_from_env()) {}

// Our HELLO's own flags on a leg: what this relay demands, that it is a relay (so the
// connector expects FAR with the lanes at the dance), and on the inner leg kFlagInner.
uint8_t RelayData::leg_flags(bool inner) const {
    return uint8_t(keys_.flags | wanlink::kFlagRelay | (inner ? wanlink::kFlagInner : 0));
}

// The lanes this relay answers a connector at the dance with, before it knows the other host's
// offer: its cap, or on auto the most (the other host and the legs' RTT decide, offer_lanes).
uint8_t RelayData::answer_lanes() const {
    return uint8_t(cfg_.lanes ? cfg_.lanes : wanlink::kMaxLanes);
}

// What the relay offers the other host for a connector that asked for `asked`: no more than the
// connector and this relay's cap. On auto, a connector's 16 means auto too (a host offers 16 to
// a host behind a relay: impi_dance.cpp), resolved here from the slower leg's RTT, which is the
// path's part that crosses the WAN (the connector measured only its own leg).
uint8_t RelayData::offer_lanes(const Pair* p, uint8_t asked) const {
    const unsigned a = asked ? asked : 1;
    if (cfg_.lanes) return uint8_t(std::min(a, cfg_.lanes));
    if (a < wanlink::kMaxLanes) return uint8_t(a);
    uint32_t worst = 0;
    for (int fd : {p->fd_in, p->fd_out}) {
        uint64_t win = 0;
        uint32_t srtt = 0;
        if (fd >= 0 && wanlink::socket_window(fd, &win, &srtt)) worst = std::max(worst, srtt);
    }
    return uint8_t(wanlink::auto_lanes(worst));
}

RelayData::~RelayData() { close_all(); }

void RelayData::add_listener(base::Fd fd, int host) {
    int lfd = fd.release();
    base::set_nonblock(lfd, true);
    listeners_[lfd] = host;
    loop_.add(lfd, EPOLLIN, [this, lfd, host](uint32_t) { on_accept(lfd, host); });
}

void RelayData::close_all() {
    if (stall_timer_) loop_.cancel(stall_timer_);
    stall_timer_ = 0;
    for (auto& [fd, h] : listeners_) {
        loop_.remove(fd);
        ::close(fd);
    }
    listeners_.clear();
    while (!pending_.empty()) drop_pending(pending_.begin()->first, "");
    while (!pairs_.empty()) {
        Pair* p = pairs_.begin()->first;
        for (int fd : {p->fd_in, p->fd_out}) {
            if (fd < 0) continue;
            loop_.remove(fd);
            // RST rather than FIN: the host must not take a cut stream for a clean end.
            linger l{1, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
            ::close(fd);
        }
        pairs_.erase(pairs_.begin());
    }
}

void RelayData::on_accept(int lfd, int host) {
    for (;;) {
        sockaddr_in sa{};
        socklen_t sl = sizeof sa;
        int fd = ::accept4(lfd, reinterpret_cast<sockaddr*>(&sa), &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            // Out of descriptors (every lane of a pair costs two, issue 14): the connection
            // stays in the backlog and the listener readable, so stop watching it for a while
            // rather than spin; the host gives up a lane it cannot open (lanes.md).
            WANMPI_LOG(warn, "cannot accept on the port of host %d: %s; pausing it for 100 ms",
                       host, base::errno_text(errno).c_str());
            loop_.remove(lfd);
            loop_.after(100, [this, lfd, host] {
                if (listeners_.count(lfd))
                    loop_.add(lfd, EPOLLIN, [this, lfd, host](uint32_t) { on_accept(lfd, host); });
            });
            return;
        }
        if (fd < 0) return;
        char b[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &sa.sin_addr, b, sizeof b);
        std::string peer = std::string(b) + ":" + std::to_string(ntohs(sa.sin_port));
        if (pending_.size() >= kMaxPending) {
            WANMPI_LOG(warn, "too many unidentified connections; dropping %s", peer.c_str());
            ::close(fd);
            continue;
        }
        auto up = std::make_unique<Pending>();
        Pending* p = up.get();
        p->fd = fd;
        p->rep = host;
        p->peer = peer;
        pending_[p] = std::move(up);
        loop_.add(fd, EPOLLIN, [this, p](uint32_t) { on_pending(p); });
        p->timer = loop_.after(cfg_.join_timeout_ms, [this, p] {
            p->timer = 0;
            drop_pending(p, "sent no host rank within the join timeout");
        });
    }
}

void RelayData::drop_pending(Pending* p, const std::string& why) {
    if (!why.empty())
        WANMPI_LOG(warn, "connection from %s to the port of host %d: %s; closed", p->peer.c_str(),
                   p->rep, why.c_str());
    if (p->timer) loop_.cancel(p->timer);
    if (p->fd >= 0) {
        loop_.remove(p->fd);
        ::close(p->fd);
    }
    pending_.erase(p);
}

void RelayData::on_pending(Pending* p) {
    if (p->got < 4) {
        ssize_t n = ::recv(p->fd, p->rank + p->got, 4 - p->got, MSG_DONTWAIT);
        if (n == 0 && p->got == 0) {
            // Not a word: a host's stall watch testing the path (wanlink/stall.hpp), or a scan.
            WANMPI_LOG(info, "connection from %s to the port of host %d closed without a word",
                       p->peer.c_str(), p->rep);
            return drop_pending(p, "");
        }
        if (n == 0) return drop_pending(p, "closed before it sent its host rank");
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            return drop_pending(p, base::errno_text(errno));
        }
        p->got += size_t(n);
        if (p->got < 4) return;
        uint32_t rank = base::get_be32(p->rank);
        bool rep_own = map_.own(p->rep);
        std::string err = relay_check_dance(map_, p->rep, rep_own, rank);
        if (!err.empty()) return drop_pending(p, err);
        const int ca = map_.out.hosts[size_t(p->rep)].client;
        const int cb = map_.out.hosts[size_t(rank)].client;
        if (!map_.out.wanmpi_pair(ca, cb)) return start_pair(p, rank, nullptr);
        // Both hosts are wanmpi: the connector's link handshake comes next. The relay answers
        // as the host the port represents (the MACs bind the host ranks; it holds the key).
        wanlink::Hello mine;
        mine.from = uint32_t(p->rep);
        mine.to = rank;
        mine.flags = leg_flags(!rep_own);  // a private port: the connector is a cluster host
        mine.lanes = answer_lanes();
        base::set_nodelay(p->fd);
        p->hs = std::make_unique<wanlink::LinkHandshake>(
            false, keys_.keyed ? &keys_.key : nullptr, keys_.session.data(), mine, rank, true);
    }
    auto r = p->hs->step(p->fd);
    if (r == wanlink::LinkHandshake::again) return;
    const uint32_t rank = base::get_be32(p->rank);
    if (r == wanlink::LinkHandshake::failed)
        return drop_pending(p, "claiming host " + std::to_string(rank) + ": " + p->hs->reason());
    // ready: the connector's HELLO is in.
    const wanlink::Hello& hc = p->hs->peer();
    if (hc.kind == 1 && !(hc.flags & wanlink::kFlagResume))
        return drop_pending(p, "host " + std::to_string(rank) +
                                   " reconnects but did not offer to resume the stream");
    start_pair(p, rank, std::move(p->hs));
}

void RelayData::start_pair(Pending* p, uint32_t rank, std::unique_ptr<wanlink::LinkHandshake> hs) {
    bool rep_own = map_.own(p->rep);
    int h = rep_own ? p->rep : int(rank), j = rep_own ? int(rank) : p->rep;
    // A reconnect (HELLO kind 1) takes the pair's place: the old pair, if the relay still has
    // it, ends when the host it reaches drops its old connection for the new one. So does the
    // opening of an extra lane (kind 2): a cut while opening it may make the host open it again.
    const bool reconnect = hs && hs->peer().kind != 0;
    const int lane = reconnect ? hs->peer().lane : 0;
    const auto key = std::make_tuple(h, j, lane);
    if (taken_.count(key) && !reconnect)
        return drop_pending(p, "host " + std::to_string(rank) + " is already connected");
    // A wanmpi pair claims its slot only once the connector proved itself (on_secure()): a
    // stranger's claim must not keep the real host out.
    // The accepted connection becomes half of a pair; the other half is opened now (wanmpi
    // pairs at the dance: once the connector proved itself, on_secure()).
    int acc = p->fd;
    p->fd = -1;
    loop_.remove(acc);
    std::string peer = p->peer;
    drop_pending(p, "");
    if (!hs) taken_[key] = true;

    auto up = std::make_unique<Pair>();
    Pair* pr = up.get();
    pr->h = h;
    pr->j = j;
    pr->rank = rank;
    pr->peer = peer;
    pr->lane = lane;
    pr->name = "host " + std::to_string(h) + " (client " + std::to_string(map_.client) +
               ") <-> host " + std::to_string(j) + " (client " +
               std::to_string(map_.out.hosts[size_t(j)].client) + ")" +
               (lane ? " lane " + std::to_string(lane) : "");
    pairs_[pr] = std::move(up);
    (rep_own ? pr->fd_out : pr->fd_in) = acc;
    pr->fd_acc = acc;

    WANMPI_LOG(debug, "pair %s: %s from %s", pr->name.c_str(),
               !hs ? "plain IMPI"
                   : hs->peer().kind == 2 ? "opening a lane"
                   : reconnect ? "reconnect" : "link handshake",
               peer.c_str());
    if (hs) {
        pr->hs_acc = std::move(hs);
        pr->timer = loop_.after(cfg_.join_timeout_ms, [this, pr] {
            pr->timer = 0;
            end_pair(pr, "link handshakes not done within the join timeout");
        });
        secured++;
        if (pr->hs_acc->peer().kind == 1) resumed++;
        // Answer the connector now, and dial the other host only once it proved itself. At the
        // dance every number is known (a fresh stream); a reconnect gets the other host's in
        // FAR once the relay has them (handshake.hpp).
        const auto& hc = pr->hs_acc->peer();
        pr->hs_acc->answer(uint8_t(leg_flags(acc == pr->fd_in) | (hc.flags & wanlink::kEndToEndFlags)),
                           0, 0, hc.epoch);
        return on_secure(pr);
    }
    dial(pr);
}

// Opens the pair's other connection, to the host the accepted one did not come from, at its
// address in the other view.
void RelayData::dial(Pair* pr) {
    const bool to_inside = pr->fd_acc == pr->fd_out;
    const int host = to_inside ? pr->h : pr->j;
    const Job::Host& target = to_inside ? map_.in.hosts[size_t(host)] : map_.out.hosts[size_t(host)];
    std::string addr = target.addr();
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(target.port);
    pr->dialled = true;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || addr.empty() || inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
        if (fd >= 0) ::close(fd);
        return end_pair(pr, "cannot connect to host " + std::to_string(host) + " at '" + addr + "'");
    }
    (to_inside ? pr->fd_in : pr->fd_out) = fd;
    pr->fd_connect = fd;
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno != EINPROGRESS)
        return end_pair(pr, "connect to " + addr + ":" + std::to_string(target.port) + ": " +
                                base::errno_text(errno));
    // The rank goes first, as the dance wants; the kernel keeps it until the connection is up.
    // Plain pairs: through the direction's buffer, with the stream. wanmpi pairs: on_connected()
    // sends it before the HELLO.
    if (!pr->hs_acc) {
        Dir& first = to_inside ? pr->b : pr->a;  // the direction that writes to the new connection
        base::put_be32(first.buf.get(), pr->rank);
        first.w = 0;
        first.r = first.e = 4;
    }
    WANMPI_LOG(debug, "pair %s: connecting %s:%u", pr->name.c_str(), addr.c_str(),
               unsigned(target.port));
    loop_.add(fd, EPOLLOUT, [this, pr](uint32_t) { on_connected(pr); });
}

void RelayData::on_connected(Pair* pr) {
    int err = 0;
    socklen_t el = sizeof err;
    getsockopt(pr->fd_connect, SOL_SOCKET, SO_ERROR, &err, &el);
    if (err) {
        bool inside = pr->fd_connect == pr->fd_in;
        const Job::Host& t = inside ? map_.in.hosts[size_t(pr->h)] : map_.out.hosts[size_t(pr->j)];
        return end_pair(pr, "cannot connect to host " + std::to_string(inside ? pr->h : pr->j) +
                                " at " + t.addr() + ":" + std::to_string(t.port) + ": " +
                                base::errno_text(err));
    }
    loop_.remove(pr->fd_connect);
    base::set_nodelay(pr->fd_in);
    base::set_nodelay(pr->fd_out);
    // Both legs: the inside one crosses the front-end's NIC queue too.
    wanlink::tune_socket(pr->fd_in, tuning_);
    wanlink::tune_socket(pr->fd_out, tuning_);
    if (!pr->hs_acc) return start_forwarding(pr);
    // wanmpi pair: the connecting host's rank, then our HELLO as that host's stand-in, with its
    // stream numbers and flags.
    uint8_t rk[4];
    base::put_be32(rk, pr->rank);
    if (::send(pr->fd_connect, rk, 4, MSG_NOSIGNAL | MSG_DONTWAIT) != 4)
        return end_pair(pr, "cannot send the host rank: " + base::errno_text(errno));
    const bool inner = pr->fd_connect == pr->fd_in;
    const wanlink::Hello& hc = pr->hs_acc->peer();
    wanlink::Hello mine;
    mine.from = pr->rank;
    mine.to = uint32_t(inner ? pr->h : pr->j);
    mine.kind = hc.kind;
    if (hc.kind != 0) mine.lane = hc.lane;  // the same lane on both legs
    else mine.lanes = offer_lanes(pr, hc.lanes);
    mine.flags = uint8_t(leg_flags(inner) | (hc.flags & wanlink::kEndToEndFlags));
    mine.recv_off = hc.recv_off;
    mine.pay_left = hc.pay_left;
    mine.epoch = hc.epoch;
    pr->hs_con = std::make_unique<wanlink::LinkHandshake>(
        true, keys_.keyed ? &keys_.key : nullptr, keys_.session.data(), mine, mine.to);
    on_secure(pr);
}

// Registers fd for ev with the handshake stage's callback (or takes it out: ev 0).
void RelayData::watch(Pair* pr, int fd, uint32_t ev) {
    if (fd < 0) return;
    if (ev == 0) {
        if (loop_.watched(fd)) loop_.remove(fd);
        return;
    }
    if (loop_.watched(fd)) loop_.modify(fd, ev);
    else loop_.add(fd, ev, [this, pr](uint32_t) { on_secure(pr); });
}

// The legs of a wanmpi pair before forwarding: the acceptor's handshake with the connecting
// host, then (once it proved itself) the connector's with the other, the other host's numbers
// in FAR (a reconnect or a lane: from the next relay if the other host is behind one, then to
// the connecting host; at the dance with lanes: the link's lane count), then TLS on each leg
// whose handshake asked for it. Called on every event of either socket until
// start_forwarding().
void RelayData::on_secure(Pair* pr) {
    using HS = wanlink::LinkHandshake;
    // A connection after the dance: a reconnect (kind 1) or an extra lane opening (kind 2).
    const bool reconnect = pr->hs_acc->peer().kind != 0;
    const int fd_dial = pr->fd_acc == pr->fd_in ? pr->fd_out : pr->fd_in;
    const int other = pr->fd_acc == pr->fd_in ? pr->j : pr->h;
    std::string who_acc = "host " + std::to_string(pr->rank);
    std::string who_con = "host " + std::to_string(other);
    if (!pr->acc_done) {
        HS::Result r = pr->hs_acc->step(pr->fd_acc);
        if (r == HS::failed) return end_pair(pr, "link handshake with " + who_acc + ": " +
                                                     pr->hs_acc->reason());
        if (r == HS::done) {
            pr->acc_done = true;
            const auto key = std::make_tuple(pr->h, pr->j, pr->lane);
            if (!reconnect && taken_.count(key))
                return end_pair(pr, who_acc + " is already connected");
            taken_[key] = true;
            watch(pr, pr->fd_acc, 0);
            return dial(pr);
        }
        return watch(pr, pr->fd_acc, EPOLLIN);
    }
    if (!pr->hs_con) return;  // still connecting
    if (!pr->con_done) {
        HS::Result r = pr->hs_con->step(fd_dial);
        if (r == HS::failed) return end_pair(pr, "link handshake with " + who_con + ": " +
                                                     pr->hs_con->reason());
        if (r != HS::done) return watch(pr, fd_dial, EPOLLIN);
        pr->con_done = true;
        pr->far = pr->hs_con->peer();
        const wanlink::Hello& ha = pr->far;
        const wanlink::Hello& hc = pr->hs_acc->peer();
        if (!reconnect) {
            // The connector got our flags before the other host's were known: what the two
            // hosts conclude must still agree, or their streams would not.
            if ((ha.flags & hc.flags & wanlink::kFlagResume) != (hc.flags & wanlink::kFlagResume))
                return end_pair(pr, who_con + " cannot resume a broken connection and " +
                                        who_acc + " can (WANMPI_WAN_RECONNECT_S=0 on one side "
                                        "only?); through impi-relay both must agree");
            if (pr->fd_acc == pr->fd_out && (ha.flags & wanlink::kFlagTls) && !pr->hs_acc->tls())
                return end_pair(pr, who_con + " requires TLS (WANMPI_WAN_SECURITY=tls) but this "
                                              "relay does not: start impi-relay with "
                                              "WANMPI_WAN_SECURITY=tls too");
        }
    }
    // FAR: after the dance always; at the dance when both the connector's offer and our answer
    // exceed one lane (then the connector waits for the link's lane count: handshake.hpp).
    const wanlink::Hello& hc0 = pr->hs_acc->peer();
    const bool far_back =
        reconnect || wanlink::agreed_lanes(hc0.lanes, pr->hs_acc->mine().lanes) > 1;
    if (far_back && !pr->far_in) {
        // The other host behind a relay too: its numbers come in that relay's FAR. At the dance
        // the next relay says so in its HELLO (kFlagRelay), and sends FAR under the same rule.
        const auto& t = pr->fd_acc == pr->fd_in ? map_.out.hosts[size_t(other)]
                                                : map_.in.hosts[size_t(other)];
        const bool relayed =
            reconnect ? t.nprocs > 0 &&
                            !relay_of((pr->fd_acc == pr->fd_in ? map_.out : map_.in)
                                          .procs[size_t(t.first_rank)].id)
                                 .empty()
                      : (pr->far.flags & wanlink::kFlagRelay) &&
                            wanlink::agreed_lanes(pr->hs_con->mine().lanes, pr->far.lanes) > 1;
        // At the dance: the link's lanes are what the other host settled on with our offer (a
        // next relay's FAR says it for the host behind it).
        if (!reconnect) pr->k = wanlink::agreed_lanes(pr->hs_con->mine().lanes, pr->far.lanes);
        if (relayed) {
            while (pr->far_got < sizeof pr->far_buf) {
                ssize_t n = ::recv(fd_dial, pr->far_buf + pr->far_got,
                                   sizeof pr->far_buf - pr->far_got, MSG_DONTWAIT);
                if (n > 0) {
                    pr->far_got += size_t(n);
                    continue;
                }
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) return watch(pr, fd_dial, EPOLLIN);
                return end_pair(pr, who_con + "'s relay closed before it reported the far host");
            }
            std::string err = pr->hs_con->decode_far(pr->far_buf, &pr->far);
            if (err.empty() && !reconnect && (pr->far.kind != 0 || pr->far.lanes > pr->k))
                err = "FAR reports " + std::to_string(pr->far.lanes) + " lanes of " +
                      std::to_string(pr->k) + " offered";
            if (!err.empty()) return end_pair(pr, "from " + who_con + "'s relay: " + err);
            if (!reconnect) pr->k = std::max<unsigned>(1, pr->far.lanes);
        }
        pr->far_in = true;
        watch(pr, fd_dial, 0);
        // Tell the connecting host where the other stopped (small: a fresh socket takes it).
        wanlink::Hello f = pr->far;
        f.from = uint32_t(other);
        f.to = pr->rank;
        f.kind = reconnect ? 1 : 0;
        if (!reconnect) f.lanes = uint8_t(pr->k);
        uint8_t rec[wanlink::kHello + wanlink::kMac];
        pr->hs_acc->encode_far(f, rec);
        if (::send(pr->fd_acc, rec, sizeof rec, MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(sizeof rec))
            return end_pair(pr, "cannot send FAR to " + who_acc);
    }
    // TLS on the legs that asked for it (never on the inner one: kFlagInner).
    auto tls_leg = [&](HS& hs, int fd, bool client, std::unique_ptr<wanlink::Tls>& t, bool& done,
                       const std::string& who) -> int {
        if (done) return 1;
        if (!hs.tls()) return done = true, 1;
        base::Status st;
        if (!t) {
            const auto psk = hs.tls_psk();
            st = wanlink::Tls::start(fd, client, psk.data(), &t);
            if (!st.ok()) return end_pair(pr, "TLS with " + who + ": " + st.message()), -1;
        }
        auto r = t->handshake_step(&st);
        if (r == wanlink::Tls::step_failed)
            return end_pair(pr, "TLS with " + who + ": " + st.message()), -1;
        if (r == wanlink::Tls::step_done) return done = true, 1;
        watch(pr, fd, (t->handshake_wants_read() ? uint32_t(EPOLLIN) : 0u) |
                          (t->handshake_wants_write() ? uint32_t(EPOLLOUT) : 0u));
        return 0;
    };
    int ra = tls_leg(*pr->hs_acc, pr->fd_acc, false, pr->tls_acc, pr->tls_acc_done, who_acc);
    if (ra < 0) return;
    int rc = tls_leg(*pr->hs_con, fd_dial, true, pr->tls_con, pr->tls_con_done, who_con);
    if (rc < 0) return;
    if (ra == 1) watch(pr, pr->fd_acc, 0);
    if (rc == 1) watch(pr, fd_dial, 0);
    if (ra == 1 && rc == 1) start_forwarding(pr);
}

void RelayData::start_forwarding(Pair* pr) {
    if (pr->timer) loop_.cancel(pr->timer);
    pr->timer = 0;
    pr->connected = true;
    pr->a.from = pr->fd_in;
    pr->a.to = pr->fd_out;
    pr->a.outward = true;
    pr->b.from = pr->fd_out;
    pr->b.to = pr->fd_in;
    if (pr->hs_acc) {
        // Which TLS sits on which leg, and where each direction's next header is: a direction
        // starts where its receiving host said it stopped (HELLO recv_off/pay_left).
        wanlink::Tls* t_in = pr->fd_acc == pr->fd_in ? pr->tls_acc.get() : pr->tls_con.get();
        wanlink::Tls* t_out = pr->fd_acc == pr->fd_out ? pr->tls_acc.get() : pr->tls_con.get();
        pr->a.rtls = pr->b.wtls = t_in;
        pr->b.rtls = pr->a.wtls = t_out;
        const wanlink::Hello& from_acc = pr->hs_acc->peer();  // the connecting host
        const wanlink::Hello& from_con = pr->far;             // the other (its own numbers)
        Dir& into_acc = pr->fd_acc == pr->fd_in ? pr->b : pr->a;
        Dir& into_con = pr->fd_acc == pr->fd_in ? pr->a : pr->b;
        into_acc.pay = from_acc.pay_left;
        into_con.pay = from_con.pay_left;
        pr->resumable = pr->hs_acc->resume() && pr->hs_con->resume();
        const std::string lanes =
            from_acc.kind == 0 && pr->k > 1 ? ", " + std::to_string(pr->k) + " lanes" : "";
        WANMPI_LOG(info, "pair %s: %s%s%s%s", pr->name.c_str(),
                   from_acc.kind == 1   ? "reconnected"
                   : from_acc.kind == 2 ? "lane opened"
                                        : "linked",
                   lanes.c_str(),
                   pr->tls_acc || pr->tls_con ? ", TLS on the outer leg" : "",
                   pr->resumable ? ", resumable" : "");
    }
    if (pr->resumable && stall_ms_ > 0 && !stall_timer_)
        stall_timer_ = loop_.after(kStallEveryMs, [this] {
            stall_timer_ = 0;
            watch_stalls();
        });
    // The dance rank of a plain pair sits in a buffer as "checked, not written"; pump it out
    // with the rest. TLS may hold plaintext already: pump before waiting for the sockets.
    on_pair(pr);
}

// The stall watch on the relayed pairs' legs (WANMPI_WAN_STALL_MS; core/wan_link.cpp has the
// why). In an outage of the WAN the outer leg of a pair stalls when the relay has data out on
// it (the hosts' own legs do not: the relay stops reading them and their windows close). The
// hosts cannot see that stall, so the relay probes the path to the stalled leg's far end (a
// host, or the next relay; its address from the socket: a refused SYN on an ephemeral port
// counts as an answer too) and, once it answers after it did not (an outage that ended),
// resets the pair: both hosts then reconnect through the relay and resend from their logs, as
// after any broken leg of a resumable pair.
void RelayData::watch_stalls() {
    const int64_t now = base::now_ns();
    std::vector<Pair*> reset;
    bool any = false;
    for (auto& [pr, own] : pairs_) {
        if (!pr->connected || !pr->resumable) continue;
        any = true;
        for (int fd : {pr->fd_in, pr->fd_out}) {
            const wanlink::TcpInfo t = wanlink::read_tcp_info(fd);
            if (!t.ok) continue;
            if (t.unacked == 0) {
                if (pr->stalled_fd == fd) pr->stalled_fd = -1;
            } else if (pr->stalled_fd < 0 && wanlink::is_stalled(t, stall_ms_)) {
                pr->stalled_fd = fd;
                WANMPI_LOG(info, "pair %s: the connection to host %d stalled (%u segments "
                                 "unacknowledged, no ACK for %u ms); probing the path",
                           pr->name.c_str(), fd == pr->fd_in ? pr->h : pr->j, t.unacked,
                           t.last_ack_ms);
            }
        }
        if (pr->stalled_fd < 0 || now < pr->probe_hold) {
            pr->probe.stop();
            continue;
        }
        sockaddr_in to{};
        socklen_t len = sizeof to;
        if (getpeername(pr->stalled_fd, reinterpret_cast<sockaddr*>(&to), &len) != 0 ||
            to.sin_family != AF_INET)
            continue;
        const wanlink::PathProbe::Result res = pr->probe.poll(to, now);
        if (res == wanlink::PathProbe::back) {
            reset.push_back(pr);
        } else if (res == wanlink::PathProbe::up) {
            // The path never went away: TCP's loss recovery, left to TCP (wanlink/stall.hpp).
            pr->stalled_fd = -1;
            pr->probe_hold = now + wanlink::kProbeHoldNs;
        }
    }
    for (Pair* pr : reset)
        end_pair(pr, "the connection to host " +
                         std::to_string(pr->stalled_fd == pr->fd_in ? pr->h : pr->j) +
                         " stalled and its far end answers again");
    if (any && !stall_timer_)
        stall_timer_ = loop_.after(kStallEveryMs, [this] {
            stall_timer_ = 0;
            watch_stalls();
        });
}

std::string RelayData::pump(Pair* pr, Dir& d) {
    bool drained = false;
    for (int round = 0; round < 64; ++round) {
        bool moved = false;
        if (d.splice_left > 0 || d.in_pipe > 0) {
            if (d.splice_left > 0 && d.in_pipe < d.pipe_cap) {
                ssize_t n = ::splice(d.from, nullptr, d.pw, nullptr,
                                     size_t(std::min<uint64_t>(d.splice_left, d.pipe_cap - d.in_pipe)),
                                     SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n > 0) {
                    d.splice_left -= uint64_t(n);
                    d.in_pipe += size_t(n);
                    moved = true;
                } else if (n == 0) {
                    return "closed in the middle of a packet";
                } else if (errno != EAGAIN && errno != EINTR) {
                    return "splice: " + base::errno_text(errno);
                }
            }
            if (d.in_pipe > 0) {
                ssize_t n = ::splice(d.pr, nullptr, d.to, nullptr, d.in_pipe,
                                     SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n > 0) {
                    d.in_pipe -= size_t(n);
                    bytes += uint64_t(n);
                    spliced += uint64_t(n);
                    moved = true;
                } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                    return "splice: " + base::errno_text(errno);
                }
            }
            if (!moved) break;
            continue;
        }
        if (d.wtls && d.wtls->backlog() > 0 && d.wtls->flush() < 0)
            return "send: " + base::errno_text(errno);
        if (d.r > d.w) {
            ssize_t n;
            if (d.wtls) {
                iovec v{d.buf.get() + d.w, d.r - d.w};
                n = d.wtls->writev(&v, 1);
            } else {
                n = ::send(d.to, d.buf.get() + d.w, d.r - d.w, MSG_NOSIGNAL | MSG_DONTWAIT);
            }
            if (n > 0) {
                d.w += size_t(n);
                bytes += uint64_t(n);
                moved = true;
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return "send: " + base::errno_text(errno);
            }
        }
        if (d.w == d.e) d.w = d.r = d.e = 0;
        for (;;) {
            if (d.pay > 0) {
                size_t n = size_t(std::min<uint64_t>(d.pay, d.e - d.r));
                if (n == 0) break;
                d.r += n;
                d.pay -= n;
                moved = true;
                continue;
            }
            if (d.e - d.r < kPacketHeader) break;
            uint64_t len = 0;
            std::string err = relay_rewrite(map_, pr->h, pr->j, d.outward, d.buf.get() + d.r, &len,
                                            pr->resumable);
            if (!err.empty()) return err;
            d.r += kPacketHeader;
            d.pay = len;
            packets++;
            moved = true;
        }
        // The rest of a large payload is still in the socket: let the kernel move it.
        if (cfg_.splice && !d.rtls && !d.wtls && d.pay >= cfg_.splice_min && d.r == d.e &&
            d.w == d.r) {
            if (d.pr < 0) {
                int p[2];
                if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
                    d.pr = p[0];
                    d.pw = p[1];
                    int sz = ::fcntl(d.pw, F_SETPIPE_SZ, int(kPipe));
                    if (sz <= 0) sz = ::fcntl(d.pw, F_GETPIPE_SZ);
                    d.pipe_cap = sz > 0 ? size_t(sz) : 65536;
                }
            }
            if (d.pr >= 0) {
                d.splice_left = d.pay;
                d.pay = 0;
                d.w = d.r = d.e = 0;
                continue;
            }
        }
        // Near the buffer's end, move what is not written yet to the front: also when the
        // buffer is full, which happens with a header cut by its end once everything before it
        // is written. Checked only before a read, that state waited for a read that a full
        // buffer never does, with no event asked for: the pair stalled (64 KiB packets of the
        // head-of-line queue made it common: 1 job in 7 of 64 MiB through a relay hung).
        if (d.w > 0 && d.cap - d.e < 4 * kPacketHeader) {
            std::memmove(d.buf.get(), d.buf.get() + d.w, d.e - d.w);
            d.r -= d.w;
            d.e -= d.w;
            d.w = 0;
        }
        if (!d.eof && d.e < d.cap && !drained) {
            size_t room = d.cap - d.e;
            ssize_t n = d.rtls ? d.rtls->recv(d.buf.get() + d.e, room)
                               : ::recv(d.from, d.buf.get() + d.e, room, MSG_DONTWAIT);
            // TLS: a connection that ends without close_notify between two packets is a
            // host's end after IMPI FINI (hosts just close); the host behind us judges it.
            if (n < 0 && d.rtls && errno == EPIPE && d.pay == 0 && d.e == d.r) n = 0;
            if (n > 0) {
                d.e += size_t(n);
                moved = true;
                // A short read drained the socket: parse and write what came, then wait for
                // epoll rather than spend a recv() on EAGAIN (level-triggered: more input is
                // reported again). TLS: drained once it holds no more plaintext or records.
                if (d.rtls ? !d.rtls->pending() : size_t(n) < room) drained = true;
            } else if (n == 0) {
                if (d.pay > 0 || d.e > d.r) return "closed in the middle of a packet";
                d.eof = true;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return "recv: " + base::errno_text(errno) +
                       (d.rtls && errno == EBADMSG ? " (a TLS record failed authentication: " +
                                                         d.rtls->error() + ")"
                                                   : "");
            }
        }
        if (!moved) break;
    }
    if (d.eof && !d.shut && d.idle()) {
        if (d.wtls) {
            d.wtls->shutdown();
            d.wtls->flush();
        }
        ::shutdown(d.to, SHUT_WR);
        d.shut = true;
    }
    return "";
}

void RelayData::on_pair(Pair* pr, int dirs) {
    if (!pr->connected) return;
    for (Dir* d : {&pr->a, &pr->b}) {
        if (!(dirs & (d == &pr->a ? 1 : 2))) continue;
        std::string err = pump(pr, *d);
        if (!err.empty())
            return end_pair(pr, (d == &pr->a ? "from host " + std::to_string(pr->h)
                                             : "from host " + std::to_string(pr->j)) +
                                    ": " + err);
    }
    if (pr->a.shut && pr->b.shut) return end_pair(pr, "");
    update(pr);
}

void RelayData::update(Pair* pr) {
    uint32_t in = (pr->a.want_read() ? uint32_t(EPOLLIN) : 0u) |
                  (pr->b.want_write() ? uint32_t(EPOLLOUT) : 0u);
    uint32_t out = (pr->b.want_read() ? uint32_t(EPOLLIN) : 0u) |
                   (pr->a.want_write() ? uint32_t(EPOLLOUT) : 0u);
    auto set = [&](int fd, uint32_t ev, uint32_t& cur) {
        if (ev == cur && (ev == 0 || loop_.watched(fd))) return;
        // An fd with nothing to wait for is taken out of the set: epoll would still report
        // EPOLLHUP for it, again and again, while the other direction drains.
        if (ev == 0) loop_.remove(fd);
        else if (loop_.watched(fd)) loop_.modify(fd, ev);
        else loop_.add(fd, ev, [this, pr, fd](uint32_t e) {
            if (e & EPOLLERR) {
                int err = 0;
                socklen_t el = sizeof err;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (err)
                    return end_pair(pr, "connection to host " +
                                            std::to_string(fd == pr->fd_in ? pr->h : pr->j) +
                                            ": " + base::errno_text(err));
            }
            // Input on fd_in and room on fd_out concern h -> j; the others j -> h.
            int dirs = 0;
            if (e & (EPOLLERR | EPOLLHUP)) dirs = 3;
            if (e & EPOLLIN) dirs |= fd == pr->fd_in ? 1 : 2;
            if (e & EPOLLOUT) dirs |= fd == pr->fd_in ? 2 : 1;
            on_pair(pr, dirs ? dirs : 3);
        });
        cur = ev;
    };
    set(pr->fd_in, in, pr->ev_in);
    set(pr->fd_out, out, pr->ev_out);
}

void RelayData::end_pair(Pair* pr, const std::string& why) {
    if (pr->timer) loop_.cancel(pr->timer);
    if (!why.empty() && pr->hs_acc && !pr->acc_done) {
        // Not proven: a stranger (or a host with another secret); the job goes on.
        WANMPI_LOG(warn, "refused the connection from %s claiming host %u: %s", pr->peer.c_str(),
                   pr->rank, why.c_str());
    } else if (!why.empty() && !pr->connected && pr->hs_acc &&
               pr->hs_acc->peer().kind != 0) {
        // A reconnect or a lane being opened that did not get through: the connecting host
        // tries again (or, for a new lane, gives it up: docs/design/lanes.md); the job goes on.
        WANMPI_LOG(warn, "pair %s: %s; closed (the host tries again or goes on without it)",
                   pr->name.c_str(), why.c_str());
    } else if (!why.empty() && pr->resumable) {
        // The hosts reconnect through this relay and resend what the other did not get.
        WANMPI_LOG(warn, "pair %s: %s; both connections reset, the hosts reconnect",
                   pr->name.c_str(), why.c_str());
    } else if (!why.empty()) {
        WANMPI_LOG(error, "pair %s: %s; both connections closed", pr->name.c_str(), why.c_str());
        if (on_broken) on_broken(pr->name + ": " + why);
    } else {
        WANMPI_LOG(debug, "pair %s: closed after IMPI FINI", pr->name.c_str());
    }
    for (int fd : {pr->fd_in, pr->fd_out}) {
        if (fd < 0) continue;
        loop_.remove(fd);
        if (!why.empty()) {
            linger l{1, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        ::close(fd);
    }
    pairs_.erase(pr);
}

}  // namespace wanmpi::impi
