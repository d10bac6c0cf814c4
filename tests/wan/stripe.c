/* stripe [MIB] [COUNT]: COUNT messages of MIB MiB (default 16 and 4) each way between ranks 0
 * and 1, all on one tag and communicator, so that without striping they would travel on one
 * lane of a multi-lane link (issue 14): Isend and Irecv in both directions at once, into
 * receive buffers one byte larger, at an odd offset; every byte checked. Run by wan.lanes_stripe
 * (wan_test.py --stats spread checks that every lane carried its part). Standard MPI only. */
#include "../mp/mptest.h"

int main(int argc, char **argv)
{
    unsigned char *sbuf, *rbuf;
    size_t nbytes;
    int mib, count, peer;

    mt_init(&argc, &argv);
    mib = argc > 1 ? atoi(argv[1]) : 16;
    count = argc > 2 ? atoi(argv[2]) : 4;
    MT_CHECK(mt_size == 2 && mib > 0 && count > 0, "needs 2 ranks, MIB > 0, COUNT > 0 (%d, %d, %d)",
             mt_size, mib, count);
    if (mt_size != 2 || mib <= 0 || count <= 0) return mt_finalize();
    peer = 1 - mt_rank;
    nbytes = (size_t)mib << 20;
    sbuf = mt_malloc(nbytes);
    rbuf = mt_malloc(nbytes + 2);
    for (int i = 0; i < count; ++i) {
        MPI_Request r[2];
        MPI_Status st;
        int n = -1;
        long long bad;
        mt_fill(sbuf, nbytes, (uint64_t)mt_rank * 1000 + (uint64_t)i);
        MPI_Irecv(rbuf + 1, (int)nbytes + 1, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &r[1]);
        MPI_Isend(sbuf, (int)nbytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &r[0]);
        MPI_Wait(&r[1], &st);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Get_count(&st, MPI_BYTE, &n);
        MT_CHECK(n == (int)nbytes && st.MPI_SOURCE == peer, "message %d: %s, expected %zu B", i,
                 mt_status_str(&st, MPI_BYTE), nbytes);
        bad = mt_verify(rbuf + 1, nbytes, (uint64_t)peer * 1000 + (uint64_t)i);
        MT_CHECK(bad < 0, "message %d: %zu B, mismatch at byte %lld", i, nbytes, bad);
    }
    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
