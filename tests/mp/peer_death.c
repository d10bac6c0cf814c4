/* peer_death: a peer that disappears mid-message (issue 2 item 10). Rank 0 posts a 64 MiB
 * receive from the last rank (the victim), which starts sending it and then kills itself with
 * SIGKILL while the transfer is in flight. Rank 0 runs under MPI_ERRORS_RETURN: the large
 * receive may complete or fail (it depends on how far the transfer got), but the next receive
 * from the victim, whose message never comes, must fail with an error instead of hanging, and
 * MPI_Finalize must return. Other ranks wait for rank 0's go-ahead and exit normally.
 * Run with mpirun --disable-auto-cleanup (the job must fail, because a rank died, and rank 0
 * must print "peer_death: rank 0 saw the failure"), and with the default clean-up, where the
 * launcher ends the whole job instead: then only "fails, no hang" is checked. */
#include "mptest.h"

#include <signal.h>

#define BIG (64 << 20)

int main(int argc, char **argv)
{
    int victim, x = 0, rc, cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING];
    unsigned char *buf;

    mt_init(&argc, &argv);
    if (mt_size < 2) {
        printf("peer_death: needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    victim = mt_size - 1;
    buf = (unsigned char *)mt_malloc(BIG);
    if (mt_rank == victim) {
        MPI_Request r;
        int i, flag = 0;
        MPI_Recv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* receive posted */
        mt_fill(buf, BIG, 5);
        MPI_Isend(buf, BIG, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r);
        for (i = 0; i < 20 && !flag; i++)
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        printf("peer_death: rank %d kills itself with the 64 MiB send %s\n", mt_rank,
               flag ? "already complete" : "in flight");
        fflush(stdout);
        raise(SIGKILL);
        return 1; /* not reached */
    }
    if (mt_rank == 0) {
        MPI_Request r;
        MPI_Status st;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Irecv(buf, BIG, MPI_BYTE, victim, 2, MPI_COMM_WORLD, &r);
        MPI_Send(&x, 1, MPI_INT, victim, 1, MPI_COMM_WORLD);
        rc = MPI_Wait(&r, &st);
        printf("peer_death: the 64 MiB receive %s\n", rc == MPI_SUCCESS ? "completed" : "failed");
        fflush(stdout);
        /* This message is never sent: the receive must fail once the death is known. */
        rc = MPI_Recv(&x, 1, MPI_INT, victim, 3, MPI_COMM_WORLD, &st);
        MT_CHECK(rc != MPI_SUCCESS, "receive from a dead rank returned MPI_SUCCESS");
        if (rc != MPI_SUCCESS) {
            msg[0] = 0;
            MPI_Error_class(rc, &cls);
            MPI_Error_string(rc, msg, &len);
            MT_CHECK(len > 0, "empty error string for code %d", rc);
            printf("peer_death: rank 0 saw the failure: class %d: %s\n", cls, msg);
            fflush(stdout);
        }
        for (x = 1; x < victim; x++)
            MPI_Send(&x, 1, MPI_INT, x, 4, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&x, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(buf);
    MPI_Finalize();
    return mt_errs ? 1 : 0;
}
