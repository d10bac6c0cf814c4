// Collectives: the per-communicator module interface (src/coll).
//
// Shape (Open MPI's coll framework, coll/han style): a *component* is a family of algorithms
// (today "flat", the single-cluster algorithms; later the multi-cluster IMPI ones). When a
// communicator runs its first collective, every registered component is asked, in priority
// order, for a *module* for that communicator; the modules that accept form a chain in
// Comm::coll, highest priority first. A call goes to the first module in the chain that
// implements the collective; a module may also hand a call down the chain (`next`), and a
// hierarchical module may build its phases with the flat builders on its own sub-communicators.
//
// Every collective, blocking or not, is compiled into a schedule (sched.hpp) that the progress
// engine runs; a module's job is to append the right rounds to that schedule.
//
// Lifecycle: modules live as long as their communicator; coll_comm_release() frees them (called
// when a communicator is freed). Ownership: Comm::coll points to a CommState owned by src/coll.
// Threading: under the API lock, like the rest of core.
#pragma once

#include <cstdint>
#include <mpi.h>

#include "coll/sched.hpp"
#include "core/comm.hpp"
#include "core/op.hpp"
#include "core/wan_rate.hpp"

namespace wanmpi::coll {

enum class Kind : uint8_t {
    barrier, bcast, gather, gatherv, scatter, scatterv, allgather, allgatherv, alltoall,
    alltoallv, alltoallw, reduce, allreduce, reduce_scatter, reduce_scatter_block, scan, exscan,
    count_
};
constexpr int kKinds = int(Kind::count_);
const char* kind_name(Kind k);  // "allreduce"

// The arguments of one collective call, normalized by the API layer (src/coll/api.cpp): counts
// as int64_t, handles validated, MPI_IN_PLACE left as is (sbuf == MPI_IN_PLACE, or for
// gather/scatter at the root as the standard says). The v/w arrays point to the user's arrays:
// schedules are fully built before the call returns, so they are read only while building.
struct Args {
    Kind kind = Kind::barrier;
    core::Comm* comm = nullptr;
    const void* sbuf = nullptr;
    void* rbuf = nullptr;
    int64_t scount = 0, rcount = 0;     // count for bcast/reduce family: scount
    MPI_Datatype stype = MPI_DATATYPE_NULL, rtype = MPI_DATATYPE_NULL;
    Ty st, rt;  // facts about stype / rtype (empty when MPI_DATATYPE_NULL)
    const int* scounts = nullptr;
    const int* sdispls = nullptr;
    const int* rcounts = nullptr;
    const int* rdispls = nullptr;
    const MPI_Datatype* stypes = nullptr;  // alltoallw
    const MPI_Datatype* rtypes = nullptr;
    const core::Op* op = nullptr;
    MPI_Op oph = MPI_OP_NULL;
    int root = 0;
    bool nonblocking = false;
};

struct Module;
// Appends the collective described by `a` to `s`. Returns MPI_SUCCESS or an error code (not
// raised). nullptr in a module's table: the module does not implement it (ask `next`).
using CollFn = int (*)(Module* m, const Args& a, Sched& s);

// Runs a *blocking* collective at once, without building a schedule first (small messages whose
// data is already at hand), or returns kDeclined having done nothing (no tag taken, nothing
// sent): the module's CollFn then builds the schedule as usual. Otherwise returns MPI_SUCCESS
// or an error code (not raised). nullptr in Module::direct: always build.
constexpr int kDeclined = -1;
using DirectFn = int (*)(Module* m, const Args& a);

struct Module {
    const char* name = "";
    CollFn fn[kKinds] = {};
    DirectFn direct[kKinds] = {};        // optional, per collective (see DirectFn)
    Module* next = nullptr;              // lower-priority module (fallback)
    void (*destroy)(Module* m) = nullptr;
    // Rate-managed collectives (core/wan_rate.hpp): the caller's share of its cluster's link in
    // the blocking collective `a` (*out; out->senders 0: not managed). Only a module that knows
    // the cluster layout (coll/impi.cpp) answers; the first one in the chain that has the hook
    // decides, for whichever module then builds the call. It may communicate inside the
    // caller's cluster (every rank of the cluster calls it for the same collective).
    void (*wan_share)(Module* m, const Args& a, core::WanShare* out) = nullptr;
    // Filled by modules_of() in the chain's head only: per collective, the direct function of
    // the module that implements it (lean_mod), when no module of the chain has a wan_share
    // hook. A blocking call then goes straight there (api.cpp, launch) without the general
    // dispatch (rate phase, module walk). nullptr: the general path.
    DirectFn lean[kKinds] = {};
    Module* lean_mod[kKinds] = {};
};

struct Component {
    const char* name;
    int priority;  // higher is asked first
    // A module for `comm`, or nullptr if this component does not apply to it.
    Module* (*query)(core::Comm* comm);
};

// A module named `name` whose every collective is built by `fn`, freed with delete: what a
// component with one build function per module returns from its query.
Module* make_module(const char* name, CollFn fn);

// Register a component (call from a static initializer or before the first collective).
void register_component(const Component* c);

// The module chain of `comm`, selected on first use.
Module* modules_select(core::Comm* comm);
inline Module* modules_of(core::Comm* comm) {
    return comm->coll ? static_cast<Module*>(comm->coll) : modules_select(comm);
}
// Free the modules of `comm` (when the communicator is freed). Safe when none were selected.
void coll_comm_release(core::Comm* comm);

// The name of the algorithm the flat module would build `a` with on a.comm ("ring", ...; "" if
// none): what the multi-cluster module needs to know about the calls it hands down.
const char* flat_algorithm(const Args& a);

// Build `a` with the first module in `from` (or its successors) implementing a.kind.
int build_with(Module* from, const Args& a, Sched& s);

}  // namespace wanmpi::coll
