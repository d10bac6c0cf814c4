/* relay_kernels: NAS-like communication kernels and a point-to-point pair across clusters, to
 * measure what impi-relay (private-address clusters) costs next to a direct link.
 *
 * Standard MPI only: the same source is built with wanmpi's mpicc and with Open MPI's
 * (bench/compare-relay.sh).
 *
 *   relay_kernels [-t LIST] [-a RANK] [-p PEER] [-l ITERS] [-M MIB] [-r REPS] [-B BYTES] [-R REPS]
 *                 [-K BYTES] [-s SEED]
 *     -t LIST   comma-separated subset of lat,bw,ft,is (default all)
 *     -a RANK   one end of lat and bw (default 0: world rank 0)
 *     -p PEER   the other end of lat and bw (default: the first rank of the last cluster;
 *               clusters are told apart by processor names "c<I>h<J>" as wanemu gives them,
 *               else size/2)
 *     -l ITERS  1-byte ping-pong round trips (default 1000, after 100 unmeasured)
 *     -M MIB    one-way transfer size in MiB (default 64)
 *     -r REPS   one-way transfers (default 3; the median is reported, the first as well)
 *     -B BYTES  FT: MPI_Alltoall bytes per pair (default 262144; K/M suffixes)
 *     -R REPS   FT and IS: iterations per measurement (default 4)
 *     -K BYTES  IS: average key bytes each rank sends to each rank (default 262144)
 *     -s SEED   IS: seed of the bucket sizes (default 1)
 *
 * Kernels (no computation between the communication calls):
 *   ft  R x MPI_Alltoall(B bytes per pair), as NAS FT's transpose;
 *   is  R x { count keys per bucket; MPI_Allreduce(bucket counts); MPI_Alltoall(send counts);
 *       MPI_Alltoallv(keys) }, as NAS IS's rank step. Each rank sends rank d a random share of
 *       its keys (weights 0.25..1.75 x the mean, drawn from SEED and the two ranks, so the
 *       counts are uneven but the same in every run and under every MPI).
 * One unmeasured iteration opens the connections first. Every rank starts the measured loop at
 * the same instant of CLOCK_MONOTONIC (rank 0 broadcasts a start time ahead; the ranks of a
 * wanemu job share one machine's clock) and the time is that to the last rank's return.
 *
 * Output (rank 0), one line per measurement:
 *   relay_kernels: lat bytes=1 iters=N half_rtt_us=MEDIAN min_us=MIN peer=P
 *   relay_kernels: bw bytes=B reps=R time_s=MEDIAN MBps=B/MEDIAN first_MBps=... peer=P
 *   relay_kernels: ft ranks=N bytes_per_pair=B reps=R bytes=ALL wan_bytes=W time_s=T MBps=ALL/T
 *                  wan_MBps=W/T
 *   relay_kernels: is ranks=N key_bytes=K reps=R bytes=ALL wan_bytes=W time_s=T MBps=.. wan_MBps=..
 * bytes: everything sent to other ranks; wan_bytes: the part between different clusters (0 when
 * clusters cannot be told apart). MB = 10^6 bytes.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "bench_wan.h"

static int rank, size;
static int *cluster_of; /* per world rank, -1 if unknown */

/* A start instant every rank can reach: rank 0's clock + a margin, broadcast. */
static double common_start(MPI_Comm comm)
{
    double t = bench_now_s() + 0.05;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, comm);
    return t;
}


static int wan(int a, int b)
{
    return cluster_of[a] >= 0 && cluster_of[b] >= 0 && cluster_of[a] != cluster_of[b];
}

/* Deterministic weight in [0.25, 1.75) for the pair (from, to). */
static double pair_weight(unsigned seed, int from, int to)
{
    uint64_t x = (uint64_t)seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)from << 32 | (unsigned)to);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return 0.25 + 1.5 * (double)(x >> 11) / (double)(1ull << 53);
}

int main(int argc, char **argv)
{
    const char *list = "lat,bw,ft,is";
    int peer = -1, me = 0, iters = 1000, reps = 3, kreps = 4;
    long mib = 64, ft_bytes = 262144, is_bytes = 262144;
    unsigned seed = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) break;
        if (!strcmp(a, "-t")) list = v;
        else if (!strcmp(a, "-p")) peer = atoi(v);
        else if (!strcmp(a, "-a")) me = atoi(v);
        else if (!strcmp(a, "-l")) iters = atoi(v);
        else if (!strcmp(a, "-M")) mib = atol(v);
        else if (!strcmp(a, "-r")) reps = atoi(v);
        else if (!strcmp(a, "-B")) ft_bytes = bench_parse_size(v);
        else if (!strcmp(a, "-R")) kreps = atoi(v);
        else if (!strcmp(a, "-K")) is_bytes = bench_parse_size(v);
        else if (!strcmp(a, "-s")) seed = (unsigned)atoi(v);
        else continue;
        ++i;
    }
    cluster_of = bench_wan_setup("relay_kernels", rank, size, &me, &peer);

    if (bench_wanted(list, "lat")) {
        char b = 0;
        int warm = 100;
        double *v = malloc(sizeof(double) * (size_t)iters);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < warm + iters; ++i) {
            if (rank == me) {
                double t0 = bench_now_s();
                MPI_Send(&b, 1, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(&b, 1, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (i >= warm) v[i - warm] = (bench_now_s() - t0) / 2;
            } else if (rank == peer) {
                MPI_Recv(&b, 1, MPI_CHAR, me, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&b, 1, MPI_CHAR, me, 1, MPI_COMM_WORLD);
            }
        }
        if (rank == me) {
            double m = bench_median(v, iters);
            printf("relay_kernels: lat bytes=1 iters=%d half_rtt_us=%.2f min_us=%.2f a=%d peer=%d\n",
                   iters, m * 1e6, v[0] * 1e6, me, peer);
            fflush(stdout);
        }
        free(v);
    }

    if (bench_wanted(list, "bw")) {
        size_t n = (size_t)mib << 20;
        char *buf = (rank == me || rank == peer) ? malloc(n) : NULL;
        double *v = malloc(sizeof(double) * (size_t)reps);
        if (buf) memset(buf, rank & 0xff, n);
        for (int i = 0; i < reps; ++i) {
            double t = common_start(MPI_COMM_WORLD), end = 0;
            if (rank == me) {
                bench_wait_until(t);
                MPI_Send(buf, (int)n, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
                MPI_Recv(&end, 1, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                v[i] = end - t;
            } else if (rank == peer) {
                bench_wait_until(t);
                MPI_Recv(buf, (int)n, MPI_CHAR, me, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                end = bench_now_s();
                MPI_Send(&end, 1, MPI_DOUBLE, me, 3, MPI_COMM_WORLD);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == me) {
            double first = v[0], m = bench_median(v, reps);
            printf("relay_kernels: bw bytes=%zu reps=%d time_s=%.4f MBps=%.1f first_MBps=%.1f "
                   "a=%d peer=%d\n", n, reps, m, n / m / 1e6, n / first / 1e6, me, peer);
            fflush(stdout);
        }
        free(v);
        free(buf);
    }

    if (bench_wanted(list, "ft")) {
        size_t per = (size_t)ft_bytes;
        char *sb = malloc(per * (size_t)size), *rb = malloc(per * (size_t)size);
        double all = 0, wanb = 0, t, end, maxend;
        memset(sb, rank & 0xff, per * (size_t)size);
        for (int s = 0; s < size; ++s)
            for (int d = 0; d < size; ++d)
                if (s != d) {
                    all += (double)per;
                    if (wan(s, d)) wanb += (double)per;
                }
        MPI_Alltoall(sb, (int)per, MPI_CHAR, rb, (int)per, MPI_CHAR, MPI_COMM_WORLD);
        t = common_start(MPI_COMM_WORLD);
        bench_wait_until(t);
        for (int i = 0; i < kreps; ++i)
            MPI_Alltoall(sb, (int)per, MPI_CHAR, rb, (int)per, MPI_CHAR, MPI_COMM_WORLD);
        end = bench_now_s();
        MPI_Reduce(&end, &maxend, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double dt = maxend - t;
            printf("relay_kernels: ft ranks=%d bytes_per_pair=%zu reps=%d bytes=%.0f "
                   "wan_bytes=%.0f time_s=%.4f MBps=%.2f wan_MBps=%.2f\n", size, per, kreps,
                   all * kreps, wanb * kreps, dt, all * kreps / dt / 1e6, wanb * kreps / dt / 1e6);
            fflush(stdout);
        }
        free(sb);
        free(rb);
    }

    if (bench_wanted(list, "is")) {
        /* Keys this rank sends to rank d: mean is_bytes/4 keys, times pair_weight. */
        int *scount = malloc(sizeof(int) * (size_t)size), *rcount = malloc(sizeof(int) * (size_t)size);
        int *sdisp = malloc(sizeof(int) * (size_t)size), *rdisp = malloc(sizeof(int) * (size_t)size);
        int *bucket = malloc(sizeof(int) * (size_t)size), *btotal = malloc(sizeof(int) * (size_t)size);
        long nkeys = 0, mean = is_bytes / 4;
        double all = 0, wanb = 0, t = 0, end, maxend;
        for (int d = 0; d < size; ++d) {
            scount[d] = (int)(mean * pair_weight(seed, rank, d));
            sdisp[d] = (int)nkeys;
            nkeys += scount[d];
        }
        for (int s = 0; s < size; ++s)
            for (int d = 0; d < size; ++d)
                if (s != d) {
                    double b = 4.0 * (int)(mean * pair_weight(seed, s, d));
                    all += b;
                    if (wan(s, d)) wanb += b;
                }
        int *keys = malloc(sizeof(int) * (size_t)(nkeys + 1));
        /* Keys of bucket d are d*2^20 + something: counting them is IS's local step. */
        srand(seed * 7919u + (unsigned)rank);
        for (int d = 0; d < size; ++d)
            for (int k = 0; k < scount[d]; ++k) keys[sdisp[d] + k] = (d << 20) | (rand() & 0xfffff);
        int *rkeys = NULL;
        for (int it = -1; it < kreps; ++it) {
            if (it == 0) {
                t = common_start(MPI_COMM_WORLD);
                bench_wait_until(t);
            }
            memset(bucket, 0, sizeof(int) * (size_t)size);
            for (long k = 0; k < nkeys; ++k) bucket[keys[k] >> 20]++;
            MPI_Allreduce(bucket, btotal, size, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Alltoall(bucket, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
            long rn = 0;
            for (int s = 0; s < size; ++s) {
                rdisp[s] = (int)rn;
                rn += rcount[s];
            }
            if (!rkeys) rkeys = malloc(sizeof(int) * (size_t)(rn + 1));
            MPI_Alltoallv(keys, bucket, sdisp, MPI_INT, rkeys, rcount, rdisp, MPI_INT,
                          MPI_COMM_WORLD);
        }
        end = bench_now_s();
        MPI_Reduce(&end, &maxend, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double dt = maxend - t;
            printf("relay_kernels: is ranks=%d key_bytes=%ld reps=%d bytes=%.0f wan_bytes=%.0f "
                   "time_s=%.4f MBps=%.2f wan_MBps=%.2f\n", size, is_bytes, kreps, all * kreps,
                   wanb * kreps, dt, all * kreps / dt / 1e6, wanb * kreps / dt / 1e6);
            fflush(stdout);
        }
        free(keys);
        free(rkeys);
        free(scount);
        free(rcount);
        free(sdisp);
        free(rdisp);
        free(bucket);
        free(btotal);
    }
    free(cluster_of);
    MPI_Finalize();
    return 0;
}
