/* first_calls: what the first calls of a collective cost in a fresh run, call by call.
 *
 * OSU's collective benchmarks showed, on a loaded machine, a large average at the first size of a
 * run (60-2,200 us for an 8 B collective that later costs a few us) that their warm-up did not
 * absorb. This times every one of the first N calls right after MPI_Init (no barrier first, as
 * OSU's first size) on every rank, and prints per window of W calls the median, mean and maximum
 * of the slowest rank's time per call, so one sees how long the first calls cost more.
 *
 *   first_calls [-c barrier|allreduce|alltoall|allgather|bcast] [-b BYTES] [-n N] [-w W]
 *               [-d MS] [-p K]   (-d: the last rank starts MS milliseconds late, as a slow
 *               starter; -p: also print the first K calls' times, "call <i> <us>")
 * Output from rank 0: "<coll> <first index> <median_us> <mean_us> <max_us>" per window, then
 * "total_first_<W> <us>" (the first window's sum) and "steady_median <us>" (the last window's).
 * Standard MPI only (bench/compare-coll.sh -f runs it with wanmpi, MPICH and Open MPI).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_coll.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *coll = "allreduce";
    int bytes = 8, n = 2000, w = 100, delay_ms = 0, show = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-c")) coll = argv[i + 1];
        else if (!strcmp(argv[i], "-b")) bytes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-w")) w = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-d")) delay_ms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-p")) show = atoi(argv[i + 1]);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *s = calloc((size_t)bytes * (size_t)size + 64, 1), *r = calloc((size_t)bytes * (size_t)size + 64, 1);
    double *t = malloc(sizeof(double) * (size_t)n), *tmax = malloc(sizeof(double) * (size_t)n);
    if (delay_ms && rank == size - 1) {
        struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (int k = 0; k < n; ++k) {
        double t0 = MPI_Wtime();
        if (bench_coll(coll, s, r, bytes) != 0) bench_coll("bcast", s, r, bytes);
        t[k] = (MPI_Wtime() - t0) * 1e6;
    }
    MPI_Reduce(t, tmax, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double *win = malloc(sizeof(double) * (size_t)w), first = 0, last_med = 0;
        for (int b = 0; b + w <= n; b += w) {
            double sum = 0, mx = 0;
            for (int k = 0; k < w; ++k) {
                win[k] = tmax[b + k];
                sum += win[k];
                if (win[k] > mx) mx = win[k];
            }
            qsort(win, (size_t)w, sizeof(double), cmp);
            if (b == 0) first = sum;
            last_med = win[w / 2];
            printf("%s %d %.2f %.2f %.1f\n", coll, b, win[w / 2], sum / w, mx);
        }
        for (int k = 0; k < show && k < n; ++k) printf("call %d %.1f\n", k, tmax[k]);
        printf("first_call %.1f\ntotal_first_%d %.1f\nsteady_median %.2f\n", tmax[0], w, first,
               last_med);
        free(win);
    }
    free(s);
    free(r);
    free(t);
    free(tmax);
    MPI_Finalize();
    return 0;
}
