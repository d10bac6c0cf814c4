/* abort_after_init: the last rank calls MPI_Abort(MPI_COMM_WORLD, 7) at once after MPI_Init, while
 * the others go on to MPI_Finalize (issue 16, point 2). The job must end with status 7 and the
 * abort named as its cause. What must *not* happen: another rank, still setting up its shared
 * memory with the aborting one, reporting "MPI_Init failed" and a setting to try (wanmpi did that
 * in 2 of 6 runs on a loaded machine). Run many times by startup_check.sh, and deterministically
 * with startup_shim.c; standard MPI only. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == size - 1) MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Finalize();
    /* Only reached if MPI_Abort did not take the job down: fail. */
    printf("[rank %d] FAIL: the job outlived MPI_Abort\n", rank);
    return 1;
}
