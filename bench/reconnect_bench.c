/* reconnect_bench: how long traffic between two sites stops when their connection is reset.
 *
 *   reconnect_bench SECONDS
 *
 * Ranks 0 and size/2 (one per site) ping-pong 1 byte for SECONDS seconds, each message
 * carrying a sequence number the other checks. bench/compare-security.sh cuts the inter-site
 * connection once (ss -K) half-way. Output (rank 0):
 *   rtt_us <median round trip>, stall_ms <longest round trip>, lost <messages missing or out of
 *   order (must be 0)>, iters <round trips>
 * The recovery time is stall_ms - rtt: from the reset to traffic flowing again. Standard MPI:
 * runs under Open MPI too (which does not survive the cut: that is the comparison).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double secs = argc > 1 ? atof(argv[1]) : 6;
    int peer = size / 2;
    long lost = 0, n = 0, cap = 1 << 20;
    double* rtt = malloc(sizeof(double) * (size_t)cap);
    int more = 1;
    long seq = 0, got;
    double t0 = MPI_Wtime();
    while (more) {
        if (rank == 0) {
            double a = MPI_Wtime();
            more = a - t0 < secs;
            long m[2] = {more, seq};
            MPI_Send(m, 2, MPI_LONG, peer, 0, MPI_COMM_WORLD);
            if (!more) break;
            MPI_Recv(&got, 1, MPI_LONG, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (got != seq) lost++;
            if (n < cap) rtt[n++] = MPI_Wtime() - a;
            seq++;
        } else if (rank == peer) {
            long m[2];
            MPI_Recv(m, 2, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            more = (int)m[0];
            if (!more) break;
            if (m[1] != seq) lost++;
            MPI_Send(&m[1], 1, MPI_LONG, 0, 0, MPI_COMM_WORLD);
            seq++;
        } else {
            more = 0;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &lost, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && n > 0) {
        qsort(rtt, (size_t)n, sizeof *rtt, cmp);
        printf("rtt_us %.1f\nstall_ms %.1f\nlost %ld\niters %ld\n", rtt[n / 2] * 1e6,
               rtt[n - 1] * 1e3, lost, n);
    }
    free(rtt);
    MPI_Finalize();
    return 0;
}
