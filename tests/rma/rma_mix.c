/* Mixing accumulate-class operations on one location (window flavor in argv[1]): the standard
 * makes MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op and MPI_Compare_and_swap with the
 * same basic datatype atomic with respect to each other, whichever mix of them touches a
 * location. An implementation that applies some of them with atomic instructions and others
 * under a lock (or some at the origin and others at the target) loses updates here.
 *   1. counters of 2, 4 and 8 bytes: every rank adds 1 ITERS times, in turn by MPI_Accumulate
 *      (SUM), MPI_Fetch_and_op (SUM), MPI_Get_accumulate (SUM) and a compare-and-swap loop;
 *      the totals are exact;
 *   2. a swap chain: every rank swaps unique tokens into one location, in turn by
 *      MPI_Fetch_and_op (MPI_REPLACE) and by a compare-and-swap loop; every token (and the
 *      initial value) is fetched exactly once or is the final value;
 *   3. a lock taken with MPI_Compare_and_swap and released with MPI_Accumulate (MPI_REPLACE)
 *      protects a get-increment-put counter that stays exact;
 *   4. floating-point sums by MPI_Accumulate and MPI_Fetch_and_op (MPI_DOUBLE) are exact for
 *      small integers.
 * Rank 0 holds the window memory that everyone, itself included, works on. */
#include "rmatest.h"

#define ITERS 120

static void cas_add(const void *one, void *tmp, void *cur, void *prev, MPI_Datatype dt, size_t n,
                    MPI_Aint disp, MPI_Win win) {
    /* cur = current value (atomic read), then CAS cur -> cur + 1 until it succeeds */
    MPI_Fetch_and_op(one, cur, dt, 0, disp, MPI_NO_OP, win);
    MPI_Win_flush(0, win);
    for (;;) {
        long long c = 0, nx;
        memcpy(&c, cur, n); /* little-endian host: the low bytes hold the value */
        nx = c + 1;
        memcpy(tmp, &nx, n);
        MPI_Compare_and_swap(tmp, cur, prev, dt, 0, disp, win);
        MPI_Win_flush(0, win);
        if (!memcmp(prev, cur, n)) break;
        memcpy(cur, prev, n);
    }
}

int main(int argc, char **argv) {
    rt_init(&argc, &argv);
    const char *flavor = argc > 1 ? argv[1] : "create";
    rt_win w = rt_win_make(flavor, 64, 1, MPI_COMM_WORLD);
    memset(w.base, 0, 64);
    MPI_Barrier(MPI_COMM_WORLD);
    /* byte offsets: s16 0, i32 4, ll 8, chain 16, lock 24, guarded 32, dbl 40 */
    MPI_Aint ds = rt_disp(&w, 0, 0, 1), di = rt_disp(&w, 0, 4, 1), dl = rt_disp(&w, 0, 8, 1),
             dc = rt_disp(&w, 0, 16, 1), dk = rt_disp(&w, 0, 24, 1), dg = rt_disp(&w, 0, 32, 1),
             dd = rt_disp(&w, 0, 40, 1);

    /* 1. counters */
    MPI_Win_lock_all(0, w.win);
    struct {
        MPI_Datatype dt;
        MPI_Aint disp;
        size_t n;
    } ctr[3] = {{MPI_SHORT, ds, 2}, {MPI_INT, di, 4}, {MPI_LONG_LONG, dl, 8}};
    for (int i = 0; i < ITERS; ++i) {
        for (int k = 0; k < 3; ++k) {
            long long one = 1, res = 0, tmp = 0, cur = 0, prev = 0;
            short one_s = 1;
            int one_i = 1;
            const void *o = k == 0 ? (void *)&one_s : k == 1 ? (void *)&one_i : (void *)&one;
            switch ((i + rt_rank + k) % 4) {
            case 0: MPI_Accumulate(o, 1, ctr[k].dt, 0, ctr[k].disp, 1, ctr[k].dt, MPI_SUM, w.win); break;
            case 1: MPI_Fetch_and_op(o, &res, ctr[k].dt, 0, ctr[k].disp, MPI_SUM, w.win); break;
            case 2:
                MPI_Get_accumulate(o, 1, ctr[k].dt, &res, 1, ctr[k].dt, 0, ctr[k].disp, 1,
                                   ctr[k].dt, MPI_SUM, w.win);
                break;
            default: cas_add(o, &tmp, &cur, &prev, ctr[k].dt, ctr[k].n, ctr[k].disp, w.win); break;
            }
        }
        MPI_Win_flush(0, w.win);
    }

    /* 2. swap chain */
    long long *got = (long long *)malloc(ITERS * sizeof(long long));
    for (int i = 0; i < ITERS; ++i) {
        long long tok = (long long)rt_rank * ITERS + i + 1, prev = -1, cur = 0, dummy = 0;
        if (i % 2 == 0) {
            MPI_Fetch_and_op(&tok, &prev, MPI_LONG_LONG, 0, dc, MPI_REPLACE, w.win);
            MPI_Win_flush(0, w.win);
        } else {
            MPI_Fetch_and_op(&dummy, &cur, MPI_LONG_LONG, 0, dc, MPI_NO_OP, w.win);
            MPI_Win_flush(0, w.win);
            for (;;) {
                MPI_Compare_and_swap(&tok, &cur, &prev, MPI_LONG_LONG, 0, dc, w.win);
                MPI_Win_flush(0, w.win);
                if (prev == cur) break;
                cur = prev;
            }
        }
        got[i] = prev;
    }

    /* 3. CAS lock, Accumulate(MPI_REPLACE) unlock */
    for (int i = 0; i < ITERS / 4; ++i) {
        long long zero = 0;
        rt_cas_locked_incr(w.win, dk, dg, rt_rank + 1);
        MPI_Accumulate(&zero, 1, MPI_LONG_LONG, 0, dk, 1, MPI_LONG_LONG, MPI_REPLACE, w.win);
        MPI_Win_flush(0, w.win);
    }

    /* 4. double sums */
    for (int i = 0; i < ITERS; ++i) {
        double one = 1.0, res = 0;
        if (i % 2) MPI_Accumulate(&one, 1, MPI_DOUBLE, 0, dd, 1, MPI_DOUBLE, MPI_SUM, w.win);
        else MPI_Fetch_and_op(&one, &res, MPI_DOUBLE, 0, dd, MPI_SUM, w.win);
    }
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);

    int total = ITERS * rt_size;
    long long *all = rt_rank == 0 ? (long long *)malloc((size_t)total * sizeof(long long)) : NULL;
    MPI_Gather(got, ITERS, MPI_LONG_LONG, all, ITERS, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rt_rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win);
        short s;
        int iv;
        long long l, chain, g;
        double d;
        memcpy(&s, w.base + 0, 2);
        memcpy(&iv, w.base + 4, 4);
        memcpy(&l, w.base + 8, 8);
        memcpy(&chain, w.base + 16, 8);
        memcpy(&g, w.base + 32, 8);
        memcpy(&d, w.base + 40, 8);
        MPI_Win_unlock(0, w.win);
        CHECK(s == total, "short counter %d, want %d", s, total);
        CHECK(iv == total, "int counter %d, want %d", iv, total);
        CHECK(l == total, "long long counter %lld, want %d", l, total);
        CHECK(g == (long long)(ITERS / 4) * rt_size, "guarded counter %lld, want %d", g,
              (ITERS / 4) * rt_size);
        CHECK(d == (double)total, "double sum %g, want %d", d, total);
        /* chain: 0 .. total, each exactly once among the fetched values and the final one */
        char *seen = (char *)calloc((size_t)total + 1, 1);
        for (int i = 0; i <= total; ++i) {
            long long v = i < total ? all[i] : chain;
            CHECK(v >= 0 && v <= total, "chain value %lld out of range", v);
            if (v >= 0 && v <= total) {
                CHECK(!seen[v], "token %lld seen twice (a lost swap)", v);
                seen[v] = 1;
            }
        }
        free(seen);
        free(all);
    }
    free(got);
    MPI_Barrier(MPI_COMM_WORLD);
    rt_win_free(&w);
    return rt_finish();
}
