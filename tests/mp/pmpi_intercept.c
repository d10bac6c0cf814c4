/* pmpi_intercept: the profiling interface. This program defines MPI_Send itself, counts the calls
 * and forwards them to PMPI_Send; the library must resolve the program's MPI_Send calls to this
 * definition (MPI_Send is a weak symbol or separate from PMPI_Send) and the data must still arrive. */
#include "mptest.h"

static int send_calls = 0;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    send_calls++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int main(int argc, char **argv)
{
    int peer, i, in, n = 5;
    MPI_Request rq;
    mt_init(&argc, &argv);
    peer = mt_partner();

    for (i = 0; i < n; i++) {
        int out = mt_rank * 100 + i;
        MPI_Irecv(&in, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &rq);
        MPI_Send(&out, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MT_CHECK(in == peer * 100 + i, "message %d: got %d", i, in);
    }
    MT_CHECK(send_calls == n, "interposed MPI_Send counted %d calls, expected %d", send_calls, n);
    /* PMPI_Send itself must not come back through the wrapper. */
    {
        int out = 9, before = send_calls;
        MPI_Irecv(&in, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, &rq);
        PMPI_Send(&out, 1, MPI_INT, peer, 6, MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MT_CHECK(in == 9 && send_calls == before, "PMPI_Send went through MPI_Send (%d calls)",
                 send_calls - before);
    }
    return mt_finalize();
}
