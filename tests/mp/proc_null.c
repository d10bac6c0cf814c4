/* proc_null: MPI_PROC_NULL as source or destination in every kind of call completes at once; a
 * receive from it leaves the buffer untouched and gives status source MPI_PROC_NULL, tag
 * MPI_ANY_TAG, count 0: Send/Ssend/Bsend/Rsend, Isend/Irecv/Issend, Recv, Sendrecv, persistent
 * Send_init/Recv_init, Probe/Iprobe (also in probe.c), Mprobe/Mrecv. */
#include "mptest.h"

static void check_null(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    MT_CHECK(st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG && count == 0,
             "%s: %s", what, mt_status_str(st, MPI_INT));
}

int main(int argc, char **argv)
{
    int buf[8], i, flag;
    MPI_Status st;
    MPI_Request r[4];
    mt_init(&argc, &argv);

    for (i = 0; i < 8; i++)
        buf[i] = 1234;
    MPI_Send(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Ssend(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Rsend(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Bsend(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD); /* no buffer attached: legal */
    MPI_Recv(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    check_null(&st, "Recv");
    MPI_Recv(buf, 8, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    check_null(&st, "Recv ANY_TAG");
    MT_CHECK(buf[0] == 1234 && buf[7] == 1234, "receive from PROC_NULL changed the buffer");

    MPI_Isend(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Issend(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[1]);
    MPI_Irecv(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[2]);
    MPI_Irsend(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[3]);
    flag = 0;
    MPI_Test(&r[2], &flag, &st);
    MT_CHECK(flag == 1, "Irecv from PROC_NULL not complete at first Test");
    check_null(&st, "Irecv");
    {
        MPI_Status sts[4];
        MPI_Waitall(4, r, sts);
    }

    MPI_Sendrecv(buf, 8, MPI_INT, MPI_PROC_NULL, 1, buf, 8, MPI_INT, MPI_PROC_NULL, 1,
                 MPI_COMM_WORLD, &st);
    check_null(&st, "Sendrecv");
    MPI_Sendrecv_replace(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    check_null(&st, "Sendrecv_replace");

    MPI_Send_init(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Recv_init(buf, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[1]);
    for (i = 0; i < 3; i++) {
        MPI_Startall(2, r);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Wait(&r[1], &st);
        check_null(&st, "persistent Recv_init");
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);

    MPI_Probe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    check_null(&st, "Probe");
    {
        MPI_Message m;
        MPI_Mprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &m, &st);
        MT_CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) message handle");
        MPI_Mrecv(buf, 8, MPI_INT, &m, &st);
        check_null(&st, "Mrecv(MESSAGE_NO_PROC)");
    }
    MT_CHECK(buf[0] == 1234 && buf[7] == 1234, "receives from PROC_NULL changed the buffer");
    return mt_finalize();
}
