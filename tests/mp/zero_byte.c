/* zero_byte: messages of zero length (NULL and non-NULL buffers, count 0 of MPI_INT and MPI_BYTE)
 * in every send mode, blocking and nonblocking, persistent, with Probe, wildcards and Sendrecv;
 * they match like any message (order with non-empty messages on the same envelope is kept) and
 * report count 0. A zero-byte receive of a non-empty message is MPI_ERR_TRUNCATE. */
#include "mptest.h"

static int peer;

static void check0(const MPI_Status *st, int tag, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    MT_CHECK(st->MPI_SOURCE == peer && st->MPI_TAG == tag && count == 0, "%s: %s", what,
             mt_status_str(st, MPI_INT));
}

int main(int argc, char **argv)
{
    int dummy = 5, one = 77, got, i, bsize, dsize, rc;
    char *battach, *bdetach;
    MPI_Request r[8];
    MPI_Status st;
    mt_init(&argc, &argv);
    peer = mt_partner();
    bsize = 4 * MPI_BSEND_OVERHEAD + 64;
    battach = (char *)mt_malloc((size_t)bsize);
    MPI_Buffer_attach(battach, bsize);

    /* Every mode, receives posted first (so Rsend is legal after the handshake). */
    for (i = 0; i < 4; i++)
        MPI_Irecv(i % 2 ? NULL : &dummy, 0, i % 2 ? MPI_BYTE : MPI_INT, peer, 10 + i,
                  MPI_COMM_WORLD, &r[i]);
    MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 9, NULL, 0, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &st);
    check0(&st, 9, "Sendrecv zero bytes");
    MPI_Isend(NULL, 0, MPI_BYTE, peer, 10, MPI_COMM_WORLD, &r[4]);
    MPI_Issend(&dummy, 0, MPI_INT, peer, 11, MPI_COMM_WORLD, &r[5]);
    MPI_Ibsend(NULL, 0, MPI_INT, peer, 12, MPI_COMM_WORLD, &r[6]);
    MPI_Irsend(NULL, 0, MPI_BYTE, peer, 13, MPI_COMM_WORLD, &r[7]);
    for (i = 0; i < 4; i++) {
        MPI_Wait(&r[i], &st);
        check0(&st, 10 + i, "nonblocking zero-byte");
    }
    MPI_Waitall(4, r + 4, MPI_STATUSES_IGNORE);

    /* Blocking modes between the pair (lower rank sends first; self uses Irecv). */
    for (i = 0; i < 3; i++) {
        MPI_Request rr;
        MPI_Irecv(NULL, 0, MPI_BYTE, peer, 20 + i, MPI_COMM_WORLD, &rr);
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 30, NULL, 0, MPI_BYTE, peer, 30, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (i == 0)
            MPI_Ssend(NULL, 0, MPI_BYTE, peer, 20, MPI_COMM_WORLD);
        else if (i == 1)
            MPI_Bsend(NULL, 0, MPI_BYTE, peer, 21, MPI_COMM_WORLD);
        else
            MPI_Rsend(NULL, 0, MPI_BYTE, peer, 22, MPI_COMM_WORLD);
        MPI_Wait(&rr, &st);
        check0(&st, 20 + i, "blocking-mode zero-byte");
    }

    /* Order on one envelope: empty, one int, empty; with probe and ANY_TAG on ranks != 0. */
    MPI_Isend(NULL, 0, MPI_INT, peer, 40, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&one, 1, MPI_INT, peer, 40, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(NULL, 0, MPI_INT, peer, 40, MPI_COMM_WORLD, &r[2]);
    MPI_Probe(peer, 40, MPI_COMM_WORLD, &st);
    check0(&st, 40, "Probe of zero-byte message");
    got = -1;
    MPI_Recv(&got, 1, MPI_INT, peer, mt_rank ? MPI_ANY_TAG : 40, MPI_COMM_WORLD, &st);
    check0(&st, 40, "first of three");
    MT_CHECK(got == -1, "zero-byte receive wrote the buffer");
    MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 40, MPI_COMM_WORLD, &st);
    MT_CHECK(got == 77, "middle message %d", got);
    /* A zero-count receive of a non-empty message is a truncation. */
    MPI_Isend(&one, 1, MPI_INT, peer, 41, MPI_COMM_WORLD, &r[3]);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Recv(NULL, 0, MPI_INT, peer, 41, MPI_COMM_WORLD, &st);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    {
        int cls = -1;
        MPI_Error_class(rc, &cls);
        MT_CHECK(cls == MPI_ERR_TRUNCATE, "zero-count receive of 4 bytes: class %d", cls);
    }
    MPI_Recv(NULL, 0, MPI_INT, peer, 40, MPI_COMM_WORLD, &st);
    check0(&st, 40, "third of three");
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);

    /* Persistent zero-byte. */
    MPI_Send_init(NULL, 0, MPI_BYTE, peer, 50, MPI_COMM_WORLD, &r[0]);
    MPI_Recv_init(NULL, 0, MPI_BYTE, peer, 50, MPI_COMM_WORLD, &r[1]);
    for (i = 0; i < 20; i++) {
        MPI_Start(&r[1]);
        MPI_Start(&r[0]);
        MPI_Wait(&r[1], &st);
        check0(&st, 50, "persistent zero-byte");
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);

    MPI_Buffer_detach(&bdetach, &dsize);
    free(battach);
    return mt_finalize();
}
