/* hol_bench: head-of-line blocking between clusters (issue 14). Rank 0 sends one large message
 * to its peer with MPI_Isend on tag 1 and meanwhile ping-pongs 1 byte with the same peer on tag 2:
 * how much longer does a small message take while a large one is on its way?
 *
 * Standard MPI only: the same source is built with wanmpi's and Open MPI's mpicc and run across
 * the same emulated link (bench/compare-lanes.sh).
 *
 *   hol_bench [-p PEER] [-B MIB] [-r REPS] [-i PINGS] [-n]
 *     -p PEER   the rank on the other site (default size/2: the first rank of the second site
 *               with the same number of ranks per site)
 *     -B MIB    the large message in MiB (default 64)
 *     -r REPS   transfers (default 3); the first pays for TCP's slow start as well
 *     -i PINGS  idle round trips before the transfers (default 50, after 5 unmeasured)
 *     -n        no pings during the transfers: the transfer's time alone
 *
 * Output (rank 0), "key value unit" lines:
 *   idle_rtt_ms      median round trip of a 1-byte MPI_Send/MPI_Recv pair, nothing else in flight
 *   idle_rtt_max_ms  its largest
 *   hol_rtt_ms       median round trip of the pings during the transfers (all of them)
 *   hol_rtt_p90_ms, hol_rtt_max_ms, hol_pings (how many)
 *   hol_ratio        hol_rtt_ms / idle_rtt_ms (the target: <= 2)
 *   xfer_mbit        median over the transfers of B MiB / time, where the time runs from MPI_Isend
 *                    to the moment rank 0 learns that the peer's receive completed (its pong, or
 *                    with -n a 1-byte message, says so): at most half a round trip late
 *   xfer_first_mbit  the first transfer's
 * The peer's receive is posted before each transfer starts (a 1-byte handshake on tag 3), so the
 * large message never waits for a receive: what delays a ping is the data ahead of it.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

enum { TAG_BIG = 1, TAG_PING = 2, TAG_SYNC = 3 };
enum { MAX_SAMPLES = 100000 };

static void usage(void)
{
    fprintf(stderr, "usage: hol_bench [-p PEER] [-B MIB] [-r REPS] [-i PINGS] [-n]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    int rank, size, peer = -1, reps = 3, idle = 50, pings = 1, opt, r, i;
    long mib = 64;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "p:B:r:i:n")) != -1) {
        switch (opt) {
        case 'p': peer = atoi(optarg); break;
        case 'B': mib = atol(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'i': idle = atoi(optarg); break;
        case 'n': pings = 0; break;
        default: usage();
        }
    }
    if (peer < 0)
        peer = size / 2;
    if (size < 2 || peer <= 0 || peer >= size || mib < 1 || mib > 1024 || reps < 1 || idle < 1)
        usage();
    if (rank != 0 && rank != peer) {
        MPI_Finalize();
        return 0;
    }
    const int other = rank == 0 ? peer : 0;
    const size_t bytes = (size_t)mib << 20;
    char *big = bench_alloc(bytes);
    double *idle_s = malloc(sizeof(double) * (size_t)idle);
    double *hol_s = malloc(sizeof(double) * MAX_SAMPLES);
    double *xfer_s = malloc(sizeof(double) * (size_t)reps);
    int nhol = 0;
    char b = 1, pong[2];
    if (!idle_s || !hol_s || !xfer_s) {
        fprintf(stderr, "hol_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* Idle round trips: 5 unmeasured, then `idle`. */
    for (i = 0; i < idle + 5; i++) {
        if (rank == 0) {
            double t0 = MPI_Wtime();
            MPI_Send(&b, 1, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(pong, 2, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (i >= 5)
                idle_s[i - 5] = MPI_Wtime() - t0;
        } else {
            MPI_Recv(&b, 1, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            pong[0] = pong[1] = 0;
            MPI_Send(pong, 2, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD);
        }
    }

    for (r = 0; r < reps; r++) {
        MPI_Request req;
        int done = 0;
        if (rank == 0) {
            /* The peer's receive is posted once its 1-byte "ready" arrives. */
            MPI_Recv(&b, 1, MPI_CHAR, other, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double t0 = MPI_Wtime(), t_end = 0;
            MPI_Isend(big, (int)bytes, MPI_BYTE, other, TAG_BIG, MPI_COMM_WORLD, &req);
            if (pings) {
                /* Ping until a pong says the peer has the whole message; ping byte 0 = stop. */
                for (;;) {
                    double t1 = MPI_Wtime();
                    b = 1;
                    MPI_Send(&b, 1, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD);
                    MPI_Recv(pong, 2, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    double t2 = MPI_Wtime();
                    if (!done)
                        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
                    if (nhol < MAX_SAMPLES)
                        hol_s[nhol++] = t2 - t1;
                    if (pong[0]) {
                        t_end = t2;
                        break;
                    }
                }
                b = 0;
                MPI_Send(&b, 1, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD);
            } else {
                MPI_Recv(&b, 1, MPI_CHAR, other, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                t_end = MPI_Wtime();
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            xfer_s[r] = t_end - t0;
        } else {
            MPI_Irecv(big, (int)bytes, MPI_BYTE, other, TAG_BIG, MPI_COMM_WORLD, &req);
            MPI_Send(&b, 1, MPI_CHAR, other, TAG_SYNC, MPI_COMM_WORLD);
            if (pings) {
                for (;;) {
                    MPI_Recv(&b, 1, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    if (!b)
                        break;
                    if (!done)
                        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
                    pong[0] = (char)done;
                    pong[1] = 0;
                    MPI_Send(pong, 2, MPI_CHAR, other, TAG_PING, MPI_COMM_WORLD);
                }
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                MPI_Send(&b, 1, MPI_CHAR, other, TAG_SYNC, MPI_COMM_WORLD);
            }
        }
    }

    if (rank == 0) {
        double first = xfer_s[0];
        double idle_max = 0, hol_max = 0;
        for (i = 0; i < idle; i++)
            idle_max = idle_s[i] > idle_max ? idle_s[i] : idle_max;
        double idle_med = bench_median(idle_s, idle);
        printf("idle_rtt_ms %.3f ms\n", 1e3 * idle_med);
        printf("idle_rtt_max_ms %.3f ms\n", 1e3 * idle_max);
        if (nhol > 0) {
            double med;
            for (i = 0; i < nhol; i++)
                hol_max = hol_s[i] > hol_max ? hol_s[i] : hol_max;
            med = bench_median(hol_s, nhol); /* sorts */
            printf("hol_rtt_ms %.3f ms\n", 1e3 * med);
            printf("hol_rtt_p90_ms %.3f ms\n", 1e3 * hol_s[(int)(0.9 * (nhol - 1))]);
            printf("hol_rtt_max_ms %.3f ms\n", 1e3 * hol_max);
            printf("hol_pings %d\n", nhol);
            printf("hol_ratio %.2f\n", med / idle_med);
        }
        printf("xfer_mbit %.1f Mbit/s\n", 8.0 * (double)bytes / bench_median(xfer_s, reps) / 1e6);
        printf("xfer_first_mbit %.1f Mbit/s\n", 8.0 * (double)bytes / first / 1e6);
        fflush(stdout);
    }
    free(big);
    free(idle_s);
    free(hol_s);
    free(xfer_s);
    MPI_Finalize();
    return 0;
}
