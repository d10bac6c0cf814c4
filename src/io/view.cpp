// MPI-IO file views: MPI_File_set_view/get_view/get_byte_offset/get_type_extent.
//
// A view is (disp, etype, filetype, datarep). The file seen through it is the data bytes of the
// filetype tiled from disp on (tile k at disp + k * extent(filetype)), in typemap order; offsets
// count etypes of that data. set_view flattens one filetype tile into byte blocks once
// (datatype_walk over its basic runs, adjacent runs merged), so mapping an access to file ranges
// is a binary search for the first block and a walk from there: holes, resized extents and
// any nesting of derived types cost nothing more at access time.
//
// external32: the data is converted element by element (big-endian, fixed sizes; see
// core/dt_pack.cpp), and the view's layout is the filetype's native layout. That layout is the
// external32 one exactly when every basic type in etype and filetype has the same size in both
// representations (true for everything but MPI_LONG, MPI_UNSIGNED_LONG, MPI_WCHAR, MPI_AINT-
// sized and long double types on this platform); other views are refused with
// MPI_ERR_UNSUPPORTED_DATAREP rather than laid out wrongly. The user's buffer type is free.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "bindings/impl.hpp"
#include "core/datatype.hpp"
#include "core/errors.hpp"
#include "core/info.hpp"
#include "io/file.hpp"

namespace wanmpi::io {
namespace {

struct FlatCtx {
    std::vector<Seg>* out;
    int64_t data = 0;
};

bool flat_run(void* ctx, int64_t off, int64_t n, int basic) {
    auto* c = static_cast<FlatCtx*>(ctx);
    int64_t len = n * core::builtin_by_index(basic)->size;
    if (len == 0) return true;
    if (!c->out->empty() && c->out->back().foff + c->out->back().len == off)
        c->out->back().len += len;
    else
        c->out->push_back({off, len, c->data});
    c->data += len;
    return true;
}

// One element of `d` as file blocks, checked against MPI 3.1 13.3: etype and filetype
// displacements must be non-negative and monotonically nondecreasing, and the extent positive;
// overlapping blocks are allowed only in a file opened read-only (reading a byte twice is
// harmless). The error class is MPI_ERR_IO, as ROMIO reports (and MPICH's tests expect).
int flatten_checked(const core::Datatype& d, const char* what, bool overlap_ok,
                    std::vector<Seg>* out) {
    // An etype only lends its size (IOR uses one resized to extent 0); a filetype tiles.
    if (d.extent <= 0 && std::strcmp(what, "etype") != 0)
        return core::make_error(MPI_ERR_IO, "%s has a non-positive extent (%lld)", what,
                                (long long)d.extent);
    FlatCtx ctx{out};
    core::datatype_walk(d, 0, 1, flat_run, &ctx);
    for (size_t i = 0; i < out->size(); i++) {
        if ((*out)[i].foff < 0)
            return core::make_error(MPI_ERR_IO, "%s has a negative displacement (%lld bytes): "
                                                "not allowed in a file view (MPI 3.1 13.3)",
                                    what, (long long)(*out)[i].foff);
        if (i == 0) continue;
        const Seg& prev = (*out)[i - 1];
        if ((*out)[i].foff < prev.foff ||
            (!overlap_ok && (*out)[i].foff < prev.foff + prev.len))
            return core::make_error(MPI_ERR_IO, "%s's displacements %s (at byte %lld): a file "
                                                "view needs them monotonically nondecreasing "
                                                "(MPI 3.1 13.3)%s",
                                    what, (*out)[i].foff < prev.foff ? "decrease" : "overlap",
                                    (long long)(*out)[i].foff,
                                    (*out)[i].foff < prev.foff ? "" : "; overlaps are allowed "
                                                                      "for read-only files");
    }
    return MPI_SUCCESS;
}

void free_type(MPI_Datatype* t) {
    const core::Datatype* d = core::datatype_get(*t);
    if (d && !d->builtin) impl::Type_free(t);
    *t = MPI_BYTE;
}

// Our own handle on a user's type (the user may free theirs while the view lives).
MPI_Datatype keep_type(MPI_Datatype t) {
    const core::Datatype* d = core::datatype_get(t);
    if (!d || d->builtin) return t;
    MPI_Datatype dup = MPI_DATATYPE_NULL;
    impl::Type_dup(t, &dup);
    return dup;
}

// The tile and block holding view data byte `data_off` (at `within` bytes into the block).
void locate(const View& v, int64_t data_off, int64_t* tile, size_t* blk, int64_t* within) {
    // (callers handle fsize == 0: such a view has no data to locate)
    *tile = data_off / v.fsize;
    int64_t r = data_off % v.fsize;
    auto it = std::upper_bound(v.blocks.begin(), v.blocks.end(), r,
                               [](int64_t x, const Seg& b) { return x < b.soff; });
    *blk = size_t(it - v.blocks.begin()) - 1;
    *within = r - v.blocks[*blk].soff;
}

}  // namespace

void view_reset(View* v) {
    free_type(&v->etype);
    free_type(&v->filetype);
    *v = View{};
}

void view_map(const View& v, int64_t data_off, int64_t nbytes, int64_t soff0,
              std::vector<Seg>* out) {
    auto add = [out](int64_t foff, int64_t len, int64_t soff) {
        if (!out->empty()) {
            Seg& l = out->back();
            if (l.foff + l.len == foff && l.soff + l.len == soff) {
                l.len += len;
                return;
            }
        }
        out->push_back({foff, len, soff});
    };
    if (nbytes <= 0) return;
    if (v.dense) {
        add(v.disp + data_off, nbytes, soff0);
        return;
    }
    int64_t tile, within;
    size_t i;
    locate(v, data_off, &tile, &i, &within);
    int64_t s = soff0;
    while (nbytes > 0) {
        const Seg& b = v.blocks[i];
        int64_t take = std::min(b.len - within, nbytes);
        add(v.disp + tile * v.fextent + b.foff + within, take, s);
        s += take;
        nbytes -= take;
        within = 0;
        if (++i == v.blocks.size()) {
            i = 0;
            tile++;
        }
    }
}

int64_t view_byte_offset(const View& v, int64_t data_off) {
    if (v.dense) return v.disp + data_off;
    if (v.fsize == 0 || v.blocks.empty()) return v.disp;
    int64_t tile, within;
    size_t i;
    locate(v, data_off, &tile, &i, &within);
    return v.disp + tile * v.fextent + v.blocks[i].foff + within;
}

}  // namespace wanmpi::io

namespace wanmpi::impl {
using core::make_error;
using io::File;

// The local part of set_view: the new view in *v, or an error code (not raised).
static int make_view(File* f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                     const char* datarep, MPI_Info info, io::View* v) {
    const core::Datatype* e = core::datatype_lookup(etype);
    if (!e)
        return make_error(MPI_ERR_TYPE, "etype: %s",
                          core::error_text(core::datatype_error(etype)).c_str());
    const core::Datatype* ft = core::datatype_lookup(filetype);
    if (!ft)
        return make_error(MPI_ERR_TYPE, "filetype: %s",
                          core::error_text(core::datatype_error(filetype)).c_str());
    if (!datarep) return make_error(MPI_ERR_ARG, "datarep is NULL");
    bool ext32 = !std::strcmp(datarep, "external32");
    if (!ext32 && std::strcmp(datarep, "native") && std::strcmp(datarep, "internal"))
        return make_error(MPI_ERR_UNSUPPORTED_DATAREP,
                          "data representation \"%s\" (supported: native, internal, external32)",
                          datarep);
    if (int rc = core::info_arg_check(info)) return rc;
    if (disp == MPI_DISPLACEMENT_CURRENT) {
        if (!(f->amode & MPI_MODE_SEQUENTIAL))
            return make_error(MPI_ERR_ARG, "MPI_DISPLACEMENT_CURRENT needs a file opened with "
                                           "MPI_MODE_SEQUENTIAL");
        int64_t pos = 0;
        if (int rc = io::shfp_get(f, &pos)) return rc;
        disp = io::view_byte_offset(f->view, pos * f->view.esize);
    }
    if (disp < 0) return make_error(MPI_ERR_ARG, "negative displacement %lld", (long long)disp);
    if (e->size <= 0) return make_error(MPI_ERR_TYPE, "etype has no data (size 0)");
    if (ft->size % e->size != 0)
        return make_error(MPI_ERR_TYPE, "filetype size %lld is not a multiple of the etype size "
                                        "%lld", (long long)ft->size, (long long)e->size);
    if (ext32 && (e->ext32_size != e->size || ft->ext32_size != ft->size))
        return make_error(MPI_ERR_UNSUPPORTED_DATAREP,
                          "external32 views of types whose external32 size differs from the "
                          "native size (MPI_LONG, long double, ...) are not supported; the "
                          "buffer's type may be any");
    bool ro = (f->amode & MPI_MODE_RDONLY) != 0;
    std::vector<io::Seg> eblocks;
    if (int rc = io::flatten_checked(*e, "etype", ro, &eblocks)) return rc;
    v->disp = disp;
    v->esize = e->size;
    v->fsize = ft->size;  // may be 0: a rank with nothing to access (accesses then must be empty)
    v->fextent = ft->extent;
    v->ext32 = ext32;
    v->datarep = datarep;
    v->blocks.clear();
    if (int rc = io::flatten_checked(*ft, "filetype", ro, &v->blocks)) return rc;
    v->dense = v->blocks.size() == 1 && v->blocks[0].foff == 0 && v->fextent == v->fsize;
    return MPI_SUCCESS;
}

// Collective. Every rank checks its own arguments, then one allreduce makes all ranks agree: the
// new view is taken everywhere or nowhere (so a bad argument on one rank cannot leave the
// ranks' collectives mismatched). Then rank 0 resets the shared pointer to 0 and a broadcast
// keeps everyone from using it before that. MPI_DISPLACEMENT_CURRENT is read before the
// allreduce, so no rank can see the pointer already reset.
int File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                  const char* datarep, MPI_Info info) {
    GET_FILE(f, fh);
    io::View v;
    int rc = make_view(f, disp, etype, filetype, datarep, info, &v);
    int64_t bad = rc != MPI_SUCCESS, anybad = 0;
    Allreduce(&bad, &anybad, 1, MPI_INT64_T, MPI_MAX, f->comm);
    if (rc == MPI_SUCCESS && anybad)
        rc = make_error(MPI_ERR_IO, "MPI_File_set_view failed on another rank");
    if (rc != MPI_SUCCESS) return io::raise(f, rc);
    v.etype = io::keep_type(etype);
    v.filetype = io::keep_type(filetype);
    io::view_reset(&f->view);
    f->view = std::move(v);
    f->fp = 0;
    if (info != MPI_INFO_NULL) io::apply_hints(f, info);
    int64_t reset = MPI_SUCCESS;
    if (f->rank == 0 && f->shfp_fd >= 0) reset = io::shfp_put(f, 0);
    Bcast(&reset, 1, MPI_INT64_T, 0, f->comm);
    if (reset != MPI_SUCCESS)
        return io::raise(f, f->rank == 0 ? int(reset)
                                         : make_error(MPI_ERR_IO, "resetting the shared file "
                                                                  "pointer failed on rank 0"));
    return MPI_SUCCESS;
}

int File_get_view(MPI_File fh, MPI_Offset* disp, MPI_Datatype* etype, MPI_Datatype* filetype,
                  char* datarep) {
    GET_FILE(f, fh);
    if (!disp || !etype || !filetype || !datarep)
        return io::raise(f, make_error(MPI_ERR_ARG, "NULL output argument"));
    *disp = f->view.disp;
    // Derived types come back as new handles the caller frees (MPI 3.1 13.3).
    *etype = io::keep_type(f->view.etype);
    *filetype = io::keep_type(f->view.filetype);
    std::snprintf(datarep, MPI_MAX_DATAREP_STRING, "%s", f->view.datarep.c_str());
    return MPI_SUCCESS;
}

int File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset* disp) {
    GET_FILE(f, fh);
    if (!disp) return io::raise(f, make_error(MPI_ERR_ARG, "disp is NULL"));
    if (offset < 0)
        return io::raise(f, make_error(MPI_ERR_ARG, "negative offset %lld", (long long)offset));
    *disp = io::view_byte_offset(f->view, offset * f->view.esize);
    return MPI_SUCCESS;
}

static int type_extent(MPI_File fh, MPI_Datatype dt, int64_t* out) {
    GET_FILE(f, fh);
    const core::Datatype* d = core::datatype_get(dt);
    if (!d) return io::raise(f, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    if (!out) return io::raise(f, make_error(MPI_ERR_ARG, "extent is NULL"));
    if (!f->view.ext32)
        *out = d->extent;
    else if (d->builtin)
        *out = d->ext32_size;
    else
        *out = d->extent - d->size + d->ext32_size;  // the data shrinks or grows, holes stay
    return MPI_SUCCESS;
}
int File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint* extent) {
    int64_t e = 0;
    int rc = type_extent(fh, datatype, &e);
    if (rc == MPI_SUCCESS && extent) *extent = e;
    return rc;
}
int File_get_type_extent_c(MPI_File fh, MPI_Datatype datatype, MPI_Count* extent) {
    int64_t e = 0;
    int rc = type_extent(fh, datatype, &e);
    if (rc == MPI_SUCCESS && extent) *extent = e;
    return rc;
}

}  // namespace wanmpi::impl
