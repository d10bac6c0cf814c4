// 'tcp' transport: ranks on other hosts (or every rank, with WANMPI_TRANSPORTS=self,tcp).
//
// Connections. Every rank listens (any address; port from TCP_PORT_RANGE or ephemeral) and
// publishes "ip:port" in the KVS as tcp-<rank>. Each direction of a pair picks its connection
// once, at its first send, and never changes it, so per-direction FIFO holds without any
// tie-break: if a connection from the peer has already been accepted (hello checked), the
// direction uses it; otherwise the rank connects (lazily, nonblocking) and uses the new one.
// Simultaneous first sends thus give two connections, each carrying one direction; sequential
// ones (the usual case: a reply) share one. Sharing matters: with one connection per direction
// every message costs a data segment plus a separate pure ACK, measured at 2 segments/message
// against 1 for a shared connection, whose replies carry the ACKs (and about twice the
// latency on loopback/veth, where the receiver's syscall does the ACK's work). Every
// connection is read for frames from the peer.
//
// Wire format (this transport's own; the wan transport speaks IMPI). All integers big-endian.
//   hello, first bytes from the initiator, 24 bytes:
//     u32 magic 'WMTC' | u16 version (1) | u16 zero | u64 FNV-1a hash of the job id |
//     u32 initiator's rank | u32 job size
//   The acceptor checks all of it (and that the rank is a peer it serves and not already
//   connected) and closes the connection otherwise. There is no reply: the initiator pipelines
//   its first frames behind the hello.
//   then records, each opening with a u64 word: type in the top 8 bits, length in the low 56:
//     type 0, frame: the 64-byte header and `length` payload bytes follow
//     type 1, bye (length 0): the sender is finalizing; EOF after a bye is a clean close
//   Anything else (unknown type, a frame longer than TCP_MAX_FRAME, bytes after a bye) is
//   malformed: that connection is closed and the peer reported as failed.
//
// Data path. try_send writes a frame at once: up to 512 bytes copied into one send(), larger
// ones with one sendmsg of (length word, header, payload) from the caller's buffers; bytes a
// partial write leaves behind are copied into the connection's pending buffer (try_send must
// not keep the caller's buffers), as are frames sent while the connect is still in progress.
// Queued SendOps are written with writev from the caller's buffers and resumed in progress()
// when EPOLLOUT fires. The receiver reads into a 64 KiB buffer and parses frames out of it; the
// rest of a large payload is received straight into the buffer on_header returned.
//
// Failure. EOF or an error on a connection without a bye before it, or malformed bytes, fail the
// peer: its queued sends complete with ok=false and on_peer_failed names the rank and address.
// When one of two connections to a peer breaks first, what already arrived on the other is
// delivered before the failure is reported.
//
// Progress and blocking: wait_fd() is the epoll set of all sockets (level-triggered); EPOLLOUT
// is armed only while output is stuck. progress() reads the connection that delivered the last
// frame directly and calls epoll_wait (timeout 0) only every 8th time, so a ping-pong costs the
// syscalls of a plain recv loop; it makes no syscall at all when this transport serves no peer.
// Measured (transport_bench): 8-byte latency 1.07-1.09x a spinning plain-TCP ping-pong.
//
// Finalize: flush, a bye on every connection, shutdown(SHUT_WR), then wait (TCP_FINALIZE_TIMEOUT)
// for the peers' bye and EOF, so that closing never resets data still in flight.
#include "transport/tcp.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <memory>
#include <vector>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/log.hpp"
#include "base/socket.hpp"
#include "base/tunables.hpp"
#include "transport/common.hpp"

namespace wanmpi::transport {
namespace {

base::Tunable<std::string> t_port_range(
    "TCP", "PORT_RANGE", "",
    "Ports the tcp transport may listen on, as LO-HI (first free one is taken); empty: an "
    "ephemeral port.",
    base::Level::user);
base::Tunable<std::string> t_network(
    "TCP", "NETWORK", "",
    "Interface name or IPv4 network (10.1.0.0/16) whose address ranks advertise to their peers; "
    "empty: the first non-loopback interface that is up.",
    base::Level::user);
base::Tunable<std::string> t_address(
    "TCP", "ADDRESS", "",
    "IPv4 address or host name to advertise instead of the one NETWORK selects (e.g. behind NAT).",
    base::Level::user);
base::Tunable<int64_t> t_max_inline("TCP", "MAX_INLINE", 64 * 1024,
                                    "Largest payload the tcp transport takes in one try_send.",
                                    base::Level::tuner);
base::Tunable<int64_t> t_max_frame(
    "TCP", "MAX_FRAME", int64_t(1) << 40,
    "Largest frame payload accepted from the network; longer ones are treated as malformed.",
    base::Level::developer);
base::Tunable<int64_t> t_finalize_timeout(
    "TCP", "FINALIZE_TIMEOUT", 5000,
    "Milliseconds finalize waits to flush queued data and for peers to close their connections.",
    base::Level::tuner);

constexpr uint32_t kHelloMagic = 0x574d5443;  // "WMTC"
constexpr uint16_t kHelloVersion = 1;
constexpr size_t kHelloSize = 24;
constexpr size_t kWordSize = 8;
constexpr size_t kFramePrefix = kWordSize + kHeaderSize;
constexpr uint64_t kLenMask = (uint64_t(1) << 56) - 1;
constexpr uint8_t kTypeFrame = 0;
constexpr uint8_t kTypeBye = 1;
constexpr size_t kRbufSize = 64 * 1024;
constexpr uint64_t kDirect = 8 * 1024;  // receive payload remainders this big straight to dst
constexpr size_t kPendCap = 1 << 20;    // try_send copies at most this much behind a stall
constexpr int kMaxPending = 64;         // accepted connections still waiting for a hello
constexpr int kIov = 64;
constexpr int kEpollEvery = 8;      // see progress()
constexpr size_t kSmallCopy = 512;  // frames up to this size are sent from one stack buffer
constexpr uint64_t kMaxStage = 64ull << 20;  // largest frame staged when on_header gives no buffer

struct Conn {
    enum Kind : uint8_t { out, in, pending } kind = pending;
    enum Rx : uint8_t { hello, word, payload } rx = hello;
    int fd = -1;
    int peer = -1;
    bool connecting = false;
    bool want_out = false;  // EPOLLOUT armed
    bool bye_seen = false;
    bool bye_queued = false;
    bool shut = false;  // shutdown(SHUT_WR) done
    bool dead = false;
    std::string addr;
    // Output owned by the transport (hello, try_send remainders, bye), written before ops.
    std::vector<uint8_t> pend;
    size_t pend_off = 0;
    // Input.
    std::vector<uint8_t> rbuf;
    size_t rb = 0, re = 0;
    uint8_t rx_hdr[kHeaderSize];
    uint8_t* dst = nullptr;
    uint64_t total = 0, got = 0;
    std::vector<uint8_t> stage;

    size_t pend_left() const { return pend.size() - pend_off; }
};

struct Peer {
    int rank = -1;
    enum State : uint8_t { ok, failed, gone } state = ok;
    std::string addr;  // advertised "ip:port"
    sockaddr_in sa{};
    Conn* out = nullptr;  // the connection I opened to it
    Conn* in = nullptr;   // the connection it opened to me
    Conn* tx = nullptr;   // the one my frames to it use (out or in), fixed at the first send
    detail::OpQueue q;
    std::string why;
};

class NullSink final : public RecvSink {
public:
    void* on_header(int, const uint8_t*, uint64_t) override { return nullptr; }
    void on_frame(int peer, const uint8_t*, const void*, uint64_t len) override {
        WANMPI_LOG(debug, "tcp: finalize drops a %llu-byte frame from rank %d",
                   (unsigned long long)len, peer);
    }
    void on_peer_failed(int peer, const std::string& why) override {
        WANMPI_LOG(debug, "tcp: during finalize, rank %d: %s", peer, why.c_str());
    }
};

class TcpTransport final : public Transport {
public:
    ~TcpTransport() override { close_all(); }
    const char* name() const override { return "tcp"; }

    Status init(const JobInfo& job, base::Kvs& kvs, const std::vector<int>& peers) override;
    Status connect(base::Kvs& kvs) override;
    void finalize() override;
    bool flushed() const override {
        for (const auto& p : peers_)
            if (p && p->state == Peer::ok && (!p->q.empty() || (p->tx && (p->tx->connecting ||
                                                                            p->tx->pend_left()))))
                return false;
        return true;
    }

    SendResult try_send(int peer, const uint8_t* hdr, const void* payload, uint64_t len) override {
        Peer* pp = detail::live_peer(peers_, peer);
        if (!pp) return SendResult::failed;
        Peer& p = *pp;
        if (len > max_inline_ || !p.q.empty()) return SendResult::would_block;
        if (!p.tx && !choose_tx(p)) return SendResult::failed;
        Conn& c = *p.tx;
        uint8_t w[kWordSize];
        base::put_be64(w, len);
        if (c.connecting || c.pend_left()) {
            if (c.pend_left() + kFramePrefix + len > kPendCap) return SendResult::would_block;
            append(c, w, kWordSize);
            append(c, hdr, kHeaderSize);
            append(c, payload, len);
            return SendResult::done;
        }
        iovec iov[3] = {{w, kWordSize},
                        {const_cast<uint8_t*>(hdr), kHeaderSize},
                        {const_cast<void*>(payload), len}};
        size_t total = kFramePrefix + len;
        ssize_t n;
        if (total <= kSmallCopy) {
            // One contiguous send is cheaper than importing an iovec for a few bytes.
            uint8_t b[kSmallCopy];
            std::memcpy(b, w, kWordSize);
            std::memcpy(b + kWordSize, hdr, kHeaderSize);
            if (len) std::memcpy(b + kFramePrefix, payload, len);
            do
                n = ::send(c.fd, b, total, MSG_DONTWAIT | MSG_NOSIGNAL);
            while (n < 0 && errno == EINTR);
        } else {
            n = sendv(c, iov, len ? 3 : 2);
        }
        if (n == ssize_t(total)) return SendResult::done;
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return SendResult::would_block;
            fail_peer(p, "send to rank " + std::to_string(p.rank) + " (" + p.addr +
                             "): " + base::errno_text(errno));
            return SendResult::failed;
        }
        // Partial: keep the rest ourselves, the caller's buffers are free after return.
        size_t off = size_t(n);
        for (auto& v : iov) {
            if (off >= v.iov_len) {
                off -= v.iov_len;
                continue;
            }
            append(c, static_cast<uint8_t*>(v.iov_base) + off, v.iov_len - off);
            off = 0;
        }
        arm_out(c, true);
        return SendResult::done;
    }

    void post_send(int peer, SendOp* op) override {
        op->sent = 0;
        Peer* pp = detail::live_peer(peers_, peer);
        if (!pp) return done_.fail(op);
        Peer& p = *pp;
        p.q.push(op);
        if (!p.tx && !choose_tx(p)) return;  // failed: op is on done_
        if (!p.tx->connecting && !p.tx->want_out) flush(p);
    }

    int progress(RecvSink& sink) override {
        if (!active_) return 0;
        int n = 0;
        // Fast path: the connection that delivered the last frame is read directly and the
        // epoll set only every kEpollEvery-th call, so a ping-pong costs about the syscalls of
        // a plain recv loop. Other sockets wait at most kEpollEvery calls; before core sleeps,
        // the epoll fd covers them all anyway.
        if (hot_ && ++hot_calls_ < kEpollEvery) {
            n = on_readable(*hot_, sink);
            return n + finish_progress(sink);
        }
        hot_calls_ = 0;
        epoll_event evs[64];
        int k = epoll_wait(epfd_, evs, 64, 0);
        for (int i = 0; i < k; ++i) {
            if (evs[i].data.ptr == nullptr) {
                accept_all();
                continue;
            }
            Conn& c = *static_cast<Conn*>(evs[i].data.ptr);
            uint32_t e = evs[i].events;
            if (c.dead) continue;
            if (c.connecting || (e & EPOLLOUT)) {
                n += on_writable(c);
                if (c.dead || c.connecting) continue;
            }
            if (e & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) n += on_readable(c, sink);
        }
        return n + finish_progress(sink);
    }

    int wait_fd() const override { return epfd_; }
    uint64_t max_inline() const override { return max_inline_; }

private:
    int finish_progress(RecvSink& sink) {
        int n = 0;
        if (!done_.empty()) n += detail::run_completions(done_);
        if (!report_.empty()) n += report(sink);
        if (ndead_) reap();
        return n;
    }

    ssize_t sendv(Conn& c, iovec* iov, int cnt) {
        msghdr m{};
        m.msg_iov = iov;
        m.msg_iovlen = size_t(cnt);
        ssize_t n;
        do
            n = ::sendmsg(c.fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        return n;
    }

    static void append(Conn& c, const void* p, size_t n) {
        if (!n) return;
        if (c.pend_off && c.pend_off == c.pend.size()) {
            c.pend.clear();
            c.pend_off = 0;
        }
        auto* b = static_cast<const uint8_t*>(p);
        c.pend.insert(c.pend.end(), b, b + n);
    }

    void arm_out(Conn& c, bool on) {
        if (c.want_out == on || c.dead) return;
        c.want_out = on;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP | (on ? uint32_t(EPOLLOUT) : 0u);
        ev.data.ptr = &c;
        epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
    }

    Conn* add_conn(int fd, Conn::Kind kind, bool want_out) {
        conns_.push_back(std::make_unique<Conn>());
        Conn* c = conns_.back().get();
        c->fd = fd;
        c->kind = kind;
        c->want_out = want_out;
        c->rx = kind == Conn::pending ? Conn::hello : Conn::word;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP | (want_out ? uint32_t(EPOLLOUT) : 0u);
        ev.data.ptr = c;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
        return c;
    }

    void close_conn(Conn& c) {
        if (c.dead) return;
        c.dead = true;
        ++ndead_;
        if (c.kind == Conn::pending) --npending_;
        epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
        ::close(c.fd);
        c.fd = -1;
        if (hot_ == &c) hot_ = nullptr;
        if (c.peer >= 0) {
            Peer& p = *peers_[c.peer];
            if (p.out == &c) p.out = nullptr;
            if (p.in == &c) p.in = nullptr;
            if (p.tx == &c) p.tx = nullptr;
        }
    }

    void reap() {
        conns_.remove_if([](const std::unique_ptr<Conn>& c) { return c->dead; });
        ndead_ = 0;
    }

    // First send to p: reuse the connection it opened to us, if any, else open one.
    bool choose_tx(Peer& p) {
        if (p.in && !p.in->dead && !p.in->bye_seen) {
            p.tx = p.in;
            return true;
        }
        if (!p.out && !start_connect(p)) return false;
        p.tx = p.out;
        return true;
    }

    bool start_connect(Peer& p) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            fail_peer(p,
                      "socket for rank " + std::to_string(p.rank) + ": " + base::errno_text(errno));
            return false;
        }
        base::set_nodelay(fd);
        int rc;
        do
            rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&p.sa), sizeof p.sa);
        while (rc < 0 && errno == EINTR);
        if (rc < 0 && errno != EINPROGRESS) {
            int e = errno;
            ::close(fd);
            fail_peer(p, "connect to rank " + std::to_string(p.rank) + " at " + p.addr + ": " +
                             base::errno_text(e));
            return false;
        }
        Conn* c = add_conn(fd, Conn::out, true);
        c->peer = p.rank;
        c->addr = p.addr;
        c->connecting = rc != 0;
        uint8_t h[kHelloSize];
        base::put_be32(h, kHelloMagic);
        base::put_be16(h + 4, kHelloVersion);
        base::put_be16(h + 6, 0);
        base::put_be64(h + 8, job_hash_);
        base::put_be32(h + 16, uint32_t(rank_));
        base::put_be32(h + 20, uint32_t(size_));
        append(*c, h, kHelloSize);
        p.out = c;
        return true;
    }

    // A connection became writable (or its connect finished).
    int on_writable(Conn& c) {
        if (c.peer < 0) return 0;
        Peer& p = *peers_[c.peer];
        if (c.connecting) {
            int err = 0;
            socklen_t l = sizeof err;
            getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &l);
            if (err == EINPROGRESS || err == EALREADY) return 0;
            if (err) {
                fail_peer(p, "connect to rank " + std::to_string(p.rank) + " at " + p.addr + ": " +
                                 base::errno_text(err));
                return 1;
            }
            c.connecting = false;
        }
        if (p.tx != &c) {
            write_pend_only(c);
            return 0;
        }
        return flush(p);
    }

    // Write pending bytes, then queued ops, until done or the socket is full. Returns ops done.
    int flush(Peer& p) {
        Conn& c = *p.tx;
        int n = 0;
        uint8_t words[kIov][kWordSize];
        for (;;) {
            iovec iov[kIov];
            int cnt = 0;
            size_t total = 0;
            if (c.pend_left()) {
                iov[cnt++] = {c.pend.data() + c.pend_off, c.pend_left()};
                total += c.pend_left();
            }
            int w = 0;
            for (SendOp* op = p.q.head; op && cnt + 3 <= kIov; op = op->next, ++w) {
                uint64_t off = op->sent;
                base::put_be64(words[w], op->len);
                if (off < kWordSize) {
                    iov[cnt++] = {words[w] + off, kWordSize - off};
                    off = kWordSize;
                }
                if (off < kFramePrefix) {
                    iov[cnt++] = {op->hdr + (off - kWordSize), kFramePrefix - off};
                    off = kFramePrefix;
                }
                uint64_t poff = off - kFramePrefix;
                if (poff < op->len)
                    iov[cnt++] = {
                        const_cast<uint8_t*>(static_cast<const uint8_t*>(op->payload)) + poff,
                        op->len - poff};
                total += kFramePrefix + op->len - op->sent;
            }
            if (!cnt) break;
            ssize_t r = sendv(c, iov, cnt);
            if (r < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    arm_out(c, true);
                    return n;
                }
                fail_peer(p, "send to rank " + std::to_string(p.rank) + " (" + p.addr +
                                 "): " + base::errno_text(errno));
                return n;
            }
            size_t left = size_t(r);
            if (c.pend_left()) {
                size_t t = std::min(left, c.pend_left());
                c.pend_off += t;
                left -= t;
                if (!c.pend_left()) {
                    c.pend.clear();
                    c.pend_off = 0;
                }
            }
            while (left && p.q.head) {
                SendOp* op = p.q.head;
                uint64_t rem = kFramePrefix + op->len - op->sent;
                if (left >= rem) {
                    left -= rem;
                    op->sent = kFramePrefix + op->len;
                    done_.push(p.q.pop());
                    ++n;
                } else {
                    op->sent += left;
                    left = 0;
                }
            }
            // A zero-length op whose bytes were all counted above completes here too.
            if (size_t(r) < total) {
                arm_out(c, true);
                return n;
            }
        }
        arm_out(c, false);
        maybe_shut(c);
        return n;
    }

    // A connection that is not our tx to its peer only ever carries our bye.
    void write_pend_only(Conn& c) {
        while (c.pend_left()) {
            ssize_t r = ::send(c.fd, c.pend.data() + c.pend_off, c.pend_left(),
                               MSG_DONTWAIT | MSG_NOSIGNAL);
            if (r < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    arm_out(c, true);
                    return;
                }
                c.pend.clear();  // the peer is gone; reading will tell
                c.pend_off = 0;
                break;
            }
            c.pend_off += size_t(r);
        }
        arm_out(c, false);
        maybe_shut(c);
    }

    void maybe_shut(Conn& c) {
        if (c.bye_queued && !c.shut && !c.pend_left()) {
            ::shutdown(c.fd, SHUT_WR);
            c.shut = true;
        }
    }

    int on_readable(Conn& c, RecvSink& sink) {
        int n = 0;
        if (c.rbuf.empty()) c.rbuf.resize(kRbufSize);
        for (int iter = 0; iter < 16 && !c.dead; ++iter) {
            if (c.rx == Conn::payload && c.rb == c.re && c.total - c.got >= kDirect) {
                uint64_t want = c.total - c.got;
                ssize_t r = ::recv(c.fd, c.dst + c.got, want, MSG_DONTWAIT);
                if (r <= 0) {
                    if (!read_error(c, r, sink)) break;
                    return n + 1;
                }
                c.got += uint64_t(r);
                if (c.got == c.total) n += finish_frame(c, sink);
                if (uint64_t(r) < want) break;
                continue;
            }
            if (c.rb == c.re) {
                c.rb = c.re = 0;
            } else if (c.rbuf.size() - c.re < 4096) {
                std::memmove(c.rbuf.data(), c.rbuf.data() + c.rb, c.re - c.rb);
                c.re -= c.rb;
                c.rb = 0;
            }
            size_t want = c.rbuf.size() - c.re;
            ssize_t r = ::recv(c.fd, c.rbuf.data() + c.re, want, MSG_DONTWAIT);
            if (r <= 0) {
                if (!read_error(c, r, sink)) break;
                return n + 1;
            }
            c.re += size_t(r);
            n += parse(c, sink);
            if (size_t(r) < want) break;
        }
        return n;
    }

    // recv returned r <= 0. Returns false if it was only EAGAIN (nothing to read).
    bool read_error(Conn& c, ssize_t r, RecvSink& sink) {
        int e = r < 0 ? errno : 0;
        if (r < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR)) return false;
        if (c.kind == Conn::pending) {
            WANMPI_LOG(debug, "tcp: connection from %s closed before its hello", c.addr.c_str());
            close_conn(c);
            return true;
        }
        Peer& p = *peers_[c.peer];
        bool clean = (c.bye_seen && c.rx == Conn::word && c.rb == c.re) || finalizing_;
        if (clean) {
            close_conn(c);
            if (p.state == Peer::ok) peer_gone(p);
            return true;
        }
        std::string why = e ? "connection " + std::string(c.kind == Conn::out ? "to" : "from") +
                                  " rank " + std::to_string(p.rank) + " (" + c.addr +
                                  "): " + base::errno_text(e)
                            : "rank " + std::to_string(p.rank) + " (" + c.addr +
                                  ") closed its connection without finalizing (exited?)";
        Conn* other = &c == p.out ? p.in : p.out;
        if (other && !other->dead) {
            // Deliver what already arrived from it on the other connection before saying it
            // failed.
            close_conn(c);
            while (!other->dead && on_readable(*other, sink) > 0) {}
        }
        fail_peer(p, why);
        return true;
    }

    void malformed(Conn& c, const std::string& what) {
        if (c.peer < 0 || c.kind == Conn::pending) {
            WANMPI_LOG(warn, "tcp: rejected connection from %s: %s", c.addr.c_str(), what.c_str());
            close_conn(c);
            return;
        }
        Peer& p = *peers_[c.peer];
        WANMPI_LOG(warn, "tcp: malformed data on connection %s rank %d (%s): %s",
                   c.kind == Conn::out ? "to" : "from", p.rank, c.addr.c_str(), what.c_str());
        fail_peer(
            p, "malformed data from rank " + std::to_string(p.rank) + " (" + c.addr + "): " + what);
    }

    int finish_frame(Conn& c, RecvSink& sink) {
        c.rx = Conn::word;
        hot_ = &c;
        sink.on_frame(c.peer, c.rx_hdr, c.dst, c.total);
        if (c.stage.capacity() > (1u << 20)) std::vector<uint8_t>().swap(c.stage);
        return 1;
    }

    // Consume whole records from rbuf. Returns frames delivered.
    int parse(Conn& c, RecvSink& sink) {
        int n = 0;
        while (!c.dead) {
            uint8_t* b = c.rbuf.data() + c.rb;
            size_t avail = c.re - c.rb;
            if (c.rx == Conn::hello) {
                if (avail < kHelloSize) return n;
                if (!accept_hello(c, b)) return n;
                c.rb += kHelloSize;
                continue;
            }
            if (c.rx == Conn::payload) {
                uint64_t take = std::min<uint64_t>(avail, c.total - c.got);
                if (take) std::memcpy(c.dst + c.got, b, take);
                c.rb += take;
                c.got += take;
                if (c.got < c.total) return n;
                n += finish_frame(c, sink);
                continue;
            }
            if (avail < kWordSize) return n;
            uint64_t w = base::get_be64(b);
            uint8_t type = uint8_t(w >> 56);
            uint64_t len = w & kLenMask;
            if (c.bye_seen) {
                malformed(c, "data after bye");
                return n;
            }
            if (type == kTypeBye) {
                if (len) {
                    malformed(c, "bye with a length");
                    return n;
                }
                c.bye_seen = true;
                c.rb += kWordSize;
                continue;
            }
            if (type != kTypeFrame) {
                malformed(c, "unknown record type " + std::to_string(type));
                return n;
            }
            if (len > max_frame_) {
                malformed(c, "frame of " + std::to_string(len) + " bytes exceeds the limit");
                return n;
            }
            if (avail < kFramePrefix) return n;
            const uint8_t* hdr = b + kWordSize;
            if (avail - kFramePrefix >= len) {
                void* buf = sink.on_header(c.peer, hdr, len);
                if (buf) {
                    if (len) std::memcpy(buf, hdr + kHeaderSize, len);
                    sink.on_frame(c.peer, hdr, buf, len);
                } else {
                    sink.on_frame(c.peer, hdr, hdr + kHeaderSize, len);
                }
                c.rb += kFramePrefix + len;
                ++n;
                hot_ = &c;
                continue;
            }
            std::memcpy(c.rx_hdr, hdr, kHeaderSize);
            c.rb += kFramePrefix;
            void* buf = sink.on_header(c.peer, c.rx_hdr, len);
            if (!buf) {
                // on_header's nullptr is meant for small frames; never let a length from the
                // network size an allocation beyond kMaxStage.
                if (len > kMaxStage) {
                    malformed(
                        c, "frame of " + std::to_string(len) + " bytes without a receive buffer");
                    return n;
                }
                c.stage.resize(len);
                buf = c.stage.data();
            }
            c.dst = static_cast<uint8_t*>(buf);
            c.total = len;
            c.got = 0;
            c.rx = Conn::payload;
        }
        return n;
    }

    bool accept_hello(Conn& c, const uint8_t* h) {
        uint32_t magic = base::get_be32(h);
        uint16_t ver = base::get_be16(h + 4);
        uint64_t job = base::get_be64(h + 8);
        uint32_t r = base::get_be32(h + 16);
        uint32_t sz = base::get_be32(h + 20);
        std::string why;
        if (magic != kHelloMagic)
            why = "not a wanmpi tcp hello";
        else if (ver != kHelloVersion)
            why = "hello version " + std::to_string(ver) + " unsupported";
        else if (job != job_hash_ || sz != uint32_t(size_))
            why = "hello from another job";
        else if (r >= uint32_t(size_) || int(r) == rank_ || !peers_[r])
            why =
                "hello from rank " + std::to_string(r) + ", which is not a peer of this transport";
        else if (peers_[r]->in)
            why = "second connection from rank " + std::to_string(r);
        else if (peers_[r]->state == Peer::failed)
            why = "rank " + std::to_string(r) + " already failed";
        if (!why.empty()) {
            malformed(c, why);
            return false;
        }
        c.kind = Conn::in;
        --npending_;
        c.peer = int(r);
        // Name it by its advertised address from now on, like the connection we open to it.
        if (!peers_[r]->addr.empty()) c.addr = peers_[r]->addr;
        c.rx = Conn::word;
        peers_[r]->in = &c;
        return true;
    }

    void accept_all() {
        for (;;) {
            sockaddr_in sa{};
            socklen_t l = sizeof sa;
            int fd =
                ::accept4(lfd_, reinterpret_cast<sockaddr*>(&sa), &l, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                    WANMPI_LOG(warn, "tcp: accept: %s", base::errno_text(errno).c_str());
                return;
            }
            char ip[INET_ADDRSTRLEN] = "?";
            inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
            std::string addr = std::string(ip) + ":" + std::to_string(ntohs(sa.sin_port));
            if (npending_ >= kMaxPending) {
                WANMPI_LOG(warn, "tcp: rejected connection from %s: too many without a hello",
                           addr.c_str());
                ::close(fd);
                continue;
            }
            base::set_nodelay(fd);
            Conn* c = add_conn(fd, Conn::pending, false);
            c->addr = addr;
            ++npending_;
        }
    }

    void fail_ops(Peer& p) {
        done_.fail_all(p.q);
    }

    void fail_peer(Peer& p, const std::string& why) {
        if (p.state == Peer::failed) return;
        p.state = Peer::failed;
        p.why = why;
        WANMPI_LOG(debug, "tcp: %s", why.c_str());
        if (p.out) close_conn(*p.out);
        if (p.in) close_conn(*p.in);
        fail_ops(p);
        report_.push_back(&p);
    }

    // The peer said bye: sends to it fail from now on, quietly; its other connection keeps
    // delivering until its own bye and EOF.
    void peer_gone(Peer& p) {
        p.state = Peer::gone;
        fail_ops(p);
    }

    int report(RecvSink& sink) {
        std::vector<Peer*> list;
        list.swap(report_);
        for (Peer* p : list)
            sink.on_peer_failed(p->rank, p->why);
        return int(list.size());
    }

    bool has_output() const {
        for (const auto& c : conns_)
            if (!c->dead && (c->pend_left() || c->connecting)) return true;
        for (Peer* p : served_)
            if (!p->q.empty() && p->state == Peer::ok) return true;
        return false;
    }

    void close_all() {
        for (auto& c : conns_)
            if (!c->dead) close_conn(*c);
        conns_.clear();
        ndead_ = 0;
        if (lfd_ >= 0) ::close(lfd_);
        lfd_ = -1;
        if (epfd_ >= 0) ::close(epfd_);
        epfd_ = -1;
        active_ = false;
    }

    int rank_ = 0;
    int size_ = 0;
    uint64_t job_hash_ = 0;
    uint64_t max_inline_ = 0;
    uint64_t max_frame_ = 0;
    int lfd_ = -1;
    int epfd_ = -1;
    bool active_ = false;
    bool finalizing_ = false;
    int npending_ = 0;
    int ndead_ = 0;
    Conn* hot_ = nullptr;  // incoming connection that delivered the last frame
    int hot_calls_ = 0;
    std::vector<Peer*> peers_;  // by world rank
    std::vector<std::unique_ptr<Peer>> owned_;
    std::vector<Peer*> served_;
    std::list<std::unique_ptr<Conn>> conns_;
    std::vector<Peer*> report_;
    detail::OpQueue done_;
};

Status TcpTransport::init(const JobInfo& job, base::Kvs& kvs, const std::vector<int>& peers) {
    rank_ = job.rank;
    size_ = job.size;
    job_hash_ = detail::job_hash(job.job_id);
    max_inline_ = uint64_t(std::max<int64_t>(0, t_max_inline.get()));
    max_frame_ = uint64_t(std::clamp<int64_t>(t_max_frame.get(), 0, int64_t(kLenMask)));
    peers_.assign(size_, nullptr);
    for (int r : peers) {
        if (r < 0 || r >= size_ || r == rank_)
            return Status(base::Errc::invalid, "tcp: cannot serve rank " + std::to_string(r));
        if (peers_[r]) continue;
        owned_.push_back(std::make_unique<Peer>());
        owned_.back()->rank = r;
        peers_[r] = owned_.back().get();
        served_.push_back(peers_[r]);
    }
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0)
        return Status(base::Errc::fatal, "tcp: epoll_create1: " + base::errno_text(errno), errno);
    if (served_.empty()) return Status::OK();

    std::string err;
    const std::string& range = t_port_range.get();
    if (range.empty()) {
        lfd_ = base::tcp_listen("", 0, SOMAXCONN, &err);
    } else {
        unsigned lo = 0, hi = 0;
        char extra;
        if ((std::sscanf(range.c_str(), "%u-%u%c", &lo, &hi, &extra) != 2 &&
             std::sscanf(range.c_str(), "%u:%u%c", &lo, &hi, &extra) != 2) ||
            lo == 0 || hi < lo || hi > 65535)
            return Status(base::Errc::invalid,
                          "tcp: WANMPI_TCP_PORT_RANGE must be LO-HI, not '" + range + "'");
        lfd_ = base::tcp_listen_range("", uint16_t(lo), uint16_t(hi), SOMAXCONN, &err);
    }
    if (lfd_ < 0) return Status(base::Errc::fatal, "tcp: " + err, errno);
    base::set_nonblock(lfd_, true);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;  // the listener
    epoll_ctl(epfd_, EPOLL_CTL_ADD, lfd_, &ev);
    std::string ip = t_address.get();
    if (ip.empty()) ip = base::primary_ipv4(t_network.get());
    active_ = true;
    return kvs.put("tcp-" + std::to_string(rank_),
                   ip + ":" + std::to_string(base::local_port(lfd_)));
}

Status TcpTransport::connect(base::Kvs& kvs) {
    for (Peer* p : served_) {
        std::string key = "tcp-" + std::to_string(p->rank);
        auto v = kvs.get(key);
        if (!v)
            return Status(base::Errc::fatal,
                          "tcp: no address for rank " + std::to_string(p->rank) + " in the KVS");
        auto hp = base::parse_host_port(*v);
        if (!hp)
            return Status(base::Errc::fatal, "tcp: malformed address '" + *v + "' for rank " +
                                                 std::to_string(p->rank));
        p->addr = *v;
        p->sa.sin_family = AF_INET;
        p->sa.sin_port = htons(hp->port);
        if (inet_pton(AF_INET, hp->host.c_str(), &p->sa.sin_addr) != 1) {
            addrinfo hints{}, *res = nullptr;
            hints.ai_family = AF_INET;
            hints.ai_socktype = SOCK_STREAM;
            int rc = getaddrinfo(hp->host.c_str(), nullptr, &hints, &res);
            if (rc != 0 || !res)
                return Status(base::Errc::fatal, "tcp: cannot resolve '" + hp->host + "' (rank " +
                                                     std::to_string(p->rank) +
                                                     "): " + gai_strerror(rc));
            p->sa.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
            freeaddrinfo(res);
        }
    }
    return Status::OK();
}

void TcpTransport::finalize() {
    if (!active_) {
        close_all();
        return;
    }
    finalizing_ = true;
    NullSink ns;
    int64_t deadline = base::now_ns() + std::max<int64_t>(0, t_finalize_timeout.get()) * 1000000;
    auto wait = [&] {
        int64_t left_ms = (deadline - base::now_ns()) / 1000000;
        if (left_ms <= 0) return false;
        epoll_event ev;
        epoll_wait(epfd_, &ev, 1, int(std::min<int64_t>(left_ms, 100)));
        return true;
    };
    // 1. Flush what is queued.
    while (has_output()) {
        if (!progress(ns) && !wait()) break;
    }
    // 2. Say bye on every connection, then close our sending side. Sends still queued (the
    //    peer stopped reading) are failed; a frame cut in the middle cannot be followed by a
    //    bye, so that connection is simply closed and the peer sees a failure, which it is.
    for (Peer* p : served_) {
        if (p->q.empty()) continue;
        if (p->tx && p->q.head->sent > 0) close_conn(*p->tx);
        fail_ops(*p);
    }
    uint8_t bye[kWordSize];
    base::put_be64(bye, uint64_t(kTypeBye) << 56);
    for (auto& c : conns_) {
        if (c->dead) continue;
        if (c->kind == Conn::pending || c->connecting) {
            close_conn(*c);
            continue;
        }
        append(*c, bye, kWordSize);
        c->bye_queued = true;
        Peer& p = *peers_[c->peer];
        if (p.tx == c.get())
            flush(p);
        else
            write_pend_only(*c);
    }
    // 3. Wait for the peers' bye and EOF, so that closing does not reset data still in flight.
    for (;;) {
        bool open = false;
        for (auto& c : conns_)
            if (!c->dead && c->kind != Conn::pending) open = true;
        if (!open) break;
        if (!progress(ns) && !wait()) break;
    }
    close_all();
}

}  // namespace

std::unique_ptr<Transport> make_tcp_transport() {
    return std::make_unique<TcpTransport>();
}

}  // namespace wanmpi::transport
