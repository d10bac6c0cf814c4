// Reduction operations (predefined and user-defined). Contract between the op implementation
// (op.cpp) and its users (collectives in src/coll, MPI_Reduce_local).
// Threading: under the API lock. Handles: predefined 0x58000001..0x5800000e (mpi.h),
// user-defined ops get handles from op.cpp's table.
#pragma once

#include <cstdint>
#include <mpi.h>

namespace wanmpi::core {

struct Op;

// nullptr if h is not a valid op (MPI_OP_NULL included).
const Op* op_lookup(MPI_Op h);
bool op_commutative(const Op* op);
// inout[i] = in[i] (op) inout[i] for `count` elements of `dt` (MPI's order: invec op inoutvec).
// Both buffers are laid out as `dt` describes (user-defined ops get the user's datatype handle;
// predefined ops on derived types apply to the basic elements). Returns MPI_SUCCESS or an error
// code (MPI_ERR_OP when the op is not defined for the type), not raised.
int op_apply(const Op* op, const void* in, void* inout, int64_t count, MPI_Datatype dt);
// Whether builtin `dt` is one of the integer types (C and Fortran integers, MPI_CHAR, MPI_WCHAR,
// MPI_AINT/OFFSET/COUNT up to 64 bits): two's complement, so MPI_SUM / MPI_BAND / MPI_BOR /
// MPI_BXOR on it are the processor's fetch-add / and / or / xor (one-sided atomics, src/rma).
bool op_integer_type(MPI_Datatype dt);

}  // namespace wanmpi::core
