// Persistent requests made of one-shot operations: what MPI 4.0's persistent collectives
// (MPI_Bcast_init, ..., MPI_Neighbor_alltoallw_init) are in wanmpi. The *_init call checks its
// arguments and prepares the operation once (a collective builds its schedule, with its tags,
// at init: the inits are ordered like nonblocking collectives, whereas MPI lets ranks start
// different persistent collectives in different orders); every MPI_Start then begins one
// instance as a one-shot request (`inner`), and the persistent request completes when that
// instance does, so Wait/Test/Startall/Request_free treat it like a persistent send.
//
// Lifecycle: persistent_new() takes ownership of the PersistentOp; it is destroyed when the
// request is released (MPI_Request_free of an inactive request, or when an instance freed with
// MPI_Request_free finishes). Threading: under the API lock, like the rest of core.
#pragma once

#include <memory>
#include <mpi.h>

#include "core/comm.hpp"
#include "core/engine.hpp"

namespace wanmpi::core {

class PersistentOp {
public:
    virtual ~PersistentOp() = default;
    // Begin one instance: *inner is a one-shot request that completes it. Returns MPI_SUCCESS
    // or an error code (not raised; nothing was started then).
    virtual int start(Request** inner) = 0;
};

// A new inactive persistent request on `comm` running `op` at each MPI_Start. Returns
// MPI_SUCCESS or an error code (not raised); *out is set on success.
int persistent_new(Comm* comm, std::unique_ptr<PersistentOp> op, MPI_Request* out);

}  // namespace wanmpi::core
