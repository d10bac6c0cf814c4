// src/wanlink/tls: TLS 1.3 with the job's PSK over real loopback TCP connections: bulk data both
// ways through nonblocking writev/recv, a wrong key, a man in the middle that tampers with or
// truncates records, peers that do not speak TLS, a small fuzz loop on the record layer, and the
// cost (printed, not asserted).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/socket.hpp"
#include "wanlink/tls.hpp"

using namespace wanmpi;
using base::Errc;
using wanlink::Tls;

namespace {

using Clock = std::chrono::steady_clock;
double secs_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}
int ms_left(Clock::time_point deadline) {
    auto l = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return l.count() > 0 ? int(l.count()) : 0;
}

struct Key {
    uint8_t b[32];
};
Key key(uint8_t seed) {
    Key k;
    for (int i = 0; i < 32; ++i) k.b[i] = uint8_t(seed * 31 + i * 7);
    return k;
}

struct Listener {
    base::Fd fd;
    uint16_t port = 0;
};
Listener listen_lo() {
    std::string err;
    Listener l;
    l.fd = base::Fd(base::tcp_listen("127.0.0.1", 0, 16, &err));
    EXPECT_TRUE(l.fd) << err;
    l.port = base::local_port(l.fd.get());
    return l;
}
base::Fd connect_lo(uint16_t port) {
    std::string err;
    base::Fd c(base::tcp_connect("127.0.0.1", port, 2000, &err));
    EXPECT_TRUE(c) << err;
    return c;
}
base::Fd accept_one(int l) { return base::Fd(::accept4(l, nullptr, nullptr, SOCK_CLOEXEC)); }

struct Conn {
    base::Fd cfd, sfd;
};
Conn tcp_pair() {
    Listener l = listen_lo();
    Conn c;
    c.cfd = connect_lo(l.port);
    c.sfd = accept_one(l.fd.get());
    return c;
}

struct Hs {
    base::Status cst, sst;
    std::unique_ptr<Tls> c, s;
    double secs = 0;
};
Hs handshake_both(int cfd, int sfd, const Key& ck, const Key& sk, int64_t timeout_ms = 5000) {
    Hs h;
    auto t0 = Clock::now();
    std::thread srv([&] { h.sst = Tls::handshake(sfd, false, sk.b, timeout_ms, &h.s); });
    h.cst = Tls::handshake(cfd, true, ck.b, timeout_ms, &h.c);
    srv.join();
    h.secs = secs_since(t0);
    return h;
}

// recv() until it gives something other than EAGAIN, waiting for the socket in between as a
// caller would (pending() first). Returns its result and errno, or -2 after timeout_ms.
ssize_t recv_wait(Tls& t, int fd, void* buf, size_t n, int* err, int timeout_ms = 5000) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        errno = 0;
        ssize_t r = t.recv(buf, n);
        *err = errno;
        if (r >= 0 || errno != EAGAIN) return r;
        EXPECT_FALSE(t.pending()) << "pending() after EAGAIN";
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, ms_left(deadline)) == 0) {
            *err = ETIMEDOUT;
            return -2;
        }
    }
}

void flush_all(Tls& t, int fd) {
    int r;
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while ((r = t.flush()) == 1 && ms_left(deadline) > 0) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, ms_left(deadline));
    }
    EXPECT_EQ(r, 0) << strerror(errno);
}

void write_all(Tls& t, int fd, const void* data, size_t n) {
    size_t done = 0;
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (done < n && ms_left(deadline) > 0) {
        iovec iov{const_cast<uint8_t*>(static_cast<const uint8_t*>(data)) + done, n - done};
        errno = 0;
        ssize_t r = t.writev(&iov, 1);
        if (r > 0) {
            done += size_t(r);
        } else {
            ASSERT_EQ(errno, EAGAIN) << t.error();
            pollfd p{fd, POLLOUT, 0};
            ::poll(&p, 1, ms_left(deadline));
        }
    }
    ASSERT_EQ(done, n);
    flush_all(t, fd);
}

// A reproducible byte stream: byte `off` of stream `seed`, so both ends agree on 64 MiB
// without keeping it.
uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
void fill(uint64_t seed, uint64_t off, uint8_t* p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint64_t pos = off + i;
        uint64_t w = splitmix(seed * 0x100000001b3ull + (pos >> 3));
        for (unsigned b = unsigned(pos & 7); b < 8 && i < n; ++b, ++i) p[i] = uint8_t(w >> (8 * b));
    }
}

// One end of a bidirectional transfer, on a nonblocking Tls: writev with random iov splits
// (empty and tiny elements included), recv with random sizes. It reads the way an epoll
// caller must: when poll() says readable, then again only while pending() says so; if
// pending() missed data that sits in OpenSSL, the transfer stalls and fails on its deadline.
void pump(Tls& t, int fd, uint64_t out_seed, uint64_t in_seed, size_t total, uint32_t rseed,
          std::string* fail) {
    std::mt19937 rng(rseed);
    std::vector<uint8_t> win(3 << 20), rbuf(256 << 10), expect(256 << 10);
    size_t sent = 0, rcvd = 0, wstart = 0, wend = 0;
    bool readable = true;
    auto deadline = Clock::now() + std::chrono::seconds(120);
    while (sent < total || rcvd < total || t.backlog() > 0) {
        if (ms_left(deadline) == 0) {
            *fail = "stalled: sent " + std::to_string(sent) + ", received " +
                    std::to_string(rcvd) + ", backlog " + std::to_string(t.backlog());
            return;
        }
        bool progress = false, want_out = false;
        if (sent < total) {
            if (sent >= wend) {
                wstart = sent;
                wend = std::min(total, sent + 1 + rng() % win.size());
                fill(out_seed, wstart, win.data(), wend - wstart);
            }
            iovec iov[16];
            int k = 1 + int(rng() % 16);
            size_t left = wend - sent;
            uint8_t* p = win.data() + (sent - wstart);
            for (int j = 0; j < k; ++j) {
                size_t len = left;
                if (j < k - 1) {
                    switch (rng() % 4) {
                    case 0: len = 0; break;
                    case 1: len = rng() % 200; break;
                    default: len = rng() % (left + 1);
                    }
                    len = std::min(len, left);
                }
                iov[j] = {p, len};
                p += len;
                left -= len;
            }
            errno = 0;
            ssize_t r = t.writev(iov, k);
            if (r > 0) {
                sent += size_t(r);
                progress = true;
            } else if (r == 0) {
                *fail = "writev took nothing of " + std::to_string(wend - sent) + " bytes";
                return;
            } else if (errno == EAGAIN) {
                want_out = true;
            } else {
                *fail = "writev: " + std::string(strerror(errno)) + " " + t.error();
                return;
            }
        } else if (t.backlog() > 0) {
            int r = t.flush();
            if (r < 0) {
                *fail = "flush: " + std::string(strerror(errno));
                return;
            }
            want_out = r == 1;
        }
        if (rcvd < total && (readable || t.pending())) {
            for (;;) {
                size_t want = rng() % 4 == 0 ? 1 + rng() % 64 : 1 + rng() % rbuf.size();
                errno = 0;
                ssize_t r = t.recv(rbuf.data(), want);
                if (r > 0) {
                    if (size_t(r) > want || rcvd + size_t(r) > total) {
                        *fail = "recv returned too much";
                        return;
                    }
                    fill(in_seed, rcvd, expect.data(), size_t(r));
                    if (std::memcmp(rbuf.data(), expect.data(), size_t(r)) != 0) {
                        *fail = "corrupt data near offset " + std::to_string(rcvd);
                        return;
                    }
                    rcvd += size_t(r);
                    progress = true;
                    if (rcvd < total && t.pending()) continue;
                    break;
                }
                if (r == 0) {
                    *fail = "recv: unexpected end at " + std::to_string(rcvd);
                    return;
                }
                if (errno != EAGAIN) {
                    *fail = "recv: " + std::string(strerror(errno)) + " " + t.error();
                    return;
                }
                if (t.pending()) {
                    *fail = "pending() true after EAGAIN";
                    return;
                }
                break;
            }
        }
        short ev = short((rcvd < total ? POLLIN : 0) | (want_out ? POLLOUT : 0));
        pollfd pf{fd, ev, 0};
        int pr = ::poll(&pf, 1, progress ? 0 : 1000);
        readable = pr > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR));
    }
}

// A man in the middle: accepts one connection, connects it to `target` and copies bytes both
// ways. Armed, it flips one byte of the client-to-server stream, or cuts that stream (FIN to
// the server), at an offset counted from the arming.
class Mitm {
public:
    enum class Act { none, flip, cut };
    explicit Mitm(uint16_t target) : target_(target) {
        Listener l = listen_lo();
        port_ = l.port;
        lfd_ = std::move(l.fd);
        th_ = std::thread([this] { run(); });
    }
    ~Mitm() {
        stop_ = true;
        th_.join();
    }
    uint16_t port() const { return port_; }
    void arm(Act a, size_t at, uint8_t mask = 0x40) {
        at_ = at;
        mask_ = mask;
        act_.store(a);
    }

private:
    void run() {
        pollfd lp{lfd_.get(), POLLIN, 0};
        while (!stop_ && ::poll(&lp, 1, 50) <= 0) {}
        if (stop_) return;
        base::Fd c = accept_one(lfd_.get());
        base::Fd s = connect_lo(target_);
        std::vector<uint8_t> buf(64 << 10);
        size_t seen = 0;  // client-to-server bytes since arming
        bool c_open = true, s_open = true;
        while (!stop_ && (c_open || s_open)) {
            pollfd p[2] = {{c_open ? c.get() : -1, POLLIN, 0}, {s_open ? s.get() : -1, POLLIN, 0}};
            if (::poll(p, 2, 50) <= 0) continue;
            if (p[0].revents) {
                ssize_t n = ::recv(c.get(), buf.data(), buf.size(), 0);
                if (n <= 0) {
                    ::shutdown(s.get(), SHUT_WR);
                    c_open = false;
                } else {
                    size_t len = size_t(n);
                    Act a = act_.load();
                    if (a == Act::flip && at_ >= seen && at_ < seen + len)
                        buf[at_ - seen] ^= mask_;
                    if (a == Act::cut && seen + len >= at_) {
                        len = at_ - seen;
                        c_open = false;
                    }
                    if (a != Act::none) seen += size_t(n);
                    base::write_full(s.get(), buf.data(), len);
                    if (!c_open) ::shutdown(s.get(), SHUT_WR);
                }
            }
            if (p[1].revents) {
                ssize_t n = ::recv(s.get(), buf.data(), buf.size(), 0);
                if (n <= 0) {
                    ::shutdown(c.get(), SHUT_WR);
                    s_open = false;
                } else {
                    base::write_full(c.get(), buf.data(), size_t(n));
                }
            }
        }
    }

    uint16_t target_, port_ = 0;
    base::Fd lfd_;
    std::thread th_;
    std::atomic<bool> stop_{false};
    std::atomic<Act> act_{Act::none};
    size_t at_ = 0;
    uint8_t mask_ = 0;
};

// A TLS connection through a Mitm.
struct Tapped {
    Listener srv = listen_lo();
    Mitm mitm{srv.port};
    base::Fd cfd = connect_lo(mitm.port());
    base::Fd sfd = accept_one(srv.fd.get());
    Hs hs = handshake_both(cfd.get(), sfd.get(), key(1), key(1));
};

// On the wire a TLS 1.3 record is a 5-byte header, then the plaintext, its content type byte
// and the 16-byte GCM tag.
constexpr size_t wire_size(size_t plain) { return 5 + plain + 1 + 16; }

}  // namespace

TEST(Tls, HandshakeThen64MiBEachWayWithRandomSplits) {
    Conn c = tcp_pair();
    ASSERT_EQ(fcntl(c.cfd.get(), F_GETFL) & O_NONBLOCK, 0);  // tcp_connect gives a blocking fd
    Hs h = handshake_both(c.cfd.get(), c.sfd.get(), key(1), key(1));
    ASSERT_TRUE(h.cst.ok()) << h.cst.message();
    ASSERT_TRUE(h.sst.ok()) << h.sst.message();
    EXPECT_STREQ(h.c->cipher(), "TLS_AES_128_GCM_SHA256");
    EXPECT_STREQ(h.s->cipher(), "TLS_AES_128_GCM_SHA256");
    EXPECT_NE(fcntl(c.cfd.get(), F_GETFL) & O_NONBLOCK, 0);
    EXPECT_NE(fcntl(c.sfd.get(), F_GETFL) & O_NONBLOCK, 0);
    EXPECT_FALSE(h.c->pending());
    EXPECT_FALSE(h.s->pending());

    const size_t total = size_t(64) << 20;
    std::string cfail, sfail;
    auto t0 = Clock::now();
    std::thread srv([&] { pump(*h.s, c.sfd.get(), 2, 1, total, 22, &sfail); });
    pump(*h.c, c.cfd.get(), 1, 2, total, 11, &cfail);
    srv.join();
    EXPECT_EQ(cfail, "");
    EXPECT_EQ(sfail, "");
    std::printf("64 MiB each way in %.2f s\n", secs_since(t0));
}

TEST(Tls, PendingSeesWholeRecordsAlreadyRead) {
    // Three full records reach the server's socket before it reads; its first recv() takes all
    // three from the socket but returns one: the other two must show in pending(), because
    // the socket will not be readable again.
    Conn c = tcp_pair();
    Hs h = handshake_both(c.cfd.get(), c.sfd.get(), key(1), key(1));
    ASSERT_TRUE(h.cst.ok() && h.sst.ok()) << h.cst.message() << h.sst.message();
    std::vector<uint8_t> data(3 * 16384), got(16384);
    fill(5, 0, data.data(), data.size());
    write_all(*h.c, c.cfd.get(), data.data(), data.size());
    auto deadline = Clock::now() + std::chrono::seconds(5);
    int avail = 0;
    while (ms_left(deadline) > 0 && ioctl(c.sfd.get(), FIONREAD, &avail) == 0 &&
           size_t(avail) < 3 * wire_size(16384)) {
        pollfd p{c.sfd.get(), POLLIN, 0};
        ::poll(&p, 1, 10);
    }
    ASSERT_EQ(size_t(avail), 3 * wire_size(16384));
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(h.s->recv(got.data(), got.size()), 16384) << i;
        EXPECT_EQ(std::memcmp(got.data(), data.data() + i * 16384, 16384), 0) << i;
        EXPECT_EQ(h.s->pending(), i < 2) << i;
    }
    ASSERT_EQ(ioctl(c.sfd.get(), FIONREAD, &avail), 0);
    EXPECT_EQ(avail, 0);
    errno = 0;
    EXPECT_EQ(h.s->recv(got.data(), got.size()), -1);
    EXPECT_EQ(errno, EAGAIN);
    // A small read leaves decrypted plaintext behind: pending() again.
    write_all(*h.c, c.cfd.get(), data.data(), 100);
    int err = 0;
    ASSERT_EQ(recv_wait(*h.s, c.sfd.get(), got.data(), 10, &err), 10);
    EXPECT_TRUE(h.s->pending());
    ASSERT_EQ(h.s->recv(got.data(), got.size()), 90);
    EXPECT_FALSE(h.s->pending());
}

TEST(Tls, SmallIovElementsShareRecords) {
    // 200 elements of 100 bytes: two records (16384 + 3616), not 200.
    Conn c = tcp_pair();
    Hs h = handshake_both(c.cfd.get(), c.sfd.get(), key(1), key(1));
    ASSERT_TRUE(h.cst.ok() && h.sst.ok());
    std::vector<uint8_t> data(200 * 100);
    fill(9, 0, data.data(), data.size());
    std::vector<iovec> iov(200);
    for (int i = 0; i < 200; ++i) iov[i] = {data.data() + i * 100, 100};
    ASSERT_EQ(h.c->writev(iov.data(), 200), ssize_t(data.size()));
    flush_all(*h.c, c.cfd.get());
    std::vector<uint8_t> raw(64 << 10);
    size_t n = 0, want = wire_size(16384) + wire_size(20000 - 16384);
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (n < want && ms_left(deadline) > 0) {  // read the ciphertext itself
        pollfd p{c.sfd.get(), POLLIN, 0};
        ::poll(&p, 1, 100);
        ssize_t r = ::recv(c.sfd.get(), raw.data() + n, raw.size() - n, MSG_DONTWAIT);
        if (r > 0) n += size_t(r);
    }
    EXPECT_EQ(n, want);
}

TEST(Tls, WrongKeyFailsBothSidesQuickly) {
    Conn c = tcp_pair();
    Hs h = handshake_both(c.cfd.get(), c.sfd.get(), key(1), key(2), 3000);
    EXPECT_FALSE(h.cst.ok());
    EXPECT_FALSE(h.sst.ok());
    EXPECT_EQ(h.cst.code(), Errc::proto_error) << h.cst.message();
    EXPECT_EQ(h.sst.code(), Errc::proto_error) << h.sst.message();
    EXPECT_NE(h.sst.message().find("another key"), std::string::npos) << h.sst.message();
    EXPECT_LT(h.secs, 2.0);  // the server's alert ends the client's wait, no timeout involved
    std::printf("client: %s\nserver: %s\n", h.cst.message().c_str(), h.sst.message().c_str());
}

TEST(Tls, SilentPeerTimesOut) {
    Conn c = tcp_pair();
    std::unique_ptr<Tls> t;
    auto t0 = Clock::now();
    base::Status st = Tls::handshake(c.sfd.get(), false, key(1).b, 300, &t);
    double secs = secs_since(t0);
    EXPECT_EQ(st.code(), Errc::link_failed);
    EXPECT_NE(st.message().find("timed out after 300 ms"), std::string::npos) << st.message();
    EXPECT_GE(secs, 0.29);
    EXPECT_LT(secs, 1.5);
    // The client gives up when its peer closes.
    t0 = Clock::now();
    std::thread closer([&] {
        pollfd p{c.sfd.get(), POLLIN, 0};
        ::poll(&p, 1, 2000);  // the ClientHello
        c.sfd.reset();
    });
    st = Tls::handshake(c.cfd.get(), true, key(1).b, 3000, &t);
    closer.join();
    EXPECT_EQ(st.code(), Errc::link_failed) << st.message();
    EXPECT_LT(secs_since(t0), 2.5);
    std::printf("%s\n", st.message().c_str());
}

TEST(Tls, FlippedByteIsRejectedNotDelivered) {
    // Header bytes (type, version, length) and body/tag bytes of one 1000-byte record.
    for (size_t at : {size_t(0), size_t(1), size_t(3), size_t(4), size_t(20),
                      wire_size(1000) - 1}) {
        SCOPED_TRACE("flipped byte " + std::to_string(at));
        Tapped tp;
        ASSERT_TRUE(tp.hs.cst.ok() && tp.hs.sst.ok()) << tp.hs.cst.message();
        tp.mitm.arm(Mitm::Act::flip, at);
        std::vector<uint8_t> data(1000, 'x'), got(4096);
        write_all(*tp.hs.c, tp.cfd.get(), data.data(), data.size());
        int err = 0;
        EXPECT_EQ(recv_wait(*tp.hs.s, tp.sfd.get(), got.data(), got.size(), &err), -1);
        EXPECT_EQ(err, EBADMSG) << strerror(err);
        EXPECT_NE(tp.hs.s->error(), "");
        std::printf("byte %zu flipped: %s\n", at, tp.hs.s->error().c_str());
        // Final: the same answer again, and nothing pending.
        errno = 0;
        EXPECT_EQ(tp.hs.s->recv(got.data(), got.size()), -1);
        EXPECT_EQ(errno, EBADMSG);
        EXPECT_FALSE(tp.hs.s->pending());
    }
}

TEST(Tls, TruncationIsAnErrorOnlyCloseNotifyEnds) {
    std::vector<uint8_t> data(1000, 'y'), got(4096);
    int err = 0;
    {
        SCOPED_TRACE("cut inside a record");
        Tapped tp;
        ASSERT_TRUE(tp.hs.cst.ok() && tp.hs.sst.ok());
        tp.mitm.arm(Mitm::Act::cut, 500);
        write_all(*tp.hs.c, tp.cfd.get(), data.data(), data.size());
        EXPECT_EQ(recv_wait(*tp.hs.s, tp.sfd.get(), got.data(), got.size(), &err), -1);
        EXPECT_EQ(err, EPIPE) << strerror(err);
        EXPECT_NE(tp.hs.s->error(), "");
    }
    {
        SCOPED_TRACE("cut at a record boundary");
        Tapped tp;
        ASSERT_TRUE(tp.hs.cst.ok() && tp.hs.sst.ok());
        tp.mitm.arm(Mitm::Act::cut, wire_size(1000));
        write_all(*tp.hs.c, tp.cfd.get(), data.data(), data.size());
        EXPECT_EQ(recv_wait(*tp.hs.s, tp.sfd.get(), got.data(), got.size(), &err), 1000);
        EXPECT_EQ(recv_wait(*tp.hs.s, tp.sfd.get(), got.data(), got.size(), &err), -1);
        EXPECT_EQ(err, EPIPE) << strerror(err);
    }
    {
        SCOPED_TRACE("reset");
        Conn c = tcp_pair();
        Hs h = handshake_both(c.cfd.get(), c.sfd.get(), key(1), key(1));
        ASSERT_TRUE(h.cst.ok() && h.sst.ok());
        linger lg{1, 0};
        ASSERT_EQ(setsockopt(c.cfd.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
        c.cfd.reset();  // RST
        EXPECT_EQ(recv_wait(*h.s, c.sfd.get(), got.data(), got.size(), &err), -1);
        EXPECT_EQ(err, ECONNRESET) << strerror(err);
    }
    {
        SCOPED_TRACE("orderly shutdown");
        Conn c = tcp_pair();
        Hs h = handshake_both(c.cfd.get(), c.sfd.get(), key(1), key(1));
        ASSERT_TRUE(h.cst.ok() && h.sst.ok());
        write_all(*h.c, c.cfd.get(), data.data(), data.size());
        h.c->shutdown();
        flush_all(*h.c, c.cfd.get());
        errno = 0;
        EXPECT_EQ(h.c->writev(nullptr, 0), -1);
        EXPECT_EQ(errno, EPIPE);
        EXPECT_EQ(recv_wait(*h.s, c.sfd.get(), got.data(), got.size(), &err), 1000);
        EXPECT_EQ(recv_wait(*h.s, c.sfd.get(), got.data(), got.size(), &err), 0);
        EXPECT_EQ(h.s->recv(got.data(), got.size()), 0);
        EXPECT_FALSE(h.s->pending());
        // The other direction still works (TLS 1.3 half-close), and ends the same way.
        write_all(*h.s, c.sfd.get(), data.data(), 10);
        h.s->shutdown();
        flush_all(*h.s, c.sfd.get());
        EXPECT_EQ(recv_wait(*h.c, c.cfd.get(), got.data(), got.size(), &err), 10);
        EXPECT_EQ(recv_wait(*h.c, c.cfd.get(), got.data(), got.size(), &err), 0);
    }
}

TEST(Tls, NonTlsPeersFailTheHandshake) {
    std::vector<std::pair<std::string, std::vector<uint8_t>>> cases;
    std::mt19937 rng(7);
    std::vector<uint8_t> rnd(1000);
    for (auto& b : rnd) b = uint8_t(rng());
    cases.emplace_back("random bytes", rnd);
    std::string http = "GET / HTTP/1.1\r\nHost: example.org\r\n\r\n";
    cases.emplace_back("HTTP request", std::vector<uint8_t>(http.begin(), http.end()));
    // An IMPI host-to-host PK_DATA packet: 128-byte big-endian header (type 0, pk_len 16,
    // source host ::127.0.0.1, pid 4242), then 16 bytes of payload.
    std::vector<uint8_t> impi(128 + 16, 0);
    impi[7] = 16;
    impi[8 + 12] = 127;
    impi[8 + 15] = 1;
    impi[8 + 16 + 6] = 0x10;
    impi[8 + 16 + 7] = 0x92;
    cases.emplace_back("IMPI packet", impi);

    for (bool tls_client : {false, true}) {
        for (auto& [name, bytes] : cases) {
            SCOPED_TRACE(name + (tls_client ? " to a client" : " to a server"));
            Conn c = tcp_pair();
            base::Fd& mine = tls_client ? c.cfd : c.sfd;
            base::Fd& raw = tls_client ? c.sfd : c.cfd;
            std::thread peer([&, b = bytes] {
                std::vector<uint8_t> sink(4096);
                pollfd p{raw.get(), POLLIN, 0};
                if (tls_client) ::poll(&p, 1, 2000);  // let the ClientHello come first
                base::write_full(raw.get(), b.data(), b.size());
                ::shutdown(raw.get(), SHUT_WR);
                while (::poll(&p, 1, 5000) > 0 && ::recv(raw.get(), sink.data(), 4096, 0) > 0) {}
            });
            std::unique_ptr<Tls> t;
            auto t0 = Clock::now();
            base::Status st = Tls::handshake(mine.get(), tls_client, key(1).b, 2000, &t);
            double secs = secs_since(t0);
            mine.reset();
            peer.join();
            EXPECT_FALSE(st.ok());
            EXPECT_TRUE(st.code() == Errc::proto_error || st.code() == Errc::link_failed)
                << st.message();
            EXPECT_LT(secs, 2.5);
            std::printf("%s to a %s: %s\n", name.c_str(), tls_client ? "client" : "server",
                        st.message().c_str());
        }
    }
}

TEST(Tls, FuzzedRecordStreamsFailCleanly) {
    // After a good handshake the server's peer stream is replaced by crafted or random bytes
    // (then EOF). Nothing may come out as data or as an orderly end: -1 with EBADMSG (not TLS,
    // or not under our key) or EPIPE (an unfinished record at EOF).
    std::vector<std::vector<uint8_t>> cases = {
        {0x15, 0x03, 0x03, 0x00, 0x02, 0x01, 0x00},        // plaintext close_notify alert
        {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28},        // plaintext fatal alert
        {0x14, 0x03, 0x03, 0x00, 0x01, 0x01},              // ChangeCipherSpec after handshake
        {0x16, 0x03, 0x03, 0x00, 0x04, 0x18, 0, 0, 0x01},  // plaintext KeyUpdate
        {0x17, 0x03, 0x03, 0x00, 0x00},                    // empty application data
        {0x17, 0x03, 0x03, 0x41, 0x01},                    // longer than any record
        {0x17, 0x03, 0x03, 0x00, 0x10},                    // shorter than a tag, then EOF
    };
    cases.push_back({0x17, 0x03, 0x03, 0x00, 0x11});  // a zero tag over an empty body
    cases.back().resize(5 + 17, 0);
    std::mt19937 rng(20240613);
    while (cases.size() < 250) {
        std::vector<uint8_t> b(1 + rng() % 2000);
        for (auto& x : b) x = uint8_t(rng());
        switch (rng() % 3) {
        case 0: break;  // raw bytes
        case 1:         // one record header with a length that matches the body
            b.insert(b.begin(), {0x17, 0x03, 0x03, uint8_t(b.size() >> 8), uint8_t(b.size())});
            break;
        default:  // a valid-looking record of another type
            b.insert(b.begin(), {uint8_t(20 + rng() % 5), 0x03, 0x03, uint8_t(b.size() >> 8),
                                 uint8_t(b.size())});
        }
        cases.push_back(std::move(b));
    }
    auto t0 = Clock::now();
    int badmsg = 0, epipe = 0;
    std::vector<uint8_t> got(64 << 10);
    for (size_t i = 0; i < cases.size(); ++i) {
        SCOPED_TRACE("case " + std::to_string(i));
        Conn c = tcp_pair();
        Hs h = handshake_both(c.cfd.get(), c.sfd.get(), key(3), key(3));
        ASSERT_TRUE(h.cst.ok() && h.sst.ok());
        ASSERT_EQ(::send(c.cfd.get(), cases[i].data(), cases[i].size(), MSG_NOSIGNAL),
                  ssize_t(cases[i].size()));
        ::shutdown(c.cfd.get(), SHUT_WR);
        int err = 0;
        ssize_t r = recv_wait(*h.s, c.sfd.get(), got.data(), got.size(), &err);
        ASSERT_EQ(r, -1) << "err " << strerror(err);
        ASSERT_TRUE(err == EBADMSG || err == EPIPE) << strerror(err);
        (err == EBADMSG ? badmsg : epipe)++;
    }
    std::printf("%zu cases: %d EBADMSG, %d EPIPE, %.2f s\n", cases.size(), badmsg, epipe,
                secs_since(t0));
}

TEST(Tls, KtlsProbe) {
    // This machine's kernel has CONFIG_TLS unset; the probe must simply answer, twice alike.
    bool k = Tls::ktls_available();
    EXPECT_EQ(Tls::ktls_available(), k);
    std::printf("kTLS available: %s\n", k ? "yes" : "no");
}

namespace {
struct Cost {
    double mbps, cpu_per_gb;
};
double cpu_secs() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
// One direction, writer and reader threads in this process: CPU time is both ends' encryption
// and decryption plus the kernel's loopback TCP.
Cost measure(size_t total, bool tls) {
    Conn c = tcp_pair();
    Hs h;
    if (tls) {
        h = handshake_both(c.cfd.get(), c.sfd.get(), key(4), key(4));
        EXPECT_TRUE(h.cst.ok() && h.sst.ok());
        if (!h.c || !h.s) return {0, 0};
    } else {
        base::set_nonblock(c.cfd.get(), true);
        base::set_nonblock(c.sfd.get(), true);
    }
    std::vector<uint8_t> src(1 << 20);
    fill(6, 0, src.data(), src.size());
    double cpu0 = cpu_secs();
    auto t0 = Clock::now();
    std::thread reader([&] {
        std::vector<uint8_t> buf(256 << 10);
        size_t got = 0;
        while (got < total) {
            ssize_t r = tls ? h.s->recv(buf.data(), buf.size())
                            : ::recv(c.sfd.get(), buf.data(), buf.size(), 0);
            if (r > 0) {
                got += size_t(r);
            } else if (r < 0 && errno == EAGAIN) {
                pollfd p{c.sfd.get(), POLLIN, 0};
                ::poll(&p, 1, 1000);
            } else {
                ADD_FAILURE() << "recv " << r << " " << strerror(errno);
                return;
            }
        }
    });
    size_t sent = 0;
    while (sent < total) {
        size_t off = sent % src.size();
        iovec iov{src.data() + off, std::min(src.size() - off, total - sent)};
        ssize_t r = tls ? h.c->writev(&iov, 1) : ::writev(c.cfd.get(), &iov, 1);
        if (r > 0) {
            sent += size_t(r);
        } else if (r < 0 && errno == EAGAIN) {
            pollfd p{c.cfd.get(), POLLOUT, 0};
            ::poll(&p, 1, 1000);
        } else {
            ADD_FAILURE() << "writev " << strerror(errno);
            break;
        }
    }
    if (tls) flush_all(*h.c, c.cfd.get());
    reader.join();
    double secs = secs_since(t0), cpu = cpu_secs() - cpu0;
    return {double(total) / 1e6 / secs, cpu / (double(total) / 1e9)};
}
}  // namespace

TEST(Tls, LoopbackThroughput) {
    const size_t total = size_t(256) << 20;
    Cost tls = measure(total, true);
    Cost tcp = measure(total, false);
    std::printf("tls loopback: %.0f MB/s, %.2f CPU-s/GB\n", tls.mbps, tls.cpu_per_gb);
    std::printf("tcp loopback (no TLS, for comparison): %.0f MB/s, %.2f CPU-s/GB\n", tcp.mbps,
                tcp.cpu_per_gb);
}
