/* blocking_modes: the four send modes with blocking receives, 0 B to 1 MiB (across the
 * eager/rendezvous boundary of any implementation), between pairs and to self:
 *   MPI_Send/MPI_Recv, MPI_Ssend, MPI_Rsend (after the receiver has posted and said so),
 *   MPI_Bsend with MPI_Buffer_attach/detach: both partners Bsend several messages before either
 *   receives (only legal because Bsend is local), overwrite the send buffer at once (the data
 *   must have been copied), and detach returns the attached buffer and size;
 *   synchronous mode really synchronizes: an MPI_Issend does not complete (MPI_Test stays false)
 *   while the receiver has provably not posted its receive. */
#include "mptest.h"

static const int sizes[] = {0, 1, 100, 8192, 65536, 1 << 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXSZ (1 << 20)

enum { MODE_SEND, MODE_SSEND, MODE_RSEND };
static const char *mode_name[] = {"Send", "Ssend", "Rsend"};

static unsigned char *sbuf, *rbuf;

static void check_recv(const MPI_Status *st, int n, int src, int tag, uint64_t seed,
                       const char *what)
{
    int count = -1;
    long long bad;
    MPI_Get_count(st, MPI_BYTE, &count);
    MT_CHECK(count == n && st->MPI_SOURCE == src && st->MPI_TAG == tag, "%s %d B: %s", what, n,
             mt_status_str(st, MPI_BYTE));
    bad = mt_verify(rbuf, (size_t)n, seed);
    MT_CHECK(bad < 0, "%s %d B: data mismatch at byte %lld", what, n, bad);
}

static void do_send(int mode, int n, int peer, int tag)
{
    if (mode == MODE_SEND)
        MPI_Send(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    else if (mode == MODE_SSEND)
        MPI_Ssend(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    else
        MPI_Rsend(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
}

static void exchange(int mode, int n, int tag)
{
    int peer = mt_partner();
    MPI_Status st;
    uint64_t myseed = (uint64_t)(mt_rank * 1000 + tag), peerseed = (uint64_t)(peer * 1000 + tag);
    mt_fill(sbuf, (size_t)n, myseed);
    memset(rbuf, 0, (size_t)n);
    if (peer == mt_rank || mode == MODE_RSEND) {
        /* Receive posted first: required for Rsend, and the only safe order to oneself. */
        MPI_Request rq;
        MPI_Irecv(rbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq);
        if (mode == MODE_RSEND && peer != mt_rank)
            MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, tag + 1, NULL, 0, MPI_BYTE, peer, tag + 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* "my receive is posted" */
        do_send(mode, n, peer, tag);
        MPI_Wait(&rq, &st);
    } else if (mt_rank < peer) {
        do_send(mode, n, peer, tag);
        MPI_Recv(rbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(rbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
        do_send(mode, n, peer, tag);
    }
    check_recv(&st, n, peer, tag, peerseed, mode_name[mode]);
}

static void bsend_test(void)
{
    enum { NMSG = 3 };
    int peer = mt_partner(), i, k, bufsize = 0, dsize = -1;
    char *attach, *detached = NULL;
    for (i = 0; i < NSIZES; i++)
        bufsize += NMSG * (sizes[i] + MPI_BSEND_OVERHEAD);
    attach = (char *)mt_malloc((size_t)bufsize);
    MT_MPI(MPI_Buffer_attach(attach, bufsize));
    for (i = 0; i < NSIZES; i++) {
        for (k = 0; k < NMSG; k++) {
            int tag = 100 + i * NMSG + k;
            mt_fill(sbuf, (size_t)sizes[i], (uint64_t)(mt_rank * 1000 + tag));
            MPI_Bsend(sbuf, sizes[i], MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            memset(sbuf, 0xEE, (size_t)sizes[i]); /* Bsend copied it; this must not be seen */
        }
    }
    for (i = 0; i < NSIZES; i++) {
        for (k = 0; k < NMSG; k++) {
            int tag = 100 + i * NMSG + k;
            MPI_Status st;
            memset(rbuf, 0, (size_t)sizes[i]);
            MPI_Recv(rbuf, sizes[i], MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
            check_recv(&st, sizes[i], peer, tag, (uint64_t)(peer * 1000 + tag), "Bsend");
        }
    }
    MT_MPI(MPI_Buffer_detach(&detached, &dsize));
    MT_CHECK(detached == attach && dsize == bufsize, "Buffer_detach gave %p/%d, attached %p/%d",
             (void *)detached, dsize, (void *)attach, bufsize);
    free(attach);
}

static void ssend_sync_test(int n)
{
    int peer = mt_partner(), i, flag = 0;
    MPI_Request rq;
    MPI_Status st;
    mt_fill(sbuf, (size_t)n, 77);
    if (peer == mt_rank) {
        MPI_Issend(sbuf, n, MPI_BYTE, mt_rank, 200, MPI_COMM_WORLD, &rq);
        for (i = 0; i < 100 && !flag; i++)
            MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        MT_CHECK(!flag, "Issend to self of %d B completed with no receive posted", n);
        MPI_Recv(rbuf, n, MPI_BYTE, mt_rank, 200, MPI_COMM_WORLD, &st);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        check_recv(&st, n, mt_rank, 200, 77, "Issend self");
    } else if (mt_rank < peer) {
        MPI_Issend(sbuf, n, MPI_BYTE, peer, 200, MPI_COMM_WORLD, &rq);
        for (i = 0; i < 100 && !flag; i++)
            MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        MT_CHECK(!flag, "Issend of %d B completed before the receiver posted its receive", n);
        MPI_Send(NULL, 0, MPI_BYTE, peer, 201, MPI_COMM_WORLD); /* "go ahead and receive" */
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(NULL, 0, MPI_BYTE, peer, 201, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(rbuf, n, MPI_BYTE, peer, 200, MPI_COMM_WORLD, &st);
        check_recv(&st, n, peer, 200, 77, "Issend");
    }
}

int main(int argc, char **argv)
{
    int mode, i;
    mt_init(&argc, &argv);
    sbuf = (unsigned char *)mt_malloc(MAXSZ);
    rbuf = (unsigned char *)mt_malloc(MAXSZ);

    for (mode = MODE_SEND; mode <= MODE_RSEND; mode++)
        for (i = 0; i < NSIZES; i++)
            exchange(mode, sizes[i], 10 + mode * 20 + i * 2);
    bsend_test();
    ssend_sync_test(0);
    ssend_sync_test(8);
    ssend_sync_test(1 << 20);

    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
