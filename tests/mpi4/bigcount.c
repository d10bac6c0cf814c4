/* bigcount: collectives with counts beyond INT_MAX through the MPI 4.0 large-count API (slow
 * label; ~2.1 GiB per rank). MPI_Bcast_c of 2 GiB + 16 MiB of MPI_BYTE from the last rank, then
 * MPI_Bcast_init_c of the same buffer started twice with new contents; every byte is checked. */
#include "mpi4test.h"
#include <stdlib.h>

static unsigned char pattern(size_t i, int round) {
    return (unsigned char)(i * 131 + (i >> 20) + round * 7);
}

int main(int argc, char** argv) {
    size_t big = ((size_t)2 << 30) + ((size_t)16 << 20), i;
    unsigned char* buf;
    int size, root, round, total;
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    root = size - 1;
    buf = malloc(big);
    if (!buf) {
        printf("[%d] cannot allocate %zu bytes\n", rank, big);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Bcast_init_c(buf, (MPI_Count)big, MPI_BYTE, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    for (round = 0; round < 3; round++) {
        for (i = 0; i < big; i++) buf[i] = rank == root ? pattern(i, round) : 0;
        if (round == 0)
            MPI_Bcast_c(buf, (MPI_Count)big, MPI_BYTE, root, MPI_COMM_WORLD);
        else {
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        for (i = 0; i < big; i++)
            if (buf[i] != pattern(i, round)) {
                if (errs++ < 5) printf("[%d] round %d byte %zu: %u\n", rank, round, i, buf[i]);
            }
    }
    MPI_Request_free(&req);
    total = mpi4_verdict(MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return total;
}
