// The stall watch's two pieces (WANMPI_WAN_STALL_MS; docs/design/pacing.md "Resuming after an
// outage"), shared by the wan route (core/wan_link.cpp, a host's lanes) and impi-relay
// (runtime/impi_relay_data.cpp, a relayed pair's legs): when a connection counts as stalled,
// and the probe that tells when the path to its far end answers again. What to do then (reset
// the connection so that the resumable stream goes on over a new one) is the caller's.
//
// Threading: a PathProbe belongs to its owner's thread; is_stalled is a pure function.
#pragma once

#include <netinet/in.h>

#include <cstdint>

#include "wanlink/tcp_stats.hpp"

namespace wanmpi::wanlink {

// How often an owner looks at its connections while one may be stalled, and how often a probe
// dials again (a new socket, so a new SYN: the kernel would retransmit one only after 1 s).
constexpr int64_t kStallCheckNs = 50'000'000;
constexpr int64_t kProbeEveryNs = 200'000'000;
// After a probe answered at once (the path is up: a stall in TCP's loss recovery), how long
// before the same connection may be probed again.
constexpr int64_t kProbeHoldNs = 1'000'000'000;

// Data unacknowledged, and neither an ACK came nor new data left for stall_ms (at least three
// smoothed RTTs): after an outage, TCP waits for its backed-off retransmission timer here.
inline bool is_stalled(const TcpInfo& t, int64_t stall_ms) {
    if (!t.ok || t.unacked == 0 || stall_ms <= 0) return false;
    const int64_t quiet = t.last_ack_ms < t.last_send_ms ? t.last_ack_ms : t.last_send_ms;
    const int64_t rtts = 3 * int64_t(t.rtt_us) / 1000;
    return quiet >= (stall_ms > rtts ? stall_ms : rtts);
}

// A probe of the path to one address: a nonblocking connect, a fresh one every kProbeEveryNs
// until one gets an answer. Connected or refused both count: the far host's kernel heard the
// SYN. The probe's own connection is closed at once (a wanmpi host socket and impi-relay drop
// a connection that closes without a byte without complaint).
//
// An answer means "the path is back" only if probes went unanswered before it: on a lossy
// link that is up, a connection can stall in TCP's loss recovery (500 ms without an ACK is
// not rare at 10 % loss), and replacing it there made things worse (its new connection's
// handshake met the same losses, with a 1 s initial SYN timeout: a 2.3 s gap against 0.85 s).
// So poll() tells an answer after kOutageMisses unanswered probes (back: an outage ended) from
// an answer at once (up: the stall is TCP's own business).
class PathProbe {
public:
    enum Result { waiting, back, up };
    static constexpr int kOutageMisses = 2;  // 400 ms of a path that did not answer
    PathProbe() = default;
    PathProbe(const PathProbe&) = delete;
    PathProbe& operator=(const PathProbe&) = delete;
    ~PathProbe() { stop(); }
    // Drives the probe (call it every kStallCheckNs or so). After back or up it starts afresh.
    Result poll(const sockaddr_in& to, int64_t now_ns);
    void stop();

private:
    Result answer();
    int fd_ = -1;
    int64_t at_ = 0;
    int misses_ = 0;
};

}  // namespace wanmpi::wanlink
