// Building blocks shared by the communicator constructors (comm.cpp), intercommunicators
// (intercomm.cpp) and topologies (topo.cpp). Internal to core; under the API lock.
#pragma once

#include <vector>
#include <mpi.h>

#include "core/comm.hpp"
#include "core/comm_task.hpp"

namespace wanmpi::core {

// A collective constructor over `c`: the members that agree (all of c, or all of c->local for an
// intercommunicator, with the link between the two local leaders through c), the agreement key
// and tags. Taking one consumes a sequence number of c, so every member must take it in the same
// order (MPI's collective ordering).
struct Parent {
    Comm* c = nullptr;
    Members m;
    InterLink link;
    bool inter = false;
    AgreeKey key;
    const InterLink* plink() const { return inter ? &link : nullptr; }
};
Parent parent_of(Comm* c);

// A new intracommunicator object over `world` with the parent's error handler; no handle yet.
Comm* comm_child(const Comm* parent, std::vector<int> world, int rank);
// A new intercommunicator object (with its local intracommunicator); no handle yet.
Comm* intercomm_child(const Comm* parent, std::vector<int> local, int rank,
                      std::vector<int> remote);
// Deletes an object that never got a handle (a failed constructor).
void comm_discard(Comm* c);

// Intracommunicator parent: every member calls; members with `member` get *out (over `world`,
// ranks in that order), the others nullptr.
Task create_task(Parent p, bool member, std::vector<int> world, Comm** out);
// Intracommunicator parent: MPI_Comm_split semantics (MPI_UNDEFINED colour: *out = nullptr).
Task split_task(Parent p, int color, int key, Comm** out);

// Common end of a blocking constructor: on success registers `nc` and stores its handle (or
// MPI_COMM_NULL when nc is nullptr) in *newcomm; on failure discards nc and raises on parent.
int comm_finish(Comm* parent, int rc, Comm* nc, MPI_Comm* newcomm);

// Intercommunicator parents (intercomm.cpp).
Task inter_split_task(Parent p, int color, int key, Comm** out);
Task inter_create_task(Parent p, std::vector<int> group_world, Comm** out);

// MPI-4 constructors from groups: the string tag's hash names their messages and agreement.
uint32_t stringtag_hash(const char* s);
}  // namespace wanmpi::core
namespace wanmpi::impl {
// MPI_ERRHANDLER_NULL -> MPI_ERRORS_ARE_FATAL; an invalid handler -> an error code (not raised).
int check_errhandler_arg(MPI_Errhandler eh, MPI_Errhandler* out);
}  // namespace wanmpi::impl
namespace wanmpi::core {

// MPI_Info through the info module's entry points when they are linked in (weak references),
// MPI_INFO_NULL otherwise.
MPI_Info info_dup_or_null(MPI_Info info);
void info_free_quiet(MPI_Info* info);

}  // namespace wanmpi::core
