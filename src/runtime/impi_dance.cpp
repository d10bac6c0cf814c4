#include "runtime/impi_dance.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/log.hpp"
#include "base/tunables.hpp"
#include "wanlink/lanes.hpp"
#include "wanlink/tcp_tune.hpp"

namespace wanmpi::impi {

using base::Errc;
using base::Status;

static base::Tunable<std::string> t_port_range(
    "IMPI", "PORT_RANGE", "",
    "lo:hi: ports an IMPI host may listen on for the other clusters' hosts (a firewall's open "
    "range); empty: any free port.",
    base::Level::user, "IMPI_PORT_RANGE");
static base::Tunable<std::string> t_network(
    "IMPI", "NETWORK", "",
    "Interface name or network (CIDR, e.g. 10.1.0.0/16) whose IPv4 address an IMPI host "
    "advertises to the other clusters; empty: the first interface that is up.",
    base::Level::user, "IMPI_NETWORK");
static base::Tunable<std::string> t_advertise(
    "IMPI", "ADVERTISE", "",
    "addr or addr:port an IMPI host advertises instead of its own address and port (the public "
    "side of a NAT or a forwarded port). The socket still listens on every local address.",
    base::Level::user);
// Same knob as impi-server's (impi_server_main.cpp): keep the declaration identical.
static base::Tunable<int64_t> t_join_timeout(
    "IMPI", "JOIN_TIMEOUT", 30,
    "Seconds impi-server (and an IMPI host) gives a new connection to authenticate and join "
    "before dropping it (slow clients and port scanners cannot hold a slot).");
static base::Tunable<int64_t> t_connect_timeout(
    "IMPI", "CONNECT_TIMEOUT", 30,
    "Seconds to keep retrying a refused connection to impi-server or to another IMPI host, and "
    "to wait in the host-to-host dance for every peer to connect.",
    base::Level::user);

namespace {

int64_t now_ms() { return base::now_ns() / 1000000; }

bool parse_port(const std::string& s, uint16_t* out) {
    if (s.empty() || s.size() > 5) return false;
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + unsigned(c - '0');
    }
    if (v < 1 || v > 65535) return false;
    *out = uint16_t(v);
    return true;
}

// Dotted IPv4 for a literal or a name (the advertised address must be an IPv4 address: it goes
// into a 16-byte IMPI host id).
bool to_ipv4(const std::string& host, std::string* out) {
    in_addr a{};
    if (inet_pton(AF_INET, host.c_str(), &a) != 1) {
        addrinfo hints{}, *res = nullptr;
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return false;
        a = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
        freeaddrinfo(res);
    }
    char b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, b, sizeof b);
    *out = b;
    return true;
}

// An address no route leads to: not retried (unlike a peer that does not listen yet).
bool unroutable(int e) { return e == ENETUNREACH || e == EHOSTUNREACH; }

// Whether this host has a route to addr:port (a UDP connect only looks the route up; nothing is
// sent).
bool has_route(const std::string& addr, uint16_t port) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port ? port : 9);
    if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) return false;
    base::Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd) return true;  // cannot tell: do not claim there is no route
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) return true;
    return !unroutable(errno);
}

}  // namespace

ListenConfig listen_config_from_env() {
    ListenConfig c;
    c.port_range = t_port_range.get();
    c.network = t_network.get();
    c.advertise = t_advertise.get();
    return c;
}

int64_t connect_timeout_ms_from_env() {
    return std::max<int64_t>(1, t_connect_timeout.get()) * 1000;
}

DanceConfig dance_config_from_env() {
    DanceConfig c;
    c.join_timeout_ms = std::max<int64_t>(1, t_join_timeout.get()) * 1000;
    c.timeout_ms = connect_timeout_ms_from_env();
    return c;
}

Status open_listener(const ListenConfig& cfg, Listener* out) {
    Listener l;
    std::string err;
    int fd;
    if (!cfg.port_range.empty()) {
        auto c = cfg.port_range.find(':');
        uint16_t lo = 0, hi = 0;
        if (c == std::string::npos || !parse_port(cfg.port_range.substr(0, c), &lo) ||
            !parse_port(cfg.port_range.substr(c + 1), &hi) || hi < lo)
            return Status(Errc::invalid, "IMPI_PORT_RANGE='" + cfg.port_range +
                                             "' is not lo:hi with 1 <= lo <= hi <= 65535");
        fd = base::tcp_listen_range("", lo, hi, SOMAXCONN, &err);
    } else {
        fd = base::tcp_listen("", 0, SOMAXCONN, &err);
    }
    if (fd < 0) return Status(Errc::io_error, "IMPI host socket: " + err, errno);
    l.fd = base::Fd(fd);
    l.local_port = base::local_port(fd);
    l.port = l.local_port;
    if (!cfg.advertise.empty()) {
        std::string host = cfg.advertise;
        auto c = host.rfind(':');
        if (c != std::string::npos) {
            if (!parse_port(host.substr(c + 1), &l.port))
                return Status(Errc::invalid, "WANMPI_IMPI_ADVERTISE='" + cfg.advertise +
                                                 "' is not addr or addr:port");
            host.resize(c);
        }
        if (host.empty() || !to_ipv4(host, &l.addr))
            return Status(Errc::invalid, "WANMPI_IMPI_ADVERTISE='" + cfg.advertise +
                                             "': '" + host + "' is not an IPv4 address or name");
    } else {
        l.addr = base::primary_ipv4(cfg.network);
        // primary_ipv4 falls back to 127.0.0.1 when nothing matches.
        bool loop_net = cfg.network == "lo" || cfg.network.rfind("127.", 0) == 0;
        if (!cfg.network.empty() && l.addr == "127.0.0.1" && !loop_net)
            return Status(Errc::invalid, "IMPI_NETWORK='" + cfg.network +
                                             "' matches no interface of this host");
    }
    *out = std::move(l);
    return Status::OK();
}

Status dance(int listen_fd, int me, const Job& job, const DanceConfig& cfg,
             std::vector<base::Fd>* conns) {
    std::vector<DancePeer> peers(job.hosts.size());
    for (size_t h = 0; h < job.hosts.size(); ++h) {
        peers[h].addr = job.hosts[h].addr();
        peers[h].port = job.hosts[h].port;
        peers[h].name = "host " + std::to_string(h) + " (client " +
                        std::to_string(job.hosts[h].client) + ")";
        const auto& jh = job.hosts[h];
        peers[h].relayed = jh.nprocs > 0 && size_t(jh.first_rank) < job.procs.size() &&
                           !relay_of(job.procs[size_t(jh.first_rank)].id).empty();
        peers[h].skip = !cfg.intra_client && me >= 0 && size_t(me) < job.hosts.size() &&
                        job.hosts[h].client == job.hosts[size_t(me)].client;
    }
    return dance(listen_fd, me, peers, cfg, conns);
}

namespace {

struct Out {
    int peer = 0;
    base::Fd fd;
    enum { idle, connecting, sending, handshake, done } st = idle;
    std::unique_ptr<wanlink::LinkHandshake> hs;
    bool hs_done = false;
    // Through impi-relay with lanes: the relay's FAR (the link's lane count) after the handshake.
    uint8_t far[wanlink::kHello + wanlink::kMac] = {};
    size_t far_got = 0;
    bool far_done = false;
    int64_t next_try = 0;
    int64_t backoff = 20;
    uint8_t msg[4] = {};
    size_t sent = 0;
    std::string last_err = "not tried yet";
    bool unreachable = false;  // ENETUNREACH / EHOSTUNREACH: not retried
    bool no_local_route = false;  // ... and connect() said so at once (no route on this host)
};

struct In {
    base::Fd fd;
    std::unique_ptr<wanlink::LinkHandshake> hs;  // after the rank, for an ext peer
    uint32_t rank = 0;
    uint8_t buf[4] = {};
    size_t got = 0;
    int64_t deadline = 0;
    std::string peer;
};

}  // namespace

Status dance(int listen_fd, int me, const std::vector<DancePeer>& hosts, const DanceConfig& cfg,
             std::vector<base::Fd>* conns) {
    const int n = int(hosts.size());
    if (me < 0 || me >= n)
        return Status(Errc::invalid, "IMPI dance: host rank " + std::to_string(me) +
                                         " is not in 0.." + std::to_string(n - 1));
    auto name = [&](int h) {
        const auto& p = hosts[size_t(h)];
        return (p.name.empty() ? "host " + std::to_string(h) : p.name) + " at " +
               (p.addr.empty() ? "(no IPv4 address)" : p.addr) + ":" + std::to_string(p.port);
    };
    std::vector<base::Fd> result(static_cast<size_t>(n));
    std::vector<Out> outs;
    for (int i = 0; i < me; ++i) {
        if (hosts[size_t(i)].skip) continue;
        outs.emplace_back();
        outs.back().peer = i;
        base::put_be32(outs.back().msg, uint32_t(me));
    }
    int want_in = 0;
    for (int h = me + 1; h < n; ++h) want_in += hosts[size_t(h)].skip ? 0 : 1;
    for (const auto& o : outs) {
        in_addr a{};
        const int i = o.peer;
        const auto& p = hosts[size_t(i)];
        if (p.port == 0 || inet_pton(AF_INET, p.addr.c_str(), &a) != 1)
            return Status(Errc::invalid, "IMPI dance: cannot connect to " + name(i) +
                                             ": it advertises no IPv4 address and port");
    }
    std::vector<In> ins;
    int accepted = 0, connected = 0;
    Status fatal;  // a failed handshake of our own connection: the dance cannot succeed
    if (cfg.link_out) cfg.link_out->assign(size_t(n), LinkResult{});
    static const LinkSetup no_link;
    const LinkSetup& ls = cfg.link ? *cfg.link : no_link;
    auto make_handshake = [&](bool connector, int peer, int fd) {
        wanlink::Hello h;
        h.flags = ls.flags;
        // Lanes: `auto` is resolved by the connector from the RTT its connect just measured;
        // an accepting side on auto offers the most and so takes the connector's choice.
        h.lanes = ls.lanes;
        // A connector to a host behind impi-relay measured the RTT to the relay, not the
        // path: it offers the most too, and the relay resolves auto from its legs.
        if (!h.lanes) {
            uint64_t win = 0;
            uint32_t srtt = 0;
            h.lanes = uint8_t(connector && !hosts[size_t(peer)].relayed
                                  ? wanlink::auto_lanes(
                                        wanlink::socket_window(fd, &win, &srtt) ? srtt : 0)
                                  : wanlink::kMaxLanes);
        }
        h.from = uint32_t(me);
        h.to = uint32_t(peer);
        return std::make_unique<wanlink::LinkHandshake>(connector, ls.keyed ? &ls.key : nullptr,
                                                        ls.session.data(), h, uint32_t(peer));
    };
    auto record = [&](int peer, const wanlink::LinkHandshake& hs) {
        if (!cfg.link_out) return;
        LinkResult& r = (*cfg.link_out)[size_t(peer)];
        r.ext = true;
        r.tls = hs.tls();
        r.resume = hs.resume();
        r.compress = (ls.flags & hs.peer().flags & wanlink::kFlagZstd) != 0;
        r.zfilter = r.compress && (ls.flags & hs.peer().flags & wanlink::kFlagZfilter) != 0;
        r.lanes = wanlink::agreed_lanes(hs.mine().lanes, hs.peer().lanes);
        if (r.tls) r.psk = hs.tls_psk();
    };
    const int want_out = int(outs.size());
    base::set_nonblock(listen_fd, true);
    const int64_t start = now_ms();
    const int64_t deadline = start + cfg.timeout_ms;

    auto retry = [&](Out& o, const std::string& why) {
        o.fd.reset();
        o.st = Out::idle;
        o.sent = 0;
        o.hs.reset();
        o.hs_done = o.far_done = false;
        o.far_got = 0;
        o.last_err = why;
        o.next_try = now_ms() + o.backoff;
        o.backoff = std::min<int64_t>(o.backoff * 2, 500);
    };
    auto give_up = [&](Out& o, int e, bool local) {
        o.fd.reset();
        o.st = Out::idle;
        o.next_try = INT64_MAX;
        o.last_err = base::errno_text(e);
        o.unreachable = true;
        o.no_local_route = local;
    };
    auto try_connect = [&](Out& o) {
        const auto& p = hosts[size_t(o.peer)];
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(p.port);
        inet_pton(AF_INET, p.addr.c_str(), &sa.sin_addr);  // checked before the loop
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) return retry(o, "socket: " + base::errno_text(errno));
        o.fd = base::Fd(fd);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) o.st = Out::sending;
        else if (errno == EINPROGRESS) o.st = Out::connecting;
        else if (unroutable(errno)) give_up(o, errno, true);
        else retry(o, base::errno_text(errno));
    };
    auto try_send = [&](Out& o) {
        while (o.sent < 4) {
            ssize_t r = ::send(o.fd.get(), o.msg + o.sent, 4 - o.sent, MSG_NOSIGNAL);
            if (r > 0) {
                o.sent += size_t(r);
                continue;
            }
            if (r < 0 && errno == EINTR) continue;
            if (r < 0 && errno == EAGAIN) return;
            return retry(o, r < 0 ? base::errno_text(errno) : "send failed");
        }
        if (hosts[size_t(o.peer)].ext && !o.hs) {
            base::set_nodelay(o.fd.get());  // small handshake messages back to back (Nagle)
            o.hs = make_handshake(true, o.peer, o.fd.get());
            o.st = Out::handshake;
        }
        if (o.hs && !o.hs_done) {
            auto r = o.hs->step(o.fd.get());
            if (r == wanlink::LinkHandshake::again) return;
            if (r == wanlink::LinkHandshake::failed) {
                fatal = Status(o.hs->auth_refused() ? Errc::invalid : Errc::proto_error,
                               "IMPI dance (host " + std::to_string(me) + "): " + name(o.peer) +
                                   ": " + o.hs->reason() +
                                   (o.hs->reason().find("closed") != std::string::npos
                                        ? " (it refused this host's proof of the job secret? "
                                          "a different WANMPI_JOB_SECRET or WANMPI_WAN_SECURITY; "
                                          "see its log)"
                                        : ""));
                return;
            }
            o.hs_done = true;
            record(o.peer, *o.hs);
        }
        // Through impi-relay, when both offers exceed one lane: the relay's FAR says how many
        // lanes the host behind it settled on (wanlink/handshake.hpp), which is the link's count
        // for every end and relay.
        if (o.hs && !o.far_done) {
            const wanlink::Hello& ha = o.hs->peer();
            if ((ha.flags & wanlink::kFlagRelay) &&
                wanlink::agreed_lanes(o.hs->mine().lanes, ha.lanes) > 1) {
                while (o.far_got < sizeof o.far) {
                    ssize_t r = ::recv(o.fd.get(), o.far + o.far_got, sizeof o.far - o.far_got,
                                       MSG_DONTWAIT);
                    if (r > 0) {
                        o.far_got += size_t(r);
                        continue;
                    }
                    if (r < 0 && errno == EINTR) continue;
                    if (r < 0 && errno == EAGAIN) return;
                    fatal = Status(Errc::proto_error,
                                   "IMPI dance (host " + std::to_string(me) + "): " +
                                       name(o.peer) + ": impi-relay closed the connection before "
                                       "it reported the lanes of the host behind it (see the "
                                       "relay's log)");
                    return;
                }
                wanlink::Hello far;
                std::string err = o.hs->decode_far(o.far, &far);
                if (err.empty() && (far.kind != 0 || far.lanes < 1 ||
                                    far.lanes > wanlink::agreed_lanes(o.hs->mine().lanes,
                                                                      ha.lanes)))
                    err = "impi-relay reported " + std::to_string(far.lanes) +
                          " lanes, more than were offered";
                if (!err.empty()) {
                    fatal = Status(Errc::proto_error, "IMPI dance (host " + std::to_string(me) +
                                                          "): " + name(o.peer) + ": " + err);
                    return;
                }
                if (cfg.link_out) (*cfg.link_out)[size_t(o.peer)].lanes = far.lanes;
            }
            o.far_done = true;
        }
        base::set_nonblock(o.fd.get(), false);
        result[size_t(o.peer)] = std::move(o.fd);
        o.st = Out::done;
        ++connected;
    };
    auto drop_in = [&](size_t k, const std::string& why) {
        WANMPI_LOG(warn, "IMPI dance (host %d): connection from %s %s; closed", me,
                   ins[k].peer.c_str(), why.c_str());
        ins.erase(ins.begin() + long(k));
    };
    // Returns false if ins[k] was removed or moved into the result.
    auto on_in = [&](size_t k) -> bool {
        In& c = ins[k];
        while (c.got < 4) {
            // Exactly the 4 rank bytes: whatever follows belongs to the IMPI packet stream.
            ssize_t r = ::recv(c.fd.get(), c.buf + c.got, 4 - c.got, 0);
            if (r > 0) {
                c.got += size_t(r);
                continue;
            }
            if (r < 0 && errno == EINTR) continue;
            if (r < 0 && errno == EAGAIN) return true;
            drop_in(k, r == 0 ? "closed before sending its host rank"
                              : "failed: " + base::errno_text(errno));
            return false;
        }
        uint32_t rank = base::get_be32(c.buf);
    handshake:
        if (c.hs) {
            auto r = c.hs->step(c.fd.get());
            if (r == wanlink::LinkHandshake::again) return true;
            if (r == wanlink::LinkHandshake::failed) {
                drop_in(k, "claiming " + name(int(rank)) + " was refused: " + c.hs->reason());
                return false;
            }
            // A host that finished its own dance dials the lanes of its links at once (kind 2),
            // or resumes one (kind 1), through this same socket: while this host is still in the
            // dance, such a connection is not the link (its lanes byte names a lane, not an
            // offer) and must not be taken for it. Seen at 2 % loss: the dance's connection from
            // that host waited for a retransmitted segment, the lane connection came first, and
            // the two ends settled on 1 and 4 lanes. The host retries once the dance is over.
            if (c.hs->peer().kind != 0) {
                drop_in(k, "claiming " + name(int(rank)) + " opens lane " +
                               std::to_string(c.hs->peer().lane) +
                               " while this host is still in the IMPI dance (it will retry)");
                return false;
            }
            if (result[rank]) {
                drop_in(k, "claims host rank " + std::to_string(rank) + ", which is already "
                           "connected");
                return false;
            }
            record(int(rank), *c.hs);
            goto claim;
        }
        if (rank <= uint32_t(me) || rank >= uint32_t(n) || hosts[rank].skip) {
            drop_in(k, "claims host rank " + std::to_string(rank) + ", but only hosts " +
                           std::to_string(me + 1) + ".." + std::to_string(n - 1) +
                           " of other clients connect to host " + std::to_string(me));
            return false;
        }
        if (result[rank]) {
            drop_in(k, "claims host rank " + std::to_string(rank) + ", which is already "
                       "connected");
            return false;
        }
        if (hosts[rank].ext) {
            // Not counted yet: first it must prove it holds the job's key.
            base::set_nodelay(c.fd.get());
            c.hs = make_handshake(false, int(rank), c.fd.get());
            goto handshake;
        }
    claim:
        WANMPI_LOG(debug, "IMPI dance (host %d): %s connected from %s", me, name(int(rank)).c_str(),
                   c.peer.c_str());
        base::set_nonblock(c.fd.get(), false);
        result[rank] = std::move(c.fd);
        ins.erase(ins.begin() + long(k));
        ++accepted;
        return false;
    };
    // A real host sends its rank right after connecting, so the rank is usually there by the
    // time we accept: read it at once. When too many connections sit silent, the oldest goes
    // (a flood of silent connections cannot keep a late real host out).
    auto on_accept = [&]() {
        for (;;) {
            int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) return;  // EAGAIN, or a transient error: poll tells us again
            In c;
            c.fd = base::Fd(fd);
            c.peer = base::peer_text(fd);
            c.deadline = now_ms() + cfg.join_timeout_ms;
            ins.push_back(std::move(c));
            if (!on_in(ins.size() - 1)) continue;
            if (ins.size() > std::max<size_t>(cfg.max_pending, 1))
                drop_in(0, "was evicted: " + std::to_string(ins.size() - 1) +
                               " connections had not sent a rank yet");
        }
    };

    // Fails the dance at once when a peer's address cannot be routed to: retrying cannot help
    // (the address is private to its cluster, or this host's cluster has no way out), and the
    // hint says where impi-relay is needed.
    auto unreachable_status = [&]() -> Status {
        std::string m = "IMPI dance (host " + std::to_string(me) + " of " + std::to_string(n) +
                        "):";
        bool local = false;
        for (const auto& o : outs)
            if (o.unreachable) {
                m += " cannot reach " + name(o.peer) + ": " + o.last_err + ";";
                local = local || o.no_local_route;
            }
        // Does this host route to no host of the other clusters at all? Then this cluster is the
        // private one; otherwise the unreachable hosts' cluster is.
        bool none = local;
        for (int h = 0; h < n && none; ++h)
            if (h != me && !hosts[size_t(h)].skip && has_route(hosts[size_t(h)].addr,
                                                                hosts[size_t(h)].port))
                none = false;
        if (none)
            m += " this host has no route to any host of the other clusters: this cluster's hosts "
                 "have private addresses (a private-address cluster): run impi-relay on this "
                 "cluster's front-end and point this cluster's mpirun -client at the relay "
                 "(docs/impi.md)";
        else
            m += " that cluster's hosts have addresses this cluster cannot route to (a "
                 "private-address cluster): run impi-relay on its front-end and point its mpirun "
                 "-client at the relay (docs/impi.md)";
        return Status(Errc::link_failed, m);
    };
    auto any_unreachable = [&]() {
        return std::any_of(outs.begin(), outs.end(), [](const Out& o) { return o.unreachable; });
    };

    while (connected < want_out || accepted < want_in) {
        int64_t now = now_ms();
        if (now >= deadline) break;
        for (auto& o : outs)
            if (o.st == Out::idle && o.next_try <= now) try_connect(o);
        if (any_unreachable()) return unreachable_status();
        for (size_t k = 0; k < ins.size();) {
            if (ins[k].deadline <= now)
                drop_in(k, "sent no host rank within " +
                               std::to_string(cfg.join_timeout_ms / 1000) + " s");
            else
                ++k;
        }
        std::vector<pollfd> pf;
        std::vector<int> who;  // -1: listener; >= 0: outs index; <= -2: ins index -(k+2)
        int64_t wake = deadline;
        if (accepted < want_in) {
            pf.push_back({listen_fd, POLLIN, 0});
            who.push_back(-1);
        }
        for (size_t k = 0; k < outs.size(); ++k) {
            Out& o = outs[k];
            if (o.st == Out::connecting || o.st == Out::sending) {
                pf.push_back({o.fd.get(), POLLOUT, 0});
                who.push_back(int(k));
            } else if (o.st == Out::handshake) {
                pf.push_back({o.fd.get(), POLLIN, 0});
                who.push_back(int(k));
            } else if (o.st == Out::idle) {
                wake = std::min(wake, o.next_try);
            }
        }
        for (size_t k = 0; k < ins.size(); ++k) {
            pf.push_back({ins[k].fd.get(), POLLIN, 0});
            who.push_back(-int(k) - 2);
            wake = std::min(wake, ins[k].deadline);
        }
        const size_t nmain = pf.size();  // the watched descriptor, if any, comes last
        if (cfg.watch_fd >= 0 && cfg.watch) pf.push_back({cfg.watch_fd, POLLIN, 0});
        int rc = ::poll(pf.data(), pf.size(), int(std::clamp<int64_t>(wake - now, 0, 1 << 30)));
        if (rc < 0 && errno != EINTR)
            return Status(Errc::io_error, "IMPI dance: poll: " + base::errno_text(errno), errno);
        if (rc <= 0) continue;
        if (pf.size() > nmain && pf[nmain].revents) {
            Status w = cfg.watch();
            if (!w.ok()) {
                std::string m = "IMPI dance (host " + std::to_string(me) + " of " +
                                std::to_string(n) + ") stopped after " +
                                std::to_string((now_ms() - start) / 1000) + " s: " + w.message();
                for (int h = me + 1; h < n; ++h)
                    if (!result[size_t(h)] && !hosts[size_t(h)].skip)
                        m += "; " + name(h) + " had not connected yet";
                return Status(w.code(), m, w.sys_errno());
            }
        }
        pf.resize(nmain);
        // Outgoing first, then incoming from the highest index down (erasing keeps lower ones).
        for (size_t i = 0; i < pf.size(); ++i) {
            if (!pf[i].revents || who[i] < 0) continue;
            Out& o = outs[size_t(who[i])];
            if (o.st == Out::connecting) {
                int e = 0;
                socklen_t l = sizeof e;
                getsockopt(o.fd.get(), SOL_SOCKET, SO_ERROR, &e, &l);
                if (e && unroutable(e)) {
                    give_up(o, e, false);
                    continue;
                }
                if (e) {
                    retry(o, base::errno_text(e));
                    continue;
                }
                o.st = Out::sending;
            }
            if (o.st == Out::sending || o.st == Out::handshake) try_send(o);
            if (!fatal.ok()) return fatal;
        }
        for (size_t i = pf.size(); i-- > 0;)
            if (pf[i].revents && who[i] <= -2) on_in(size_t(-who[i] - 2));
        for (size_t i = 0; i < pf.size(); ++i)
            if (pf[i].revents && who[i] == -1) on_accept();
        if (any_unreachable()) return unreachable_status();
    }

    if (connected < want_out || accepted < want_in) {
        std::string m = "IMPI dance (host " + std::to_string(me) + " of " + std::to_string(n) +
                        ") failed after " + std::to_string((now_ms() - start) / 1000) + " s:";
        for (const auto& o : outs)
            if (o.st != Out::done)
                m += " cannot connect to " + name(o.peer) + ": " + o.last_err + ";";
        for (int h = me + 1; h < n; ++h)
            if (!result[size_t(h)] && !hosts[size_t(h)].skip)
                m += " " + name(h) + " did not connect;";
        m.pop_back();
        m += " (WANMPI_IMPI_CONNECT_TIMEOUT=" + std::to_string(cfg.timeout_ms / 1000) + " s)";
        return Status(Errc::link_failed, m);
    }
    for (auto& c : ins)
        WANMPI_LOG(info, "IMPI dance (host %d): closing connection from %s, which sent no rank",
                   me, c.peer.c_str());
    *conns = std::move(result);
    return Status::OK();
}

}  // namespace wanmpi::impi
