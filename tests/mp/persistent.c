/* persistent: MPI_Send_init, Ssend_init, Bsend_init, Rsend_init, Recv_init with MPI_Start and
 * MPI_Startall, each request reused for many iterations with new data each time, 8 B and 256 KiB
 * (eager and rendezvous); statuses and data checked on every iteration. Wait on an inactive
 * persistent request returns at once with an empty status; Request_free at the end. */
#include "mptest.h"

#define ITERS 50
#define NKIND 4 /* Send, Ssend, Bsend, Rsend */
static const int sizes[] = {8, 256 * 1024};

int main(int argc, char **argv)
{
    int peer, si, k, it, bsize, dsize;
    char *battach, *bdetach;
    static const char *names[NKIND] = {"Send_init", "Ssend_init", "Bsend_init", "Rsend_init"};

    mt_init(&argc, &argv);
    peer = mt_partner();
    bsize = NKIND * (sizes[1] + MPI_BSEND_OVERHEAD);
    battach = (char *)mt_malloc((size_t)bsize);
    MPI_Buffer_attach(battach, bsize);

    for (si = 0; si < 2; si++) {
        int n = sizes[si];
        unsigned char *sb[NKIND], *rb[NKIND];
        MPI_Request sreq[NKIND], rreq[NKIND];
        MPI_Status st[NKIND];
        for (k = 0; k < NKIND; k++) {
            int tag = 10 * si + k;
            sb[k] = (unsigned char *)mt_malloc((size_t)n);
            rb[k] = (unsigned char *)mt_malloc((size_t)n);
            if (k == 0)
                MPI_Send_init(sb[k], n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &sreq[k]);
            else if (k == 1)
                MPI_Ssend_init(sb[k], n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &sreq[k]);
            else if (k == 2)
                MPI_Bsend_init(sb[k], n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &sreq[k]);
            else
                MPI_Rsend_init(sb[k], n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &sreq[k]);
            MPI_Recv_init(rb[k], n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rreq[k]);
        }
        /* Inactive persistent requests: Wait returns at once with an empty status. */
        {
            MPI_Status e;
            int count = -1;
            MPI_Wait(&sreq[0], &e);
            MPI_Get_count(&e, MPI_BYTE, &count);
            MT_CHECK(sreq[0] != MPI_REQUEST_NULL && e.MPI_SOURCE == MPI_ANY_SOURCE &&
                         e.MPI_TAG == MPI_ANY_TAG && count == 0,
                     "Wait on inactive persistent request: %s", mt_status_str(&e, MPI_BYTE));
        }
        for (it = 0; it < ITERS; it++) {
            /* Receives first (Startall on odd iterations, Start one by one on even ones), then
             * a handshake so the Rsend is legal, then the sends. */
            if (it % 2)
                MPI_Startall(NKIND, rreq);
            else
                for (k = 0; k < NKIND; k++)
                    MPI_Start(&rreq[k]);
            MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 100, NULL, 0, MPI_BYTE, peer, 100,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (k = 0; k < NKIND; k++)
                mt_fill(sb[k], (size_t)n, (uint64_t)(mt_rank * 100000 + it * 10 + k));
            if (it % 2)
                for (k = NKIND - 1; k >= 0; k--)
                    MPI_Start(&sreq[k]);
            else
                MPI_Startall(NKIND, sreq);
            MPI_Waitall(NKIND, sreq, MPI_STATUSES_IGNORE);
            MPI_Waitall(NKIND, rreq, st);
            for (k = 0; k < NKIND; k++) {
                int count = -1;
                long long bad;
                MT_CHECK(sreq[k] != MPI_REQUEST_NULL && rreq[k] != MPI_REQUEST_NULL,
                         "%s: Waitall freed a persistent request", names[k]);
                MPI_Get_count(&st[k], MPI_BYTE, &count);
                bad = mt_verify(rb[k], (size_t)n, (uint64_t)(peer * 100000 + it * 10 + k));
                MT_CHECK(st[k].MPI_SOURCE == peer && st[k].MPI_TAG == 10 * si + k &&
                             count == n && bad < 0,
                         "%s %d B iteration %d: %s, bad byte %lld", names[k], n, it,
                         mt_status_str(&st[k], MPI_BYTE), bad);
            }
            if (mt_errs)
                break;
        }
        for (k = 0; k < NKIND; k++) {
            MPI_Request_free(&sreq[k]);
            MPI_Request_free(&rreq[k]);
            MT_CHECK(sreq[k] == MPI_REQUEST_NULL && rreq[k] == MPI_REQUEST_NULL,
                     "Request_free did not null persistent handles");
            free(sb[k]);
            free(rb[k]);
        }
    }
    MPI_Buffer_detach(&bdetach, &dsize);
    MT_CHECK(bdetach == battach && dsize == bsize, "Buffer_detach gave %p/%d", (void *)bdetach,
             dsize);
    free(battach);
    return mt_finalize();
}
