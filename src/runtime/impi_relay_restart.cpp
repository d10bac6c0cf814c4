// impi-relay restarts (docs/design/relay-restart.md): the state file, a relay started again
// from it, and coming back to impi-server and taking the agent back (KEEP / BACK / GONE).
#include <cstdio>
#include <cstring>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/log.hpp"
#include "base/socket.hpp"
#include "runtime/impi_relay_impl.hpp"
#include "runtime/impi_resume.hpp"

namespace wanmpi::impi {

using base::get_be32;
using base::put_be32;

void Relay::drop_state() {
    if (!cfg_.state_file.empty()) ::unlink(cfg_.state_file.c_str());
}

// DONE went to the agent: the start-up is over and nothing of it changes any more. Write what a
// restarted relay needs, then tell both ends that this relay may come back (KEEP).
void Relay::save_state() {
    if (cfg_.state_file.empty()) return;
    if (cfg_.reconnect_ms <= 0) {
        std::fprintf(stderr, "impi-relay: -state %s: not written, this relay cannot be restarted: "
                             "WANMPI_WAN_RECONNECT_S=0 (nothing would wait for it)\n",
                     cfg_.state_file.c_str());
        return;
    }
    if (!hmac_) {
        std::fprintf(stderr, "impi-relay: -state %s: not written, this relay cannot be restarted: "
                             "the start-up did not use wanmpi's AUTH (every cluster and "
                             "impi-server need the job secret)\n", cfg_.state_file.c_str());
        return;
    }
    const bool member = !cfg_.join.empty();
    if (member && !secret_.set()) return;  // run_member() refused -state without one
    if (member && (!keys_.keyed ||
                   !wanlink::equal_mac(wanlink::link_key(secret_, keys_.session.data()).data(),
                                       keys_.key.data()))) {
        // A restarted member derives the link key from its own secret: it must be the job's.
        std::fprintf(stderr, "impi-relay: -state %s: not written, this relay cannot be restarted: "
                             "its job secret (%s) is not the primary relay's\n",
                     cfg_.state_file.c_str(), secret_.source.c_str());
        return;
    }
    RelayState st;
    st.server = member ? cfg_.join : cfg_.server;
    st.client = client_;
    st.pub = pub_;
    st.priv = priv_;
    st.port = member ? 0 : base::local_port(lfd_);
    st.trunks = map_.trunks;
    st.index = map_.index;
    st.ports = my_ports_;
    st.flags = keys_.flags;
    st.session = keys_.session;
    st.out = encode_job(map_.out);
    st.in = encode_job(map_.in);
    base::Status s = write_state_file(cfg_.state_file, encode_relay_state(st, secret_));
    if (!s.ok()) {
        std::fprintf(stderr, "impi-relay: -state: %s; this relay cannot be restarted\n",
                     s.message().c_str());
        return;
    }
    keep_ = true;
    if (member) {
        send_cmd(*primary_, CMD_KEEP, {});
    } else {
        send_cmd(*server_, CMD_KEEP, {});
        send_cmd(*agent_, CMD_KEEP, {});
        for (auto& m : members_) send_cmd(m->link, CMD_KEEP, {});
    }
    WANMPI_LOG(info, "state written to %s: a relay started again with it takes over",
               cfg_.state_file.c_str());
}

// Started with -state FILE that exists: the relay that wrote it died (or was stopped) in the
// middle of the job. Take its addresses and ports, serve the hosts' reconnects, and come back
// to the server (BACK), or, a trunk member, to the primary relay (TBCK); the agent, and a
// primary's members, come back to us.
int Relay::run_restarted(const std::string& text) {
    RelayState st;
    auto refuse = [&](const std::string& why) {
        std::fprintf(stderr, "impi-relay: state file %s: %s\n", cfg_.state_file.c_str(), why.c_str());
        return 2;
    };
    std::string err = decode_relay_state(text, secret_, &st);
    if (!err.empty()) return refuse(err);
    const bool member = !cfg_.join.empty();
    if (member != (st.index > 0))
        return refuse(member ? "it is a primary relay's: start it with SERVER_ADDR:PORT, not -join"
                             : "it is trunk relay " + std::to_string(st.index) + "'s: start it "
                               "with -join " + st.server);
    if (!member && st.server != cfg_.server)
        return refuse("it is for impi-server " + st.server + ", not " + cfg_.server);
    if (member && st.server != cfg_.join)
        return refuse("it is for the primary relay at " + st.server + ", not " + cfg_.join);
    if (!member && st.trunks != cfg_.trunks)
        return refuse("it is for " + std::to_string(st.trunks) + " trunk relay(s), not " +
                      std::to_string(cfg_.trunks) + " (-trunks, -join-hosts)");
    if ((!cfg_.public_addr.empty() && cfg_.public_addr != st.pub) ||
        (!cfg_.private_addr.empty() && cfg_.private_addr != st.priv) ||
        (!member && cfg_.port && uint32_t(cfg_.port) != st.port))
        return refuse("it is for public " + st.pub + ", private " + st.priv +
                      (member ? "" : ":" + std::to_string(st.port)) +
                      ": a restarted relay takes the same addresses");
    Job out, in;
    base::Status s = decode_job(st.out, &out);
    if (s.ok()) s = decode_job(st.in, &in);
    if (!s.ok()) return refuse(s.message());
    // The ports are those of the hosts this relay represents (start_data()): own, then outside.
    RelayMap m;
    if (!(s = make_relay_map(st.client, st.trunks, st.index, out, in, &m)).ok()) return refuse(s.message());
    size_t own = 0, mine = 0;
    for (int h = 0; h < int(out.hosts.size()); ++h)
        if (m.trunk_of(h) == st.index) {
            ++mine;
            own += m.own(h);
        }
    if (st.ports.size() != mine) return refuse("its ports do not match its job");
    pub_ = st.pub;
    priv_ = st.priv;
    client_ = st.client;
    nclients_ = out.nclients();
    keys_.flags = st.flags;
    keys_.session = st.session;
    if (member) {  // the primary derives its key in start_data(); a member had it from TJOB
        keys_.keyed = true;
        keys_.key = wanlink::link_key(secret_, keys_.session.data());
    }
    if (!member) lfd_ = base::tcp_listen(priv_, uint16_t(st.port), 64, &err);
    bool ok = member || lfd_ >= 0;
    for (size_t i = 0; ok && i < st.ports.size(); ++i) {
        int fd = base::tcp_listen(i < own ? pub_ : priv_, uint16_t(st.ports[i]), 128, &err);
        if (fd < 0) {
            if (lfd_ >= 0) ::close(lfd_);
            lfd_ = -1;
            ok = false;
            break;
        }
        listeners_.emplace_back(base::Fd(fd), -1);
    }
    if (!ok) {
        std::fprintf(stderr, "impi-relay: cannot take the ports of state file %s again: %s (is "
                             "the relay that wrote it still running?)\n",
                     cfg_.state_file.c_str(), err.c_str());
        return 1;
    }
    my_ports_ = st.ports;
    if (!(s = start_data(st.trunks, st.index, client_, std::move(out), std::move(in))).ok())
        return refuse(s.message());
    // A member has no control port of its own: its first line only says where it is.
    std::printf("%s:%u\n", priv_.c_str(), unsigned(st.port));
    std::fflush(stdout);
    done_ = keep_ = hmac_ = server_auth_done_ = true;
    astate_ = A_CMDS;
    restarted_at_ = runtime::EventLoop::now_ms();
    WANMPI_LOG(warn, "restarted from %s: client %d, trunk %d of %d, public %s, private %s; "
                     "waiting for %s and the hosts to come back",
               cfg_.state_file.c_str(), client_, st.index, st.trunks, pub_.c_str(), priv_.c_str(),
               member ? "the primary relay" : "impi-server, the agent, the trunk relays");
    watch_flow(restarted_at_);
    if (member) {
        primary_away_since_ = restarted_at_;
        primary_why_ = "lost this trunk relay (restarted)";
        back_try(true);
        serve();
        return exit_;
    }
    base::set_nonblock(lfd_, true);
    loop_.add(lfd_, EPOLLIN, [this](uint32_t) { on_listener(); });
    server_away_since_ = restarted_at_;
    server_why_ = "lost this relay (restarted)";
    back_try(false);
    // The members lost their control link with the relay that died: they come back (TBCK).
    for (int t = 1; t < st.trunks; ++t) {
        auto mb = std::make_unique<Member>();
        mb->link.who = trunk_name(t);
        mb->keep = true;
        Member* mp = mb.get();
        members_.push_back(std::move(mb));
        member_away(mp, "was connected to the relay that was restarted");
    }
    loop_.after(cfg_.reconnect_ms, [this] {
        if (!agent_ || agent_->fd < 0)
            fail("the cluster's agent did not come back to the restarted relay within " +
                 std::to_string(cfg_.reconnect_ms / 1000) + " s (WANMPI_WAN_RECONNECT_S)");
    });
    serve();
    loop_.remove(lfd_);
    ::close(lfd_);
    return exit_;
}

// "trunk relay I of T (public ADDR)": the public address is where the job's hosts see the
// cluster's hosts that relay I represents.
std::string Relay::trunk_name(int t) const {
    std::string pub;
    for (int h = 0; h < int(map_.out.hosts.size()) && pub.empty(); ++h)
        if (map_.own(h) && map_.trunk_of(h) == t)
            if (auto a = ipv4_from_host_id(map_.out.hosts[size_t(h)].id)) pub = *a;
    return "trunk relay " + std::to_string(t) + " of " + std::to_string(map_.trunks) +
           (pub.empty() ? "" : " (public " + pub + ")");
}

// A member's control link dropped after both said KEEP: the member died (or is being
// restarted). Its pairs are broken and their hosts redial its ports; wait for it (TBCK,
// member_back()) up to WANMPI_WAN_RECONNECT_S, then end the job naming it.
void Relay::member_away(Member* m, const std::string& why) {
    close_link(m->link);
    const int64_t since = m->away_since = runtime::EventLoop::now_ms();
    WANMPI_LOG(warn, "%s %s; waiting up to %lld s for it to come back (WANMPI_WAN_RECONNECT_S)",
               m->link.who.c_str(), why.c_str(), (long long)(cfg_.reconnect_ms / 1000));
    loop_.after(cfg_.reconnect_ms, [this, m, since, why] {
        if (exit_ >= 0 || end_by_ || m->away_since != since) return;
        fail(m->link.who + " " + why + " and did not come back within " +
             std::to_string(cfg_.reconnect_ms / 1000) + " s (WANMPI_WAN_RECONNECT_S)");
    });
}

// TBCK, authenticated (agent_back()): trunk member `index` takes its place again. The old link,
// if this relay has not yet seen it drop, is replaced (as impi-server does for BACK).
bool Relay::member_back(Link* l, const BackMsg&, uint32_t index, std::string* why) {
    if (index >= uint32_t(cfg_.trunks) || index > members_.size()) {
        *why = "this relay has no trunk relay " + std::to_string(index);
        return false;
    }
    Member* m = members_[index - 1].get();
    const std::string from = l->who;
    std::vector<uint8_t> ans(4, 0);
    send_cmd(*l, CMD_TBCK, ans);
    if (m->link.fd >= 0) {
        WANMPI_LOG(warn, "%s: replaced by the one that came back from %s", m->link.who.c_str(),
                   l->who.c_str());
        close_link(m->link);
    }
    auto up = std::move(unknown_[l]);
    unknown_.erase(l);
    loop_.remove(up->fd);
    std::string who = m->link.who;
    m->link = std::move(*up);
    m->link.who = who;
    m->link.back = 0;
    m->keep = true;
    watch(m->link, [this, m] { on_member(m); });
    WANMPI_LOG(warn, "%s came back from %s after %lld ms", who.c_str(), from.c_str(),
               (long long)(m->away_since ? runtime::EventLoop::now_ms() - m->away_since : 0));
    m->away_since = 0;
    if (!m->link.in.empty()) on_member(m);
    return true;
}

// For the record (docs/benchmarks.md, bench/relay-restart.sh): how long after this relay
// listened again the first packet passed (a host pair resumed and carried data).
void Relay::watch_flow(int64_t since) {
    loop_.after(5, [this, since] {
        if (exit_ >= 0) return;
        if (!data_ || data_->packets == 0) return watch_flow(since);
        WANMPI_LOG(warn, "traffic flows again through the restarted relay %lld ms after it "
                         "listened (%llu pair(s) resumed so far)",
                   (long long)(runtime::EventLoop::now_ms() - since),
                   (unsigned long long)data_->resumed);
    });
}

// What this relay hangs off dropped after KEEP without an orderly end: impi-server (the
// primary: the WAN reset it, or the server is gone; the server keeps our place as long) or the
// primary relay (a member: it died or is being restarted; meanwhile this relay serves its
// pairs). Come back to it for up to WANMPI_WAN_RECONNECT_S.
void Relay::away(bool trunk, const std::string& why) {
    Way w = way(trunk);
    close_link(*w.link);
    w.since = runtime::EventLoop::now_ms();
    w.backoff = 10;
    w.why = why;
    WANMPI_LOG(warn, "%s (%s) %s; coming back to it for up to %lld s (WANMPI_WAN_RECONNECT_S)",
               w.name, w.addr.c_str(), why.c_str(), (long long)(cfg_.reconnect_ms / 1000));
    back_try(trunk);
}

// One attempt: connect, wanmpi's AUTH, then BACK to impi-server (with FINI if the agent sent it
// meanwhile) or TBCK to the primary relay. The exchange blocks this relay for about two round
// trips (bounded by 1 s to connect and 5 s for the exchange); its pairs wait that long.
void Relay::back_try(bool trunk) {
    Way w = way(trunk);
    if (exit_ >= 0 || end_by_ || (w.link && w.link->fd >= 0)) return;
    const int64_t now = runtime::EventLoop::now_ms();
    if (now - w.since >= cfg_.reconnect_ms)
        return fail(std::string(w.name) + " (" + w.addr + ") " + w.why +
                    " and could not be reached again within " +
                    std::to_string(cfg_.reconnect_ms / 1000) + " s (WANMPI_WAN_RECONNECT_S)");
    auto hp = base::parse_host_port(w.addr);
    std::string err;
    int fd = base::tcp_connect(hp->host, hp->port, 1000, &err);
    base::Status s(base::Errc::io_error, err);
    if (fd >= 0) {
        BackMsg b;
        b.client = uint32_t(client_);
        b.fini = !trunk && fini_;
        b.session = keys_.session;
        s = resume_client(fd, secret_, b, base::now_ns() / 1000000 + 5000,
                          std::string(w.name) + " at " + w.addr, trunk ? uint32_t(map_.index) : 0);
    }
    if (!s.ok()) {
        if (fd >= 0) ::close(fd);
        if (fd >= 0 && (s.code() == base::Errc::invalid || s.code() == base::Errc::link_failed))
            return fail(s.message());
        loop_.after(w.backoff, [this, trunk] { back_try(trunk); });
        w.backoff = std::min<int64_t>(w.backoff * 2, 500);
        return;
    }
    w.link = std::make_unique<Link>();
    w.link->fd = fd;
    w.link->who = std::string(w.name) + " at " + w.addr;
    if (trunk) {
        primary_keep_ = true;  // it answers TBCK only after KEEP
        watch(*w.link, [this] { on_primary(); });
    } else {
        watch(*w.link, [this] { on_server(); });
    }
    WANMPI_LOG(warn, "back with %s %s after %lld ms", w.name, w.addr.c_str(),
               (long long)(runtime::EventLoop::now_ms() - w.since));
    w.since = 0;
}

// An agent, or a trunk member, coming back to this relay (it said KEEP, or was restarted):
// wanmpi's AUTH answered here with the job secret (the relay holds it; the session nonce is the
// job's), then BACK (the agent) or TBCK (a member, member_back()).
void Relay::agent_back(Link* l) {
    auto drop = [&](const std::string& why) {
        WANMPI_LOG(warn, "connection from %s: %s; closed", l->who.c_str(), why.c_str());
        close_link(*l);
        unknown_.erase(l);
    };
    if (l->back == 0) {
        if (l->in.size() < kCmdHeader + 4) return;
        CmdHeader h = decode_cmd(l->in.data());
        if (h.len != 4 || !(get_be32(l->in.data() + kCmdHeader) & (1u << wanlink::kAuthHmac)))
            return drop("an agent coming back must offer wanmpi's AUTH method");
        l->in.erase(l->in.begin(), l->in.begin() + kCmdHeader + 4);
        uint8_t reply[8 + wanlink::kAuthChallengeLen];
        put_be32(reply, wanlink::kAuthHmac);
        put_be32(reply + 4, wanlink::kAuthChallengeLen);
        wanlink::random_bytes(l->ns, sizeof l->ns);
        std::memcpy(reply + 8, l->ns, 32);
        std::memcpy(reply + 40, keys_.session.data(), 32);
        send(*l, reply, sizeof reply);
        l->back = 1;
    }
    if (l->back == 1) {
        if (l->in.size() < wanlink::kAuthResponse) return;
        const uint8_t* nc = l->in.data();
        wanlink::Key want = wanlink::auth_client_mac(secret_, l->ns, nc, keys_.session.data());
        uint8_t verdict[wanlink::kAuthVerdict] = {};
        if (!wanlink::equal_mac(want.data(), nc + 32)) {
            put_be32(verdict, 1);
            send(*l, verdict, sizeof verdict);
            return drop("failed authentication: it does not hold this job's secret");
        }
        wanlink::Key ms = wanlink::auth_server_mac(secret_, l->ns, nc, keys_.session.data());
        std::memcpy(verdict + 4, ms.data(), 32);
        send(*l, verdict, sizeof verdict);
        l->in.erase(l->in.begin(), l->in.begin() + wanlink::kAuthResponse);
        l->back = 2;
    }
    // BACK from the agent, or TBCK from a trunk member (impi_wire.hpp).
    if (l->in.size() < kCmdHeader) return;
    CmdHeader h = decode_cmd(l->in.data());
    const bool trunk = h.cmd == CMD_TBCK;
    const size_t len = trunk ? kTrunkBackLen : kBackLen;
    BackMsg b;
    uint32_t index = 0;
    std::string why;
    if ((h.cmd != CMD_BACK && !trunk) || h.len != int32_t(len))
        why = "expected BACK or TBCK";
    else if (l->in.size() < kCmdHeader + len)
        return;
    else
        why = trunk ? decode_trunk_back(l->in.data() + kCmdHeader, len, &b, &index)
                    : decode_back(l->in.data() + kCmdHeader, len, &b);
    if (why.empty() && int(b.client) != client_)
        why = "it is client " + std::to_string(b.client) + "; this relay serves client " +
              std::to_string(client_);
    if (why.empty() && !wanlink::equal_mac(b.session.data(), keys_.session.data()))
        why = "it belongs to another job";
    if (why.empty() && !trunk && agent_ && agent_->fd >= 0)
        why = "the cluster's agent is connected";
    if (why.empty() && trunk) {
        l->in.erase(l->in.begin(), l->in.begin() + kCmdHeader + len);
        if (member_back(l, b, index, &why)) return;
    }
    std::vector<uint8_t> ans(4 + why.size());
    put_be32(ans.data(), why.empty() ? 0 : 1);
    std::memcpy(ans.data() + 4, why.data(), why.size());
    send_cmd(*l, trunk ? CMD_TBCK : CMD_BACK, ans);
    if (!why.empty()) return drop(std::string(trunk ? "TBCK" : "BACK") + " refused: " + why);
    l->in.erase(l->in.begin(), l->in.begin() + kCmdHeader + kBackLen);
    auto up = std::move(unknown_[l]);
    unknown_.erase(l);
    loop_.remove(up->fd);
    agent_ = std::move(up);
    agent_->who = "the cluster's agent (" + agent_->who + ")";
    agent_->back = 0;
    astate_ = A_CMDS;
    watch(*agent_, [this] { on_agent(); });
    if (restarted_at_)
        WANMPI_LOG(warn, "%s came back %lld ms after this relay listened", agent_->who.c_str(),
                   (long long)(runtime::EventLoop::now_ms() - restarted_at_));
    else
        WANMPI_LOG(warn, "%s came back", agent_->who.c_str());
    if (b.fini && !fini_) {
        fini_ = true;
        if (server_) send_cmd(*server_, CMD_FINI, {});
    }
    if (!agent_->in.empty()) on_agent();
}

}  // namespace wanmpi::impi
