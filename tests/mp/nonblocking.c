/* nonblocking: MPI_Isend, Issend, Ibsend (attached buffer), Irsend (after the receiver's Irecv is
 * known to be posted) and Irecv, 0 B to 1 MiB, between pairs and to self, many requests in flight
 * at once (all modes and sizes posted before any wait), completed with MPI_Waitall and checked:
 * status source/tag/count per request and the data. Then the send buffers of completed Isends are
 * reused immediately (MPI semantics allow it after completion). */
#include "mptest.h"

static const int sizes[] = {0, 1, 100, 8192, 65536, 1 << 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define NMODES 4 /* Isend, Issend, Ibsend, Irsend */
#define NREQ (NMODES * NSIZES)

int main(int argc, char **argv)
{
    int peer, m, i, rep, bsize = 0, dsize;
    unsigned char *sbuf[NREQ], *rbuf[NREQ];
    MPI_Request sreq[NREQ], rreq[NREQ];
    MPI_Status rst[NREQ], sst[NREQ];
    char *battach, *bdetach;
    static const char *names[NMODES] = {"Isend", "Issend", "Ibsend", "Irsend"};

    mt_init(&argc, &argv);
    peer = mt_partner();
    for (i = 0; i < NSIZES; i++)
        bsize += sizes[i] + MPI_BSEND_OVERHEAD;
    battach = (char *)mt_malloc((size_t)bsize);
    MPI_Buffer_attach(battach, bsize);
    for (m = 0; m < NMODES; m++)
        for (i = 0; i < NSIZES; i++) {
            sbuf[m * NSIZES + i] = (unsigned char *)mt_malloc((size_t)sizes[i]);
            rbuf[m * NSIZES + i] = (unsigned char *)mt_malloc((size_t)sizes[i]);
        }

    for (rep = 0; rep < 3; rep++) {
        /* Post every receive, then tell the partner so that Irsend is legal. */
        for (m = 0; m < NMODES; m++)
            for (i = 0; i < NSIZES; i++) {
                int k = m * NSIZES + i;
                memset(rbuf[k], 0, (size_t)sizes[i]);
                MPI_Irecv(rbuf[k], sizes[i], MPI_BYTE, peer, k, MPI_COMM_WORLD, &rreq[k]);
            }
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 999, NULL, 0, MPI_BYTE, peer, 999, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        for (m = 0; m < NMODES; m++)
            for (i = 0; i < NSIZES; i++) {
                int k = m * NSIZES + i;
                mt_fill(sbuf[k], (size_t)sizes[i], (uint64_t)(mt_rank * 1000 + k + rep * 100000));
                if (m == 0)
                    MPI_Isend(sbuf[k], sizes[i], MPI_BYTE, peer, k, MPI_COMM_WORLD, &sreq[k]);
                else if (m == 1)
                    MPI_Issend(sbuf[k], sizes[i], MPI_BYTE, peer, k, MPI_COMM_WORLD, &sreq[k]);
                else if (m == 2)
                    MPI_Ibsend(sbuf[k], sizes[i], MPI_BYTE, peer, k, MPI_COMM_WORLD, &sreq[k]);
                else
                    MPI_Irsend(sbuf[k], sizes[i], MPI_BYTE, peer, k, MPI_COMM_WORLD, &sreq[k]);
            }
        MPI_Waitall(NREQ, sreq, sst);
        MPI_Waitall(NREQ, rreq, rst);
        for (m = 0; m < NMODES; m++)
            for (i = 0; i < NSIZES; i++) {
                int k = m * NSIZES + i, count = -1;
                long long bad;
                MT_CHECK(sreq[k] == MPI_REQUEST_NULL && rreq[k] == MPI_REQUEST_NULL,
                         "%s: requests not freed by Waitall", names[m]);
                MPI_Get_count(&rst[k], MPI_BYTE, &count);
                MT_CHECK(rst[k].MPI_SOURCE == peer && rst[k].MPI_TAG == k && count == sizes[i],
                         "%s %d B rep %d: %s", names[m], sizes[i], rep,
                         mt_status_str(&rst[k], MPI_BYTE));
                bad = mt_verify(rbuf[k], (size_t)sizes[i], (uint64_t)(peer * 1000 + k + rep * 100000));
                MT_CHECK(bad < 0, "%s %d B rep %d: data mismatch at %lld", names[m], sizes[i], rep,
                         bad);
            }
    }

    MPI_Buffer_detach(&bdetach, &dsize);
    MT_CHECK(bdetach == battach && dsize == bsize, "Buffer_detach gave %p/%d", (void *)bdetach,
             dsize);
    free(battach);
    for (i = 0; i < NREQ; i++) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    return mt_finalize();
}
