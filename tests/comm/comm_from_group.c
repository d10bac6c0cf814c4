/* MPI-4 constructors without a parent communicator: MPI_Comm_create_from_group (halves, with
 * different string tags at the same time) and MPI_Intercomm_create_from_groups (leaders other
 * than rank 0), then MPI_Comm_disconnect. Checked by traffic against the groups built here. */
#include "commtest.h"

int main(int argc, char **argv)
{
    MPI_Group wg, mine, other;
    MPI_Comm c, ic;
    int i, n = 0, m = 0, *a, *b, half;
    mt_init(&argc, &argv);
    a = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);
    b = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);

    /* the whole world, reversed */
    for (i = 0; i < mt_size; i++)
        a[i] = mt_size - 1 - i;
    MPI_Group_incl(wg, mt_size, a, &mine);
    MPI_Comm_create_from_group(mine, "wanmpi.test.reversed", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    ct_check_comm(c, a, mt_size, "from_group: reversed world");
    {
        MPI_Errhandler eh;
        MPI_Comm_get_errhandler(c, &eh);
        MT_CHECK(eh == MPI_ERRORS_RETURN, "from_group: error handler not attached");
        MPI_Errhandler_free(&eh);
    }
    MPI_Comm_disconnect(&c);
    MT_CHECK(c == MPI_COMM_NULL, "disconnect did not reset the handle");
    MPI_Group_free(&mine);

    /* two halves at the same time, with different tags */
    half = (mt_size + 1) / 2;
    for (i = 0; i < mt_size; i++) {
        if ((i < half) == (mt_rank < half))
            a[n++] = i;
        else
            b[m++] = i;
    }
    MPI_Group_incl(wg, n, a, &mine);
    MPI_Comm_create_from_group(mine, mt_rank < half ? "low" : "high", MPI_INFO_NULL,
                               MPI_ERRORS_ARE_FATAL, &c);
    ct_check_comm(c, a, n, "from_group: halves");
    MPI_Comm_free(&c);

    /* intercommunicator between the halves; leaders are each half's last member */
    if (m > 0) {
        int rs = -1, flag = 0, lr, x, y = -1;
        MPI_Group_incl(wg, m, b, &other);
        MPI_Intercomm_create_from_groups(mine, n - 1, other, m - 1, "wanmpi.test.inter",
                                         MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &ic);
        MPI_Comm_test_inter(ic, &flag);
        MPI_Comm_remote_size(ic, &rs);
        MT_CHECK(flag && rs == m, "from_groups: inter %d, remote size %d (expected %d)", flag, rs,
                 m);
        /* every local rank sends to remote rank (local rank % m), so I hear from the remote
         * ranks r with r % n == my rank */
        MPI_Comm_rank(ic, &lr);
        x = mt_rank;
        {
            MPI_Request rq;
            int k, nrecv = 0;
            MPI_Isend(&x, 1, MPI_INT, lr % m, 3, ic, &rq);
            for (k = 0; k < m; k++)
                if (k % n == lr)
                    nrecv++;
            for (k = 0; k < nrecv; k++) {
                MPI_Status st;
                MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 3, ic, &st);
                MT_CHECK(st.MPI_SOURCE % n == lr && y == b[st.MPI_SOURCE],
                         "from_groups: got %d from remote %d, expected %d", y, st.MPI_SOURCE,
                         b[st.MPI_SOURCE]);
            }
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
        MPI_Comm_free(&ic);
        MPI_Group_free(&other);
    }
    MPI_Group_free(&mine);
    MPI_Group_free(&wg);
    free(a);
    free(b);
    return mt_finalize();
}
