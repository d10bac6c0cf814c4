// MPI-IO: opening and closing files, file-wide operations, handles and error handlers.
//
// Open (collective): rank 0 creates the file (honouring MPI_MODE_CREATE/EXCL) and the shared file
// pointer's lock file, then broadcasts the outcome; the other ranks open what rank 0 made, and one
// allreduce tells every rank whether all opens worked (an error on any rank fails the open on all
// ranks, so nobody is left holding a half-open file) and whether every rank gave the same amode.
// File names may carry ROMIO's file-system prefixes ("ufs:", "nfs:", ...), which are stripped.
//
// Error handlers: a new file gets MPI_FILE_NULL's handler at open time (MPI_ERRORS_RETURN unless
// the program changed it), as the standard says; errors of MPI_File_open/delete and of calls
// with an invalid handle go to MPI_FILE_NULL's handler.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <unordered_set>

#include "bindings/impl.hpp"
#include "core/comm.hpp"
#include "core/errors.hpp"
#include "core/info.hpp"
#include "io/file.hpp"

namespace wanmpi::io {
namespace {

std::unordered_set<File*> g_live;
std::vector<File*> g_fhandles;  // Fortran handle i+1 -> File (nullptr once closed)
uint64_t g_open_seq = 0;        // names this process's shared-pointer lock files

const char* strip_prefix(const char* name) {
    // ROMIO's "fstype:" prefixes (ufs:, nfs:, lustre:, ...): a prefix is at least two
    // characters so that a Windows-style drive letter is never taken for one.
    const char* colon = std::strchr(name, ':');
    if (!colon || colon - name < 2) return name;
    for (const char* p = name; p < colon; p++)
        if (!std::isalnum(static_cast<unsigned char>(*p))) return name;
    return colon + 1;
}

int check_amode(int amode) {
    int acc = amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
    if (acc != MPI_MODE_RDONLY && acc != MPI_MODE_WRONLY && acc != MPI_MODE_RDWR)
        return core::make_error(MPI_ERR_AMODE, "amode 0x%x: exactly one of MPI_MODE_RDONLY, "
                                               "MPI_MODE_WRONLY and MPI_MODE_RDWR is required",
                                unsigned(amode));
    if (acc == MPI_MODE_RDONLY && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
        return core::make_error(MPI_ERR_AMODE, "amode 0x%x: MPI_MODE_RDONLY with "
                                               "MPI_MODE_CREATE or MPI_MODE_EXCL",
                                unsigned(amode));
    if (acc == MPI_MODE_RDWR && (amode & MPI_MODE_SEQUENTIAL))
        return core::make_error(MPI_ERR_AMODE, "amode 0x%x: MPI_MODE_RDWR with "
                                               "MPI_MODE_SEQUENTIAL", unsigned(amode));
    const int known = MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR | MPI_MODE_CREATE |
                      MPI_MODE_EXCL | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN |
                      MPI_MODE_APPEND | MPI_MODE_SEQUENTIAL;
    if (amode & ~known)
        return core::make_error(MPI_ERR_AMODE, "amode 0x%x has unknown bits", unsigned(amode));
    return MPI_SUCCESS;
}

int posix_flags(int amode) {
    if (amode & MPI_MODE_RDONLY) return O_RDONLY;
    if (amode & MPI_MODE_WRONLY) return O_WRONLY;
    return O_RDWR;
}

std::string shfp_name(const std::string& path, int64_t token) {
    // Beside the data file, so every host that sees the file sees the lock file too.
    size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    return dir + (slash == std::string::npos ? "/" : "") + ".wanmpi-shfp." + base + "." +
           std::to_string(token);
}

void free_file(File* f) {
    if (f->fd >= 0) ::close(f->fd);
    if (f->shfp_fd >= 0) ::close(f->shfp_fd);
    view_reset(&f->view);
    if (f->comm != MPI_COMM_NULL) impl::Comm_free(&f->comm);
    core::errhandler_release(f->eh);
    g_live.erase(f);
    if (f->fint > 0 && size_t(f->fint) <= g_fhandles.size()) g_fhandles[f->fint - 1] = nullptr;
    delete f;
}

int64_t parse_size(const std::string& v) {
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    return end && end != v.c_str() ? n : -1;
}

}  // namespace

File* file_lookup(MPI_File fh) {
    File* f = reinterpret_cast<File*>(fh);
    return f && g_live.count(f) ? f : nullptr;
}

int raise(File* f, int code) {
    if (!f) return core::raise_file(MPI_FILE_NULL, code);
    return core::raise_file_eh(reinterpret_cast<MPI_File>(f), f->eh, code);
}

int raise_bad_file(MPI_File fh) {
    return core::raise_file(fh, core::make_error(MPI_ERR_FILE, "invalid file handle %p%s",
                                                 static_cast<void*>(fh),
                                                 fh == MPI_FILE_NULL ? " (MPI_FILE_NULL)" : ""));
}

int errno_class(int err) {
    switch (err) {
    case ENOENT: return MPI_ERR_NO_SUCH_FILE;
    case EEXIST: return MPI_ERR_FILE_EXISTS;
    case EACCES: case EPERM: return MPI_ERR_ACCESS;
    case EROFS: return MPI_ERR_READ_ONLY;
    case ENOSPC: case EFBIG: return MPI_ERR_NO_SPACE;
    case EDQUOT: return MPI_ERR_QUOTA;
    case EISDIR: case ENOTDIR: case ENAMETOOLONG: case ELOOP: return MPI_ERR_BAD_FILE;
    case ETXTBSY: return MPI_ERR_FILE_IN_USE;
    default: return MPI_ERR_IO;
    }
}

int sys_error(int err, const char* what, const std::string& path) {
    return core::make_error(errno_class(err), "%s %s: %s", what, path.c_str(), std::strerror(err));
}

void apply_hints(File* f, MPI_Info info) {
    core::InfoPairs pairs;
    if (info != MPI_INFO_NULL) core::info_contents(info, &pairs);
    auto mode = [](const std::string& v) {
        return v == "enable" ? 1 : v == "disable" ? 0 : 2;
    };
    for (auto& [k, v] : pairs) {
        if (k == "cb_buffer_size") {
            int64_t n = parse_size(v);
            if (n > 0) f->hints.cb_buffer_size = n;
        } else if (k == "cb_nodes") {
            int64_t n = parse_size(v);
            if (n > 0) f->hints.cb_nodes = int(n);
        } else if (k == "wanmpi_cb_small_piece") {
            int64_t n = parse_size(v);
            if (n >= 0) f->hints.cb_small_piece = n;
        } else if (k == "romio_cb_write") {
            f->hints.cb_write = mode(v);
        } else if (k == "romio_cb_read") {
            f->hints.cb_read = mode(v);
        }
    }
    // What MPI_File_get_info reports: the values in use.
    const char* names[] = {"disable", "enable", "automatic"};
    int nodes = f->hints.cb_nodes > 0 && f->hints.cb_nodes < f->size ? f->hints.cb_nodes : f->size;
    f->info = {{"cb_buffer_size", std::to_string(f->hints.cb_buffer_size)},
               {"cb_nodes", std::to_string(nodes)},
               {"romio_cb_write", names[f->hints.cb_write]},
               {"romio_cb_read", names[f->hints.cb_read]},
               {"wanmpi_cb_small_piece", std::to_string(f->hints.cb_small_piece)},
               {"filename", f->path}};
}

}  // namespace wanmpi::io

namespace wanmpi::impl {
using io::File;
using io::file_lookup;
using core::make_error;

// ---- error handlers ---------------------------------------------------------------------------
int File_create_errhandler(MPI_File_errhandler_function* file_errhandler_fn,
                           MPI_Errhandler* errhandler) {
    if (!file_errhandler_fn)
        return core::raise_file(MPI_FILE_NULL,
                                make_error(MPI_ERR_ARG, "error handler function is NULL"));
    if (!errhandler)
        return core::raise_file(MPI_FILE_NULL, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    *errhandler = core::errhandler_create(core::EhKind::file,
                                          reinterpret_cast<void (*)()>(file_errhandler_fn));
    return MPI_SUCCESS;
}

int File_set_errhandler(MPI_File file, MPI_Errhandler errhandler) {
    File* f = nullptr;  // MPI_FILE_NULL: the default handler for files
    if (file != MPI_FILE_NULL && !(f = file_lookup(file))) return io::raise_bad_file(file);
    if (!core::errhandler_valid(errhandler))
        return io::raise(f, make_error(MPI_ERR_ARG, "invalid error handler 0x%x",
                                       unsigned(errhandler)));
    if (!core::errhandler_fits(errhandler, core::EhKind::file))
        return io::raise(f, make_error(MPI_ERR_ARG, "error handler 0x%x was created for "
                                                    "communicators or windows, not files",
                                       unsigned(errhandler)));
    if (!f) {
        core::set_file_default_errhandler(errhandler);  // MPI_FILE_NULL: the default for open
        return MPI_SUCCESS;
    }
    core::errhandler_retain(errhandler);
    core::errhandler_release(f->eh);
    f->eh = errhandler;
    return MPI_SUCCESS;
}

int File_get_errhandler(MPI_File file, MPI_Errhandler* errhandler) {
    File* f = nullptr;  // MPI_FILE_NULL: the default handler for files
    if (file != MPI_FILE_NULL && !(f = file_lookup(file))) return io::raise_bad_file(file);
    if (!errhandler) return io::raise(f, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    *errhandler = f ? f->eh : core::file_default_errhandler();
    core::errhandler_retain(*errhandler);
    return MPI_SUCCESS;
}

int File_call_errhandler(MPI_File fh, int errorcode) {
    if (fh == MPI_FILE_NULL) {
        core::raise_file(fh, errorcode);
        return MPI_SUCCESS;
    }
    GET_FILE(f, fh);
    io::raise(f, errorcode);
    return MPI_SUCCESS;
}

// Fortran handles: small integers (index + 1 in a table; 0 is MPI_FILE_NULL).
MPI_Fint File_c2f(MPI_File fh) {
    File* f = file_lookup(fh);
    if (!f) return 0;
    if (f->fint == 0) {
        io::g_fhandles.push_back(f);
        f->fint = MPI_Fint(io::g_fhandles.size());
    }
    return f->fint;
}
MPI_File File_f2c(MPI_Fint h) {
    if (h <= 0 || size_t(h) > io::g_fhandles.size() || !io::g_fhandles[h - 1])
        return MPI_FILE_NULL;
    return reinterpret_cast<MPI_File>(io::g_fhandles[h - 1]);
}

// ---- open / close / delete --------------------------------------------------------------------
int File_open(MPI_Comm comm, const char* filename, int amode, MPI_Info info, MPI_File* fh) {
    if (!fh) return core::raise_file(MPI_FILE_NULL, make_error(MPI_ERR_ARG, "fh is NULL"));
    *fh = MPI_FILE_NULL;
    core::Comm* c = core::comm_lookup(comm);
    if (!c)
        return core::raise_file(MPI_FILE_NULL, make_error(MPI_ERR_COMM,
                                                          "invalid communicator 0x%x",
                                                          unsigned(comm)));
    if (c->inter)
        return core::raise_file(MPI_FILE_NULL,
                                make_error(MPI_ERR_COMM, "MPI_File_open on intercommunicator %s",
                                           c->name.c_str()));
    if (!filename)
        return core::raise_file(MPI_FILE_NULL, make_error(MPI_ERR_ARG, "filename is NULL"));
    if (int rc = io::check_amode(amode)) return core::raise_file(MPI_FILE_NULL, rc);
    if (int rc = core::info_arg_check(info)) return core::raise_file(MPI_FILE_NULL, rc);

    File* f = new File;
    f->path = io::strip_prefix(filename);
    f->amode = amode;
    f->eh = core::file_default_errhandler();
    core::errhandler_retain(f->eh);
    io::g_live.insert(f);
    if (int rc = Comm_dup(comm, &f->comm)) {
        io::free_file(f);
        return core::raise_file(MPI_FILE_NULL, rc);
    }
    Comm_rank(f->comm, &f->rank);
    Comm_size(f->comm, &f->size);

    // Rank 0 creates; [0] = errno of its open (0 = fine), [1] = the lock file's token.
    int64_t made[2] = {0, -1};
    int rc = MPI_SUCCESS;
    if (f->rank == 0) {
        int fl = io::posix_flags(amode) | O_CLOEXEC;
        if (amode & MPI_MODE_CREATE) fl |= O_CREAT;
        if (amode & MPI_MODE_EXCL) fl |= O_EXCL;
        f->fd = ::open(f->path.c_str(), fl, 0666);
        if (f->fd < 0) {
            made[0] = errno;
            rc = io::sys_error(errno, "open", f->path);
        } else {
            int64_t token = int64_t(::getpid()) << 20 | int64_t(++io::g_open_seq & 0xfffff);
            std::string sp = io::shfp_name(f->path, token);
            f->shfp_fd = ::open(sp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (f->shfp_fd >= 0) {
                made[1] = token;
                int64_t zero = 0;
                if (amode & MPI_MODE_APPEND) {
                    struct stat sb;
                    if (::fstat(f->fd, &sb) == 0) zero = sb.st_size;
                }
                if (::pwrite(f->shfp_fd, &zero, 8, 0) != 8) made[1] = -1;
            }
        }
    }
    Bcast(made, 2, MPI_INT64_T, 0, f->comm);
    if (f->rank != 0 && made[0] == 0) {
        f->fd = ::open(f->path.c_str(), io::posix_flags(amode) | O_CLOEXEC);
        if (f->fd < 0) rc = io::sys_error(errno, "open", f->path);
    }
    if (f->rank != 0 && made[0] != 0)
        rc = make_error(io::errno_class(int(made[0])), "open %s on rank 0: %s", f->path.c_str(),
                        std::strerror(int(made[0])));
    if (f->rank != 0 && made[1] >= 0 && rc == MPI_SUCCESS)
        f->shfp_fd = ::open(io::shfp_name(f->path, made[1]).c_str(), O_RDWR | O_CLOEXEC);
    // Did every rank open it, and with the same amode?
    int64_t agree[3] = {rc != MPI_SUCCESS, amode, -int64_t(amode)};
    int64_t all[3];
    Allreduce(agree, all, 3, MPI_INT64_T, MPI_MAX, f->comm);
    if (f->rank == 0 && made[1] >= 0)
        ::unlink(io::shfp_name(f->path, made[1]).c_str());  // every rank holds it open now
    if (rc == MPI_SUCCESS && all[0])
        rc = make_error(MPI_ERR_FILE, "open %s failed on another rank", f->path.c_str());
    if (rc == MPI_SUCCESS && all[1] != -all[2])
        rc = make_error(MPI_ERR_NOT_SAME, "open %s: the ranks gave different amodes",
                        f->path.c_str());
    if (rc != MPI_SUCCESS) {
        io::free_file(f);
        return core::raise_file(MPI_FILE_NULL, rc);
    }
    if (amode & MPI_MODE_APPEND) {
        struct stat sb;
        if (::fstat(f->fd, &sb) == 0) f->fp = sb.st_size;
    }
    io::apply_hints(f, info);
    *fh = reinterpret_cast<MPI_File>(f);
    return MPI_SUCCESS;
}

int File_close(MPI_File* fh) {
    if (!fh) return core::raise_file(MPI_FILE_NULL, make_error(MPI_ERR_ARG, "fh is NULL"));
    GET_FILE(f, *fh);
    // Everyone's accesses end before the file may vanish (MPI_MODE_DELETE_ON_CLOSE).
    Barrier(f->comm);
    int rc = MPI_SUCCESS;
    if ((f->amode & MPI_MODE_DELETE_ON_CLOSE) && f->rank == 0 && ::unlink(f->path.c_str()) != 0)
        rc = io::sys_error(errno, "delete on close", f->path);
    io::free_file(f);
    *fh = MPI_FILE_NULL;
    return rc ? core::raise_file(MPI_FILE_NULL, rc) : MPI_SUCCESS;
}

int File_delete(const char* filename, MPI_Info info) {
    if (!filename)
        return core::raise_file(MPI_FILE_NULL, make_error(MPI_ERR_ARG, "filename is NULL"));
    if (int rc = core::info_arg_check(info)) return core::raise_file(MPI_FILE_NULL, rc);
    std::string path = io::strip_prefix(filename);
    if (::unlink(path.c_str()) != 0)
        return core::raise_file(MPI_FILE_NULL, io::sys_error(errno, "delete", path));
    return MPI_SUCCESS;
}

// ---- file-wide operations ---------------------------------------------------------------------
// MPI_File_set_size / MPI_File_preallocate: the same checks, then rank 0 changes the file once
// every rank has entered the call (so no rank's earlier access or MPI_File_get_size sees the
// change); the broadcast of its outcome makes every rank return the same code, and return only
// after the change. `op` returns 0 or an errno.
static int resize(MPI_File fh, MPI_Offset size, int (*op)(File*, MPI_Offset)) {
    GET_FILE(f, fh);
    if (size < 0)
        return io::raise(f, make_error(MPI_ERR_ARG, "negative size %lld", (long long)size));
    if (f->amode & MPI_MODE_RDONLY)
        return io::raise(f, make_error(MPI_ERR_READ_ONLY, "%s is open read-only",
                                       f->path.c_str()));
    int64_t err = 0;
    Barrier(f->comm);
    if (f->rank == 0) err = op(f, size);
    Bcast(&err, 1, MPI_INT64_T, 0, f->comm);
    return err ? io::raise(f, io::sys_error(int(err), "resize", f->path)) : MPI_SUCCESS;
}

int File_set_size(MPI_File fh, MPI_Offset size) {
    return resize(fh, size, [](File* f, MPI_Offset n) -> int {
        return ::ftruncate(f->fd, n) == 0 ? 0 : errno;
    });
}

int File_preallocate(MPI_File fh, MPI_Offset size) {
    return resize(fh, size, [](File* f, MPI_Offset n) -> int {
        struct stat sb;
        if (::fstat(f->fd, &sb) != 0) return errno;
        if (sb.st_size >= n) return 0;  // preallocate never shrinks
        return ::posix_fallocate(f->fd, 0, n);
    });
}

int File_get_size(MPI_File fh, MPI_Offset* size) {
    GET_FILE(f, fh);
    if (!size) return io::raise(f, make_error(MPI_ERR_ARG, "size is NULL"));
    struct stat sb;
    if (::fstat(f->fd, &sb) != 0) return io::raise(f, io::sys_error(errno, "stat", f->path));
    *size = sb.st_size;
    return MPI_SUCCESS;
}

int File_get_group(MPI_File fh, MPI_Group* group) {
    GET_FILE(f, fh);
    if (!group) return io::raise(f, make_error(MPI_ERR_ARG, "group is NULL"));
    return Comm_group(f->comm, group);
}

int File_get_amode(MPI_File fh, int* amode) {
    GET_FILE(f, fh);
    if (!amode) return io::raise(f, make_error(MPI_ERR_ARG, "amode is NULL"));
    *amode = f->amode;
    return MPI_SUCCESS;
}

int File_set_info(MPI_File fh, MPI_Info info) {
    GET_FILE(f, fh);
    if (int rc = core::info_arg_check(info)) return io::raise(f, rc);
    io::apply_hints(f, info);
    return MPI_SUCCESS;
}

int File_get_info(MPI_File fh, MPI_Info* info_used) {
    GET_FILE(f, fh);
    if (!info_used) return io::raise(f, make_error(MPI_ERR_ARG, "info_used is NULL"));
    *info_used = core::info_create(f->info);
    return MPI_SUCCESS;
}

int File_sync(MPI_File fh) {
    GET_FILE(f, fh);
    int rc = MPI_SUCCESS;
    if (!(f->amode & MPI_MODE_RDONLY) && ::fsync(f->fd) != 0)
        rc = io::sys_error(errno, "fsync", f->path);
    // Collective: after it, every rank's writes are visible to every rank's reads.
    Barrier(f->comm);
    return rc ? io::raise(f, rc) : MPI_SUCCESS;
}

int File_set_atomicity(MPI_File fh, int flag) {
    GET_FILE(f, fh);
    int64_t mine[2] = {flag != 0, -int64_t(flag != 0)}, all[2];
    Allreduce(mine, all, 2, MPI_INT64_T, MPI_MAX, f->comm);
    if (all[0] != -all[1])
        return io::raise(f, make_error(MPI_ERR_NOT_SAME, "MPI_File_set_atomicity: the ranks "
                                                         "gave different flags"));
    f->atomic = flag != 0;
    return MPI_SUCCESS;
}

int File_get_atomicity(MPI_File fh, int* flag) {
    GET_FILE(f, fh);
    if (!flag) return io::raise(f, make_error(MPI_ERR_ARG, "flag is NULL"));
    *flag = f->atomic;
    return MPI_SUCCESS;
}

// User data representations are not supported (documented in docs/mpi-io.md): the three
// predefined ones cover files written by this and other MPI libraries.
static int register_datarep(const char* datarep) {
    if (!datarep)
        return core::raise_file(MPI_FILE_NULL, make_error(MPI_ERR_ARG, "datarep is NULL"));
    if (!std::strcmp(datarep, "native") || !std::strcmp(datarep, "internal") ||
        !std::strcmp(datarep, "external32"))
        return core::raise_file(MPI_FILE_NULL,
                                make_error(MPI_ERR_DUP_DATAREP,
                                           "data representation \"%s\" is predefined", datarep));
    return core::raise_file(MPI_FILE_NULL,
                            make_error(MPI_ERR_UNSUPPORTED_DATAREP,
                                       "user data representations (\"%s\") are not supported: "
                                       "use \"native\", \"internal\" or \"external32\"",
                                       datarep));
}
int Register_datarep(const char* datarep, MPI_Datarep_conversion_function*,
                     MPI_Datarep_conversion_function*, MPI_Datarep_extent_function*, void*) {
    return register_datarep(datarep);
}
int Register_datarep_c(const char* datarep, MPI_Datarep_conversion_function_c*,
                       MPI_Datarep_conversion_function_c*, MPI_Datarep_extent_function*, void*) {
    return register_datarep(datarep);
}

}  // namespace wanmpi::impl
