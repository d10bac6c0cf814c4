/* Atomicity under contention (window flavor in argv[1]): every rank MPI_SUMs into one location
 * many times under a shared lock; MPI_Fetch_and_op tickets are all distinct and dense (no two
 * ranks ever fetch the same value); a spin lock built on MPI_Compare_and_swap protects a
 * get-modify-put counter that stays exact; MPI_Get_accumulate with MPI_NO_OP reads atomically;
 * long accumulates (applied under a lock, with plain loads and stores) and one-element ones
 * (atomic instructions) on the same elements at once lose no update. */
#include "rmatest.h"

#define ITERS 200

int main(int argc, char **argv) {
    rt_init(&argc, &argv);
    const char *flavor = argc > 1 ? argv[1] : "create";
    rt_win w = rt_win_make(flavor, 32 * sizeof(long long), sizeof(long long), MPI_COMM_WORLD);
    long long *mem = (long long *)w.base;
    for (int i = 0; i < 32; ++i) mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Aint d0 = rt_disp(&w, 0, 0, 8), d1 = rt_disp(&w, 0, 1, 8), d2 = rt_disp(&w, 0, 2, 8),
             d3 = rt_disp(&w, 0, 3, 8), d4 = rt_disp(&w, 0, 4, 8);

    /* 1. accumulate contention */
    long long one = 1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win);
    for (int i = 0; i < ITERS; ++i)
        MPI_Accumulate(&one, 1, MPI_LONG_LONG, 0, d0, 1, MPI_LONG_LONG, MPI_SUM, w.win);
    MPI_Win_unlock(0, w.win);

    /* 2. fetch_and_op tickets */
    long long *tickets = (long long *)malloc(ITERS * sizeof(long long));
    MPI_Win_lock_all(0, w.win);
    for (int i = 0; i < ITERS; ++i) {
        MPI_Fetch_and_op(&one, &tickets[i], MPI_LONG_LONG, 0, d1, MPI_SUM, w.win);
        MPI_Win_flush(0, w.win);
    }
    MPI_Win_unlock_all(w.win);
    int total = ITERS * rt_size;
    long long *all = rt_rank == 0 ? (long long *)malloc((size_t)total * sizeof(long long)) : NULL;
    MPI_Gather(tickets, ITERS, MPI_LONG_LONG, all, ITERS, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rt_rank == 0) {
        char *seen = (char *)calloc((size_t)total, 1);
        for (int i = 0; i < total; ++i) {
            CHECK(all[i] >= 0 && all[i] < total, "ticket %lld out of range", all[i]);
            if (all[i] >= 0 && all[i] < total) {
                CHECK(!seen[all[i]], "ticket %lld fetched twice", all[i]);
                seen[all[i]] = 1;
            }
        }
        free(seen);
        free(all);
    }
    for (int i = 1; i < ITERS; ++i) CHECK(tickets[i] > tickets[i - 1], "tickets not increasing");
    free(tickets);

    /* 3. a CAS spin lock around a plain get-modify-put */
    MPI_Win_lock_all(0, w.win);
    for (int i = 0; i < ITERS / 4; ++i) {
        long long mine = rt_rank + 1, zero = 0, prev = -1;
        rt_cas_locked_incr(w.win, d2, d3, mine);
        MPI_Compare_and_swap(&zero, &mine, &prev, MPI_LONG_LONG, 0, d2, w.win);
        MPI_Win_flush(0, w.win);
        CHECK(prev == mine, "unlock found %lld, not my %lld", prev, mine);
    }
    /* 4. atomic read */
    long long r = -1, dummy = 0;
    MPI_Get_accumulate(&dummy, 1, MPI_LONG_LONG, &r, 1, MPI_LONG_LONG, 0, d4, 1, MPI_LONG_LONG,
                       MPI_NO_OP, w.win);
    MPI_Win_unlock_all(w.win);
    CHECK(r == 0, "no_op read %lld", r);

    /* 5. mixed methods on elements 8..31: even ranks add 1 to all 24 with one accumulate, odd
     * ranks to each with a one-element accumulate or fetch_and_op */
    long long ones[24], got;
    for (int k = 0; k < 24; ++k) ones[k] = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w.win);
    for (int i = 0; i < ITERS / 4; ++i) {
        if (rt_rank % 2 == 0) {
            MPI_Accumulate(ones, 24, MPI_LONG_LONG, 0, rt_disp(&w, 0, 8, 8), 24, MPI_LONG_LONG,
                           MPI_SUM, w.win);
        } else {
            for (int k = 8; k < 32; ++k) {
                if (k % 2)
                    MPI_Fetch_and_op(&one, &got, MPI_LONG_LONG, 0, rt_disp(&w, 0, k, 8), MPI_SUM,
                                     w.win);
                else
                    MPI_Accumulate(&one, 1, MPI_LONG_LONG, 0, rt_disp(&w, 0, k, 8), 1,
                                   MPI_LONG_LONG, MPI_SUM, w.win);
                MPI_Win_flush_local(0, w.win); /* got is reused */
            }
        }
    }
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win);
        CHECK(mem[0] == (long long)ITERS * rt_size, "sum %lld, want %d", mem[0], ITERS * rt_size);
        CHECK(mem[1] == (long long)ITERS * rt_size, "fop counter %lld", mem[1]);
        CHECK(mem[2] == 0, "cas lock left held by %lld", mem[2]);
        CHECK(mem[3] == (long long)(ITERS / 4) * rt_size, "cas-protected counter %lld, want %d",
              mem[3], (ITERS / 4) * rt_size);
        for (int k = 8; k < 32; ++k)
            CHECK(mem[k] == (long long)(ITERS / 4) * rt_size, "mixed sum at %d: %lld, want %d",
                  k, mem[k], (ITERS / 4) * rt_size);
        MPI_Win_unlock(0, w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rt_win_free(&w);
    return rt_finish();
}
