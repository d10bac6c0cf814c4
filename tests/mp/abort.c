/* abort: MPI_Abort from one rank ends the whole job with a non-zero status. The last rank prints a
 * marker and calls MPI_Abort(MPI_COMM_WORLD, 7); the others block in MPI_Recv and must be killed.
 * Registered WILL_FAIL with a regex on the marker. */
#include "mptest.h"

int main(int argc, char **argv)
{
    int x = 0;
    mt_init(&argc, &argv);
    if (mt_rank == mt_size - 1) {
        printf("abort: rank %d calls MPI_Abort(MPI_COMM_WORLD, 7)\n", mt_rank);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 7);
        printf("[rank %d] FAIL: MPI_Abort returned\n", mt_rank);
    } else {
        MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("[rank %d] FAIL: received a message nobody sent\n", mt_rank);
    }
    fflush(stdout);
    MPI_Finalize();
    return 1;
}
