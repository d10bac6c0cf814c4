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
#include "runtime/impi_relay_data.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/codec.hpp"
#include "base/log.hpp"
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
};

struct RelayData::Dir {
    int from = -1, to = -1;
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
    bool want_write() const { return r > w || in_pipe > 0; }
    bool idle() const { return w == e && in_pipe == 0 && splice_left == 0 && pay == 0; }
};

struct RelayData::Pair {
    int h = 0, j = 0;
    int fd_in = -1, fd_out = -1;
    int fd_connect = -1;  // the one being connected
    bool connected = false;
    std::string name;
    Dir a, b;  // a: h -> j (outward), b: j -> h
    uint32_t ev_in = 0, ev_out = 0;
};

RelayData::RelayData(runtime::EventLoop& loop, const RelayMap& map, const RelayConfig& cfg)
    : loop_(loop), map_(map), cfg_(cfg), tuning_(wanlink::tcp_tuning_from_env()) {}

RelayData::~RelayData() { close_all(); }

void RelayData::add_listener(base::Fd fd, int host) {
    int lfd = fd.release();
    base::set_nonblock(lfd, true);
    listeners_[lfd] = host;
    loop_.add(lfd, EPOLLIN, [this, lfd, host](uint32_t) { on_accept(lfd, host); });
}

void RelayData::close_all() {
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
    ssize_t n = ::recv(p->fd, p->rank + p->got, 4 - p->got, MSG_DONTWAIT);
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
    int h = rep_own ? p->rep : int(rank), j = rep_own ? int(rank) : p->rep;
    uint64_t key = (uint64_t(uint32_t(h)) << 32) | uint32_t(j);
    if (taken_.count(key))
        return drop_pending(p, "host " + std::to_string(rank) + " is already connected");
    // The accepted connection becomes half of a pair; the other half is opened now.
    const Job::Host& target = rep_own ? map_.in.hosts[size_t(h)] : map_.out.hosts[size_t(j)];
    int acc = p->fd;
    p->fd = -1;
    loop_.remove(acc);
    std::string peer = p->peer;
    drop_pending(p, "");
    taken_[key] = true;

    auto up = std::make_unique<Pair>();
    Pair* pr = up.get();
    pr->h = h;
    pr->j = j;
    pr->name = "host " + std::to_string(h) + " (client " + std::to_string(map_.client) +
               ") <-> host " + std::to_string(j) + " (client " +
               std::to_string(map_.out.hosts[size_t(j)].client) + ")";
    pairs_[pr] = std::move(up);
    (rep_own ? pr->fd_out : pr->fd_in) = acc;

    std::string addr = target.addr();
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(target.port);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || addr.empty() || inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
        if (fd >= 0) ::close(fd);
        return end_pair(pr, "cannot connect to host " + std::to_string(rep_own ? h : j) +
                                " at '" + addr + "'");
    }
    (rep_own ? pr->fd_in : pr->fd_out) = fd;
    pr->fd_connect = fd;
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno != EINPROGRESS)
        return end_pair(pr, "connect to " + addr + ":" + std::to_string(target.port) + ": " +
                                base::errno_text(errno));
    // The rank goes into the new connection's outgoing buffer: it leaves first, as the dance
    // wants, and the kernel keeps it until the connection is up.
    Dir& first = rep_own ? pr->b : pr->a;  // the direction that writes to the new connection
    base::put_be32(first.buf.get(), rank);
    first.w = 0;
    first.r = first.e = 4;
    WANMPI_LOG(debug, "pair %s: connecting %s:%u for %s", pr->name.c_str(), addr.c_str(),
               unsigned(target.port), peer.c_str());
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
    pr->connected = true;
    pr->a.from = pr->fd_in;
    pr->a.to = pr->fd_out;
    pr->a.outward = true;
    pr->b.from = pr->fd_out;
    pr->b.to = pr->fd_in;
    base::set_nodelay(pr->fd_in);
    base::set_nodelay(pr->fd_out);
    // Both legs: the inside one crosses the front-end's NIC queue too.
    wanlink::tune_socket(pr->fd_in, tuning_);
    wanlink::tune_socket(pr->fd_out, tuning_);
    // The dance rank sits in a buffer as "checked, not written"; pump them out with the rest.
    on_pair(pr);
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
        if (d.r > d.w) {
            ssize_t n = ::send(d.to, d.buf.get() + d.w, d.r - d.w, MSG_NOSIGNAL | MSG_DONTWAIT);
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
            std::string err = relay_rewrite(map_, pr->h, pr->j, d.outward, d.buf.get() + d.r, &len);
            if (!err.empty()) return err;
            d.r += kPacketHeader;
            d.pay = len;
            packets++;
            moved = true;
        }
        // The rest of a large payload is still in the socket: let the kernel move it.
        if (cfg_.splice && d.pay >= cfg_.splice_min && d.r == d.e && d.w == d.r) {
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
        if (!d.eof && d.e < d.cap && !drained) {
            if (d.w > 0 && d.cap - d.e < 4 * kPacketHeader) {
                std::memmove(d.buf.get(), d.buf.get() + d.w, d.e - d.w);
                d.r -= d.w;
                d.e -= d.w;
                d.w = 0;
            }
            size_t room = d.cap - d.e;
            ssize_t n = ::recv(d.from, d.buf.get() + d.e, room, MSG_DONTWAIT);
            if (n > 0) {
                d.e += size_t(n);
                moved = true;
                // A short read drained the socket: parse and write what came, then wait for
                // epoll rather than spend a recv() on EAGAIN (level-triggered: more input is
                // reported again).
                if (size_t(n) < room) drained = true;
            } else if (n == 0) {
                if (d.pay > 0 || d.e > d.r) return "closed in the middle of a packet";
                d.eof = true;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return "recv: " + base::errno_text(errno);
            }
        }
        if (!moved) break;
    }
    if (d.eof && !d.shut && d.idle()) {
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
    if (!why.empty()) {
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
