/* status_count: MPI_Get_count and MPI_Get_elements, and the STATUS(ES)_IGNORE forms.
 *   Counts in bytes, ints and doubles for messages of 0 to 100000 elements; a receive into a
 *   larger buffer reports the message size, not the buffer size; a byte count that is not a
 *   multiple of the type size gives MPI_UNDEFINED from both calls; pair types (MPI_DOUBLE_INT)
 *   count pairs in Get_count;
 *   MPI_STATUS_IGNORE in Recv/Wait/Test/Sendrecv/Probe and MPI_STATUSES_IGNORE in
 *   Waitall/Testall/Waitsome/Testsome are accepted (and the data still arrives). */
#include "mptest.h"

int main(int argc, char **argv)
{
    int peer, i, count, elems;
    MPI_Status st;
    const int ns[] = {0, 1, 3, 1000, 100000};
    double *dbuf;
    mt_init(&argc, &argv);
    peer = mt_partner();
    dbuf = (double *)mt_malloc(200000 * sizeof(double));

    for (i = 0; i < 5; i++) {
        int n = ns[i];
        MPI_Request r;
        double *out = (double *)mt_malloc((size_t)n * sizeof(double));
        int j;
        for (j = 0; j < n; j++)
            out[j] = mt_rank + j * 0.5;
        MPI_Irecv(dbuf, 200000, MPI_DOUBLE, peer, i, MPI_COMM_WORLD, &r);
        MPI_Send(out, n, MPI_DOUBLE, peer, i, MPI_COMM_WORLD);
        MPI_Wait(&r, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        MPI_Get_elements(&st, MPI_DOUBLE, &elems);
        MT_CHECK(count == n && elems == n, "%d doubles: count %d elements %d", n, count, elems);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(count == n * 8, "%d doubles: byte count %d", n, count);
        MPI_Get_count(&st, MPI_INT, &count);
        MT_CHECK(count == n * 2, "%d doubles: int count %d", n, count);
        for (j = 0; j < n; j++)
            if (dbuf[j] != peer + j * 0.5) {
                MT_CHECK(dbuf[j] == peer + j * 0.5, "%d doubles: element %d is %g", n, j, dbuf[j]);
                break;
            }
        free(out);
    }

    /* 10 bytes: not a whole number of ints or doubles. */
    {
        char b[10] = {0}, rb[16];
        MPI_Request r;
        MPI_Irecv(rb, 16, MPI_BYTE, peer, 50, MPI_COMM_WORLD, &r);
        MPI_Send(b, 10, MPI_BYTE, peer, 50, MPI_COMM_WORLD);
        MPI_Wait(&r, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        MPI_Get_elements(&st, MPI_INT, &elems);
        MT_CHECK(count == MPI_UNDEFINED && elems == MPI_UNDEFINED,
                 "10 bytes as MPI_INT: count %d elements %d (want MPI_UNDEFINED)", count, elems);
        MPI_Get_count(&st, MPI_CHAR, &count);
        MT_CHECK(count == 10, "10 bytes as MPI_CHAR: %d", count);
    }

    /* Pair type: Get_count counts pairs, Get_elements counts basic elements. */
    {
        struct {
            double d;
            int i;
        } pairs[5], rp[5];
        MPI_Request r;
        for (i = 0; i < 5; i++) {
            pairs[i].d = i + 0.25;
            pairs[i].i = -i;
        }
        MPI_Irecv(rp, 5, MPI_DOUBLE_INT, peer, 51, MPI_COMM_WORLD, &r);
        MPI_Send(pairs, 5, MPI_DOUBLE_INT, peer, 51, MPI_COMM_WORLD);
        MPI_Wait(&r, &st);
        MPI_Get_count(&st, MPI_DOUBLE_INT, &count);
        MPI_Get_elements(&st, MPI_DOUBLE_INT, &elems);
        /* MPI defines MPI_DOUBLE_INT "as if" a struct of a double and an int, so 2 elements per
         * pair (MPICH); Open MPI counts the predefined pair as 1 (open-mpi/ompi#2366, disputed),
         * so either is accepted. */
        MT_CHECK(count == 5 && (elems == 10 || elems == 5),
                 "5 MPI_DOUBLE_INT: count %d elements %d (want 5, 10)", count, elems);
        MT_CHECK(rp[4].d == 4.25 && rp[4].i == -4, "MPI_DOUBLE_INT value %g %d", rp[4].d,
                 rp[4].i);
    }

    /* The IGNORE forms. */
    {
        int v[4] = {1, 2, 3, 4}, w[4] = {0}, flag = 0, out, idx[4];
        MPI_Request rs[4];
        MPI_Sendrecv(&v[0], 1, MPI_INT, peer, 60, &w[0], 1, MPI_INT, peer, 60, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MT_CHECK(w[0] == 1, "Sendrecv with STATUS_IGNORE: %d", w[0]);

        MPI_Irecv(&w[1], 1, MPI_INT, peer, 61, MPI_COMM_WORLD, &rs[0]);
        MPI_Isend(&v[1], 1, MPI_INT, peer, 61, MPI_COMM_WORLD, &rs[1]);
        MPI_Wait(&rs[0], MPI_STATUS_IGNORE);
        while (!flag)
            MPI_Test(&rs[1], &flag, MPI_STATUS_IGNORE);
        MT_CHECK(w[1] == 2, "Wait with STATUS_IGNORE: %d", w[1]);

        MPI_Isend(&v[2], 1, MPI_INT, peer, 62, MPI_COMM_WORLD, &rs[0]);
        MPI_Probe(peer, 62, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&w[2], 1, MPI_INT, peer, 62, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&rs[0], MPI_STATUS_IGNORE);
        MT_CHECK(w[2] == 3, "Recv with STATUS_IGNORE: %d", w[2]);

        MPI_Irecv(&w[0], 1, MPI_INT, peer, 63, MPI_COMM_WORLD, &rs[0]);
        MPI_Irecv(&w[1], 1, MPI_INT, peer, 64, MPI_COMM_WORLD, &rs[1]);
        MPI_Isend(&v[0], 1, MPI_INT, peer, 63, MPI_COMM_WORLD, &rs[2]);
        MPI_Isend(&v[1], 1, MPI_INT, peer, 64, MPI_COMM_WORLD, &rs[3]);
        MPI_Waitall(4, rs, MPI_STATUSES_IGNORE);
        MT_CHECK(w[0] == 1 && w[1] == 2, "Waitall with STATUSES_IGNORE: %d %d", w[0], w[1]);

        MPI_Irecv(&w[0], 1, MPI_INT, peer, 65, MPI_COMM_WORLD, &rs[0]);
        MPI_Isend(&v[3], 1, MPI_INT, peer, 65, MPI_COMM_WORLD, &rs[1]);
        flag = 0;
        while (!flag)
            MPI_Testall(2, rs, &flag, MPI_STATUSES_IGNORE);
        MT_CHECK(w[0] == 4, "Testall with STATUSES_IGNORE: %d", w[0]);

        MPI_Irecv(&w[0], 1, MPI_INT, peer, 66, MPI_COMM_WORLD, &rs[0]);
        MPI_Isend(&v[2], 1, MPI_INT, peer, 66, MPI_COMM_WORLD, &rs[1]);
        for (flag = 0; flag < 2;) {
            MPI_Waitsome(2, rs, &out, idx, MPI_STATUSES_IGNORE);
            MT_CHECK(out != MPI_UNDEFINED, "Waitsome: no active requests left early");
            if (out == MPI_UNDEFINED)
                break;
            flag += out;
        }
        MPI_Irecv(&w[1], 1, MPI_INT, peer, 67, MPI_COMM_WORLD, &rs[0]);
        MPI_Isend(&v[3], 1, MPI_INT, peer, 67, MPI_COMM_WORLD, &rs[1]);
        for (flag = 0; flag < 2;) {
            MPI_Testsome(2, rs, &out, idx, MPI_STATUSES_IGNORE);
            if (out == MPI_UNDEFINED)
                break;
            flag += out;
        }
        MT_CHECK(w[0] == 3 && w[1] == 4, "Waitsome/Testsome with STATUSES_IGNORE: %d %d", w[0],
                 w[1]);
    }
    free(dbuf);
    return mt_finalize();
}
