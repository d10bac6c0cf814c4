#include "wanlink/tcp_tune.hpp"

#include <cerrno>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "base/log.hpp"
#include "base/tunables.hpp"

// Debian 12's headers predate the option (Linux 6.15, include/uapi/linux/tcp.h).
#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif

namespace wanmpi::wanlink {

static base::Tunable<int64_t> t_rto_min(
    "WAN", "RTO_MIN_US", 0,
    "Floor of the TCP retransmission timeout on connections between clusters (and on both legs "
    "of impi-relay's), in microseconds; 0: the kernel's (route's) default, 200000 on Linux. "
    "Lower, the tail of an MPI burst lost at a full bottleneck queue is resent after about "
    "RTT + this instead of 200 ms; with many flows on a tiny queue it also adds spurious "
    "retransmissions (docs/benchmarks.md, impi-relay trunking). Needs Linux >= 6.15 "
    "(TCP_RTO_MIN_US); older kernels keep their default. The kernel rounds to its tick.",
    base::Level::tuner);

TcpTuning tcp_tuning_from_env() {
    TcpTuning t;
    t.rto_min_us = t_rto_min.get();
    return t;
}

std::string tune_socket(int fd, const TcpTuning& t) {
    if (t.rto_min_us > 0) {
        int v = int(t.rto_min_us > 200000 ? 200000 : t.rto_min_us);
        if (setsockopt(fd, IPPROTO_TCP, TCP_RTO_MIN_US, &v, sizeof v) != 0) {
            int e = errno;
            static bool said = false;  // once per process: every socket would say the same
            if (!said) {
                said = true;
                WANMPI_LOG(info, "TCP_RTO_MIN_US=%d not applied (%s): the kernel's minimum RTO "
                                 "stays", v, base::errno_text(e).c_str());
            }
            return "TCP_RTO_MIN_US: " + base::errno_text(e);
        }
    }
    return "";
}

}  // namespace wanmpi::wanlink
