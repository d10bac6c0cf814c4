/* compress_bench: one large message from rank 0 to the first rank of the other site, of data
 * that compresses well, somewhat, or not at all (issue 14, point 2; bench/compare-compress.sh).
 *
 * Standard MPI only: the same source is built with wanmpi's and Open MPI's mpicc.
 *
 *   compress_bench [-k KIND] [-B MIB] [-r REPS]
 *     -k KIND  smooth: doubles of a smooth field, 300 + 20 sin(x) + 5 cos(3.7 x) over the
 *                      buffer (full double precision, as a solver leaves them);
 *              noisy:  the smooth field plus noise of 1e-3 in every value (measured data: the
 *                      low bits are random, and no lossless filter can predict them);
 *              sparse: mostly zero: 1 double in 64 nonzero (a sparse or freshly allocated field);
 *              random: random bytes (already compressed or encrypted data)
 *     -B MIB   message size in MiB (default 64)
 *     -r REPS  transfers (default 3)
 *
 * Each transfer: a barrier, MPI_Send of B MiB from rank 0, MPI_Recv on the peer, which answers
 * with 1 byte; the time is rank 0's, from before the send to the answer (one one-way delay more
 * than the data needs, the same for every MPI). The receiver checks every byte against the same
 * generator (a wrong byte fails the run).
 *
 * Output (rank 0), "key value":
 *   kind K, mib B
 *   time_ms   <median transfer time>
 *   mbit      <B MiB / median time, in Mbit/s of user data>
 *   cpu_s_0 / cpu_s_1  <CPU seconds (user + system, getrusage) of the sender / receiver over
 *              all transfers, data generation excluded>
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_common.h"

static void fill(char *b, size_t n, const char *kind)
{
    size_t nd = n / 8;
    double *d = (double *)b;
    if (strcmp(kind, "smooth") == 0 || strcmp(kind, "noisy") == 0) {
        const int noisy = strcmp(kind, "noisy") == 0;
        uint64_t s = 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < nd; ++i) {
            double x = 6.283185307179586 * (double)i / (double)nd;
            d[i] = 300.0 + 20.0 * sin(x) + 5.0 * cos(3.7 * x);
            if (noisy) {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                d[i] += 1e-3 * (double)(s >> 11) / 9007199254740992.0;
            }
        }
    } else if (strcmp(kind, "sparse") == 0) {
        memset(b, 0, n);
        for (size_t i = 0; i < nd; i += 64) d[i] = 1.0 + (double)(i % 1000);
    } else {
        uint64_t s = 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < nd; ++i) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;  /* xorshift64 */
            memcpy(b + 8 * i, &s, 8);
        }
    }
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

int main(int argc, char **argv)
{
    const char *kind = "smooth";
    int mib = 64, reps = 3, rank, size, c;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((c = getopt(argc, argv, "k:B:r:")) != -1) {
        if (c == 'k') kind = optarg;
        else if (c == 'B') mib = atoi(optarg);
        else if (c == 'r') reps = atoi(optarg);
        else MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (strcmp(kind, "smooth") && strcmp(kind, "noisy") && strcmp(kind, "sparse") &&
        strcmp(kind, "random")) {
        if (rank == 0) fprintf(stderr, "compress_bench: -k smooth|noisy|sparse|random\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int peer = size / 2;
    const size_t n = (size_t)mib << 20;
    char *buf = bench_alloc(n), *want = NULL;
    fill(buf, n, kind);
    if (rank == peer) {
        want = bench_alloc(n);
        fill(want, n, kind);
    }
    double *t = calloc((size_t)reps, sizeof *t);
    long bad = 0;
    char one = 1;
    double cpu0 = cpu_s();
    for (int r = 0; r < reps; ++r) {
        if (rank == peer) memset(buf, 0, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            MPI_Recv(&one, 1, MPI_CHAR, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            t[r] = MPI_Wtime() - t0;
        } else if (rank == peer) {
            MPI_Recv(buf, (int)n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&one, 1, MPI_CHAR, 0, 8, MPI_COMM_WORLD);
            if (memcmp(buf, want, n) != 0) bad++;
        }
    }
    double cpu = cpu_s() - cpu0, cpu_peer = 0;
    if (rank == peer) MPI_Send(&cpu, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
    if (rank == 0) MPI_Recv(&cpu_peer, 1, MPI_DOUBLE, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    long allbad = 0;
    MPI_Reduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double med = bench_median(t, reps);
        printf("kind %s\nmib %d\ntime_ms %.1f\nmbit %.1f\ncpu_s_0 %.2f\ncpu_s_1 %.2f\n", kind, mib,
               med * 1e3, (double)n * 8 / med / 1e6, cpu, cpu_peer);
        printf(allbad ? " Found %ld errors\n" : " No Errors\n", allbad);
    }
    free(t);
    free(buf);
    free(want);
    MPI_Finalize();
    return allbad != 0;
}
