/* A known marker across clusters, for the capture and stranger tests of issue 13 (wan.sec_*):
 *
 *   marker SECONDS
 *
 * For SECONDS seconds rank 0 sends the last rank (another cluster) 64 KiB messages filled with
 * the ASCII marker "WANMPI-PLAINTEXT-MARKER-" and that rank checks every byte; both then print
 * what they did. With WANMPI_WAN_SECURITY=tls a raw capture in the router namespace must never
 * see the marker, without it it must. A stranger connecting to the ranks' host sockets meanwhile
 * must be refused without disturbing the run. Standard MPI only; prints " No Errors".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEN (64 << 10)
static const char kMarker[] = "WANMPI-PLAINTEXT-MARKER-";

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double secs = argc > 1 ? atof(argv[1]) : 3.0;
    char* buf = malloc(LEN);
    char* want = malloc(LEN);
    for (int i = 0; i < LEN; ++i) want[i] = kMarker[i % (sizeof kMarker - 1)];
    int errors = 0, n = 0, more = 1, last = size - 1;
    double t0 = MPI_Wtime();
    while (more) {
        if (rank == 0) {
            more = MPI_Wtime() - t0 < secs;
            MPI_Send(&more, 1, MPI_INT, last, 1, MPI_COMM_WORLD);
            if (more) MPI_Send(want, LEN, MPI_CHAR, last, 2, MPI_COMM_WORLD);
        } else if (rank == last) {
            MPI_Recv(&more, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (more) {
                MPI_Recv(buf, LEN, MPI_CHAR, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (memcmp(buf, want, LEN) != 0) errors++;
            }
        } else {
            more = 0;
        }
        if (more) {
            n++;
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == last) printf("marker: %d messages of %d bytes checked\n", n, LEN);
    if (rank == 0 && errors == 0) printf(" No Errors\n");
    free(buf);
    free(want);
    MPI_Finalize();
    return errors != 0;
}
