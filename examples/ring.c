/* A token goes around a ring of ranks many times; every rank checks what it receives, then the
 * job reports the time per hop and a bandwidth figure from a larger ring message. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    MPI_Get_library_version(lib, &len);
    if (rank == 0) printf("%s\n%d ranks\n", lib, size);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);

    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const int laps = 2000;
    long token = 0;
    double t0 = MPI_Wtime();
    for (int lap = 0; lap < laps; ++lap) {
        if (rank == 0) {
            token = lap * (long)size;
            MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (token != lap * (long)size + size - 1) { fprintf(stderr, "bad token\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
        } else {
            MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token++;
            MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;

    const int n = 4 << 20;
    char *buf = malloc(n), *in = malloc(n);
    for (int i = 0; i < n; ++i) buf[i] = (char)(i * 7 + rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    const int reps = 10;
    for (int r = 0; r < reps; ++r)
        MPI_Sendrecv(buf, n, MPI_CHAR, next, 1, in, n, MPI_CHAR, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t2 = MPI_Wtime() - t1;
    for (int i = 0; i < n; ++i)
        if (in[i] != (char)(i * 7 + prev)) { fprintf(stderr, "rank %d: bad data at %d\n", rank, i); MPI_Abort(MPI_COMM_WORLD, 2); }
    if (rank == 0) {
        printf("token ring: %d laps x %d hops in %.3f s = %.2f us per hop\n", laps, size, t,
               t / (laps * (double)size) * 1e6);
        printf("4 MiB ring exchange: %.1f MB/s per rank\n", reps * (double)n / t2 / 1e6);
        printf("all data verified\n");
    }
    free(buf);
    free(in);
    MPI_Finalize();
    return 0;
}
