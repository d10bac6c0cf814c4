/* coll_inter: every collective on intercommunicators, blocking and nonblocking, checked against
 * values computed here. World ranks [0,k) form group A and [k,n) group B (unequal sizes when
 * n > 2); every rank of either group serves as root in turn. A non-commutative op (the left
 * operand wins: the result is the lowest rank's value) checks that reductions keep rank order.
 * Standard MPI only; needs at least 2 ranks (1 rank: nothing to do). Prints " No Errors". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs, wrank, wsize, k, in_a, lsize, rsize, lrank;
static MPI_Comm ic;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            if (errs++ < 10) {                                                                 \
                fprintf(stderr, "[%d] ", wrank);                                              \
                fprintf(stderr, __VA_ARGS__);                                                  \
                fprintf(stderr, "\n");                                                         \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* World rank of rank i of the remote / local group. */
static int rworld(int i) { return in_a ? k + i : i; }
static int lworld(int i) { return in_a ? i : k + i; }
static int val(int w, int j) { return w * 1000 + j; }

static void left_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, sizeof(int) * (size_t)*len);
}

static void finish(MPI_Request *req)
{
    if (*req != MPI_REQUEST_NULL) MPI_Wait(req, MPI_STATUS_IGNORE);
}

static void run(int nb)
{
    enum { C = 5 };
    int max = (wsize + 1) * C * 4;
    int *s = malloc(sizeof(int) * (size_t)max), *r = malloc(sizeof(int) * (size_t)max);
    int *sc = malloc(sizeof(int) * (size_t)wsize), *sd = malloc(sizeof(int) * (size_t)wsize);
    int *rc = malloc(sizeof(int) * (size_t)wsize), *rd = malloc(sizeof(int) * (size_t)wsize);
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t)wsize);
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Request *rp = nb ? &req : NULL;
    const char *how = nb ? "nonblocking" : "blocking";
    MPI_Op left;
    int i, j, g, root;
    MPI_Op_create(left_op, 0, &left);

    if (nb) MPI_Ibarrier(ic, rp);
    else MPI_Barrier(ic);
    finish(&req);

    /* Rooted collectives: root group g (0 = A), root rank `root` within it. */
    for (g = 0; g < 2; ++g) {
        int gsize = g == 0 ? k : wsize - k;
        int mine = (g == 0) == in_a; /* my group holds the root */
        for (root = 0; root < gsize; ++root) {
            int rootw = g == 0 ? root : k + root;
            int arg = mine ? (lrank == root ? MPI_ROOT : MPI_PROC_NULL) : root;
            int am_root = arg == MPI_ROOT;
            /* bcast */
            for (j = 0; j < C; ++j) s[j] = am_root ? val(wrank, j) : -1;
            if (nb) MPI_Ibcast(s, C, MPI_INT, arg, ic, rp);
            else MPI_Bcast(s, C, MPI_INT, arg, ic);
            finish(&req);
            if (!mine)
                for (j = 0; j < C; ++j)
                    CHECK(s[j] == val(rootw, j), "%s bcast root %d: [%d] = %d", how, rootw, j,
                          s[j]);
            /* gather: block i = remote rank i's values */
            for (j = 0; j < C; ++j) s[j] = val(wrank, j);
            for (j = 0; j < rsize * C; ++j) r[j] = -1;
            if (nb) MPI_Igather(s, C, MPI_INT, r, C, MPI_INT, arg, ic, rp);
            else MPI_Gather(s, C, MPI_INT, r, C, MPI_INT, arg, ic);
            finish(&req);
            if (am_root)
                for (i = 0; i < rsize; ++i)
                    for (j = 0; j < C; ++j)
                        CHECK(r[i * C + j] == val(rworld(i), j), "%s gather: block %d [%d] = %d",
                              how, i, j, r[i * C + j]);
            /* gatherv: remote rank i sends i+1 elements, at displacement 2*i*C */
            for (i = 0; i < rsize; ++i) {
                rc[i] = i + 1;
                rd[i] = 2 * i * C;
            }
            for (j = 0; j < 2 * rsize * C; ++j) r[j] = -1;
            if (nb) MPI_Igatherv(s, lrank + 1, MPI_INT, r, rc, rd, MPI_INT, arg, ic, rp);
            else MPI_Gatherv(s, lrank + 1, MPI_INT, r, rc, rd, MPI_INT, arg, ic);
            finish(&req);
            if (am_root)
                for (i = 0; i < rsize; ++i)
                    for (j = 0; j <= i; ++j)
                        CHECK(r[rd[i] + j] == val(rworld(i), j), "%s gatherv: block %d [%d] = %d",
                              how, i, j, r[rd[i] + j]);
            /* scatter: remote rank i gets elements i*C.. of the root's buffer */
            for (j = 0; j < rsize * C; ++j) s[j] = val(wrank, j);
            for (j = 0; j < C; ++j) r[j] = -1;
            if (nb) MPI_Iscatter(s, C, MPI_INT, r, C, MPI_INT, arg, ic, rp);
            else MPI_Scatter(s, C, MPI_INT, r, C, MPI_INT, arg, ic);
            finish(&req);
            if (!mine)
                for (j = 0; j < C; ++j)
                    CHECK(r[j] == val(rootw, lrank * C + j), "%s scatter: [%d] = %d", how, j, r[j]);
            /* scatterv */
            for (i = 0; i < rsize; ++i) {
                sc[i] = i + 1;
                sd[i] = 2 * i * C;
            }
            for (j = 0; j < 2 * rsize * C; ++j) s[j] = val(wrank, j);
            for (j = 0; j < C; ++j) r[j] = -1;
            if (nb) MPI_Iscatterv(s, sc, sd, MPI_INT, r, lrank + 1, MPI_INT, arg, ic, rp);
            else MPI_Scatterv(s, sc, sd, MPI_INT, r, lrank + 1, MPI_INT, arg, ic);
            finish(&req);
            if (!mine)
                for (j = 0; j <= lrank; ++j)
                    CHECK(r[j] == val(rootw, 2 * lrank * C + j), "%s scatterv: [%d] = %d", how, j,
                          r[j]);
            /* reduce: sum and the order-sensitive op over the other group */
            for (j = 0; j < C; ++j) s[j] = val(wrank, j);
            if (nb) MPI_Ireduce(s, r, C, MPI_INT, MPI_SUM, arg, ic, rp);
            else MPI_Reduce(s, r, C, MPI_INT, MPI_SUM, arg, ic);
            finish(&req);
            if (am_root)
                for (j = 0; j < C; ++j) {
                    int e = 0;
                    for (i = 0; i < rsize; ++i) e += val(rworld(i), j);
                    CHECK(r[j] == e, "%s reduce sum: [%d] = %d, expected %d", how, j, r[j], e);
                }
            if (nb) MPI_Ireduce(s, r, C, MPI_INT, left, arg, ic, rp);
            else MPI_Reduce(s, r, C, MPI_INT, left, arg, ic);
            finish(&req);
            if (am_root)
                for (j = 0; j < C; ++j)
                    CHECK(r[j] == val(rworld(0), j), "%s reduce (non-commutative): [%d] = %d",
                          how, j, r[j]);
        }
    }

    /* allgather / allgatherv: the remote group's blocks */
    for (j = 0; j < C; ++j) s[j] = val(wrank, j);
    for (j = 0; j < rsize * C; ++j) r[j] = -1;
    if (nb) MPI_Iallgather(s, C, MPI_INT, r, C, MPI_INT, ic, rp);
    else MPI_Allgather(s, C, MPI_INT, r, C, MPI_INT, ic);
    finish(&req);
    for (i = 0; i < rsize; ++i)
        for (j = 0; j < C; ++j)
            CHECK(r[i * C + j] == val(rworld(i), j), "%s allgather: block %d [%d] = %d", how, i,
                  j, r[i * C + j]);
    for (i = 0; i < rsize; ++i) {
        rc[i] = i + 1;
        rd[i] = 2 * (rsize - 1 - i) * C; /* reversed order */
    }
    for (j = 0; j < 2 * rsize * C; ++j) r[j] = -1;
    if (nb) MPI_Iallgatherv(s, lrank + 1, MPI_INT, r, rc, rd, MPI_INT, ic, rp);
    else MPI_Allgatherv(s, lrank + 1, MPI_INT, r, rc, rd, MPI_INT, ic);
    finish(&req);
    for (i = 0; i < rsize; ++i)
        for (j = 0; j <= i; ++j)
            CHECK(r[rd[i] + j] == val(rworld(i), j), "%s allgatherv: block %d [%d] = %d", how, i,
                  j, r[rd[i] + j]);

    /* alltoall / v / w: block for remote rank i is val(me, i*C + j) */
    for (j = 0; j < rsize * C; ++j) s[j] = val(wrank, j);
    for (j = 0; j < rsize * C; ++j) r[j] = -1;
    if (nb) MPI_Ialltoall(s, C, MPI_INT, r, C, MPI_INT, ic, rp);
    else MPI_Alltoall(s, C, MPI_INT, r, C, MPI_INT, ic);
    finish(&req);
    for (i = 0; i < rsize; ++i)
        for (j = 0; j < C; ++j)
            CHECK(r[i * C + j] == val(rworld(i), lrank * C + j), "%s alltoall: block %d [%d] = %d",
                  how, i, j, r[i * C + j]);
    for (i = 0; i < rsize; ++i) {
        sc[i] = (lrank + i) % 3;           /* to remote i */
        sd[i] = i * C;
        rc[i] = (i + lrank) % 3;           /* from remote i: its (its rank + my rank) % 3 */
        rd[i] = (rsize - 1 - i) * C;
        ty[i] = MPI_INT;
    }
    for (j = 0; j < rsize * C; ++j) r[j] = -1;
    if (nb) MPI_Ialltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, ic, rp);
    else MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, ic);
    finish(&req);
    for (i = 0; i < rsize; ++i)
        for (j = 0; j < rc[i]; ++j)
            CHECK(r[rd[i] + j] == val(rworld(i), lrank * C + j),
                  "%s alltoallv: block %d [%d] = %d", how, i, j, r[rd[i] + j]);
    for (i = 0; i < rsize; ++i) {
        sd[i] *= (int)sizeof(int);
        rd[i] *= (int)sizeof(int);
    }
    for (j = 0; j < rsize * C; ++j) r[j] = -1;
    if (nb) MPI_Ialltoallw(s, sc, sd, ty, r, rc, rd, ty, ic, rp);
    else MPI_Alltoallw(s, sc, sd, ty, r, rc, rd, ty, ic);
    finish(&req);
    for (i = 0; i < rsize; ++i)
        for (j = 0; j < rc[i]; ++j)
            CHECK(r[rd[i] / 4 + j] == val(rworld(i), lrank * C + j),
                  "%s alltoallw: block %d [%d] = %d", how, i, j, r[rd[i] / 4 + j]);

    /* allreduce: the remote group's reduction */
    for (j = 0; j < C; ++j) s[j] = val(wrank, j);
    if (nb) MPI_Iallreduce(s, r, C, MPI_INT, MPI_SUM, ic, rp);
    else MPI_Allreduce(s, r, C, MPI_INT, MPI_SUM, ic);
    finish(&req);
    for (j = 0; j < C; ++j) {
        int e = 0;
        for (i = 0; i < rsize; ++i) e += val(rworld(i), j);
        CHECK(r[j] == e, "%s allreduce: [%d] = %d, expected %d", how, j, r[j], e);
    }
    if (nb) MPI_Iallreduce(s, r, C, MPI_INT, left, ic, rp);
    else MPI_Allreduce(s, r, C, MPI_INT, left, ic);
    finish(&req);
    for (j = 0; j < C; ++j)
        CHECK(r[j] == val(rworld(0), j), "%s allreduce (non-commutative): [%d] = %d", how, j,
              r[j]);

    /* reduce_scatter: each group reduces vectors of sum(recvcounts) elements, which the
     * standard requires to be the same in both groups; rank i of a group gets its share of the
     * other group's sum. reduce_scatter_block (vectors of lsize * count) only with equal sizes. */
    {
        int total = 12; /* elements reduced, the same in both groups */
        int mine = total / lsize + (lrank < total % lsize), off = 0;
        for (i = 0; i < lsize; ++i) {
            rc[i] = total / lsize + (i < total % lsize);
            if (i < lrank) off += rc[i];
        }
        for (j = 0; j < total; ++j) s[j] = val(wrank, j);
        for (j = 0; j < total; ++j) r[j] = -1;
        if (nb) MPI_Ireduce_scatter(s, r, rc, MPI_INT, MPI_SUM, ic, rp);
        else MPI_Reduce_scatter(s, r, rc, MPI_INT, MPI_SUM, ic);
        finish(&req);
        for (j = 0; j < mine; ++j) {
            int e = 0;
            for (i = 0; i < rsize; ++i) e += val(rworld(i), off + j);
            CHECK(r[j] == e, "%s reduce_scatter: [%d] = %d, expected %d", how, j, r[j], e);
        }
        if (lsize == rsize) {
            for (j = 0; j < lsize * C; ++j) s[j] = val(wrank, j);
            if (nb) MPI_Ireduce_scatter_block(s, r, C, MPI_INT, MPI_SUM, ic, rp);
            else MPI_Reduce_scatter_block(s, r, C, MPI_INT, MPI_SUM, ic);
            finish(&req);
            for (j = 0; j < C; ++j) {
                int e = 0;
                for (i = 0; i < rsize; ++i) e += val(rworld(i), lrank * C + j);
                CHECK(r[j] == e, "%s reduce_scatter_block: [%d] = %d, expected %d", how, j, r[j],
                      e);
            }
        }
    }
    MPI_Op_free(&left);
    free(s);
    free(r);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(ty);
}

int main(int argc, char **argv)
{
    MPI_Comm local;
    int total;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize >= 2) {
        k = wsize / 3 + 1; /* group A: [0,k), B: [k,n); unequal sizes from 3 ranks on */
        if (k >= wsize) k = wsize - 1;
        in_a = wrank < k;
        MPI_Comm_split(MPI_COMM_WORLD, in_a, wrank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, in_a ? k : 0, 42, &ic);
        MPI_Comm_size(ic, &lsize);
        MPI_Comm_remote_size(ic, &rsize);
        MPI_Comm_rank(ic, &lrank);
        CHECK(lrank == (in_a ? wrank : wrank - k), "local rank %d", lrank);
        CHECK(lworld(lrank) == wrank, "local world rank");
        run(0);
        run(1);
        /* Scan is not defined on intercommunicators: an error, not a hang. */
        MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
        {
            int x = 1, y = 0, rc = MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, ic);
            CHECK(rc != MPI_SUCCESS, "MPI_Scan on an intercommunicator succeeded");
        }
        MPI_Comm_free(&ic);
        MPI_Comm_free(&local);
    }
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) {
        if (total) printf(" Found %d errors\n", total);
        else printf(" No Errors\n");
    }
    MPI_Finalize();
    return total != 0;
}
