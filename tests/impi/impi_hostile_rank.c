/* impi_hostile_rank: the MPI side of impi_hostile_test.py's host-packet cases. World = this
 * cluster's one rank (rank 0) plus a scripted IMPI peer (rank 1, a plain IMPI 0.0 client).
 * Rank 0 receives one 4-byte MPI_BYTE message from rank 1 (any tag) on MPI_COMM_WORLD, prints
 * it and finalizes (which runs the IMPI FINI handshake with the peer). Prints " No Errors" when
 * the message is "WXYZ". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, n = -1;
    char buf[8] = {0};
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "impi_hostile_rank: needs a world of 2, got %d\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        MPI_Recv(buf, 4, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &n);
        printf("impi_hostile_rank: got '%.4s' (%d bytes, tag %d)\n", buf, n, st.MPI_TAG);
        if (n == 4 && memcmp(buf, "WXYZ", 4) == 0)
            printf(" No Errors\n");
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
