/* bandwidth: streaming bandwidth from rank 0 to rank 1 (as OSU's osu_bw).
 *   bandwidth [-m MIN] [-M MAX] [-w WINDOW] [-q]   sizes MIN..MAX bytes, powers of two
 * Rank 1 pre-posts a window of receives; rank 0 sends a window of MPI_Isend, waits for them, and
 * rank 1 answers each window with a 4-byte ack. Each window is one sample (bytes / time from the
 * first send to the ack); the reported value is the median sample in MB/s (10^6 bytes/s).
 * The window shrinks for large messages so one window holds at most 64 MiB.
 * Output from rank 0, one line per size: "<bytes> <median_MBps> <max_MBps> <windows>". */
#include <mpi.h>

#include "bench_common.h"

int main(int argc, char **argv)
{
    long min = 1, max = 16 << 20, size;
    int rank, nranks, quick = 0, window = 64, i, w;
    unsigned char *buf;
    double samples[1000];
    MPI_Request req[256];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc)
            min = bench_parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-M") && i + 1 < argc)
            max = bench_parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-w") && i + 1 < argc)
            window = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
    }
    if (window < 1 || window > 256)
        window = 64;
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "bandwidth: needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    /* Every message of a window has its own slice, as a real application's would. */
    {
        long per = max, cap = 64L << 20;
        long win = per * window > cap ? (cap / per > 1 ? cap / per : 1) : window;
        buf = (unsigned char *)bench_alloc((size_t)(per * win));
    }
    if (rank == 0)
        printf("# bandwidth: rank 0 -> 1, window of MPI_Isend, median of per-window samples\n"
               "# bytes median_MBps max_MBps windows\n");

    for (size = min; size <= max; size *= 2) {
        int win = size * window > (64L << 20) ? (int)((64L << 20) / size) : window;
        int loops = size <= 65536 ? 100 : size <= (1 << 20) ? 30 : 12, warm = 3, n = 0;
        char ack[4];
        if (win < 1)
            win = 1;
        if (quick)
            loops = loops / 4 > 5 ? loops / 4 : 5;
        for (i = -warm; i < loops; i++) {
            if (rank == 0) {
                double t0 = MPI_Wtime();
                for (w = 0; w < win; w++)
                    MPI_Isend(buf + (size_t)w * (size_t)size, (int)size, MPI_BYTE, 1, 1,
                              MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(win, req, MPI_STATUSES_IGNORE);
                MPI_Recv(ack, 4, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (i >= 0)
                    samples[n++] = (double)size * win / (MPI_Wtime() - t0) / 1e6;
            } else if (rank == 1) {
                for (w = 0; w < win; w++)
                    MPI_Irecv(buf + (size_t)w * (size_t)size, (int)size, MPI_BYTE, 0, 1,
                              MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(win, req, MPI_STATUSES_IGNORE);
                MPI_Send(ack, 4, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            double med = bench_median(samples, n);
            printf("%ld %.1f %.1f %d\n", size, med, samples[n - 1], n);
            fflush(stdout);
        }
    }
    if (rank == 0)
        for (i = 2; i < nranks; i++)
            MPI_Send(NULL, 0, MPI_BYTE, i, 3, MPI_COMM_WORLD);
    else if (rank > 1)
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(buf);
    MPI_Finalize();
    return 0;
}
