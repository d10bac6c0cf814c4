// MPI-IO data access: every MPI_File_read*/write* entry point, file pointers, and the
// nonblocking and split-collective forms.
//
// An access packs the user's buffer into a data stream (in place when the buffer is dense and
// the representation native; converted to big-endian for external32), maps the stream onto file
// byte ranges through the view (view.cpp), and moves the ranges with pread/pwrite. Collective
// forms go through two-phase aggregation (twophase.cpp).
//
// Nonblocking (MPI_File_i*) and split collectives (_begin/_end) do the I/O at call time and
// return a completed request (resp. keep the status until _end), as ROMIO does on file systems
// without asynchronous I/O: the data is in the file (page cache) when the call returns. A
// nonblocking collective is a collective at call time, so every rank must start them in the
// same order (the standard requires that anyway).
//
// Shared file pointer: an 8-byte offset (in etypes, host byte order) at the start of a lock file
// created beside the data file by rank 0 at open and unlinked once every rank holds it open, so it
// leaves nothing behind even if the job dies. An update is fcntl-lock, read, add, write, unlock:
// every rank of every host that shares the file system serializes on it, with no helper thread
// and no rank that must keep calling MPI. Ordered accesses (collective) read and advance it once,
// on rank 0, and place the ranks' data one after the other in rank order.
//
// Atomic mode: each independent access takes an fcntl write lock (read lock for reads) over the
// byte range it touches, so concurrent overlapping accesses are serialized whole, as MPI 3.1
// 13.6.1 requires; collective accesses in atomic mode run as independent ones under those locks.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bindings/impl.hpp"
#include "core/comm.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "io/file.hpp"

namespace wanmpi::io {

void set_status(MPI_Status* st, int64_t bytes) {
    if (st == MPI_STATUS_IGNORE) return;
    st->count_lo = int(uint32_t(uint64_t(bytes)));
    st->count_hi_and_cancelled = int((uint64_t(bytes) >> 32) & 0x7fffffff);
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
}

int check_access(File* f, bool write, Ptr ptr, int64_t count, MPI_Datatype dt,
                 const core::Datatype** out) {
    if (write && (f->amode & MPI_MODE_RDONLY))
        return core::make_error(MPI_ERR_READ_ONLY, "%s is open with MPI_MODE_RDONLY",
                                f->path.c_str());
    if (!write && (f->amode & MPI_MODE_WRONLY))
        return core::make_error(MPI_ERR_ACCESS, "%s is open with MPI_MODE_WRONLY",
                                f->path.c_str());
    if (ptr != Ptr::shared && (f->amode & MPI_MODE_SEQUENTIAL))
        return core::make_error(MPI_ERR_UNSUPPORTED_OPERATION,
                                "%s is open with MPI_MODE_SEQUENTIAL: only shared file pointer "
                                "accesses are allowed", f->path.c_str());
    if (count < 0) return core::make_error(MPI_ERR_COUNT, "negative count %lld", (long long)count);
    const core::Datatype* d = core::datatype_lookup(dt);
    if (!d) return core::datatype_error(dt);
    int64_t bytes = count * (f->view.ext32 ? d->ext32_size : d->size);
    if (bytes % f->view.esize != 0)
        return core::make_error(MPI_ERR_TYPE, "%lld bytes of data are not a whole number of "
                                              "etypes (%lld bytes each)",
                                (long long)bytes, (long long)f->view.esize);
    if (bytes > 0 && f->view.fsize == 0)
        return core::make_error(MPI_ERR_IO, "the file view's filetype holds no data, so no data "
                                            "can be accessed through it");
    *out = d;
    return MPI_SUCCESS;
}

int stream_out(const File* f, const void* buf, int64_t count, const core::Datatype* d,
               Stream* s) {
    if (f->view.ext32) {
        s->bytes = count * d->ext32_size;
        s->own.resize(size_t(s->bytes));
        s->p = s->own.data();
        return core::ext32_convert(*d, const_cast<void*>(buf), count, s->p, true);
    }
    s->bytes = count * d->size;
    int64_t off = 0;
    if (core::datatype_dense(*d, count, &off)) {
        s->p = static_cast<char*>(const_cast<void*>(buf)) + off;
    } else {
        s->own.resize(size_t(s->bytes));
        s->p = s->own.data();
        core::pack(*d, buf, count, s->p);
    }
    return MPI_SUCCESS;
}

void stream_in(const File* f, void* buf, int64_t count, const core::Datatype* d, Stream* s) {
    int64_t off = 0;
    s->bytes = count * (f->view.ext32 ? d->ext32_size : d->size);
    if (!f->view.ext32 && core::datatype_dense(*d, count, &off)) {
        s->p = static_cast<char*>(buf) + off;
    } else {
        s->own.resize(size_t(s->bytes));
        s->p = s->own.data();
    }
}

int64_t stream_deliver(const File* f, Stream* s, int64_t got, void* buf,
                       const core::Datatype* d) {
    if (f->view.ext32) {
        int64_t n = d->ext32_size ? got / d->ext32_size : 0;  // whole elements only
        if (n > 0) core::ext32_convert(*d, buf, n, s->p, false);
        return n * d->size;
    }
    if (!s->own.empty() && got > 0) core::unpack(*d, s->p, got, buf);
    return got;
}

int rw_segs(File* f, bool write, const std::vector<Seg>& segs, char* stream, int64_t* done) {
    *done = 0;
    for (const Seg& g : segs) {
        int64_t moved = 0;
        while (moved < g.len) {
            ssize_t n = write ? ::pwrite(f->fd, stream + g.soff + moved, size_t(g.len - moved),
                                         g.foff + moved)
                              : ::pread(f->fd, stream + g.soff + moved, size_t(g.len - moved),
                                        g.foff + moved);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return sys_error(errno, write ? "write" : "read", f->path);
            if (n == 0) {
                if (write) return core::make_error(MPI_ERR_IO, "write %s: no progress",
                                                   f->path.c_str());
                return MPI_SUCCESS;  // end of file: a short read
            }
            moved += n;
            *done += n;
        }
    }
    return MPI_SUCCESS;
}

namespace {

// fcntl record lock over [start, end) of fd; F_UNLCK to release.
int range_lock(int fd, short type, int64_t start, int64_t end) {
    struct flock fl{};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = end - start;
    while (::fcntl(fd, F_SETLKW, &fl) != 0)
        if (errno != EINTR) return errno;
    return 0;
}

// Reads the shared file pointer and adds `add` to it, atomically across all processes.
int shfp_fetch_add(File* f, int64_t add, int64_t* old) {
    if (f->shfp_fd < 0)
        return core::make_error(MPI_ERR_IO, "no shared file pointer for %s: its lock file could "
                                            "not be created in the file's directory",
                                f->path.c_str());
    if (int e = range_lock(f->shfp_fd, F_WRLCK, 0, 8))
        return sys_error(e, "lock the shared file pointer of", f->path);
    int rc = MPI_SUCCESS;
    int64_t v = 0;
    if (::pread(f->shfp_fd, &v, 8, 0) != 8) {
        rc = sys_error(errno ? errno : EIO, "read the shared file pointer of", f->path);
    } else if (add != 0) {
        int64_t nv = v + add;
        if (::pwrite(f->shfp_fd, &nv, 8, 0) != 8)
            rc = sys_error(errno ? errno : EIO, "write the shared file pointer of", f->path);
    }
    range_lock(f->shfp_fd, F_UNLCK, 0, 8);
    *old = v;
    return rc;
}

}  // namespace

int shfp_get(File* f, int64_t* value) { return shfp_fetch_add(f, 0, value); }

int shfp_put(File* f, int64_t v) {
    if (f->shfp_fd < 0) return shfp_fetch_add(f, 0, &v);  // the "no shared pointer" error
    if (int e = range_lock(f->shfp_fd, F_WRLCK, 0, 8))
        return sys_error(e, "lock the shared file pointer of", f->path);
    int rc = ::pwrite(f->shfp_fd, &v, 8, 0) == 8
                 ? MPI_SUCCESS
                 : sys_error(errno ? errno : EIO, "write the shared file pointer of", f->path);
    range_lock(f->shfp_fd, F_UNLCK, 0, 8);
    return rc;
}

// Independent read/write of the stream at view data byte data_off; atomic mode locks the range.
int indep_rw(File* f, bool write, int64_t data_off, Stream* s, int64_t* done) {
    std::vector<Seg> segs;
    view_map(f->view, data_off, s->bytes, 0, &segs);
    if (!f->atomic || segs.empty()) return rw_segs(f, write, segs, s->p, done);
    int64_t lo = segs.front().foff, hi = 0;
    for (const Seg& g : segs) {
        lo = std::min(lo, g.foff);
        hi = std::max(hi, g.foff + g.len);
    }
    if (int e = range_lock(f->fd, write ? F_WRLCK : F_RDLCK, lo, hi))
        return sys_error(e, "lock a range of", f->path);
    int rc = rw_segs(f, write, segs, s->p, done);
    range_lock(f->fd, F_UNLCK, lo, hi);
    return rc;
}

namespace {

enum class Kind { indep, coll, ordered };

// Every read/write entry point lands here. For collectives, a rank whose arguments are wrong
// still takes part (with no data) so that the others do not hang, then reports its error.
int access(MPI_File fh, Kind kind, Ptr ptr, bool write, int64_t offset, const void* cbuf,
           int64_t count, MPI_Datatype dt, MPI_Status* st) {
    GET_FILE(f, fh);
    void* buf = const_cast<void*>(cbuf);
    const core::Datatype* d = nullptr;
    int rc = check_access(f, write, ptr, count, dt, &d);
    if (rc == MPI_SUCCESS && ptr == Ptr::explicit_off && offset < 0)
        rc = core::make_error(MPI_ERR_ARG, "negative offset %lld", (long long)offset);
    Stream s;
    if (rc == MPI_SUCCESS) {
        if (write)
            rc = stream_out(f, buf, count, d, &s);
        else
            stream_in(f, buf, count, d, &s);
    }
    if (rc != MPI_SUCCESS) s = Stream{};
    const int64_t es = f->view.esize;
    int64_t data_off = 0, done = 0;
    switch (ptr) {
    case Ptr::explicit_off: data_off = offset * es; break;
    case Ptr::individual: data_off = f->fp * es; break;
    case Ptr::shared:
        if (kind == Kind::ordered) {
            // Rank 0 advances the pointer by everyone's total; each rank starts after the
            // ranks before it.
            std::vector<int64_t> all(size_t(f->size));
            int64_t mine = s.bytes / es;
            impl::Allgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, f->comm);
            int64_t before = 0, total = 0;
            for (int r = 0; r < f->size; r++) {
                if (r < f->rank) before += all[size_t(r)];
                total += all[size_t(r)];
            }
            int64_t base[2] = {0, MPI_SUCCESS};
            if (f->rank == 0) base[1] = shfp_fetch_add(f, total, &base[0]);
            impl::Bcast(base, 2, MPI_INT64_T, 0, f->comm);
            if (base[1] != MPI_SUCCESS && rc == MPI_SUCCESS) {
                rc = f->rank == 0 ? int(base[1])
                                  : core::make_error(MPI_ERR_IO, "shared file pointer of %s: %s",
                                                     f->path.c_str(),
                                                     core::error_text(int(base[1])).c_str());
            }
            data_off = (base[0] + before) * es;
        } else if (rc == MPI_SUCCESS) {
            int64_t old = 0;
            rc = shfp_fetch_add(f, s.bytes / es, &old);
            data_off = old * es;
        }
        break;
    }
    if (rc != MPI_SUCCESS) s = Stream{};
    int rc2 = MPI_SUCCESS;
    if (kind == Kind::indep) {
        if (rc == MPI_SUCCESS) rc2 = indep_rw(f, write, data_off, &s, &done);
    } else {
        rc2 = collective_rw(f, write, data_off, &s, &done);
    }
    if (rc == MPI_SUCCESS) rc = rc2;
    if (rc != MPI_SUCCESS) return raise(f, rc);
    int64_t bytes;
    if (write)
        bytes = done == s.bytes ? count * d->size
                : f->view.ext32  ? done / std::max<int64_t>(1, d->ext32_size) * d->size
                                 : done;
    else
        bytes = stream_deliver(f, &s, done, buf, d);
    if (ptr == Ptr::individual) f->fp += done / es;
    set_status(st, bytes);
    return MPI_SUCCESS;
}

// A request that is already complete, carrying the status of an access done at call time.
int done_request(int rc, const MPI_Status& st, MPI_Request* req) {
    if (rc != MPI_SUCCESS) {
        *req = MPI_REQUEST_NULL;
        return rc;
    }
    core::Request* r = core::request_new(core::ReqKind::ext);
    if (!r) return raise(nullptr, core::make_error(MPI_ERR_INTERN, "out of request handles"));
    r->comm = core::comm_lookup(MPI_COMM_WORLD);  // lives until MPI_Finalize: not retained
    r->status = st;
    r->complete = true;
    *req = core::request_handle(r);
    return MPI_SUCCESS;
}

int nb_access(MPI_File fh, Kind kind, Ptr ptr, bool write, int64_t offset, const void* buf,
              int64_t count, MPI_Datatype dt, MPI_Request* req) {
    if (!req) {
        File* f = file_lookup(fh);
        return f ? raise(f, core::make_error(MPI_ERR_ARG, "request is NULL"))
                 : raise_bad_file(fh);
    }
    MPI_Status st{};
    int rc = access(fh, kind, ptr, write, offset, buf, count, dt, &st);
    return done_request(rc, st, req);
}

int split_begin(MPI_File fh, Kind kind, Ptr ptr, bool write, int64_t offset, const void* buf,
                int64_t count, MPI_Datatype dt) {
    GET_FILE(f, fh);
    if (f->split)
        return raise(f, core::make_error(MPI_ERR_OTHER, "a split collective is already active "
                                                        "on %s (MPI 3.1 13.4.5)",
                                         f->path.c_str()));
    MPI_Status st{};
    int rc = access(fh, kind, ptr, write, offset, buf, count, dt, &st);
    if (rc != MPI_SUCCESS) return rc;
    f->split = true;
    f->split_status = st;
    return MPI_SUCCESS;
}

int split_end(MPI_File fh, MPI_Status* st) {
    GET_FILE(f, fh);
    if (!f->split)
        return raise(f, core::make_error(MPI_ERR_OTHER, "no split collective is active on %s",
                                         f->path.c_str()));
    f->split = false;
    if (st != MPI_STATUS_IGNORE) *st = f->split_status;
    return MPI_SUCCESS;
}

// View data bytes in the file before byte `byte` (for MPI_SEEK_END).
int64_t data_before(const View& v, int64_t byte) {
    if (byte <= v.disp || v.fsize == 0) return 0;
    int64_t rel = byte - v.disp;
    if (v.dense) return rel;
    int64_t tile = rel / v.fextent, r = rel % v.fextent, data = tile * v.fsize;
    for (const Seg& b : v.blocks) {
        if (r >= b.foff + b.len)
            data += b.len;
        else if (r > b.foff)
            data += r - b.foff;
    }
    return data;
}

int seek_target(File* f, int64_t cur, MPI_Offset offset, int whence, int64_t* out) {
    int64_t base;
    if (whence == MPI_SEEK_SET) {
        base = 0;
    } else if (whence == MPI_SEEK_CUR) {
        base = cur;
    } else if (whence == MPI_SEEK_END) {
        struct stat sb;
        if (::fstat(f->fd, &sb) != 0) return sys_error(errno, "stat", f->path);
        base = data_before(f->view, sb.st_size) / f->view.esize;
    } else {
        return core::make_error(MPI_ERR_ARG, "invalid whence %d (MPI_SEEK_SET, MPI_SEEK_CUR, "
                                             "MPI_SEEK_END)", whence);
    }
    if (base + offset < 0)
        return core::make_error(MPI_ERR_ARG, "seek to a negative position (%lld)",
                                (long long)(base + offset));
    *out = base + offset;
    return MPI_SUCCESS;
}

}  // namespace
}  // namespace wanmpi::io

namespace wanmpi::impl {
using io::Kind;
using io::Ptr;

// clang-format off
#define IO_BLOCKING(NAME, CT, KIND, PTR, WR, BUFT)                                              \
    int NAME(MPI_File fh, BUFT buf, CT count, MPI_Datatype dt, MPI_Status* st) {              \
        return io::access(fh, Kind::KIND, Ptr::PTR, WR, 0, buf, count, dt, st);               \
    }
#define IO_BLOCKING_AT(NAME, CT, KIND, WR, BUFT)                                                \
    int NAME(MPI_File fh, MPI_Offset off, BUFT buf, CT count, MPI_Datatype dt, MPI_Status* st) { \
        return io::access(fh, Kind::KIND, Ptr::explicit_off, WR, off, buf, count, dt, st);    \
    }
#define IO_NB(NAME, CT, KIND, PTR, WR, BUFT)                                                    \
    int NAME(MPI_File fh, BUFT buf, CT count, MPI_Datatype dt, MPI_Request* req) {            \
        return io::nb_access(fh, Kind::KIND, Ptr::PTR, WR, 0, buf, count, dt, req);           \
    }
#define IO_NB_AT(NAME, CT, KIND, WR, BUFT)                                                      \
    int NAME(MPI_File fh, MPI_Offset off, BUFT buf, CT count, MPI_Datatype dt, MPI_Request* req) { \
        return io::nb_access(fh, Kind::KIND, Ptr::explicit_off, WR, off, buf, count, dt, req); \
    }
#define IO_BEGIN(NAME, CT, KIND, PTR, WR, BUFT)                                                 \
    int NAME(MPI_File fh, BUFT buf, CT count, MPI_Datatype dt) {                              \
        return io::split_begin(fh, Kind::KIND, Ptr::PTR, WR, 0, buf, count, dt);              \
    }
#define IO_BEGIN_AT(NAME, CT, WR, BUFT)                                                         \
    int NAME(MPI_File fh, MPI_Offset off, BUFT buf, CT count, MPI_Datatype dt) {              \
        return io::split_begin(fh, Kind::coll, Ptr::explicit_off, WR, off, buf, count, dt);   \
    }
#define IO_END(NAME, BUFT)                                                                      \
    int NAME(MPI_File fh, BUFT, MPI_Status* st) { return io::split_end(fh, st); }

// Each pair: the int-count function and its MPI-4 large-count (_c) twin.
#define IO_BOTH(MACRO, NAME, ...) MACRO(NAME, int, __VA_ARGS__) MACRO(NAME##_c, MPI_Count, __VA_ARGS__)

IO_BOTH(IO_BLOCKING_AT, File_read_at, indep, false, void*)
IO_BOTH(IO_BLOCKING_AT, File_write_at, indep, true, const void*)
IO_BOTH(IO_BLOCKING_AT, File_read_at_all, coll, false, void*)
IO_BOTH(IO_BLOCKING_AT, File_write_at_all, coll, true, const void*)
IO_BOTH(IO_NB_AT, File_iread_at, indep, false, void*)
IO_BOTH(IO_NB_AT, File_iwrite_at, indep, true, const void*)
IO_BOTH(IO_NB_AT, File_iread_at_all, coll, false, void*)
IO_BOTH(IO_NB_AT, File_iwrite_at_all, coll, true, const void*)
IO_BOTH(IO_BLOCKING, File_read, indep, individual, false, void*)
IO_BOTH(IO_BLOCKING, File_write, indep, individual, true, const void*)
IO_BOTH(IO_BLOCKING, File_read_all, coll, individual, false, void*)
IO_BOTH(IO_BLOCKING, File_write_all, coll, individual, true, const void*)
IO_BOTH(IO_NB, File_iread, indep, individual, false, void*)
IO_BOTH(IO_NB, File_iwrite, indep, individual, true, const void*)
IO_BOTH(IO_NB, File_iread_all, coll, individual, false, void*)
IO_BOTH(IO_NB, File_iwrite_all, coll, individual, true, const void*)
IO_BOTH(IO_BLOCKING, File_read_shared, indep, shared, false, void*)
IO_BOTH(IO_BLOCKING, File_write_shared, indep, shared, true, const void*)
IO_BOTH(IO_NB, File_iread_shared, indep, shared, false, void*)
IO_BOTH(IO_NB, File_iwrite_shared, indep, shared, true, const void*)
IO_BOTH(IO_BLOCKING, File_read_ordered, ordered, shared, false, void*)
IO_BOTH(IO_BLOCKING, File_write_ordered, ordered, shared, true, const void*)
IO_BOTH(IO_BEGIN_AT, File_read_at_all_begin, false, void*)
IO_BOTH(IO_BEGIN_AT, File_write_at_all_begin, true, const void*)
IO_BOTH(IO_BEGIN, File_read_all_begin, coll, individual, false, void*)
IO_BOTH(IO_BEGIN, File_write_all_begin, coll, individual, true, const void*)
IO_BOTH(IO_BEGIN, File_read_ordered_begin, ordered, shared, false, void*)
IO_BOTH(IO_BEGIN, File_write_ordered_begin, ordered, shared, true, const void*)
IO_END(File_read_at_all_end, void*)
IO_END(File_write_at_all_end, const void*)
IO_END(File_read_all_end, void*)
IO_END(File_write_all_end, const void*)
IO_END(File_read_ordered_end, void*)
IO_END(File_write_ordered_end, const void*)
// clang-format on

// ---- file pointers ----------------------------------------------------------------------------
int File_seek(MPI_File fh, MPI_Offset offset, int whence) {
    GET_FILE(f, fh);
    if (f->amode & MPI_MODE_SEQUENTIAL)
        return io::raise(f, core::make_error(MPI_ERR_UNSUPPORTED_OPERATION,
                                             "MPI_File_seek on a file opened with "
                                             "MPI_MODE_SEQUENTIAL"));
    int64_t to = 0;
    if (int rc = io::seek_target(f, f->fp, offset, whence, &to)) return io::raise(f, rc);
    f->fp = to;
    return MPI_SUCCESS;
}

int File_get_position(MPI_File fh, MPI_Offset* offset) {
    GET_FILE(f, fh);
    if (!offset) return io::raise(f, core::make_error(MPI_ERR_ARG, "offset is NULL"));
    *offset = f->fp;
    return MPI_SUCCESS;
}

int File_get_position_shared(MPI_File fh, MPI_Offset* offset) {
    GET_FILE(f, fh);
    if (!offset) return io::raise(f, core::make_error(MPI_ERR_ARG, "offset is NULL"));
    int64_t v = 0;
    if (int rc = io::shfp_get(f, &v)) return io::raise(f, rc);
    *offset = v;
    return MPI_SUCCESS;
}

// Collective: every rank gives the same arguments; rank 0 moves the pointer once everybody's
// earlier shared accesses are done, and nobody continues before it has.
int File_seek_shared(MPI_File fh, MPI_Offset offset, int whence) {
    GET_FILE(f, fh);
    int64_t mine[3] = {offset, whence, 0};
    Barrier(f->comm);
    int rc = MPI_SUCCESS;
    if (f->rank == 0) {
        int64_t cur = 0, to = 0;
        rc = io::shfp_fetch_add(f, 0, &cur);
        if (rc == MPI_SUCCESS) rc = io::seek_target(f, cur, offset, whence, &to);
        if (rc == MPI_SUCCESS) rc = io::shfp_put(f, to);
        mine[2] = rc;
    }
    Bcast(mine, 3, MPI_INT64_T, 0, f->comm);
    if (f->rank != 0 && mine[2] != MPI_SUCCESS)
        rc = core::make_error(MPI_ERR_ARG, "MPI_File_seek_shared failed on rank 0: %s",
                              core::error_text(int(mine[2])).c_str());
    return rc ? io::raise(f, rc) : MPI_SUCCESS;
}

}  // namespace wanmpi::impl
