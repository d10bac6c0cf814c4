// One-sided communication (MPI-3.1 chapter 11): windows, RMA operations and synchronization.
// Design: docs/design/onesided.md. The layer sits above coll (it uses collectives on a window's
// private communicator) and below the bindings (src/rma/api.cpp holds the C entry points).
//
// Every RMA operation travels as point-to-point messages in the p2p context of a private
// duplicate of the window's communicator (`icomm`), so it works over every route the engine has
// (self, shm, tcp, the wan route, through impi-relay) with no new wire format below. The target
// applies operations itself, from a progress hook (rma_hook, target.cpp) that runs in every
// poll() of the engine: a target inside any MPI call makes progress; a target computing outside
// MPI delays passive-target operations until its next MPI call (as MPICH without an async
// progress thread). Windows from MPI_Win_allocate_shared are one shared segment per host that
// the ranks also load and store directly; operations on a same-host rank's part of such a window
// (and of MPI_Win_allocate's) with predefined datatypes take the lean path of fast.cpp from the
// entry point.
//
// Ownership: a Window is owned by its handle (MPI_Win_free deletes it). Requests in `out` and
// `tsends` are owned by the window until complete. Threading: under the API lock, like core.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>
#include <mpi.h>

#include "core/comm.hpp"
#include "core/datatype.hpp"
#include "core/engine.hpp"
#include "core/info.hpp"

namespace wanmpi::rma {

// ---- wire format (all fields big-endian, base/codec.hpp) ---------------------------------------
// Messages on icomm's p2p context:
//   tag kTagHdr   origin -> target   header (64 bytes) [+ runs] [+ payload], see Hdr
//   tag kTagData  origin -> target   runs, then payload, when they did not fit the header message
//                                    (in that order, right after their header: the non-overtaking
//                                    rule matches them to the receives the target posts when the
//                                    header arrives)
//   tag >= kTagReply   target -> origin   replies: fetched data, lock grants, flush/unlock acks
// A run is (offset i64, count i64, builtin datatype handle i32), 20 bytes: `count` basic
// elements at byte `offset` from the target address (the flattened target datatype).
constexpr int kTagHdr = 1;
constexpr int kTagData = 2;
constexpr int kTagReply = 16;
constexpr int kHdrBytes = 64;
constexpr int kRunBytes = 20;
constexpr int kInlineMax = 8192;  // largest header message (header + runs + payload)

enum class Msg : uint8_t {
    put = 1, get, acc, get_acc, cas, lock, unlock, flush, post, complete
};
enum : uint8_t { kFlagPayloadInline = 1, kFlagRunsInline = 2, kFlagExclusive = 4 };

struct Hdr {
    Msg type = Msg::put;
    uint8_t flags = 0;
    int32_t op = 0;          // MPI_Op handle (accumulates)
    int64_t disp = 0;        // target_disp as the user gave it (the target scales it)
    int64_t count = 0;       // runs, or basic elements when `basic` names the target type
    int32_t basic = 0;       // builtin datatype handle: the whole target is `count` of it
    int32_t reply_tag = 0;
    int64_t bytes = 0;       // packed payload bytes (put/acc/get_acc; cas: 2 elements)
    int64_t rbytes = 0;      // bytes the reply carries (get, get_acc, cas)
};
void hdr_encode(const Hdr& h, uint8_t* p);
Hdr hdr_decode(const uint8_t* p);

struct Run {
    int64_t off;
    int64_t count;
    int32_t basic;  // builtin datatype handle
};

enum : uint8_t { kDirtyFlush = 1, kDirtyReply = 2 };  // Window::dirty

// ---- windows -----------------------------------------------------------------------------------
struct Region {  // MPI_Win_attach'ed memory of a dynamic window
    uintptr_t base;
    int64_t size;
};

// An origin-side request in flight: a send of a header or of data, or the receive of a reply.
struct OriginOp {
    core::Request* r = nullptr;
    int target = 0;
    std::unique_ptr<char[]> buf;  // the message bytes the send reads (nullptr: user buffer)
    core::Request* user = nullptr;  // R* operation's request, completed with this one
    std::unique_ptr<char[]> result;  // get_acc/cas reply staging, copied to `result_to`
    void* result_to = nullptr;
    int64_t result_count = 0;
    MPI_Datatype result_dt = MPI_DATATYPE_NULL;
};

// An operation at the target whose runs or payload are still arriving, in its origin's FIFO.
struct TargetOp {
    Hdr h;
    std::vector<Run> runs;
    std::unique_ptr<char[]> runs_buf;
    std::unique_ptr<char[]> data;
    core::Request* runs_req = nullptr;
    core::Request* data_req = nullptr;
    bool direct = false;  // the payload was received straight into window memory
};

struct Window {
    MPI_Win handle = MPI_WIN_NULL;
    MPI_Comm icomm = MPI_COMM_NULL;  // private duplicate of the user's communicator
    core::Comm* comm = nullptr;
    int rank = 0, nranks = 0;
    char* base = nullptr;
    int64_t size = 0;
    int64_t disp_unit = 1;
    int flavor = MPI_WIN_FLAVOR_CREATE;
    int model = MPI_WIN_UNIFIED;
    std::vector<int64_t> sizes, units;  // every rank's (not for dynamic windows)
    // attribute values MPI_Win_get_attr hands out pointers to
    void* attr_base = nullptr;
    MPI_Aint attr_size = 0;
    int attr_unit = 1;
    // This host's segment, every flavor (win.cpp): seg_hdr bytes of header, then for
    // MPI_Win_allocate / allocate_shared the parts; shm_base[r] is rank r's part in this
    // process's mapping, nullptr for ranks on other hosts (empty for create / dynamic windows,
    // whose segment is the header alone). local[r]: rank r is on this host and maps the segment,
    // so its lock word is taken directly.
    char* seg = nullptr;
    size_t seg_len = 0;
    std::vector<char*> shm_base;
    std::vector<uint8_t> local;
    std::vector<int> lidx;  // window rank -> index among this host's ranks (-1: other host)
    int nlocal = 0;
    int64_t seg_hdr = 0, seg_pscw = 0, seg_regions = 0;  // header size, offsets (below)
    // Windows on user memory (create, dynamic): puts and gets to a rank on this host are done by
    // the origin with process_vm_writev / readv (CMA) into the target's memory. pid and base
    // address of every rank (from the creation exchange); cma[r]: still permitted (cleared when
    // the kernel refuses, and then the operations go as messages).
    bool direct = true;  // WANMPI_RMA_DIRECT (win.cpp): same-host operations without messages
    bool all_here = false;  // every rank is on_host (set at creation): lock_all by lock words
    std::vector<int64_t> pids;
    std::vector<uint64_t> bases;
    std::vector<uint8_t> cma;
    std::vector<Region> regions;
    MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
    std::string name;
    core::InfoPairs info;

    // target side
    bool busy = false;  // progress_window is running (see there)
    core::Request* hdr_req = nullptr;
    std::unique_ptr<char[]> hdr_buf;
    std::vector<std::deque<TargetOp>> fifo;  // per origin, in arrival order
    int lock_shared = 0;
    bool lock_excl = false;
    struct Waiter {
        int origin;
        int reply_tag;
        bool excl;
    };
    std::deque<Waiter> lock_waiters;
    std::vector<int> posts_seen;  // POSTs received per target (PSCW access side)
    int completes_seen = 0;       // COMPLETEs received (PSCW exposure side)
    std::vector<uint32_t> posts_used, done_used;  // PSCW counters consumed, per window rank
    struct TSend {
        core::Request* r;
        std::unique_ptr<char[]> buf;
    };
    std::vector<TSend> tsends;    // replies in flight

    // origin side
    bool fence_epoch = false;
    bool lock_all = false;
    std::vector<uint8_t> locked;  // per target: 0, or MPI_LOCK_SHARED/EXCLUSIVE - 233 (1, 2)
    std::vector<uint8_t> nocheck; // per target: lock taken with MPI_MODE_NOCHECK
    // per target: operations sent as messages since the last flush. kDirtyFlush: remote
    // completion needs a FLUSH round trip. kDirtyReply: the last one sent was a fetching
    // operation (get, get_accumulate, fetch_and_op, compare_and_swap) whose reply is awaited in
    // `out`; the target answers it only after applying it and, its FIFO being in order, every
    // operation sent before it, so waiting for that reply is the flush (no FLUSH message).
    std::vector<uint8_t> dirty;
    std::vector<int> start_group; // PSCW access epoch targets (window ranks), empty if none
    std::vector<uint8_t> start_posted;  // per start_group entry: its POST consumed
    bool in_start = false;
    std::vector<int> post_group;  // PSCW exposure epoch origins
    bool in_post = false;
    std::vector<OriginOp> out;
    int next_tag = kTagReply;
};

// Rank t is on this host and reached without messages: its lock word in the segment, and its
// memory by loads and stores (allocate flavors, this rank itself) or CMA (create, dynamic).
inline bool on_host(const Window* w, int t) {
    return w->direct && !w->local.empty() && w->local[size_t(t)];
}

// Handles: 0x20000000 | (slot + 1); MPI_WIN_NULL is 0x20000000.
Window* win_lookup(MPI_Win h);
// Raise `code` on the window's error handler (w may be nullptr: MPI_COMM_WORLD's). Inline for
// the success case, which every RMA call ends with.
int raise_error(Window* w, int code);
inline int raise(Window* w, int code) {
    return __builtin_expect(code == MPI_SUCCESS, 1) ? code : raise_error(w, code);
}

// The segment header (Window::seg_hdr bytes): an accumulate lock word (u32 at offset 0, see
// seg_lock) and from offset 64 one window-lock word per window rank (std::atomic<int32_t>:
// 0 free, n > 0 held shared n times, -1 held exclusive). Every accumulate-class operation
// (applied by the target for messages, or directly by an origin on the same host) runs under
// the accumulate lock, exclusive or shared (atomic.cpp), so accumulates stay atomic whichever
// process applies them. MPI_Win_lock of a rank on this host takes that rank's lock word directly; the
// target takes its own word for LOCK messages from other hosts, so both kinds exclude each
// other.
// Then (offset seg_pscw) the PSCW counters of the host's ranks, by host-local index
// (Window::lidx), L = ranks on the host: post[t][o] (u32, L x L) counts the MPI_Win_post calls
// of t that named o, done[t][o] (u32, L x L, after post) the MPI_Win_complete calls of o for
// t; each side remembers how many it has consumed (posts_used, done_used), so an epoch costs one
// atomic increment each way instead of a message.
// Dynamic windows add (offset seg_regions) one table per window rank of the regions it has
// attached (kSegRegions at most; more and the origins send messages, which the target checks),
// so that same-host origins check their CMA accesses as the target checks messages:
//   seq u64 (odd while the owner rewrites the table) | count i64 (-1: too many) |
//   kSegRegions x (base u64, size i64)
// written by the owner only (MPI_Win_attach / detach), read by the others with the seqlock.
constexpr int kSegRegions = 32;
constexpr int64_t kRegTabBytes = 16 + 16 * kSegRegions;
inline int64_t seg_locks_end(int nranks) { return (64 + 4 * int64_t(nranks) + 63) / 64 * 64; }
// PSCW counter of target t and origin o (window ranks, both on this host): post or done.
uint32_t* pscw_word(const Window* w, bool done, int t, int o);
// Publishes this rank's attached regions to its table / reads rank r's (false: not available,
// use messages). Dynamic windows with a segment only.
void regions_publish(Window* w);
bool regions_read(const Window* w, int r, std::vector<Region>* out);
// Whether [addr + runs) lies inside `regs` (a range may span regions attached back to back).
bool attached(const std::vector<Region>& regs, const char* addr, const std::vector<Run>& runs);
// The accumulate lock (target.cpp), a reader-writer spin lock: exclusive for accumulates done
// with plain loads and stores, shared for those done with atomic instructions (atomic.cpp).
void seg_lock(Window* w);
void seg_unlock(Window* w);
void seg_lock_shared(Window* w);
void seg_unlock_shared(Window* w);
// Window lock of rank `r` (whose part is in this host's segment, or this rank itself):
// try once / release. For a window without a segment the target's own counters are used.
bool lock_try(Window* w, int r, bool excl);
void lock_release(Window* w, int r, bool excl);

// Window memory at `addr` laid out by `runs` <-> packed bytes.
void gather(char* addr, const std::vector<Run>& runs, char* out);
void scatter(char* addr, const std::vector<Run>& runs, const char* in);
// Accumulate-class operations on window memory (atomic.cpp: which elements use atomic
// instructions and which the segment lock). acc_apply: memory at `addr` laid out by `runs`
// (op)= packed `in` (not read for MPI_NO_OP), the previous contents packed into `old` first if
// it is set. cas_apply: one element of builtin `basic`; its previous value to `old`, `val`
// replaces it if it equals `cmp` bit for bit.
void acc_apply(Window* w, char* addr, const std::vector<Run>& runs, const char* in, MPI_Op op,
               char* old);
void cas_apply(Window* w, char* addr, int32_t basic, const char* val, const char* cmp,
               char* old);
// The same for `count` elements of builtin `b` at `at` (one run), and for a builtin already
// looked up: what the lean path (fast.cpp) calls.
void acc_one(Window* w, char* at, const core::Datatype& b, int64_t count, const char* in,
             MPI_Op op, char* old);
void cas_apply(Window* w, char* addr, const core::Datatype& b, const char* val, const char* cmp,
               char* old);

// ---- target side (target.cpp) -------------------------------------------------------------------
void target_start(Window* w);   // posts the header receive, installs the progress hook
void target_stop(Window* w);    // cancels it (MPI_Win_free, after the closing barrier)
int progress_window(Window* w); // one pass: headers, FIFOs, finished sends (0: nothing)
// Address of target displacement `disp` at this rank (dynamic windows: disp is an address).
char* target_addr(Window* w, int64_t disp);

// ---- origin side (origin.cpp) -------------------------------------------------------------------
int reply_tag(Window* w);
// Sends a header-only message to window rank `target` (sync messages); error code or success.
int send_ctrl(Window* w, int target, const Hdr& h);
// Sends the `bytes` at `data` to `origin` with `tag` (target-side replies): at once without a
// request when the engine takes the frame (core::send_now), else as a send tracked in
// w->tsends until the engine is done with it, from `keep` (the heap buffer holding `data`, owned
// by the callee from then on) or, without one, from a copy. `data` may be reused on return.
int send_reply(Window* w, int origin, int tag, const char* data, int64_t bytes,
               std::unique_ptr<char[]> keep = nullptr);
// Posts a receive for a reply; returns the request (the caller waits on it) or nullptr + *err.
core::Request* post_recv(Window* w, int src, int tag, void* buf, int64_t count, MPI_Datatype dt,
                         int* err);
void wait_req(core::Request* r);
void reap(Window* w);                // releases completed origin requests
int wait_target(Window* w, int target);  // all origin requests to `target` (-1: all) complete
int flush(Window* w, int target);        // remote completion at `target`
// A poll of the engine every 16th call: operations done without messages (direct, lock words)
// never wait, and a rank looping on them (a lock / get / unlock of its own memory, as MPICH's
// linked_list_bench does) would otherwise never apply the operations others send it.
void local_progress();
// Sends a control message (`type`: lock, unlock or flush, with `flags`) with a reply tag to each
// target (only those with operations since their last flush if `only_dirty`) and waits for
// every answer; unlock and flush then also wait for the local requests (remote completion).
int round_trip(Window* w, const std::vector<int>& targets, Msg type, uint8_t flags,
               bool only_dirty);
int flush_many(Window* w, const std::vector<int>& targets);

}  // namespace wanmpi::rma
