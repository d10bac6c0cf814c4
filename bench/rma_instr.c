/* The loops of OSU's one-sided latency benchmarks (osu_put/get/acc/fop/cas_latency: 8 bytes of
 * MPI_CHAR, one element for fop and cas) on an MPI_Win_allocate window (argument "create": an
 * MPI_Win_create window on malloc'd memory, as OSU's -w create), rank 0 -> rank 1 on one host,
 * each loop in its own function so that callgrind's inclusive cost of the function divided by N
 * is the cost of one iteration (bench/count-onesided.sh). Standard MPI only: the same source is
 * counted under wanmpi, MPICH and Open MPI. Rank 1 waits in MPI_Barrier meanwhile. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 20000
static MPI_Win win;
static char sbuf[64], tbuf[64], cbuf[64];

#define LOOP(name, body)                                                                       \
    __attribute__((noinline)) static void name(void) {                                        \
        for (int i = 0; i < N; ++i) {                                                         \
            body;                                                                             \
        }                                                                                     \
    }

#define PUT MPI_Put(sbuf, 8, MPI_CHAR, 1, 0, 8, MPI_CHAR, win)
#define GET MPI_Get(tbuf, 8, MPI_CHAR, 1, 0, 8, MPI_CHAR, win)
#define ACC MPI_Accumulate(sbuf, 8, MPI_CHAR, 1, 0, 8, MPI_CHAR, MPI_SUM, win)
#define FOP MPI_Fetch_and_op(sbuf, tbuf, MPI_CHAR, 1, 0, MPI_SUM, win)
#define CAS MPI_Compare_and_swap(sbuf, cbuf, tbuf, MPI_CHAR, 1, 0, win)
#define FLUSH MPI_Win_flush(1, win)
#define FLUSH_LOCAL MPI_Win_flush_local(1, win)
#define ALL(op) MPI_Win_lock_all(0, win); op; MPI_Win_unlock_all(win)

/* inside one MPI_Win_lock(MPI_LOCK_SHARED, 1) */
LOOP(put_flush, PUT; FLUSH)
LOOP(put_flush_local, PUT; FLUSH_LOCAL)
LOOP(get_flush, GET; FLUSH)
LOOP(acc_flush, ACC; FLUSH)
LOOP(fop_flush, FOP; FLUSH)
LOOP(fop_flush_local, FOP; FLUSH_LOCAL)
LOOP(cas_flush, CAS; FLUSH)
/* an epoch per iteration */
LOOP(put_lock, MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win); PUT; MPI_Win_unlock(1, win))
LOOP(put_lock_all, ALL(PUT))
LOOP(get_lock_all, ALL(GET))
LOOP(acc_lock_all, ALL(ACC))
LOOP(fop_lock_all, ALL(FOP))
LOOP(cas_lock_all, ALL(CAS))

int main(int argc, char **argv) {
    int rank;
    char *base, *mem = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 1 && strcmp(argv[1], "create") == 0) {
        base = mem = calloc(4096, 1);
        MPI_Win_create(base, 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        put_flush();
        put_flush_local();
        get_flush();
        acc_flush();
        fop_flush();
        fop_flush_local();
        cas_flush();
        MPI_Win_unlock(1, win);
        put_lock();
        put_lock_all();
        get_lock_all();
        acc_lock_all();
        fop_lock_all();
        cas_lock_all();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    free(mem);
    if (rank == 0) printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
