// The collectives every program needs from day one, over point-to-point in the communicator's
// collective context (ctx + 1, so they never match user messages). The full set, chosen per
// communicator and per size, lives in src/coll (issue 3); this barrier is its fallback.
#include "bindings/impl.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {
int post(ReqKind kind, const void* buf, int64_t count, MPI_Datatype dt, int peer, int tag,
         MPI_Comm comm, Mode mode, MPI_Request* out, bool persistent, MPI_Status* st, bool coll);
}

namespace wanmpi::impl {
using namespace wanmpi::core;

// Dissemination barrier: ceil(log2 n) rounds of zero-byte exchanges.
int Barrier(MPI_Comm comm) {
    Comm* c = comm_lookup(comm);
    if (!c) return raise(nullptr, make_error(MPI_ERR_COMM, "invalid communicator 0x%x", unsigned(comm)));
    const int n = c->size, me = c->rank;
    for (int k = 1, round = 0; k < n; k <<= 1, ++round) {
        MPI_Request rr;
        int rc = post(ReqKind::recv, nullptr, 0, MPI_BYTE, (me - k + n) % n, round, comm,
                      Mode::standard, &rr, false, nullptr, true);
        if (rc == MPI_SUCCESS)
            rc = post(ReqKind::send, nullptr, 0, MPI_BYTE, (me + k) % n, round, comm,
                      Mode::standard, nullptr, false, MPI_STATUS_IGNORE, true);
        if (rc == MPI_SUCCESS) rc = Wait(&rr, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
