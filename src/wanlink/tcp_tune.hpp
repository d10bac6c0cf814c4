// The inter-cluster link (DESIGN.md "The inter-cluster link"): everything wanmpi does to the byte
// streams between hosts of different clusters lives in src/wanlink, MPI-agnostic, used by the
// wan route in core and by impi-relay on both of its sides. Lanes, pacing, TLS, replay,
// compression and TCP_INFO statistics belong here as they are built (issues 12-14).
//
// This file: the TCP settings of an inter-cluster socket. Today one: a floor on the
// retransmission timeout (TCP_RTO_MIN_US, Linux >= 6.15). MPI's traffic between clusters is
// bursty (an Alltoall's step fills the bottleneck queue at once); the tail of a burst lost at a
// drop-tail queue is recovered only by a retransmission timeout, and Linux never lets one fire
// before 200 ms. RTO stays srtt + max(4 rttvar, floor), so a long path keeps a long timeout.
// Measured (docs/benchmarks.md, impi-relay trunking, 100 Mbit/s NIC queues): a 10 ms floor made
// the FT-like kernel 1.2x faster through one relay but the IS-like one 1.35x slower (64 flows
// on one 27-packet queue time out spuriously), so the default stays the kernel's until pacing
// (issue 12) keeps such queues from overflowing; the knob is here for the sites that want it.
//
// Threading: the functions are thread-safe; tcp_tuning_from_env() reads the tunables.
#pragma once

#include <cstdint>
#include <string>

namespace wanmpi::wanlink {

struct TcpTuning {
    int64_t rto_min_us = 0;  // 0: the kernel's (route's) default
};
// WANMPI_WAN_RTO_MIN_US.
TcpTuning tcp_tuning_from_env();
// Applies `t` to a TCP socket (before or after connect). Returns "" or what did not take
// ("TCP_RTO_MIN_US: Protocol not available" on a kernel before 6.15): the socket keeps the
// kernel's default then, which is always safe.
std::string tune_socket(int fd, const TcpTuning& t);

}  // namespace wanmpi::wanlink
