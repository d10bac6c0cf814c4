// The schedule engine (see sched.hpp for the model).
#include "coll/sched.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sched.h>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "base/tunables.hpp"
#include "coll/reduce_fast.hpp"
#include "core/api.hpp"
#include "core/datatype.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "core/persist.hpp"

namespace wanmpi::coll {

using core::Request;

static base::Tunable<int64_t> t_yield_us(
    "COLL", "YIELD_US", 1000,
    "A rank waiting in a blocking collective that moves at most COLL_YIELD_MAX_BYTES polls and "
    "yields the CPU (sched_yield) while messages keep arriving, and sleeps in the kernel after "
    "this many microseconds without progress. 0: always sleep at once (the point-to-point "
    "policy on an oversubscribed host).", base::Level::tuner);
static base::Tunable<int64_t> t_yield_max_bytes(
    "COLL", "YIELD_MAX_BYTES", int64_t(1) << 40,
    "Largest collective (bytes, as the algorithm choice counts them) whose waits yield instead "
    "of sleeping; larger ones sleep, leaving the CPU to the ranks that copy the data.",
    base::Level::tuner);
static base::Tunable<int64_t> t_spin_us(
    "COLL", "SPIN_US", -1,
    "A rank waiting in a blocking collective polls this many microseconds after the last "
    "progress before it starts yielding the CPU (see COLL_YIELD_US). -1 = as point-to-point "
    "waits (PROGRESS_SPIN_US): poll when every rank has a core of its own, yield at once when "
    "the host is oversubscribed (a yield then hands the core to the rank we wait for).",
    base::Level::tuner);
int64_t yield_max_bytes() {
    static const int64_t v = t_yield_max_bytes.get();
    return v;
}


// ---- memory ------------------------------------------------------------------------------------
char* Sched::tmp(int64_t bytes) {
    if (bytes < 0) bytes = 0;
    int64_t rounded = (bytes + 63) & ~int64_t(63);
    if (small_used_ + rounded <= int64_t(sizeof small_)) {
        char* p = small_ + small_used_;
        small_used_ += rounded;
        return p;
    }
    void* p = std::aligned_alloc(64, size_t(rounded ? rounded : 64));
    if (!p) {
        oom_ = true;
        return nullptr;
    }
    allocs_.push_back(p);
    return static_cast<char*>(p);
}

char* Sched::tmp_typed(const Ty& t, int64_t count) {
    if (count <= 0) return tmp(0);
    // Data of `count` elements spans [lo, hi) relative to the buffer address.
    int64_t first = t.extent >= 0 ? 0 : (count - 1) * t.extent;
    int64_t last = t.extent >= 0 ? (count - 1) * t.extent : 0;
    int64_t lo = first + t.lb, hi = last + t.lb + t.tspan;
    char* p = tmp(hi - lo);
    return p ? p - lo : nullptr;
}

void Sched::retain(MPI_Datatype h) {
    const core::Datatype* d = core::datatype_lookup(h);
    if (!d || d->builtin) return;
    core::datatype_retain(d);
    held_.push_back(d);
}

void Sched::reset() {
    if (!held_.empty()) {
        for (const core::Datatype* d : held_) core::datatype_release(d);
        held_.clear();
    }
    if (comm_held_) core::comm_release(comm_held_);
    comm_held_ = nullptr;
    if (!allocs_.empty()) {
        for (void* p : allocs_) std::free(p);
        allocs_.clear();
    }
    steps_.clear();
    ends_.clear();
    pending_.clear();
    round_ = 0;
    small_used_ = 0;
    oom_ = done_ = blocking_ = yield_ok_ = listed_ = false;
    err_ = MPI_SUCCESS;
    req_ = nullptr;
    comm_ = nullptr;
    next_ = prev_ = nullptr;
}

// ---- running lists ------------------------------------------------------------------------------
namespace {
Sched* g_head = nullptr;
std::vector<Request*> g_orphans;  // requests of failed schedules, released when complete
std::vector<Sched*> g_pool;
bool g_in_hook = false;
bool g_hook_added = false;

void link(Sched* s) {
    s->prev_ = nullptr;
    s->next_ = g_head;
    if (g_head) g_head->prev_ = s;
    g_head = s;
    s->listed_ = true;
}
void unlink(Sched* s) {
    if (!s->listed_) return;
    if (s->prev_) s->prev_->next_ = s->next_;
    else g_head = s->next_;
    if (s->next_) s->next_->prev_ = s->prev_;
    s->next_ = s->prev_ = nullptr;
    s->listed_ = false;
}

// A nonblocking schedule finished: the request completes; the schedule goes back to the pool.
void complete_nonblocking(Sched* s) {
    Request* r = s->req_;
    if (r) {
        // From here the request alone holds the communicator (its error handler is needed by
        // MPI_Wait); the reference goes when the request is released.
        r->ext = s->comm_;
        r->ext_free = [](void* p) { core::comm_release(static_cast<core::Comm*>(p)); };
        r->status.MPI_ERROR = s->error();
        r->complete = true;
        r->active = false;
        if (r->user_freed) core::request_release(r);
    }
    sched_free(s);
}

int hook() {
    if (g_in_hook || (!g_head && g_orphans.empty())) return 0;
    g_in_hook = true;
    int n = 0;
    for (Sched* s = g_head; s;) {
        Sched* nx = s->next_;
        if (s->advance()) ++n;
        if (s->done()) {
            unlink(s);
            if (!s->blocking_) complete_nonblocking(s);
            nx = g_head;  // a user op may have changed the list: restart (done ones are gone)
        }
        s = nx;
    }
    if (!g_orphans.empty()) {
        size_t k = 0;
        for (Request* r : g_orphans) {
            if (r->complete) core::request_release(r);
            else g_orphans[k++] = r;
        }
        g_orphans.resize(k);
    }
    g_in_hook = false;
    return n;
}

void typed_copy(const Step& st, int* err) {
    const core::Datatype* sd = core::datatype_lookup(st.dt);
    const core::Datatype* dd = core::datatype_lookup(st.dt2);
    if (!sd || !dd) {
        *err = core::make_error(MPI_ERR_TYPE, "collective: datatype freed while in use");
        return;
    }
    int64_t sbytes = st.count * sd->size, dbytes = st.count2 * dd->size;
    if (sbytes > dbytes) {
        *err = core::make_error(MPI_ERR_TRUNCATE,
                                "collective: %lld bytes of data for a %lld-byte receive buffer",
                                (long long)sbytes, (long long)dbytes);
        return;
    }
    if (sbytes == 0 || st.src == st.dst) return;
    if (sd->contig && dd->contig) {
        std::memmove(st.dst, st.src, size_t(sbytes));
    } else if (dd->contig) {
        core::pack(*sd, st.src, st.count, st.dst);
    } else if (sd->contig) {
        core::unpack(*dd, st.src, sbytes, st.dst);
    } else {
        char* t = static_cast<char*>(std::malloc(size_t(sbytes)));
        if (!t) {
            *err = core::make_error(MPI_ERR_NO_MEM, "collective: out of memory (%lld bytes)",
                                    (long long)sbytes);
            return;
        }
        core::pack(*sd, st.src, st.count, t);
        core::unpack(*dd, t, sbytes, st.dst);
        std::free(t);
    }
}
}  // namespace

// ---- the engine ---------------------------------------------------------------------------------
void Sched::start_round() {
    size_t begin = round_ == 0 ? 0 : ends_[round_ - 1];
    size_t end = ends_[round_];
    ++round_;
    for (size_t i = begin; i < end && err_ == MPI_SUCCESS; ++i) {
        const Step& st = steps_[i];
        switch (st.t) {
        case Step::T::send:
        case Step::T::recv: {
            // Small contiguous messages first try the requestless paths (engine.hpp): an eager
            // frame straight into the transport, a whole eager message taken from the
            // unexpected queue. A request costs ~500 instructions, more than a small message's
            // whole trip; the request path below handles everything else, in the same order.
            if (st.peer >= 0) {
                const core::Datatype* d = core::datatype_lookup(st.dt);
                if (d && d->contig) {
                    const int64_t bytes = st.count * d->size;
                    const uint32_t ctx = st.comm->ctx + 1;
                    if (st.t == Step::T::recv) {
                        if (core::recv_now(ctx, st.peer, st.tag, st.dst, bytes)) break;
                    } else {
                        bool sent = false;
                        int rc = core::send_now(st.comm, ctx, st.peer, st.tag, st.src, bytes,
                                                &sent);
                        if (rc != MPI_SUCCESS) {
                            err_ = rc;
                            break;
                        }
                        if (sent) break;
                    }
                }
            }
            Request* r = nullptr;
            int rc = core::coll_post(st.t == Step::T::send ? core::ReqKind::send
                                                           : core::ReqKind::recv,
                                     st.t == Step::T::send ? st.src : st.dst, st.count, st.dt,
                                     st.peer, st.tag, st.comm, &r);
            if (rc != MPI_SUCCESS) {
                err_ = rc;
                break;
            }
            if (r->complete) {
                if (r->status.MPI_ERROR != MPI_SUCCESS) err_ = r->status.MPI_ERROR;
                core::request_release(r);
            } else {
                pending_.push_back(r);
            }
            break;
        }
        case Step::T::copy:
            typed_copy(st, &err_);
            break;
        case Step::T::reduce: {
            if (reduce_fast(st.oph, st.dt, st.src, st.dst, st.count)) break;
            int rc = core::op_apply(st.op, st.src, st.dst, st.count, st.dt);
            if (rc != MPI_SUCCESS) err_ = rc;
            break;
        }
        }
    }
}

bool Sched::finish_round() {
    size_t k = 0;
    for (Request* r : pending_) {
        if (!r->complete) {
            pending_[k++] = r;
            continue;
        }
        if (r->status.MPI_ERROR != MPI_SUCCESS && err_ == MPI_SUCCESS) err_ = r->status.MPI_ERROR;
        core::request_release(r);
    }
    bool progressed = k != pending_.size();
    pending_.resize(k);
    return progressed;
}

bool Sched::advance() {
    if (done_) return false;
    bool any = false;
    for (;;) {
        if (!pending_.empty()) {
            any |= finish_round();
            if (!pending_.empty() && err_ == MPI_SUCCESS) return any;
        }
        if (err_ != MPI_SUCCESS) {
            // Stop here. Receives nobody matched yet are cancelled; whatever is in flight is
            // released by the hook once it completes, so the engine never sees a stale request.
            for (Request* r : pending_) {
                if (r->kind == core::ReqKind::recv && !r->matched) core::cancel(r);
                if (r->complete) core::request_release(r);
                else g_orphans.push_back(r);
            }
            pending_.clear();
            done_ = true;
            return true;
        }
        if (round_ == ends_.size()) {
            done_ = true;
            return true;
        }
        start_round();
        any = true;
    }
}

// ---- pool, blocking and nonblocking runs -------------------------------------------------------
Sched* sched_new() {
    if (!g_hook_added) {
        core::add_progress_hook(hook);
        g_hook_added = true;
    }
    if (!g_pool.empty()) {
        Sched* s = g_pool.back();
        g_pool.pop_back();
        return s;
    }
    return new Sched();
}

void sched_free(Sched* s) {
    unlink(s);
    s->reset();
    if (g_pool.size() < 16) g_pool.push_back(s);
    else delete s;
}

static bool sched_done(void* p) { return static_cast<Sched*>(p)->done(); }

void wait_blocking(bool (*done)(void*), void* p, bool yield_ok) {
    // core::wait_until's policy with the collectives' numbers: spin for COLL_SPIN_US after the
    // last progress (not adaptive: a collective's messages come from several peers, and the
    // yield phase after it hands over the core anyway), then yield while messages keep coming.
    static const core::WaitPolicy coll = {
        t_spin_us.get() < 0 ? core::progress_spin_ns() : t_spin_us.get() * 1000,
        std::max<int64_t>(0, t_yield_us.get()) * 1000};
    core::wait_until(done, p, yield_ok && coll.yield_ns > 0 ? &coll : nullptr);
}

int run_blocking(Sched* s) {
    s->blocking_ = true;
    s->end_round();
    if (s->oom()) {
        sched_free(s);
        return core::make_error(MPI_ERR_NO_MEM, "collective: out of memory for temporary buffers");
    }
    s->advance();
    if (!s->done()) {
        link(s);
        wait_blocking(sched_done, s, s->yield_ok_);
    }
    int err = s->error();
    sched_free(s);
    return err;
}

static void ext_free(void* p) {
    // The request goes away before its schedule finished: the schedule runs out on its own and
    // takes over the request's reference to the communicator.
    auto* s = static_cast<Sched*>(p);
    s->req_ = nullptr;
    s->comm_held_ = s->comm_;
}

int start_nonblocking(Sched* s, core::Comm* comm, MPI_Request* out) {
    s->end_round();
    if (s->oom()) {
        sched_free(s);
        return core::make_error(MPI_ERR_NO_MEM, "collective: out of memory for temporary buffers");
    }
    Request* r = core::request_new(core::ReqKind::ext);
    if (!r) {
        sched_free(s);
        return core::make_error(MPI_ERR_INTERN, "out of request handles");
    }
    r->comm = comm;  // also marks the slot live for request_lookup
    r->peer = MPI_PROC_NULL;
    r->world_peer = -1;
    r->active = true;
    r->complete = false;
    r->status = MPI_Status{};
    r->status.MPI_SOURCE = MPI_ANY_SOURCE;
    r->status.MPI_TAG = MPI_ANY_TAG;
    r->status.MPI_ERROR = MPI_SUCCESS;
    r->ext = s;
    r->ext_free = ext_free;
    s->req_ = r;
    s->comm_ = comm;
    core::comm_retain(comm);  // MPI_Comm_free while pending: the object outlives the request
    *out = core::request_handle(r);
    // Start the first rounds now (sends leave at once), then let the hook carry it on.
    s->advance();
    if (s->done()) complete_nonblocking(s);
    else link(s);
    return MPI_SUCCESS;
}

namespace {
class PersistentSched final : public core::PersistentOp {
public:
    PersistentSched(Sched* tmpl, core::Comm* comm) : tmpl_(tmpl), comm_(comm) {}
    ~PersistentSched() override { sched_free(tmpl_); }
    int start(Request** inner) override {
        Sched* s = sched_new();
        s->steps_ = tmpl_->steps_;
        s->ends_ = tmpl_->ends_;
        MPI_Request h = MPI_REQUEST_NULL;
        int rc = start_nonblocking(s, comm_, &h);
        if (rc != MPI_SUCCESS) return rc;
        *inner = core::request_lookup(h);
        return MPI_SUCCESS;
    }

private:
    Sched* tmpl_;
    core::Comm* comm_;  // held by the persistent request
};
}  // namespace

int start_persistent(Sched* s, core::Comm* comm, MPI_Request* out) {
    s->end_round();
    if (s->oom()) {
        sched_free(s);
        return core::make_error(MPI_ERR_NO_MEM, "collective: out of memory for temporary buffers");
    }
    return core::persistent_new(comm, std::make_unique<PersistentSched>(s, comm), out);
}

}  // namespace wanmpi::coll
