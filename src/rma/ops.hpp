// Between the C entry points (api.cpp, sync.cpp) and the origin side (origin.cpp): one RMA
// operation's arguments, normalised (counts as int64_t, unused buffers null).
// Threading: under the API lock.
#pragma once

#include <cstdint>
#include <mpi.h>

#include "rma/rma.hpp"

namespace wanmpi::rma {

struct OpArgs {
    Window* w = nullptr;
    Msg type = Msg::put;
    void* obuf = nullptr;          // origin buffer (get: written; the others only read it)
    int64_t ocount = 0;
    MPI_Datatype odt = MPI_DATATYPE_NULL;
    void* rbuf = nullptr;          // get_accumulate, fetch_and_op, compare_and_swap result
    int64_t rcount = 0;
    MPI_Datatype rdt = MPI_DATATYPE_NULL;
    const void* cbuf = nullptr;    // compare_and_swap compare value
    int target = 0;
    int64_t disp = 0;
    int64_t tcount = 0;
    MPI_Datatype tdt = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    MPI_Request* req = nullptr;    // R* operations
};

// Checks, encodes and sends one operation. MPI_SUCCESS or an error code (not raised).
int win_op(const OpArgs& a);

// The lean path (fast.cpp) for a same-host target of an allocate window, predefined datatypes:
// true when the operation was done (complete and successful), false when the call must go to
// win_op, which also finds and reports every error. Never raise, never fail.
//   fast_put_get: MPI_Put (put) / MPI_Get; fast_acc: MPI_Accumulate, or with `fetch`
//   MPI_Get_accumulate / MPI_Fetch_and_op (result in rbuf); fast_cas: MPI_Compare_and_swap.
bool fast_put_get(Window* w, bool put, void* obuf, int64_t oc, MPI_Datatype odt, int target,
                  int64_t disp, int64_t tc, MPI_Datatype tdt);
bool fast_acc(Window* w, const void* obuf, int64_t oc, MPI_Datatype odt, bool fetch, void* rbuf,
              int64_t rc, MPI_Datatype rdt, int target, int64_t disp, int64_t tc,
              MPI_Datatype tdt, MPI_Op op);
bool fast_cas(Window* w, const void* obuf, const void* cbuf, void* rbuf, MPI_Datatype dt,
              int target, int64_t disp);

// MPI_SUM .. MPI_NO_OP (core/op.cpp's handles 0x58000001 .. 0x5800000e): the only ops the
// accumulate class takes.
inline bool predefined_op(MPI_Op op) {
    return uint32_t(op) >= 0x58000001u && uint32_t(op) <= 0x5800000eu;
}

// Requests of R* operations (ReqKind::ext, completed by reap()).
MPI_Request completed_request(Window* w);
core::Request* pending_request(Window* w);
// Whether `target` is in the current PSCW access epoch; waits for its MPI_Win_post if it has
// not been seen yet (MPI_Win_start itself does not block).
bool in_start_group(Window* w, int target);

}  // namespace wanmpi::rma
