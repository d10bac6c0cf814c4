// One-sided communication (MPI_Win_*, MPI_Put/Get/Accumulate/...): NOT SUPPORTED YET.
//
// Every MPI-3.1 entry point (and the MPI-4 large-count _c variants) exists so that programs
// that merely link against them (the OSU benchmarks' utility file) build and run; each call
// reports MPI_ERR_UNSUPPORTED_OPERATION through the error handler: the communicator's for the
// window-creating calls (which then return MPI_WIN_NULL), MPI_COMM_WORLD's for the others (no
// window can exist, so there is no window handler to call). What works for real: window keyvals
// (attr.cpp), MPI_Win_create_errhandler, MPI_Win_c2f/f2c. docs/errors-attributes.md lists this.
#include "bindings/impl.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::impl {
using namespace wanmpi::core;

static int rma_unsupported() {
    return raise(nullptr, make_error(MPI_ERR_UNSUPPORTED_OPERATION,
                                     "one-sided communication (MPI windows) is not supported by "
                                     "wanmpi yet, so no window can exist"));
}
static int rma_unsupported_on(MPI_Comm comm) {
    Comm* c = comm_lookup(comm);
    if (!c)
        return raise(nullptr,
                     make_error(MPI_ERR_COMM, "invalid communicator 0x%x", unsigned(comm)));
    return raise(c, make_error(MPI_ERR_UNSUPPORTED_OPERATION,
                               "one-sided communication (MPI windows) is not supported by wanmpi "
                               "yet; the window was not created"));
}

// ---- error handlers: creating one works; windows to attach it to do not exist ----------------
int Win_create_errhandler(MPI_Win_errhandler_function* win_errhandler_fn,
                          MPI_Errhandler* errhandler) {
    if (!win_errhandler_fn)
        return raise(nullptr, make_error(MPI_ERR_ARG, "error handler function is NULL"));
    if (!errhandler) return raise(nullptr, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    *errhandler = errhandler_create(EhKind::win, reinterpret_cast<void (*)()>(win_errhandler_fn));
    return MPI_SUCCESS;
}
int Win_set_errhandler(MPI_Win, MPI_Errhandler) { return rma_unsupported(); }
int Win_get_errhandler(MPI_Win, MPI_Errhandler*) { return rma_unsupported(); }
int Win_call_errhandler(MPI_Win, int) { return rma_unsupported(); }

MPI_Fint Win_c2f(MPI_Win win) { return MPI_Fint(win); }
MPI_Win Win_f2c(MPI_Fint win) { return MPI_Win(win); }

// ---- everything else ----------------------------------------------------------------------------
int Win_create(void*, MPI_Aint, int, MPI_Info, MPI_Comm comm, MPI_Win* win) {
    if (win) *win = MPI_WIN_NULL;
    return rma_unsupported_on(comm);
}
int Win_create_c(void*, MPI_Aint, MPI_Aint, MPI_Info, MPI_Comm comm, MPI_Win* win) {
    if (win) *win = MPI_WIN_NULL;
    return rma_unsupported_on(comm);
}
int Win_allocate(MPI_Aint, int, MPI_Info, MPI_Comm comm, void* baseptr, MPI_Win* win) {
    if (baseptr) *static_cast<void**>(baseptr) = nullptr;
    if (win) *win = MPI_WIN_NULL;
    return rma_unsupported_on(comm);
}
int Win_allocate_c(MPI_Aint, MPI_Aint, MPI_Info, MPI_Comm comm, void* baseptr, MPI_Win* win) {
    if (baseptr) *static_cast<void**>(baseptr) = nullptr;
    if (win) *win = MPI_WIN_NULL;
    return rma_unsupported_on(comm);
}
int Win_allocate_shared(MPI_Aint, int, MPI_Info, MPI_Comm comm, void* baseptr, MPI_Win* win) {
    if (baseptr) *static_cast<void**>(baseptr) = nullptr;
    if (win) *win = MPI_WIN_NULL;
    return rma_unsupported_on(comm);
}
int Win_allocate_shared_c(MPI_Aint, MPI_Aint, MPI_Info, MPI_Comm comm, void* baseptr,
                          MPI_Win* win) {
    if (baseptr) *static_cast<void**>(baseptr) = nullptr;
    if (win) *win = MPI_WIN_NULL;
    return rma_unsupported_on(comm);
}
int Win_create_dynamic(MPI_Info, MPI_Comm comm, MPI_Win* win) {
    if (win) *win = MPI_WIN_NULL;
    return rma_unsupported_on(comm);
}
int Win_shared_query(MPI_Win, int, MPI_Aint*, int*, void*) { return rma_unsupported(); }
int Win_shared_query_c(MPI_Win, int, MPI_Aint*, MPI_Aint*, void*) { return rma_unsupported(); }
int Win_attach(MPI_Win, void*, MPI_Aint) { return rma_unsupported(); }
int Win_detach(MPI_Win, const void*) { return rma_unsupported(); }
int Win_free(MPI_Win*) { return rma_unsupported(); }
int Win_get_group(MPI_Win, MPI_Group*) { return rma_unsupported(); }
int Win_set_info(MPI_Win, MPI_Info) { return rma_unsupported(); }
int Win_get_info(MPI_Win, MPI_Info*) { return rma_unsupported(); }
int Win_set_name(MPI_Win, const char*) { return rma_unsupported(); }
int Win_get_name(MPI_Win, char*, int*) { return rma_unsupported(); }
int Win_set_attr(MPI_Win, int, void*) { return rma_unsupported(); }
int Win_get_attr(MPI_Win, int, void*, int*) { return rma_unsupported(); }
int Win_delete_attr(MPI_Win, int) { return rma_unsupported(); }
int Put(const void*, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Win) {
    return rma_unsupported();
}
int Put_c(const void*, MPI_Count, MPI_Datatype, int, MPI_Aint, MPI_Count, MPI_Datatype, MPI_Win) {
    return rma_unsupported();
}
int Get(void*, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Win) {
    return rma_unsupported();
}
int Get_c(void*, MPI_Count, MPI_Datatype, int, MPI_Aint, MPI_Count, MPI_Datatype, MPI_Win) {
    return rma_unsupported();
}
int Accumulate(const void*, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Op, MPI_Win) {
    return rma_unsupported();
}
int Accumulate_c(const void*, MPI_Count, MPI_Datatype, int, MPI_Aint, MPI_Count, MPI_Datatype,
                 MPI_Op, MPI_Win) {
    return rma_unsupported();
}
int Get_accumulate(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, int, MPI_Aint, int,
                   MPI_Datatype, MPI_Op, MPI_Win) {
    return rma_unsupported();
}
int Get_accumulate_c(const void*, MPI_Count, MPI_Datatype, void*, MPI_Count, MPI_Datatype, int,
                     MPI_Aint, MPI_Count, MPI_Datatype, MPI_Op, MPI_Win) {
    return rma_unsupported();
}
int Fetch_and_op(const void*, void*, MPI_Datatype, int, MPI_Aint, MPI_Op, MPI_Win) {
    return rma_unsupported();
}
int Compare_and_swap(const void*, const void*, void*, MPI_Datatype, int, MPI_Aint, MPI_Win) {
    return rma_unsupported();
}
int Rput(const void*, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Win,
         MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return rma_unsupported();
}
int Rput_c(const void*, MPI_Count, MPI_Datatype, int, MPI_Aint, MPI_Count, MPI_Datatype, MPI_Win,
           MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return rma_unsupported();
}
int Rget(void*, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Win,
         MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return rma_unsupported();
}
int Rget_c(void*, MPI_Count, MPI_Datatype, int, MPI_Aint, MPI_Count, MPI_Datatype, MPI_Win,
           MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return rma_unsupported();
}
int Raccumulate(const void*, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Op, MPI_Win,
                MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return rma_unsupported();
}
int Raccumulate_c(const void*, MPI_Count, MPI_Datatype, int, MPI_Aint, MPI_Count, MPI_Datatype,
                  MPI_Op, MPI_Win, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return rma_unsupported();
}
int Rget_accumulate(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, int, MPI_Aint, int,
                    MPI_Datatype, MPI_Op, MPI_Win, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return rma_unsupported();
}
int Rget_accumulate_c(const void*, MPI_Count, MPI_Datatype, void*, MPI_Count, MPI_Datatype, int,
                      MPI_Aint, MPI_Count, MPI_Datatype, MPI_Op, MPI_Win, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return rma_unsupported();
}
int Win_fence(int, MPI_Win) { return rma_unsupported(); }
int Win_start(MPI_Group, int, MPI_Win) { return rma_unsupported(); }
int Win_complete(MPI_Win) { return rma_unsupported(); }
int Win_post(MPI_Group, int, MPI_Win) { return rma_unsupported(); }
int Win_wait(MPI_Win) { return rma_unsupported(); }
int Win_test(MPI_Win, int*) { return rma_unsupported(); }
int Win_lock(int, int, int, MPI_Win) { return rma_unsupported(); }
int Win_unlock(int, MPI_Win) { return rma_unsupported(); }
int Win_lock_all(int, MPI_Win) { return rma_unsupported(); }
int Win_unlock_all(MPI_Win) { return rma_unsupported(); }
int Win_flush(int, MPI_Win) { return rma_unsupported(); }
int Win_flush_all(MPI_Win) { return rma_unsupported(); }
int Win_flush_local(int, MPI_Win) { return rma_unsupported(); }
int Win_flush_local_all(MPI_Win) { return rma_unsupported(); }
int Win_sync(MPI_Win) { return rma_unsupported(); }

}  // namespace wanmpi::impl
