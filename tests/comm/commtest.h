/* commtest.h: helpers shared by the communicator, group and topology tests (tests/comm,
 * tests/group, tests/topo), on top of tests/mp/mptest.h. Standard MPI only.
 *
 * ct_check_comm(comm, world, n, what) checks that `comm` is an intracommunicator whose rank i is
 * world rank world[i], by traffic as well as by queries: a ring exchange (each rank sends its world
 * rank to the next and checks what the previous sent, and MPI_SOURCE), then an all-to-all of
 * nonblocking messages received with MPI_ANY_SOURCE (every peer exactly once). Tags are below
 * MT_TAG_MAX_USER. */
#ifndef COMMTEST_H
#define COMMTEST_H

#include "mptest.h"

static MT_UNUSED int ct_world_rank(void)
{
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static MT_UNUSED void ct_check_comm(MPI_Comm comm, const int *world, int n, const char *what)
{
    int rank = -1, size = -1, inter = 1, i, me = ct_world_rank();
    MT_CHECK(comm != MPI_COMM_NULL, "%s: got MPI_COMM_NULL", what);
    if (comm == MPI_COMM_NULL)
        return;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_test_inter(comm, &inter);
    MT_CHECK(!inter, "%s: is an intercommunicator", what);
    MT_CHECK(size == n, "%s: size %d, expected %d", what, size, n);
    if (size != n || rank < 0 || rank >= n)
        return;
    MT_CHECK(world[rank] == me, "%s: rank %d is world rank %d, expected %d", what, rank, me,
             world[rank]);
    {
        int next = (rank + 1) % n, prev = (rank - 1 + n) % n, got = -1;
        MPI_Status st;
        MPI_Sendrecv(&me, 1, MPI_INT, next, 11, &got, 1, MPI_INT, prev, 11, comm, &st);
        MT_CHECK(got == world[prev], "%s: ring got %d from rank %d, expected %d", what, got, prev,
                 world[prev]);
        MT_CHECK(st.MPI_SOURCE == prev, "%s: ring MPI_SOURCE %d, expected %d", what,
                 st.MPI_SOURCE, prev);
    }
    {
        int *in = (int *)mt_malloc(sizeof(int) * (size_t)n);
        int *seen = (int *)mt_malloc(sizeof(int) * (size_t)n);
        MPI_Request *rq = (MPI_Request *)mt_malloc(sizeof(MPI_Request) * 2 * (size_t)n);
        MPI_Status *st = (MPI_Status *)mt_malloc(sizeof(MPI_Status) * 2 * (size_t)n);
        for (i = 0; i < n; i++) {
            seen[i] = 0;
            MPI_Irecv(&in[i], 1, MPI_INT, MPI_ANY_SOURCE, 12, comm, &rq[i]);
        }
        for (i = 0; i < n; i++)
            MPI_Isend(&me, 1, MPI_INT, i, 12, comm, &rq[n + i]);
        MPI_Waitall(2 * n, rq, st);
        for (i = 0; i < n; i++) {
            int src = st[i].MPI_SOURCE;
            MT_CHECK(src >= 0 && src < n, "%s: bad source %d", what, src);
            if (src < 0 || src >= n)
                continue;
            seen[src]++;
            MT_CHECK(in[i] == world[src], "%s: rank %d sent %d, expected %d", what, src, in[i],
                     world[src]);
        }
        for (i = 0; i < n; i++)
            MT_CHECK(seen[i] == 1, "%s: %d messages from rank %d", what, seen[i], i);
        free(in);
        free(seen);
        free(rq);
        free(st);
    }
}

/* The world ranks of comm's local group, in rank order (caller frees). */
static MT_UNUSED int *ct_members(MPI_Comm comm, int *n)
{
    MPI_Group wg, g;
    int i, *ranks, *out;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(comm, &g);
    MPI_Group_size(g, n);
    ranks = (int *)mt_malloc(sizeof(int) * (size_t)*n);
    out = (int *)mt_malloc(sizeof(int) * (size_t)*n);
    for (i = 0; i < *n; i++)
        ranks[i] = i;
    MPI_Group_translate_ranks(g, *n, ranks, wg, out);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    free(ranks);
    return out;
}

/* Error class of an MPI return code. */
static MT_UNUSED int ct_class(int rc)
{
    int c = rc;
    MPI_Error_class(rc, &c);
    return c;
}

#endif
