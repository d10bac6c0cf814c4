// C entry points of the RMA operations and synchronization calls: handle checks, then
// origin.cpp / sync.cpp; errors go to the window's handler.
#include "bindings/impl.hpp"
#include "core/errors.hpp"
#include "rma/ops.hpp"
#include "rma/rma.hpp"

namespace wanmpi::rma {
// sync.cpp
int win_fence(Window* w, int assert_);
int win_post(Window* w, MPI_Group g, int assert_);
int win_start(Window* w, MPI_Group g, int assert_);
int win_complete(Window* w);
int win_wait(Window* w);
int win_test(Window* w, int* flag);
int win_lock(Window* w, int type, int rank, int assert_);
int win_unlock(Window* w, int rank);
int win_lock_all(Window* w, int assert_);
int win_unlock_all(Window* w);
int win_flush(Window* w, int rank, bool local);
int win_flush_all(Window* w, bool local);
int win_sync(Window* w);
}  // namespace wanmpi::rma

namespace wanmpi::impl {
using namespace wanmpi::core;
using rma::Msg;
using rma::OpArgs;
using rma::Window;

namespace {

Window* lookup(MPI_Win win, int* err) {
    Window* w = rma::win_lookup(win);
    if (!w)
        *err = core::raise(nullptr, make_error(MPI_ERR_WIN, "invalid window 0x%x%s", unsigned(win),
                                               win == MPI_WIN_NULL ? " (MPI_WIN_NULL)" : ""));
    return w;
}

// The arguments every operation has (the origin or get buffer and the target), filled once.
OpArgs args(Window* w, Msg type, const void* o, int64_t oc, MPI_Datatype ot, int tr, MPI_Aint td,
            int64_t tc, MPI_Datatype tt, MPI_Op op, MPI_Request* req) {
    OpArgs a;
    a.w = w;
    a.type = type;
    a.obuf = const_cast<void*>(o);
    a.ocount = oc;
    a.odt = ot;
    a.target = tr;
    a.disp = td;
    a.tcount = tc;
    a.tdt = tt;
    a.op = op;
    a.req = req;
    return a;
}

// Each operation tries the lean path first (fast.cpp: same-host allocate windows, predefined
// datatypes), then the general one, which checks everything and raises any error.
int put(const void* o, int64_t oc, MPI_Datatype ot, int tr, MPI_Aint td, int64_t tc,
        MPI_Datatype tt, MPI_Win win, MPI_Request* req) {
    int err = MPI_SUCCESS;
    Window* w = lookup(win, &err);
    if (!w) return err;
    if (!req && rma::fast_put_get(w, true, const_cast<void*>(o), oc, ot, tr, td, tc, tt))
        return MPI_SUCCESS;
    return rma::raise(w,
                      rma::win_op(args(w, Msg::put, o, oc, ot, tr, td, tc, tt, MPI_OP_NULL, req)));
}
int get(void* o, int64_t oc, MPI_Datatype ot, int tr, MPI_Aint td, int64_t tc, MPI_Datatype tt,
        MPI_Win win, MPI_Request* req) {
    int err = MPI_SUCCESS;
    Window* w = lookup(win, &err);
    if (!w) return err;
    if (!req && rma::fast_put_get(w, false, o, oc, ot, tr, td, tc, tt)) return MPI_SUCCESS;
    return rma::raise(w,
                      rma::win_op(args(w, Msg::get, o, oc, ot, tr, td, tc, tt, MPI_OP_NULL, req)));
}
int acc(const void* o, int64_t oc, MPI_Datatype ot, int tr, MPI_Aint td, int64_t tc,
        MPI_Datatype tt, MPI_Op op, MPI_Win win, MPI_Request* req) {
    int err = MPI_SUCCESS;
    Window* w = lookup(win, &err);
    if (!w) return err;
    if (!req &&
        rma::fast_acc(w, o, oc, ot, false, nullptr, 0, MPI_DATATYPE_NULL, tr, td, tc, tt, op))
        return MPI_SUCCESS;
    return rma::raise(w, rma::win_op(args(w, Msg::acc, o, oc, ot, tr, td, tc, tt, op, req)));
}
int get_acc(const void* o, int64_t oc, MPI_Datatype ot, void* r, int64_t rc, MPI_Datatype rt,
            int tr, MPI_Aint td, int64_t tc, MPI_Datatype tt, MPI_Op op, MPI_Win win,
            MPI_Request* req) {
    int err = MPI_SUCCESS;
    Window* w = lookup(win, &err);
    if (!w) return err;
    // MPI_NO_OP: the origin buffer is ignored
    if (op == MPI_NO_OP) {
        oc = 0;
        ot = MPI_DATATYPE_NULL;
    }
    if (!req && rma::fast_acc(w, o, oc, ot, true, r, rc, rt, tr, td, tc, tt, op))
        return MPI_SUCCESS;
    OpArgs a = args(w, Msg::get_acc, o, oc, ot, tr, td, tc, tt, op, req);
    a.rbuf = r;
    a.rcount = rc;
    a.rdt = rt;
    return rma::raise(w, rma::win_op(a));
}

}  // namespace

#define SYNC_CALL(win, expr)                          \
    do {                                              \
        int err_ = MPI_SUCCESS;                       \
        Window* w = lookup(win, &err_);               \
        if (!w) return err_;                          \
        return rma::raise(w, expr);                   \
    } while (0)

int Put(const void* o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt,
        MPI_Win win) {
    return put(o, oc, ot, tr, td, tc, tt, win, nullptr);
}
int Put_c(const void* o, MPI_Count oc, MPI_Datatype ot, int tr, MPI_Aint td, MPI_Count tc,
          MPI_Datatype tt, MPI_Win win) {
    return put(o, oc, ot, tr, td, tc, tt, win, nullptr);
}
int Get(void* o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt,
        MPI_Win win) {
    return get(o, oc, ot, tr, td, tc, tt, win, nullptr);
}
int Get_c(void* o, MPI_Count oc, MPI_Datatype ot, int tr, MPI_Aint td, MPI_Count tc,
          MPI_Datatype tt, MPI_Win win) {
    return get(o, oc, ot, tr, td, tc, tt, win, nullptr);
}
int Accumulate(const void* o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc,
               MPI_Datatype tt, MPI_Op op, MPI_Win win) {
    return acc(o, oc, ot, tr, td, tc, tt, op, win, nullptr);
}
int Accumulate_c(const void* o, MPI_Count oc, MPI_Datatype ot, int tr, MPI_Aint td, MPI_Count tc,
                 MPI_Datatype tt, MPI_Op op, MPI_Win win) {
    return acc(o, oc, ot, tr, td, tc, tt, op, win, nullptr);
}
int Get_accumulate(const void* o, int oc, MPI_Datatype ot, void* r, int rc, MPI_Datatype rt,
                   int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op, MPI_Win win) {
    return get_acc(o, oc, ot, r, rc, rt, tr, td, tc, tt, op, win, nullptr);
}
int Get_accumulate_c(const void* o, MPI_Count oc, MPI_Datatype ot, void* r, MPI_Count rc,
                     MPI_Datatype rt, int tr, MPI_Aint td, MPI_Count tc, MPI_Datatype tt,
                     MPI_Op op, MPI_Win win) {
    return get_acc(o, oc, ot, r, rc, rt, tr, td, tc, tt, op, win, nullptr);
}
int Fetch_and_op(const void* o, void* r, MPI_Datatype dt, int tr, MPI_Aint td, MPI_Op op,
                 MPI_Win win) {
    // (the lean path first without get_acc's argument shuffle: this is a latency benchmark's call)
    if (Window* w = rma::win_lookup(win))
        if (rma::fast_acc(w, o, 1, dt, true, r, 1, dt, tr, td, 1, dt, op)) return MPI_SUCCESS;
    return get_acc(o, 1, dt, r, 1, dt, tr, td, 1, dt, op, win, nullptr);
}
int Compare_and_swap(const void* o, const void* c, void* r, MPI_Datatype dt, int tr, MPI_Aint td,
                     MPI_Win win) {
    int err = MPI_SUCCESS;
    Window* w = lookup(win, &err);
    if (!w) return err;
    if (rma::fast_cas(w, o, c, r, dt, tr, td)) return MPI_SUCCESS;
    OpArgs a = args(w, Msg::cas, o, 1, dt, tr, td, 1, dt, MPI_OP_NULL, nullptr);
    a.cbuf = c;
    a.rbuf = r;
    a.rcount = 1;
    a.rdt = dt;
    return rma::raise(w, rma::win_op(a));
}
int Rput(const void* o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt,
         MPI_Win win, MPI_Request* req) {
    if (!req) return core::raise(nullptr, make_error(MPI_ERR_ARG, "request is NULL"));
    return put(o, oc, ot, tr, td, tc, tt, win, req);
}
int Rput_c(const void* o, MPI_Count oc, MPI_Datatype ot, int tr, MPI_Aint td, MPI_Count tc,
           MPI_Datatype tt, MPI_Win win, MPI_Request* req) {
    if (!req) return core::raise(nullptr, make_error(MPI_ERR_ARG, "request is NULL"));
    return put(o, oc, ot, tr, td, tc, tt, win, req);
}
int Rget(void* o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc, MPI_Datatype tt,
         MPI_Win win, MPI_Request* req) {
    if (!req) return core::raise(nullptr, make_error(MPI_ERR_ARG, "request is NULL"));
    return get(o, oc, ot, tr, td, tc, tt, win, req);
}
int Rget_c(void* o, MPI_Count oc, MPI_Datatype ot, int tr, MPI_Aint td, MPI_Count tc,
           MPI_Datatype tt, MPI_Win win, MPI_Request* req) {
    if (!req) return core::raise(nullptr, make_error(MPI_ERR_ARG, "request is NULL"));
    return get(o, oc, ot, tr, td, tc, tt, win, req);
}
int Raccumulate(const void* o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc,
                MPI_Datatype tt, MPI_Op op, MPI_Win win, MPI_Request* req) {
    if (!req) return core::raise(nullptr, make_error(MPI_ERR_ARG, "request is NULL"));
    return acc(o, oc, ot, tr, td, tc, tt, op, win, req);
}
int Raccumulate_c(const void* o, MPI_Count oc, MPI_Datatype ot, int tr, MPI_Aint td, MPI_Count tc,
                  MPI_Datatype tt, MPI_Op op, MPI_Win win, MPI_Request* req) {
    if (!req) return core::raise(nullptr, make_error(MPI_ERR_ARG, "request is NULL"));
    return acc(o, oc, ot, tr, td, tc, tt, op, win, req);
}
int Rget_accumulate(const void* o, int oc, MPI_Datatype ot, void* r, int rc, MPI_Datatype rt,
                    int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op, MPI_Win win,
                    MPI_Request* req) {
    if (!req) return core::raise(nullptr, make_error(MPI_ERR_ARG, "request is NULL"));
    return get_acc(o, oc, ot, r, rc, rt, tr, td, tc, tt, op, win, req);
}
int Rget_accumulate_c(const void* o, MPI_Count oc, MPI_Datatype ot, void* r, MPI_Count rc,
                      MPI_Datatype rt, int tr, MPI_Aint td, MPI_Count tc, MPI_Datatype tt,
                      MPI_Op op, MPI_Win win, MPI_Request* req) {
    if (!req) return core::raise(nullptr, make_error(MPI_ERR_ARG, "request is NULL"));
    return get_acc(o, oc, ot, r, rc, rt, tr, td, tc, tt, op, win, req);
}

int Win_fence(int assert_, MPI_Win win) { SYNC_CALL(win, rma::win_fence(w, assert_)); }
int Win_start(MPI_Group g, int assert_, MPI_Win win) {
    SYNC_CALL(win, rma::win_start(w, g, assert_));
}
int Win_complete(MPI_Win win) { SYNC_CALL(win, rma::win_complete(w)); }
int Win_post(MPI_Group g, int assert_, MPI_Win win) {
    SYNC_CALL(win, rma::win_post(w, g, assert_));
}
int Win_wait(MPI_Win win) { SYNC_CALL(win, rma::win_wait(w)); }
int Win_test(MPI_Win win, int* flag) {
    if (!flag) return core::raise(nullptr, make_error(MPI_ERR_ARG, "flag is NULL"));
    SYNC_CALL(win, rma::win_test(w, flag));
}
int Win_lock(int type, int rank, int assert_, MPI_Win win) {
    SYNC_CALL(win, rma::win_lock(w, type, rank, assert_));
}
int Win_unlock(int rank, MPI_Win win) { SYNC_CALL(win, rma::win_unlock(w, rank)); }
int Win_lock_all(int assert_, MPI_Win win) { SYNC_CALL(win, rma::win_lock_all(w, assert_)); }
int Win_unlock_all(MPI_Win win) { SYNC_CALL(win, rma::win_unlock_all(w)); }
int Win_flush(int rank, MPI_Win win) { SYNC_CALL(win, rma::win_flush(w, rank, false)); }
int Win_flush_all(MPI_Win win) { SYNC_CALL(win, rma::win_flush_all(w, false)); }
int Win_flush_local(int rank, MPI_Win win) { SYNC_CALL(win, rma::win_flush(w, rank, true)); }
int Win_flush_local_all(MPI_Win win) { SYNC_CALL(win, rma::win_flush_all(w, true)); }
int Win_sync(MPI_Win win) { SYNC_CALL(win, rma::win_sync(w)); }

}  // namespace wanmpi::impl
