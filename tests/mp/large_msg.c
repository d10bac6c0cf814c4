/* large_msg [MIB]: large messages (default 64 MiB) between partners and to self: blocking
 * Send/Recv in both directions, Isend/Irecv exchanged simultaneously, Sendrecv, a receive into a
 * larger buffer (count reports the message size), a receive posted before vs. after the send,
 * and messages at unaligned offsets; every byte checked. */
#include "mptest.h"

static unsigned char *sbuf, *rbuf;
static size_t nbytes;
static int peer;

static void verify(const MPI_Status *st, size_t n, uint64_t seed, const unsigned char *b,
                   const char *what)
{
    int count = -1;
    long long bad;
    MPI_Get_count(st, MPI_BYTE, &count);
    MT_CHECK(count == (int)n && st->MPI_SOURCE == peer, "%s: %s, expected %zu B", what,
             mt_status_str(st, MPI_BYTE), n);
    bad = mt_verify(b, n, seed);
    MT_CHECK(bad < 0, "%s: %zu B mismatch at byte %lld", what, n, bad);
}

int main(int argc, char **argv)
{
    MPI_Status st;
    MPI_Request r[2];
    int mib;

    mt_init(&argc, &argv);
    mib = argc > 1 ? atoi(argv[1]) : 64;
    nbytes = (size_t)mib << 20;
    peer = mt_partner();
    sbuf = (unsigned char *)mt_malloc(nbytes + 64);
    rbuf = (unsigned char *)mt_malloc(nbytes + 64);

    /* 1: blocking, lower rank first (self: Irecv first). */
    mt_fill(sbuf, nbytes, (uint64_t)mt_rank + 1);
    if (peer == mt_rank) {
        MPI_Irecv(rbuf, (int)nbytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Send(sbuf, (int)nbytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Wait(&r[0], &st);
    } else if (mt_rank < peer) {
        MPI_Send(sbuf, (int)nbytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)nbytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(rbuf, (int)nbytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st);
        MPI_Send(sbuf, (int)nbytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
    verify(&st, nbytes, (uint64_t)peer + 1, rbuf, "Send/Recv");

    /* 2: simultaneous Isend/Irecv, receive buffer larger than the message. */
    mt_fill(sbuf, nbytes, (uint64_t)mt_rank + 11);
    MPI_Isend(sbuf, (int)nbytes, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(rbuf, (int)nbytes + 64, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r[1]);
    MPI_Wait(&r[1], &st);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    verify(&st, nbytes, (uint64_t)peer + 11, rbuf, "Isend/Irecv");

    /* 3: Sendrecv at odd offsets into and out of the buffers. */
    mt_fill(sbuf + 3, nbytes - 8, (uint64_t)mt_rank + 21);
    MPI_Sendrecv(sbuf + 3, (int)nbytes - 8, MPI_BYTE, peer, 3, rbuf + 5, (int)nbytes - 8, MPI_BYTE,
                 peer, 3, MPI_COMM_WORLD, &st);
    verify(&st, nbytes - 8, (uint64_t)peer + 21, rbuf + 5, "Sendrecv unaligned");

    /* 4: receive posted long before the send (handshake in between). */
    mt_fill(sbuf, nbytes, (uint64_t)mt_rank + 31);
    MPI_Irecv(rbuf, (int)nbytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &r[1]);
    MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 5, NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Isend(sbuf, (int)nbytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &r[0]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    {
        long long bad = mt_verify(rbuf, nbytes, (uint64_t)peer + 31);
        MT_CHECK(bad < 0, "pre-posted receive: mismatch at %lld", bad);
    }

    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
