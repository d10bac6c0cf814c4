// Attribute caching on communicators (and datatypes, windows): the hooks the communicator code
// calls so that copy and delete callbacks run at the points the standard names. Implemented in
// attr.cpp; called under the API lock.
#pragma once

#include <mpi.h>

namespace wanmpi::core {

struct Comm;

// MPI_Comm_dup and friends: run every keyval's copy callback from `from` onto `to` (in keyval
// creation order). Returns MPI_SUCCESS or the first callback's error code.
int attr_comm_copy(Comm* from, Comm* to);
// MPI_Comm_free (and MPI_Finalize for MPI_COMM_SELF then MPI_COMM_WORLD): run every delete
// callback of `c`, in the reverse order of attribute setting (MPI 4.0 §7.7.2).
int attr_comm_delete_all(Comm* c);

}  // namespace wanmpi::core
