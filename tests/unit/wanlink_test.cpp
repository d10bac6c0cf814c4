// src/wanlink: the TCP settings of inter-cluster sockets.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "wanlink/tcp_tune.hpp"

#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif

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
    EXPECT_EQ(wanlink::tune_socket(-1, wanlink::TcpTuning{10000}).empty(), false);
}
