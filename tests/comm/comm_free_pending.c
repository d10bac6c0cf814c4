/* MPI_Comm_free while operations are pending: the handle goes at once, the communicator lives
 * until they complete (MPI 4.0 §7.4.3). Each rank posts a receive on a duplicate, frees the
 * duplicate, then its left neighbour sends on its own (also freed after an Isend) duplicate. */
#include "commtest.h"

int main(int argc, char **argv)
{
    MPI_Comm d;
    MPI_Request rr, sr;
    int to, from, v = -1, out, i;
    mt_init(&argc, &argv);
    to = (mt_rank + 1) % mt_size;
    from = (mt_rank - 1 + mt_size) % mt_size;
    for (i = 0; i < 20; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Irecv(&v, 1, MPI_INT, from, i, d, &rr);
        out = mt_rank * 1000 + i;
        MPI_Isend(&out, 1, MPI_INT, to, i, d, &sr);
        MPI_Comm_free(&d);
        MT_CHECK(d == MPI_COMM_NULL, "free did not reset the handle");
        /* more communicators come and go meanwhile */
        {
            MPI_Comm t;
            MPI_Comm_dup(MPI_COMM_WORLD, &t);
            MPI_Comm_free(&t);
        }
        MPI_Wait(&rr, MPI_STATUS_IGNORE);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        MT_CHECK(v == from * 1000 + i, "round %d: got %d", i, v);
    }
    return mt_finalize();
}
