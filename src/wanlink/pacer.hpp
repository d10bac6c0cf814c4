// A process's send budget over its inter-cluster sockets (DESIGN.md "Traffic control and TCP").
//
// Two parts, because each alone falls short:
//   - the kernel paces every socket (SO_MAX_PACING_RATE: TCP spaces its segments itself, no fq
//     qdisc needed) to budget / flows, where `flows` is how many of the process's sockets send
//     at once (a rate-managed Alltoall says: its remote peers; point-to-point: 1). The caps sum
//     to the budget, so the process never puts more than its share into the bottleneck queue,
//     not even for a moment, and no socket bursts at NIC speed;
//   - a token bucket over all of the process's sockets caps what it hands the kernel, so k
//     sockets sending at once when the caller said 1 still share the budget in the long run
//     (bursts up to depth() = max(64 KiB, 5 ms of the budget) beyond it).
// Both count payload bytes (what the caller writes; the kernel's pacing counts skb payload,
// not headers), at kPayloadShare of the budget, so that TCP/IP headers (3.6 % at MTU 1500 with
// timestamps) still fit under a budget given as a link rate, with 3.7 % to spare for the
// senders' timing jitter: at 95 % (1.6 % spare) a lone paced flow still overran a 21-packet
// queue now and then.
//
// Ownership: a Pacer belongs to one transport; it owns no socket. Threading: one thread at a
// time (the wan route calls it under the engine's lock). The free functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wanmpi::wanlink {

class Pacer {
public:
    static constexpr double kPayloadShare = 0.93;

    // Budget in bytes/s on the wire; 0 = unlimited (the bucket is off and costs nothing).
    void set_rate(uint64_t bytes_per_s, int64_t now_ns);
    // The per-socket kernel cap for a budget shared by `flows` sockets (0 = unlimited).
    static uint64_t socket_cap(uint64_t bytes_per_s, int flows) {
        if (!bytes_per_s) return 0;
        uint64_t v = uint64_t(kPayloadShare * double(bytes_per_s)) / uint64_t(flows > 0 ? flows : 1);
        return v ? v : 1;
    }
    uint64_t rate() const { return rate_; }
    bool limited() const { return rate_ != 0; }
    size_t depth() const { return depth_; }
    // How many of `want` bytes may be handed to the kernel now (all of them when unlimited):
    // 0 until min(want, kQuantum) tokens have gathered, so writes are not dribbled out a few
    // bytes per wake-up.
    size_t allow(size_t want, int64_t now_ns);
    // Whether a write of kQuantum bytes would be allowed now.
    bool ready(int64_t now_ns) { return allow(kQuantum, now_ns) > 0; }
    static constexpr size_t kQuantum = 8192;
    // `n` bytes were written (n <= the last allow()).
    void consume(size_t n);
    // Nanoseconds from now until at least min(want, depth) bytes are allowed (0: now).
    int64_t wait_ns(size_t want, int64_t now_ns);

private:
    void refill(int64_t now_ns);
    uint64_t rate_ = 0;
    double bps_ = 0;      // bucket fill rate in bytes/s (kPayloadShare * rate_)
    double tokens_ = 0;
    int64_t last_ns_ = 0;
    size_t depth_ = 0;
};

// Work-conserving shares of one link among senders with different volumes (the rate-managed
// Alltoallv/w, core/wan_rate.hpp): sender `me` of the n whose bytes[i] cross the link in one
// call gets share = its bytes / everyone's, so that all finish together. A sender with very
// little to send still gets a quarter of an equal share (its connections also carry the
// acknowledgements of what it receives, which must not wait behind a pacing rate of a few bytes
// per millisecond); the shares are renormalized so that they still sum to 1. bytes[i] <= 0: i
// sends nothing (share 0, not counted). senders: how many send; index: me's place among them.
struct VolumeShare {
    double share = 0;
    int senders = 0;
    int index = 0;
};
VolumeShare volume_share(const int64_t* bytes, size_t n, size_t me);

// SO_MAX_PACING_RATE on `fd`: bytes/s, 0 = unlimited. Returns 0 or errno.
int set_socket_pacing(int fd, uint64_t bytes_per_s);
// Bytes written to `fd` that TCP has not sent yet (SIOCOUTQNSD); 0 if unknown.
int64_t socket_unsent(int fd);
// Bytes written to `fd` that the peer has not acknowledged yet (SIOCOUTQ: unsent + in flight).
int64_t socket_queued(int fd);
// The socket's SO_MAX_PACING_RATE (UINT64_MAX when unlimited), or 0 if it cannot be read.
uint64_t socket_pacing(int fd);

}  // namespace wanmpi::wanlink
