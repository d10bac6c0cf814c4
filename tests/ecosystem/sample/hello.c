/* Sample MPI program for the ecosystem tests: a ring pass and an allreduce. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, token = -1, sum = 0, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &token, 1, MPI_INT,
                 (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (token != (rank + size - 1) % size) errs++;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size * (size - 1) / 2) errs++;
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(errs ? " Found %d errors (C)\n" : " No Errors (C)\n", errs);
    MPI_Finalize();
    return 0;
}
