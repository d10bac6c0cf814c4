/* Neighbor collectives, blocking and nonblocking, with values checked against the neighbor lists:
 *   - 2-D periodic Cartesian grid from MPI_Dims_create (at 2 and 4 processes a dimension has
 *     size 1 or 2, so a process is its own neighbor or both neighbors are the same process: the
 *     block sent to the negative neighbor must arrive in that neighbor's positive slot);
 *   - 1-D non-periodic grid (MPI_PROC_NULL neighbors leave the receive blocks untouched);
 *   - a graph topology; a distributed graph with two edges to the same neighbor;
 *   - allgather, allgatherv (reversed displacements), alltoall, alltoallv (varying counts),
 *     alltoallw (byte displacements, two datatypes), and the I-forms overlapped. */
#include "commtest.h"

#define SENT 0x7eadbeef

/* in/out neighbor lists as MPI defines them for each topology */
static int neighbors(MPI_Comm c, int *in, int *out, int *nin, int *nout)
{
    int st, i, r;
    MPI_Topo_test(c, &st);
    MPI_Comm_rank(c, &r);
    if (st == MPI_CART) {
        int nd;
        MPI_Cartdim_get(c, &nd);
        for (i = 0; i < nd; i++) {
            MPI_Cart_shift(c, i, 1, &in[2 * i], &in[2 * i + 1]);
            out[2 * i] = in[2 * i];
            out[2 * i + 1] = in[2 * i + 1];
        }
        *nin = *nout = 2 * nd;
    } else if (st == MPI_GRAPH) {
        MPI_Graph_neighbors_count(c, r, nin);
        MPI_Graph_neighbors(c, r, *nin, in);
        for (i = 0; i < *nin; i++)
            out[i] = in[i];
        *nout = *nin;
    } else {
        int w;
        MPI_Dist_graph_neighbors_count(c, nin, nout, &w);
        MPI_Dist_graph_neighbors(c, *nin, in, MPI_UNWEIGHTED, *nout, out, MPI_UNWEIGHTED);
    }
    return st;
}

/* The index that sender `s` used for the block that lands in my receive slot k. */
static int sender_slot(int st, int k) { return st == MPI_CART ? (k ^ 1) : -1; }

/* Slot k of a Cartesian grid whose dimension has the same process on both sides (periodic, size
 * 1 or 2). MPI-4.0 errata (mpi-forum/mpi-issues#153) fixed which block lands where; Debian's
 * MPICH 4.0 still gets some of these wrong, so stock-MPI builds check only the sender there. */
static int strict_slot(int st, const int *in, int k)
{
#ifdef WANMPI
    (void)st, (void)in, (void)k;
    return 1;
#else
    return st != MPI_CART || in[k] != in[k ^ 1];
#endif
}

static void run_all(MPI_Comm c, const char *what)
{
    int in[16], out[16], nin, nout, st, r, k, i;
    int sbuf[64], rbuf[64], rbuf2[64], counts[16], displs[16], rcounts[16], rdispls[16];
    MPI_Aint sdw[16], rdw[16];
    MPI_Datatype stypes[16], rtypes[16];
    MPI_Request rq[2];
    st = neighbors(c, in, out, &nin, &nout);
    MPI_Comm_rank(c, &r);

    /* allgather: everyone sends its rank */
    for (i = 0; i < 64; i++)
        rbuf[i] = SENT;
    sbuf[0] = r;
    MPI_Neighbor_allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, c);
    for (k = 0; k < nin; k++)
        MT_CHECK(rbuf[k] == (in[k] == MPI_PROC_NULL ? SENT : in[k]),
                 "%s allgather slot %d: %d (neighbor %d)", what, k, rbuf[k], in[k]);

    /* allgatherv: 2 ints each, placed in reverse slot order */
    for (i = 0; i < 64; i++)
        rbuf[i] = SENT;
    sbuf[0] = r;
    sbuf[1] = -r;
    for (k = 0; k < nin; k++) {
        rcounts[k] = 2;
        rdispls[k] = 2 * (nin - 1 - k);
    }
    MPI_Neighbor_allgatherv(sbuf, 2, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, c);
    for (k = 0; k < nin; k++) {
        int *p = rbuf + rdispls[k];
        if (in[k] == MPI_PROC_NULL)
            MT_CHECK(p[0] == SENT, "%s allgatherv slot %d written", what, k);
        else
            MT_CHECK(p[0] == in[k] && p[1] == -in[k], "%s allgatherv slot %d: (%d, %d)", what, k,
                     p[0], p[1]);
    }

    /* alltoall: block k carries (my rank, k) */
    for (i = 0; i < 64; i++)
        rbuf[i] = SENT;
    for (k = 0; k < nout; k++) {
        sbuf[2 * k] = r;
        sbuf[2 * k + 1] = k;
    }
    MPI_Neighbor_alltoall(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, c);
    for (k = 0; k < nin; k++) {
        if (in[k] == MPI_PROC_NULL) {
            MT_CHECK(rbuf[2 * k] == SENT, "%s alltoall slot %d written", what, k);
        } else {
            int want = sender_slot(st, k);
            MT_CHECK(rbuf[2 * k] == in[k], "%s alltoall slot %d from %d, expected %d", what, k,
                     rbuf[2 * k], in[k]);
            if (want >= 0 && strict_slot(st, in, k))
                MT_CHECK(rbuf[2 * k + 1] == want, "%s alltoall slot %d holds block %d, expected "
                         "%d", what, k, rbuf[2 * k + 1], want);
        }
    }
    /* graphs: the k-th edge to a neighbor pairs with the k-th edge from it (MPI-4.1 §8.6), so
     * the blocks from a neighbor that appears several times arrive in increasing order.
     * (Debian's MPICH 4.0 pairs them the other way round.) */
#ifdef WANMPI
    if (st != MPI_CART) {
        for (k = 0; k < nin; k++)
            for (i = k + 1; i < nin; i++)
                if (in[i] == in[k])
                    MT_CHECK(rbuf[2 * k + 1] < rbuf[2 * i + 1],
                             "%s alltoall: blocks from %d out of order (%d then %d)", what,
                             in[k], rbuf[2 * k + 1], rbuf[2 * i + 1]);
    }
#endif

    /* alltoallv: block k has k+1 ints (r*100+k) */
    {
        int off = 0, roff = 0;
        for (k = 0; k < nout; k++) {
            counts[k] = k + 1;
            displs[k] = off;
            for (i = 0; i < k + 1; i++)
                sbuf[off + i] = r * 100 + k;
            off += k + 1;
        }
        for (i = 0; i < 64; i++)
            rbuf[i] = SENT;
        /* receive counts: what the sender's block for me holds (its index + 1) */
        for (k = 0; k < nin; k++) {
            int sk = st == MPI_CART ? (k ^ 1) : -1;
            if (sk < 0) {
                /* graph: the sender's block index for its j-th edge to me; the test graphs
                 * give every edge a block of the same index on both ends */
                sk = k;
            }
            rcounts[k] = sk + 1;
            rdispls[k] = roff;
            roff += sk + 1;
        }
#ifdef WANMPI
        if (st == MPI_CART || st == MPI_DIST_GRAPH) { /* (edge pairing, see above) */
#else
        if (st == MPI_CART) {
#endif
            MPI_Neighbor_alltoallv(sbuf, counts, displs, MPI_INT, rbuf, rcounts, rdispls, MPI_INT,
                                   c);
            for (k = 0; k < nin; k++) {
                if (in[k] == MPI_PROC_NULL || !strict_slot(st, in, k))
                    continue;
                for (i = 0; i < rcounts[k]; i++)
                    MT_CHECK(rbuf[rdispls[k] + i] == in[k] * 100 + rcounts[k] - 1,
                             "%s alltoallv slot %d item %d: %d", what, k, i,
                             rbuf[rdispls[k] + i]);
            }
        }
    }

    /* alltoallw: even blocks as one int, odd blocks as two shorts; byte displacements */
    {
        short *ss = (short *)sbuf, *rs = (short *)rbuf;
        for (i = 0; i < 64; i++)
            rbuf[i] = SENT;
        for (k = 0; k < nout; k++) {
            sdw[k] = (MPI_Aint)(k * (int)sizeof(int));
            counts[k] = k % 2 ? 2 : 1;
            stypes[k] = k % 2 ? MPI_SHORT : MPI_INT;
            if (k % 2) {
                ss[2 * k] = (short)r;
                ss[2 * k + 1] = (short)(k + 1000);
            } else {
                sbuf[k] = r * 10 + k;
            }
        }
        for (k = 0; k < nin; k++) {
            int sk = st == MPI_CART ? (k ^ 1) : k;
            rdw[k] = (MPI_Aint)(k * (int)sizeof(int));
            rcounts[k] = sk % 2 ? 2 : 1;
            rtypes[k] = sk % 2 ? MPI_SHORT : MPI_INT;
        }
        if (st == MPI_CART) {
            MPI_Neighbor_alltoallw(sbuf, counts, sdw, stypes, rbuf, rcounts, rdw, rtypes, c);
            for (k = 0; k < nin; k++) {
                int sk = k ^ 1;
                if (in[k] == MPI_PROC_NULL || !strict_slot(st, in, k))
                    continue;
                if (sk % 2)
                    MT_CHECK(rs[2 * k] == in[k] && rs[2 * k + 1] == sk + 1000,
                             "%s alltoallw slot %d: (%d, %d)", what, k, rs[2 * k], rs[2 * k + 1]);
                else
                    MT_CHECK(rbuf[k] == in[k] * 10 + sk, "%s alltoallw slot %d: %d", what, k,
                             rbuf[k]);
            }
        }
    }

    /* nonblocking: allgather and alltoall in flight together */
    for (i = 0; i < 64; i++)
        rbuf[i] = rbuf2[i] = SENT;
    sbuf[0] = r + 1;
    for (k = 0; k < nout; k++)
        sbuf[8 + k] = r * 1000 + k;
    MPI_Ineighbor_allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, c, &rq[0]);
    MPI_Ineighbor_alltoall(sbuf + 8, 1, MPI_INT, rbuf2, 1, MPI_INT, c, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    for (k = 0; k < nin; k++) {
        if (in[k] == MPI_PROC_NULL)
            continue;
        MT_CHECK(rbuf[k] == in[k] + 1, "%s Ineighbor_allgather slot %d: %d", what, k, rbuf[k]);
        if (st == MPI_CART && strict_slot(st, in, k))
            MT_CHECK(rbuf2[k] == in[k] * 1000 + (k ^ 1), "%s Ineighbor_alltoall slot %d: %d",
                     what, k, rbuf2[k]);
        else
            MT_CHECK(rbuf2[k] / 1000 == in[k], "%s Ineighbor_alltoall slot %d: %d", what, k,
                     rbuf2[k]);
    }
    {
        MPI_Request r3[3];
        for (k = 0; k < nin; k++) {
            rcounts[k] = 1;
            rdispls[k] = k;
        }
        for (k = 0; k < nout; k++) {
            counts[k] = 1;
            displs[k] = k;
            sdw[k] = (MPI_Aint)(k * (int)sizeof(int));
            stypes[k] = MPI_INT;
        }
        for (k = 0; k < nin; k++) {
            rdw[k] = (MPI_Aint)(k * (int)sizeof(int));
            rtypes[k] = MPI_INT;
        }
        MPI_Ineighbor_allgatherv(sbuf, 1, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, c, &r3[0]);
        MPI_Ineighbor_alltoallv(sbuf + 8, counts, displs, MPI_INT, rbuf2, rcounts, rdispls,
                                MPI_INT, c, &r3[1]);
        MPI_Ineighbor_alltoallw(sbuf + 8, counts, sdw, stypes, rbuf2 + 32, rcounts, rdw, rtypes,
                                c, &r3[2]);
        MPI_Waitall(3, r3, MPI_STATUSES_IGNORE);
        for (k = 0; k < nin; k++) {
            if (in[k] == MPI_PROC_NULL)
                continue;
            MT_CHECK(rbuf[k] == in[k] + 1, "%s Ineighbor_allgatherv slot %d", what, k);
            MT_CHECK(rbuf2[k] / 1000 == in[k] && rbuf2[32 + k] == rbuf2[k],
                     "%s Ineighbor_alltoallv/w slot %d: %d %d", what, k, rbuf2[k], rbuf2[32 + k]);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Comm c;
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    mt_init(&argc, &argv);

    MPI_Dims_create(mt_size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c);
    run_all(c, "2-D periodic");
    MPI_Comm_free(&c);

    dims[0] = mt_size;
    periods[0] = 0;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c);
    run_all(c, "1-D open");
    MPI_Comm_free(&c);

    /* graph: ring both ways */
    {
        int *index = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);
        int *edges = (int *)mt_malloc(sizeof(int) * 2 * (size_t)mt_size), i;
        for (i = 0; i < mt_size; i++) {
            edges[2 * i] = (i + 1) % mt_size;
            edges[2 * i + 1] = (i - 1 + mt_size) % mt_size;
            index[i] = 2 * (i + 1);
        }
        MPI_Graph_create(MPI_COMM_WORLD, mt_size, index, edges, 0, &c);
        run_all(c, "graph ring");
        MPI_Comm_free(&c);
        free(index);
        free(edges);
    }
    /* distributed graph: two edges from me to the right neighbor */
    {
        int left = (mt_rank - 1 + mt_size) % mt_size, right = (mt_rank + 1) % mt_size;
        int src[2] = {left, left}, dst[2] = {right, right};
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst,
                                       MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
        run_all(c, "dist graph double edge");
        MPI_Comm_free(&c);
    }
    return mt_finalize();
}
