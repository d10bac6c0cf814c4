/* cancel: MPI_Cancel and MPI_Test_cancelled.
 *   Receives: an Irecv that nothing matches (specific and MPI_ANY_SOURCE) is cancelled for sure;
 *   a persistent receive is cancelled, then started again and completes normally; cancelling a
 *   receive that already completed (seen with MPI_Request_get_status) has no effect.
 *   Sends (Isend eager and rendezvous size, Issend): cancelling may legally fail, so only
 *   consistency is checked: the sender reports whether its cancel succeeded, then sends a marker
 *   on the same envelope; by non-overtaking the receiver must get the original first if and only
 *   if the cancel failed. */
#include "mptest.h"

#define MARKER 0x5A5A1234

static int peer;

static void cancel_recv(void)
{
    int buf[4], flag = -1;
    MPI_Request r;
    MPI_Status st;

    MPI_Irecv(buf, 4, MPI_INT, peer, 31000, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    MT_CHECK(flag == 1, "unmatched Irecv not cancelled");
    MT_CHECK(r == MPI_REQUEST_NULL, "Wait after Cancel left the request");

    MPI_Irecv(buf, 4, MPI_INT, MPI_ANY_SOURCE, 31001, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    flag = 0;
    while (!flag)
        MPI_Test(&r, &flag, &st);
    flag = -1;
    MPI_Test_cancelled(&st, &flag);
    MT_CHECK(flag == 1, "unmatched ANY_SOURCE Irecv not cancelled");
}

static void cancel_persistent_recv(void)
{
    int in = -1, out = 4711 + mt_rank, flag = -1;
    MPI_Request r, s;
    MPI_Status st;

    MPI_Recv_init(&in, 1, MPI_INT, peer, 31002, MPI_COMM_WORLD, &r);
    MPI_Start(&r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    MT_CHECK(flag == 1, "persistent receive not cancelled");
    MT_CHECK(r != MPI_REQUEST_NULL, "Wait freed a persistent request");
    /* Reuse after cancel: once both sides have cancelled (handshake), restart and exchange. */
    MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 31004, NULL, 0, MPI_BYTE, peer, 31004, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Start(&r);
    MPI_Isend(&out, 1, MPI_INT, peer, 31002, MPI_COMM_WORLD, &s);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    MT_CHECK(flag == 0 && in == 4711 + peer, "restarted persistent receive: cancelled %d value %d",
             flag, in);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
}

static void cancel_completed_recv(void)
{
    int in = -1, out = 99 + mt_rank, flag = 0;
    MPI_Request r, s;
    MPI_Status st;
    MPI_Irecv(&in, 1, MPI_INT, peer, 31003, MPI_COMM_WORLD, &r);
    MPI_Isend(&out, 1, MPI_INT, peer, 31003, MPI_COMM_WORLD, &s);
    while (!flag)
        MPI_Request_get_status(r, &flag, &st);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    MT_CHECK(flag == 0 && in == 99 + peer && st.MPI_SOURCE == peer,
             "cancel after completion: cancelled %d value %d", flag, in);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
}

/* mode 0: Isend, 1: Issend. Both partners post the send and cancel it, handshake (so each cancel
 * was requested before any matching receive exists), and only then post the receive: MPI says Wait
 * on a cancelled send is local, but MPICH and Open MPI block there until the send matches when
 * they cannot cancel it, so the receive must be posted before that Wait. */
static int cancel_send(int mode, int n, int tag)
{
    unsigned char *sbuf = (unsigned char *)mt_malloc((size_t)n), *rbuf;
    int marker = MARKER, cancelled = -1, peer_cancelled = -1, count;
    MPI_Request s, m, f, r;
    MPI_Status st;

    rbuf = (unsigned char *)mt_malloc((size_t)n + 4);
    mt_fill(sbuf, (size_t)n, (uint64_t)(mt_rank + tag));
    if (mode == 0)
        MPI_Isend(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &s);
    else
        MPI_Issend(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &s);
    MPI_Cancel(&s);
    MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, tag + 2, NULL, 0, MPI_BYTE, peer, tag + 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Irecv(rbuf, n + 4, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
    MPI_Wait(&s, &st);
    MPI_Test_cancelled(&st, &cancelled);
    MPI_Isend(&marker, 1, MPI_INT, peer, tag, MPI_COMM_WORLD, &m);
    MPI_Isend(&cancelled, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, &f);

    MPI_Recv(&peer_cancelled, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (peer_cancelled) {
        int v = 0;
        if (count >= 4)
            memcpy(&v, rbuf, sizeof v);
        MT_CHECK(count == 4 && v == MARKER,
                 "%s of %d B: sender cancelled it, but %d bytes arrived before the marker",
                 mode ? "Issend" : "Isend", n, count);
    } else {
        long long bad = mt_verify(rbuf, (size_t)n, (uint64_t)(peer + tag));
        MT_CHECK(count == n && bad < 0, "%s of %d B not cancelled, but received %d B (bad %lld)",
                 mode ? "Issend" : "Isend", n, count, bad);
        MPI_Recv(rbuf, 4, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st); /* the marker */
    }
    MPI_Wait(&m, MPI_STATUS_IGNORE);
    MPI_Wait(&f, MPI_STATUS_IGNORE);
    free(sbuf);
    free(rbuf);
    return cancelled;
}

int main(int argc, char **argv)
{
    int ncancel = 0;
    mt_init(&argc, &argv);
    peer = mt_partner();
    cancel_recv();
    cancel_persistent_recv();
    cancel_completed_recv();
    ncancel += cancel_send(0, 8, 100);
    ncancel += cancel_send(0, 1 << 20, 110);
    ncancel += cancel_send(1, 8, 120);
    ncancel += cancel_send(1, 1 << 20, 130);
    if (mt_rank == 0)
        printf("cancel: %d of 4 send cancels took effect on rank 0\n", ncancel);
    return mt_finalize();
}
