/* probe: MPI_Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv, eager and rendezvous sizes:
 *   Probe/Iprobe report source, tag and count before the receive, with specific and wildcard
 *   source/tag, and do not consume the message;
 *   Mprobe/Improbe remove the message from matching: a later Probe on the same envelope sees the
 *   next message, and Mrecv/Imrecv receive exactly the matched one (message handle becomes
 *   MPI_MESSAGE_NULL);
 *   probing MPI_PROC_NULL returns at once (MPI_MESSAGE_NO_PROC for Mprobe, Mrecv of it is empty);
 *   Iprobe for a message that is never sent keeps returning false. */
#include "mptest.h"

static const int sizes[] = {0, 4, 1000, 70000, 1 << 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXSZ (1 << 20)

static int peer;
static unsigned char *rbuf;

static void check(const MPI_Status *st, int src, int tag, int n, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    MT_CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag && count == n, "%s: %s, expected %d/%d/%d",
             what, mt_status_str(st, MPI_BYTE), src, tag, n);
}

static void check_data(int n, uint64_t seed, const char *what)
{
    long long bad = mt_verify(rbuf, (size_t)n, seed);
    MT_CHECK(bad < 0, "%s: %d B mismatch at %lld", what, n, bad);
}

/* Each phase: everyone Isends to the partner, then receives in the way under test. */
int main(int argc, char **argv)
{
    unsigned char *sbuf[2 * NSIZES];
    MPI_Request sreq[2 * NSIZES];
    int i, flag;
    MPI_Status st;
    MPI_Message msg;

    mt_init(&argc, &argv);
    peer = mt_partner();
    rbuf = (unsigned char *)mt_malloc(MAXSZ);
    for (i = 0; i < 2 * NSIZES; i++)
        sbuf[i] = (unsigned char *)mt_malloc(MAXSZ);

    /* Phase 1: Probe / Iprobe then Recv. */
    for (i = 0; i < NSIZES; i++) {
        mt_fill(sbuf[i], (size_t)sizes[i], (uint64_t)(mt_rank * 100 + i));
        MPI_Isend(sbuf[i], sizes[i], MPI_BYTE, peer, 10 + i, MPI_COMM_WORLD, &sreq[i]);
    }
    for (i = 0; i < NSIZES; i++) {
        int n = sizes[i], count;
        if (i % 2 == 0) {
            MPI_Probe(i % 4 ? peer : MPI_ANY_SOURCE, 10 + i, MPI_COMM_WORLD, &st);
            check(&st, peer, 10 + i, n, "Probe");
        } else {
            do
                MPI_Iprobe(peer, 10 + i, MPI_COMM_WORLD, &flag, &st);
            while (!flag);
            check(&st, peer, 10 + i, n, "Iprobe");
        }
        /* Probing again sees the same message. */
        MPI_Probe(peer, 10 + i, MPI_COMM_WORLD, &st);
        check(&st, peer, 10 + i, n, "second Probe");
        MPI_Get_count(&st, MPI_BYTE, &count);
        /* Receive with the probed size exactly. */
        MPI_Recv(rbuf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
        check(&st, peer, 10 + i, n, "Recv after probe");
        check_data(n, (uint64_t)(peer * 100 + i), "Recv after probe");
    }
    /* ANY_TAG probe sees the first message in order. */
    {
        int a = 1, b = 2, x = 0;
        MPI_Request r2[2];
        MPI_Isend(&a, 1, MPI_INT, peer, 50, MPI_COMM_WORLD, &r2[0]);
        MPI_Isend(&b, 1, MPI_INT, peer, 51, MPI_COMM_WORLD, &r2[1]);
        MPI_Probe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MT_CHECK(st.MPI_TAG == 50, "ANY_TAG probe saw tag %d before tag 50", st.MPI_TAG);
        MPI_Recv(&x, 1, MPI_INT, peer, 51, MPI_COMM_WORLD, &st);
        MT_CHECK(x == 2, "tag 51 value %d", x);
        /* Full wildcard; on rank 0 not with MPI_ANY_TAG, since a rank that already finished may
         * have sent its harness message (see mptest.h). */
        MPI_Probe(MPI_ANY_SOURCE, mt_rank == 0 && mt_size > 1 ? 50 : MPI_ANY_TAG, MPI_COMM_WORLD,
                  &st);
        MT_CHECK(st.MPI_TAG == 50 && st.MPI_SOURCE == peer, "wildcard probe: %s",
                 mt_status_str(&st, MPI_INT));
        MPI_Recv(&x, 1, MPI_INT, peer, 50, MPI_COMM_WORLD, &st);
        MT_CHECK(x == 1, "tag 50 value %d", x);
        MPI_Waitall(2, r2, MPI_STATUSES_IGNORE);
    }
    MPI_Waitall(NSIZES, sreq, MPI_STATUSES_IGNORE);

    /* Phase 2: two messages per size on one envelope; Mprobe/Improbe take the first, a Probe then
     * sees the second, Mrecv/Imrecv deliver the first. */
    for (i = 0; i < NSIZES; i++) {
        mt_fill(sbuf[2 * i], (size_t)sizes[i], (uint64_t)(mt_rank * 100 + 2 * i + 1000));
        MPI_Isend(sbuf[2 * i], sizes[i], MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD, &sreq[2 * i]);
        mt_fill(sbuf[2 * i + 1], (size_t)sizes[i] / 2, (uint64_t)(mt_rank * 100 + 2 * i + 1001));
        MPI_Isend(sbuf[2 * i + 1], sizes[i] / 2, MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD,
                  &sreq[2 * i + 1]);
    }
    for (i = 0; i < NSIZES; i++) {
        int n = sizes[i], tag = 100 + i;
        msg = MPI_MESSAGE_NULL;
        if (i % 2 == 0) {
            MPI_Mprobe(i % 4 ? peer : MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &msg, &st);
            check(&st, peer, tag, n, "Mprobe");
        } else {
            do
                MPI_Improbe(peer, i % 3 ? tag : MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
            while (!flag);
            check(&st, peer, tag, n, "Improbe");
        }
        MT_CHECK(msg != MPI_MESSAGE_NULL, "matched message handle is MPI_MESSAGE_NULL");
        /* The matched message is gone from the queue: Probe sees the second one. */
        MPI_Probe(peer, tag, MPI_COMM_WORLD, &st);
        check(&st, peer, tag, n / 2, "Probe after Mprobe");
        memset(rbuf, 0, (size_t)n);
        if (i % 2 == 0) {
            MPI_Mrecv(rbuf, n, MPI_BYTE, &msg, &st);
        } else {
            MPI_Request r;
            MPI_Imrecv(rbuf, n, MPI_BYTE, &msg, &r);
            MPI_Wait(&r, &st);
        }
        MT_CHECK(msg == MPI_MESSAGE_NULL, "Mrecv/Imrecv did not reset the message handle");
        check(&st, peer, tag, n, i % 2 ? "Imrecv" : "Mrecv");
        check_data(n, (uint64_t)(peer * 100 + 2 * i + 1000), "Mrecv/Imrecv");
        /* The second message, through Mprobe too. */
        MPI_Mprobe(peer, tag, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(rbuf, n, MPI_BYTE, &msg, &st);
        check(&st, peer, tag, n / 2, "second Mrecv");
        check_data(n / 2, (uint64_t)(peer * 100 + 2 * i + 1001), "second Mrecv");
    }
    MPI_Waitall(2 * NSIZES, sreq, MPI_STATUSES_IGNORE);

    /* Phase 3: MPI_PROC_NULL. */
    MPI_Probe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
    check(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, "Probe(PROC_NULL)");
    flag = 0;
    MPI_Iprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &st);
    MT_CHECK(flag == 1, "Iprobe(PROC_NULL) flag %d", flag);
    check(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, "Iprobe(PROC_NULL)");
    msg = MPI_MESSAGE_NULL;
    MPI_Mprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &msg, &st);
    MT_CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) did not give MPI_MESSAGE_NO_PROC");
    check(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, "Mprobe(PROC_NULL)");
    MPI_Mrecv(rbuf, 10, MPI_BYTE, &msg, &st);
    check(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, "Mrecv(NO_PROC)");
    MT_CHECK(msg == MPI_MESSAGE_NULL, "Mrecv(NO_PROC) did not reset the handle");
    flag = 0;
    msg = MPI_MESSAGE_NULL;
    MPI_Improbe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &msg, &st);
    MT_CHECK(flag == 1 && msg == MPI_MESSAGE_NO_PROC, "Improbe(PROC_NULL) flag %d", flag);
    {
        MPI_Request r;
        MPI_Imrecv(rbuf, 10, MPI_BYTE, &msg, &r);
        MPI_Wait(&r, &st);
        check(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, "Imrecv(NO_PROC)");
    }

    /* Phase 4: nothing is ever sent with tag 31999; Iprobe and Improbe must say so. */
    for (i = 0; i < 100; i++) {
        MPI_Iprobe(MPI_ANY_SOURCE, 31999, MPI_COMM_WORLD, &flag, &st);
        MT_CHECK(!flag, "Iprobe found a message that was never sent: %s",
                 mt_status_str(&st, MPI_BYTE));
        MPI_Improbe(MPI_ANY_SOURCE, 31999, MPI_COMM_WORLD, &flag, &msg, &st);
        MT_CHECK(!flag, "Improbe found a message that was never sent");
        if (flag)
            break;
    }

    free(rbuf);
    for (i = 0; i < 2 * NSIZES; i++)
        free(sbuf[i]);
    return mt_finalize();
}
