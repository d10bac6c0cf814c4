// src/wanlink: the TCP settings of inter-cluster sockets.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "wanlink/pacer.hpp"
#include "wanlink/sockopt.hpp"
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
}  // namespace

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

TEST(WanlinkStats, TcpInfoOfALiveConnection) {
    int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(l, 1), 0);
    ASSERT_EQ(getsockname(l, reinterpret_cast<sockaddr*>(&a), &al), 0);
    Sock c;
    ASSERT_EQ(connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    int srv = accept(l, nullptr, nullptr);
    ASSERT_GE(srv, 0);
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
    if (ti.has_rtos) EXPECT_EQ(ti.rtos, 0u);
    EXPECT_FALSE(wanlink::read_tcp_info(-1).ok);
    ::close(srv);
    ::close(l);
}

TEST(WanlinkStats, CsvRoundTrip) {
    wanlink::LinkStat s;
    s.rank = 3;
    s.peer_rank = 7;
    s.peer_cluster = 1;
    s.host = "10.0.0.1";
    s.peer_host = "10.0.1,2";  // a comma must not break the row
    s.cc = "cubic";
    s.c = {100, 200, 3, 4};
    s.tcp.retrans = 5;
    s.tcp.rtos = 2;
    s.tcp.has_rtos = true;
    s.tcp.rtt_us = 20000;
    s.tcp.delivery_Bps = 1000;
    s.tcp.max_pacing_Bps = 3000;
    const std::string row = wanlink::csv_row(s);
    EXPECT_EQ(row, "3,10.0.0.1,7,10.0.1_2,1,cubic,100,200,3,4,5,2,20000,8000,24000");
    wanlink::LinkStat back;
    ASSERT_TRUE(wanlink::parse_csv_row(row, &back));
    EXPECT_EQ(back.peer_rank, 7);
    EXPECT_EQ(back.c.bytes_recv, 200u);
    EXPECT_EQ(back.tcp.rtos, 2u);
    EXPECT_EQ(back.tcp.max_pacing_Bps, 3000u);
    s.tcp.has_rtos = false;  // an old kernel: the field is empty
    ASSERT_TRUE(wanlink::parse_csv_row(wanlink::csv_row(s), &back));
    EXPECT_FALSE(back.tcp.has_rtos);
    EXPECT_FALSE(wanlink::parse_csv_row("1,2,3", &back));
    EXPECT_FALSE(wanlink::parse_csv_row("x,h,1,h,1,c,1,1,1,1,1,1,1,1,1", &back));
    const std::string hdr = wanlink::csv_header();
    EXPECT_EQ(std::count(hdr.begin(), hdr.end(), ','), 14);
}
