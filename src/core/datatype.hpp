// Datatypes. Builtin types live in a static table indexed by the low byte of their handle
// (mpi.h: 0x4c000000 | size << 8 | index). Derived types (issue 3) will add a table of
// heap objects with a pack engine; code that moves data asks `contig` first so contiguous
// data is never copied needlessly.
// Thread safety: builtin entries are immutable after static initialisation.
#pragma once

#include <cstdint>
#include <mpi.h>

namespace wanmpi::core {

// One element's data as (offset, length) blocks, in typemap order.
struct Block {
    int64_t off;
    int64_t len;
};

struct Datatype {
    MPI_Datatype handle;
    int64_t size;    // bytes of data in one element
    int64_t extent;  // stride between elements
    bool contig;     // one element is `size` contiguous bytes and extent == size
    const char* name;
    int nblocks;     // blocks of one element (1 for plain builtins)
    Block blocks[2];
};

// Pack `count` elements at `src` into contiguous `dst` (size*count bytes), and the reverse.
// `bytes` limits how much is unpacked (a truncated or short message).
void pack(const Datatype& dt, const void* src, int64_t count, void* dst);
void unpack(const Datatype& dt, const void* src, int64_t bytes, void* dst);

// A pending operation keeps its datatype alive: MPI_Type_free of a type still in use by a
// request takes effect when the request is released (no-ops for builtin types).
void datatype_retain(const Datatype* dt);
void datatype_release(const Datatype* dt);

// nullptr when h is not a valid datatype handle (MPI_DATATYPE_NULL included).
const Datatype* datatype_lookup(MPI_Datatype h);

}  // namespace wanmpi::core
