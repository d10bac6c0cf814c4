// Datatypes: the builtin types (a static table indexed by the low byte of the handle, mpi.h:
// 0x4c000000 | size << 8 | index) and derived types (heap objects, handles 0x8c000000 | slot).
//
// Representation. Every derived type keeps its constructor (combiner and arguments, for
// MPI_Type_get_envelope/get_contents) and a normalised description that moves data: `parts`,
// a list of (byte displacement, block length, child type), repeated `reps` times `rep_stride`
// bytes apart (a vector keeps one part and a repeat, not a list as long as its count).
// Subarray and darray are built internally from the other constructors (one child, `parts`
// naming it), so only the envelope remembers what the user called.
//
// Flattening. Committing a type flattens one element into `runs`: maximal runs of consecutive
// basic elements (offset, count, builtin index) in typemap order, adjacent runs merged; and into
// `blocks`: maximal contiguous byte ranges, adjacent ranges merged. Both are capped at
// kMaxFlat entries so that huge types stay cheap in memory; beyond the cap the pack engine walks
// `parts` recursively (children are flattened on their own, so the walk is short).
//
// `contig` is exact: one block at offset 0 of `size` bytes and extent == size, so `count`
// elements are size*count dense bytes starting at buf and the engine sends them straight from
// the user's buffer. Offsets are relative to buf; with MPI_BOTTOM (address 0) they are absolute
// addresses, which the engine handles as ordinary offsets.
//
// Lifetime: `refs` counts the user's handle (dropped by MPI_Type_free), every parent type that
// uses it as a child, handles returned by MPI_Type_get_contents, and pending requests
// (datatype_retain/release). The object and its handle live until refs reaches 0 (as in MPICH),
// so a type freed while a request uses it stays usable by that request.
//
// Threading: types are created, committed and freed under the API lock. datatype_lookup is safe
// without it (the slot table is a fixed array of chunks that never move), which the lock-free
// query functions (MPI_Type_size, MPI_Get_count, ...) rely on.
#pragma once

#include <cstdint>
#include <vector>
#include <mpi.h>

namespace wanmpi::core {

struct Datatype;

// One contiguous byte range of an element.
struct Block {
    int64_t off;
    int64_t len;
};

// `count` consecutive elements of builtin type `basic` (index = low byte of its handle), each
// the builtin's extent apart, starting at byte `off`.
struct Run {
    int64_t off;
    int64_t count;
    int32_t basic;
};

// `blen` consecutive elements of `type` (its extent apart) at byte displacement `disp`.
struct Part {
    int64_t disp;
    int64_t blen;
    Datatype* type;
};

constexpr size_t kMaxFlat = size_t(1) << 16;
constexpr int kMixedBasic = -1;  // Datatype::basic of a typemap with several basic types

struct Datatype {
    MPI_Datatype handle = MPI_DATATYPE_NULL;
    int64_t size = 0;     // bytes of data in one element
    int64_t extent = 0;   // ub - lb: stride between elements
    bool contig = false;  // see the file comment
    char name[MPI_MAX_OBJECT_NAME] = {};

    int64_t lb = 0, ub = 0;            // bounds (resizing and MPI_LB/MPI_UB markers included)
    int64_t true_lb = 0, true_ub = 0;  // bounds of the data alone
    bool builtin = false;
    bool committed = false;
    bool sticky_lb = false, sticky_ub = false;  // typemap holds an MPI_LB / MPI_UB marker
    int align = 1;           // alignment for the struct padding rule (as MPICH: max of the parts)
    int basic = 0;           // builtin index of the only basic type, kMixedBasic, or 0 if none
    int64_t nelems = 0;      // basic elements in one element (a pair type counts 2)
    int64_t ext32_size = 0;  // bytes of one element in the "external32" representation
    int depth = 0;           // constructor nesting (builtins 0)

    // Constructor, as MPI_Type_get_envelope/get_contents report it.
    int combiner = MPI_COMBINER_NAMED;
    bool large = false;  // made by a *_c constructor: large counts live in `counts`
    std::vector<int> ints;
    std::vector<MPI_Aint> aints;
    std::vector<MPI_Count> counts;
    std::vector<MPI_Datatype> types;

    // Normalised layout: parts repeated `reps` times, rep_stride bytes apart.
    std::vector<Part> parts;
    int64_t reps = 1;
    int64_t rep_stride = 0;

    // Flattened element (valid when the flags say so; see the file comment).
    bool flat_tried = false;
    bool flat_runs = false;
    bool flat_blocks = false;
    std::vector<Run> runs;
    std::vector<Block> blocks;

    int refs = 1;
};

// ---- engine interface (see engine.cpp) ------------------------------------------------------
// Pack `count` elements at `src` into contiguous `dst` (size*count bytes), and the reverse.
// `bytes` limits how much is unpacked (a truncated or short message; it may end inside an
// element). The type must be committed (or builtin).
void pack(const Datatype& dt, const void* src, int64_t count, void* dst);
void unpack(const Datatype& dt, const void* src, int64_t bytes, void* dst);

// Whether `count` elements are one dense byte range (size*count bytes) starting at buf + *off:
// true for contig types (off 0) and also for data that is contiguous at an offset (a single
// row of a subarray, a resized or hindexed single block, count 1 of any one-block type). Lets
// the engine send or receive in place where `contig` alone would pack.
bool datatype_dense(const Datatype& dt, int64_t count, int64_t* off);

// A pending operation keeps its datatype alive: MPI_Type_free of a type still in use by a
// request takes effect when the request is released (no-ops for builtin types).
void datatype_retain(const Datatype* dt);
void datatype_release(const Datatype* dt);

// A type usable for communication: builtin, or derived and committed. nullptr otherwise
// (MPI_DATATYPE_NULL, a freed or never valid handle, an uncommitted type, MPI_LB/MPI_UB);
// datatype_error() then makes the matching error code.
const Datatype* datatype_lookup(MPI_Datatype h);
// An error code (MPI_ERR_TYPE, not raised) saying why datatype_lookup(h) failed.
int datatype_error(MPI_Datatype h);

// ---- for the datatype and op implementation ---------------------------------------------------
// Any live type, committed or not (MPI_LB and MPI_UB included).
Datatype* datatype_get(MPI_Datatype h);
const Datatype* builtin_by_index(int idx);  // nullptr if no such builtin
bool builtin_is_pair(int idx);
// Register a new derived type (refs = 1, owned by its handle); nullptr when out of handles.
Datatype* datatype_new();
// Compute flat runs/blocks if not done yet (children first); sets contig. Idempotent.
void datatype_flatten(Datatype* dt);
// Visits the basic-element runs of `count` elements at byte offset `base`, in typemap order;
// fn(off, n, basic) returns false to stop. Returns false if stopped.
using RunFn = bool (*)(void* ctx, int64_t off, int64_t n, int basic);
bool datatype_walk(const Datatype& dt, int64_t base, int64_t count, RunFn fn, void* ctx);
// Number of basic elements wholly contained in the first `bytes` bytes of packed data of `dt`
// (MPI_Get_elements), or -1 if `bytes` does not end on a basic element boundary.
int64_t datatype_elements(const Datatype& dt, int64_t bytes);
// The packed bytes of the first `elements` basic elements of a sequence of `dt` (the inverse,
// for MPI_Status_set_elements).
int64_t datatype_bytes_of_elements(const Datatype& dt, int64_t elements);
// A builtin's size in "external32" (0 if it has no external representation).
int64_t builtin_ext32_size(int idx);
// Converts `count` elements of `dt` between user memory and "external32" bytes (dt_pack.cpp);
// MPI_SUCCESS or an (unraised) MPI_ERR_CONVERSION code. MPI-IO's external32 files use it too.
int ext32_convert(const Datatype& dt, void* user, int64_t count, void* ext, bool to_ext);

}  // namespace wanmpi::core
