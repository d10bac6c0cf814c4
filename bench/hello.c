/* hello: the smallest MPI program, for start-up timing (the launcher's wall time is what
 * bench/compare-p2p.sh measures). Rank 0 prints one line. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, len;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    if (rank == 0)
        printf("hello: %d ranks, rank 0 on %s\n", size, name);
    MPI_Finalize();
    return 0;
}
