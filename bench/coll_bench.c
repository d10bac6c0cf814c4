/* coll_bench: median latency of one collective over a range of message sizes.
 *
 * Standard MPI only, so the same source is built with wanmpi's, MPICH's and Open MPI's mpicc and
 * the numbers are comparable (bench/compare-coll.sh runs all three side by side).
 *
 *   coll_bench -c barrier|bcast|allreduce|alltoall|allgather|reduce|gather|scatter|reduce_scatter
 *              [-m MIN] [-M MAX] [-t SECONDS_PER_SIZE] [-s SAMPLES] [-n] [-q]
 *
 * Size = bytes per rank for alltoall/allgather/gather/scatter (as OSU counts them), the whole
 * buffer for bcast/allreduce/reduce/reduce_scatter. -n times the nonblocking variant
 * (I-collective + MPI_Wait).
 *
 * Method: a sample is a batch of `inner` back-to-back calls started after a barrier, timed on
 * every rank; the sample's latency is the slowest rank's batch time / inner (MPI_MAX over ranks,
 * computed after the timing). The reported value is the median over the samples, which is robust
 * against the scheduler noise of an oversubscribed machine. `inner` is chosen so a batch lasts
 * about a millisecond. Before that, each size is warmed up (OSU-style): 200 calls or 20 ms,
 * whichever is longer, at most 100 ms. The result of each collective is checked once per size (outside the timing).
 * Output, from rank 0, one line per size: "<coll> <bytes> <median_us> <min_us> <samples>".
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int nonblocking = 0;

enum { BARRIER, BCAST, ALLREDUCE, ALLTOALL, ALLGATHER, REDUCE, GATHER, SCATTER, REDSCAT };
static const char *names[] = {"barrier", "bcast",  "allreduce", "alltoall",      "allgather",
                              "reduce",  "gather", "scatter",   "reduce_scatter"};

static char *sbuf, *rbuf;
static int *rcounts;

static void run(int coll, size_t bytes)
{
    MPI_Request req;
    MPI_Request *rp = nonblocking ? &req : NULL;
    int n = (int)bytes;
    switch (coll) {
    case BARRIER:
        if (rp) MPI_Ibarrier(MPI_COMM_WORLD, rp);
        else MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BCAST:
        if (rp) MPI_Ibcast(sbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD, rp);
        else MPI_Bcast(sbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE: /* float sum: every MPI has a fast path for it */
        if (rp) MPI_Iallreduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, rp);
        else MPI_Allreduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case REDUCE:
        if (rp) MPI_Ireduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, rp);
        else MPI_Reduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case REDSCAT:
        if (rp)
            MPI_Ireduce_scatter(sbuf, rbuf, rcounts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, rp);
        else MPI_Reduce_scatter(sbuf, rbuf, rcounts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        if (rp) MPI_Ialltoall(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD, rp);
        else MPI_Alltoall(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        if (rp) MPI_Iallgather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD, rp);
        else MPI_Allgather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case GATHER:
        if (rp) MPI_Igather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD, rp);
        else MPI_Gather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case SCATTER:
        if (rp) MPI_Iscatter(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD, rp);
        else MPI_Scatter(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    }
    if (rp) MPI_Wait(rp, MPI_STATUS_IGNORE);
}

/* One correctness check per size, so a fast but wrong library cannot win. */
static int check(int coll, size_t bytes)
{
    size_t i;
    int bad = 0, r;
    float *f = (float *)sbuf, *g = (float *)rbuf;
    switch (coll) {
    case BCAST:
        for (i = 0; i < bytes; ++i) sbuf[i] = rank == 0 ? (char)(i * 7 + 1) : 0;
        run(coll, bytes);
        for (i = 0; i < bytes; ++i) bad |= sbuf[i] != (char)(i * 7 + 1);
        break;
    case ALLREDUCE:
        for (i = 0; i < bytes / 4; ++i) f[i] = (float)(rank + (int)(i % 64));
        run(coll, bytes);
        for (i = 0; i < bytes / 4; ++i)
            bad |= g[i] != (float)(size * (size - 1) / 2 + size * (int)(i % 64));
        break;
    case ALLTOALL:
        for (r = 0; r < size; ++r)
            for (i = 0; i < bytes; ++i) sbuf[(size_t)r * bytes + i] = (char)(rank * 31 + r + i);
        run(coll, bytes);
        for (r = 0; r < size; ++r)
            for (i = 0; i < bytes; ++i)
                bad |= rbuf[(size_t)r * bytes + i] != (char)(r * 31 + rank + i);
        break;
    case ALLGATHER:
        for (i = 0; i < bytes; ++i) sbuf[i] = (char)(rank * 13 + i);
        run(coll, bytes);
        for (r = 0; r < size; ++r)
            for (i = 0; i < bytes; ++i) bad |= rbuf[(size_t)r * bytes + i] != (char)(r * 13 + i);
        break;
    default:
        run(coll, bytes);
    }
    return bad;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int coll = -1, i, quiet = 0;
    size_t min = 8, max = 1 << 20;
    double secs = 0.3;
    int max_samples = 200;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            const char *c = argv[++i];
            for (int k = 0; k < (int)(sizeof names / sizeof names[0]); ++k)
                if (!strcmp(c, names[k])) coll = k;
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) min = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-M") && i + 1 < argc) max = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) max_samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n")) nonblocking = 1;
        else if (!strcmp(argv[i], "-q")) quiet = 1;
        else coll = -2;
    }
    if (coll < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: coll_bench -c barrier|bcast|allreduce|alltoall|allgather|"
                            "reduce|gather|scatter|reduce_scatter [-m MIN] [-M MAX] [-t SECS] "
                            "[-s SAMPLES] [-n] [-q]\n");
        MPI_Finalize();
        return 2;
    }
    if (coll == BARRIER) min = max = 0;
    size_t per = (coll == ALLTOALL || coll == ALLGATHER || coll == GATHER || coll == SCATTER)
                     ? (size_t)size : 1;
    sbuf = malloc(max * per + 64);
    rbuf = malloc(max * per + 64);
    rcounts = malloc(sizeof(int) * (size_t)size);
    memset(sbuf, 1, max * per + 64);
    memset(rbuf, 0, max * per + 64);
    double *samples = malloc(sizeof(double) * (size_t)max_samples);
    double *maxs = malloc(sizeof(double) * (size_t)max_samples);
    if (rank == 0 && !quiet) printf("# %s, %d ranks%s: bytes median_us min_us samples\n",
                                    names[coll], size, nonblocking ? ", nonblocking" : "");
    int errors = 0;
    for (size_t bytes = min;; bytes = bytes ? bytes * 2 : 1) {
        if (coll == REDSCAT)
            for (int r = 0; r < size; ++r) rcounts[r] = (int)(bytes / 4 / (size_t)size);
        errors += check(coll, bytes);
        memset(sbuf, 1, max * per + 64);
        /* Warm up, as OSU's benchmarks do (their `skip` iterations): 200 calls or 20 ms,
         * whichever lasts longer, but at most 100 ms; every rank stops together (rank 0
         * decides). The first size measured after start-up is otherwise biased, in both
         * directions depending on the MPI: one-time costs (first touches of shared-memory pages,
         * lazily set-up channels) land in it, and the ranks' placement on the cores has not
         * settled yet. */
        {
            double tw = MPI_Wtime();
            int more = 1;
            for (i = 0; more; ++i) {
                run(coll, bytes);
                if (i % 10 == 9) {
                    double el = MPI_Wtime() - tw;
                    more = (i < 200 || el < 0.02) && el < 0.1;
                    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
                }
            }
        }
        /* Calibrate: time a few calls to pick `inner` (about 1 ms per batch). */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (i = 0; i < 3; ++i) run(coll, bytes);
        double one = (MPI_Wtime() - t0) / 3;
        MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        int inner = one > 0 ? (int)(1e-3 / one) : 100;
        if (inner < 1) inner = 1;
        if (inner > 100) inner = 100;
        int nsamples = (int)(secs / (one * inner + 20e-6));
        if (nsamples < 9) nsamples = 9; /* an MPI that takes ms per call still gets a median */
        if (nsamples > max_samples) nsamples = max_samples;
        for (int s = 0; s < nsamples; ++s) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            for (i = 0; i < inner; ++i) run(coll, bytes);
            samples[s] = (MPI_Wtime() - t) / inner;
        }
        MPI_Reduce(samples, maxs, nsamples, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            qsort(maxs, (size_t)nsamples, sizeof(double), cmp_double);
            printf("%s %zu %.2f %.2f %d\n", names[coll], bytes, maxs[nsamples / 2] * 1e6,
                   maxs[0] * 1e6, nsamples);
            fflush(stdout);
        }
        if (bytes >= max) break;
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && errors) printf("# %d WRONG RESULTS\n", errors);
    free(sbuf);
    free(rbuf);
    free(rcounts);
    free(samples);
    free(maxs);
    MPI_Finalize();
    return errors ? 1 : 0;
}
