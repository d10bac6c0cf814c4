/* pingpong: point-to-point latency between ranks 0 and 1 (other ranks idle in MPI_Recv).
 *   pingpong [-m MIN] [-M MAX] [-q]      sizes MIN..MAX bytes, powers of two (default 1..16M)
 * Every round trip is timed on its own; the reported latency is half the median round trip (µs),
 * robust against the scheduler noise of a shared machine. Iterations per size shrink with size
 * (at least 20). Output from rank 0, one line per size: "<bytes> <median_us> <min_us> <iters>".
 * -q: 1/5 of the iterations (quick check of a setup). */
#include <mpi.h>

#include "bench_common.h"

int main(int argc, char **argv)
{
    long min = 1, max = 16 << 20, size;
    int rank, nranks, quick = 0, i;
    unsigned char *buf;
    double *samples;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc)
            min = bench_parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-M") && i + 1 < argc)
            max = bench_parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
    }
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong: needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    buf = (unsigned char *)bench_alloc((size_t)max);
    samples = (double *)bench_alloc(sizeof(double) * 20000);
    if (rank == 0)
        printf("# pingpong: half round trip, median of per-iteration samples\n"
               "# bytes median_us min_us iters\n");

    for (size = min; size <= max; size = size < 1 ? 1 : size * 2) {
        int iters = size <= 4096 ? 10000 : size <= 65536 ? 2000 : size <= (1 << 20) ? 200 : 40;
        int warm = iters / 10 + 2, n = 0;
        if (quick)
            iters = iters / 5 > 20 ? iters / 5 : 20;
        for (i = -warm; i < iters; i++) {
            if (rank == 0) {
                double t0 = MPI_Wtime();
                MPI_Send(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (i >= 0)
                    samples[n++] = (MPI_Wtime() - t0) * 0.5e6;
            } else if (rank == 1) {
                MPI_Recv(buf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            double med = bench_median(samples, n);
            printf("%ld %.3f %.3f %d\n", size, med, samples[0], n);
            fflush(stdout);
        }
        if (size == 0)
            break;
    }
    /* release idle ranks */
    if (rank == 0)
        for (i = 2; i < nranks; i++)
            MPI_Send(NULL, 0, MPI_BYTE, i, 2, MPI_COMM_WORLD);
    else if (rank > 1)
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(buf);
    free(samples);
    MPI_Finalize();
    return 0;
}
