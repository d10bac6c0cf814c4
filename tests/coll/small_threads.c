/* small_threads: small blocking collectives run at the same time by several threads of each rank,
 * each thread on its own communicator (MPI_THREAD_MULTIPLE). An MPI that receives the messages
 * of such a call without a request (wanmpi: the exchange's lean receives, src/coll/flat.cpp and
 * core/engine.hpp) must keep the calls of different threads apart while each waits: every result
 * is checked against values computed here, for Allreduce, Allgather, Alltoall, Bcast and Barrier.
 *
 * Standard MPI only. Usage: small_threads [-q]   (-q: fewer iterations)
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 3
#define MAXN 64 /* elements per rank */

static int rank, size, iters = 2000;
static int errors[NTHREADS];

struct arg {
    int t;
    MPI_Comm comm;
};

static void *run(void *p)
{
    struct arg *a = p;
    const int t = a->t;
    MPI_Comm c = a->comm;
    int *in = malloc(sizeof(int) * MAXN * size), *out = malloc(sizeof(int) * MAXN * size);
    for (int i = 0; i < iters && errors[t] < 10; ++i) {
        const int n = 1 + (i * 7 + t) % MAXN; /* elements: 4 B .. 256 B per rank */
        const int v = t * 100000 + i;
        for (int k = 0; k < n; ++k) in[k] = v + rank + k;
        MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, c);
        for (int k = 0; k < n; ++k) {
            int want = size * (v + k) + size * (size - 1) / 2;
            if (out[k] != want) {
                if (errors[t]++ < 3)
                    fprintf(stderr, "[%d] thread %d iter %d: Allreduce[%d] = %d, want %d\n", rank,
                            t, i, k, out[k], want);
                break;
            }
        }
        MPI_Allgather(in, n, MPI_INT, out, n, MPI_INT, c);
        for (int r = 0; r < size; ++r)
            for (int k = 0; k < n; ++k)
                if (out[r * n + k] != v + r + k) {
                    if (errors[t]++ < 3)
                        fprintf(stderr, "[%d] thread %d iter %d: Allgather from %d wrong\n", rank,
                                t, i, r);
                    r = size;
                    break;
                }
        for (int r = 0; r < size; ++r)
            for (int k = 0; k < n; ++k) in[r * n + k] = v + 1000 * rank + 10 * r + k;
        MPI_Alltoall(in, n, MPI_INT, out, n, MPI_INT, c);
        for (int r = 0; r < size; ++r)
            for (int k = 0; k < n; ++k)
                if (out[r * n + k] != v + 1000 * r + 10 * rank + k) {
                    if (errors[t]++ < 3)
                        fprintf(stderr, "[%d] thread %d iter %d: Alltoall from %d wrong\n", rank,
                                t, i, r);
                    r = size;
                    break;
                }
        const int root = i % size;
        for (int k = 0; k < n; ++k) out[k] = rank == root ? v * 3 + k : -1;
        MPI_Bcast(out, n, MPI_INT, root, c);
        for (int k = 0; k < n; ++k)
            if (out[k] != v * 3 + k) {
                if (errors[t]++ < 3)
                    fprintf(stderr, "[%d] thread %d iter %d: Bcast[%d] = %d\n", rank, t, i, k,
                            out[k]);
                break;
            }
        if (i % 16 == 0) MPI_Barrier(c);
    }
    free(in);
    free(out);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "-q") == 0) iters = 300;
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("MPI_THREAD_MULTIPLE not provided (%d): nothing to test\n", provided);
        MPI_Finalize();
        return 77;
    }
    struct arg a[NTHREADS];
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; ++t) {
        a[t].t = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &a[t].comm);
    }
    for (int t = 0; t < NTHREADS; ++t) pthread_create(&th[t], NULL, run, &a[t]);
    for (int t = 0; t < NTHREADS; ++t) pthread_join(th[t], NULL);
    int mine = 0, all = 0;
    for (int t = 0; t < NTHREADS; ++t) {
        mine += errors[t];
        MPI_Comm_free(&a[t].comm);
    }
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0) printf(" No Errors\n");
        else printf("%d errors\n", all);
    }
    MPI_Finalize();
    return all != 0;
}
