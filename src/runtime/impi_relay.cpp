// impi-relay's control: the start-up proxy between the cluster's agent and impi-server, the
// trunk members, and the end of the job (impi_relay.hpp has the design).
#include "runtime/impi_relay.hpp"

#include "wanlink/handshake.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ifaddrs.h>
#include <memory>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/log.hpp"
#include "base/socket.hpp"
#include "base/tunables.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/impi_dance.hpp"
#include "runtime/impi_relay_data.hpp"
#include "runtime/impi_relay_impl.hpp"
#include "runtime/impi_resume.hpp"

namespace wanmpi::impi {

static base::Tunable<int64_t> t_splice_min(
    "IMPI_RELAY", "SPLICE_MIN", 65536,
    "impi-relay moves the rest of a packet payload of at least this many bytes from socket to "
    "socket with splice(2), without copying it through the relay (0: never).");
static base::Tunable<int64_t> t_relay_startup(
    "IMPI_RELAY", "STARTUP_TIMEOUT", 300,
    "Seconds impi-relay waits for its cluster's agent, its trunk relays and the end of the "
    "IMPI start-up before it gives up.");

static base::Tunable<int64_t> t_spin(
    "IMPI_RELAY", "SPIN_US", -1,
    "After forwarding, impi-relay polls its sockets for this many microseconds before it sleeps "
    "in epoll: the next message (the reply of a ping-pong) is forwarded without waking a "
    "sleeping process, which costs 10-20 us on a virtual machine, at the price of a busy core "
    "while traffic flows. -1: 200 on a host with at least 4 CPUs (a front-end with a core to "
    "spare), else 0.");

RelayConfig relay_config_from_env() {
    RelayConfig c;
    c.spin_us = t_spin.get();
    if (c.spin_us < 0) c.spin_us = ::sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? 200 : 0;
    c.join_timeout_ms = dance_config_from_env().join_timeout_ms;
    c.startup_timeout_ms = t_relay_startup.get() * 1000;
    c.splice_min = uint64_t(std::max<int64_t>(0, t_splice_min.get()));
    c.splice = c.splice_min > 0;
    c.reconnect_ms = wanlink::reconnect_ms();
    return c;
}

using base::get_be32;
using base::put_be32;

namespace {

// The first up, non-loopback IPv4 address of this host other than `not_this`.
std::string other_ipv4(const std::string& not_this) {
    ifaddrs* ifs = nullptr;
    if (getifaddrs(&ifs) != 0) return "";
    std::string best;
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
        char b[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, b, sizeof b);
        if (b != not_this) {
            best = b;
            break;
        }
    }
    freeifaddrs(ifs);
    return best;
}

// The local address this host uses to reach host:port (a UDP connect sends nothing).
std::string route_source(const std::string& host, uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return "";
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    std::string out;
    if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) == 1 &&
        ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0)
        out = base::local_ip(fd);
    ::close(fd);
    return out;
}

}  // namespace


// ---------------------------------------------------------------------------------------------

void Relay::watch(Link& l, std::function<void()> on_input) {
    base::set_nonblock(l.fd, true);
    Link* lp = &l;
    loop_.add(l.fd, EPOLLIN, [this, lp, on_input](uint32_t ev) {
        if (ev & EPOLLOUT) {
            while (!lp->out.empty()) {
                ssize_t n = ::send(lp->fd, lp->out.data(), lp->out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n <= 0) break;
                lp->out.erase(0, size_t(n));
            }
            if (lp->out.empty() && lp->fd >= 0) loop_.modify(lp->fd, EPOLLIN);
        }
        if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_input();
    });
}

void Relay::send(Link& l, const void* p, size_t n) {
    if (l.fd < 0) return;
    const char* c = static_cast<const char*>(p);
    if (l.out.empty()) {
        ssize_t k = ::send(l.fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            c += k;
            n -= size_t(k);
        }
    }
    if (n == 0) return;
    bool was = l.out.empty();
    l.out.append(c, n);
    if (was) loop_.modify(l.fd, EPOLLIN | EPOLLOUT);
}

void Relay::send_cmd(Link& l, uint32_t cmd, const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> m(kCmdHeader + payload.size());
    encode_cmd(CmdHeader{cmd, int32_t(payload.size())}, m.data());
    std::memcpy(m.data() + kCmdHeader, payload.data(), payload.size());
    send(l, m.data(), m.size());
}

bool Relay::read_in(Link& l) {
    uint8_t b[65536];
    for (;;) {
        ssize_t n = ::recv(l.fd, b, sizeof b, MSG_DONTWAIT);
        if (n > 0) {
            l.in.insert(l.in.end(), b, b + n);
            if (l.in.size() > size_t(kMaxCmdPayload) + 64) {
                l.eof = true;
                return false;
            }
            continue;
        }
        if (n == 0) {
            l.eof = true;
            return false;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        if (errno == EINTR) continue;
        l.eof = true;
        return false;
    }
}

void Relay::close_link(Link& l) {
    if (l.fd < 0) return;
    // What is queued still leaves (a LOST notice, a TEND) if the socket takes it now.
    if (!l.out.empty()) (void)::send(l.fd, l.out.data(), l.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    loop_.remove(l.fd);
    ::close(l.fd);
    l.fd = -1;
}

void Relay::fail(const std::string& why) {
    if (exit_ >= 0) return;
    WANMPI_LOG(error, "%s; the job cannot go on", why.c_str());
    std::fprintf(stderr, "impi-relay: %s\n", why.c_str());
    if (data_) data_->close_all();
    // Say why, rather than only closing: after KEEP the other ends would wait for this relay to
    // come back; during the start-up (a trunk relay died, the agent broke off) the agent and,
    // through the server, every cluster then name the cause. Only to wanmpi ends (wanmpi's
    // AUTH): GONE to a server that knows this client (IMPI went through), LOST to an agent that
    // reads commands (its IMPI reply is in).
    const bool told = keep_ || (hmac_ && client_ >= 0 && nclients_ > 0);
    if (server_ && told) {
        std::vector<uint8_t> w(why.begin(), why.end());
        send_cmd(*server_, CMD_GONE, w);
    }
    if (agent_ && told) {
        std::vector<uint8_t> lost(4 + why.size());
        put_be32(lost.data(), uint32_t(-1));
        std::memcpy(lost.data() + 4, why.data(), why.size());
        send_cmd(*agent_, CMD_LOST, lost);
    }
    if (keep_) drop_state();
    for (auto& m : members_) {
        std::vector<uint8_t> st(4);
        put_be32(st.data(), 1);
        send_cmd(m->link, CMD_TEND, st);
        close_link(m->link);
    }
    if (agent_) close_link(*agent_);
    if (server_) close_link(*server_);
    if (primary_) close_link(*primary_);
    exit_ = 1;
}

base::Status Relay::open_listeners(const std::string& pub, const std::string& priv, uint32_t n_pub,
                                   uint32_t n_priv, std::vector<uint32_t>* ports) {
    for (uint32_t i = 0; i < n_pub + n_priv; ++i) {
        std::string err;
        const std::string& addr = i < n_pub ? pub : priv;
        int fd = base::tcp_listen(addr, 0, 128, &err);
        if (fd < 0) return base::Status(base::Errc::io_error, "cannot listen on " + addr + ": " + err);
        ports->push_back(base::local_port(fd));
        listeners_.emplace_back(base::Fd(fd), -1);
    }
    return base::Status::OK();
}

// The listeners were opened in trunk order of the hosts this relay represents: first the
// cluster's own hosts (public side), then the outside hosts (private side).
base::Status Relay::start_data(int trunks, int index, int client, Job out, Job in) {
    base::Status s = make_relay_map(client, trunks, index, std::move(out), std::move(in), &map_);
    if (!s.ok()) return s;
    if (index == 0 && secret_.set()) {
        keys_.keyed = true;
        keys_.key = wanlink::link_key(secret_, keys_.session.data());
    }
    data_ = std::make_unique<RelayData>(loop_, map_, cfg_, keys_);
    data_->on_broken = [](const std::string&) {};
    size_t k = 0;
    std::vector<int> own, outside;
    for (int h = 0; h < int(map_.out.hosts.size()); ++h)
        if (map_.trunk_of(h) == index) (map_.own(h) ? own : outside).push_back(h);
    if (own.size() + outside.size() != listeners_.size())
        return base::Status(base::Errc::fatal, "relay: listeners do not match the hosts it serves");
    for (int h : own) data_->add_listener(std::move(listeners_[k++].first), h);
    for (int h : outside) data_->add_listener(std::move(listeners_[k++].first), h);
    listeners_.clear();
    WANMPI_LOG(info, "trunk %d of %d: serving %zu host(s) of client %d and %zu outside host(s)",
               index, map_.trunks, own.size(), client, outside.size());
    return base::Status::OK();
}

int Relay::run() {
    int rc = cfg_.join.empty() ? run_primary() : run_member();
    return rc;
}

int Relay::serve() {
    int64_t spin_until = 0;
    while (exit_ < 0) {
        if (end_by_ && (!data_ || data_->open_pairs() == 0 || runtime::EventLoop::now_ms() >= end_by_)) {
            if (data_ && data_->open_pairs())
                WANMPI_LOG(warn, "%zu host pair(s) still open at the end", data_->open_pairs());
            exit_ = 0;
            break;
        }
        bool spinning = cfg_.spin_us > 0 && base::now_ns() < spin_until;
        int n = loop_.run_once(spinning ? 0 : end_by_ ? 100 : -1);
        if (n > 0 && cfg_.spin_us > 0) spin_until = base::now_ns() + cfg_.spin_us * 1000;
    }
    if (data_) {
        WANMPI_LOG(info, "forwarded %llu packets, %llu bytes (%llu spliced)",
                   (unsigned long long)data_->packets, (unsigned long long)data_->bytes,
                   (unsigned long long)data_->spliced);
        data_->close_all();
    }
    return exit_;
}

// ---- primary --------------------------------------------------------------------------------

int Relay::run_primary() {
    auto sp = base::parse_host_port(cfg_.server);
    if (!sp || sp->port == 0) {
        std::fprintf(stderr, "impi-relay: '%s' is not ADDR:PORT of impi-server\n", cfg_.server.c_str());
        return 2;
    }
    // The job secret and WANMPI_WAN_SECURITY, as mpirun reads them: the relay proves itself
    // on both legs of every relayed pair of wanmpi hosts, and demands what its setting says.
    {
        wanlink::Security sec;
        base::Status st = wanlink::job_secret(&secret_);
        if (st.ok()) st = wanlink::wan_security(&sec);
        if (!st.ok()) {
            std::fprintf(stderr, "impi-relay: %s\n", st.message().c_str());
            return 2;
        }
        keys_.flags = uint8_t((sec != wanlink::Security::none ? wanlink::kFlagAuth : 0) |
                              (sec == wanlink::Security::tls ? wanlink::kFlagTls : 0));
    }
    if (!cfg_.state_file.empty()) {
        // A relay that may be restarted proves itself to the server and the agent with the job
        // secret when it comes back (impi_resume.hpp): without one, -state cannot work.
        if (!secret_.set()) {
            std::fprintf(stderr, "impi-relay: -state needs the job secret (WANMPI_JOB_SECRET_FILE, "
                                 "as the clusters and impi-server): a restarted relay proves "
                                 "itself with it\n");
            return 2;
        }
        std::string text;
        bool exists = false;
        base::Status st = read_state_file(cfg_.state_file, &text, &exists);
        if (!st.ok()) {
            std::fprintf(stderr, "impi-relay: %s\n", st.message().c_str());
            return 2;
        }
        if (exists) return run_restarted(text);
    }
    pub_ = cfg_.public_addr.empty() ? route_source(sp->host, sp->port) : cfg_.public_addr;
    if (pub_.empty()) {
        std::fprintf(stderr, "impi-relay: no route to impi-server at %s (give -public ADDR)\n",
                     cfg_.server.c_str());
        return 1;
    }
    priv_ = cfg_.private_addr.empty() ? other_ipv4(pub_) : cfg_.private_addr;
    if (priv_.empty()) {
        std::fprintf(stderr, "impi-relay: this host has no address besides %s for the private "
                             "side (give -private ADDR)\n", pub_.c_str());
        return 1;
    }
    std::string err;
    lfd_ = base::tcp_listen(priv_, uint16_t(cfg_.port), 64, &err);
    if (lfd_ < 0) {
        std::fprintf(stderr, "impi-relay: %s\n", err.c_str());
        return 1;
    }
    std::printf("%s:%u\n", priv_.c_str(), unsigned(base::local_port(lfd_)));
    std::fflush(stdout);
    WANMPI_LOG(info, "relay for impi-server %s: public %s, private %s:%u, %d trunk(s)",
               cfg_.server.c_str(), pub_.c_str(), priv_.c_str(), unsigned(base::local_port(lfd_)),
               cfg_.trunks);
    base::set_nonblock(lfd_, true);
    loop_.add(lfd_, EPOLLIN, [this](uint32_t) { on_listener(); });
    if (cfg_.on_listening) cfg_.on_listening(priv_ + ":" + std::to_string(base::local_port(lfd_)));
    if (cfg_.poll_children) watch_children();
    loop_.after(cfg_.startup_timeout_ms, [this] {
        if (!done_)
            fail("the start-up did not finish within " +
                 std::to_string(cfg_.startup_timeout_ms / 1000) + " s (" +
                 (agent_ ? "" : "no agent connected; ") +
                 std::to_string(members_.size() + 1) + " of " + std::to_string(cfg_.trunks) +
                 " trunk relays)");
    });
    serve();
    if (cfg_.end_children) cfg_.end_children(exit_ == 0 ? 5000 : 1000);
    loop_.remove(lfd_);
    ::close(lfd_);
    return exit_;
}

void Relay::on_listener() {
    for (;;) {
        int fd = ::accept4(lfd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        if (unknown_.size() >= 64 || (done_ && !keep_)) {
            ::close(fd);
            continue;
        }
        auto up = std::make_unique<Link>();
        Link* l = up.get();
        l->fd = fd;
        l->who = base::peer_text(fd);
        l->serial = ++serial_;
        unknown_[l] = std::move(up);
        watch(*l, [this, l] { on_unknown(l); });
        loop_.after(cfg_.join_timeout_ms, [this, l, serial = l->serial] {
            auto it = unknown_.find(l);
            if (it == unknown_.end() || l->serial != serial) return;
            WANMPI_LOG(warn, "connection from %s said nothing within the join timeout; closed",
                       l->who.c_str());
            close_link(*l);
            unknown_.erase(it);
        });
    }
}

// A new connection on the relay's port: the agent (AUTH) or a trunk member (TRNK).
void Relay::on_unknown(Link* l) {
    bool ok = read_in(*l);
    if (l->back) return agent_back(l);
    auto drop = [&](const std::string& why) {
        WANMPI_LOG(warn, "connection from %s: %s; closed", l->who.c_str(), why.c_str());
        close_link(*l);
        unknown_.erase(l);
    };
    if (l->in.size() < kCmdHeader) {
        if (!ok) drop("closed before it said anything");
        return;
    }
    CmdHeader h = decode_cmd(l->in.data());
    // After KEEP, AUTH opens a way back: the agent's (BACK) or a trunk member's (TBCK).
    if (h.cmd == CMD_AUTH && keep_) {
        if (!ok) return drop("closed in the middle of AUTH");
        return agent_back(l);
    }
    if (h.cmd == CMD_AUTH && !agent_) {
        auto up = std::move(unknown_[l]);
        unknown_.erase(l);
        loop_.remove(up->fd);
        agent_ = std::move(up);
        agent_->who = "the cluster's agent (" + agent_->who + ")";
        watch(*agent_, [this] { on_agent(); });
        on_agent();
        return;
    }
    if (h.cmd == CMD_TRNK && int(members_.size()) + 1 < cfg_.trunks && !allocating_) {
        if (h.len != 36) return drop("a TRNK of " + std::to_string(h.len) + " bytes");
        if (l->in.size() < kCmdHeader + 36) {
            if (!ok) drop("closed in the middle of TRNK");
            return;
        }
        auto m = std::make_unique<Member>();
        std::string err = decode_trunk_hello(l->in.data() + kCmdHeader, 36, &m->hello);
        if (!err.empty()) return drop(err);
        m->pub = *ipv4_from_host_id(m->hello.pub);
        m->priv = *ipv4_from_host_id(m->hello.priv);
        auto up = std::move(unknown_[l]);
        unknown_.erase(l);
        loop_.remove(up->fd);
        m->link = std::move(*up);
        m->link.in.erase(m->link.in.begin(), m->link.in.begin() + kCmdHeader + 36);
        m->link.who = "trunk relay " + std::to_string(members_.size() + 1) + " (public " + m->pub +
                      ", private " + m->priv + ")";
        Member* mp = m.get();
        members_.push_back(std::move(m));
        watch(mp->link, [this, mp] { on_member(mp); });
        WANMPI_LOG(info, "%s joined", mp->link.who.c_str());
        try_allocate();
        return;
    }
    if (done_) return drop("the start-up is over");
    drop(std::string("unexpected first command ") +
         (cmd_name(h.cmd) ? cmd_name(h.cmd) : std::to_string(h.cmd).c_str()) +
         (h.cmd == CMD_AUTH ? " (the cluster's agent is already connected)" : ""));
}

// Bytes from the agent. Before AUTH is answered: the AUTH command, then (method KEY) the bare
// key; then framed commands.
void Relay::on_agent() {
    if (!agent_ || agent_->fd < 0) return;
    bool ok = read_in(*agent_);
    Link& a = *agent_;
    while (exit_ < 0 && !a.paused) {
        if (astate_ == A_AUTH) {
            if (a.in.size() < kCmdHeader + 4) break;
            CmdHeader h = decode_cmd(a.in.data());
            if (h.cmd != CMD_AUTH || h.len != 4) return fail("the cluster's agent did not start with AUTH");
            auto sp = base::parse_host_port(cfg_.server);
            std::string err;
            int fd = base::tcp_connect(sp->host, sp->port, 10000, &err);
            if (fd < 0) return fail("cannot reach impi-server: " + err);
            server_ = std::make_unique<Link>();
            server_->fd = fd;
            server_->who = "impi-server at " + cfg_.server;
            watch(*server_, [this] { on_server(); });
            send(*server_, a.in.data(), kCmdHeader + 4);
            a.in.erase(a.in.begin(), a.in.begin() + kCmdHeader + 4);
            astate_ = A_AUTHREPLY;
            continue;
        }
        if (astate_ == A_AUTHREPLY) break;  // the server speaks next
        if (astate_ == A_HMAC) {
            if (a.in.size() < wanlink::kAuthResponse) break;
            send(*server_, a.in.data(), wanlink::kAuthResponse);
            a.in.erase(a.in.begin(), a.in.begin() + wanlink::kAuthResponse);
            astate_ = A_AUTHREPLY;  // the verdict comes next
            verdict_pending_ = true;
            continue;
        }
        if (astate_ == A_KEY) {
            if (a.in.size() < 8) break;
            send(*server_, a.in.data(), 8);
            a.in.erase(a.in.begin(), a.in.begin() + 8);
            astate_ = A_CMDS;
            continue;
        }
        if (a.in.size() < kCmdHeader) break;
        CmdHeader h = decode_cmd(a.in.data());
        if (h.len < 0 || h.len > kMaxCmdPayload) return fail("the cluster's agent sent a bad command length");
        if (a.in.size() < kCmdHeader + size_t(h.len)) break;
        std::vector<uint8_t> payload(a.in.begin() + kCmdHeader, a.in.begin() + kCmdHeader + h.len);
        if (!agent_command(h.cmd, payload)) break;  // paused (or failed): keep the bytes
        a.in.erase(a.in.begin(), a.in.begin() + kCmdHeader + h.len);
    }
    if (!ok && exit_ < 0) {
        if (fini_) {
            close_link(a);
        } else {
            fail("the cluster's agent (" + a.who + ") closed its connection before FINI: the cluster "
                 "has failed");
        }
    }
}

// One framed command from the agent. Returns false if it must wait (the relay's ports are not
// allocated yet) or the relay failed.
bool Relay::agent_command(uint32_t cmd, const std::vector<uint8_t>& payload) {
    switch (cmd) {
    case CMD_IMPI:
        if (payload.size() != 4) return fail("the agent's IMPI command is malformed"), false;
        client_ = int32_t(get_be32(payload.data()));
        if (client_ < 0 || client_ >= 32) return fail("the agent's client rank is out of range"), false;
        send_cmd(*server_, cmd, payload);
        return true;
    case CMD_COLL: {
        if (payload.size() < 4) return fail("the agent's COLL command is malformed"), false;
        uint32_t label = get_be32(payload.data());
        std::vector<uint8_t> data(payload.begin() + 4, payload.end());
        bool rewritten = label == H_IPV6 || label == H_PORT || label == P_IPV6 || label == P_PID;
        if (rewritten && !faces_ready_) {
            agent_->paused = true;  // resumed by try_allocate()
            return false;
        }
        agent_contrib_[label] = data;
        if (label == C_NHOSTS || label == C_NPROCS) {
            if (data.size() != 4) return fail("the agent's NHOSTS/NPROCS is malformed"), false;
            (label == C_NHOSTS ? own_nhosts_ : own_nprocs_) = get_be32(data.data());
            (label == C_NHOSTS ? have_own_nhosts_ : have_own_nprocs_) = true;
        }
        std::vector<uint8_t> out;
        base::Status s = relay_outward_contribution(faces_, label, data, own_nhosts_, own_nprocs_, &out);
        if (!s.ok()) return fail(s.message()), false;
        std::vector<uint8_t> m(4 + out.size());
        put_be32(m.data(), label);
        std::memcpy(m.data() + 4, out.data(), out.size());
        send_cmd(*server_, CMD_COLL, m);
        return true;
    }
    case CMD_DONE:
        send_cmd(*server_, cmd, {});
        return true;
    case CMD_FINI:
        fini_ = true;
        if (server_) send_cmd(*server_, cmd, {});  // else BACK carries it (back_try)
        return true;
    default:
        return fail("the cluster's agent sent an unknown command " + std::to_string(cmd)), false;
    }
}

void Relay::on_server() {
    if (!server_ || server_->fd < 0) return;
    bool ok = read_in(*server_);
    Link& s = *server_;
    while (exit_ < 0) {
        if (!server_auth_done_) {
            // The server's answer to AUTH has no command header: Int4 which, Int4 len.
            if (s.in.size() < 8) break;
            uint32_t which = get_be32(s.in.data());
            uint32_t len = get_be32(s.in.data() + 4);
            if (len > 64) return fail("impi-server's AUTH answer is malformed");
            if (s.in.size() < 8 + len) break;
            send(*agent_, s.in.data(), 8 + len);
            s.in.erase(s.in.begin(), s.in.begin() + 8 + len);
            server_auth_done_ = true;
            // wanmpi's AUTH method: the record is Ns S; S, the session nonce, keys the links.
            if (which == wanlink::kAuthHmac && len == wanlink::kAuthChallengeLen)
                std::memcpy(keys_.session.data(), s.in.data() + 8 + wanlink::kNonce, 32);
            astate_ = which == AUTH_KEY ? A_KEY : which == wanlink::kAuthHmac ? A_HMAC : A_CMDS;
            hmac_ = which == wanlink::kAuthHmac;
            on_agent();
            continue;
        }
        if (verdict_pending_) {
            if (s.in.size() < wanlink::kAuthVerdict) break;
            send(*agent_, s.in.data(), wanlink::kAuthVerdict);
            s.in.erase(s.in.begin(), s.in.begin() + wanlink::kAuthVerdict);
            verdict_pending_ = false;
            astate_ = A_CMDS;
            on_agent();
            continue;
        }
        if (s.in.size() < kCmdHeader) break;
        CmdHeader h = decode_cmd(s.in.data());
        if (h.len < 0 || h.len > kMaxCmdPayload) return fail("impi-server sent a bad command length");
        if (s.in.size() < kCmdHeader + size_t(h.len)) break;
        std::vector<uint8_t> payload(s.in.begin() + kCmdHeader, s.in.begin() + kCmdHeader + h.len);
        s.in.erase(s.in.begin(), s.in.begin() + kCmdHeader + h.len);
        if (!server_command(h.cmd, payload)) return;
    }
    if (!ok && exit_ < 0) {
        if (fini_) return finish_ok();
        if (keep_ && !lost_seen_) return away(false, "closed the connection without an orderly end");
        fail("impi-server (" + cfg_.server + ") closed the connection before the cluster finished");
    }
}

bool Relay::server_command(uint32_t cmd, const std::vector<uint8_t>& payload) {
    switch (cmd) {
    case CMD_IMPI:
        if (payload.size() != 4) return fail("impi-server's IMPI reply is malformed"), false;
        nclients_ = int32_t(get_be32(payload.data()));
        if (nclients_ < 1 || nclients_ > 32 || client_ >= nclients_)
            return fail("impi-server's client count is out of range"), false;
        send_cmd(*agent_, cmd, payload);
        return true;
    case CMD_COLL: {
        if (payload.size() < 8) return fail("impi-server's COLL reply is malformed"), false;
        uint32_t label = get_be32(payload.data());
        CollReply r;
        r.mask = get_be32(payload.data() + 4);
        r.data.assign(payload.begin() + 8, payload.end());
        if (label == C_NHOSTS || label == C_NPROCS) {
            if (r.data.size() != size_t(nclients_) * 4 || r.mask != (nclients_ >= 32 ? 0xffffffffu : (1u << nclients_) - 1))
                return fail(std::string("impi-server's ") + label_name(label) + " reply is malformed"), false;
            auto& v = label == C_NHOSTS ? nhosts_ : nprocs_;
            v.clear();
            for (int c = 0; c < nclients_; ++c) v.push_back(get_be32(r.data.data() + 4 * c));
            if (label == C_NHOSTS) try_allocate();
        }
        CollReply in;
        base::Status s = relay_inward_reply(faces_, client_, label, r, agent_contrib_[label],
                                            nhosts_, nprocs_, &in);
        if (!s.ok()) return fail(s.message()), false;
        out_replies_[label] = r;
        in_replies_[label] = in;
        std::vector<uint8_t> m(8 + in.data.size());
        put_be32(m.data(), label);
        put_be32(m.data() + 4, in.mask);
        std::memcpy(m.data() + 8, in.data.data(), in.data.size());
        send_cmd(*agent_, CMD_COLL, m);
        return true;
    }
    case CMD_DONE: {
        Job out, in;
        base::Status s = collate(nclients_, out_replies_, &out);
        if (s.ok()) s = collate(nclients_, in_replies_, &in);
        if (!s.ok()) return fail("the job's tables do not collate: " + s.message()), false;
        // Every member gets both views; then the data plane starts here too.
        for (size_t i = 0; i < members_.size(); ++i) {
            TrunkJob tj;
            tj.trunks = uint32_t(cfg_.trunks);
            tj.index = uint32_t(i + 1);
            tj.client = uint32_t(client_);
            tj.out = encode_job(out);
            tj.in = encode_job(in);
            tj.keys = keys_;
            tj.keys.keyed = secret_.set();
            if (secret_.set()) tj.keys.key = wanlink::link_key(secret_, keys_.session.data());
            send_cmd(members_[i]->link, CMD_TJOB, encode_trunk_job(tj));
        }
        if (!(s = start_data(cfg_.trunks, 0, client_, std::move(out), std::move(in))).ok())
            return fail(s.message()), false;
        done_ = true;
        send_cmd(*agent_, CMD_DONE, {});
        save_state();
        return true;
    }
    case CMD_LOST:
        // Pass it on: the agent names the lost client; the server closes next.
        lost_seen_ = true;
        if (agent_) send_cmd(*agent_, cmd, payload);
        return true;
    default:
        return fail("impi-server sent an unknown command " + std::to_string(cmd)), false;
    }
}

// Once the server's NHOSTS reply is in and every trunk member has joined: decide which relay
// represents which host, open the ports (members open theirs on request), and let the agent's
// host and proc labels through.
void Relay::try_allocate() {
    if (allocating_ || nhosts_.empty() || !have_own_nhosts_ || client_ < 0) return;
    if (int(members_.size()) + 1 < cfg_.trunks) return;
    allocating_ = true;
    int T = cfg_.trunks;
    uint32_t own = nhosts_[size_t(client_)];
    uint32_t outside = 0;
    for (int c = 0; c < nclients_; ++c)
        if (c != client_) outside += nhosts_[size_t(c)];
    auto share = [T](uint32_t n, int t) { return n / uint32_t(T) + (uint32_t(t) < n % uint32_t(T) ? 1 : 0); };
    for (int t = 1; t < T; ++t) {
        TrunkPorts req;
        req.n_pub = share(own, t);
        req.n_priv = share(outside, t);
        send_cmd(members_[size_t(t - 1)]->link, CMD_TPRT, encode_trunk_ports(req));
    }
    base::Status s = open_listeners(pub_, priv_, share(own, 0), share(outside, 0), &my_ports_);
    if (!s.ok()) return fail(s.message());
    // The faces are complete once every member answered (on_member calls back here).
    auto complete = [this, T, own, outside, share] {
        for (auto& m : members_)
            if (!m->have_ports) return false;
        faces_.own_host_ids.assign(own, HostId{});
        faces_.own_host_ports.assign(own, 0);
        faces_.out_host_ids.assign(outside, HostId{});
        faces_.out_host_ports.assign(outside, 0);
        std::vector<size_t> next_pub(size_t(T), 0), next_priv(size_t(T), 0);
        auto port_of = [&](int t, bool pub) -> uint32_t {
            const std::vector<uint32_t>& ports = t == 0 ? my_ports_ : members_[size_t(t - 1)]->ports.ports;
            uint32_t n_pub = share(own, t);
            size_t k = pub ? next_pub[size_t(t)]++ : n_pub + next_priv[size_t(t)]++;
            return ports[k];
        };
        for (uint32_t i = 0; i < own; ++i) {
            int t = int(i % uint32_t(T));
            faces_.own_host_ids[i] = host_id_from_ipv4(t == 0 ? pub_ : members_[size_t(t - 1)]->pub);
            faces_.own_host_ports[i] = port_of(t, true);
        }
        for (uint32_t i = 0; i < outside; ++i) {
            int t = int(i % uint32_t(T));
            faces_.out_host_ids[i] = host_id_from_ipv4(t == 0 ? priv_ : members_[size_t(t - 1)]->priv);
            faces_.out_host_ports[i] = port_of(t, false);
        }
        faces_.proc_host = host_id_from_ipv4(pub_);
        faces_.out_proc_host = host_id_from_ipv4(priv_);
        return true;
    };
    allocated_check_ = complete;
    check_allocated();
}

void Relay::watch_children() {
    loop_.after(200, [this] {
        if (exit_ >= 0) return;
        std::string why = cfg_.poll_children();
        // After KEEP a member that died is waited for on its control link (member_away).
        if (!why.empty() && !end_by_ && keep_)
            WANMPI_LOG(warn, "%s; waiting for it to be started again", why.c_str());
        else if (!why.empty() && !end_by_)
            return fail(why + (done_ ? "" : " during the start-up"));
        watch_children();
    });
}

void Relay::check_allocated() {
    if (faces_ready_ || !allocated_check_ || !allocated_check_()) return;
    faces_ready_ = true;
    WANMPI_LOG(info, "ports allocated on %d trunk relay(s)", cfg_.trunks);
    if (agent_ && agent_->paused) {
        agent_->paused = false;
        on_agent();
    }
}

void Relay::on_member(Member* m) {
    bool ok = read_in(m->link);
    while (exit_ < 0 && m->link.in.size() >= kCmdHeader) {
        CmdHeader h = decode_cmd(m->link.in.data());
        if (h.len < 0 || h.len > kMaxCmdPayload) return fail(m->link.who + " sent a bad command length");
        if (m->link.in.size() < kCmdHeader + size_t(h.len)) break;
        if (h.cmd == CMD_KEEP && h.len == 0 && done_) {
            // The member wrote its state file: if its link drops, wait for it (member_away).
            m->link.in.erase(m->link.in.begin(), m->link.in.begin() + kCmdHeader);
            m->keep = true;
            continue;
        }
        if (h.cmd != CMD_TPRT || m->have_ports || !allocating_)
            return fail(m->link.who + " sent an unexpected command");
        std::string err = decode_trunk_ports(m->link.in.data() + kCmdHeader, size_t(h.len), true, &m->ports);
        if (!err.empty()) return fail(m->link.who + ": " + err);
        m->link.in.erase(m->link.in.begin(), m->link.in.begin() + kCmdHeader + h.len);
        m->have_ports = true;
        check_allocated();
    }
    if (!ok && exit_ < 0) {
        if (end_by_) return close_link(m->link);
        if (keep_ && m->keep) return member_away(m, "closed its connection without an orderly end");
        // Lost before it said KEEP: during the start-up, or in the instant between TJOB and its
        // KEEP (the end of the start-up, while the hosts still dance); nothing to take back.
        fail(m->link.who + " was lost (its connection closed" +
             (done_ ? (keep_ ? ") before it had written its state file, at the end of the "
                               "start-up: it cannot be taken back"
                             : ")")
                    : ") during the start-up: a relay can be restarted only once the start-up "
                      "is over"));
    }
}

// The server closed its connection after this cluster's FINI: the job is over. Members are told,
// and the relay exits once the hosts have closed their pairs (they do so after IMPI FINI).
void Relay::finish_ok() {
    for (auto& m : members_) {
        std::vector<uint8_t> st(4, 0);
        send_cmd(m->link, CMD_TEND, st);
        close_link(m->link);
    }
    if (agent_) close_link(*agent_);
    if (server_) close_link(*server_);
    end_by_ = runtime::EventLoop::now_ms() + 5000;
    drop_state();
    WANMPI_LOG(info, "the job is over");
}

// ---- member ---------------------------------------------------------------------------------

int Relay::run_member() {
    auto jp = base::parse_host_port(cfg_.join);
    if (!jp || jp->port == 0) {
        std::fprintf(stderr, "impi-relay: -join '%s' is not ADDR:PORT of the primary relay\n",
                     cfg_.join.c_str());
        return 2;
    }
    if (!cfg_.state_file.empty()) {
        // As the primary's (run_primary): the state file is authenticated with the job secret,
        // and a member that comes back proves itself to the primary with it.
        base::Status st = wanlink::job_secret(&secret_);
        if (st.ok() && !secret_.set())
            st = base::Status(base::Errc::invalid,
                              "-state needs the job secret (WANMPI_JOB_SECRET_FILE, as the "
                              "primary relay): a restarted relay proves itself with it");
        std::string text;
        bool exists = false;
        if (st.ok()) st = read_state_file(cfg_.state_file, &text, &exists);
        if (!st.ok()) {
            std::fprintf(stderr, "impi-relay: %s\n", st.message().c_str());
            return 2;
        }
        if (exists) return run_restarted(text);
    }
    std::string err;
    int fd = base::tcp_connect(jp->host, jp->port, 10000, &err);
    if (fd < 0) {
        std::fprintf(stderr, "impi-relay: cannot join the primary relay: %s\n", err.c_str());
        return 1;
    }
    priv_ = cfg_.private_addr.empty() ? base::local_ip(fd) : cfg_.private_addr;
    pub_ = cfg_.public_addr.empty() ? other_ipv4(priv_) : cfg_.public_addr;
    if (pub_.empty()) {
        ::close(fd);
        std::fprintf(stderr, "impi-relay: this host has no address besides %s for the public side "
                             "(give -public ADDR)\n", priv_.c_str());
        return 1;
    }
    primary_ = std::make_unique<Link>();
    primary_->fd = fd;
    primary_->who = "the primary relay at " + cfg_.join;
    std::printf("%s:%u\n", priv_.c_str(), unsigned(base::local_port(fd)));
    std::fflush(stdout);
    watch(*primary_, [this] { on_primary(); });
    TrunkHello hello;
    hello.pub = host_id_from_ipv4(pub_);
    hello.priv = host_id_from_ipv4(priv_);
    send_cmd(*primary_, CMD_TRNK, encode_trunk_hello(hello));
    WANMPI_LOG(info, "joined %s: public %s, private %s", cfg_.join.c_str(), pub_.c_str(), priv_.c_str());
    return serve();
}

void Relay::on_primary() {
    if (!primary_ || primary_->fd < 0) return;
    bool ok = read_in(*primary_);
    Link& l = *primary_;
    while (exit_ < 0 && l.in.size() >= kCmdHeader) {
        CmdHeader h = decode_cmd(l.in.data());
        if (h.len < 0 || h.len > kMaxCmdPayload) return fail("the primary relay sent a bad command length");
        if (l.in.size() < kCmdHeader + size_t(h.len)) break;
        std::vector<uint8_t> p(l.in.begin() + kCmdHeader, l.in.begin() + kCmdHeader + h.len);
        l.in.erase(l.in.begin(), l.in.begin() + kCmdHeader + h.len);
        std::string err;
        if (h.cmd == CMD_TPRT && my_ports_.empty()) {
            TrunkPorts req;
            if (!(err = decode_trunk_ports(p.data(), p.size(), false, &req)).empty())
                return fail("the primary relay: " + err);
            base::Status s = open_listeners(pub_, priv_, req.n_pub, req.n_priv, &my_ports_);
            if (!s.ok()) return fail(s.message());
            req.ports = my_ports_;
            send_cmd(l, CMD_TPRT, encode_trunk_ports(req));
        } else if (h.cmd == CMD_TJOB && !data_) {
            TrunkJob tj;
            if (!(err = decode_trunk_job(p.data(), p.size(), &tj)).empty())
                return fail("the primary relay: " + err);
            Job out, in;
            base::Status s = decode_job(tj.out, &out);
            if (s.ok()) s = decode_job(tj.in, &in);
            keys_ = tj.keys;
            if (s.ok()) s = start_data(int(tj.trunks), int(tj.index), int(tj.client), std::move(out), std::move(in));
            if (!s.ok()) return fail("the primary relay's job: " + s.message());
            done_ = true;
            client_ = int(tj.client);
            // The primary's AUTH with impi-server was wanmpi's when there is a session nonce.
            for (uint8_t b : keys_.session) hmac_ = hmac_ || b != 0;
            save_state();
        } else if (h.cmd == CMD_KEEP && h.len == 0 && data_) {
            primary_keep_ = true;
        } else if (h.cmd == CMD_TEND && p.size() == 4) {
            if (get_be32(p.data()) != 0) return fail("the primary relay reports that the job failed");
            close_link(l);
            end_by_ = runtime::EventLoop::now_ms() + 5000;
            drop_state();
            return;
        } else {
            return fail("the primary relay sent an unexpected command");
        }
    }
    if (!ok && exit_ < 0 && !end_by_) {
        if (keep_ && primary_keep_) return away(true, "closed its connection without an orderly end");
        fail("the primary relay (" + cfg_.join + ") was lost" +
             (done_ ? "" : " during the start-up: a relay can be restarted only once the start-up "
                           "is over"));
    }
}

int run_relay(const RelayConfig& cfg) {
    Relay r(cfg);
    return r.run();
}

}  // namespace wanmpi::impi
