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
// Small frames take one cache line instead (kind small): the kind word holds small | mask << 8,
// bit i of mask saying that the header's 64-bit word i is not zero; those words follow packed at
// +16, then the payload (chunk bytes), all within 64 bytes. Core's headers are mostly zero words
// (an eager message uses 3-4 of 8), so an 8-byte message is one line instead of two: the
// receiver fetches one line from the sender's cache per message instead of two, which is most of
// a small message's cost between cores (ping-pong 8 B: see docs/benchmarks.md).
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
#include "transport/shm.hpp"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "base/log.hpp"
#include "base/tunables.hpp"
#include "transport/common.hpp"

namespace wanmpi::transport {
namespace {

base::Tunable<int64_t> t_ring_size(
    "SHM", "RING_SIZE", 256 * 1024,
    "Bytes of each shared-memory ring (one per ordered pair of ranks on a host); rounded up to a "
    "power of two between 64k and 1g. Frames larger than a quarter ring are streamed in chunks.",
    base::Level::tuner);
base::Tunable<int64_t> t_max_inline(
    "SHM", "MAX_INLINE", 16 * 1024,
    "Largest payload the shm transport takes in one try_send (the eager fast path); capped at a "
    "quarter of the receiver's ring.",
    base::Level::tuner);
base::Tunable<std::string> t_segment(
    "SHM", "SEGMENT", "auto",
    "How shared memory is passed between ranks: memfd (fd taken with pidfd_getfd, nothing named in "
    "/dev/shm), shm_open (job-unique /dev/shm name, unlinked once every peer mapped it), or auto "
    "(memfd when the kernel permits it, else shm_open).",
    base::Level::tuner);
const bool t_segment_named = (t_segment.set_choices({"auto", "memfd", "shm_open"}), true);
base::Tunable<bool> t_cma(
    "SHM", "CMA", true,
    "Single-copy reads of large messages from a peer's memory (process_vm_readv). Off, or not "
    "permitted by the kernel, large messages go through the rings in chunks.",
    base::Level::tuner);
base::Tunable<int64_t> t_cma_chunk(
    "SHM", "CMA_CHUNK", int64_t(1) << 30,
    "Largest single process_vm_readv call (bytes); larger reads loop.", base::Level::developer);
base::Tunable<bool> t_membarrier(
    "SHM", "MEMBARRIER", true,
    "Use membarrier(2) so that sending a frame needs no memory fence (the rank going to sleep "
    "pays instead); off, both sides fence.",
    base::Level::developer);
base::Tunable<int64_t> t_prefault(
    "SHM", "PREFAULT", 16,
    "Map the pages of this rank's rings (in and out) at start-up when the host has at most this "
    "many ranks (-1: always, 0: never). Otherwise the first pass through each ring takes a page "
    "fault every 4 KiB (about 1 us each in a VM): small messages were ~2x slower for the first "
    "~2,000 per pair. Costs ring size x 2 x (local ranks - 1) of memory per rank at once.",
    base::Level::tuner);
base::Tunable<int64_t> t_death_check(
    "SHM", "DEATH_CHECK", 16384,
    "Poll local peers' pidfds for an exit every this many progress calls (and after every "
    "wake-up).",
    base::Level::developer);

constexpr uint64_t kMagic = 0x57414e4d50534d31ULL;  // "WANMPSM1"
constexpr uint32_t kVersion = 2;  // 2: small records
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

enum : uint32_t { kSingle = 1, kFirst = 2, kCont = 3, kPad = 4, kSmall = 5 };
constexpr uint64_t kSmallWords = 16;  // packed header words of a small record start here

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

int sys_pidfd_open(pid_t pid) {
    return int(::syscall(SYS_pidfd_open, pid, 0));
}
int sys_pidfd_getfd(int pidfd, int fd) {
    return int(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
}

// Whether the process behind `pidfd` has exited (a pidfd turns readable then; a zombie counts).
// A process in the middle of exiting has already dropped its files, so taking one of its fds
// fails (ESRCH; EBADF on older kernels) a moment before the pidfd turns readable: `wait_ms`
// covers that moment on error paths.
bool pidfd_exited(int pidfd, int wait_ms) {
    if (pidfd < 0) return false;
    pollfd p{pidfd, POLLIN, 0};
    int n;
    do n = ::poll(&p, 1, wait_ms);
    while (n < 0 && errno == EINTR);
    return n == 1 && (p.revents & POLLIN);
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
        if (unsigned(peer) >= peers_.size() || !peers_[peer]) return SendResult::failed;
        Peer& p = *peers_[peer];
        if (p.state != Peer::ok) return SendResult::failed;
        if (!p.q.empty() || len > max_inline_) return SendResult::would_block;
        Slot s;
        uint32_t mask = small_mask(hdr, len);
        if (!reserve(p, mask ? kLine : align64(kFramePrefix + len), s)) return SendResult::would_block;
        if (mask) fill_small(s.rec, mask, hdr, payload, len);
        else fill_frame(s.rec, kSingle, hdr, payload, len, len);
        publish(p, s);
        notify(p);
        return SendResult::done;
    }

    void post_send(int peer, SendOp* op) override {
        op->sent = 0;
        if (unsigned(peer) >= peers_.size() || !peers_[peer] || peers_[peer]->state != Peer::ok) {
            op->sent = detail::kOpFailed;
            done_.push(op);
            return;
        }
        Peer& p = *peers_[peer];
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

    // The small record's mask for this frame (see top), or 0 when it does not fit one line.
    static uint32_t small_mask(const uint8_t* hdr, uint64_t len) {
        if (len > kLine - kSmallWords - 8) return 0;  // at least one header word (the type)
        uint32_t mask = 0;
        uint64_t used = kSmallWords + len;
        for (unsigned i = 0; i < kHeaderSize / 8; ++i)
            if (load64(hdr + 8 * i) != 0) {
                mask |= 1u << i;
                used += 8;
            }
        return used <= kLine ? mask : 0;
    }
    static void fill_small(uint8_t* r, uint32_t mask, const uint8_t* hdr, const void* payload,
                           uint64_t len) {
        store32(r + kRecKind, kSmall | mask << 8);
        store32(r + kRecChunk, uint32_t(len));
        uint8_t* w = r + kSmallWords;
        for (unsigned i = 0; i < kHeaderSize / 8; ++i)
            if (mask & (1u << i)) {
                std::memcpy(w, hdr + 8 * i, 8);
                w += 8;
            }
        if (len) std::memcpy(w, payload, len);
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
                    uint32_t mask = small_mask(op->hdr, op->len);
                    if (!reserve(p, mask ? kLine : align64(kFramePrefix + op->len), s)) break;
                    if (mask) fill_small(s.rec, mask, op->hdr, op->payload, op->len);
                    else fill_frame(s.rec, kSingle, op->hdr, op->payload, op->len, op->len);
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
            if ((kind & 0xff) == kSmall) {
                const uint32_t mask = kind >> 8;
                const uint8_t* w = r + kSmallWords;
                if (mask == 0 || mask > 0xff ||
                    kSmallWords + 8 * uint64_t(__builtin_popcount(mask)) + chunk > kLine ||
                    p.rx_active)
                    return corrupt(p, "bad small record");
                alignas(8) uint8_t hdr[kHeaderSize];
                for (unsigned k = 0; k < kHeaderSize / 8; ++k)
                    if (mask & (1u << k)) {
                        std::memcpy(hdr + 8 * k, w, 8);
                        w += 8;
                    } else {
                        store64(hdr + 8 * k, 0);
                    }
                void* buf = sink.on_header(p.rank, hdr, chunk);
                if (buf) {
                    if (chunk) std::memcpy(buf, w, chunk);
                    sink.on_frame(p.rank, hdr, buf, chunk);
                } else {
                    sink.on_frame(p.rank, hdr, w, chunk);
                }
                t += kLine;
            } else if (kind == kPad) {
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
            while (SendOp* op = p.q.pop()) {
                op->sent = detail::kOpFailed;
                done_.push(op);
            }
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

Status sys_error(const std::string& what, int e) {
    return Status(base::Errc::fatal, "shm: " + what + ": " + base::errno_text(e), e);
}

uint64_t pow2_at_least(uint64_t v) {
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t b = 0;
    for (;;) {
        size_t e = s.find(sep, b);
        out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
        if (e == std::string::npos) break;
        b = e + 1;
    }
    return out;
}

bool parse_u64(const std::string& s, uint64_t& v, int base = 10) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long x = std::strtoull(s.c_str(), &end, base);
    if (errno || *end) return false;
    v = x;
    return true;
}

Status ShmTransport::init(const JobInfo& job, base::Kvs& kvs, const std::vector<int>& peers) {
    rank_ = job.rank;
    size_ = job.size;
    job_hash_ = detail::job_hash(job.job_id);
    death_interval_ = uint64_t(std::max<int64_t>(1, t_death_check.get()));
    cma_chunk_ = uint64_t(std::max<int64_t>(4096, t_cma_chunk.get()));
    auto host = [&](int r) { return job.host_of.empty() ? 0 : job.host_of[r]; };
    if (!job.host_of.empty() && int(job.host_of.size()) != size_)
        return Status(base::Errc::invalid, "shm: host_of has the wrong size");
    std::vector<int> locals;
    for (int r = 0; r < size_; ++r)
        if (host(r) == host(rank_)) locals.push_back(r);
    auto local_index = [&](int r) {
        return int(std::lower_bound(locals.begin(), locals.end(), r) - locals.begin());
    };
    my_local_ = local_index(rank_);
    nslots_ = uint32_t(locals.size());
    peers_.assign(size_, nullptr);
    for (int r : peers) {
        if (r < 0 || r >= size_ || r == rank_ || host(r) != host(rank_))
            return Status(base::Errc::invalid, "shm: cannot serve rank " + std::to_string(r) +
                                                   " (not another rank of "
                                                   "this host)");
        if (peers_[r]) continue;
        owned_.push_back(std::make_unique<Peer>());
        Peer* p = owned_.back().get();
        p->rank = r;
        p->local = local_index(r);
        peers_[r] = p;
        rx_.push_back(p);
    }
    int64_t rs = std::clamp<int64_t>(t_ring_size.get(), 64 * 1024, int64_t(1) << 30);
    ring_size_ = pow2_at_least(uint64_t(rs));
    stride_ = kPage + ring_size_;
    seg_len_ = kPage + nslots_ * stride_;

    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) return sys_error("epoll_create1", errno);
    if (rx_.empty()) return Status::OK();

    // Wake socket: abstract unix datagram, named from job and rank (no file to clean up).
    wake_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (wake_fd_ < 0) return sys_error("socket(AF_UNIX)", errno);
    std::string wake_name = "wanmpi-" + detail::hex64(job_hash_) + "-" + std::to_string(rank_);
    {
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::memcpy(sa.sun_path + 1, wake_name.data(), wake_name.size());
        socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + wake_name.size());
        if (::bind(wake_fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
            if (errno != EADDRINUSE) return sys_error("bind wake socket", errno);
            // Another job hashed to the same name: let the kernel pick a unique one.
            WANMPI_LOG(debug, "shm: wake socket name %s in use, autobinding", wake_name.c_str());
            sa_family_t fam = AF_UNIX;
            if (::bind(wake_fd_, reinterpret_cast<sockaddr*>(&fam), sizeof fam) != 0)
                return sys_error("autobind wake socket", errno);
            sockaddr_un got{};
            socklen_t gl = sizeof got;
            getsockname(wake_fd_, reinterpret_cast<sockaddr*>(&got), &gl);
            wake_name.assign(got.sun_path + 1, gl - offsetof(sockaddr_un, sun_path) - 1);
        }
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_fd_;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) return sys_error("epoll_ctl", errno);

    // The segment.
    const std::string& mode = t_segment.get();
    if (mode != "auto" && mode != "memfd" && mode != "shm_open")
        return Status(base::Errc::invalid,
                      "shm: WANMPI_SHM_SEGMENT must be auto, memfd or "
                      "shm_open, not '" +
                          mode + "'");
    int fd = -1;
    if (mode != "shm_open") {
        fd = ::memfd_create("wanmpi-shm", MFD_CLOEXEC);
        if (fd < 0 && mode == "memfd") return sys_error("memfd_create", errno);
        if (fd >= 0 && mode == "auto") {
            // Can a process take fds from another with pidfd_getfd here (kernel >= 5.6, not
            // blocked by seccomp)? Try it on ourselves; peers of the same user get the same answer
            // unless ptrace rules differ, which connect() reports.
            int pfd = sys_pidfd_open(getpid());
            int dup = pfd >= 0 ? sys_pidfd_getfd(pfd, fd) : -1;
            int e = errno;
            if (dup >= 0) ::close(dup);
            if (pfd >= 0) ::close(pfd);
            if (dup < 0) {
                WANMPI_LOG(info, "shm: pidfd_getfd not usable (%s), using shm_open",
                           base::errno_text(e).c_str());
                ::close(fd);
                fd = -1;
            }
        }
    }
    if (fd < 0) {
        shm_name_ = "/wanmpi-" + detail::hex64(job_hash_) + "-" + std::to_string(rank_);
        fd = ::shm_open(shm_name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) {
            // A stale object of an earlier job with the same hash (it crashed): replace it.
            ::shm_unlink(shm_name_.c_str());
            fd = ::shm_open(shm_name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        }
        if (fd < 0) {
            int e = errno;
            shm_name_.clear();
            return sys_error("shm_open", e);
        }
    }
    memfd_ = fd;
    if (::ftruncate(fd, off_t(seg_len_)) != 0) return sys_error("ftruncate segment", errno);
    void* m = ::mmap(nullptr, seg_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return sys_error("mmap segment", errno);
    seg_ = static_cast<uint8_t*>(m);
    my_hdr_ = reinterpret_cast<SegHeader*>(seg_);
    my_hdr_->magic = kMagic;
    my_hdr_->version = kVersion;
    my_hdr_->rank = rank_;
    my_hdr_->pid = getpid();
    my_hdr_->job_hash = job_hash_;
    my_hdr_->ring_size = ring_size_;
    my_hdr_->slot_stride = stride_;
    my_hdr_->nslots = nslots_;
    my_hdr_->expected_mappers = uint32_t(rx_.size());
    {
        int q = int(::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0));
        // On an oversubscribed host ranks sleep on almost every message, and a membarrier
        // per sleep (a syscall plus an IPI to every CPU running a rank) costs more than the
        // fence it saves each sender: use fences there.
        membarrier_ =
            job.local_ranks <= job.cores &&
            q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) && t_membarrier.get() &&
            ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
        my_hdr_->membarrier = membarrier_ ? 1 : 0;
    }
    my_hdr_->seg_len = seg_len_;
    {
        int64_t pf = t_prefault.get();
        prefault_ = pf < 0 || (pf > 0 && job.local_ranks <= pf);
    }
    for (Peer* p : rx_) {
        uint8_t* slot = seg_ + kPage + uint64_t(p->local) * stride_;
        prefault(slot, stride_);
        p->in_ctrl = reinterpret_cast<RingCtrl*>(slot);
        p->in_data = slot + kPage;
        p->in_size = ring_size_;
        p->in_mask = ring_size_ - 1;
    }

    // KVS value: version:pid:m:fd|s:name:seg_len:wake_name:probe_addr(hex)
    std::string v = "1:" + std::to_string(getpid()) + ":" +
                    (shm_name_.empty() ? "m:" + std::to_string(fd) : "s:" + shm_name_) + ":" +
                    std::to_string(seg_len_) + ":" + wake_name + ":" +
                    detail::hex64(reinterpret_cast<uint64_t>(&my_hdr_->magic));
    return kvs.put("shm-" + std::to_string(rank_), v);
}

Status ShmTransport::map_peer(Peer& p, const std::string& value) {
    std::string who = "rank " + std::to_string(p.rank);
    auto bad = [&](const std::string& why) {
        return Status(base::Errc::fatal, "shm: " + who + ": " + why);
    };
    auto f = split(value, ':');
    uint64_t pid = 0, seg_len = 0, probe = 0;
    if (f.size() != 7 || f[0] != "1" || !parse_u64(f[1], pid) || (f[2] != "m" && f[2] != "s") ||
        !parse_u64(f[4], seg_len) || !parse_u64(f[6], probe, 16) || f[5].empty() ||
        f[5].size() > sizeof(sockaddr_un::sun_path) - 2)
        return bad("malformed address '" + value + "'");
    p.pid = pid_t(pid);
    who += " (pid " + std::to_string(pid) + ")";
    // The peer died during start-up (core's last fence keeps a live peer in MPI_Init until we
    // are done here): say so, and nothing about settings. Its shm_open name, if any, goes too:
    // the owner would have unlinked it at exit, had it exited normally.
    auto exited = [&] {
        if (f[2] == "s") ::shm_unlink(f[3].c_str());
        return Status(base::Errc::peer_failed,
                      "shm: " + detail::shm_attach_error(who, true, 0, "", 0));
    };
    int open_err = 0;
    p.pidfd = sys_pidfd_open(p.pid);
    if (p.pidfd < 0) {
        open_err = errno;
        if (open_err == ESRCH) return exited();
        WANMPI_LOG(warn, "shm: pidfd_open(%d): %s; exits of local peers will not be noticed",
                   int(p.pid), base::errno_text(open_err).c_str());
    }
    int fd = -1;
    if (f[2] == "m") {
        uint64_t remote_fd;
        if (!parse_u64(f[3], remote_fd)) return bad("malformed fd in '" + value + "'");
        int getfd_err = open_err;  // without a pidfd, why there is none
        if (p.pidfd >= 0) {
            fd = sys_pidfd_getfd(p.pidfd, int(remote_fd));
            if (fd < 0) getfd_err = errno;
        }
        if (fd < 0) {
            std::string path = "/proc/" + std::to_string(pid) + "/fd/" + f[3];
            fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
            if (fd < 0) {
                int proc_err = errno;
                bool gone = getfd_err == ESRCH || proc_err == ESRCH ||
                            pidfd_exited(p.pidfd, getfd_err == EBADF ? 100 : 0) ||
                            (p.pidfd < 0 && ::kill(p.pid, 0) != 0 && errno == ESRCH);
                if (gone) return exited();
                return Status(base::Errc::fatal,
                              "shm: " + detail::shm_attach_error(who, false, getfd_err, path,
                                                                 proc_err));
            }
        }
    } else {
        fd = ::shm_open(f[3].c_str(), O_RDWR | O_CLOEXEC, 0);
        if (fd < 0) {
            int e = errno;
            if (pidfd_exited(p.pidfd, 0)) return exited();
            return bad("shm_open " + f[3] + ": " + base::errno_text(e));
        }
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) < seg_len || seg_len < 2 * kPage) {
        ::close(fd);
        return bad("shared-memory segment has the wrong size");
    }
    void* m = ::mmap(nullptr, seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    ::close(fd);
    if (m == MAP_FAILED) return bad("mmap: " + base::errno_text(e));
    p.map = m;
    p.map_len = seg_len;
    auto* h = static_cast<SegHeader*>(m);
    if (h->magic != kMagic || h->version != kVersion)
        return bad("segment is not a wanmpi shm segment of this version");
    if (h->rank != p.rank || h->pid != int64_t(pid) || h->job_hash != job_hash_)
        return bad("segment belongs to another process or job (pid reused?)");
    if (h->nslots != nslots_ || h->ring_size < 64 * 1024 || (h->ring_size & (h->ring_size - 1)) ||
        h->slot_stride != kPage + h->ring_size || h->seg_len != seg_len ||
        kPage + uint64_t(h->nslots) * h->slot_stride > seg_len)
        return bad("segment geometry does not match this host's rank count");
    // A shm_open segment outlives its owner, so a peer that died a moment ago maps fine: report
    // it here, as a start-up failure, rather than as a death at its first message.
    if (pidfd_exited(p.pidfd, 0)) return exited();
    if (f[2] == "s") {
        uint32_t expected = h->expected_mappers;
        if (aref(h->mapped).fetch_add(1, std::memory_order_acq_rel) + 1 == expected)
            ::shm_unlink(f[3].c_str());  // last one in: the name is no longer needed
    }
    p.out_seg = h;
    uint8_t* slot = static_cast<uint8_t*>(m) + kPage + uint64_t(my_local_) * h->slot_stride;
    prefault(slot, h->slot_stride);
    p.out_ctrl = reinterpret_cast<RingCtrl*>(slot);
    p.out_data = slot + kPage;
    p.out_size = h->ring_size;
    p.out_mask = h->ring_size - 1;
    uint64_t max_rec = p.out_size / 4;
    p.max_single = max_rec - kFramePrefix;
    p.max_cont = max_rec - kContPrefix;
    p.cheap = membarrier_ && h->membarrier == 1;
    p.wake.sun_family = AF_UNIX;
    std::memcpy(p.wake.sun_path + 1, f[5].data(), f[5].size());
    p.wake_len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + f[5].size());
    if (p.pidfd >= 0) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = p.pidfd;
        if (epoll_ctl(epfd_, EPOLL_CTL_ADD, p.pidfd, &ev) != 0)
            return bad("epoll_ctl pidfd: " + base::errno_text(errno));
    }
    if (cma_ok_) {
        // Probe single-copy reads on this peer: read its header's magic through CMA.
        uint64_t got = 0;
        iovec l{&got, sizeof got}, r{reinterpret_cast<void*>(probe), sizeof got};
        ssize_t n = ::process_vm_readv(p.pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == ESRCH) return exited();  // not a reason to give up CMA for all
        if (n != ssize_t(sizeof got) || got != kMagic) {
            WANMPI_LOG(info,
                       "shm: single-copy reads from %s not possible (%s); large messages "
                       "go through the rings",
                       who.c_str(), n < 0 ? base::errno_text(errno).c_str() : "short read");
            cma_ok_ = false;
        }
    }
    return Status::OK();
}

Status ShmTransport::connect(base::Kvs& kvs) {
    cma_ok_ = t_cma.get();
    max_inline_ = uint64_t(std::max<int64_t>(0, t_max_inline.get()));
    for (Peer* p : rx_) {
        auto v = kvs.get("shm-" + std::to_string(p->rank));
        if (!v)
            return Status(base::Errc::fatal,
                          "shm: no address for rank " + std::to_string(p->rank) + " in the KVS");
        Status st = map_peer(*p, *v);
        if (!st) return st;
        max_inline_ = std::min(max_inline_, p->max_single);
    }
    if (rx_.empty()) cma_ok_ = false;
    return Status::OK();
}

void ShmTransport::finalize() {
    // Core has quiesced, so queues should be empty; give queued data one more chance, but never
    // wait here: the receivers are finalizing too and no longer consume.
    if (nqueued_) {
        for (Peer* p : rx_)
            if (!p->q.empty()) push(*p);
        if (nqueued_)
            WANMPI_LOG(debug, "shm: finalize with sends still queued for %d peers", nqueued_);
    }
    if (my_hdr_) aref(my_hdr_->finalized).store(1, std::memory_order_release);
    cleanup();
}

void ShmTransport::cleanup() {
    for (auto& p : owned_) {
        if (p->pidfd >= 0) ::close(p->pidfd);
        p->pidfd = -1;
        if (p->map) ::munmap(p->map, p->map_len);
        p->map = nullptr;
        p->state = p->state == Peer::ok ? Peer::gone : p->state;
    }
    rx_.clear();
    if (seg_) ::munmap(seg_, seg_len_);
    seg_ = nullptr;
    my_hdr_ = nullptr;
    if (memfd_ >= 0) ::close(memfd_);
    memfd_ = -1;
    if (!shm_name_.empty()) ::shm_unlink(shm_name_.c_str());
    shm_name_.clear();
    if (wake_fd_ >= 0) ::close(wake_fd_);
    wake_fd_ = -1;
    if (epfd_ >= 0) ::close(epfd_);
    epfd_ = -1;
    nqueued_ = 0;
}

Status ShmTransport::get(int peer, uint64_t remote_addr, void* local, uint64_t len) {
    if (unsigned(peer) >= peers_.size() || !peers_[peer])
        return Status(base::Errc::invalid,
                      "shm: get from rank " + std::to_string(peer) + ", which is not a local peer");
    if (!cma_ok_) return Status(base::Errc::invalid, "shm: single-copy reads are not available");
    Peer& p = *peers_[peer];
    uint64_t done = 0;
    while (done < len) {
        size_t n = size_t(std::min<uint64_t>(len - done, cma_chunk_));
        iovec l{static_cast<uint8_t*>(local) + done, n};
        iovec r{reinterpret_cast<void*>(remote_addr + done), n};
        ssize_t got = ::process_vm_readv(p.pid, &l, 1, &r, 1, 0);
        if (got < 0) {
            int e = errno;
            if (e == EINTR) continue;
            std::string what = "shm: read of " + std::to_string(len) + " bytes from rank " +
                               std::to_string(peer) + " (pid " + std::to_string(p.pid) +
                               "): " + base::errno_text(e);
            if (e == ESRCH) return Status(base::Errc::peer_failed, what, e);
            if (e == EFAULT) return Status(base::Errc::invalid, what, e);
            return Status(base::Errc::io_error, what, e);
        }
        if (got == 0)
            return Status(base::Errc::io_error,
                          "shm: read from rank " + std::to_string(peer) + " made no progress");
        done += uint64_t(got);
    }
    return Status::OK();
}

}  // namespace

namespace detail {

std::string shm_attach_error(const std::string& who, bool exited, int getfd_errno,
                             const std::string& proc_path, int proc_errno) {
    if (exited)
        return who +
               " exited during start-up, before this rank had attached its shared memory (the "
               "launcher reports how it ended)";
    std::string s = who + ": cannot take its shared-memory fd (pidfd_getfd: " +
                    base::errno_text(getfd_errno) + ", " + proc_path + ": " +
                    base::errno_text(proc_errno) + ")";
    // The hint is for a kernel that refuses to hand over another process's fd (ptrace rules,
    // seccomp, no pidfd_getfd): shm_open needs none of that. For anything else (EMFILE, a
    // bad fd number) it would send the user after a setting that changes nothing.
    auto refused = [](int e) { return e == EPERM || e == EACCES || e == ENOSYS; };
    if (refused(getfd_errno) || refused(proc_errno))
        s += "; this host does not let a process take another's fds (ptrace rules such as "
             "kernel.yama.ptrace_scope, seccomp, or a kernel before 5.6): try "
             "WANMPI_SHM_SEGMENT=shm_open";
    return s;
}

}  // namespace detail

std::unique_ptr<Transport> make_shm_transport() {
    return std::make_unique<ShmTransport>();
}

}  // namespace wanmpi::transport
