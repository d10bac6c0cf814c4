// Vectorized fast path for the most common predefined reductions (see reduce_fast.cpp).
// Stateless; any thread.
#pragma once

#include <cstdint>
#include <mpi.h>

namespace wanmpi::coll {

// inout[i] = in[i] (op) inout[i] for `count` elements when (op, dt) is one of the pairs this
// fast path knows (MPI_SUM/PROD/MAX/MIN on float, double, 32/64-bit integers); returns false
// (nothing done) otherwise, and the caller uses core::op_apply.
bool reduce_fast(MPI_Op op, MPI_Datatype dt, const void* in, void* inout, int64_t count);

}  // namespace wanmpi::coll
