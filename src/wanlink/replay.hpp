// Resuming a byte stream after its TCP connection broke (issue 13, docs/design/reconnect.md).
//
// Each direction of an inter-cluster connection between two wanmpi hosts is one logical stream
// that outlives its TCP connections. The sender keeps every byte it wrote (SendLog) until the
// receiver confirms it has consumed it; the receiver counts what it consumed. After a break,
// the reconnect handshake (handshake.hpp, HELLO recv_off) tells each side where the other
// stopped, and the sender writes again from there: nothing is lost or duplicated, and the
// bytes arrive in their order, so the IMPI packets (and MPI's order) above never notice.
// Confirmations travel in-band as IMPI packets of a wanmpi type (impi_wire.hpp PK_WAN_ACK)
// every kAckEvery consumed bytes; the log's size is bounded by the sender (kLogMax): above it,
// it writes nothing new until a confirmation frees room.
//
// Threading: one owner (the wan route, under the engine lock).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

namespace wanmpi::wanlink {

constexpr uint64_t kAckEvery = 256 << 10;
constexpr uint64_t kLogMax = 64ull << 20;

class SendLog {
public:
    // Appends the first `bytes` bytes of the vector (what a writev just took).
    void append(const iovec* iov, int n, size_t bytes);
    // The peer consumed everything before `off`. Offsets outside [begin(), end()] are ignored
    // (an old confirmation replayed after a reconnect); returns false for off > end() (a
    // confirmation of bytes never sent: the peer is broken).
    bool ack(uint64_t off);
    uint64_t begin() const { return begin_; }  // oldest byte still kept
    uint64_t end() const { return end_; }      // bytes written so far
    uint64_t size() const { return end_ - begin_; }
    bool full() const { return size() >= kLogMax; }
    // Fills up to `max` iovecs with the kept bytes from `from` (begin() <= from <= end()) on;
    // returns how many.
    int iov_from(uint64_t from, iovec* out, int max) const;

private:
    static constexpr size_t kChunk = 256 << 10;
    std::deque<std::unique_ptr<char[]>> chunks_;
    uint64_t base_ = 0;   // stream offset of chunks_[0][0]
    uint64_t begin_ = 0;
    uint64_t end_ = 0;
};

}  // namespace wanmpi::wanlink
