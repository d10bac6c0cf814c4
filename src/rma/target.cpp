// The target side of one-sided communication: the header codec, the progress hook that
// receives operations and applies them to window memory, and the lock table (see rma.hpp).
//
// Order and atomicity. Operations from one origin are applied strictly in arrival order (one
// FIFO per origin): an operation whose runs or payload still arrive as separate messages holds
// back the ones behind it, so a FLUSH, UNLOCK or COMPLETE is answered only after everything sent
// before it has been applied. That gives the standard's default accumulate ordering
// (rar,raw,war,waw) and makes a flush acknowledgement mean remote completion. All operations on
// a window are applied by the target process itself, one at a time under the API lock, or by
// origins on this host with loads, stores and atomics; accumulates go through atomic.cpp, whose
// per-element choice of atomic instruction or segment lock keeps them atomic whoever applies
// them.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/codec.hpp"
#include "base/log.hpp"
#include "core/datatype.hpp"
#include "core/errors.hpp"
#include "core/op.hpp"
#include "rma/rma.hpp"

namespace wanmpi::rma {

using base::get_be32;
using base::get_be64;
using base::put_be32;
using base::put_be64;

// Header layout: type u8 | flags u8 | 0 u16 | op u32 | disp u64 | count u64 | basic u32 |
// reply_tag u32 | bytes u64 | rbytes u64 | 16 reserved bytes.
void hdr_encode(const Hdr& h, uint8_t* p) {
    std::memset(p, 0, kHdrBytes);
    p[0] = uint8_t(h.type);
    p[1] = h.flags;
    put_be32(p + 4, uint32_t(h.op));
    put_be64(p + 8, uint64_t(h.disp));
    put_be64(p + 16, uint64_t(h.count));
    put_be32(p + 24, uint32_t(h.basic));
    put_be32(p + 28, uint32_t(h.reply_tag));
    put_be64(p + 32, uint64_t(h.bytes));
    put_be64(p + 40, uint64_t(h.rbytes));
}
Hdr hdr_decode(const uint8_t* p) {
    Hdr h;
    h.type = Msg(p[0]);
    h.flags = p[1];
    h.op = int32_t(get_be32(p + 4));
    h.disp = int64_t(get_be64(p + 8));
    h.count = int64_t(get_be64(p + 16));
    h.basic = int32_t(get_be32(p + 24));
    h.reply_tag = int32_t(get_be32(p + 28));
    h.bytes = int64_t(get_be64(p + 32));
    h.rbytes = int64_t(get_be64(p + 40));
    return h;
}

namespace {

std::vector<Window*>& live() {
    static std::vector<Window*> v;
    return v;
}

int hook() {
    int n = 0;
    // A window freed by a callback cannot disappear mid-pass: windows are only freed by
    // MPI_Win_free, which never runs inside poll().
    for (Window* w : live()) n += progress_window(w);
    return n;
}

bool done_req(void* r) { return static_cast<core::Request*>(r)->complete; }

// The header receive is set up once and started again after each header (core::start resets a
// request's state): no request handle, datatype or communicator lookups per operation. `r` is
// the completed one to restart, or nullptr for the first.
int post_hdr(Window* w, core::Request* r = nullptr) {
    int rc = MPI_SUCCESS;
    if (!r) {
        r = core::request_new(core::ReqKind::recv);
        if (!r) return core::make_error(MPI_ERR_INTERN, "out of request handles");
        rc = core::request_setup(r, w->hdr_buf.get(), kInlineMax, MPI_BYTE, MPI_ANY_SOURCE,
                                 kTagHdr, w->comm, core::Mode::standard);
    }
    if (rc == MPI_SUCCESS) rc = core::start(r);
    if (rc != MPI_SUCCESS) {
        core::request_release(r);
        w->hdr_req = nullptr;
        return rc;
    }
    w->hdr_req = r;
    return MPI_SUCCESS;
}

void decode_runs(const char* p, int64_t n, std::vector<Run>* out) {
    out->resize(size_t(n));
    auto* b = reinterpret_cast<const uint8_t*>(p);
    for (int64_t i = 0; i < n; ++i, b += kRunBytes)
        (*out)[size_t(i)] = Run{int64_t(get_be64(b)), int64_t(get_be64(b + 8)),
                                int32_t(get_be32(b + 16))};
}

// The runs an operation touches (a builtin target type is one run).
const std::vector<Run>& runs_of(TargetOp& t) {
    if (t.h.basic != 0 && t.runs.empty()) t.runs.push_back(Run{0, t.h.count, t.h.basic});
    return t.runs;
}

}  // namespace

// Copies between window memory at `addr` laid out by the runs and packed bytes.
void gather(char* addr, const std::vector<Run>& runs, char* out) {
    for (const Run& r : runs) {
        const core::Datatype* b = core::datatype_lookup(r.basic);
        if (!b) continue;
        core::pack(*b, addr + r.off, r.count, out);
        out += r.count * b->size;
    }
}
void scatter(char* addr, const std::vector<Run>& runs, const char* in) {
    for (const Run& r : runs) {
        const core::Datatype* b = core::datatype_lookup(r.basic);
        if (!b) continue;
        core::unpack(*b, in, r.count * b->size, addr + r.off);
        in += r.count * b->size;
    }
}
// The accumulate lock word (rma.hpp): bit 31 held exclusive, the low bits count shared holders.
// A writer first claims bit 31 (new shared holders then back off), then waits for the shared
// holders to leave, so a stream of small atomic operations cannot starve a large accumulate.
namespace {
constexpr uint32_t kExcl = 1u << 31;
std::atomic_ref<uint32_t> acc_word(Window* w) {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(w->seg));
}
// Spinning on another process's lock: yield now and then (the holder may be descheduled: 2
// cores, 8 ranks).
void backoff(int& spins) {
    if (++spins > 64) sched_yield();
}
}  // namespace

void seg_lock(Window* w) {
    if (!w->seg) return;
    auto l = acc_word(w);
    int spins = 0;
    for (uint32_t v = l.load(std::memory_order_relaxed);;) {
        if (!(v & kExcl) && l.compare_exchange_weak(v, v | kExcl, std::memory_order_acquire))
            break;
        backoff(spins);
        v = l.load(std::memory_order_relaxed);
    }
    while (l.load(std::memory_order_acquire) != kExcl) backoff(spins);
}
void seg_unlock(Window* w) {
    if (w->seg) acc_word(w).fetch_and(~kExcl, std::memory_order_release);
}
void seg_lock_shared(Window* w) {
    if (!w->seg) return;
    auto l = acc_word(w);
    int spins = 0;
    while (l.fetch_add(1, std::memory_order_acquire) & kExcl) {
        l.fetch_sub(1, std::memory_order_relaxed);
        while (l.load(std::memory_order_relaxed) & kExcl) backoff(spins);
    }
}
void seg_unlock_shared(Window* w) {
    if (w->seg) acc_word(w).fetch_sub(1, std::memory_order_release);
}

// Whether [addr + runs) lies inside attached memory (dynamic windows). A range may span several
// regions attached back to back (MPICH's test suite attaches two halves of one array).
bool attached(const std::vector<Region>& regs, const char* addr, const std::vector<Run>& runs) {
    for (const Run& r : runs) {
        const core::Datatype* b = core::datatype_lookup(r.basic);
        if (!b) return false;
        uintptr_t cur = uintptr_t(addr + r.off);
        uintptr_t hi = cur + uintptr_t(r.count * b->extent);
        while (cur < hi) {
            uintptr_t next = cur;
            for (const Region& g : regs)
                if (cur >= g.base && cur < g.base + uintptr_t(g.size))
                    next = std::max(next, g.base + uintptr_t(g.size));
            if (next == cur) return false;
            cur = next;
        }
    }
    return true;
}

namespace {

void grant(Window* w, int origin, int tag) {
    send_reply(w, origin, tag, nullptr, 0);
}

}  // namespace

bool lock_try(Window* w, int r, bool excl) {
    if (!w->seg) {  // only this rank's own counters (the target applying LOCK messages)
        if (w->lock_excl || (excl && w->lock_shared > 0)) return false;
        if (excl)
            w->lock_excl = true;
        else
            ++w->lock_shared;
        return true;
    }
    auto* l = reinterpret_cast<std::atomic<int32_t>*>(w->seg + 64) + r;
    int32_t v = l->load(std::memory_order_relaxed);
    if (excl) return v == 0 && l->compare_exchange_strong(v, -1, std::memory_order_acquire);
    return v >= 0 && l->compare_exchange_strong(v, v + 1, std::memory_order_acquire);
}

void lock_release(Window* w, int r, bool excl) {
    if (!w->seg) {
        if (excl)
            w->lock_excl = false;
        else if (w->lock_shared > 0)
            --w->lock_shared;
        return;
    }
    auto* l = reinterpret_cast<std::atomic<int32_t>*>(w->seg + 64) + r;
    if (excl)
        l->store(0, std::memory_order_release);
    else
        l->fetch_sub(1, std::memory_order_release);
}

namespace {

// Grants queued LOCK requests in order while they can be granted. With a segment, a rank on
// this host may hold the lock word without any message, so this is retried from every
// progress pass while requests wait (progress_window).
int try_grant_waiters(Window* w) {
    int n = 0;
    while (!w->lock_waiters.empty()) {
        Window::Waiter& q = w->lock_waiters.front();
        if (!lock_try(w, w->rank, q.excl)) break;
        grant(w, q.origin, q.reply_tag);
        w->lock_waiters.pop_front();
        ++n;
    }
    return n;
}

// Replies of at most this many bytes are built on the stack (send_reply copies them if the
// engine cannot take them at once).
constexpr int64_t kStackReply = 256;

// Applies an operation whose runs and payload are all here: `payload` the packed payload,
// `direct` a put already received into window memory.
void apply(Window* w, int origin, const Hdr& h, const std::vector<Run>& runs,
           const char* payload, bool direct) {
    switch (h.type) {
    case Msg::lock:
        w->lock_waiters.push_back(Window::Waiter{origin, h.reply_tag, (h.flags & kFlagExclusive) != 0});
        try_grant_waiters(w);
        return;
    case Msg::unlock:
        std::atomic_thread_fence(std::memory_order_seq_cst);
        lock_release(w, w->rank, (h.flags & kFlagExclusive) != 0);
        send_reply(w, origin, h.reply_tag, nullptr, 0);
        try_grant_waiters(w);
        return;
    case Msg::flush:
        std::atomic_thread_fence(std::memory_order_seq_cst);
        send_reply(w, origin, h.reply_tag, nullptr, 0);
        return;
    case Msg::post:
        ++w->posts_seen[size_t(origin)];
        return;
    case Msg::complete:
        std::atomic_thread_fence(std::memory_order_seq_cst);
        ++w->completes_seen;
        return;
    default:
        break;
    }
    char* addr = target_addr(w, h.disp);
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC && !attached(w->regions, addr, runs)) {
        // Erroneous program (MPI 3.1 §11.2.4): no attached memory there. Nothing is written;
        // a fetching operation still gets an answer (zeros) so its origin does not hang.
        WANMPI_LOG(error, "rma: window %s: rank %d accessed unattached memory at %p; ignored",
                        w->name.c_str(), origin, static_cast<void*>(addr));
        if (h.rbytes > 0 || h.type == Msg::get) {
            int64_t n = h.type == Msg::get ? h.bytes : h.rbytes;
            std::unique_ptr<char[]> z(new char[size_t(std::max<int64_t>(n, 1))]());
            send_reply(w, origin, h.reply_tag, z.get(), n, std::move(z));
        }
        return;
    }
    // The reply of a fetching operation: on the stack when small (the latency case: one
    // element of fetch_and_op / compare_and_swap), else a heap buffer the send may keep.
    char small[kStackReply];
    std::unique_ptr<char[]> big;
    auto reply_buf = [&](int64_t n) {
        if (n <= kStackReply) return small;
        big.reset(new char[size_t(n)]);
        return big.get();
    };
    switch (h.type) {
    case Msg::put:
        if (!direct) scatter(addr, runs, payload);
        break;
    case Msg::get: {
        char* buf = reply_buf(h.bytes);
        gather(addr, runs, buf);
        send_reply(w, origin, h.reply_tag, buf, h.bytes, std::move(big));
        break;
    }
    case Msg::acc:
        acc_apply(w, addr, runs, payload, h.op, nullptr);
        break;
    case Msg::get_acc: {
        char* buf = reply_buf(h.rbytes);
        acc_apply(w, addr, runs, payload, h.op, buf);
        send_reply(w, origin, h.reply_tag, buf, h.rbytes, std::move(big));
        break;
    }
    case Msg::cas: {
        // payload: the new value, then the compare value; one element of runs[0].basic.
        int64_t n = h.rbytes;
        char* buf = reply_buf(n);
        if (!runs.empty() && runs[0].off == 0 && n > 0)
            cas_apply(w, addr, runs[0].basic, payload, payload + n, buf);
        send_reply(w, origin, h.reply_tag, buf, n, std::move(big));
        break;
    }
    default:
        WANMPI_LOG(error, "rma: unknown operation %d from rank %d; ignored", int(h.type), origin);
    }
}

bool ready(const TargetOp& t) {
    return (!t.runs_req || t.runs_req->complete) && (!t.data_req || t.data_req->complete);
}

void drain(Window* w, int origin) {
    auto& q = w->fifo[size_t(origin)];
    while (!q.empty() && ready(q.front())) {
        TargetOp& t = q.front();
        if (t.runs_req) {
            decode_runs(t.runs_buf.get(), t.h.count, &t.runs);
            core::request_release(t.runs_req);
            t.runs_req = nullptr;
        }
        if (t.data_req) {
            core::request_release(t.data_req);
            t.data_req = nullptr;
        }
        apply(w, origin, t.h, runs_of(t), t.data.get(), t.direct);
        q.pop_front();
    }
}

core::Request* post_data(Window* w, int origin, void* buf, int64_t bytes) {
    int err = MPI_SUCCESS;
    core::Request* r = core::request_new(core::ReqKind::recv);
    if (!r) return nullptr;
    err = core::request_setup(r, buf, bytes, MPI_BYTE, origin, kTagData, w->comm,
                              core::Mode::standard);
    if (err == MPI_SUCCESS) err = core::start(r);
    if (err != MPI_SUCCESS) {
        core::request_release(r);
        return nullptr;
    }
    return r;
}

// A header arrived from `origin`: post the receives for what follows it (now, so that they
// match the origin's next kTagData messages in order) and apply it, or queue it behind its
// origin's earlier operations.
void on_header(Window* w, int origin, const char* msg, int64_t len) {
    TargetOp t;
    t.h = hdr_decode(reinterpret_cast<const uint8_t*>(msg));
    const char* p = msg + kHdrBytes;
    const char* end = msg + len;
    auto& q = w->fifo[size_t(origin)];
    bool has_payload = t.h.bytes > 0 &&
                       (t.h.type == Msg::put || t.h.type == Msg::acc || t.h.type == Msg::cas ||
                        t.h.type == Msg::get_acc);
    if (q.empty() && (t.h.basic != 0 || t.h.count == 0) &&
        (!has_payload || (t.h.flags & kFlagPayloadInline))) {
        // The whole operation is in this message and nothing of its origin waits before it
        // (the latency case: one small accumulate, fetch_and_op or compare_and_swap): applied
        // from the message itself, without a TargetOp, a queue entry or a copy of the payload.
        static std::vector<Run> one(1);  // (apply never re-enters: no poll inside)
        static const std::vector<Run> none;
        if (has_payload && p + t.h.bytes > end) {
            WANMPI_LOG(error, "rma: truncated payload from rank %d; ignored", origin);
            return;
        }
        one[0] = Run{0, t.h.count, t.h.basic};
        apply(w, origin, t.h, t.h.basic != 0 ? one : none, has_payload ? p : nullptr, false);
        return;
    }
    if (t.h.basic == 0 && t.h.count > 0) {
        if (t.h.flags & kFlagRunsInline) {
            if (p + t.h.count * kRunBytes > end) {
                WANMPI_LOG(error, "rma: truncated header from rank %d; ignored", origin);
                return;
            }
            decode_runs(p, t.h.count, &t.runs);
            p += t.h.count * kRunBytes;
        } else {
            t.runs_buf.reset(new char[size_t(t.h.count * kRunBytes)]);
            t.runs_req = post_data(w, origin, t.runs_buf.get(), t.h.count * kRunBytes);
        }
    }
    if (has_payload) {
        if (t.h.flags & kFlagPayloadInline) {
            if (p + t.h.bytes > end) {
                WANMPI_LOG(error, "rma: truncated payload from rank %d; ignored", origin);
                return;
            }
            t.data.reset(new char[size_t(t.h.bytes)]);
            std::memcpy(t.data.get(), p, size_t(t.h.bytes));
        } else if (t.h.type == Msg::put && t.h.basic != 0 && w->flavor != MPI_WIN_FLAVOR_DYNAMIC &&
                   core::datatype_lookup(t.h.basic) && core::datatype_lookup(t.h.basic)->contig) {
            // A large put to a contiguous target: straight into window memory.
            t.direct = true;
            t.data_req = post_data(w, origin, target_addr(w, t.h.disp), t.h.bytes);
        } else {
            t.data.reset(new char[size_t(t.h.bytes)]);
            t.data_req = post_data(w, origin, t.data.get(), t.h.bytes);
        }
    }
    q.push_back(std::move(t));
    drain(w, origin);
}

}  // namespace

char* target_addr(Window* w, int64_t disp) {
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) return reinterpret_cast<char*>(uintptr_t(disp));
    return w->base + disp * w->disp_unit;
}

int progress_window(Window* w) {
    // Not re-entered: sending a reply may poll the engine, which runs this hook again; the
    // outer pass would then find its FIFO changed under it.
    if (w->busy) return 0;
    w->busy = true;
    int n = 0;
    while (w->hdr_req && w->hdr_req->complete) {
        core::Request* r = w->hdr_req;
        // Status fields as engine.cpp sets them: count in count_lo and the low 31 bits of
        // count_hi_and_cancelled, bit 31 the cancelled flag (MPI_Win_free cancels the receive).
        bool cancelled = (uint32_t(r->status.count_hi_and_cancelled) & 0x80000000u) != 0 ||
                         r->status.MPI_ERROR != MPI_SUCCESS;
        int src = r->status.MPI_SOURCE;
        int64_t len = int64_t(uint32_t(r->status.count_lo)) |
                      (int64_t(r->status.count_hi_and_cancelled & 0x7fffffff) << 32);
        if (cancelled) {
            core::request_release(r);
            w->hdr_req = nullptr;
            break;
        }
        // Taken from the receive buffer in place, before the receive is started again: until
        // then nothing can be written into it (on_header polls nothing), and it keeps nothing
        // of the message but copies (a queued operation's runs and payload).
        if (len >= kHdrBytes && src >= 0 && src < w->nranks)
            on_header(w, src, w->hdr_buf.get(), len);
        if (post_hdr(w, r) != MPI_SUCCESS)
            WANMPI_LOG(error, "rma: cannot post the header receive of window %s", w->name.c_str());
        ++n;
    }
    if (!w->lock_waiters.empty()) n += try_grant_waiters(w);
    for (int o = 0; o < w->nranks; ++o)
        if (!w->fifo[size_t(o)].empty()) {
            size_t before = w->fifo[size_t(o)].size();
            drain(w, o);
            n += int(before - w->fifo[size_t(o)].size());
        }
    if (!w->tsends.empty()) {
        auto& v = w->tsends;
        for (size_t i = 0; i < v.size();) {
            if (v[i].r->complete) {
                core::request_release(v[i].r);
                v[i] = std::move(v.back());
                v.pop_back();
                ++n;
            } else {
                ++i;
            }
        }
    }
    reap(w);
    w->busy = false;
    return n;
}

void target_start(Window* w) {
    static bool hooked = false;
    if (!hooked) {
        core::add_progress_hook(hook);
        hooked = true;
    }
    w->hdr_buf.reset(new char[kInlineMax]);
    w->fifo.resize(size_t(w->nranks));
    w->posts_seen.assign(size_t(w->nranks), 0);
    if (post_hdr(w) != MPI_SUCCESS)
        WANMPI_LOG(error, "rma: cannot post the header receive of a new window");
    live().push_back(w);
}

void target_stop(Window* w) {
    auto& v = live();
    v.erase(std::remove(v.begin(), v.end(), w), v.end());
    if (w->hdr_req) {
        core::cancel(w->hdr_req);
        core::wait_until(done_req, w->hdr_req);
        core::request_release(w->hdr_req);
        w->hdr_req = nullptr;
    }
    while (!w->tsends.empty()) {
        core::wait_until(done_req, w->tsends.back().r);
        core::request_release(w->tsends.back().r);
        w->tsends.pop_back();
    }
}

}  // namespace wanmpi::rma
