// The shm transport's ring protocol and its ShmTransport class (shm.cpp has the set-up:
// segments, attaching peers, tear-down). Only shm.cpp includes this: the hot path (try_send,
// progress, the rings) stays inline in one translation unit.
//
// 'shm' transport: ranks on the same host exchange frames through single-producer single-consumer
// byte rings in shared memory, and large payloads through single-copy reads (CMA,
// process_vm_readv) when the kernel permits them.
//
// Segments. Every rank owns one segment holding its *incoming* rings, one slot per rank of its
// host (slot i = the ring written by the host's i-th rank; its own slot stays unused and untouched,
// so it costs no memory). A sender maps the receiver's segment and writes into its slot there.
//
//   page 0              SegHeader: identity (magic, version, rank, pid, job hash, geometry) and,
//                       each on its own cache line, `sleeping` (receiver is about to block) and
//                       `finalized` (owner left through finalize, so its exit is not a failure)
//   page 1 + i*stride   RingCtrl of slot i: `tail` (bytes the receiver consumed) and
//                       `sender_waiting` (sender blocks until tail moves); one cache line,
//                       written by the receiver on every consumed record, read by the sender only
//                       when its cached copy of tail says the ring is full
//   page 2 + i*stride   ring data, ring_size bytes (a power of two)
//
// The segment is a memfd. Its (pid, fd number) goes into the KVS and peers take their own
// descriptor with pidfd_getfd (or /proc/PID/fd/N), so nothing is ever named in /dev/shm and the
// memory goes away with the last process. When that is not permitted, the segment is a
// shm_open object with a job-unique name that the last peer to map it unlinks (a counter in the
// header), and the owner unlinks again at finalize/destruction in case a peer never came.
//
// Records. A ring carries records that start 64-byte aligned and never wrap:
//   +0  u64 stamp   = absolute stream offset of the record + 1, stored last with release
//   +8  u32 kind    single (a whole frame), first / cont (a frame in several records), pad
//   +12 u32 chunk   payload bytes in this record
//   +16 u64 total   payload bytes of the whole frame (single/first)
//   +24 64-byte frame header, then payload (single/first); cont: payload at +64
// Native byte order: both ends are processes of one build on one host (version-checked).
// A record that does not fit before the end of the ring is preceded by a pad record covering
// the rest of the lap. Frames larger than one record (ring_size/4) are streamed as first + cont
// records, so post_send takes frames of any size and the receiver fills the buffer on_header
// gave it chunk by chunk; the sender refills the ring as soon as the receiver moves tail.
//
// Why a stamp rather than a shared head index: the receiver polls the word where the next record
// will start, so an arriving message costs the cache lines of the record itself and nothing
// else. The stamp is the absolute offset, so a value left from an earlier lap never matches. The
// word where the receiver will look next must never hold stale bytes that could look like a
// stamp (old payload can hold anything), so every publish first zeroes the stamp word just past
// its record; the sender always leaves at least one free cache line for that (`kLine` in
// reserve()). Invariant: the word at the producer's head is zero or a stamp < head+1.
//
// Blocking (core spins, then sleeps on wait_fd()). wait_fd() is an epoll set of this rank's wake
// socket (an abstract unix datagram socket named from the job hash and rank; abstract names are
// per network namespace, as are hosts here) and the pidfds of the local peers.
//  - receiver: prepare_sleep() sets my `sleeping` (seq_cst), core then polls once more; a sender
//    publishes, issues a seq_cst fence, and if it sees `sleeping` it exchanges it to 0 and sends
//    one wake datagram (only the sender that wins the exchange does, so a sleeping rank gets one
//    datagram per sleep, not one per frame). Dekker-style: one side always sees the other.
//  - sender blocked on a full ring: prepare_sleep() sets `sender_waiting` on each ring it still
//    has queued data for; the receiver, after moving tail, fences and wakes such a sender.
// Asymmetric fences: both Dekker pairs need a StoreLoad barrier on each side, but the side that
// goes to sleep is rare and the side that publishes is the hot path. When every process of the
// pair registered for membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), the sleeper issues that
// syscall (a full barrier on every CPU running a registered process, ~1 us) after setting its
// flag, and the hot side needs only a compiler barrier between its store and its flag check:
// either its load ran before the IPI, and then its store is visible once membarrier returns,
// or after, and then it sees the flag. Pairs where either side could not register use
// seq_cst fences on both sides (`Peer::cheap`, the `membarrier` word in SegHeader); so do all
// pairs on an oversubscribed host, where ranks sleep on nearly every message.
// No syscalls on the hot path: try_send/progress only touch the rings while there is work; an
// idle progress() is one load per peer plus a counter; peers' pidfds are polled every
// DEATH_CHECK calls and after every wake-up that no sender's datagram explains.
//
// Peer death: a readable pidfd. Frames the peer wrote before it died are delivered first; then
// on_peer_failed("rank N (pid P) exited") unless its `finalized` flag is set (clean exit, which
// is not reported: sends to it fail from then on).
//
// Start-up. Taking a peer's memfd (pidfd_getfd or /proc/PID/fd) needs the peer alive, so a peer
// that left MPI_Init and exited (MPI_Abort at once, say) before we attached it made our MPI_Init
// fail. Core therefore fences once more after connect(): no rank leaves MPI_Init before every rank has
// attached its peers (see engine_init). What remains is a peer that really died during start-up;
// connect() then names it ("rank N (pid P) exited during start-up") instead of blaming the
// kernel's rules and suggesting WANMPI_SHM_SEGMENT=shm_open, which only helps when the kernel
// refused (shm_attach_error).
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "transport/common.hpp"
#include "transport/transport.hpp"

namespace wanmpi::transport::shm_impl {

constexpr uint64_t kMagic = 0x57414e4d50534d31ULL;  // "WANMPSM1"
constexpr uint32_t kVersion = 1;
constexpr uint64_t kLine = 64;
constexpr uint64_t kPage = 4096;

constexpr uint64_t kRecKind = 8;
constexpr uint64_t kRecChunk = 12;
constexpr uint64_t kRecTotal = 16;
constexpr uint64_t kRecHdr = 24;
constexpr uint64_t kFramePrefix = kRecHdr + kHeaderSize;  // payload offset in single/first
constexpr uint64_t kContPrefix = 64;                      // payload offset in cont (aligned)
constexpr uint64_t kMinChunk = 4096;  // do not split a chunk into slivers to use a little space
constexpr int kBatch = 64;            // records per peer per progress() call
constexpr uint64_t kMaxStage = 64ull << 20;  // largest frame staged when on_header gives no buffer

enum : uint32_t { kSingle = 1, kFirst = 2, kCont = 3, kPad = 4 };

struct SegHeader {
    uint64_t magic;
    uint32_t version;
    int32_t rank;
    int64_t pid;
    uint64_t job_hash;
    uint64_t ring_size;
    uint64_t slot_stride;
    uint32_t nslots;
    uint32_t expected_mappers;
    uint64_t seg_len;
    alignas(64) uint32_t sleeping;  // accessed through atomic_ref only
    alignas(64) uint32_t finalized;
    uint32_t mapped;
    uint32_t membarrier;  // owner issues MEMBARRIER_CMD_GLOBAL_EXPEDITED before sleeping
};
static_assert(sizeof(SegHeader) <= kPage);

struct RingCtrl {
    uint64_t tail;
    uint32_t sender_waiting;
};

template <class T>
inline std::atomic_ref<T> aref(T& v) {
    return std::atomic_ref<T>(v);
}
inline uint64_t& word(uint8_t* p) {
    return *reinterpret_cast<uint64_t*>(p);
}
inline uint64_t align64(uint64_t v) {
    return (v + kLine - 1) & ~(kLine - 1);
}
inline uint32_t load32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline void store32(uint8_t* p, uint32_t v) {
    std::memcpy(p, &v, 4);
}
inline void store64(uint8_t* p, uint64_t v) {
    std::memcpy(p, &v, 8);
}

struct Peer {
    // Send side: my slot in the peer's segment.
    uint8_t* out_data = nullptr;
    RingCtrl* out_ctrl = nullptr;
    SegHeader* out_seg = nullptr;
    uint64_t out_size = 0;
    uint64_t out_mask = 0;
    uint64_t head = 0;        // bytes I produced (absolute stream offset)
    uint64_t tail_cache = 0;  // last tail I read from out_ctrl
    uint64_t max_single = 0;  // largest payload sent as one record
    uint64_t max_cont = 0;    // largest payload of a cont record
    detail::OpQueue q;
    bool cur_started = false;  // q.head has records in the ring already (multi-record frame)
    bool waiting_set = false;  // I set out_ctrl->sender_waiting
    bool cheap = false;        // both of us use membarrier: compiler barriers on the hot path
    // Receive side: the peer's slot in my segment.
    uint8_t* in_data = nullptr;
    RingCtrl* in_ctrl = nullptr;
    uint64_t in_size = 0;
    uint64_t in_mask = 0;
    uint64_t rtail = 0;
    bool rx_active = false;  // inside a multi-record frame
    uint8_t rx_hdr[kHeaderSize];
    uint8_t* rx_buf = nullptr;
    uint64_t rx_total = 0;
    uint64_t rx_got = 0;
    std::vector<uint8_t> rx_stage;  // when on_header returned nullptr for a multi-record frame
    // Identity and liveness.
    int rank = -1;
    int local = -1;
    pid_t pid = 0;
    int pidfd = -1;
    enum State : uint8_t { ok, failed, gone } state = ok;
    std::string why;
    void* map = nullptr;
    size_t map_len = 0;
    sockaddr_un wake{};
    socklen_t wake_len = 0;
};

class ShmTransport final : public Transport {
public:
    ~ShmTransport() override { cleanup(); }
    const char* name() const override { return "shm"; }

    Status init(const JobInfo& job, base::Kvs& kvs, const std::vector<int>& peers) override;
    Status connect(base::Kvs& kvs) override;
    void finalize() override;

    SendResult try_send(int peer, const uint8_t* hdr, const void* payload, uint64_t len) override {
        Peer* pp = detail::live_peer(peers_, peer);
        if (!pp) return SendResult::failed;
        Peer& p = *pp;
        if (!p.q.empty() || len > max_inline_) return SendResult::would_block;
        Slot s;
        if (!reserve(p, align64(kFramePrefix + len), s)) return SendResult::would_block;
        fill_frame(s.rec, kSingle, hdr, payload, len, len);
        publish(p, s);
        notify(p);
        return SendResult::done;
    }

    void post_send(int peer, SendOp* op) override {
        op->sent = 0;
        Peer* pp = detail::live_peer(peers_, peer);
        if (!pp) return done_.fail(op);
        Peer& p = *pp;
        bool was_empty = p.q.empty();
        p.q.push(op);
        if (was_empty) {
            ++nqueued_;
            push(p);
            // Another thread may be asleep in wait_fd() for us: make the receiver wake it
            // when room appears (see the blocking notes at the top).
            if (sleeping_ && !p.q.empty()) set_waiting_and_retry(p);
        }
    }

    int progress(RecvSink& sink) override {
        int n = 0;
        if (nqueued_) {
            for (Peer* p : rx_)
                if (!p->q.empty()) n += push(*p);
        }
        for (size_t i = 0; i < rx_.size(); ++i) {
            Peer* p = rx_[i];
            if (p->state == Peer::ok) n += poll_ring(*p, sink, kBatch);
        }
        if (!done_.empty()) n += detail::run_completions(done_);
        if (++calls_ >= death_interval_ || check_now_) {
            calls_ = 0;
            check_now_ = false;
            n += check_deaths(sink);
        }
        if (!report_.empty()) n += report(sink);
        return n;
    }

    int wait_fd() const override { return epfd_; }
    void prepare_sleep() override {
        sleeping_ = true;
        if (my_hdr_) aref(my_hdr_->sleeping).store(1, std::memory_order_seq_cst);
        if (nqueued_)
            for (Peer* p : rx_)
                if (!p->q.empty()) set_waiting(*p);
        // Order the flag stores before the loads of core's last progress() (Dekker, see top).
        heavy_barrier();
    }
    // Wake-ups cost syscalls on the path of every message when ranks block (oversubscribed
    // hosts), so the common case is kept to one: if a sender took our `sleeping` flag, its
    // datagram is what woke us (or is on its way), and one recv consumes it. Otherwise we were
    // woken by something else (a pidfd, another transport, the timeout) or did not sleep: then
    // drain every datagram (a stale one from a slow sender would otherwise wake each later
    // sleep at once) and look at the pidfds. A peer's death is never missed: its pidfd stays
    // readable, so a sleep that skipped the check wakes again at once and does it.
    void finish_sleep() override {
        sleeping_ = false;
        bool by_sender =
            my_hdr_ && aref(my_hdr_->sleeping).exchange(0, std::memory_order_acq_rel) == 0;
        for (Peer* p : rx_)
            if (p->waiting_set) {
                aref(p->out_ctrl->sender_waiting).store(0, std::memory_order_relaxed);
                p->waiting_set = false;
            }
        if (wake_fd_ < 0) return;
        char buf[64];
        if (by_sender) {
            (void)::recv(wake_fd_, buf, sizeof buf, MSG_DONTWAIT);
            return;
        }
        while (::recv(wake_fd_, buf, sizeof buf, MSG_DONTWAIT) > 0) {}
        check_now_ = true;
    }

    bool supports_get() const override { return cma_ok_; }
    bool flushed() const override { return nqueued_ == 0; }
    Status get(int peer, uint64_t remote_addr, void* local, uint64_t len) override;
    uint64_t max_inline() const override { return max_inline_; }

private:
    struct Slot {
        uint8_t* rec;
        uint64_t start;
        uint64_t size;
        bool pad;
    };

    // Room for one record of `rec` bytes (a multiple of 64) at the producer's head, after a pad
    // record if it does not fit before the end of the ring. Reads the shared tail only when the
    // cached one says there is no room. The extra kLine keeps the word after the record free so
    // publish() can zero it.
    bool reserve(Peer& p, uint64_t rec, Slot& s) {
        uint64_t pos = p.head & p.out_mask;
        uint64_t to_end = p.out_size - pos;
        uint64_t skip = rec <= to_end ? 0 : to_end;
        uint64_t need = skip + rec + kLine;
        if (p.head + need - p.tail_cache > p.out_size) {
            p.tail_cache = aref(p.out_ctrl->tail).load(std::memory_order_acquire);
            if (p.head + need - p.tail_cache > p.out_size) return false;
        }
        s.start = p.head + skip;
        s.rec = p.out_data + (s.start & p.out_mask);
        s.size = rec;
        s.pad = skip != 0;
        return true;
    }

    // Make a filled record visible. Order matters (see top): zero the word past the record, then
    // the record's stamp (release), then the pad's stamp, which the receiver reaches first.
    void publish(Peer& p, const Slot& s) {
        uint64_t next = s.start + s.size;
        aref(word(p.out_data + (next & p.out_mask))).store(0, std::memory_order_relaxed);
        aref(word(s.rec)).store(s.start + 1, std::memory_order_release);
        if (s.pad) {
            uint8_t* pad = p.out_data + (p.head & p.out_mask);
            store32(pad + kRecKind, kPad);
            aref(word(pad)).store(p.head + 1, std::memory_order_release);
        }
        p.head = next;
    }

    // After publishing: wake the receiver if it is going to sleep (one datagram per sleep).
    void notify(Peer& p) {
        light_barrier(p);
        uint32_t& sl = p.out_seg->sleeping;
        if (aref(sl).load(std::memory_order_relaxed) &&
            aref(sl).exchange(0, std::memory_order_seq_cst))
            send_wake(p);
    }

    void send_wake(Peer& p) {
        char b = 'w';
        // EAGAIN: its queue already holds a datagram, so it wakes anyway; ECONNREFUSED: gone.
        ::sendto(wake_fd_, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&p.wake), p.wake_len);
    }

    void set_waiting(Peer& p) {
        aref(p.out_ctrl->sender_waiting).store(1, std::memory_order_seq_cst);
        p.waiting_set = true;
    }
    // post_send while another thread sleeps for us: the receiver must wake us when it makes
    // room; the fence orders the flag before push()'s fresh read of tail.
    void set_waiting_and_retry(Peer& p) {
        set_waiting(p);
        heavy_barrier();
        push(p);
    }

    // The two halves of the asymmetric fence (see top).
    void light_barrier(const Peer& p) {
        if (p.cheap) std::atomic_signal_fence(std::memory_order_seq_cst);
        else std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    void heavy_barrier() {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (membarrier_ && ::syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0) {
            // Cannot happen after a successful registration; if it does, stop relying on it
            // (peers keep their cheap path, so log loudly).
            WANMPI_LOG(error, "shm: membarrier failed: %s", base::errno_text(errno).c_str());
            membarrier_ = false;
        }
    }

    static void fill_frame(uint8_t* r, uint32_t kind, const uint8_t* hdr, const void* payload,
                           uint64_t chunk, uint64_t total) {
        store32(r + kRecKind, kind);
        store32(r + kRecChunk, uint32_t(chunk));
        store64(r + kRecTotal, total);
        std::memcpy(r + kRecHdr, hdr, kHeaderSize);
        if (chunk) std::memcpy(r + kFramePrefix, payload, chunk);
    }

    // Reserve a record for the next chunk (payload at `prefix`) of `remaining` bytes: a full
    // chunk if there is room, else whatever contiguous space there is if it is worth a record.
    bool reserve_chunk(Peer& p, uint64_t prefix, uint64_t max_payload, uint64_t remaining,
                       uint64_t& chunk, Slot& s) {
        uint64_t want = std::min(remaining, max_payload);
        if (reserve(p, align64(prefix + want), s)) {
            chunk = want;
            return true;
        }
        if (want <= kMinChunk) return false;
        // reserve() refreshed tail_cache. Free bytes, keeping the kLine guard.
        uint64_t used = p.head - p.tail_cache;
        if (used + kLine >= p.out_size) return false;
        uint64_t space = p.out_size - kLine - used;
        uint64_t to_end = p.out_size - (p.head & p.out_mask);
        uint64_t room = std::min(space, to_end);                                 // without a pad
        if (room < prefix + kMinChunk && space > to_end) room = space - to_end;  // after a pad
        if (room < prefix + kMinChunk) return false;
        uint64_t c = std::min(want, (room - prefix) & ~(kLine - 1));
        if (c < kMinChunk || !reserve(p, align64(prefix + c), s)) return false;
        chunk = c;
        return true;
    }

    // Write queued ops into the peer's ring as far as room allows. Completed ops go to done_
    // (their callbacks run in progress()). Returns ops completed.
    int push(Peer& p) {
        if (p.q.empty()) return 0;
        int n = 0;
        bool wrote = false;
        while (SendOp* op = p.q.head) {
            Slot s;
            if (!p.cur_started) {
                if (op->len <= p.max_single) {
                    if (!reserve(p, align64(kFramePrefix + op->len), s)) break;
                    fill_frame(s.rec, kSingle, op->hdr, op->payload, op->len, op->len);
                    publish(p, s);
                    wrote = true;
                    op->sent = op->len;
                    done_.push(p.q.pop());
                    ++n;
                    continue;
                }
                uint64_t c;
                if (!reserve_chunk(p, kFramePrefix, p.max_single, op->len, c, s)) break;
                fill_frame(s.rec, kFirst, op->hdr, op->payload, c, op->len);
                publish(p, s);
                wrote = true;
                op->sent = c;
                p.cur_started = true;
            }
            bool stalled = false;
            while (op->sent < op->len) {
                uint64_t c;
                if (!reserve_chunk(p, kContPrefix, p.max_cont, op->len - op->sent, c, s)) {
                    stalled = true;
                    break;
                }
                store32(s.rec + kRecKind, kCont);
                store32(s.rec + kRecChunk, uint32_t(c));
                std::memcpy(s.rec + kContPrefix,
                            static_cast<const uint8_t*>(op->payload) + op->sent, c);
                publish(p, s);
                wrote = true;
                op->sent += c;
                // Let a sleeping receiver start on the first chunks while we copy the rest.
                notify(p);
            }
            if (stalled) break;
            p.cur_started = false;
            done_.push(p.q.pop());
            ++n;
        }
        if (wrote) notify(p);
        if (p.q.empty()) --nqueued_;
        return n;
    }

    // Deliver up to `max` records from the peer's ring. Returns frames delivered + pads seen
    // (> 0 whenever anything was consumed).
    int poll_ring(Peer& p, RecvSink& sink, int max) {
        uint8_t* d = p.in_data;
        uint64_t t = p.rtail;
        int n = 0;
        for (int i = 0; i < max; ++i) {
            uint8_t* r = d + (t & p.in_mask);
            if (aref(word(r)).load(std::memory_order_acquire) != t + 1) break;
            uint32_t kind = load32(r + kRecKind);
            uint64_t chunk = load32(r + kRecChunk);
            uint64_t room = p.in_size - (t & p.in_mask);
            if (kind == kPad) {
                t += room;
            } else if (kind == kSingle) {
                uint64_t rec = align64(kFramePrefix + chunk);
                if (rec > room || load64(r + kRecTotal) != chunk || p.rx_active)
                    return corrupt(p, "bad single record");
                const uint8_t* hdr = r + kRecHdr;
                void* buf = sink.on_header(p.rank, hdr, chunk);
                if (buf) {
                    if (chunk) std::memcpy(buf, r + kFramePrefix, chunk);
                    sink.on_frame(p.rank, hdr, buf, chunk);
                } else {
                    sink.on_frame(p.rank, hdr, r + kFramePrefix, chunk);
                }
                t += rec;
            } else if (kind == kFirst) {
                uint64_t rec = align64(kFramePrefix + chunk);
                uint64_t total = load64(r + kRecTotal);
                if (rec > room || chunk > total || p.rx_active)
                    return corrupt(p, "bad first record");
                std::memcpy(p.rx_hdr, r + kRecHdr, kHeaderSize);
                void* buf = sink.on_header(p.rank, p.rx_hdr, total);
                if (!buf) {
                    if (total > kMaxStage)
                        return corrupt(p, "large frame without a receive buffer");
                    p.rx_stage.resize(total);
                    buf = p.rx_stage.data();
                }
                p.rx_buf = static_cast<uint8_t*>(buf);
                p.rx_total = total;
                if (chunk) std::memcpy(p.rx_buf, r + kFramePrefix, chunk);
                p.rx_got = chunk;
                p.rx_active = true;
                t += rec;
            } else if (kind == kCont) {
                uint64_t rec = align64(kContPrefix + chunk);
                if (rec > room || !p.rx_active || chunk > p.rx_total - p.rx_got)
                    return corrupt(p, "bad continuation record");
                std::memcpy(p.rx_buf + p.rx_got, r + kContPrefix, chunk);
                p.rx_got += chunk;
                t += rec;
            } else {
                return corrupt(p, "unknown record kind");
            }
            // Free the space at once so the sender can refill while we copy the next record.
            p.rtail = t;
            aref(p.in_ctrl->tail).store(t, std::memory_order_release);
            ++n;
            if (p.rx_active && p.rx_got == p.rx_total) {
                p.rx_active = false;
                sink.on_frame(p.rank, p.rx_hdr, p.rx_buf, p.rx_total);
                if (p.rx_stage.capacity() > (1u << 20)) std::vector<uint8_t>().swap(p.rx_stage);
            }
        }
        if (n) {
            light_barrier(p);
            uint32_t& w = p.in_ctrl->sender_waiting;
            if (aref(w).load(std::memory_order_relaxed) &&
                aref(w).exchange(0, std::memory_order_seq_cst))
                send_wake(p);
        }
        return n;
    }

    int corrupt(Peer& p, const char* what) {
        mark_failed(p, "shared-memory ring from rank " + std::to_string(p.rank) + " (pid " +
                           std::to_string(p.pid) + ") is corrupt: " + what);
        return 1;
    }

    void mark_failed(Peer& p, std::string why, bool report = true) {
        if (p.state != Peer::ok) return;
        p.state = report ? Peer::failed : Peer::gone;
        p.why = std::move(why);
        if (!p.q.empty()) {
            --nqueued_;
            done_.fail_all(p.q);
        }
        p.cur_started = false;
        if (report) report_.push_back(&p);
        if (p.pidfd >= 0) {
            epoll_ctl(epfd_, EPOLL_CTL_DEL, p.pidfd, nullptr);
            ::close(p.pidfd);
            p.pidfd = -1;
        }
    }

    int check_deaths(RecvSink& sink) {
        pfds_.clear();
        pfd_peer_.clear();
        for (Peer* p : rx_)
            if (p->pidfd >= 0) {
                pfds_.push_back(pollfd{p->pidfd, POLLIN, 0});
                pfd_peer_.push_back(p);
            }
        if (pfds_.empty() || ::poll(pfds_.data(), pfds_.size(), 0) <= 0) return 0;
        int n = 0;
        for (size_t i = 0; i < pfds_.size(); ++i) {
            if (!pfds_[i].revents) continue;
            Peer& p = *pfd_peer_[i];
            // Deliver everything it wrote before it went.
            while (p.state == Peer::ok) {
                int k = poll_ring(p, sink, 1 << 20);
                n += k;
                if (!k) break;
            }
            bool clean = aref(p.out_seg->finalized).load(std::memory_order_acquire) != 0;
            std::string who =
                "rank " + std::to_string(p.rank) + " (pid " + std::to_string(p.pid) + ")";
            if (p.rx_active) clean = false;
            mark_failed(p, clean ? who + " finalized and exited" : who + " exited", !clean);
            ++n;
        }
        return n;
    }

    int report(RecvSink& sink) {
        int n = 0;
        // A callback may fail more peers; take the list first.
        std::vector<Peer*> list;
        list.swap(report_);
        for (Peer* p : list) {
            WANMPI_LOG(debug, "shm: %s", p->why.c_str());
            sink.on_peer_failed(p->rank, p->why);
            ++n;
        }
        return n;
    }

    Status map_peer(Peer& p, const std::string& value);
    void cleanup();

    int rank_ = 0;
    int size_ = 0;
    uint64_t job_hash_ = 0;
    int my_local_ = -1;
    uint32_t nslots_ = 0;
    uint64_t ring_size_ = 0;
    uint64_t stride_ = 0;
    uint8_t* seg_ = nullptr;
    size_t seg_len_ = 0;
    SegHeader* my_hdr_ = nullptr;
    int memfd_ = -1;
    std::string shm_name_;  // non-empty while we own a /dev/shm name
    int wake_fd_ = -1;
    int epfd_ = -1;
    bool sleeping_ = false;
    bool check_now_ = false;
    bool cma_ok_ = false;
    bool membarrier_ = false;  // registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED
    bool prefault_ = false;    // map ring pages at start-up (SHM_PREFAULT)

    // Fault in [p, p + len) writable now rather than on first use (MADV_POPULATE_WRITE, Linux
    // 5.14; nothing is written, so a peer already using the ring is not disturbed). Older
    // kernels refuse with EINVAL: then the pages fault in on first use, as before.
    void prefault(void* p, size_t len) const {
#ifndef MADV_POPULATE_WRITE
        constexpr int MADV_POPULATE_WRITE = 23;
#endif
        if (prefault_) (void)::madvise(p, len, MADV_POPULATE_WRITE);
    }
    uint64_t cma_chunk_ = 1ULL << 30;
    uint64_t calls_ = 0;
    uint64_t death_interval_ = 16384;
    uint64_t max_inline_ = 0;
    int nqueued_ = 0;
    std::vector<Peer*> peers_;  // by world rank; nullptr if not served here
    std::vector<std::unique_ptr<Peer>> owned_;
    std::vector<Peer*> rx_;  // served peers
    std::vector<Peer*> report_;
    std::vector<pollfd> pfds_;
    std::vector<Peer*> pfd_peer_;
    detail::OpQueue done_;
};

}  // namespace wanmpi::transport::shm_impl
