/* Derived datatypes on the origin and on the target for every operation (window flavor in
 * argv[1]): a strided vector at the origin against a contiguous or indexed target and back,
 * Put, Get, Accumulate, Get_accumulate, and large transfers (above the inline limit, so the
 * runs and the payload travel as separate messages), under fence and lock. */
#include "rmatest.h"

#define N 4096 /* doubles per window: 32 KiB */

int main(int argc, char **argv) {
    rt_init(&argc, &argv);
    const char *flavor = argc > 1 ? argv[1] : "create";
    rt_win w = rt_win_make(flavor, N * sizeof(double), sizeof(double), MPI_COMM_WORLD);
    double *mem = (double *)w.base;
    int t = (rt_rank + 1) % rt_size, src = (rt_rank + rt_size - 1) % rt_size;
    MPI_Datatype vec, idx, big, bigvec;
    /* origin: every other double, 8 of them */
    MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    /* target: blocks of 1, 2, 5 doubles at 0, 10, 20 */
    int bl[3] = {1, 2, 5}, dp[3] = {0, 10, 20};
    MPI_Type_indexed(3, bl, dp, MPI_DOUBLE, &idx);
    MPI_Type_commit(&idx);
    /* large: 1500 blocks of 1 double, stride 2 (1500 runs: more than fit a header message) */
    MPI_Type_vector(1500, 1, 2, MPI_DOUBLE, &bigvec);
    MPI_Type_commit(&bigvec);
    MPI_Type_contiguous(1500, MPI_DOUBLE, &big);
    MPI_Type_commit(&big);

    double o[16], r[16];
    for (int i = 0; i < 16; ++i) o[i] = rt_rank * 100 + i;
    for (int i = 0; i < N; ++i) mem[i] = -1;

    /* Put vec -> idx, fence */
    MPI_Win_fence(0, w.win);
    MPI_Put(o, 1, vec, t, rt_disp(&w, t, 0, 8), 1, idx, w.win);
    MPI_Win_fence(0, w.win);
    {
        int k = 0, ok = 1;
        for (int b = 0; b < 3; ++b)
            for (int j = 0; j < bl[b]; ++j, ++k)
                if (mem[dp[b] + j] != src * 100 + 2 * k) ok = 0;
        CHECK(ok && mem[1] == -1, "put vector->indexed wrong (mem[0]=%g mem[10]=%g mem[1]=%g)",
              mem[0], mem[10], mem[1]);
    }
    /* The next epoch's operations may reach this rank's memory as soon as the others leave the
     * fence: local checks must be done before they start (a barrier), as MPI's rules on
     * conflicting accesses demand. */
    MPI_Barrier(MPI_COMM_WORLD);
    /* Get idx -> vec */
    for (int i = 0; i < 16; ++i) r[i] = -7;
    MPI_Get(r, 1, vec, t, rt_disp(&w, t, 0, 8), 1, idx, w.win);
    MPI_Win_fence(0, w.win);
    for (int k = 0; k < 8; ++k) {
        CHECK(r[2 * k] == rt_rank * 100 + 2 * k, "get idx->vec r[%d] = %g", 2 * k, r[2 * k]);
        CHECK(r[2 * k + 1] == -7, "get wrote a gap r[%d] = %g", 2 * k + 1, r[2 * k + 1]);
    }
    /* Accumulate vec -> idx (sum doubles what is there) */
    MPI_Accumulate(o, 1, vec, t, rt_disp(&w, t, 0, 8), 1, idx, MPI_SUM, w.win);
    MPI_Win_fence(0, w.win);
    CHECK(mem[0] == 2 * (src * 100), "acc mem[0] = %g", mem[0]);
    CHECK(mem[21] == 2 * (src * 100 + 8), "acc mem[21] = %g", mem[21]);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Get_accumulate (MPI_REPLACE): old values come back strided */
    for (int i = 0; i < 16; ++i) r[i] = -7;
    MPI_Get_accumulate(o, 1, vec, r, 1, vec, t, rt_disp(&w, t, 0, 8), 1, idx, MPI_REPLACE, w.win);
    MPI_Win_fence(0, w.win);
    CHECK(r[0] == 2 * (rt_rank * 100), "get_acc old r[0] = %g", r[0]);
    CHECK(r[1] == -7, "get_acc wrote a gap");
    CHECK(mem[0] == src * 100, "get_acc replace mem[0] = %g", mem[0]);

    /* Large: contiguous origin into every other double of the target (runs sent apart), and
     * back, under lock. */
    double *lo = (double *)malloc(1500 * sizeof(double)), *lr = (double *)malloc(1500 * sizeof(double));
    for (int i = 0; i < 1500; ++i) lo[i] = rt_rank + i * 0.5;
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win);
    MPI_Put(lo, 1, big, t, rt_disp(&w, t, 1, 8), 1, bigvec, w.win);
    MPI_Win_flush(t, w.win);
    MPI_Get(lr, 1500, MPI_DOUBLE, t, rt_disp(&w, t, 1, 8), 1, bigvec, w.win);
    MPI_Win_unlock(t, w.win);
    int bad = 0;
    for (int i = 0; i < 1500; ++i) bad += lr[i] != lo[i];
    CHECK(bad == 0, "large strided put/get: %d of 1500 wrong", bad);
    /* large contiguous put (payload straight into window memory) + accumulate */
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w.win);
    MPI_Put(lo, 1500, MPI_DOUBLE, t, rt_disp(&w, t, 2048, 8), 1500, MPI_DOUBLE, w.win);
    MPI_Win_flush(t, w.win);
    MPI_Accumulate(lo, 1500, MPI_DOUBLE, t, rt_disp(&w, t, 2048, 8), 1500, MPI_DOUBLE, MPI_SUM, w.win);
    MPI_Win_flush(t, w.win);
    MPI_Get(lr, 1500, MPI_DOUBLE, t, rt_disp(&w, t, 2048, 8), 1500, MPI_DOUBLE, w.win);
    MPI_Win_unlock(t, w.win);
    bad = 0;
    for (int i = 0; i < 1500; ++i) bad += lr[i] != 2 * lo[i];
    CHECK(bad == 0, "large contiguous put+acc: %d of 1500 wrong", bad);
    MPI_Barrier(MPI_COMM_WORLD);
    free(lo);
    free(lr);
    MPI_Type_free(&vec);
    MPI_Type_free(&idx);
    MPI_Type_free(&big);
    MPI_Type_free(&bigvec);
    rt_win_free(&w);
    return rt_finish();
}
