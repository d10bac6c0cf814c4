/* errhan_abort: MPI_ERRORS_ABORT on a communicator: an error raised there ends the job (all of
 * it: the communicator here spans every process) with a non-zero status and a message naming the
 * error. Registered WILL_FAIL with a regex on "rank" (the message of MPI_ERR_RANK). The
 * program prints " No Errors" only if the failing call returned, which it must not. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, buf = 0;
    MPI_Comm d;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
#if !defined(MPI_ERRORS_ABORT) || (defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000)
    /* MPI-3 libraries lack MPI_ERRORS_ABORT; MPICH 4.0 asserts on it */
    MPI_Comm_set_errhandler(d, MPI_ERRORS_ARE_FATAL);
#else
    MPI_Comm_set_errhandler(d, MPI_ERRORS_ABORT);
#endif
    if (rank == 0) {
        MPI_Send(&buf, 1, MPI_INT, size + 3, 0, d); /* invalid rank: aborts */
        printf(" No Errors\n");                     /* not reached */
        fflush(stdout);
    }
    MPI_Recv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* blocks */
    MPI_Finalize();
    return 0;
}
