// The lean path of the RMA operations (issue 15: OSU one-sided latencies on MPI_Win_allocate
// windows). An operation whose target is a rank on this host with its part of the window in our
// mapping of the segment (MPI_Win_allocate / allocate_shared, WANMPI_RMA_DIRECT on), inside a
// lock, lock_all or fence epoch, with one predefined datatype without holes on every side (the
// same handle and count for origin, target and result) is done right here: a memcpy for put and
// get, atomic.cpp's acc_one / cas_apply for the accumulate class. That is what origin.cpp's
// `direct` does for such a call too, minus the argument normalisation (OpArgs), the datatype
// flattening into a vector of runs and the repeated handle lookups of the general path, which
// cost 500-700 instructions per operation against 100-200 for Open MPI's osc/sm
// (docs/benchmarks.md, "OSU one-sided benchmarks").
//
// Each function returns true when it did the operation (it is then complete, locally and
// remotely, like every direct operation: flush and the epoch-closing calls add the memory
// barrier) and false when the call must take the general path, win_op. The general path checks
// every argument and reports every error through the window's handler, so the checks here only
// decide whether the lean path *may* run: anything it does not recognise as valid, erroneous
// calls included, goes the general way. Invariant: a call accepted here is one win_op would
// accept and complete through `direct`, with the same effect on memory and the same atomicity
// method (atomic.cpp) for the same elements. R* operations (their request) and PSCW epochs (the
// wait for the target's post) always take the general path.
//
// Threading: under the API lock, like the rest of the origin side.
#include <cstring>

#include "core/datatype.hpp"
#include "rma/ops.hpp"
#include "rma/rma.hpp"

namespace wanmpi::rma {

namespace {

// Rank t's bytes [disp * disp_unit, + bytes) in our mapping of the segment, or nullptr when the
// lean path does not apply: t out of range (MPI_PROC_NULL too), not on this host or the window
// not an allocate one (shm_base[t] null or shm_base empty), no passive or fence epoch open to t,
// a negative or overflowing displacement, or a range not inside t's part.
char* target_bytes(Window* w, int t, int64_t disp, int64_t bytes) {
    if (unsigned(t) >= unsigned(w->nranks) || w->shm_base.empty() || !w->direct) return nullptr;
    const size_t i = size_t(t);
    char* part = w->shm_base[i];
    if (!part || !(w->lock_all || w->locked[i] || w->fence_epoch)) return nullptr;
    int64_t off;
    if (disp < 0 || __builtin_mul_overflow(disp, w->units[i], &off) || off > w->sizes[i] - bytes)
        return nullptr;
    return part + off;
}

// A predefined datatype whose packed form is its memory form (contiguous, no holes: not
// MPI_SHORT_INT and the like), with a basic type for accumulates. The last one found is
// remembered (a latency loop uses one type): predefined types live as long as the library, so
// the pointer stays valid, and a handle freed and reused for a derived type cannot be equal to
// a predefined handle.
const core::Datatype* plain(MPI_Datatype h) {
    static MPI_Datatype last_h = MPI_DATATYPE_NULL;
    static const core::Datatype* last = nullptr;
    if (h == last_h) return last;
    const core::Datatype* d = core::datatype_lookup(h);
    if (!d || !d->builtin || !d->contig || d->size != d->extent || d->basic <= 0) return nullptr;
    last_h = h;
    last = d;
    return d;
}

// `count` elements of `dt` (count > 0, plain): their bytes, or -1.
int64_t bytes_of(const core::Datatype* d, int64_t count) {
    int64_t n;
    return count > 0 && !__builtin_mul_overflow(count, d->size, &n) ? n : -1;
}

}  // namespace

bool fast_put_get(Window* w, bool put, void* obuf, int64_t oc, MPI_Datatype odt, int target,
                  int64_t disp, int64_t tc, MPI_Datatype tdt) {
    if (odt != tdt || oc != tc) return false;
    const core::Datatype* d = plain(tdt);
    const int64_t n = d ? bytes_of(d, tc) : -1;
    char* at = n > 0 ? target_bytes(w, target, disp, n) : nullptr;
    if (!at) return false;
    if (put)
        std::memcpy(at, obuf, size_t(n));
    else
        std::memcpy(obuf, at, size_t(n));
    local_progress();
    return true;
}

bool fast_acc(Window* w, const void* obuf, int64_t oc, MPI_Datatype odt, bool fetch, void* rbuf,
              int64_t rc, MPI_Datatype rdt, int target, int64_t disp, int64_t tc,
              MPI_Datatype tdt, MPI_Op op) {
    if (!predefined_op(op)) return false;
    // MPI_NO_OP of get_accumulate ignores the origin buffer (api.cpp passes count 0 for it)
    if (!(fetch && op == MPI_NO_OP) && (odt != tdt || oc != tc)) return false;
    if (fetch && (rdt != tdt || rc != tc)) return false;
    const core::Datatype* d = plain(tdt);
    const int64_t n = d ? bytes_of(d, tc) : -1;
    char* at = n > 0 ? target_bytes(w, target, disp, n) : nullptr;
    if (!at) return false;
    acc_one(w, at, *d, tc, static_cast<const char*>(obuf), op,
            fetch ? static_cast<char*>(rbuf) : nullptr);
    local_progress();
    return true;
}

bool fast_cas(Window* w, const void* obuf, const void* cbuf, void* rbuf, MPI_Datatype dt,
              int target, int64_t disp) {
    const core::Datatype* d = plain(dt);
    char* at = d ? target_bytes(w, target, disp, d->size) : nullptr;
    if (!at) return false;
    cas_apply(w, at, *d, static_cast<const char*>(obuf), static_cast<const char*>(cbuf),
              static_cast<char*>(rbuf));
    local_progress();
    return true;
}

}  // namespace wanmpi::rma
