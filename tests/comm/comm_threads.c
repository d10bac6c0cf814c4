/* Concurrent communicator construction under MPI_THREAD_MULTIPLE: two threads per process, each
 * duplicating and splitting its own parent communicator in a loop, so that context-id
 * agreements of different communicators overlap on every process (and, with the threads
 * scheduled differently on different processes, in different orders). Every result is checked
 * by traffic. Skipped (passes) if the library does not provide MPI_THREAD_MULTIPLE. */
#include <pthread.h>

#include "commtest.h"

#define NTHREADS 2
#define ITERS 30

static MPI_Comm parents[NTHREADS];
static int errs[NTHREADS];

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, i, n, r, me = ct_world_rank();
    MPI_Comm_size(parents[t], &n);
    MPI_Comm_rank(parents[t], &r);
    for (i = 0; i < ITERS; i++) {
        MPI_Comm d, s;
        int x = t * 100000000 + me * 100000 + i, y = -1, sz = -1;
        MPI_Comm_dup(parents[t], &d);
        /* ring on the duplicate, same tag in both threads: if two concurrent agreements ever
         * handed out the same context id, messages would cross between the threads */
        MPI_Sendrecv(&x, 1, MPI_INT, (r + 1) % n, 0, &y, 1, MPI_INT, (r - 1 + n) % n, 0, d,
                     MPI_STATUS_IGNORE);
        if (y / 100000000 != t || y % 100000 != i)
            errs[t]++;
        MPI_Comm_split(d, r % 2, -r, &s);
        MPI_Comm_size(s, &sz);
        if (sz != (r % 2 ? n / 2 : (n + 1) / 2))
            errs[t]++;
        MPI_Comm_free(&s);
        MPI_Comm_free(&d);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, t;
    pthread_t th[NTHREADS];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    mt_setup();
    if (provided == MPI_THREAD_MULTIPLE) {
        for (t = 0; t < NTHREADS; t++)
            MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]);
        for (t = 0; t < NTHREADS; t++)
            pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
        for (t = 0; t < NTHREADS; t++)
            pthread_join(th[t], NULL);
        for (t = 0; t < NTHREADS; t++) {
            MT_CHECK(errs[t] == 0, "thread %d: %d wrong results", t, errs[t]);
            MPI_Comm_free(&parents[t]);
        }
    }
    return mt_finalize();
}
