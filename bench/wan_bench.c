/* wan_bench: what a job spread over two sites costs, next to what the link allows.
 *
 * Standard MPI only: the same source is built with wanmpi's and Open MPI's mpicc and run across
 * the same emulated link (bench/compare-wan.sh, scripts/demo.sh).
 *
 *   wan_bench [-p PEER] [-l ITERS] [-B MIB] [-r REPS] [-s SAMPLES] [-t LIST] [-q]
 *     -p PEER     the rank on the other site for the point-to-point tests (default size/2: with
 *                 the same number of ranks per site, the first rank of the second site)
 *     -l ITERS    1-byte ping-pong round trips (default 200)
 *     -B MIB      bulk transfer size in MiB (default 64)
 *     -r REPS     bulk transfers (default 3)
 *     -s SAMPLES  samples per collective (default 15)
 *     -t LIST     comma-separated subset of: lat,bulk,barrier,bcast1k,bcast1m,allreduce8,
 *                 allreduce1m,alltoall64k (default: all)
 *     -q          quick: fewer iterations (a check of the set-up, not numbers)
 *
 * Output (rank 0), one line per measurement, "key value unit" plus comments:
 *   lat_us <median half round trip of 1-byte MPI_Send/MPI_Recv between rank 0 and PEER>
 *   bulk_ms <median time of one B MiB MPI_Send rank 0 -> PEER, from a common start to the end
 *            of MPI_Recv>, bulk_mbit <B MiB / that time>, bulk_first_ms (the first transfer,
 *            which pays for TCP slow start)
 *   <coll>_ms <median time from a common start to the last rank's return>
 *
 * Method for everything but the ping-pong: every rank starts the operation at the same instant
 * of CLOCK_MONOTONIC (rank 0 broadcasts a start time far enough ahead; every rank sleeps, then
 * spins, until it), and a sample is the time until the LAST rank has returned (MPI_MAX over the
 * ranks' end times). This measures one operation from a simultaneous start, as the lower bounds
 * (one-way delays, bytes/rate) assume, with no pipelining of back-to-back calls. It needs one
 * clock for every rank: all ranks on one machine, which is what wanemu's sites are. A sample in
 * which a rank got the start time late (scheduler noise) is thrown away and taken again.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

static int rank, size;

/* A common start time: rank 0 picks now + margin and broadcasts it. Returns it, or a negative
 * value on every rank if some rank received it too late (the sample is then retaken). */
static double margin_s = 0.05;

static double common_start(void)
{
    double t = 0, late = 0, any_late = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        t = bench_now_s() + margin_s;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    late = bench_now_s() > t - 0.0002 ? 1 : 0;
    MPI_Allreduce(&late, &any_late, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (any_late > 0) {
        margin_s *= 2;
        return -1;
    }
    bench_wait_until(t);
    return t;
}

typedef void (*op_fn)(void *ctx);

/* Times one op from a common start to the last rank's return; median of `samples`. */
static double time_op(op_fn op, void *ctx, int samples)
{
    double *v = malloc(sizeof(double) * (size_t)samples);
    int got = 0, tries = 0;
    while (got < samples && tries < samples * 4) {
        double t0, end, last;
        ++tries;
        t0 = common_start();
        if (t0 < 0)
            continue;
        op(ctx);
        end = bench_now_s();
        MPI_Allreduce(&end, &last, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        v[got++] = last - t0;
    }
    {
        double m = got ? bench_median(v, got) : -1;
        free(v);
        return m;
    }
}

/* ---- the operations ------------------------------------------------------------------------ */

struct buf {
    char *s, *r;
    int n;
    int peer;
};

static void op_barrier(void *c)
{
    (void)c;
    MPI_Barrier(MPI_COMM_WORLD);
}

static void op_bcast(void *c)
{
    struct buf *b = c;
    MPI_Bcast(b->s, b->n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void op_allreduce(void *c)
{
    struct buf *b = c;
    MPI_Allreduce(b->s, b->r, b->n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

static void op_alltoall(void *c)
{
    struct buf *b = c;
    MPI_Alltoall(b->s, b->n, MPI_BYTE, b->r, b->n, MPI_BYTE, MPI_COMM_WORLD);
}

static void op_bulk(void *c)
{
    struct buf *b = c;
    if (rank == 0)
        MPI_Send(b->s, b->n, MPI_BYTE, b->peer, 77, MPI_COMM_WORLD);
    else if (rank == b->peer)
        MPI_Recv(b->r, b->n, MPI_BYTE, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int peer = -1, iters = 200, reps = 3, samples = 15, quick = 0, i;
    long bulk_mib = 64;
    const char *list = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            peer = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-l") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-B") && i + 1 < argc)
            bulk_mib = atol(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            list = argv[++i];
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
        else {
            if (rank == 0)
                fprintf(stderr, "wan_bench: unknown argument %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (peer < 0)
        peer = size / 2;
    if (size < 2 || peer <= 0 || peer >= size) {
        if (rank == 0)
            fprintf(stderr, "wan_bench: needs 2+ ranks and 0 < PEER < size\n");
        MPI_Finalize();
        return 1;
    }
    if (quick) {
        iters = iters > 20 ? 20 : iters;
        reps = 1;
        samples = samples > 3 ? 3 : samples;
        if (bulk_mib > 8)
            bulk_mib = 8;
    }
    if (rank == 0)
        printf("# wan_bench: %d ranks, peer %d\n", size, peer);

    /* 1-byte ping-pong, half round trip (also sets the start margin for the rest). */
    if (bench_wanted(list, "lat")) {
        char x = 0;
        double *v = malloc(sizeof(double) * (size_t)iters);
        MPI_Barrier(MPI_COMM_WORLD);
        for (i = -5; i < iters; i++) { /* 5 warm-up round trips */
            double t = bench_now_s();
            if (rank == 0) {
                MPI_Send(&x, 1, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(&x, 1, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == peer) {
                MPI_Recv(&x, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&x, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            if (i >= 0)
                v[i] = (bench_now_s() - t) / 2;
        }
        if (rank == 0) {
            double m = bench_median(v, iters);
            printf("lat_us %.1f us  # 1-byte half round trip, median of %d\n", m * 1e6, iters);
            margin_s = 0.02 + 8 * m;
        }
        free(v);
        MPI_Bcast(&margin_s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }

    if (bench_wanted(list, "bulk")) {
        struct buf b;
        double *v = malloc(sizeof(double) * (size_t)reps);
        b.n = (int)(bulk_mib << 20);
        b.peer = peer;
        b.s = malloc((size_t)b.n);
        b.r = malloc((size_t)b.n);
        memset(b.s, 7, (size_t)b.n);
        memset(b.r, 0, (size_t)b.n);
        for (i = 0; i < reps; i++) {
            v[i] = time_op(op_bulk, &b, 1);
            if (rank == 0 && i == 0)
                printf("bulk_first_ms %.1f ms  # the first %ld MiB transfer\n", v[0] * 1e3,
                       bulk_mib);
        }
        if (rank == 0) {
            double m = bench_median(v, reps);
            printf("bulk_ms %.1f ms  # %ld MiB rank 0 -> %d, median of %d\n", m * 1e3,
                   bulk_mib, peer, reps);
            printf("bulk_mbit %.1f Mbit/s\n", (double)b.n * 8 / m / 1e6);
        }
        free(b.s);
        free(b.r);
        free(v);
    }

    {
        static const struct {
            const char *name;
            op_fn fn;
            int n;
        } colls[] = {{"barrier", op_barrier, 0},          {"bcast1k", op_bcast, 1024},
                     {"bcast1m", op_bcast, 1 << 20},      {"allreduce8", op_allreduce, 8},
                     {"allreduce1m", op_allreduce, 1 << 20}, {"alltoall64k", op_alltoall, 65536}};
        for (i = 0; i < (int)(sizeof colls / sizeof colls[0]); i++) {
            struct buf b;
            size_t bytes;
            double m;
            if (!bench_wanted(list, colls[i].name))
                continue;
            bytes = (size_t)(colls[i].n ? colls[i].n : 1) * (colls[i].fn == op_alltoall ? size : 1);
            b.n = colls[i].n;
            b.peer = peer;
            b.s = calloc(bytes, 1);
            b.r = calloc(bytes, 1);
            op_fn fn = colls[i].fn;
            fn(&b); /* warm-up: connections, buffers */
            m = time_op(fn, &b, samples);
            if (rank == 0)
                printf("%s_ms %.2f ms  # median of %d, common start to last return\n",
                       colls[i].name, m * 1e3, samples);
            free(b.s);
            free(b.r);
        }
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
