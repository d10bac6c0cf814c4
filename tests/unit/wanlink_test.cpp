// src/wanlink: the TCP settings of inter-cluster sockets.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <sys/stat.h>
#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "base/socket.hpp"
#include "wanlink/handshake.hpp"
#include "wanlink/pacer.hpp"
#include "wanlink/replay.hpp"
#include "wanlink/secret.hpp"
#include "wanlink/sockopt.hpp"
#include "wanlink/stall.hpp"
#include "wanlink/tcp_stats.hpp"
#include "wanlink/tcp_tune.hpp"

using namespace wanmpi;

namespace {
struct Sock {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ~Sock() { ::close(fd); }
};
// Whether this kernel has TCP_RTO_MIN_US (Linux >= 6.15).
bool kernel_has_rto_min() {
    Sock s;
    int v = 0;
    socklen_t l = sizeof v;
    return getsockopt(s.fd, IPPROTO_TCP, TCP_RTO_MIN_US, &v, &l) == 0;
}
// A listening socket on a free loopback port (its address in *a); -1 on failure.
int loopback_listener(int backlog, sockaddr_in* a) {
    int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    *a = sockaddr_in{};
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof *a;
    if (bind(l, reinterpret_cast<sockaddr*>(a), sizeof *a) != 0 || listen(l, backlog) != 0 ||
        getsockname(l, reinterpret_cast<sockaddr*>(a), &al) != 0) {
        ::close(l);
        return -1;
    }
    return l;
}
// A TCP connection over loopback: c (the connecting end) and srv (the accepted one).
struct Loopback {
    Sock c;
    int l = -1, srv = -1;
    void open() {
        sockaddr_in a;
        l = loopback_listener(1, &a);
        ASSERT_GE(l, 0);
        ASSERT_EQ(connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        srv = accept(l, nullptr, nullptr);
        ASSERT_GE(srv, 0);
    }
    ~Loopback() {
        if (srv >= 0) ::close(srv);
        if (l >= 0) ::close(l);
    }
};
}  // namespace

// ---- the stall watch (wanlink/stall.hpp) ---------------------------------------------------------
TEST(WanlinkStall, StalledOnlyWithDataOutAndQuietLongEnough) {
    wanlink::TcpInfo t;
    t.ok = true;
    t.rtt_us = 20000;
    t.unacked = 5;
    t.last_ack_ms = 600;
    t.last_send_ms = 700;
    EXPECT_TRUE(wanlink::is_stalled(t, 500));
    EXPECT_FALSE(wanlink::is_stalled(t, 0));    // off
    EXPECT_FALSE(wanlink::is_stalled(t, 650));  // an ACK 600 ms ago
    t.last_send_ms = 100;                       // new data went out 100 ms ago
    EXPECT_FALSE(wanlink::is_stalled(t, 500));
    t.last_send_ms = 700;
    t.unacked = 0;                              // everything acknowledged: idle, not stalled
    EXPECT_FALSE(wanlink::is_stalled(t, 500));
    t.unacked = 5;
    t.rtt_us = 300000;                          // a 300 ms path: at least 3 RTTs
    EXPECT_FALSE(wanlink::is_stalled(t, 500));
    t.last_ack_ms = t.last_send_ms = 900;
    EXPECT_TRUE(wanlink::is_stalled(t, 500));
    t.ok = false;                               // a closed socket
    EXPECT_FALSE(wanlink::is_stalled(t, 500));
}

TEST(WanlinkStall, ProbeTellsAPathBackFromAPathUp) {
    // Polls until the probe says something other than `waiting`, or `ms` passed.
    auto poll_for = [](wanlink::PathProbe& p, const sockaddr_in& to, int64_t ms) {
        for (int64_t i = 0; i < ms; ++i) {
            timespec ts{};
            clock_gettime(CLOCK_MONOTONIC, &ts);
            auto r = p.poll(to, int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec);
            if (r != wanlink::PathProbe::waiting) return r;
            usleep(1000);
        }
        return wanlink::PathProbe::waiting;
    };
    sockaddr_in a;
    int l = loopback_listener(4, &a);
    ASSERT_GE(l, 0);
    wanlink::PathProbe p;
    EXPECT_EQ(poll_for(p, a, 2000), wanlink::PathProbe::up);  // answered at once: connected
    ::close(l);
    EXPECT_EQ(poll_for(p, a, 2000), wanlink::PathProbe::up);  // a refusal is an answer too
    // A path that does not answer: a listener whose accept queue is full drops every SYN, as
    // a link in an outage does (no address is sure to be unreachable on every machine).
    sockaddr_in b;
    int full = loopback_listener(0, &b);
    ASSERT_GE(full, 0);
    std::vector<int> fillers;
    for (int i = 0; i < 3; ++i) {
        int f = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        (void)::connect(f, reinterpret_cast<sockaddr*>(&b), sizeof b);
        fillers.push_back(f);
    }
    usleep(20000);
    EXPECT_EQ(poll_for(p, b, 500), wanlink::PathProbe::waiting);  // fresh SYNs, all dropped
    // The outage ends: room in the queue again. The next fresh SYN is answered, after
    // probes that were not: the path is back.
    for (int f : fillers) ::close(f);
    base::set_nonblock(full, true);
    while (true) {
        int c = accept(full, nullptr, nullptr);
        if (c < 0) break;
        ::close(c);
    }
    EXPECT_EQ(poll_for(p, b, 2000), wanlink::PathProbe::back);
    ::close(full);
}

TEST(WanlinkTcp, ZeroLeavesTheKernelDefault) {
    Sock s;
    wanlink::TcpTuning t;
    t.rto_min_us = 0;
    EXPECT_EQ(wanlink::tune_socket(s.fd, t), "");
    if (kernel_has_rto_min()) {
        int v = 0;
        socklen_t l = sizeof v;
        ASSERT_EQ(getsockopt(s.fd, IPPROTO_TCP, TCP_RTO_MIN_US, &v, &l), 0);
        EXPECT_EQ(v, 200000);  // Linux's TCP_RTO_MIN
    }
}

TEST(WanlinkTcp, RtoFloorIsAppliedOrSaysWhyNot) {
    Sock s;
    wanlink::TcpTuning t;
    t.rto_min_us = 10000;
    std::string err = wanlink::tune_socket(s.fd, t);
    if (!kernel_has_rto_min()) {
        EXPECT_NE(err.find("TCP_RTO_MIN_US"), std::string::npos) << err;
        return;
    }
    EXPECT_EQ(err, "");
    int v = 0;
    socklen_t l = sizeof v;
    ASSERT_EQ(getsockopt(s.fd, IPPROTO_TCP, TCP_RTO_MIN_US, &v, &l), 0);
    // The kernel keeps jiffies: 10 ms comes back rounded up to its tick (12 ms at 250 Hz).
    EXPECT_GE(v, 10000);
    EXPECT_LT(v, 20000);
}

TEST(WanlinkTcp, BadValuesAreReportedNotFatal) {
    Sock s;
    wanlink::TcpTuning t;
    t.rto_min_us = 1;  // below one tick: the kernel refuses it
    std::string err = wanlink::tune_socket(s.fd, t);
    EXPECT_NE(err.find("TCP_RTO_MIN_US"), std::string::npos) << err;
    wanlink::TcpTuning bad;
    bad.rto_min_us = 10000;
    EXPECT_EQ(wanlink::tune_socket(-1, bad).empty(), false);
}

TEST(WanlinkTcp, CongestionControlRtoMaxAndDelack) {
    Sock s;
    wanlink::TcpTuning t;
    t.cc = "reno";  // in every kernel's allowed list
    t.rto_max_ms = 1000;
    t.delack_us = 5000;
    std::string err = wanlink::tune_socket(s.fd, t);
    EXPECT_EQ(wanlink::socket_cc(s.fd), "reno");
    int v = 0;
    socklen_t l = sizeof v;
    if (getsockopt(s.fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &v, &l) == 0) EXPECT_EQ(v, 1000);
    else EXPECT_NE(err.find("TCP_RTO_MAX_MS"), std::string::npos) << err;
    t = {};
    t.cc = "no-such-cc";
    EXPECT_NE(wanlink::tune_socket(s.fd, t).find("TCP_CONGESTION no-such-cc"), std::string::npos);
    EXPECT_EQ(wanlink::socket_cc(s.fd), "reno");  // unchanged
}

TEST(WanlinkPacing, SocketCapIsReadBack) {
    Sock s;
    ASSERT_EQ(wanlink::set_socket_pacing(s.fd, 3125000), 0);
    EXPECT_EQ(wanlink::socket_pacing(s.fd), 3125000u);
    ASSERT_EQ(wanlink::set_socket_pacing(s.fd, 0), 0);
    EXPECT_EQ(wanlink::socket_pacing(s.fd), ~uint64_t(0));
    // Shared by 4 flows at the payload share.
    EXPECT_EQ(wanlink::Pacer::socket_cap(12500000, 4),
              uint64_t(wanlink::Pacer::kPayloadShare * 12500000) / 4);
    EXPECT_EQ(wanlink::Pacer::socket_cap(0, 4), 0u);
}

TEST(WanlinkPacing, BucketHoldsTheRate) {
    wanlink::Pacer p;
    EXPECT_EQ(p.allow(1 << 20, 0), size_t(1) << 20);  // unlimited
    const int64_t s = 1000000000;
    p.set_rate(10000000, 0);  // 10 MB/s -> 9.3 MB/s of payload
    const double share = wanlink::Pacer::kPayloadShare * 1e7;
    EXPECT_EQ(p.allow(1000, 0), 0u);  // a new rate starts empty
    EXPECT_GT(p.wait_ns(1000, 0), 0);
    // Over one simulated second, writing whatever is allowed every 100 us: the share +- 1 %.
    uint64_t sent = 0;
    for (int64_t t = 0; t <= s; t += 100000) {
        size_t n = p.allow(1 << 20, t);
        p.consume(n);
        sent += n;
    }
    EXPECT_NEAR(double(sent), share, 0.01 * share);
    // Idle time does not pile up beyond the bucket's depth.
    size_t burst = p.allow(100 << 20, 10 * s);
    EXPECT_EQ(burst, p.depth());
    EXPECT_EQ(p.depth(), std::max<size_t>(65536, size_t(share * 0.005)));
}

// Work-conserving shares (rate-managed Alltoallv/w): in proportion to the volumes, summing to 1,
// with a floor for a sender that has almost nothing to send; equal shares would fail each line.
TEST(WanlinkPacing, VolumeSharesFollowTheBytes) {
    const int64_t two[] = {1 << 20, 3 << 20};
    EXPECT_DOUBLE_EQ(wanlink::volume_share(two, 2, 0).share, 0.25);
    EXPECT_DOUBLE_EQ(wanlink::volume_share(two, 2, 1).share, 0.75);
    EXPECT_EQ(wanlink::volume_share(two, 2, 1).senders, 2);
    EXPECT_EQ(wanlink::volume_share(two, 2, 1).index, 1);
    // A rank that sends nothing across is no sender and gets nothing; the others share.
    const int64_t four[] = {100, 300, 0, 400};
    EXPECT_DOUBLE_EQ(wanlink::volume_share(four, 4, 0).share, 0.125);
    EXPECT_DOUBLE_EQ(wanlink::volume_share(four, 4, 3).share, 0.5);
    EXPECT_EQ(wanlink::volume_share(four, 4, 3).senders, 3);
    EXPECT_EQ(wanlink::volume_share(four, 4, 3).index, 2);
    EXPECT_EQ(wanlink::volume_share(four, 4, 2).share, 0.0);
    EXPECT_EQ(wanlink::volume_share(four, 4, 2).senders, 0);
    // The floor: a quarter of an equal share, renormalized so that the shares still sum to 1.
    const int64_t tiny[] = {1, 999};
    const double floor = 1000.0 / 8, sum = floor + 999;
    EXPECT_DOUBLE_EQ(wanlink::volume_share(tiny, 2, 0).share, floor / sum);
    EXPECT_DOUBLE_EQ(wanlink::volume_share(tiny, 2, 1).share, 999 / sum);
    const int64_t odd[] = {7, 1, 250, 3, 90, 0, 41};
    double total = 0;
    for (size_t i = 0; i < 7; ++i) total += wanlink::volume_share(odd, 7, i).share;
    EXPECT_NEAR(total, 1.0, 1e-12);
    // Equal volumes: equal shares; one sender: the whole link.
    const int64_t eq[] = {5, 5, 5};
    EXPECT_DOUBLE_EQ(wanlink::volume_share(eq, 3, 1).share, 1.0 / 3);
    EXPECT_DOUBLE_EQ(wanlink::volume_share(eq, 1, 0).share, 1.0);
}

// The per-pattern restore leaves a connection alone whose slow-start threshold is still
// unbounded (no loss yet), and never changes its congestion control.
TEST(WanlinkTcp, RestoreWindowKeepsTheAlgorithm) {
    Loopback lb;
    lb.open();
    const std::string cc = wanlink::socket_cc(lb.c.fd);
    ASSERT_FALSE(cc.empty());
    EXPECT_FALSE(wanlink::restore_window(lb.c.fd));
    EXPECT_EQ(wanlink::socket_cc(lb.c.fd), cc);
    EXPECT_FALSE(wanlink::restore_window(-1));
}

TEST(WanlinkStats, TcpInfoOfALiveConnection) {
    Loopback lb;
    ASSERT_NO_FATAL_FAILURE(lb.open());
    Sock& c = lb.c;
    const int srv = lb.srv;
    char buf[4096] = {};
    ASSERT_EQ(write(c.fd, buf, sizeof buf), ssize_t(sizeof buf));
    ASSERT_EQ(recv(srv, buf, sizeof buf, MSG_WAITALL), ssize_t(sizeof buf));
    wanlink::set_socket_pacing(c.fd, 1000000);
    wanlink::TcpInfo ti = wanlink::read_tcp_info(c.fd);
    EXPECT_TRUE(ti.ok);
    EXPECT_EQ(ti.max_pacing_Bps, 1000000u);
    EXPECT_GT(ti.rtt_us, 0u);
    EXPECT_GT(ti.cwnd, 0u);
    EXPECT_EQ(ti.retrans, 0u);
    struct utsname u;
    uname(&u);
    int major = 0, minor = 0;
    std::sscanf(u.release, "%d.%d", &major, &minor);
    EXPECT_EQ(ti.has_rtos, major > 6 || (major == 6 && minor >= 7)) << u.release;
    if (ti.has_rtos) {
        EXPECT_EQ(ti.rtos, 0u);
    }
    EXPECT_FALSE(wanlink::read_tcp_info(-1).ok);
}

// Issue 14: TCP_NOTSENT_LOWAT (auto: ~2 ms at the window rate, 64 KiB..8 MiB), set and read back
// on a live connection, whose window socket_window reports.
TEST(WanlinkTcp, NotsentLowatAutoAndApplied) {
    EXPECT_EQ(wanlink::auto_notsent_lowat(0, 0), 64 << 10);
    EXPECT_EQ(wanlink::auto_notsent_lowat(14480, 20000), 64 << 10);        // 10 segments, 20 ms
    EXPECT_EQ(wanlink::auto_notsent_lowat(25000000, 20000), 2500000);      // 10 Gbit/s x 20 ms
    EXPECT_EQ(wanlink::auto_notsent_lowat(uint64_t(1) << 36, 1000), 8 << 20);
    Loopback lb;
    ASSERT_NO_FATAL_FAILURE(lb.open());
    Sock& c = lb.c;
    uint64_t win = 0;
    uint32_t srtt = 0;
    EXPECT_TRUE(wanlink::socket_window(c.fd, &win, &srtt));
    EXPECT_GT(win, 0u);
    EXPECT_GT(srtt, 0u);
    EXPECT_EQ(wanlink::set_notsent_lowat(c.fd, 65536), 0);
    int v = 0;
    socklen_t vl = sizeof v;
    ASSERT_EQ(getsockopt(c.fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, &vl), 0);
    EXPECT_EQ(v, 65536);
    EXPECT_NE(wanlink::set_notsent_lowat(-1, 65536), 0);
    EXPECT_FALSE(wanlink::socket_window(-1, &win, &srtt));
}

// WANMPI_WAN_TWICE=auto's loss signal (core/wan.cpp Wan::lossy). The spurious case is what every
// job on a lossless emulated link showed: a tail-loss probe after a delayed ACK, reported back
// as a duplicate one round trip later (nstat: TCPLossProbes = TCPDSACKRecv); the old rule (any
// retransmission) took it for loss and sent every small message twice (wan.lanes_twice_spurious).
TEST(WanlinkStats, LossWatchCountsOnlyRetransmissionsNotReportedAsDuplicates) {
    // Each step: the sums of tcpi_total_retrans and tcpi_dsack_dups at a check, whether the
    // losses grew, and the losses after it.
    struct Step {
        uint64_t retrans, dsacks;
        bool grew;
        uint64_t losses;
        const char* what;
    };
    const Step steps[] = {
        {0, 0, false, 0, "start"},
        {1, 0, false, 0, "a probe goes out"},
        {1, 1, false, 0, "its D-SACK came before the next check: never a loss"},
        {1, 1, false, 0, "quiet"},
        {2, 2, false, 0, "a probe and its D-SACK between two checks"},
        {3, 2, false, 0, "a lost segment resent: no D-SACK will come"},
        {3, 2, true, 1, "seen one check later"},
        {3, 2, false, 1, "quiet"},
        {6, 2, false, 1, "two more losses, and a probe whose D-SACK is on its way"},
        {6, 3, true, 3, "the probe's D-SACK came: two losses"},
        {6, 3, false, 3, "quiet"},
        {1, 0, false, 1, "a connection replaced: the sums drop, a new baseline"},
        {1, 0, false, 1, "quiet"},
        {2, 0, false, 1, "a loss on the new connection"},
        {2, 0, true, 2, "still counted"},
    };
    wanlink::LossWatch w;
    for (const Step& s : steps) {
        EXPECT_EQ(w.update(s.retrans, s.dsacks), s.grew) << s.what;
        EXPECT_EQ(w.losses(), s.losses) << s.what;
    }
}

TEST(WanlinkStats, CsvRoundTrip) {
    wanlink::LinkStat s;
    s.rank = 3;
    s.peer_rank = 7;
    s.peer_cluster = 1;
    s.host = "10.0.0.1";
    s.peer_host = "10.0.1,2";  // a comma must not break the row
    s.cc = "cubic";
    s.c = {100, 200, 3, 4, 50, 10, 60, 12, 7, 3, 1, 4096};
    s.tcp.retrans = 5;
    s.tcp.rtos = 2;
    s.tcp.has_rtos = true;
    s.tcp.rtt_us = 20000;
    s.tcp.delivery_Bps = 1000;
    s.tcp.max_pacing_Bps = 3000;
    s.lane = 2;
    const std::string row = wanlink::csv_row(s);
    EXPECT_EQ(row,
              "3,10.0.0.1,7,10.0.1_2,1,cubic,100,200,3,4,5,2,20000,8000,24000,50,10,60,12,2,7,3,"
              "1,4096");
    wanlink::LinkStat back;
    ASSERT_TRUE(wanlink::parse_csv_row(row, &back));
    EXPECT_EQ(back.peer_rank, 7);
    EXPECT_EQ(back.c.bytes_recv, 200u);
    EXPECT_EQ(back.tcp.rtos, 2u);
    EXPECT_EQ(back.tcp.max_pacing_Bps, 3000u);
    EXPECT_EQ(back.c.z_sent, 10u);
    EXPECT_EQ(back.c.z_recv, 12u);
    EXPECT_EQ(back.lane, 2);
    EXPECT_EQ(back.c.twice_sent, 7u);
    EXPECT_EQ(back.c.twice_dropped, 3u);
    EXPECT_EQ(back.c.reconnects, 1u);
    EXPECT_EQ(back.c.resent_bytes, 4096u);
    s.tcp.has_rtos = false;  // an old kernel: the field is empty
    ASSERT_TRUE(wanlink::parse_csv_row(wanlink::csv_row(s), &back));
    EXPECT_FALSE(back.tcp.has_rtos);
    EXPECT_FALSE(wanlink::parse_csv_row("1,2,3", &back));
    EXPECT_FALSE(wanlink::parse_csv_row("x,h,1,h,1,c,1,1,1,1,1,1,1,1,1,1,1,1,1,0,0,0,0,0", &back));
    EXPECT_FALSE(wanlink::parse_csv_row("1,h,1,h,1,c,1,1,1,1,1,1,1,1,1,1,1,1,1,0,0,0", &back));  // before reconnects
    EXPECT_FALSE(wanlink::parse_csv_row("1,h,1,h,1,c,1,1,1,1,1,1,1,1,1,1,1,1,1,0", &back));  // before twice
    EXPECT_FALSE(wanlink::parse_csv_row("1,h,1,h,1,c,1,1,1,1,1,1,1,1,1,1,1,1,1", &back));  // before lanes
    EXPECT_FALSE(wanlink::parse_csv_row("1,h,1,h,1,c,1,1,1,1,1,1,1,1,1", &back));  // before zstd
    const std::string hdr = wanlink::csv_header();
    EXPECT_EQ(std::count(hdr.begin(), hdr.end(), ','), 23);
}

// ---- issue 13: the job secret, the link handshake, the resumable stream ---------------------------
namespace {
std::string temp_secret(const std::string& text, mode_t mode) {
    char path[] = "/tmp/wanlink_secret.XXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
    fchmod(fd, mode);
    close(fd);
    return path;
}
// Runs both sides of a link handshake over a socketpair until both are done or one failed.
struct Pair {
    int fd[2];
    Pair() { socketpair(AF_UNIX, SOCK_STREAM, 0, fd); }
    ~Pair() { close(fd[0]); close(fd[1]); }
};
void drive(wanlink::LinkHandshake& c, wanlink::LinkHandshake& a, int cfd, int afd,
           wanlink::LinkHandshake::Result* rc, wanlink::LinkHandshake::Result* ra) {
    *rc = *ra = wanlink::LinkHandshake::again;
    for (int i = 0; i < 20; ++i) {
        if (*rc == wanlink::LinkHandshake::again) *rc = c.step(cfd);
        if (*ra == wanlink::LinkHandshake::again) *ra = a.step(afd);
        if (*rc != wanlink::LinkHandshake::again && *ra != wanlink::LinkHandshake::again) return;
    }
}
wanlink::Secret secret_of(const std::string& s) {
    wanlink::Secret x;
    x.bytes.assign(s.begin(), s.end());
    return x;
}
}  // namespace

TEST(WanlinkSecret, FileMustBeOwnerOnlyAndLongEnough) {
    wanlink::Secret s;
    std::string good = temp_secret("0123456789abcdef0123\n", 0600);
    ASSERT_TRUE(wanlink::read_secret_file(good, &s).ok());
    EXPECT_EQ(s.bytes.size(), 20u);  // the trailing newline is not part of it
    std::string open = temp_secret("0123456789abcdef0123", 0644);
    auto st = wanlink::read_secret_file(open, &s);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("too open"), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find("0123456789"), std::string::npos) << "the secret is never echoed";
    std::string group = temp_secret("0123456789abcdef0123", 0640);
    EXPECT_FALSE(wanlink::read_secret_file(group, &s).ok());
    std::string shrt = temp_secret("short\n", 0600);
    st = wanlink::read_secret_file(shrt, &s);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("shorter than 16"), std::string::npos) << st.message();
    EXPECT_FALSE(wanlink::read_secret_file("/nonexistent/secret", &s).ok());
    for (auto& f : {good, open, group, shrt}) unlink(f.c_str());
}

TEST(WanlinkHandshake, HelloRoundTripAndRejects) {
    wanlink::Hello h;
    h.flags = wanlink::kFlagAuth | wanlink::kFlagResume | wanlink::kFlagZstd;
    h.kind = 1;
    h.from = 7;
    h.to = 3;
    h.recv_off = 0x123456789abcull;
    h.epoch = 9;
    h.pay_left = 0x8000123u;
    for (size_t i = 0; i < h.nonce.size(); ++i) h.nonce[i] = uint8_t(i * 3);
    uint8_t b[wanlink::kHello];
    wanlink::encode_hello(h, b);
    wanlink::Hello g;
    ASSERT_EQ(wanlink::decode_hello(b, &g), "");
    EXPECT_EQ(g.flags, h.flags);
    EXPECT_EQ(g.from, 7u);
    EXPECT_EQ(g.to, 3u);
    EXPECT_EQ(g.recv_off, h.recv_off);
    EXPECT_EQ(g.pay_left, h.pay_left);
    EXPECT_EQ(g.epoch, 9u);
    EXPECT_EQ(g.nonce, h.nonce);
    uint8_t bad[wanlink::kHello];
    std::memcpy(bad, b, sizeof b);
    bad[0] = 'X';
    EXPECT_NE(wanlink::decode_hello(bad, &g), "");
    std::memcpy(bad, b, sizeof b);
    bad[5] = 0x80;  // the last flag bit: an impi-relay (FAR with the lanes at the dance)
    ASSERT_EQ(wanlink::decode_hello(bad, &g), "");
    EXPECT_EQ(g.flags, wanlink::kFlagRelay);
    std::memcpy(bad, b, sizeof b);
    bad[4] = 1;  // version 1 (before pay_left): every host and relay of a job runs one release
    EXPECT_NE(wanlink::decode_hello(bad, &g), "");
    bad[4] = 2;  // version 2 (before eager packets sent twice): would deliver a copy twice
    EXPECT_NE(wanlink::decode_hello(bad, &g), "");
    std::memcpy(bad, b, sizeof b);
    bad[7] = 3;  // kind 1: the lane this connection resumes (issue 14)
    ASSERT_EQ(wanlink::decode_hello(bad, &g), "");
    EXPECT_EQ(g.lane, 3u);
    EXPECT_EQ(g.lanes, 0u);
    bad[7] = wanlink::kMaxLanes;  // lanes are 0..15
    EXPECT_NE(wanlink::decode_hello(bad, &g), "");
    bad[6] = 0;  // kind 0: the lanes offered, 1..16
    ASSERT_EQ(wanlink::decode_hello(bad, &g), "");
    EXPECT_EQ(g.lanes, wanlink::kMaxLanes);
    bad[7] = wanlink::kMaxLanes + 1;
    EXPECT_NE(wanlink::decode_hello(bad, &g), "");
    bad[6] = 3;  // no such kind
    bad[7] = 0;
    EXPECT_NE(wanlink::decode_hello(bad, &g), "");
    EXPECT_EQ(wanlink::agreed_lanes(0, 4), 1u);
    EXPECT_EQ(wanlink::agreed_lanes(16, 4), 4u);
    EXPECT_EQ(wanlink::agreed_lanes(3, 8), 3u);
    std::memcpy(bad, b, sizeof b);
    bad[5] |= wanlink::kFlagInner;  // a relay's inner leg
    ASSERT_EQ(wanlink::decode_hello(bad, &g), "");
    EXPECT_TRUE(g.flags & wanlink::kFlagInner);
}

// impi-relay's two legs (impi_relay_data.cpp): the relay accepts host 5's HELLO with a deferred
// answer, connects on to host 2 carrying host 5's stream numbers, and answers host 5 with host
// 2's. Both hosts end up with the other's numbers, each leg with its own proof and TLS key, and
// the inner leg (kFlagInner) without TLS although both hosts ask for it.
TEST(WanlinkHandshake, RelayCarriesStreamNumbersAcrossLegs) {
    uint8_t sess[32] = {7};
    wanlink::Key k = wanlink::link_key(secret_of("the job secret, 24 bytes"), sess);
    const uint8_t want = wanlink::kFlagAuth | wanlink::kFlagTls | wanlink::kFlagResume;
    wanlink::Hello h5, h2, r_acc, r_con;
    h5.from = 5; h5.to = 2; h5.flags = want; h5.kind = 1; h5.recv_off = 1000; h5.pay_left = 17;
    h5.epoch = 3;
    h2.from = 2; h2.to = 5; h2.flags = want; h2.recv_off = 4096; h2.pay_left = 0;
    r_acc.from = 2; r_acc.to = 5; r_acc.flags = wanlink::kFlagInner;  // host 5 is inside
    wanlink::LinkHandshake c5(true, &k, sess, h5, 2);
    wanlink::LinkHandshake racc(false, &k, sess, r_acc, 5, /*defer=*/true);
    Pair leg1, leg2;
    ASSERT_EQ(c5.step(leg1.fd[0]), wanlink::LinkHandshake::again);
    ASSERT_EQ(racc.step(leg1.fd[1]), wanlink::LinkHandshake::ready);
    EXPECT_EQ(racc.peer().recv_off, 1000u);
    EXPECT_EQ(racc.peer().pay_left, 17u);
    EXPECT_EQ(racc.step(leg1.fd[1]), wanlink::LinkHandshake::ready);  // still waiting for answer()
    r_con.from = 5; r_con.to = 2; r_con.kind = 1;
    r_con.flags = uint8_t(racc.peer().flags & wanlink::kEndToEndFlags);
    r_con.recv_off = racc.peer().recv_off;
    r_con.pay_left = racc.peer().pay_left;
    r_con.epoch = racc.peer().epoch;
    wanlink::LinkHandshake rcon(true, &k, sess, r_con, 2), a2(false, &k, sess, h2, 5);
    wanlink::LinkHandshake::Result rr, ra;
    drive(rcon, a2, leg2.fd[0], leg2.fd[1], &rr, &ra);
    ASSERT_EQ(rr, wanlink::LinkHandshake::done) << rcon.reason();
    ASSERT_EQ(ra, wanlink::LinkHandshake::done) << a2.reason();
    EXPECT_EQ(a2.peer().recv_off, 1000u);
    EXPECT_EQ(a2.peer().pay_left, 17u);
    EXPECT_EQ(a2.peer().epoch, 3u);
    EXPECT_TRUE(rcon.tls() && a2.tls());  // the outer leg
    racc.answer(uint8_t(wanlink::kFlagInner | (rcon.peer().flags & wanlink::kEndToEndFlags)),
                rcon.peer().recv_off, rcon.peer().pay_left, rcon.peer().epoch);
    wanlink::LinkHandshake::Result r5;
    drive(c5, racc, leg1.fd[0], leg1.fd[1], &r5, &ra);
    ASSERT_EQ(r5, wanlink::LinkHandshake::done) << c5.reason();
    ASSERT_EQ(ra, wanlink::LinkHandshake::done) << racc.reason();
    EXPECT_EQ(c5.peer().recv_off, 4096u);
    EXPECT_EQ(c5.peer().pay_left, 0u);
    EXPECT_FALSE(c5.tls() || racc.tls());  // the inner leg
    EXPECT_TRUE(c5.resume() && a2.resume());
    EXPECT_NE(c5.tls_psk(), a2.tls_psk());
}

// Lanes through impi-relay at the dance (issue 14): the relay answers before it knows the far
// host's offer, with kFlagRelay, and sends FAR (kind 0) with the count the far host settled on;
// the connector takes that, and FAR's lanes byte is as protected as any HELLO byte.
TEST(WanlinkHandshake, RelayReportsTheLinksLanesInFar) {
    uint8_t sess[32] = {9};
    wanlink::Key k = wanlink::link_key(secret_of("the job secret, 24 bytes"), sess);
    wanlink::Hello hc, ra;
    hc.from = 5; hc.to = 2; hc.lanes = wanlink::kMaxLanes;  // auto towards a relayed host
    ra.from = 2; ra.to = 5; ra.lanes = 8; ra.flags = wanlink::kFlagRelay;  // the relay's cap
    wanlink::LinkHandshake c(true, &k, sess, hc, 2), r(false, &k, sess, ra, 5);
    Pair p;
    wanlink::LinkHandshake::Result rc, rr;
    drive(c, r, p.fd[0], p.fd[1], &rc, &rr);
    ASSERT_EQ(rc, wanlink::LinkHandshake::done) << c.reason();
    ASSERT_EQ(rr, wanlink::LinkHandshake::done) << r.reason();
    EXPECT_TRUE(c.peer().flags & wanlink::kFlagRelay);
    EXPECT_EQ(wanlink::agreed_lanes(c.mine().lanes, c.peer().lanes), 8u);  // so FAR follows
    wanlink::Hello far;
    far.from = 2; far.to = 5; far.kind = 0; far.lanes = 3;  // the far host offered 3
    uint8_t rec[wanlink::kHello + wanlink::kMac];
    r.encode_far(far, rec);
    wanlink::Hello got;
    ASSERT_EQ(c.decode_far(rec, &got), "");
    EXPECT_EQ(got.kind, 0u);
    EXPECT_EQ(got.lanes, 3u);
    rec[7] = 8;  // the lanes byte, altered on the way
    EXPECT_NE(c.decode_far(rec, &got), "");
}

TEST(WanlinkHandshake, MutualProofAndTlsKeyAgree) {
    uint8_t sess[32] = {1, 2, 3};
    wanlink::Key k = wanlink::link_key(secret_of("the job secret, 24 bytes"), sess);
    wanlink::Hello hc, ha;
    hc.from = 5; hc.to = 2; hc.flags = wanlink::kFlagAuth | wanlink::kFlagTls | wanlink::kFlagResume;
    ha.from = 2; ha.to = 5; ha.flags = wanlink::kFlagAuth | wanlink::kFlagResume; ha.recv_off = 77;
    wanlink::LinkHandshake c(true, &k, sess, hc, 2), a(false, &k, sess, ha, 5);
    Pair p;
    wanlink::LinkHandshake::Result rc, ra;
    drive(c, a, p.fd[0], p.fd[1], &rc, &ra);
    ASSERT_EQ(rc, wanlink::LinkHandshake::done) << c.reason();
    ASSERT_EQ(ra, wanlink::LinkHandshake::done) << a.reason();
    EXPECT_TRUE(c.tls() && a.tls());  // the stricter side wins
    EXPECT_TRUE(c.resume() && a.resume());
    EXPECT_EQ(c.peer().recv_off, 77u);
    EXPECT_EQ(c.tls_psk(), a.tls_psk());
}

TEST(WanlinkHandshake, WrongSecretAndStrangersAreRefused) {
    uint8_t sess[32] = {4};
    wanlink::Key k1 = wanlink::link_key(secret_of("the job secret, 24 bytes"), sess);
    wanlink::Key k2 = wanlink::link_key(secret_of("another secret, 24 bytes"), sess);
    wanlink::Hello hc, ha;
    hc.from = 1; hc.to = 0; hc.flags = wanlink::kFlagAuth;
    ha.from = 0; ha.to = 1; ha.flags = wanlink::kFlagAuth;
    {   // different secrets: the connector sees the acceptor's proof fail
        wanlink::LinkHandshake c(true, &k2, sess, hc, 0), a(false, &k1, sess, ha, 1);
        Pair p;
        wanlink::LinkHandshake::Result rc, ra;
        drive(c, a, p.fd[0], p.fd[1], &rc, &ra);
        EXPECT_EQ(rc, wanlink::LinkHandshake::failed);
        EXPECT_TRUE(c.auth_refused());
        EXPECT_NE(c.reason().find("did not prove"), std::string::npos) << c.reason();
    }
    {   // no secret at all against a side that requires auth
        wanlink::Hello h2 = hc;
        h2.flags = 0;
        wanlink::LinkHandshake c(true, nullptr, sess, h2, 0), a(false, &k1, sess, ha, 1);
        Pair p;
        wanlink::LinkHandshake::Result rc, ra;
        drive(c, a, p.fd[0], p.fd[1], &rc, &ra);
        EXPECT_EQ(ra, wanlink::LinkHandshake::failed);
        EXPECT_NE(a.reason().find("has no job secret"), std::string::npos) << a.reason();
    }
    {   // a replayed handshake: yesterday's HELLO_c and MAC_c against a fresh acceptor nonce
        wanlink::LinkHandshake c(true, &k1, sess, hc, 0), a(false, &k1, sess, ha, 1);
        Pair p;
        wanlink::LinkHandshake::Result rc, ra;
        drive(c, a, p.fd[0], p.fd[1], &rc, &ra);
        ASSERT_EQ(ra, wanlink::LinkHandshake::done);
        // Record what the connector sent: re-run it and capture its bytes.
        Pair q;
        wanlink::LinkHandshake c2(true, &k1, sess, hc, 0), a2(false, &k1, sess, ha, 1);
        // capture HELLO_c
        ASSERT_EQ(c2.step(q.fd[0]), wanlink::LinkHandshake::again);
        uint8_t rec[wanlink::kHello + wanlink::kMac];
        ASSERT_EQ(read(q.fd[1], rec, wanlink::kHello), ssize_t(wanlink::kHello));
        // Replay it to a new acceptor with a made-up MAC: refused.
        Pair r;
        wanlink::LinkHandshake a3(false, &k1, sess, ha, 1);
        std::memset(rec + wanlink::kHello, 0x5a, wanlink::kMac);
        ASSERT_EQ(write(r.fd[0], rec, sizeof rec), ssize_t(sizeof rec));
        wanlink::LinkHandshake::Result res = wanlink::LinkHandshake::again;
        for (int i = 0; i < 5 && res == wanlink::LinkHandshake::again; ++i) res = a3.step(r.fd[1]);
        EXPECT_EQ(res, wanlink::LinkHandshake::failed);
        EXPECT_TRUE(a3.auth_refused());
    }
    {   // the wrong host
        wanlink::Hello h3 = hc;
        h3.from = 9;
        wanlink::LinkHandshake c(true, &k1, sess, h3, 0), a(false, &k1, sess, ha, 1);
        Pair p;
        wanlink::LinkHandshake::Result rc, ra;
        drive(c, a, p.fd[0], p.fd[1], &rc, &ra);
        EXPECT_EQ(ra, wanlink::LinkHandshake::failed);
    }
}

// Fuzz target, fixed seed: random and mutated bytes to an acceptor never crash it, never make
// it claim success, and it answers every input with done/again/failed.
TEST(WanlinkHandshake, FuzzAcceptorInput) {
    uint8_t sess[32] = {};
    wanlink::Key k = wanlink::link_key(secret_of("the job secret, 24 bytes"), sess);
    wanlink::Hello ha;
    ha.from = 0; ha.to = 1; ha.flags = wanlink::kFlagAuth;
    wanlink::Hello hc = ha;
    hc.from = 1; hc.to = 0;
    uint8_t valid[wanlink::kHello];
    wanlink::encode_hello(hc, valid);
    std::mt19937 rng(13);
    for (int it = 0; it < 3000; ++it) {
        std::vector<uint8_t> in(wanlink::kHello + wanlink::kMac);
        if (it % 2) {
            std::memcpy(in.data(), valid, wanlink::kHello);
            for (int f = 0; f < 1 + int(rng() % 4); ++f) in[rng() % in.size()] ^= uint8_t(1 + rng() % 255);
        } else {
            for (auto& b : in) b = uint8_t(rng());
        }
        in.resize(rng() % (in.size() + 1));
        Pair p;
        wanlink::LinkHandshake a(false, &k, sess, ha, 1);
        if (!in.empty()) {
            ASSERT_EQ(write(p.fd[0], in.data(), in.size()), ssize_t(in.size()));
        }
        shutdown(p.fd[0], SHUT_WR);
        wanlink::LinkHandshake::Result r = wanlink::LinkHandshake::again;
        for (int i = 0; i < 6 && r == wanlink::LinkHandshake::again; ++i) r = a.step(p.fd[1]);
        EXPECT_EQ(r, wanlink::LinkHandshake::failed) << "iteration " << it;
    }
}

TEST(WanlinkReplay, LogKeepsWhatIsUnconfirmedAndResendsFromAnyOffset) {
    wanlink::SendLog log;
    std::vector<uint8_t> all;
    std::mt19937 rng(3);
    for (int i = 0; i < 300; ++i) {
        std::vector<uint8_t> a(rng() % 20000), b(rng() % 3000);
        for (auto& x : a) x = uint8_t(rng());
        for (auto& x : b) x = uint8_t(rng());
        iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
        size_t take = (a.size() + b.size()) ? rng() % (a.size() + b.size() + 1) : 0;
        log.append(iov, 2, take);
        std::vector<uint8_t> ab(a);
        ab.insert(ab.end(), b.begin(), b.end());
        all.insert(all.end(), ab.begin(), ab.begin() + long(take));
        if (i % 7 == 0) {
            ASSERT_TRUE(log.ack(log.begin() + (log.size() ? rng() % log.size() : 0)));
        }
    }
    ASSERT_EQ(log.end(), all.size());
    EXPECT_FALSE(log.ack(log.end() + 1));       // bytes never sent: refused
    EXPECT_TRUE(log.ack(log.begin() ? log.begin() - 1 : 0));  // an old confirmation: ignored
    for (int t = 0; t < 50; ++t) {
        uint64_t from = log.begin() + (log.size() ? rng() % log.size() : 0);
        std::vector<uint8_t> got;
        iovec iov[8];
        uint64_t at = from;
        while (at < log.end()) {
            int n = log.iov_from(at, iov, 8);
            ASSERT_GT(n, 0);
            for (int i = 0; i < n; ++i) {
                auto* p = static_cast<uint8_t*>(iov[i].iov_base);
                got.insert(got.end(), p, p + iov[i].iov_len);
                at += iov[i].iov_len;
            }
        }
        ASSERT_TRUE(std::equal(got.begin(), got.end(), all.begin() + long(from)));
    }
}
