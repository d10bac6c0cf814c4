/* ring: a token passed around all ranks, MSGS messages in total (default 10,000: each hop is one
 * message, rounded up to whole laps), 8 bytes each. Every hop needs the next rank to wake up, so
 * on an oversubscribed machine this measures how fast a waiting rank reacts (spinning vs.
 * blocking in the kernel).
 *   ring [-n MSGS] [-s BYTES] [-r RUNS]
 * One warm-up lap, then RUNS timed runs (default 3), timed on rank 0 from its first send to the
 * arrival of the last hop. Output from rank 0:
 *   "ring <ranks> <msgs> <median_s> <us_per_msg> <min_s>" */
#include <mpi.h>

#include "bench_common.h"

int main(int argc, char **argv)
{
    int rank, nranks, msgs = 10000, bytes = 8, runs = 3, i, r, hop;
    unsigned char *buf;
    double t[32];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            msgs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            bytes = (int)bench_parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            runs = atoi(argv[++i]);
    }
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "ring: needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (runs < 1 || runs > 32)
        runs = 3;
    if (bytes < 4)
        bytes = 4;
    msgs = (msgs + nranks - 1) / nranks * nranks; /* the last hop lands on rank 0 */
    buf = (unsigned char *)bench_alloc((size_t)bytes);
    {
        int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
        for (r = -1; r < runs; r++) {
            int total = r < 0 ? nranks : msgs;
            if (rank == 0) {
                double t0 = MPI_Wtime();
                hop = 1;
                memcpy(buf, &hop, 4);
                MPI_Send(buf, bytes, MPI_BYTE, next, 1, MPI_COMM_WORLD);
                for (;;) {
                    MPI_Recv(buf, bytes, MPI_BYTE, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    memcpy(&hop, buf, 4);
                    if (hop == total)
                        break;
                    hop++;
                    memcpy(buf, &hop, 4);
                    MPI_Send(buf, bytes, MPI_BYTE, next, 1, MPI_COMM_WORLD);
                }
                if (r >= 0)
                    t[r] = MPI_Wtime() - t0;
                hop = -1; /* stop marker, one untimed lap */
                memcpy(buf, &hop, 4);
                MPI_Send(buf, bytes, MPI_BYTE, next, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, bytes, MPI_BYTE, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (;;) {
                    MPI_Recv(buf, bytes, MPI_BYTE, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    memcpy(&hop, buf, 4);
                    if (hop >= 0) {
                        hop++;
                        memcpy(buf, &hop, 4);
                    }
                    MPI_Send(buf, bytes, MPI_BYTE, next, 1, MPI_COMM_WORLD);
                    if (hop < 0)
                        break;
                }
            }
        }
    }
    if (rank == 0) {
        double med, mn = t[0];
        for (i = 1; i < runs; i++)
            if (t[i] < mn)
                mn = t[i];
        printf("# runs_s");
        for (i = 0; i < runs; i++)
            printf(" %.4f", t[i]);
        printf("\n");
        med = bench_median(t, runs);
        printf("# ring: ranks msgs median_s us_per_msg min_s\nring %d %d %.4f %.2f %.4f\n",
               nranks, msgs, med, med / msgs * 1e6, mn);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
