/* errors_fatal: under the default handler (MPI_ERRORS_ARE_FATAL) an invalid call aborts the whole
 * job with a clear message. The last rank sends to rank `size` (invalid); every other rank waits in
 * MPI_Recv for a message that never comes, so the launcher must kill them. Registered WILL_FAIL
 * with a regex on the error message; " No Errors" is never printed. */
#include "mptest.h"

int main(int argc, char **argv)
{
    int x = 0;
    mt_init(&argc, &argv);
    if (mt_rank == mt_size - 1) {
        printf("errors_fatal: rank %d sends to invalid rank %d under MPI_ERRORS_ARE_FATAL\n",
               mt_rank, mt_size);
        fflush(stdout);
        MPI_Send(&x, 1, MPI_INT, mt_size, 0, MPI_COMM_WORLD);
        printf("[rank %d] FAIL: MPI_Send to an invalid rank returned under ERRORS_ARE_FATAL\n",
               mt_rank);
    } else {
        MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("[rank %d] FAIL: received a message nobody sent\n", mt_rank);
    }
    fflush(stdout);
    MPI_Finalize();
    return 1;
}
