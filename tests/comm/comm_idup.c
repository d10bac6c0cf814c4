/* MPI_Comm_idup and MPI_Comm_idup_with_info: completion by Wait and by a Test loop, several
 * outstanding at once, overlapping with blocking constructors called in a different order on
 * different processes (must not deadlock), with point-to-point traffic between the call and
 * the wait, and on an intercommunicator. */
#include "commtest.h"

int main(int argc, char **argv)
{
    MPI_Comm a, b, c, half, hd;
    MPI_Request rq[3];
    int n, *w, flag = 0;
    mt_init(&argc, &argv);
    w = ct_members(MPI_COMM_WORLD, &n);

    MPI_Comm_idup(MPI_COMM_WORLD, &a, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MT_CHECK(rq[0] == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    ct_check_comm(a, w, n, "idup + wait");

    /* Several at once, on different parents, completed together. */
    MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, mt_rank, &half);
    MPI_Comm_idup(MPI_COMM_WORLD, &b, &rq[0]);
    MPI_Comm_idup(half, &hd, &rq[1]);
#if MPI_VERSION >= 4
    MPI_Comm_idup_with_info(a, MPI_INFO_NULL, &c, &rq[2]);
#else
    MPI_Comm_idup(a, &c, &rq[2]);
#endif
    MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
    ct_check_comm(b, w, n, "outstanding idup 1");
    ct_check_comm(c, w, n, "outstanding idup 3");
    {
        int hn, *hw = ct_members(half, &hn);
        ct_check_comm(hd, hw, hn, "outstanding idup of a split");
        free(hw);
    }
    MPI_Comm_free(&b);
    MPI_Comm_free(&c);
    MPI_Comm_free(&hd);

    /* Test loop. */
    MPI_Comm_idup(a, &b, &rq[0]);
    while (!flag)
        MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
    ct_check_comm(b, w, n, "idup + test loop");
    MPI_Comm_free(&b);

    /* Crossed order: even ranks start an idup of `a` and then dup MPI_COMM_WORLD; odd ranks dup
     * MPI_COMM_WORLD first and only then start the idup. */
    if (mt_rank % 2 == 0) {
        MPI_Comm_idup(a, &b, &rq[0]);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_idup(a, &b, &rq[0]);
    }
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    ct_check_comm(b, w, n, "crossed idup");
    ct_check_comm(c, w, n, "crossed dup");
    MPI_Comm_free(&b);
    MPI_Comm_free(&c);

    /* Two idups in flight on the same parent, then point-to-point on the parent before the
     * waits (rank 0 sends to 1 while 1 receives before it even starts its idups). */
    if (mt_size > 1 && mt_rank == 1) {
        int v = 0;
        MPI_Recv(&v, 1, MPI_INT, 0, 3, a, MPI_STATUS_IGNORE);
        MT_CHECK(v == 42, "got %d", v);
    }
    MPI_Comm_idup(a, &b, &rq[0]);
    MPI_Comm_idup(a, &c, &rq[1]);
    if (mt_size > 1 && mt_rank == 0) {
        int v = 42;
        MPI_Send(&v, 1, MPI_INT, 1, 3, a);
    }
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    ct_check_comm(b, w, n, "idup pair 1");
    ct_check_comm(c, w, n, "idup pair 2");
    MPI_Comm_free(&b);
    MPI_Comm_free(&c);

    /* idup of an intercommunicator (even ranks <-> odd ranks), then traffic on it. */
    if (mt_size > 1) {
        MPI_Comm ic, icd;
        int rsize, lsize, x = mt_rank, y = -1;
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, mt_rank % 2 ? 0 : 1, 9, &ic);
        MPI_Comm_idup(ic, &icd, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        MPI_Comm_remote_size(icd, &rsize);
        MPI_Comm_size(icd, &lsize);
        MT_CHECK(rsize == (mt_rank % 2 ? (mt_size + 1) / 2 : mt_size / 2),
                 "idup of intercomm: remote size %d", rsize);
        /* local rank 0 of each side exchanges with remote rank 0 */
        {
            int lr;
            MPI_Comm_rank(icd, &lr);
            if (lr == 0) {
                MPI_Sendrecv(&x, 1, MPI_INT, 0, 1, &y, 1, MPI_INT, MPI_ANY_SOURCE, 1, icd,
                             MPI_STATUS_IGNORE);
                MT_CHECK(y == (mt_rank % 2 ? 0 : 1), "intercomm idup: leader got %d", y);
            }
        }
        MPI_Comm_free(&icd);
        MPI_Comm_free(&ic);
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&a);
    free(w);
    return mt_finalize();
}
