// Collective schedules: what every collective is compiled into, and the engine that runs them.
//
// A schedule is a list of *rounds*; a round is a list of steps executed in order when the
// round starts: local steps (typed copy, reduction) run at once, send and receive steps are
// posted with core::coll_post. The next round starts when every send and receive of the
// current one has completed; the schedule completes after its last round (libNBC's model, also
// MPICH's TSP). Buffers, counts and peers are fixed when the schedule is built, so building
// needs no communication, and a round may only read data produced by earlier rounds.
//
// Progress: running schedules sit in one list that a core progress hook advances on every
// core::poll(), so a nonblocking collective moves forward inside any MPI call, and a round's
// sends go out in the same poll that completed the previous round's receives. Blocking
// collectives run the same schedules and wait for them: polling and yielding the CPU while
// messages keep coming (unless the host is loaded, see run_blocking), then core::wait_until.
//
// Lifecycle and ownership: sched_new() hands out a schedule from a pool; it owns its temporary
// buffers. Blocking: run_blocking() runs it and returns it to the pool. Nonblocking:
// start_nonblocking() ties it to a ReqKind::ext request; the schedule returns to the pool when
// it completes (the request then only carries the status). A request released before its
// schedule completes (not possible through the MPI API) orphans the schedule, which still runs
// to the end so that no peer is left waiting.
// Threading: under the API lock. The hook does not re-enter itself (a user reduction op that
// calls MPI cannot advance schedules recursively).
#pragma once

#include <cstdint>
#include <vector>
#include <mpi.h>

#include "core/comm.hpp"
#include "core/datatype.hpp"
#include "core/engine.hpp"
#include "core/op.hpp"

namespace wanmpi::coll {

// Facts about a datatype needed to lay out temporary buffers and address elements.
struct Ty {
    MPI_Datatype h = MPI_DATATYPE_NULL;
    const core::Datatype* d = nullptr;
    int64_t size = 0;     // bytes of data per element
    int64_t extent = 0;   // stride between elements
    int64_t lb = 0;       // true lower bound (first byte of data relative to the buffer)
    int64_t tspan = 0;    // true extent of one element (first to last byte of data)
    bool contig = false;  // count elements = size*count dense bytes at the buffer
};
// The facts of `h`; t.d == nullptr when h is not a valid committed datatype. Inline: every
// collective call looks its types up, and the API layer checks with the same lookup.
inline Ty ty_of(MPI_Datatype h) {
    Ty t;
    t.h = h;
    t.d = core::datatype_lookup(h);
    if (!t.d) return t;
    t.size = t.d->size;
    t.extent = t.d->extent;
    t.contig = t.d->contig;
    t.lb = t.d->true_lb;
    t.tspan = t.d->true_ub - t.d->true_lb;
    return t;
}

struct Step {
    enum class T : uint8_t { send, recv, copy, reduce };
    T t;
    int peer = 0;
    int tag = 0;
    core::Comm* comm = nullptr;
    const void* src = nullptr;  // send, copy, reduce (in)
    void* dst = nullptr;        // recv, copy, reduce (inout)
    int64_t count = 0;          // send/recv/reduce; copy: source count
    MPI_Datatype dt = MPI_DATATYPE_NULL;  // send/recv/reduce; copy: source type
    int64_t count2 = 0;         // copy: destination count
    MPI_Datatype dt2 = MPI_DATATYPE_NULL;  // copy: destination type
    const core::Op* op = nullptr;
    MPI_Op oph = MPI_OP_NULL;   // reduce: the handle (for the fast path, reduce_fast.hpp)
};

class Sched {
public:
    // ---- building (algorithms call these through Bld) ----
    void add(const Step& st) { steps_.push_back(st); }
    // Close the current round (no-op when it is empty).
    void end_round() {
        if (ends_.empty() ? !steps_.empty() : ends_.back() != steps_.size())
            ends_.push_back(uint32_t(steps_.size()));
    }
    // Waits of a blocking run may yield the CPU instead of sleeping (a small collective).
    void allow_yield(bool ok) { yield_ok_ = ok; }
    // Temporary memory owned by the schedule, 64-byte aligned; nullptr on out-of-memory.
    char* tmp(int64_t bytes);
    // Memory to hold `count` elements of `t` laid out as `t` describes; returns the buffer
    // address to use with t (which may lie before the allocation when t's lower bound > 0).
    char* tmp_typed(const Ty& t, int64_t count);
    bool oom() const { return oom_; }
    // Keep a (derived) datatype alive while the schedule exists: a nonblocking collective's
    // types may be freed by the user right after the call.
    void retain(MPI_Datatype h);

    // ---- running ----
    bool done() const { return done_; }
    int error() const { return err_; }
    // Advance as far as possible; true if anything happened.
    bool advance();

    // ---- internal ---- (hot fields first; the inline buffer last, away from them)
    void reset();
    std::vector<Step> steps_;
    std::vector<uint32_t> ends_;     // end index of each round
    size_t round_ = 0;               // next round to start
    std::vector<core::Request*> pending_;
    int64_t small_used_ = 0;
    bool oom_ = false;
    bool done_ = false;
    bool blocking_ = false;
    bool yield_ok_ = false;          // waits may yield the CPU (see run_blocking)
    bool listed_ = false;
    int err_ = MPI_SUCCESS;
    core::Request* req_ = nullptr;   // nonblocking: the user's request
    core::Comm* comm_ = nullptr;
    core::Comm* comm_held_ = nullptr;  // comm_retain'ed until the schedule ends (orphaned)
    Sched* next_ = nullptr;          // running list
    Sched* prev_ = nullptr;
    std::vector<void*> allocs_;
    std::vector<const core::Datatype*> held_;
    alignas(64) char small_[2048];   // first temporary bytes come from here (no malloc)

private:
    bool finish_round();
    void start_round();
};

Sched* sched_new();
void sched_free(Sched* s);

// Collectives moving at most this many bytes may yield while waiting
// (WANMPI_COLL_YIELD_MAX_BYTES).
int64_t yield_max_bytes();

// Run to completion and free `s`; returns the collective's error code (not raised).
int run_blocking(Sched* s);
// The wait of a blocking collective: core::wait_until with the collectives' spin and yield
// times (WANMPI_COLL_SPIN_US, COLL_YIELD_US) when yield_ok (small collectives), else the
// point-to-point policy. Shared by run_blocking and the schedule-free direct paths (flat.cpp),
// so both wait alike.
void wait_blocking(bool (*done)(void*), void* p, bool yield_ok);
// Start `s` under a new ext request (*out); returns MPI_SUCCESS or an error code.
int start_nonblocking(Sched* s, core::Comm* comm, MPI_Request* out);
// Make `s` the template of a new persistent request (*out, inactive; core/persist.hpp): each
// MPI_Start runs a copy of its steps as a nonblocking schedule. The copy shares the template's
// temporary buffers and tags, which is safe because one instance at most runs at a time and an
// instance's messages follow the previous instance's on every ordered pair. Takes `s` (freed
// with the request); returns MPI_SUCCESS or an error code.
int start_persistent(Sched* s, core::Comm* comm, MPI_Request* out);

// Convenience for algorithm code: the communicator, tag and op of one collective call.
struct Bld {
    Sched& s;
    core::Comm* c;
    int tag;
    int rank, n;
    const core::Op* op = nullptr;
    MPI_Op oph = MPI_OP_NULL;

    Bld(Sched& sc, core::Comm* comm, int t) : s(sc), c(comm), tag(t), rank(comm->rank),
                                              n(comm->size) {}
    void send(int peer, const void* buf, int64_t count, MPI_Datatype dt) {
        Step st{Step::T::send};
        st.peer = peer; st.tag = tag; st.comm = c; st.src = buf; st.count = count; st.dt = dt;
        s.add(st);
    }
    void recv(int peer, void* buf, int64_t count, MPI_Datatype dt) {
        Step st{Step::T::recv};
        st.peer = peer; st.tag = tag; st.comm = c; st.dst = buf; st.count = count; st.dt = dt;
        s.add(st);
    }
    // Typed copy: the type signatures must agree (scount*ssize bytes are moved).
    void copy(const void* src, int64_t scount, MPI_Datatype sdt, void* dst, int64_t dcount,
              MPI_Datatype ddt) {
        Step st{Step::T::copy};
        st.src = src; st.count = scount; st.dt = sdt; st.dst = dst; st.count2 = dcount;
        st.dt2 = ddt;
        s.add(st);
    }
    // inout = in (op) inout, count elements of dt (MPI's order: the left operand is `in`).
    void reduce(const void* in, void* inout, int64_t count, MPI_Datatype dt) {
        if (count <= 0) return;
        Step st{Step::T::reduce};
        st.src = in; st.dst = inout; st.count = count; st.dt = dt; st.op = op; st.oph = oph;
        s.add(st);
    }
    void next() { s.end_round(); }
    char* tmp(int64_t bytes) { return s.tmp(bytes); }
    char* tmp_typed(const Ty& t, int64_t count) { return s.tmp_typed(t, count); }
};

}  // namespace wanmpi::coll
