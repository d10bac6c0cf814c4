/* Every synchronization mode with Put, Get and Accumulate on one window flavor (argv[1]:
 * create, allocate, dynamic, shared): fence, post/start/complete/wait (and test), lock
 * exclusive (a read-modify-write counter that only mutual exclusion keeps exact), lock shared
 * with accumulates, lock_all with flush and flush_local, and the request-based Rput/Rget/
 * Raccumulate/Rget_accumulate, and a flush after a fetching operation (remote completion of what
 * came before it). */
#include "rmatest.h"

#define N 64

static void fence_test(rt_win *w) {
    int *mem = (int *)w->base;
    int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
    int vals[N], got[N], one = 1;
    for (int i = 0; i < N; ++i) { mem[i] = -1; vals[i] = rt_rank * 1000 + i; }
    MPI_Win_fence(0, w->win);
    MPI_Put(vals, N / 2, MPI_INT, right, rt_disp(w, right, 0, 4), N / 2, MPI_INT, w->win);
    MPI_Accumulate(&one, 1, MPI_INT, 0, rt_disp(w, 0, N - 1, 4), 1, MPI_INT, MPI_SUM, w->win);
    MPI_Win_fence(0, w->win);
    for (int i = 0; i < N / 2; ++i)
        CHECK(mem[i] == left * 1000 + i, "fence put: mem[%d] = %d, want %d", i, mem[i], left * 1000 + i);
    if (rt_rank == 0) CHECK(mem[N - 1] == -1 + rt_size, "fence acc: %d, want %d", mem[N - 1], rt_size - 1);
    MPI_Get(got, N / 2, MPI_INT, left, rt_disp(w, left, 0, 4), N / 2, MPI_INT, w->win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
    int ll = (left + rt_size - 1) % rt_size;
    for (int i = 0; i < N / 2; ++i)
        CHECK(got[i] == ll * 1000 + i, "fence get: got[%d] = %d, want %d", i, got[i], ll * 1000 + i);
}

static void pscw_test(rt_win *w) {
    int *mem = (int *)w->base;
    int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
    MPI_Group world, to, from;
    MPI_Win_get_group(w->win, &world);
    MPI_Group_incl(world, 1, &right, &to);
    MPI_Group_incl(world, 1, &left, &from);
    for (int round = 0; round < 3; ++round) {
        int v = rt_rank * 10 + round, flag = 0;
        mem[0] = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_post(from, 0, w->win);
        MPI_Win_start(to, 0, w->win);
        MPI_Put(&v, 1, MPI_INT, right, rt_disp(w, right, 0, 4), 1, MPI_INT, w->win);
        MPI_Win_complete(w->win);
        if (round == 1) {
            while (!flag) MPI_Win_test(w->win, &flag);
        } else {
            MPI_Win_wait(w->win);
        }
        CHECK(mem[0] == left * 10 + round, "pscw round %d: %d, want %d", round, mem[0], left * 10 + round);
    }
    MPI_Group_free(&to);
    MPI_Group_free(&from);
    MPI_Group_free(&world);
}

static void lock_test(rt_win *w) {
    int *mem = (int *)w->base;
    const int iters = 20;
    mem[1] = 0;
    mem[2] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    /* exclusive: get, flush, put back +1; exact only if the locks exclude each other */
    for (int i = 0; i < iters; ++i) {
        int v = 0;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win);
        MPI_Get(&v, 1, MPI_INT, 0, rt_disp(w, 0, 1, 4), 1, MPI_INT, w->win);
        MPI_Win_flush(0, w->win);
        ++v;
        MPI_Put(&v, 1, MPI_INT, 0, rt_disp(w, 0, 1, 4), 1, MPI_INT, w->win);
        MPI_Win_unlock(0, w->win);
    }
    /* shared: accumulates only */
    for (int i = 0; i < iters; ++i) {
        int two = 2;
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
        MPI_Accumulate(&two, 1, MPI_INT, 0, rt_disp(w, 0, 2, 4), 1, MPI_INT, MPI_SUM, w->win);
        MPI_Win_unlock(0, w->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win); /* local access to the window memory */
        CHECK(mem[1] == iters * rt_size, "exclusive counter %d, want %d", mem[1], iters * rt_size);
        CHECK(mem[2] == 2 * iters * rt_size, "shared acc %d, want %d", mem[2], 2 * iters * rt_size);
        MPI_Win_unlock(0, w->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void lock_all_test(rt_win *w) {
    int *mem = (int *)w->base;
    int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
    int v[4] = {rt_rank, rt_rank + 1, rt_rank + 2, rt_rank + 3}, got[4] = {0}, old = -5;
    MPI_Request rq[4];
    for (int i = 0; i < N; ++i) mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w->win);
    MPI_Put(v, 4, MPI_INT, right, rt_disp(w, right, 8, 4), 4, MPI_INT, w->win);
    MPI_Win_flush_local(right, w->win);
    MPI_Win_flush(right, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Get(got, 4, MPI_INT, left, rt_disp(w, left, 8, 4), 4, MPI_INT, w->win);
    MPI_Win_flush_all(w->win);
    for (int i = 0; i < 4; ++i)
        CHECK(got[i] == ((left + rt_size - 1) % rt_size) + i, "lock_all get[%d] = %d", i, got[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    /* request-based operations */
    int one = 1, r1 = 0, r2[4] = {0};
    MPI_Rput(v, 4, MPI_INT, right, rt_disp(w, right, 16, 4), 4, MPI_INT, w->win, &rq[0]);
    MPI_Raccumulate(&one, 1, MPI_INT, 0, rt_disp(w, 0, 20, 4), 1, MPI_INT, MPI_SUM, w->win, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Win_flush_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Rget(r2, 4, MPI_INT, left, rt_disp(w, left, 16, 4), 4, MPI_INT, w->win, &rq[2]);
    MPI_Rget_accumulate(&one, 1, MPI_INT, &old, 1, MPI_INT, 0, rt_disp(w, 0, 21, 4), 1, MPI_INT,
                        MPI_SUM, w->win, &rq[3]);
    MPI_Wait(&rq[2], MPI_STATUS_IGNORE);
    MPI_Wait(&rq[3], MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; ++i)
        CHECK(r2[i] == ((left + rt_size - 1) % rt_size) + i, "rget[%d] = %d", i, r2[i]);
    CHECK(old >= 0 && old < rt_size, "rget_accumulate old value %d", old);
    (void)r1;
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
        CHECK(mem[20] == rt_size, "raccumulate sum %d, want %d", mem[20], rt_size);
        CHECK(mem[21] == rt_size, "rget_accumulate sum %d, want %d", mem[21], rt_size);
        MPI_Win_unlock(0, w->win);
    }
}

/* MPI_Win_flush after a fetching operation: it must also complete at the target everything this
 * origin sent before the fetch, here a put too large to travel in one message (its data follows
 * its header; with WANMPI_RMA_DIRECT=0 it is a message on every flavor) and an accumulate. Each
 * rank writes into its right neighbour and flushes; after a barrier, while those epochs are still
 * open (so no unlock can have completed anything), every rank reads with MPI_Get the memory of
 * the rank two to its right, written by a third rank (with 3 or more ranks), so nothing the writer
 * sent after its flush can have pushed the data in ahead of the read, and checks its own. */
static void flush_after_fetch_test(const char *flavor, MPI_Comm comm) {
    enum { M = 1 << 20 }; /* 4 MiB: over tcp its data arrives milliseconds after its header */
    rt_win w = rt_win_make(flavor, M * sizeof(int), sizeof(int), comm);
    int *mem = (int *)w.base, *src = (int *)malloc(M * sizeof(int));
    int *chk = (int *)malloc(M * sizeof(int));
    int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
    int far = (rt_rank + 2) % rt_size; /* written by `right` */
    for (int i = 0; i < M; ++i) mem[i] = 0;
    mem[M - 1] = 42;
    MPI_Win_sync(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int round = 1; round <= 3; ++round) {
        int one = 1, got = -1;
        for (int i = 0; i < M - 2; ++i) src[i] = rt_rank * 100 + round + i % 1000;
        MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w.win);
        MPI_Put(src, M - 2, MPI_INT, right, rt_disp(&w, right, 0, 4), M - 2, MPI_INT, w.win);
        MPI_Accumulate(&one, 1, MPI_INT, right, rt_disp(&w, right, M - 2, 4), 1, MPI_INT, MPI_SUM,
                       w.win);
        MPI_Fetch_and_op(NULL, &got, MPI_INT, right, rt_disp(&w, right, M - 1, 4), MPI_NO_OP,
                         w.win);
        MPI_Win_flush(right, w.win);
        CHECK(got == 42, "round %d: fetched %d, want 42", round, got);
        MPI_Barrier(MPI_COMM_WORLD);
        if (far != right) MPI_Win_lock(MPI_LOCK_SHARED, far, 0, w.win);
        MPI_Get(chk, M - 2, MPI_INT, far, rt_disp(&w, far, 0, 4), M - 2, MPI_INT, w.win);
        MPI_Win_flush(far, w.win);
        if (far != right) MPI_Win_unlock(far, w.win);
        int bad = 0;
        for (int i = 0; i < M - 2; ++i) bad += chk[i] != right * 100 + round + i % 1000;
        CHECK(bad == 0, "round %d: %d elements of rank %d's put to rank %d missing after its "
              "flush", round, bad, right, far);
        MPI_Win_sync(w.win);
        bad = 0;
        for (int i = 0; i < M - 2; ++i) bad += mem[i] != left * 100 + round + i % 1000;
        CHECK(bad == 0, "round %d: %d elements of the put from rank %d missing after its flush",
              round, bad, left);
        CHECK(mem[M - 2] == round, "round %d: accumulated %d, want %d", round, mem[M - 2], round);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_unlock(right, w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(src);
    free(chk);
    rt_win_free(&w);
}

int main(int argc, char **argv) {
    rt_init(&argc, &argv);
    const char *flavor = argc > 1 ? argv[1] : "create";
    MPI_Comm comm = MPI_COMM_WORLD;
    if (!strcmp(flavor, "shared")) /* shared windows need ranks of one host */
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &comm);
    int csize;
    MPI_Comm_size(comm, &csize);
    if (csize == rt_size) {
        rt_win w = rt_win_make(flavor, N * sizeof(int), sizeof(int), comm);
        int flv = 0, *pflv = NULL, flag = 0;
        MPI_Win_get_attr(w.win, MPI_WIN_CREATE_FLAVOR, &pflv, &flag);
        if (flag) flv = *pflv;
        CHECK(flag && flv == (!strcmp(flavor, "allocate") ? MPI_WIN_FLAVOR_ALLOCATE
                              : !strcmp(flavor, "shared") ? MPI_WIN_FLAVOR_SHARED
                              : !strcmp(flavor, "dynamic") ? MPI_WIN_FLAVOR_DYNAMIC
                                                            : MPI_WIN_FLAVOR_CREATE),
              "flavor attribute %d", flv);
        fence_test(&w);
        pscw_test(&w);
        lock_test(&w);
        lock_all_test(&w);
        rt_win_free(&w);
        flush_after_fetch_test(flavor, comm);
    }
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    return rt_finish();
}
