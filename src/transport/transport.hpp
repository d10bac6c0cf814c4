// Transport interface: moves framed bytes between the ranks of one job. MPI-agnostic: matching,
// eager/rendezvous and datatypes live in src/core. Implementations: self, shm (same host),
// tcp (other host of the same cluster); wan (IMPI between clusters) comes later.
//
// A *frame* is a fixed-size header of kHeaderSize opaque bytes (core's format) followed by a
// payload of `len` bytes. A transport delivers frames from one peer in the order they were sent
// (per ordered pair FIFO) — core relies on this for MPI's non-overtaking rule.
//
// Peers are world ranks (0..size-1). Which transport serves which peer is decided once at start-up
// by core (the route table).
//
// Threading: every method is called with core's progress lock held (one thread at a time),
// except where noted. Callbacks into RecvSink and SendOp::on_complete happen only inside
// progress() (never inside try_send/post_send), so core is never re-entered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/kvs.hpp"
#include "base/status.hpp"

namespace wanmpi::transport {

using base::Status;

constexpr size_t kHeaderSize = 64;

// Facts about this process and job a transport needs at start-up.
struct JobInfo {
    int rank = 0;
    int size = 1;
    std::string job_id;                // unique per job (names shm segments, sockets)
    std::vector<int> host_of;          // host index of every world rank (same index = same host)
    int local_ranks = 1;               // ranks on my host
    int cores = 1;                     // online cores of this host
};

// Implemented by core. Called only from Transport::progress().
class RecvSink {
public:
    virtual ~RecvSink() = default;
    // A frame header from `peer` arrived; `len` payload bytes follow. Return a buffer of at least
    // `len` bytes that the transport fills, or nullptr to receive the payload in on_frame() as a
    // pointer valid only during that call (for small frames that core copies anyway).
    virtual void* on_header(int peer, const uint8_t* hdr, uint64_t len) = 0;
    // The whole frame is in. `hdr` is the same header; `data` is the buffer returned by on_header,
    // or the transient payload pointer when on_header returned nullptr.
    virtual void on_frame(int peer, const uint8_t* hdr, const void* data, uint64_t len) = 0;
    // The same for a transport that fills several frames of one peer at once, one per `slot`
    // (the wan route's lanes, slot = lane index < kMaxSlots): between on_header_at and
    // on_frame_at of one slot, frames of the peer's other slots may start and end. Slot 0 is
    // the slot of on_header / on_frame. A sink that keeps one frame per peer (the default
    // here) must not be given more than slot 0.
    static constexpr unsigned kMaxSlots = 16;
    virtual void* on_header_at(int peer, unsigned slot, const uint8_t* hdr, uint64_t len) {
        (void)slot;
        return on_header(peer, hdr, len);
    }
    virtual void on_frame_at(int peer, unsigned slot, const uint8_t* hdr, const void* data,
                             uint64_t len) {
        (void)slot;
        on_frame(peer, hdr, data, len);
    }
    // The peer is unreachable (connection reset, process exited). No more frames come from it;
    // sends to it fail. Called once per peer.
    virtual void on_peer_failed(int peer, const std::string& why) = 0;
};

// A queued send. Owned by core; must stay alive and unchanged until on_complete is called.
struct SendOp {
    uint8_t hdr[kHeaderSize];
    const void* payload = nullptr;
    uint64_t len = 0;
    // Called from progress() once the transport no longer needs hdr/payload; ok=false when the
    // peer failed before the frame left.
    void (*on_complete)(SendOp* op, bool ok) = nullptr;
    void* user = nullptr;        // for core
    // Transport-private state.
    uint64_t sent = 0;
    SendOp* next = nullptr;
};

enum class SendResult { done, would_block, failed };

class Transport {
public:
    virtual ~Transport() = default;
    virtual const char* name() const = 0;

    // Phase 1: create local resources and publish this rank's address with kvs.put() (before the
    // fence). `peers` are the ranks core will route through this transport.
    virtual Status init(const JobInfo& job, base::Kvs& kvs, const std::vector<int>& peers) = 0;
    // Phase 2, after the fence: look up peers' addresses and connect (or prepare to, lazily).
    virtual Status connect(base::Kvs& kvs) = 0;
    // Orderly shutdown: flush queued sends, close. Called collectively from MPI_Finalize after
    // core has quiesced.
    virtual void finalize() = 0;

    // Send one frame now if possible: `done` means the frame is on its way and hdr/payload are no
    // longer needed; `would_block` means nothing was sent (resource full or earlier sends queued
    // for this peer); `failed` means the peer is gone. Fast path for small frames.
    virtual SendResult try_send(int peer, const uint8_t* hdr, const void* payload, uint64_t len) = 0;
    // Queue a frame behind earlier ones for this peer; progress() moves it and calls
    // op->on_complete. Any size.
    virtual void post_send(int peer, SendOp* op) = 0;

    // Move bytes both ways without blocking; deliver frames to sink. Returns the number of
    // frames/sends completed (0 = nothing happened).
    virtual int progress(RecvSink& sink) = 0;

    // True when every frame handed to try_send/post_send has left this process (nothing buffered
    // inside the transport). MPI_Finalize waits for this before its closing fence, since a rank
    // blocked in the fence no longer makes progress.
    virtual bool flushed() const { return true; }

    // Blocking support. wait_fd() becomes readable when progress() may have work (-1: none;
    // then core must poll). Before blocking, core calls prepare_sleep(), polls progress() once
    // more, and only sleeps if that found nothing; after waking it calls finish_sleep().
    virtual int wait_fd() const = 0;
    virtual void prepare_sleep() {}
    virtual void finish_sleep() {}

    // Single-copy read of `len` bytes at `remote_addr` in peer's address space (shm: CMA,
    // self: memcpy). Only if supports_get(). Synchronous.
    virtual bool supports_get() const { return false; }
    virtual Status get(int /*peer*/, uint64_t /*remote_addr*/, void* /*local*/, uint64_t /*len*/) {
        return Status(base::Errc::invalid, "get not supported");
    }
    // Largest payload try_send accepts (bigger frames must use post_send).
    virtual uint64_t max_inline() const = 0;
    // Why the connection to `peer` failed, once a send returned SendResult::failed (the engine
    // hears it through on_peer_failed only at the next progress). "" if not known.
    virtual std::string failure(int /*peer*/) const { return ""; }
    // Largest payload of one frame given to post_send (core splits rendezvous data into frames
    // of at most this size). UINT64_MAX when any size streams (tcp).
    virtual uint64_t max_frame() const { return UINT64_MAX; }
};

}  // namespace wanmpi::transport
