/* Bad arguments give the right error class through the window's error handler (and
 * MPI_COMM_WORLD's for a bad window handle), plus names, info, groups and user window error
 * handlers (create / set / get / call). The operations are checked again on a window from
 * MPI_Win_allocate, whose same-host targets wanmpi reaches by loads, stores and atomics (its lean
 * path for predefined datatypes), with the calls that path takes next to erroneous ones. */
#include "rmatest.h"

static int handler_calls, handler_code;
static MPI_Win handler_win;
static void on_error(MPI_Win *win, int *code, ...) {
    ++handler_calls;
    handler_code = *code;
    handler_win = *win;
}

static int cls(int rc) {
    int c = rc;
    MPI_Error_class(rc, &c);
    return c;
}
#define EXPECT(call, want)                                                                   \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        CHECK(cls(rc_) == (want), "%s gave class %d, want %s (%d)", #call, cls(rc_), #want, want); \
    } while (0)

static void dummy_fn(void *in, void *io, int *len, MPI_Datatype *dt) {
    (void)in; (void)io; (void)len; (void)dt;
}

/* Operations on an MPI_Win_allocate window in a lock_all epoch: valid ones land, each erroneous
 * one (one bad argument next to otherwise valid ones) gives its class, and after unlock_all
 * every kind reports the missing epoch. */
static void allocate_window_errors(void) {
    int *mem, v = 7, two[2] = {7, 7}, r = -1, c = 0;
    MPI_Win win;
    MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < 4; ++i) mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    int other = (rt_rank + 1) % rt_size;
    MPI_Datatype fresh;
    MPI_Type_contiguous(1, MPI_INT, &fresh); /* never committed */
    MPI_Op uop;
    MPI_Op_create(dummy_fn, 1, &uop);

    MPI_Win_lock_all(0, win);
    EXPECT(MPI_Put(&v, 1, MPI_INT, other, 3, 1, MPI_INT, win), MPI_SUCCESS);
    EXPECT(MPI_Put(&v, 1, MPI_INT, other, 4, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(two, 2, MPI_INT, other, 3, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(&v, 1, MPI_INT, other, -1, 1, MPI_INT, win), MPI_ERR_DISP);
    EXPECT(MPI_Put(&v, 1, MPI_INT, other, (MPI_Aint)1 << 62, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(two, 2, MPI_INT, other, 0, 1, MPI_INT, win), MPI_ERR_ARG);
    EXPECT(MPI_Put(&v, -1, MPI_INT, other, 0, -1, MPI_INT, win), MPI_ERR_COUNT);
    EXPECT(MPI_Put(&v, 1, MPI_DATATYPE_NULL, other, 0, 1, MPI_DATATYPE_NULL, win), MPI_ERR_TYPE);
    EXPECT(MPI_Put(&v, 1, fresh, other, 0, 1, fresh, win), MPI_ERR_TYPE);
    EXPECT(MPI_Get(&r, 1, MPI_INT, rt_size, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    EXPECT(MPI_Get(&r, 1, MPI_INT, other, 3, 1, MPI_INT, win), MPI_SUCCESS);
    EXPECT(MPI_Get(&r, 1, MPI_INT, other, 4, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Accumulate(&v, 1, MPI_INT, other, 0, 1, MPI_INT, uop, win), MPI_ERR_OP);
    EXPECT(MPI_Accumulate(&v, 1, MPI_INT, other, 0, 1, MPI_INT, MPI_OP_NULL, win), MPI_ERR_OP);
    EXPECT(MPI_Accumulate(&v, 1, MPI_INT, other, 0, 1, MPI_FLOAT, MPI_SUM, win), MPI_ERR_TYPE);
    EXPECT(MPI_Accumulate(&v, 1, MPI_INT, other, 4, 1, MPI_INT, MPI_SUM, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Accumulate(&v, 1, MPI_INT, other, 0, 1, MPI_INT, MPI_SUM, win), MPI_SUCCESS);
    EXPECT(MPI_Fetch_and_op(&v, &r, MPI_INT, other, 0, uop, win), MPI_ERR_OP);
    EXPECT(MPI_Fetch_and_op(&v, &r, MPI_INT, other, 4, MPI_SUM, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Fetch_and_op(&v, &r, MPI_INT, rt_size + 2, 0, MPI_SUM, win), MPI_ERR_RANK);
    EXPECT(MPI_Fetch_and_op(&v, &r, MPI_DATATYPE_NULL, other, 0, MPI_SUM, win), MPI_ERR_TYPE);
    EXPECT(MPI_Fetch_and_op(&v, &r, MPI_INT, other, 0, MPI_SUM, win), MPI_SUCCESS);
    EXPECT(MPI_Get_accumulate(&v, 1, MPI_INT, two, 2, MPI_INT, other, 0, 1, MPI_INT, MPI_SUM, win),
           MPI_ERR_ARG);
    EXPECT(MPI_Compare_and_swap(&v, &c, &r, MPI_INT, other, 4, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Compare_and_swap(&v, &c, &r, MPI_INT, other, -2, win), MPI_ERR_DISP);
    EXPECT(MPI_Compare_and_swap(&v, &c, &r, MPI_DATATYPE_NULL, other, 0, win), MPI_ERR_TYPE);
    EXPECT(MPI_Compare_and_swap(&v, &c, &r, MPI_INT, -5, 0, win), MPI_ERR_RANK);
    EXPECT(MPI_Compare_and_swap(&v, &c, &r, MPI_INT, MPI_PROC_NULL, 0, win), MPI_SUCCESS);
    EXPECT(MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win), MPI_SUCCESS);
    EXPECT(MPI_Win_flush(other, win), MPI_SUCCESS);
    EXPECT(MPI_Win_flush(rt_size + 1, win), MPI_ERR_RANK);
    EXPECT(MPI_Win_flush_local(other, win), MPI_SUCCESS);
    EXPECT(MPI_Win_unlock_all(win), MPI_SUCCESS);

    /* the valid calls above landed: 7 (put) at [3]; 7 + 7 (accumulate, fetch_and_op) at [0] */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[3] == 7 && mem[0] == 14, "allocate window holds %d at 0, %d at 3", mem[0], mem[3]);

    /* no epoch: every operation kind says so */
    EXPECT(MPI_Put(&v, 1, MPI_INT, other, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Get(&r, 1, MPI_INT, other, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Accumulate(&v, 1, MPI_INT, other, 0, 1, MPI_INT, MPI_SUM, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Fetch_and_op(&v, &r, MPI_INT, other, 0, MPI_SUM, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Compare_and_swap(&v, &c, &r, MPI_INT, other, 0, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_flush(other, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC);

    MPI_Type_free(&fresh);
    MPI_Op_free(&uop);
    MPI_Win_free(&win);
}

int main(int argc, char **argv) {
    rt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf[16] = {0}, v = 1;
    MPI_Win win, bad;
    EXPECT(MPI_Win_create(buf, -1, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &bad), MPI_ERR_SIZE);
    EXPECT(MPI_Win_create(buf, 64, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &bad), MPI_ERR_DISP);
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int other = (rt_rank + 1) % rt_size;

    EXPECT(MPI_Put(&v, 1, MPI_INT, other, 0, 1, MPI_INT, MPI_WIN_NULL), MPI_ERR_WIN);
    EXPECT(MPI_Put(&v, 1, MPI_INT, other, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC); /* no epoch */
    EXPECT(MPI_Win_unlock(other, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_wait(win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_flush(other, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_lock(12345, other, 0, win), MPI_ERR_LOCKTYPE);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, rt_size + 3, 0, win), MPI_ERR_RANK);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, other, 77777, win), MPI_ERR_ASSERT);
    {
        MPI_Aint sz;
        int du;
        void *p;
        /* MPI 4.0: any flavor; a rank whose memory is not shared reads as size 0 and NULL */
        EXPECT(MPI_Win_shared_query(win, rt_size + 5, &sz, &du, &p), MPI_ERR_RANK);
        EXPECT(MPI_Win_shared_query(win, rt_rank, &sz, &du, &p), MPI_SUCCESS);
        CHECK(sz == (MPI_Aint)sizeof buf && p == (void *)buf, "own part: %ld %p", (long)sz, p);
        if (rt_size > 1) {
            EXPECT(MPI_Win_shared_query(win, other, &sz, &du, &p), MPI_SUCCESS);
            CHECK(sz == 0 && p == NULL, "other's part of a created window: %ld %p", (long)sz, p);
        }
        EXPECT(MPI_Win_attach(win, buf, 4), MPI_ERR_RMA_FLAVOR);
    }
    MPI_Win_lock(MPI_LOCK_SHARED, other, 0, win);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, other, 0, win), MPI_ERR_RMA_SYNC); /* twice */
    EXPECT(MPI_Put(&v, 1, MPI_INT, other, 16, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(&v, 2, MPI_INT, other, 15, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(&v, 1, MPI_INT, other, -1, 1, MPI_INT, win), MPI_ERR_DISP);
    EXPECT(MPI_Get(&v, 1, MPI_INT, rt_size + 1, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    EXPECT(MPI_Put(&v, 1, MPI_DATATYPE_NULL, other, 0, 1, MPI_INT, win), MPI_ERR_TYPE);
    EXPECT(MPI_Put(&v, -1, MPI_INT, other, 0, 1, MPI_INT, win), MPI_ERR_COUNT);
    {
        MPI_Op uop;
        MPI_Op_create(dummy_fn, 1, &uop);
        EXPECT(MPI_Accumulate(&v, 1, MPI_INT, other, 0, 1, MPI_INT, uop, win), MPI_ERR_OP);
        MPI_Op_free(&uop);
    }
    EXPECT(MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win), MPI_SUCCESS);
    EXPECT(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC); /* inside a lock epoch */
    EXPECT(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);    /* epoch still open */
    MPI_Win_unlock(other, win);

    /* a user window error handler sees the window and the code */
    MPI_Errhandler eh, got;
    MPI_Win_create_errhandler(on_error, &eh);
    MPI_Win_set_errhandler(win, eh);
    MPI_Win_get_errhandler(win, &got);
    CHECK(got == eh, "get_errhandler returned another handler");
    MPI_Errhandler_free(&got);
    int rc = MPI_Put(&v, 1, MPI_INT, other, 0, 1, MPI_INT, win);
    CHECK(handler_calls == 1 && handler_win == win && cls(handler_code) == MPI_ERR_RMA_SYNC &&
              rc == handler_code,
          "user handler: calls %d, class %d", handler_calls, cls(handler_code));
    MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER, "call_errhandler: %d calls", handler_calls);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    /* names, info, group, attributes */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 0, "default name has length %d", len);
    MPI_Win_set_name(win, "my window");
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 9 && !strcmp(name, "my window"), "name '%s'", name);
    MPI_Info info;
    char val[MPI_MAX_INFO_VAL];
    int flag = 0;
    MPI_Win_get_info(win, &info);
    MPI_Info_get(info, "no_locks", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && !strcmp(val, "false"), "no_locks hint: flag %d '%s'", flag, flag ? val : "");
    MPI_Info_free(&info);
    MPI_Group g, wg;
    int res;
    MPI_Win_get_group(win, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &res);
    CHECK(res == MPI_IDENT, "window group differs from the communicator's");
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    void *base = NULL;
    MPI_Aint *size = NULL;
    int *du = NULL;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == buf, "MPI_WIN_BASE %p, want %p", base, (void *)buf);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag);
    CHECK(flag && *size == (MPI_Aint)sizeof buf, "MPI_WIN_SIZE %ld", (long)*size);
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag);
    CHECK(flag && *du == (int)sizeof(int), "MPI_WIN_DISP_UNIT %d", *du);

    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free did not set MPI_WIN_NULL");
    allocate_window_errors();
    return rt_finish();
}
