// The origin side of one-sided communication: checking an operation's arguments, encoding it
// (rma.hpp's wire format), sending it over the window's private communicator, and the requests
// that track it until it is complete locally (flush_local) or remotely (flush: a FLUSH message
// that the target answers once everything before it from this origin is applied).
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#include "base/codec.hpp"
#include "base/log.hpp"
#include "core/datatype.hpp"
#include "core/errors.hpp"
#include "core/op.hpp"
#include "rma/ops.hpp"
#include "rma/rma.hpp"

namespace wanmpi::rma {

using base::put_be32;
using base::put_be64;

int reply_tag(Window* w) {
    int t = w->next_tag++;
    if (w->next_tag >= (1 << 28)) w->next_tag = kTagReply;  // tags stay below MPI_TAG_UB
    return t;
}

static core::Request* post(Window* w, core::ReqKind kind, int peer, int tag, const void* buf,
                           int64_t count, MPI_Datatype dt, int* err) {
    core::Request* r = core::request_new(kind);
    if (!r) {
        *err = core::make_error(MPI_ERR_INTERN, "out of request handles");
        return nullptr;
    }
    *err = core::request_setup(r, buf, count, dt, peer, tag, w->comm, core::Mode::standard);
    if (*err == MPI_SUCCESS) *err = core::start(r);
    if (*err != MPI_SUCCESS) {
        core::request_release(r);
        return nullptr;
    }
    return r;
}

core::Request* post_recv(Window* w, int src, int tag, void* buf, int64_t count, MPI_Datatype dt,
                         int* err) {
    return post(w, core::ReqKind::recv, src, tag, buf, count, dt, err);
}

int send_reply(Window* w, int origin, int tag, const char* data, int64_t bytes,
               std::unique_ptr<char[]> keep) {
    bool sent = false;
    int err = core::send_now(w->comm, w->comm->ctx, origin, tag, data, bytes, &sent);
    if (err != MPI_SUCCESS || sent) return err;
    if (!keep && bytes > 0) {
        keep.reset(new char[size_t(bytes)]);
        std::memcpy(keep.get(), data, size_t(bytes));
    }
    core::Request* r = post(w, core::ReqKind::send, origin, tag, keep.get(), bytes, MPI_BYTE,
                            &err);
    if (!r) return err;
    if (r->complete)
        core::request_release(r);
    else
        w->tsends.push_back(Window::TSend{r, std::move(keep)});
    return MPI_SUCCESS;
}

// Tracks an origin request (the window owns it until complete).
static void track(Window* w, core::Request* r, int target, std::unique_ptr<char[]> buf,
                  core::Request* user = nullptr) {
    OriginOp o;
    o.r = r;
    o.target = target;
    o.buf = std::move(buf);
    o.user = user;
    w->out.push_back(std::move(o));
}

// Sends the `len` bytes at `msg` (header messages) to `target` with kTagHdr: at once without a
// request when the engine takes the frame (core::send_now; then complete locally), else as a
// send tracked in w->out from `keep` (the heap buffer holding `msg`) or a copy. *sent says
// which. Order is kept either way: send_now declines while earlier frames to the target wait
// in the transport's queue.
static int send_hdr(Window* w, int target, const char* msg, int64_t len,
                    std::unique_ptr<char[]> keep, core::Request* user, bool* sent) {
    int err = core::send_now(w->comm, w->comm->ctx, target, kTagHdr, msg, len, sent);
    if (err != MPI_SUCCESS || *sent) return err;
    if (!keep) {
        keep.reset(new char[size_t(len)]);
        std::memcpy(keep.get(), msg, size_t(len));
    }
    core::Request* r = post(w, core::ReqKind::send, target, kTagHdr, keep.get(), len, MPI_BYTE,
                            &err);
    if (!r) return err;
    track(w, r, target, std::move(keep), user);
    return MPI_SUCCESS;
}

int send_ctrl(Window* w, int target, const Hdr& h) {
    char buf[kHdrBytes];
    hdr_encode(h, reinterpret_cast<uint8_t*>(buf));
    bool sent = false;
    return send_hdr(w, target, buf, kHdrBytes, nullptr, nullptr, &sent);
}

static void finish_user(core::Request* u, const core::Request* r) {
    if (!u) return;
    u->status = MPI_Status{};
    u->status.MPI_ERROR = r->status.MPI_ERROR;
    u->complete = true;
}

void reap(Window* w) {
    auto& v = w->out;
    for (size_t i = 0; i < v.size();) {
        if (v[i].r->complete) {
            finish_user(v[i].user, v[i].r);
            core::request_release(v[i].r);
            v[i] = std::move(v.back());
            v.pop_back();
        } else {
            ++i;
        }
    }
}

namespace {
struct TargetWait {
    Window* w;
    int target;  // -1: every target
};
bool target_done(void* p) {
    auto* t = static_cast<TargetWait*>(p);
    for (const OriginOp& o : t->w->out)
        if ((t->target < 0 || o.target == t->target) && !o.r->complete) return false;
    return true;
}
bool req_done(void* r) { return static_cast<core::Request*>(r)->complete; }
}  // namespace

void wait_req(core::Request* r) { core::wait_until(req_done, r); }

int wait_target(Window* w, int target) {
    if (w->out.empty()) return MPI_SUCCESS;  // only direct operations since the last wait
    TargetWait t{w, target};
    core::wait_until(target_done, &t);
    int err = MPI_SUCCESS;
    for (const OriginOp& o : w->out)
        if ((target < 0 || o.target == target) && o.r->status.MPI_ERROR != MPI_SUCCESS)
            err = o.r->status.MPI_ERROR;
    reap(w);
    return err;
}

int round_trip(Window* w, const std::vector<int>& targets, Msg type, uint8_t flags,
               bool only_dirty) {
    std::vector<core::Request*> acks;
    int err = MPI_SUCCESS;
    std::atomic_thread_fence(std::memory_order_seq_cst);  // direct stores before the message
    for (int t : targets) {
        if (only_dirty && !w->dirty[size_t(t)]) continue;
        if (type == Msg::flush && w->dirty[size_t(t)] == kDirtyReply) {
            w->dirty[size_t(t)] = 0;  // the awaited reply is the answer (Window::dirty)
            continue;
        }
        Hdr h;
        h.type = type;
        h.flags = flags;
        h.reply_tag = reply_tag(w);
        core::Request* r = post_recv(w, t, h.reply_tag, nullptr, 0, MPI_BYTE, &err);
        if (!r) break;
        acks.push_back(r);
        if ((err = send_ctrl(w, t, h)) != MPI_SUCCESS) break;
        if (type != Msg::lock) w->dirty[size_t(t)] = 0;  // flush, unlock: remote completion
    }
    for (core::Request* r : acks) {
        wait_req(r);
        if (r->status.MPI_ERROR != MPI_SUCCESS) err = r->status.MPI_ERROR;
        core::request_release(r);
    }
    if (type == Msg::lock) return err;
    int e2 = wait_target(w, targets.size() == 1 ? targets[0] : -1);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // see the targets' stores
    return err != MPI_SUCCESS ? err : e2;
}

// Remote completion: a FLUSH to each target that has had operations since its last flush, then
// the answers (sent by each target after it applied everything before the FLUSH).
int flush_many(Window* w, const std::vector<int>& targets) {
    return round_trip(w, targets, Msg::flush, 0, true);
}

void local_progress() {
    static unsigned calls = 0;
    if (++calls % 16 == 0) core::poll();
}

int flush(Window* w, int target) {
    uint8_t& d = w->dirty[size_t(target)];
    // Nothing sent since the last flush (direct operations), or the last message was a
    // fetching operation whose reply implies remote completion (Window::dirty).
    if (d != kDirtyFlush) {
        if (d == 0) local_progress();
        d = 0;
        int err = wait_target(w, target);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        return err;
    }
    return flush_many(w, std::vector<int>{target});
}

// ---- operations --------------------------------------------------------------------------------
namespace {

bool collect_run(void* ctx, int64_t off, int64_t n, int basic) {
    auto* v = static_cast<std::vector<Run>*>(ctx);
    const core::Datatype* b = core::builtin_by_index(basic);
    int32_t h = b ? int32_t(b->handle) : 0;
    if (!v->empty()) {
        Run& last = v->back();
        if (b && last.basic == h && last.off + last.count * b->extent == off) {
            last.count += n;
            return true;
        }
    }
    v->push_back(Run{off, n, h});
    return true;
}

// A target on this host whose part of the window is in our mapping of the segment: the
// operation is done here with loads and stores, complete at once, locally and remotely (the
// memory is the target's; flush and the epoch-closing calls add the memory barrier).
// Accumulate-class operations go through atomic.cpp, like the target's.
void direct(const OpArgs& a, const core::Datatype* odt, const core::Datatype* rdt, char* taddr,
            const std::vector<Run>& runs, int64_t tbytes) {
    char small[256];
    std::unique_ptr<char[]> big;
    char* tmp = small;
    if (2 * tbytes > int64_t(sizeof small)) {
        big.reset(new char[size_t(2 * tbytes)]);
        tmp = big.get();
    }
    const core::Datatype* b0 = runs.size() == 1 ? core::datatype_lookup(runs[0].basic) : nullptr;
    const bool dense = b0 && b0->contig;
    // Contiguous buffers on both sides (the common case, and the latency tests'): plain copies
    // instead of the general pack / scatter walks.
    char* t0 = taddr + runs[0].off;
    auto pack_o = [&](const void* src, int64_t n, char* dst) {
        if (odt->contig) std::memcpy(dst, src, size_t(n * odt->size));
        else core::pack(*odt, src, n, dst);
    };
    auto take = [&](char* dst) {
        if (dense) std::memcpy(dst, t0, size_t(tbytes));
        else gather(taddr, runs, dst);
    };
    auto give = [&](const char* src) {
        if (dense) std::memcpy(t0, src, size_t(tbytes));
        else scatter(taddr, runs, src);
    };
    auto to_result = [&](const char* src) {
        if (rdt->contig) std::memcpy(a.rbuf, src, size_t(tbytes));
        else core::unpack(*rdt, src, tbytes, a.rbuf);
    };
    switch (a.type) {
    case Msg::put:
        if (dense && odt->contig) {
            std::memcpy(t0, a.obuf, size_t(tbytes));
        } else {
            pack_o(a.obuf, a.ocount, tmp);
            give(tmp);
        }
        break;
    case Msg::get:
        if (dense && odt->contig) {
            std::memcpy(a.obuf, t0, size_t(tbytes));
        } else {
            take(tmp);
            core::unpack(*odt, tmp, tbytes, a.obuf);
        }
        break;
    // Accumulate-class: atomic.cpp picks an atomic instruction or the segment lock per element,
    // as the target does for operations that come as messages. Contiguous origin / result
    // buffers are used in place (their packed form is their memory).
    case Msg::acc: {
        const char* in = static_cast<const char*>(a.obuf);
        if (!odt->contig) {
            pack_o(a.obuf, a.ocount, tmp);
            in = tmp;
        }
        acc_apply(a.w, taddr, runs, in, a.op, nullptr);
        break;
    }
    case Msg::get_acc: {
        const char* in = static_cast<const char*>(a.obuf);
        if (a.op != MPI_NO_OP && !odt->contig) {
            pack_o(a.obuf, a.ocount, tmp + tbytes);
            in = tmp + tbytes;
        }
        char* old = rdt->contig ? static_cast<char*>(a.rbuf) : tmp;
        acc_apply(a.w, taddr, runs, in, a.op, old);
        if (old == tmp) to_result(tmp);
        break;
    }
    case Msg::cas: {
        char val[64], cmp[64];
        pack_o(a.obuf, 1, val);
        pack_o(a.cbuf, 1, cmp);
        char* old = rdt->contig ? static_cast<char*>(a.rbuf) : tmp;
        cas_apply(a.w, t0, runs[0].basic, val, cmp, old);
        if (old == tmp) to_result(tmp);
        break;
    }
    default:
        break;
    }
}

// A put or get to rank a.target on this host, a window on user memory (create, dynamic): the
// origin moves the bytes itself with process_vm_writev / readv (Cross Memory Attach), complete
// at once like a direct operation. Returns 1 when done, 0 when the operation must go as a
// message (target runs with holes, a dynamic target whose regions this origin cannot check or
// that does not cover the access, or the kernel refusing CMA: EPERM from another user or a
// ptrace policy, ENOSYS; CMA is then off for that target), -errno on failure.
int cma(const OpArgs& a, const core::Datatype* odt, const std::vector<Run>& runs,
        int64_t tbytes) {
    Window* w = a.w;
    const int t = a.target;
    char* taddr;
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        static std::vector<Region> regs;
        taddr = reinterpret_cast<char*>(uintptr_t(a.disp));
        if (!regions_read(w, t, &regs) || !attached(regs, taddr, runs)) return 0;
    } else {
        taddr = reinterpret_cast<char*>(uintptr_t(w->bases[size_t(t)]) +
                                        a.disp * w->units[size_t(t)]);
    }
    static std::vector<iovec> riov;
    riov.clear();
    for (const Run& r : runs) {
        const core::Datatype* b = core::datatype_lookup(r.basic);
        if (!b || !b->contig) return 0;  // packed form != memory form (MPI_SHORT_INT, ...)
        if (r.count > 0) riov.push_back(iovec{taddr + r.off, size_t(r.count * b->size)});
    }
    const bool put = a.type == Msg::put;
    std::unique_ptr<char[]> tmp;
    char* lbuf = static_cast<char*>(a.obuf);
    if (!odt->contig) {
        tmp.reset(new char[size_t(tbytes)]);
        lbuf = tmp.get();
        if (put) core::pack(*odt, a.obuf, a.ocount, lbuf);
    }
    const pid_t pid = pid_t(w->pids[size_t(t)]);
    size_t moved = 0;
    for (size_t i = 0; i < riov.size();) {
        size_t k = std::min<size_t>(riov.size() - i, IOV_MAX), bytes = 0;
        for (size_t j = i; j < i + k; ++j) bytes += riov[j].iov_len;
        iovec l{lbuf + moved, bytes};
        ssize_t n = put ? process_vm_writev(pid, &l, 1, &riov[i], k, 0)
                        : process_vm_readv(pid, &l, 1, &riov[i], k, 0);
        if (n < 0 && moved == 0 && (errno == EPERM || errno == ENOSYS)) {
            WANMPI_LOG(info, "rma: process_vm_%sv to rank %d refused (%s): messages instead",
                       put ? "write" : "read", t, base::errno_text(errno).c_str());
            w->cma[size_t(t)] = 0;
            return 0;
        }
        if (n != ssize_t(bytes)) return -(n < 0 ? errno : EFAULT);
        moved += bytes;
        i += k;
    }
    if (!put && !odt->contig) core::unpack(*odt, lbuf, tbytes, a.obuf);
    return 1;
}

int type_check(MPI_Datatype h, const core::Datatype** out) {
    *out = core::datatype_lookup(h);
    return *out ? MPI_SUCCESS : core::datatype_error(h);
}

}  // namespace

int win_op(const OpArgs& a) {
    Window* w = a.w;
    const bool fetch = a.type == Msg::get || a.type == Msg::get_acc || a.type == Msg::cas;
    const bool sends = a.type == Msg::put || a.type == Msg::acc || a.type == Msg::cas ||
                       (a.type == Msg::get_acc && a.op != MPI_NO_OP);
    if (a.req) *a.req = MPI_REQUEST_NULL;
    if (a.target == MPI_PROC_NULL) {
        if (a.req) *a.req = completed_request(w);
        return MPI_SUCCESS;
    }
    if (a.target < 0 || a.target >= w->nranks)
        return core::make_error(MPI_ERR_RANK, "invalid target rank %d: the window has %d ranks",
                                a.target, w->nranks);
    const bool passive = w->lock_all || w->locked[size_t(a.target)];
    if (a.req && !passive)
        return core::make_error(MPI_ERR_RMA_SYNC, "request-based RMA operations need a passive "
                                                  "target epoch (MPI_Win_lock/lock_all) on rank %d",
                                a.target);
    if (!passive && !w->fence_epoch && !in_start_group(w, a.target))
        return core::make_error(MPI_ERR_RMA_SYNC, "no access epoch to rank %d is open on this "
                                                  "window (fence, start or lock first)", a.target);
    if (a.ocount < 0 || a.tcount < 0 || a.rcount < 0)
        return core::make_error(MPI_ERR_COUNT, "negative count");
    const core::Datatype *odt = nullptr, *tdt = nullptr, *rdt = nullptr;
    int rc;
    if (sends || a.type == Msg::get)
        if ((rc = type_check(a.odt, &odt)) != MPI_SUCCESS) return rc;
    if ((rc = type_check(a.tdt, &tdt)) != MPI_SUCCESS) return rc;
    if (a.type == Msg::get_acc || a.type == Msg::cas)
        if ((rc = type_check(a.rdt, &rdt)) != MPI_SUCCESS) return rc;
    const int64_t tbytes = a.tcount * tdt->size;
    if (a.type != Msg::put && a.type != Msg::get) {
        if (a.type != Msg::cas && !predefined_op(a.op))
            return core::make_error(MPI_ERR_OP, "RMA accumulate operations take a predefined "
                                                "operation (or MPI_REPLACE / MPI_NO_OP), not 0x%x",
                                    unsigned(a.op));
        // (an empty datatype has no basic type: nothing moves, and MPICH's badrma expects
        // success)
        if (tbytes > 0 && tdt->basic <= 0)
            return core::make_error(MPI_ERR_TYPE, "the target datatype of an accumulate must be "
                                                  "built from one predefined datatype");
        if (tbytes > 0 && odt && odt->basic != tdt->basic)
            return core::make_error(MPI_ERR_TYPE, "origin and target datatypes of an accumulate "
                                                  "must have the same basic datatype");
    }
    if (odt && a.ocount * odt->size != tbytes)
        return core::make_error(MPI_ERR_ARG, "origin (%lld bytes) and target (%lld bytes) "
                                "buffers differ in size", (long long)(a.ocount * odt->size),
                                (long long)tbytes);
    if (rdt && a.rcount * rdt->size != tbytes)
        return core::make_error(MPI_ERR_ARG, "result (%lld bytes) and target (%lld bytes) "
                                "buffers differ in size", (long long)(a.rcount * rdt->size),
                                (long long)tbytes);
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        if (a.disp < 0)
            return core::make_error(MPI_ERR_DISP, "negative target displacement %lld",
                                    (long long)a.disp);
        if (a.tcount > 0) {
            // (a displacement or count so large that the byte offsets overflow is out of range
            // too, not a wrapped-around address inside it)
            int64_t at = 0, span = 0, lo = 0, hi = 0;
            bool wrap = __builtin_mul_overflow(a.disp, w->units[size_t(a.target)], &at) ||
                        __builtin_mul_overflow(a.tcount - 1, tdt->extent, &span) ||
                        __builtin_add_overflow(at, tdt->true_lb, &lo) ||
                        __builtin_add_overflow(at, span, &hi) ||
                        __builtin_add_overflow(hi, tdt->true_ub, &hi);
            if (wrap || lo < 0 || hi > w->sizes[size_t(a.target)])
                return core::make_error(MPI_ERR_RMA_RANGE, "target bytes [%lld, %lld) are "
                                        "outside rank %d's window of %lld bytes", (long long)lo,
                                        (long long)hi, a.target,
                                        (long long)w->sizes[size_t(a.target)]);
        }
    }
    if (tbytes == 0 && a.type != Msg::cas) {  // nothing moves; still an operation for ordering
        if (a.req) *a.req = completed_request(w);
        return MPI_SUCCESS;
    }

    Hdr h;
    h.type = a.type;
    h.op = a.op;
    h.disp = a.disp;
    std::vector<Run> runs;
    if (tdt->builtin && tdt->contig) {
        h.basic = int32_t(a.tdt);
        h.count = a.tcount;
    } else {
        core::datatype_walk(*tdt, 0, a.tcount, collect_run, &runs);
        h.count = int64_t(runs.size());
    }
    if (on_host(w, a.target)) {
        // The one-run vector is kept across calls: no allocation on the latency path.
        static std::vector<Run> one(1);
        const std::vector<Run>* rp = &runs;
        if (h.basic != 0) {
            one[0] = Run{0, a.tcount, h.basic};
            rp = &one;
        }
        // Memory this process maps: the segment's parts, or its own window memory (an access
        // to unattached memory of its own dynamic window goes the message way, which logs it).
        char* mapped = nullptr;
        if (!w->shm_base.empty())
            mapped = w->shm_base[size_t(a.target)] + a.disp * w->units[size_t(a.target)];
        else if (a.target == w->rank && (w->flavor != MPI_WIN_FLAVOR_DYNAMIC ||
                                         attached(w->regions, target_addr(w, a.disp), *rp)))
            mapped = target_addr(w, a.disp);
        int done = 0;
        if (mapped) {
            direct(a, odt, rdt, mapped, *rp, tbytes);
            done = 1;
        } else if (w->cma[size_t(a.target)] && (a.type == Msg::put || a.type == Msg::get)) {
            done = cma(a, odt, *rp, tbytes);
            if (done < 0) return core::make_error(MPI_ERR_RMA_RANGE, "%s rank %d's memory: %s",
                                                  a.type == Msg::put ? "writing into" : "reading",
                                                  a.target, base::errno_text(-done).c_str());
        }
        if (done) {
            if (a.req) *a.req = completed_request(w);
            local_progress();
            return MPI_SUCCESS;
        }
    }
    const int64_t pbytes = a.type == Msg::cas ? 2 * tbytes : sends ? tbytes : 0;
    h.bytes = a.type == Msg::get ? tbytes : pbytes;
    h.rbytes = a.type == Msg::get ? 0 : fetch ? tbytes : 0;
    const int64_t rbytes = int64_t(runs.size()) * kRunBytes;
    bool runs_inline = kHdrBytes + rbytes <= kInlineMax;
    bool payload_inline = runs_inline && kHdrBytes + rbytes + pbytes <= kInlineMax;
    if (runs_inline) h.flags |= kFlagRunsInline;
    if (payload_inline) h.flags |= kFlagPayloadInline;

    // The reply receive goes first, so the answer always finds it posted.
    core::Request* user = nullptr;
    if (a.req) {
        user = pending_request(w);
        *a.req = core::request_handle(user);
    }
    int err = MPI_SUCCESS;
    if (fetch) {
        h.reply_tag = reply_tag(w);
        void* to = a.type == Msg::get ? a.obuf : a.rbuf;
        int64_t cnt = a.type == Msg::get ? a.ocount : a.rcount;
        MPI_Datatype dt = a.type == Msg::get ? a.odt : a.rdt;
        core::Request* r = post_recv(w, a.target, h.reply_tag, to, cnt, dt, &err);
        if (!r) return err;
        track(w, r, a.target, nullptr, user);
        user = nullptr;
    }
    int64_t len = kHdrBytes + (runs_inline ? rbytes : 0) + (payload_inline ? pbytes : 0);
    // Built on the stack when small (one element's accumulate, fetch_and_op, compare_and_swap):
    // send_hdr copies it only if the engine cannot take it at once.
    char small[256];
    std::unique_ptr<char[]> heap;
    char* msg = small;
    if (len > int64_t(sizeof small)) {
        heap.reset(new char[size_t(len)]);
        msg = heap.get();
    }
    hdr_encode(h, reinterpret_cast<uint8_t*>(msg));
    auto put_runs = [&runs](char* p) {
        auto* b = reinterpret_cast<uint8_t*>(p);
        for (const Run& r : runs) {
            put_be64(b, uint64_t(r.off));
            put_be64(b + 8, uint64_t(r.count));
            put_be32(b + 16, uint32_t(r.basic));
            b += kRunBytes;
        }
    };
    if (runs_inline) put_runs(msg + kHdrBytes);
    if (payload_inline && pbytes > 0) {
        char* p = msg + kHdrBytes + rbytes;
        core::pack(*odt, a.obuf, a.ocount, p);
        if (a.type == Msg::cas) core::pack(*odt, a.cbuf, 1, p + tbytes);
    }
    bool more = !runs_inline || (!payload_inline && pbytes > 0);
    bool sent = false;
    if ((err = send_hdr(w, a.target, msg, len, std::move(heap), more ? nullptr : user, &sent)) !=
        MPI_SUCCESS)
        return err;
    if (sent && !more && user) {  // an R* operation without a reply: complete locally now
        user->status = MPI_Status{};
        user->complete = true;
    }
    core::Request* r = nullptr;
    if (!runs_inline) {
        std::unique_ptr<char[]> rb(new char[size_t(rbytes)]);
        put_runs(rb.get());
        r = post(w, core::ReqKind::send, a.target, kTagData, rb.get(), rbytes, MPI_BYTE, &err);
        if (!r) return err;
        track(w, r, a.target, std::move(rb), pbytes > 0 ? nullptr : user);
    }
    if (!payload_inline && pbytes > 0) {
        if (a.type == Msg::cas) {  // never large; kept general
            std::unique_ptr<char[]> pb(new char[size_t(pbytes)]);
            core::pack(*odt, a.obuf, 1, pb.get());
            core::pack(*odt, a.cbuf, 1, pb.get() + tbytes);
            r = post(w, core::ReqKind::send, a.target, kTagData, pb.get(), pbytes, MPI_BYTE,
                     &err);
            if (!r) return err;
            track(w, r, a.target, std::move(pb), user);
        } else {
            // Straight from the user's buffer (the engine packs a derived origin datatype).
            r = post(w, core::ReqKind::send, a.target, kTagData, a.obuf, a.ocount, a.odt, &err);
            if (!r) return err;
            track(w, r, a.target, nullptr, user);
        }
    }
    w->dirty[size_t(a.target)] = fetch ? kDirtyReply : kDirtyFlush;
    reap(w);
    return MPI_SUCCESS;
}

}  // namespace wanmpi::rma
