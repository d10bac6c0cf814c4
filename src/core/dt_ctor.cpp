// Datatype constructors, commit, dup and free (MPI 4.0 §5.1), their large-count (_c) forms and
// the MPI-1 forms real old codes still call (MPI_Type_struct, MPI_Type_hvector, ...).
//
// Bounds follow MPICH (so that programs tuned on it see the same extents): a block of `n`
// elements of a child contributes [disp + lb, disp + ub + (n-1)*extent] (mirrored for negative
// extents), blocks of length 0 contribute nothing, and a struct pads
// its extent to the largest alignment among its types unless an MPI_UB marker fixes the upper
// bound. MPI_LB/MPI_UB markers (MPI-1, removed in MPI-3 but still accepted here in structs) are
// "sticky": a type holding one takes its bound from the markers alone, also in its parents.
// True bounds are exact: the lowest and highest byte of data (0, 0 for a type without data).
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "bindings/impl.hpp"
#include "core/attr.hpp"
#include "core/datatype.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

namespace {

struct Shape {
    std::vector<Part> parts;  // blocks with blen > 0
    int64_t reps = 1, stride = 0;
    bool is_struct = false;
    std::vector<int64_t> lb_marks, ub_marks;  // MPI_LB / MPI_UB entries of a struct
    std::vector<Datatype*> align_types;       // struct: every type named (MPICH's alignment rule)
};

int combine_basic(int a, int b) {
    if (a == 0) return b;
    if (b == 0 || a == b) return a;
    return kMixedBasic;
}

// A new derived type shaped by `s`; holds a reference on each part's type. nullptr when out
// of handles.
Datatype* build(Shape& s) {
    Datatype* d = datatype_new();
    if (!d) return nullptr;
    bool any = false, any_data = false, s_lb = false, s_ub = false;
    int64_t lb = 0, ub = 0, tlb = 0, tub = 0, mlb = 0, mub = 0;
    int align = 1, depth = 0;
    for (const Part& p : s.parts) {
        const Datatype& c = *p.type;
        int64_t blb, bub;
        if (c.ub >= c.lb) {
            blb = c.lb + p.disp;
            bub = c.ub + p.disp + c.extent * (p.blen - 1);
        } else {
            blb = c.lb + p.disp + c.extent * (p.blen - 1);
            bub = c.ub + p.disp;
        }
        if (s.reps > 1) {
            int64_t span = s.stride * (s.reps - 1);
            if (span < 0)
                blb += span;
            else
                bub += span;
        }
        if (!any) {
            lb = blb, ub = bub;
            any = true;
        } else {
            lb = std::min(lb, blb), ub = std::max(ub, bub);
        }
        if (c.size > 0) {
            // Exact data bounds (MPI's true extent), also for negative extents and strides.
            int64_t span = c.extent * (p.blen - 1), rspan = s.stride * (s.reps - 1);
            int64_t dl =
                p.disp + c.true_lb + std::min<int64_t>(0, span) + std::min<int64_t>(0, rspan);
            int64_t du =
                p.disp + c.true_ub + std::max<int64_t>(0, span) + std::max<int64_t>(0, rspan);
            if (!any_data)
                tlb = dl, tub = du, any_data = true;
            else
                tlb = std::min(tlb, dl), tub = std::max(tub, du);
        }
        if (c.sticky_lb) mlb = s_lb ? std::min(mlb, blb) : blb, s_lb = true;
        if (c.sticky_ub) mub = s_ub ? std::max(mub, bub) : bub, s_ub = true;
        int64_t n = p.blen * s.reps;
        d->size += n * c.size;
        d->nelems += n * c.nelems;
        d->ext32_size += n * c.ext32_size;
        d->basic = combine_basic(d->basic, c.basic);
        align = std::max(align, c.align);
        depth = std::max(depth, c.depth);
        datatype_retain(p.type);
    }
    for (int64_t m : s.lb_marks) mlb = s_lb ? std::min(mlb, m) : m, s_lb = true;
    for (int64_t m : s.ub_marks) mub = s_ub ? std::max(mub, m) : m, s_ub = true;
    if (s_lb) lb = mlb;
    if (s_ub) ub = mub;
    for (Datatype* t : s.align_types) align = std::max(align, t->align);
    d->lb = lb;
    d->ub = ub;
    d->true_lb = tlb;
    d->true_ub = tub;
    d->extent = ub - lb;
    d->align = align;
    d->sticky_lb = s_lb;
    d->sticky_ub = s_ub;
    if (s.is_struct && !s_ub && align > 1) {
        int64_t eps = d->extent % align;
        if (eps) {
            d->ub += align - eps;
            d->extent = d->ub - d->lb;
        }
    }
    d->depth = depth + 1;
    d->parts = std::move(s.parts);
    d->reps = s.reps;
    d->rep_stride = s.stride;
    return d;
}

// Sets the bounds of `d` as MPI_Type_create_resized does.
void set_bounds(Datatype* d, int64_t lb, int64_t extent) {
    d->lb = lb;
    d->ub = lb + extent;
    d->extent = extent;
    d->sticky_lb = d->sticky_ub = false;
}

Datatype* one_child(Datatype* old, int64_t disp = 0) {
    Shape s;
    s.parts.push_back({disp, 1, old});
    return build(s);
}

// Records the constructor for get_envelope/get_contents; holds a reference on derived types.
void set_contents(Datatype* d, int combiner, std::vector<int> ints, std::vector<MPI_Aint> aints,
                  std::vector<MPI_Count> counts, std::vector<MPI_Datatype> types) {
    d->combiner = combiner;
    d->ints = std::move(ints);
    d->aints = std::move(aints);
    d->counts = std::move(counts);
    d->large = !d->counts.empty();
    d->types = std::move(types);
    for (MPI_Datatype h : d->types) datatype_retain(datatype_get(h));
}

// ---- internal constructors (byte displacements, 64-bit counts) ----------------------------------
Datatype* mk_contig(int64_t count, Datatype* old) {
    Shape s;
    if (count > 0) s.parts.push_back({0, count, old});
    return build(s);
}

Datatype* mk_hvector(int64_t count, int64_t blen, int64_t stride, Datatype* old) {
    Shape s;
    if (count > 0 && blen > 0) {
        s.parts.push_back({0, blen, old});
        s.reps = count;
        s.stride = stride;
    }
    return build(s);
}

Datatype* mk_hindexed(int64_t count, const int64_t* blens, const int64_t* disps, Datatype* old) {
    Shape s;
    for (int64_t i = 0; i < count; ++i)
        if (blens[i] > 0) s.parts.push_back({disps[i], blens[i], old});
    return build(s);
}

Datatype* mk_resized(Datatype* old, int64_t lb, int64_t extent) {
    Datatype* d = one_child(old);
    if (d) set_bounds(d, lb, extent);
    return d;
}

// Subarray (MPI 4.0 §5.1.3), built as MPICH does: a vector/hvector chain for the sub-box, placed
// at the start offset inside a type resized to the whole array.
Datatype* mk_subarray(int ndims, const int64_t* sizes, const int64_t* subsizes,
                      const int64_t* starts, int order, Datatype* old) {
    std::vector<int64_t> sz(sizes, sizes + ndims), sub(subsizes, subsizes + ndims),
        st(starts, starts + ndims);
    if (order == MPI_ORDER_C) {  // make dimension 0 the fastest varying
        std::reverse(sz.begin(), sz.end());
        std::reverse(sub.begin(), sub.end());
        std::reverse(st.begin(), st.end());
    }
    const int64_t ext = old->extent;
    Datatype* t = nullptr;
    if (ndims == 1) {
        t = mk_contig(sub[0], old);
    } else {
        t = mk_hvector(sub[1], sub[0], sz[0] * ext, old);
        int64_t stride = sz[0] * ext;
        for (int i = 2; i < ndims && t; ++i) {
            stride *= sz[size_t(i - 1)];
            Datatype* n = mk_hvector(sub[size_t(i)], 1, stride, t);
            datatype_release(t);
            t = n;
        }
    }
    if (!t) return nullptr;
    int64_t disp = st[0], mult = 1, total = ext;
    for (int i = 1; i < ndims; ++i) {
        mult *= sz[size_t(i - 1)];
        disp += mult * st[size_t(i)];
    }
    for (int i = 0; i < ndims; ++i) total *= sz[size_t(i)];
    Datatype* placed = one_child(t, disp * ext);
    datatype_release(t);
    if (!placed) return nullptr;
    set_bounds(placed, 0, total);
    return placed;
}

// Darray (MPI 4.0 §5.1.4), ported from MPICH's MPIR_Type_create_darray (the reference
// behaviour for HPF-style block and cyclic distributions).
Datatype* darray_block(const std::vector<int64_t>& gsizes, int dim, int ndims, int nprocs, int rank,
                       int darg, int order, int64_t orig_extent, Datatype* old, int64_t* st_offset,
                       int* err) {
    int64_t global = gsizes[size_t(dim)], blksize;
    if (darg == MPI_DISTRIBUTE_DFLT_DARG) {
        blksize = (global + nprocs - 1) / nprocs;
    } else {
        blksize = darg;
        if (blksize <= 0) {
            *err = make_error(MPI_ERR_ARG, "darray: block size %d must be positive", darg);
            return nullptr;
        }
        if (blksize * nprocs < global) {
            *err = make_error(MPI_ERR_ARG,
                              "darray: block size %d times %d processes does not cover the %lld "
                              "elements of dimension %d",
                              darg, nprocs, (long long)global, dim);
            return nullptr;
        }
    }
    int64_t mysize = std::min(blksize, global - blksize * rank);
    if (mysize < 0) mysize = 0;
    int64_t stride = orig_extent;
    Datatype* t = nullptr;
    bool fastest = (order == MPI_ORDER_FORTRAN) ? dim == 0 : dim == ndims - 1;
    if (fastest) {
        t = mk_contig(mysize, old);
    } else {
        if (order == MPI_ORDER_FORTRAN)
            for (int i = 0; i < dim; ++i) stride *= gsizes[size_t(i)];
        else
            for (int i = ndims - 1; i > dim; --i) stride *= gsizes[size_t(i)];
        t = mk_hvector(mysize, 1, stride, old);
    }
    *st_offset = mysize == 0 ? 0 : blksize * rank;
    if (!t) return nullptr;
    Datatype* r = mk_resized(t, 0, global * old->extent);
    datatype_release(t);
    return r;
}

Datatype* darray_cyclic(const std::vector<int64_t>& gsizes, int dim, int ndims, int nprocs,
                        int rank, int darg, int order, int64_t orig_extent, Datatype* old,
                        int64_t* st_offset, int* err) {
    int64_t blksize = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    if (blksize <= 0) {
        *err = make_error(MPI_ERR_ARG, "darray: cyclic block size %d must be positive", darg);
        return nullptr;
    }
    int64_t st_index = rank * blksize, end_index = gsizes[size_t(dim)] - 1, local_size;
    if (end_index < st_index) {
        local_size = 0;
    } else {
        local_size = ((end_index - st_index + 1) / (nprocs * blksize)) * blksize;
        int64_t rem = (end_index - st_index + 1) % (nprocs * blksize);
        local_size += std::min(rem, blksize);
    }
    int64_t count = local_size / blksize, rem = local_size % blksize;
    int64_t stride = int64_t(nprocs) * blksize * orig_extent;
    if (order == MPI_ORDER_FORTRAN)
        for (int i = 0; i < dim; ++i) stride *= gsizes[size_t(i)];
    else
        for (int i = ndims - 1; i > dim; --i) stride *= gsizes[size_t(i)];
    Datatype* t = mk_hvector(count, blksize, stride, old);
    if (!t) return nullptr;
    if (rem) {
        // The last, shorter block.
        Shape s;
        s.is_struct = true;
        s.parts.push_back({0, 1, t});
        s.parts.push_back({count * stride, rem, old});
        s.align_types = {t, old};
        Datatype* n = build(s);
        datatype_release(t);
        if (!(t = n)) return nullptr;
    }
    bool fastest = (order == MPI_ORDER_FORTRAN) ? dim == 0 : dim == ndims - 1;
    if (fastest) {
        Datatype* placed = one_child(t, int64_t(rank) * blksize * orig_extent);
        datatype_release(t);
        if (!placed) return nullptr;
        set_bounds(placed, 0, orig_extent * gsizes[size_t(dim)]);
        t = placed;
        *st_offset = 0;
    } else {
        *st_offset = int64_t(rank) * blksize;
    }
    if (local_size == 0) *st_offset = 0;
    Datatype* r = mk_resized(t, 0, gsizes[size_t(dim)] * old->extent);
    datatype_release(t);
    return r;
}

Datatype* mk_darray(int size, int rank, int ndims, const std::vector<int64_t>& gsizes,
                    const int* distribs, const int* dargs, const int* psizes, int order,
                    Datatype* old, int* err) {
    const int64_t ext = old->extent;
    std::vector<int> coords(static_cast<size_t>(ndims));
    int procs = size, tmp_rank = rank;
    for (int i = 0; i < ndims; ++i) {
        procs /= psizes[i];
        coords[size_t(i)] = tmp_rank / procs;
        tmp_rank %= procs;
    }
    std::vector<int64_t> st(static_cast<size_t>(ndims));
    Datatype* type_old = old;
    Datatype* type_new = nullptr;
    auto step = [&](int i) -> bool {
        switch (distribs[i]) {
        case MPI_DISTRIBUTE_BLOCK:
            type_new = darray_block(gsizes, i, ndims, psizes[i], coords[size_t(i)], dargs[i], order,
                                    ext, type_old, &st[size_t(i)], err);
            break;
        case MPI_DISTRIBUTE_CYCLIC:
            type_new = darray_cyclic(gsizes, i, ndims, psizes[i], coords[size_t(i)], dargs[i],
                                     order, ext, type_old, &st[size_t(i)], err);
            break;
        default:  // MPI_DISTRIBUTE_NONE: a block distribution over one process
            type_new = darray_block(gsizes, i, ndims, 1, 0, MPI_DISTRIBUTE_DFLT_DARG, order, ext,
                                    type_old, &st[size_t(i)], err);
        }
        if (type_old != old) datatype_release(type_old);
        type_old = type_new;
        return type_new != nullptr;
    };
    int64_t disp;
    if (order == MPI_ORDER_FORTRAN) {
        for (int i = 0; i < ndims; ++i)
            if (!step(i)) return nullptr;
        disp = st[0];
        int64_t m = 1;
        for (int i = 1; i < ndims; ++i) {
            m *= gsizes[size_t(i - 1)];
            disp += m * st[size_t(i)];
        }
    } else {
        for (int i = ndims - 1; i >= 0; --i)
            if (!step(i)) return nullptr;
        disp = st[size_t(ndims - 1)];
        int64_t m = 1;
        for (int i = ndims - 2; i >= 0; --i) {
            m *= gsizes[size_t(i + 1)];
            disp += m * st[size_t(i)];
        }
    }
    int64_t total = ext;
    for (int i = 0; i < ndims; ++i) total *= gsizes[size_t(i)];
    Datatype* placed = one_child(type_new, disp * ext);
    datatype_release(type_new);
    if (!placed) return nullptr;
    set_bounds(placed, 0, total);
    return placed;
}

// ---- argument checking --------------------------------------------------------------------------
int type_arg(MPI_Datatype h, Datatype** out, bool allow_markers = false) {
    Datatype* d = datatype_get(h);
    if (!d) return datatype_error(h);
    if (!allow_markers && (h == MPI_LB || h == MPI_UB))
        return make_error(MPI_ERR_TYPE, "%s may only appear in MPI_Type_create_struct", d->name);
    *out = d;
    return MPI_SUCCESS;
}

#define CHECK(cond, cls, ...) \
    if (!(cond)) return raise(nullptr, make_error(cls, __VA_ARGS__))
#define CHECK_RC(expr)                                      \
    do {                                                    \
        int rc_ = (expr);                                   \
        if (rc_ != MPI_SUCCESS) return raise(nullptr, rc_); \
    } while (0)
#define OUT_OF_HANDLES() raise(nullptr, make_error(MPI_ERR_INTERN, "out of datatype handles"))

bool fits_int(int64_t v) { return v >= INT_MIN && v <= INT_MAX; }

int finish(Datatype* d, MPI_Datatype* out) {
    if (!d) return OUT_OF_HANDLES();
    *out = d->handle;
    return MPI_SUCCESS;
}

}  // namespace
}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

// ---- contiguous / vector / hvector --------------------------------------------------------------
static int contiguous(int64_t count, MPI_Datatype oldtype, MPI_Datatype* newtype, bool large) {
    CHECK(count >= 0, MPI_ERR_COUNT, "negative count %lld", (long long)count);
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    Datatype* old = nullptr;
    CHECK_RC(type_arg(oldtype, &old));
    Datatype* d = mk_contig(count, old);
    if (!d) return OUT_OF_HANDLES();
    if (large && !fits_int(count))
        set_contents(d, MPI_COMBINER_CONTIGUOUS, {}, {}, {count}, {oldtype});
    else
        set_contents(d, MPI_COMBINER_CONTIGUOUS, {int(count)}, {}, {}, {oldtype});
    return finish(d, newtype);
}
int Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype* newtype) {
    return contiguous(count, oldtype, newtype, false);
}
int Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype* newtype) {
    return contiguous(count, oldtype, newtype, true);
}

static int vector(int64_t count, int64_t blen, int64_t stride, bool bytes, MPI_Datatype oldtype,
                  MPI_Datatype* newtype, bool large) {
    CHECK(count >= 0, MPI_ERR_COUNT, "negative count %lld", (long long)count);
    CHECK(blen >= 0, MPI_ERR_COUNT, "negative blocklength %lld", (long long)blen);
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    Datatype* old = nullptr;
    CHECK_RC(type_arg(oldtype, &old));
    Datatype* d = mk_hvector(count, blen, bytes ? stride : stride * old->extent, old);
    if (!d) return OUT_OF_HANDLES();
    int comb = bytes ? MPI_COMBINER_HVECTOR : MPI_COMBINER_VECTOR;
    if (large && !(fits_int(count) && fits_int(blen) && (bytes || fits_int(stride))))
        set_contents(d, comb, {}, {}, {count, blen, stride}, {oldtype});
    else if (bytes)
        set_contents(d, comb, {int(count), int(blen)}, {stride}, {}, {oldtype});
    else
        set_contents(d, comb, {int(count), int(blen), int(stride)}, {}, {}, {oldtype});
    return finish(d, newtype);
}
int Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                MPI_Datatype* newtype) {
    return vector(count, blocklength, stride, false, oldtype, newtype, false);
}
int Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype oldtype,
                  MPI_Datatype* newtype) {
    return vector(count, blocklength, stride, false, oldtype, newtype, true);
}
int Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                        MPI_Datatype* newtype) {
    return vector(count, blocklength, stride, true, oldtype, newtype, false);
}
int Type_create_hvector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                          MPI_Datatype oldtype, MPI_Datatype* newtype) {
    return vector(count, blocklength, stride, true, oldtype, newtype, true);
}
int Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                 MPI_Datatype* newtype) {
    return vector(count, blocklength, stride, true, oldtype, newtype, false);
}

// ---- indexed family -----------------------------------------------------------------------------
// blens == nullptr: every block has length `blen` (the *_block forms).
template <class B, class D>
static int indexed(int64_t count, const B* blens, int64_t blen, const D* disps, bool bytes,
                   MPI_Datatype oldtype, MPI_Datatype* newtype, int combiner, bool large) {
    CHECK(count >= 0, MPI_ERR_COUNT, "negative count %lld", (long long)count);
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    CHECK(count == 0 || disps, MPI_ERR_ARG, "array_of_displacements is NULL");
    if (!blens) CHECK(blen >= 0, MPI_ERR_COUNT, "negative blocklength %lld", (long long)blen);
    Datatype* old = nullptr;
    CHECK_RC(type_arg(oldtype, &old));
    std::vector<int64_t> bl(static_cast<size_t>(count)), dp(static_cast<size_t>(count));
    bool small = true;
    for (int64_t i = 0; i < count; ++i) {
        bl[size_t(i)] = blens ? int64_t(blens[i]) : blen;
        CHECK(bl[size_t(i)] >= 0, MPI_ERR_COUNT, "negative blocklength %lld at index %lld",
              (long long)bl[size_t(i)], (long long)i);
        dp[size_t(i)] = bytes ? int64_t(disps[i]) : int64_t(disps[i]) * old->extent;
        small = small && fits_int(bl[size_t(i)]) && (bytes || fits_int(int64_t(disps[i])));
    }
    small = small && fits_int(count) && fits_int(blen);
    Datatype* d = mk_hindexed(count, bl.data(), dp.data(), old);
    if (!d) return OUT_OF_HANDLES();
    std::vector<int> ints{int(count)};
    std::vector<MPI_Aint> aints;
    std::vector<MPI_Count> counts;
    if (large && !small) {
        counts.push_back(count);
        if (blens)
            for (int64_t i = 0; i < count; ++i) counts.push_back(bl[size_t(i)]);
        else
            counts.push_back(blen);
        for (int64_t i = 0; i < count; ++i) counts.push_back(int64_t(disps[i]));
        ints.clear();
    } else {
        if (blens)
            for (int64_t i = 0; i < count; ++i) ints.push_back(int(bl[size_t(i)]));
        else
            ints.push_back(int(blen));
        for (int64_t i = 0; i < count; ++i) {
            if (bytes)
                aints.push_back(MPI_Aint(disps[i]));
            else
                ints.push_back(int(disps[i]));
        }
    }
    set_contents(d, combiner, std::move(ints), std::move(aints), std::move(counts), {oldtype});
    return finish(d, newtype);
}

int Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
                 MPI_Datatype oldtype, MPI_Datatype* newtype) {
    CHECK(count == 0 || array_of_blocklengths, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    return indexed(count, array_of_blocklengths, 0, array_of_displacements, false, oldtype, newtype,
                   MPI_COMBINER_INDEXED, false);
}
int Type_indexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                   const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                   MPI_Datatype* newtype) {
    CHECK(count == 0 || array_of_blocklengths, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    return indexed(count, array_of_blocklengths, 0, array_of_displacements, false, oldtype, newtype,
                   MPI_COMBINER_INDEXED, true);
}
int Type_create_hindexed(int count, const int array_of_blocklengths[],
                         const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                         MPI_Datatype* newtype) {
    CHECK(count == 0 || array_of_blocklengths, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    return indexed(count, array_of_blocklengths, 0, array_of_displacements, true, oldtype, newtype,
                   MPI_COMBINER_HINDEXED, false);
}
int Type_create_hindexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                           const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                           MPI_Datatype* newtype) {
    CHECK(count == 0 || array_of_blocklengths, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    return indexed(count, array_of_blocklengths, 0, array_of_displacements, true, oldtype, newtype,
                   MPI_COMBINER_HINDEXED, true);
}
int Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                  MPI_Datatype oldtype, MPI_Datatype* newtype) {
    return Type_create_hindexed(count, array_of_blocklengths, array_of_displacements, oldtype,
                                newtype);
}
int Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                              MPI_Datatype oldtype, MPI_Datatype* newtype) {
    return indexed(count, static_cast<const int*>(nullptr), blocklength, array_of_displacements,
                   false, oldtype, newtype, MPI_COMBINER_INDEXED_BLOCK, false);
}
int Type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength,
                                const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                MPI_Datatype* newtype) {
    return indexed(count, static_cast<const MPI_Count*>(nullptr), blocklength,
                   array_of_displacements, false, oldtype, newtype, MPI_COMBINER_INDEXED_BLOCK,
                   true);
}
int Type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[],
                               MPI_Datatype oldtype, MPI_Datatype* newtype) {
    return indexed(count, static_cast<const int*>(nullptr), blocklength, array_of_displacements,
                   true, oldtype, newtype, MPI_COMBINER_HINDEXED_BLOCK, false);
}
int Type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength,
                                 const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                 MPI_Datatype* newtype) {
    return indexed(count, static_cast<const MPI_Count*>(nullptr), blocklength,
                   array_of_displacements, true, oldtype, newtype, MPI_COMBINER_HINDEXED_BLOCK,
                   true);
}

// ---- struct -------------------------------------------------------------------------------------
template <class B, class D>
static int create_struct(int64_t count, const B* blens, const D* disps, const MPI_Datatype* types,
                         MPI_Datatype* newtype, bool large) {
    CHECK(count >= 0, MPI_ERR_COUNT, "negative count %lld", (long long)count);
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    CHECK(count == 0 || (blens && disps && types), MPI_ERR_ARG,
          "NULL array argument with count %lld", (long long)count);
    Shape s;
    s.is_struct = true;
    bool small = fits_int(count);
    for (int64_t i = 0; i < count; ++i) {
        Datatype* t = nullptr;
        int rc = type_arg(types[i], &t, true);
        if (rc != MPI_SUCCESS) return raise(nullptr, rc);
        int64_t bl = int64_t(blens[i]), dp = int64_t(disps[i]);
        CHECK(bl >= 0, MPI_ERR_COUNT, "negative blocklength %lld at index %lld", (long long)bl,
              (long long)i);
        small = small && fits_int(bl);
        s.align_types.push_back(t);
        if (bl == 0) continue;
        if (types[i] == MPI_LB)
            s.lb_marks.push_back(dp);
        else if (types[i] == MPI_UB)
            s.ub_marks.push_back(dp);
        else
            s.parts.push_back({dp, bl, t});
    }
    Datatype* d = build(s);
    if (!d) return OUT_OF_HANDLES();
    std::vector<MPI_Datatype> tv(types, types + count);
    if (large && !small) {
        std::vector<MPI_Count> counts{count};
        for (int64_t i = 0; i < count; ++i) counts.push_back(int64_t(blens[i]));
        for (int64_t i = 0; i < count; ++i) counts.push_back(int64_t(disps[i]));
        set_contents(d, MPI_COMBINER_STRUCT, {}, {}, std::move(counts), std::move(tv));
    } else {
        std::vector<int> ints{int(count)};
        for (int64_t i = 0; i < count; ++i) ints.push_back(int(blens[i]));
        std::vector<MPI_Aint> aints(disps, disps + count);
        set_contents(d, MPI_COMBINER_STRUCT, std::move(ints), std::move(aints), {}, std::move(tv));
    }
    return finish(d, newtype);
}

int Type_create_struct(int count, const int array_of_blocklengths[],
                       const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[],
                       MPI_Datatype* newtype) {
    return create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types,
                         newtype, false);
}
int Type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                         const MPI_Count array_of_displacements[],
                         const MPI_Datatype array_of_types[], MPI_Datatype* newtype) {
    return create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types,
                         newtype, true);
}
int Type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                MPI_Datatype array_of_types[], MPI_Datatype* newtype) {
    return create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types,
                         newtype, false);
}

// ---- subarray / darray --------------------------------------------------------------------------
template <class S>
static int subarray(int ndims, const S* sizes, const S* subsizes, const S* starts, int order,
                    MPI_Datatype oldtype, MPI_Datatype* newtype, bool large) {
    CHECK(ndims > 0, MPI_ERR_DIMS, "ndims %d must be positive", ndims);
    CHECK(sizes && subsizes && starts, MPI_ERR_ARG, "NULL array argument");
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    CHECK(order == MPI_ORDER_C || order == MPI_ORDER_FORTRAN, MPI_ERR_ARG,
          "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order);
    Datatype* old = nullptr;
    CHECK_RC(type_arg(oldtype, &old));
    std::vector<int64_t> sz(static_cast<size_t>(ndims)), sub(static_cast<size_t>(ndims)),
        st(static_cast<size_t>(ndims));
    bool small = true;
    for (int i = 0; i < ndims; ++i) {
        sz[size_t(i)] = sizes[i], sub[size_t(i)] = subsizes[i], st[size_t(i)] = starts[i];
        CHECK(sz[size_t(i)] > 0, MPI_ERR_ARG, "array_of_sizes[%d] = %lld must be positive", i,
              (long long)sz[size_t(i)]);
        CHECK(sub[size_t(i)] >= 0 && sub[size_t(i)] <= sz[size_t(i)], MPI_ERR_ARG,
              "array_of_subsizes[%d] = %lld must be in 0..%lld", i, (long long)sub[size_t(i)],
              (long long)sz[size_t(i)]);
        CHECK(st[size_t(i)] >= 0 && st[size_t(i)] <= sz[size_t(i)] - sub[size_t(i)], MPI_ERR_ARG,
              "array_of_starts[%d] = %lld must be in 0..%lld", i, (long long)st[size_t(i)],
              (long long)(sz[size_t(i)] - sub[size_t(i)]));
        small = small && fits_int(sz[size_t(i)]);
    }
    Datatype* d = mk_subarray(ndims, sz.data(), sub.data(), st.data(), order, old);
    if (!d) return OUT_OF_HANDLES();
    if (large && !small) {
        std::vector<MPI_Count> counts(sz.begin(), sz.end());
        counts.insert(counts.end(), sub.begin(), sub.end());
        counts.insert(counts.end(), st.begin(), st.end());
        set_contents(d, MPI_COMBINER_SUBARRAY, {ndims, order}, {}, std::move(counts), {oldtype});
    } else {
        std::vector<int> ints{ndims};
        for (auto* v : {&sz, &sub, &st})
            for (int64_t x : *v) ints.push_back(int(x));
        ints.push_back(order);
        set_contents(d, MPI_COMBINER_SUBARRAY, std::move(ints), {}, {}, {oldtype});
    }
    return finish(d, newtype);
}
int Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                         const int array_of_starts[], int order, MPI_Datatype oldtype,
                         MPI_Datatype* newtype) {
    return subarray(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype,
                    newtype, false);
}
int Type_create_subarray_c(int ndims, const MPI_Count array_of_sizes[],
                           const MPI_Count array_of_subsizes[], const MPI_Count array_of_starts[],
                           int order, MPI_Datatype oldtype, MPI_Datatype* newtype) {
    return subarray(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype,
                    newtype, true);
}

template <class G>
static int darray(int size, int rank, int ndims, const G* gsizes, const int* distribs,
                  const int* dargs, const int* psizes, int order, MPI_Datatype oldtype,
                  MPI_Datatype* newtype, bool large) {
    CHECK(size > 0, MPI_ERR_ARG, "size %d must be positive", size);
    CHECK(rank >= 0 && rank < size, MPI_ERR_RANK, "rank %d is not in 0..%d", rank, size - 1);
    CHECK(ndims > 0, MPI_ERR_DIMS, "ndims %d must be positive", ndims);
    CHECK(gsizes && distribs && dargs && psizes, MPI_ERR_ARG, "NULL array argument");
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    CHECK(order == MPI_ORDER_C || order == MPI_ORDER_FORTRAN, MPI_ERR_ARG,
          "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order);
    Datatype* old = nullptr;
    CHECK_RC(type_arg(oldtype, &old));
    std::vector<int64_t> gs(static_cast<size_t>(ndims));
    int64_t nprocs = 1;
    bool small = true;
    for (int i = 0; i < ndims; ++i) {
        gs[size_t(i)] = int64_t(gsizes[i]);
        CHECK(gs[size_t(i)] > 0, MPI_ERR_ARG, "array_of_gsizes[%d] must be positive", i);
        CHECK(psizes[i] > 0, MPI_ERR_ARG, "array_of_psizes[%d] = %d must be positive", i,
              psizes[i]);
        CHECK(distribs[i] == MPI_DISTRIBUTE_BLOCK || distribs[i] == MPI_DISTRIBUTE_CYCLIC ||
                  distribs[i] == MPI_DISTRIBUTE_NONE,
              MPI_ERR_ARG, "array_of_distribs[%d] = %d is not a distribution", i, distribs[i]);
        CHECK(distribs[i] != MPI_DISTRIBUTE_NONE || psizes[i] == 1, MPI_ERR_ARG,
              "array_of_psizes[%d] must be 1 for MPI_DISTRIBUTE_NONE", i);
        CHECK(dargs[i] == MPI_DISTRIBUTE_DFLT_DARG || dargs[i] > 0, MPI_ERR_ARG,
              "array_of_dargs[%d] = %d must be positive or MPI_DISTRIBUTE_DFLT_DARG", i, dargs[i]);
        nprocs *= psizes[i];
        small = small && fits_int(gs[size_t(i)]);
    }
    CHECK(nprocs == size, MPI_ERR_ARG, "the process grid has %lld processes, size is %d",
          (long long)nprocs, size);
    int err = MPI_SUCCESS;
    Datatype* d = mk_darray(size, rank, ndims, gs, distribs, dargs, psizes, order, old, &err);
    if (!d) return err != MPI_SUCCESS ? raise(nullptr, err) : OUT_OF_HANDLES();
    std::vector<int> ints{size, rank, ndims};
    std::vector<MPI_Count> counts;
    if (large && !small)
        counts.assign(gs.begin(), gs.end());
    else
        for (int64_t g : gs) ints.push_back(int(g));
    ints.insert(ints.end(), distribs, distribs + ndims);
    ints.insert(ints.end(), dargs, dargs + ndims);
    ints.insert(ints.end(), psizes, psizes + ndims);
    ints.push_back(order);
    set_contents(d, MPI_COMBINER_DARRAY, std::move(ints), {}, std::move(counts), {oldtype});
    return finish(d, newtype);
}
int Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                       const int array_of_distribs[], const int array_of_dargs[],
                       const int array_of_psizes[], int order, MPI_Datatype oldtype,
                       MPI_Datatype* newtype) {
    return darray(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs,
                  array_of_psizes, order, oldtype, newtype, false);
}
int Type_create_darray_c(int size, int rank, int ndims, const MPI_Count array_of_gsizes[],
                         const int array_of_distribs[], const int array_of_dargs[],
                         const int array_of_psizes[], int order, MPI_Datatype oldtype,
                         MPI_Datatype* newtype) {
    return darray(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs,
                  array_of_psizes, order, oldtype, newtype, true);
}

// ---- resized / dup / commit / free --------------------------------------------------------------
static int resized(MPI_Datatype oldtype, int64_t lb, int64_t extent, MPI_Datatype* newtype,
                   bool large) {
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    Datatype* old = nullptr;
    CHECK_RC(type_arg(oldtype, &old));
    Datatype* d = mk_resized(old, lb, extent);
    if (!d) return OUT_OF_HANDLES();
    if (large)
        set_contents(d, MPI_COMBINER_RESIZED, {}, {}, {lb, extent}, {oldtype});
    else
        set_contents(d, MPI_COMBINER_RESIZED, {}, {lb, extent}, {}, {oldtype});
    return finish(d, newtype);
}
int Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype* newtype) {
    return resized(oldtype, lb, extent, newtype, false);
}
int Type_create_resized_c(MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                          MPI_Datatype* newtype) {
    return resized(oldtype, lb, extent, newtype, true);
}

int Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) {
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    Datatype* old = nullptr;
    CHECK_RC(type_arg(oldtype, &old));
    Datatype* d = one_child(old);
    if (!d) return OUT_OF_HANDLES();
    // Identical bounds, markers included.
    d->lb = old->lb, d->ub = old->ub, d->extent = old->extent;
    d->sticky_lb = old->sticky_lb, d->sticky_ub = old->sticky_ub;
    set_contents(d, MPI_COMBINER_DUP, {}, {}, {}, {oldtype});
    if (old->committed) {
        datatype_flatten(d);
        d->committed = true;
    }
    if (int rc = attr_type_copy(oldtype, d->handle); rc != MPI_SUCCESS) {
        datatype_release(d);
        *newtype = MPI_DATATYPE_NULL;
        return raise(nullptr, rc);
    }
    return finish(d, newtype);
}

int Type_commit(MPI_Datatype* datatype) {
    CHECK(datatype, MPI_ERR_ARG, "datatype is NULL");
    Datatype* d = datatype_get(*datatype);
    if (!d) return raise(nullptr, datatype_error(*datatype));
    if (d->builtin) return MPI_SUCCESS;
    datatype_flatten(d);
    d->committed = true;
    return MPI_SUCCESS;
}

int Type_free(MPI_Datatype* datatype) {
    CHECK(datatype, MPI_ERR_ARG, "datatype is NULL");
    Datatype* d = datatype_get(*datatype);
    if (!d) return raise(nullptr, datatype_error(*datatype));
    if (d->builtin ||
        (d->combiner >= MPI_COMBINER_F90_REAL && d->combiner <= MPI_COMBINER_F90_INTEGER))
        return raise(nullptr,
                     make_error(MPI_ERR_TYPE, "%s is predefined and cannot be freed", d->name));
    // Delete callbacks run now, while the handle is still the user's (MPI 4.0 §7.7.4); a
    // failing callback fails the free and leaves the type alone.
    if (int rc = attr_type_delete_all(*datatype); rc != MPI_SUCCESS) return raise(nullptr, rc);
    *datatype = MPI_DATATYPE_NULL;
    datatype_release(d);
    return MPI_SUCCESS;
}

// ---- Fortran 90 parameterised types and MPI_Type_match_size -------------------------------------
// MPI_Type_create_f90_*: the predefined REAL4/8/16, COMPLEX8/16/32 or INTEGER1..16 type that
// holds the requested precision/range, wrapped (once per (p, r)) in a derived type whose
// envelope says MPI_COMBINER_F90_* as the standard requires; these types are never freed.
static int f90_type(int combiner, int p, int r, MPI_Datatype base, MPI_Datatype* newtype) {
    struct Key {
        int comb, p, r;
        MPI_Datatype h;
    };
    static std::vector<Key> cache;
    for (const Key& k : cache)
        if (k.comb == combiner && k.p == p && k.r == r) {
            *newtype = k.h;
            return MPI_SUCCESS;
        }
    Datatype* old = datatype_get(base);
    Datatype* d = one_child(old);
    if (!d) return OUT_OF_HANDLES();
    std::vector<int> ints;
    if (combiner == MPI_COMBINER_F90_INTEGER)
        ints = {r};
    else
        ints = {p, r};
    set_contents(d, combiner, std::move(ints), {}, {}, {});
    datatype_flatten(d);
    d->committed = true;
    std::snprintf(d->name, sizeof d->name, "%s", old->name);
    cache.push_back({combiner, p, r, d->handle});
    *newtype = d->handle;
    return MPI_SUCCESS;
}

int Type_create_f90_real(int p, int r, MPI_Datatype* newtype) {
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    // IEEE single: 6 digits, range 37; double: 15, 307; quad: 33, 4931.
    MPI_Datatype t;
    if ((p == MPI_UNDEFINED || p <= 6) && (r == MPI_UNDEFINED || r <= 37))
        t = MPI_REAL4;
    else if ((p == MPI_UNDEFINED || p <= 15) && (r == MPI_UNDEFINED || r <= 307))
        t = MPI_REAL8;
    else if ((p == MPI_UNDEFINED || p <= 33) && (r == MPI_UNDEFINED || r <= 4931))
        t = MPI_REAL16;
    else
        return raise(nullptr,
                     make_error(MPI_ERR_ARG, "no real type has precision %d and range %d", p, r));
    return f90_type(MPI_COMBINER_F90_REAL, p, r, t, newtype);
}
int Type_create_f90_complex(int p, int r, MPI_Datatype* newtype) {
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    MPI_Datatype t;
    if ((p == MPI_UNDEFINED || p <= 6) && (r == MPI_UNDEFINED || r <= 37))
        t = MPI_COMPLEX8;
    else if ((p == MPI_UNDEFINED || p <= 15) && (r == MPI_UNDEFINED || r <= 307))
        t = MPI_COMPLEX16;
    else if ((p == MPI_UNDEFINED || p <= 33) && (r == MPI_UNDEFINED || r <= 4931))
        t = MPI_COMPLEX32;
    else
        return raise(nullptr, make_error(MPI_ERR_ARG,
                                         "no complex type has precision %d and range %d", p, r));
    return f90_type(MPI_COMBINER_F90_COMPLEX, p, r, t, newtype);
}
int Type_create_f90_integer(int r, MPI_Datatype* newtype) {
    CHECK(newtype, MPI_ERR_ARG, "newtype is NULL");
    MPI_Datatype t;
    if (r <= 2)
        t = MPI_INTEGER1;
    else if (r <= 4)
        t = MPI_INTEGER2;
    else if (r <= 9)
        t = MPI_INTEGER4;
    else if (r <= 18)
        t = MPI_INTEGER8;
    else if (r <= 38)
        t = MPI_INTEGER16;
    else
        return raise(nullptr, make_error(MPI_ERR_ARG, "no integer type has range %d", r));
    return f90_type(MPI_COMBINER_F90_INTEGER, 0, r, t, newtype);
}

int Type_match_size(int typeclass, int size, MPI_Datatype* datatype) {
    CHECK(datatype, MPI_ERR_ARG, "datatype is NULL");
    // The Fortran types, as the standard's example suggests (REAL*n, INTEGER*n, COMPLEX*n).
    MPI_Datatype t = MPI_DATATYPE_NULL;
    switch (typeclass) {
    case MPI_TYPECLASS_REAL:
        t = size == 4    ? MPI_REAL4
            : size == 8  ? MPI_REAL8
            : size == 16 ? MPI_REAL16
                         : MPI_DATATYPE_NULL;
        break;
    case MPI_TYPECLASS_INTEGER:
        t = size == 1    ? MPI_INTEGER1
            : size == 2  ? MPI_INTEGER2
            : size == 4  ? MPI_INTEGER4
            : size == 8  ? MPI_INTEGER8
            : size == 16 ? MPI_INTEGER16
                         : MPI_DATATYPE_NULL;
        break;
    case MPI_TYPECLASS_COMPLEX:
        t = size == 8    ? MPI_COMPLEX8
            : size == 16 ? MPI_COMPLEX16
            : size == 32 ? MPI_COMPLEX32
                         : MPI_DATATYPE_NULL;
        break;
    default: return raise(nullptr, make_error(MPI_ERR_ARG, "invalid typeclass %d", typeclass));
    }
    if (t == MPI_DATATYPE_NULL)
        return raise(nullptr,
                     make_error(MPI_ERR_ARG, "no type of class %d has size %d", typeclass, size));
    *datatype = t;
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
