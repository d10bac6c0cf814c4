// The inter-cluster link (DESIGN.md "The inter-cluster link"): everything wanmpi does to the byte
// streams between hosts of different clusters lives in src/wanlink, MPI-agnostic, used by the
// wan route in core and by impi-relay on both of its sides:
//   tcp_tune   - the TCP settings of an inter-cluster socket, and the WAN tunables they come from
//   pacer      - a process's send budget over its WAN sockets (token bucket + kernel pacing)
//   tcp_stats  - TCP_INFO of a socket, read cheaply, and a per-connection counter record
//   stall      - when a connection is stalled after an outage, and the probe of its path
//   secret, handshake, tls, replay - the job secret, the link handshake, TLS, the send log
//   lanes, compress - a link's k connections, and zstd with its filters
//
// This file: the TCP settings. Every knob is its own tunable (docs/tuning.md says when to set
// which); WANMPI_WAN_ADAPT=off turns the adaptive ones (pacing, RTO bounds, delayed ACK) off at
// once for comparisons, while an explicit WANMPI_WAN_CC still applies.
//
// Why each exists (issue 12; numbers in docs/benchmarks.md "Pacing"):
//   rto_min  - the tail of an MPI burst lost at a full bottleneck queue is recovered only by a
//              retransmission timeout, and Linux never fires one before 200 ms. RTO stays
//              srtt + max(4 rttvar, floor), so a long path keeps a long timeout.
//   rto_max  - after an outage TCP backs off exponentially (up to 120 s between probes); a bound
//              of 1 s (the kernel's least) resumes the flow within about a second of the link's
//              return.
//   stall    - not within a second under bbr (F-RTO may undo the first timeout after the return,
//              and the rest waits for the next): a stalled resumable connection is replaced by
//              a new one as soon as a fresh connection shows the path is back (core/wan_link.cpp).
//   timeout  - with the RTO capped, tcp_retries2 (15 retransmissions) would drop a connection
//              after ~15 s of outage instead of ~15 min: TCP_USER_TIMEOUT keeps the patience.
//   delack   - the receiver's delayed ACK (40-200 ms) stalls the last window of a message.
//   cc       - sites run cubic or bbr; wanmpi must do well under both and say which it used.
//   sockbuf  - a fixed send/receive buffer (SO_SNDBUF/SO_RCVBUF) instead of autotuning.
//   lowat    - TCP_NOTSENT_LOWAT (issue 14): how much not-yet-sent data the kernel may hold. Every
//              byte it holds is a byte a small message written later waits behind (at 200 Mbit/s
//              the default 4 MB buffer is 170 ms); kept low, the data waits in wanmpi's queue,
//              where small messages can pass it. Set by the wan route (core/wan.cpp), which
//              re-evaluates `auto` from the connection's window as it sends.
//
// Threading: the functions are thread-safe; *_from_env() read the tunables (cached).
#pragma once

#include <cstdint>
#include <string>

namespace wanmpi::wanlink {

struct TcpTuning {
    int64_t rto_min_us = 0;    // 0: the kernel's (route's) default
    int64_t rto_max_ms = 0;    // 0: the kernel's default (120 s)
    int64_t delack_us = 0;     // 0: the kernel's default
    int64_t timeout_s = 0;     // TCP_USER_TIMEOUT; 0: the kernel's (tcp_retries2)
    std::string cc;            // "": the system's default congestion control
    int64_t sockbuf = 0;       // 0: autotuning; -1: bdp_buffer()
};
// The tunables WANMPI_WAN_RTO_MIN_US, _RTO_MAX_MS, _TIMEOUT_S, _DELACK_US, _CC, _SOCKBUF, with
// WANMPI_WAN_ADAPT=off clearing all but cc and sockbuf.
TcpTuning tcp_tuning_from_env();
// Applies `t` to a TCP socket (before or after connect). Returns "" or what did not take, e.g.
// "TCP_RTO_MIN_US: Protocol not available" on a kernel before 6.15: the socket keeps the
// kernel's default then, which is always safe. Logged once per process (level info).
std::string tune_socket(int fd, const TcpTuning& t);

// WANMPI_WAN_ADAPT (default on): pacing, rate-managed collectives, RTO bounds, delayed ACK.
bool adapt_enabled();
// WANMPI_WAN_STALL_MS, 0 when off (or WANMPI_WAN_ADAPT=0): how long a resumable connection may
// leave data unacknowledged without any ACK or new data before the stall watch probes the path
// (core/wan_link.cpp watch_stalls).
int64_t stall_ms();
// WANMPI_WAN_RATE in bytes/s on the wire (headers included), 0 when not set: the inter-cluster
// bandwidth shared by the sending hosts of this process's cluster. A malformed value is
// reported once and treated as not set.
uint64_t wan_rate_Bps();

// For a connected socket: 2 x WANMPI_WAN_RATE x its RTT when that exceeds what autotuning may
// grow its buffers to (tcp_wmem/tcp_rmem maximum), else 0 (leave autotuning on).
int64_t bdp_buffer(int fd);

// A resumable connection (wanlink/replay.hpp) is declared broken after `seconds` without an
// answer from the peer's kernel, idle or not: TCP keepalive (idle s/3, then 2 probes s/3 apart)
// and TCP_USER_TIMEOUT = s, which overrides WANMPI_WAN_TIMEOUT_S there (the kernel's patience
// is not needed where a reconnect follows: WANMPI_WAN_RECONNECT_S bounds the outage a job
// survives). The peer's kernel answers keepalives even while its rank computes, so a rank that
// does not call MPI for a long time is never taken for dead. 0: leaves the socket as it is.
void set_keepalive(int fd, int64_t seconds);

// WANMPI_WAN_NOTSENT_LOWAT in bytes: 0 off (the kernel's default: no limit), -1 auto.
int64_t notsent_lowat_setting();
// The connection's congestion window in bytes (cwnd x mss) and its smoothed RTT in us, from
// TCP_INFO; false if unknown.
bool socket_window(int fd, uint64_t* bytes, uint32_t* srtt_us);
// What `auto` sets: the bytes the connection sends in about 2 ms at its window rate
// (window / srtt), at least 64 KiB (the kernel wakes a writer when the unsent bytes fall to half
// of it: less leaves too little time to refill on a loaded host), at most 8 MiB.
int64_t auto_notsent_lowat(uint64_t window_bytes, uint32_t srtt_us);
// TCP_NOTSENT_LOWAT on `fd` (bytes > 0); 0 or an errno.
int set_notsent_lowat(int fd, int64_t bytes);

// The congestion control a socket uses (TCP_CONGESTION), e.g. "cubic"; "" if unknown.
std::string socket_cc(int fd);

// The per-pattern restore (WANMPI_WAN_RESTORE), for a socket whose pacing cap has just been
// raised at the end of a rate-managed collective. A loss during the collective leaves a
// loss-based congestion control (cubic, reno) with a slow-start threshold sized for its share of
// the link; the point-to-point traffic after it then grows its window in congestion avoidance,
// and one flow took 5 s to fill a 100 Mbit/s link again (docs/benchmarks.md "Phase change").
// Linux has no option to set the threshold, but entering bbr sets it to infinity (bbr_init) and
// returning to the socket's own algorithm keeps it so (only its own state is reset): the window
// then grows in slow start, spaced by the pacing cap, which keeps it within the rank's budget.
// Nothing happens under bbr (it keeps no threshold), without a cap, or when the socket could
// not return to its algorithm (an unprivileged process may set only those in
// net.ipv4.tcp_allowed_congestion_control). Returns whether the threshold was reset.
bool restore_window(int fd);

}  // namespace wanmpi::wanlink
