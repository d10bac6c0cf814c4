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
    RelayState st;
    st.server = cfg_.server;
    st.client = client_;
    st.pub = pub_;
    st.priv = priv_;
    st.port = base::local_port(lfd_);
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
    send_cmd(*server_, CMD_KEEP, {});
    send_cmd(*agent_, CMD_KEEP, {});
    WANMPI_LOG(info, "state written to %s: a relay started again with it takes over",
               cfg_.state_file.c_str());
}

// Started with -state FILE that exists: the relay that wrote it died (or was stopped) in the
// middle of the job. Take its addresses and ports, serve the hosts' reconnects, and come back
// to the server (BACK); the agent comes back to us.
int Relay::run_restarted(const std::string& text) {
    RelayState st;
    auto refuse = [&](const std::string& why) {
        std::fprintf(stderr, "impi-relay: state file %s: %s\n", cfg_.state_file.c_str(), why.c_str());
        return 2;
    };
    std::string err = decode_relay_state(text, secret_, &st);
    if (!err.empty()) return refuse(err);
    if (st.server != cfg_.server)
        return refuse("it is for impi-server " + st.server + ", not " + cfg_.server);
    if ((!cfg_.public_addr.empty() && cfg_.public_addr != st.pub) ||
        (!cfg_.private_addr.empty() && cfg_.private_addr != st.priv) ||
        (cfg_.port && uint32_t(cfg_.port) != st.port))
        return refuse("it is for public " + st.pub + ", private " + st.priv + ":" +
                      std::to_string(st.port) + ": a restarted relay takes the same addresses");
    Job out, in;
    base::Status s = decode_job(st.out, &out);
    if (s.ok()) s = decode_job(st.in, &in);
    if (!s.ok()) return refuse(s.message());
    if (st.ports.size() != out.hosts.size() || st.client >= out.nclients())
        return refuse("its ports do not match its job");
    pub_ = st.pub;
    priv_ = st.priv;
    client_ = st.client;
    nclients_ = out.nclients();
    keys_.flags = st.flags;
    keys_.session = st.session;
    lfd_ = base::tcp_listen(priv_, uint16_t(st.port), 64, &err);
    size_t own = 0;
    for (const auto& h : out.hosts) own += h.client == client_;
    for (size_t i = 0; lfd_ >= 0 && i < st.ports.size(); ++i) {
        int fd = base::tcp_listen(i < own ? pub_ : priv_, uint16_t(st.ports[i]), 128, &err);
        if (fd < 0) {
            ::close(lfd_);
            lfd_ = -1;
            break;
        }
        listeners_.emplace_back(base::Fd(fd), -1);
    }
    if (lfd_ < 0) {
        std::fprintf(stderr, "impi-relay: cannot take the ports of state file %s again: %s (is "
                             "the relay that wrote it still running?)\n",
                     cfg_.state_file.c_str(), err.c_str());
        return 1;
    }
    if (!(s = start_data(1, 0, client_, std::move(out), std::move(in))).ok()) return refuse(s.message());
    std::printf("%s:%u\n", priv_.c_str(), unsigned(st.port));
    std::fflush(stdout);
    done_ = keep_ = hmac_ = server_auth_done_ = true;
    astate_ = A_CMDS;
    WANMPI_LOG(warn, "restarted from %s: client %d, public %s, private %s:%u; waiting for "
                     "impi-server, the agent and the hosts to come back",
               cfg_.state_file.c_str(), client_, pub_.c_str(), priv_.c_str(), unsigned(st.port));
    base::set_nonblock(lfd_, true);
    loop_.add(lfd_, EPOLLIN, [this](uint32_t) { on_listener(); });
    server_away_since_ = restarted_at_ = runtime::EventLoop::now_ms();
    server_why_ = "lost this relay (restarted)";
    watch_flow(restarted_at_);
    server_back_try();
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

// The server's connection dropped after KEEP without LOST: the WAN reset it, or the server is
// gone. Come back to it for up to WANMPI_WAN_RECONNECT_S (the server keeps our place as long).
void Relay::server_away(const std::string& why) {
    close_link(*server_);
    server_away_since_ = runtime::EventLoop::now_ms();
    server_backoff_ = 10;
    server_why_ = why;
    WANMPI_LOG(warn, "impi-server (%s) %s; coming back to it for up to %lld s "
                     "(WANMPI_WAN_RECONNECT_S)",
               cfg_.server.c_str(), why.c_str(), (long long)(cfg_.reconnect_ms / 1000));
    server_back_try();
}

// One attempt: connect, wanmpi's AUTH, BACK (with FINI if the agent sent it meanwhile). The
// exchange blocks this relay for about two round trips (bounded by 1 s to connect and 5 s for
// the exchange); its pairs wait that long.
void Relay::server_back_try() {
    if (exit_ >= 0 || (server_ && server_->fd >= 0)) return;
    const int64_t now = runtime::EventLoop::now_ms();
    if (now - server_away_since_ >= cfg_.reconnect_ms)
        return fail("impi-server (" + cfg_.server + ") " + server_why_ +
                    " and could not be reached again within " +
                    std::to_string(cfg_.reconnect_ms / 1000) + " s (WANMPI_WAN_RECONNECT_S)");
    auto sp = base::parse_host_port(cfg_.server);
    std::string err;
    int fd = base::tcp_connect(sp->host, sp->port, 1000, &err);
    base::Status s(base::Errc::io_error, err);
    if (fd >= 0) {
        BackMsg b;
        b.client = uint32_t(client_);
        b.fini = fini_;
        b.session = keys_.session;
        s = resume_client(fd, secret_, b, base::now_ns() / 1000000 + 5000, "impi-server at " + cfg_.server);
    }
    if (!s.ok()) {
        if (fd >= 0) ::close(fd);
        if (fd >= 0 && (s.code() == base::Errc::invalid || s.code() == base::Errc::link_failed))
            return fail(s.message());
        loop_.after(server_backoff_, [this] { server_back_try(); });
        server_backoff_ = std::min<int64_t>(server_backoff_ * 2, 500);
        return;
    }
    server_ = std::make_unique<Link>();
    server_->fd = fd;
    server_->who = "impi-server at " + cfg_.server;
    watch(*server_, [this] { on_server(); });
    WANMPI_LOG(warn, "back with impi-server %s after %lld ms", cfg_.server.c_str(),
               (long long)(runtime::EventLoop::now_ms() - server_away_since_));
    server_away_since_ = 0;
}

// An agent coming back to this relay (it said KEEP, or was restarted): wanmpi's AUTH answered
// here with the job secret (the relay holds it; the session nonce is the job's), then BACK.
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
    if (l->in.size() < kCmdHeader + kBackLen) return;
    CmdHeader h = decode_cmd(l->in.data());
    BackMsg b;
    std::string why = h.cmd != CMD_BACK || h.len != int32_t(kBackLen)
                          ? "expected BACK"
                          : decode_back(l->in.data() + kCmdHeader, kBackLen, &b);
    if (why.empty() && int(b.client) != client_)
        why = "it is client " + std::to_string(b.client) + "; this relay serves client " +
              std::to_string(client_);
    if (why.empty() && !wanlink::equal_mac(b.session.data(), keys_.session.data()))
        why = "it belongs to another job";
    std::vector<uint8_t> ans(4 + why.size());
    put_be32(ans.data(), why.empty() ? 0 : 1);
    std::memcpy(ans.data() + 4, why.data(), why.size());
    send_cmd(*l, CMD_BACK, ans);
    if (!why.empty()) return drop("BACK refused: " + why);
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
