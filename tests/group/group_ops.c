/* Every MPI_Group_* call against answers computed here: size, rank, translate_ranks
 * (MPI_PROC_NULL, MPI_UNDEFINED), compare, union / intersection / difference (order), incl /
 * excl / range_incl / range_excl (negative strides, single-element ranges), MPI_GROUP_EMPTY,
 * free, and the error classes of bad arguments under MPI_ERRORS_RETURN. Purely local, so it
 * runs the same on every process. */
#include "commtest.h"

static void expect_group(MPI_Group g, const int *world, int n, const char *what)
{
    MPI_Group wg;
    int size = -1, i, *r, *w, rank = -2, me = ct_world_rank(), myidx = MPI_UNDEFINED;
    MPI_Group_size(g, &size);
    MT_CHECK(size == n, "%s: size %d, expected %d", what, size, n);
    if (size != n)
        return;
    if (n == 0) {
        int res;
        MPI_Group_compare(g, MPI_GROUP_EMPTY, &res);
        MT_CHECK(res == MPI_IDENT, "%s: empty group not identical to MPI_GROUP_EMPTY", what);
    }
    r = (int *)mt_malloc(sizeof(int) * (size_t)(n + 1));
    w = (int *)mt_malloc(sizeof(int) * (size_t)(n + 1));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (i = 0; i < n; i++)
        r[i] = i;
    MPI_Group_translate_ranks(g, n, r, wg, w);
    for (i = 0; i < n; i++) {
        MT_CHECK(w[i] == world[i], "%s: member %d is world %d, expected %d", what, i, w[i],
                 world[i]);
        if (world[i] == me)
            myidx = i;
    }
    MPI_Group_rank(g, &rank);
    MT_CHECK(rank == myidx, "%s: Group_rank %d, expected %d", what, rank, myidx);
    MPI_Group_free(&wg);
    free(r);
    free(w);
}

int main(int argc, char **argv)
{
    MPI_Group wg, g1, g2, g3;
    int n = 0, i, res, *x, *y, rc;
    mt_init(&argc, &argv);
    x = (int *)mt_malloc(sizeof(int) * (size_t)(mt_size + 4));
    y = (int *)mt_malloc(sizeof(int) * (size_t)(mt_size + 4));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (i = 0; i < mt_size; i++)
        x[i] = i;
    expect_group(wg, x, mt_size, "world group");
    expect_group(MPI_GROUP_EMPTY, x, 0, "MPI_GROUP_EMPTY");

    /* incl: reversed odd ranks; excl: the even ranks (same set, other order) */
    n = 0;
    for (i = mt_size - 1; i >= 0; i--)
        if (i % 2)
            x[n++] = i;
    MPI_Group_incl(wg, n, x, &g1);
    expect_group(g1, x, n, "incl reversed odd");
    for (i = 0, n = 0; i < mt_size; i += 2)
        y[n++] = i;
    MPI_Group_excl(wg, n, y, &g2);
    for (i = 1, n = 0; i < mt_size; i += 2)
        y[n++] = i;
    expect_group(g2, y, n, "excl even");
    MPI_Group_compare(g1, g2, &res);
    MT_CHECK(res == (n <= 1 ? MPI_IDENT : MPI_SIMILAR), "compare(incl odd rev, excl even) = %d",
             res);
    MPI_Group_compare(wg, g2, &res);
    MT_CHECK(res == MPI_UNEQUAL, "compare(world, odd) = %d", res);
    MPI_Group_compare(wg, wg, &res);
    MT_CHECK(res == MPI_IDENT, "compare(world, world) = %d", res);

    /* union keeps group1's order then adds group2's new members in group2's order;
     * intersection and difference follow group1. */
    MPI_Group_union(g1, wg, &g3);
    n = 0;
    for (i = mt_size - 1; i >= 0; i--)
        if (i % 2)
            x[n++] = i;
    for (i = 0; i < mt_size; i++)
        if (i % 2 == 0)
            x[n++] = i;
    expect_group(g3, x, n, "union(odd reversed, world)");
    MPI_Group_free(&g3);
    MPI_Group_intersection(wg, g1, &g3);
    for (i = 1, n = 0; i < mt_size; i += 2)
        x[n++] = i;
    expect_group(g3, x, n, "intersection(world, odd reversed)");
    MPI_Group_free(&g3);
    MPI_Group_difference(wg, g1, &g3);
    for (i = 0, n = 0; i < mt_size; i += 2)
        x[n++] = i;
    expect_group(g3, x, n, "difference(world, odd)");
    MPI_Group_free(&g3);
    MPI_Group_difference(g1, wg, &g3);
    expect_group(g3, x, 0, "difference(odd, world)");
    if (g3 != MPI_GROUP_EMPTY)
        MPI_Group_free(&g3);
    MPI_Group_intersection(g1, MPI_GROUP_EMPTY, &g3);
    expect_group(g3, x, 0, "intersection with empty");
    if (g3 != MPI_GROUP_EMPTY)
        MPI_Group_free(&g3);
    MPI_Group_union(MPI_GROUP_EMPTY, g1, &g3);
    for (i = mt_size - 1, n = 0; i >= 0; i--)
        if (i % 2)
            x[n++] = i;
    expect_group(g3, x, n, "union(empty, odd reversed)");
    MPI_Group_free(&g3);

    /* translate_ranks into a smaller group: MPI_UNDEFINED for non-members, MPI_PROC_NULL kept */
    for (i = 0; i < mt_size; i++)
        x[i] = i;
    x[mt_size] = MPI_PROC_NULL;
    MPI_Group_translate_ranks(wg, mt_size + 1, x, g1, y);
    for (i = 0; i < mt_size; i++) {
        int want = i % 2 ? (mt_size - 1 - (mt_size % 2 ? 1 : 0) - i) / 2 : MPI_UNDEFINED;
        MT_CHECK(y[i] == want, "translate world %d -> %d, expected %d", i, y[i], want);
    }
#ifndef WANMPI /* MPICH 4.0 gives MPI_UNDEFINED for a group of one */
    if (mt_size > 1)
#endif
        MT_CHECK(y[mt_size] == MPI_PROC_NULL, "translate MPI_PROC_NULL gave %d", y[mt_size]);
    MPI_Group_free(&g1);
    MPI_Group_free(&g2);
    MT_CHECK(g1 == MPI_GROUP_NULL, "free did not set MPI_GROUP_NULL");

    /* range_incl / range_excl */
    {
        int ranges[3][3];
        /* all ranks backwards: (size-1, 0, -1) */
        ranges[0][0] = mt_size - 1;
        ranges[0][1] = 0;
        ranges[0][2] = -1;
        MPI_Group_range_incl(wg, 1, ranges, &g1);
        for (i = 0; i < mt_size; i++)
            x[i] = mt_size - 1 - i;
        expect_group(g1, x, mt_size, "range_incl (size-1, 0, -1)");
        MPI_Group_free(&g1);
        /* every third from 0, then rank 1 alone (if it exists and is not a multiple of 3) */
        ranges[0][0] = 0;
        ranges[0][1] = mt_size - 1;
        ranges[0][2] = 3;
        n = 0;
        for (i = 0; i < mt_size; i += 3)
            x[n++] = i;
        if (mt_size > 1) {
            ranges[1][0] = 1;
            ranges[1][1] = 1;
            ranges[1][2] = 5;
            x[n++] = 1;
        }
        MPI_Group_range_incl(wg, mt_size > 1 ? 2 : 1, ranges, &g1);
        expect_group(g1, x, n, "range_incl stride 3 + single");
        MPI_Group_range_excl(wg, mt_size > 1 ? 2 : 1, ranges, &g2);
        n = 0;
        for (i = 0; i < mt_size; i++)
            if (i % 3 != 0 && i != 1)
                x[n++] = i;
        expect_group(g2, x, n, "range_excl stride 3 + single");
        MPI_Group_free(&g1);
        if (g2 != MPI_GROUP_EMPTY)
            MPI_Group_free(&g2);
        MPI_Group_incl(wg, 0, x, &g1);
        expect_group(g1, x, 0, "incl of nothing");
        if (g1 != MPI_GROUP_EMPTY)
            MPI_Group_free(&g1);
        MPI_Group_excl(wg, 0, x, &g1);
        for (i = 0; i < mt_size; i++)
            x[i] = i;
        expect_group(g1, x, mt_size, "excl of nothing");
        MPI_Group_free(&g1);

        /* errors */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        rc = MPI_Group_size(MPI_GROUP_NULL, &n);
        MT_CHECK(ct_class(rc) == MPI_ERR_GROUP, "size of MPI_GROUP_NULL: class %d", ct_class(rc));
        x[0] = mt_size;
        rc = MPI_Group_incl(wg, 1, x, &g1);
        MT_CHECK(ct_class(rc) == MPI_ERR_RANK, "incl of rank size: class %d", ct_class(rc));
#ifdef WANMPI /* MPICH 4.0 does not check */
        if (mt_size > 1) {
            x[0] = 0;
            x[1] = 0;
            rc = MPI_Group_excl(wg, 2, x, &g1);
            MT_CHECK(ct_class(rc) == MPI_ERR_RANK, "excl of a rank twice: class %d",
                     ct_class(rc));
        }
#endif
#ifndef OPEN_MPI /* Open MPI 4.1 does not check, and crashes */
        x[0] = -5; /* not MPI_PROC_NULL */
        rc = MPI_Group_translate_ranks(wg, 1, x, wg, y);
        MT_CHECK(ct_class(rc) == MPI_ERR_RANK, "translate rank -5: class %d", ct_class(rc));
#endif
#ifdef WANMPI
        ranges[0][0] = 0;
        ranges[0][1] = 0;
        ranges[0][2] = 0;
        rc = MPI_Group_range_incl(wg, 1, ranges, &g1);
        MT_CHECK(ct_class(rc) == MPI_ERR_ARG, "range stride 0: class %d", ct_class(rc));
        rc = MPI_Group_compare(MPI_GROUP_NULL, wg, &res);
        MT_CHECK(ct_class(rc) == MPI_ERR_GROUP, "compare with GROUP_NULL: class %d",
                 ct_class(rc));
#endif
        g1 = MPI_GROUP_NULL;
        rc = MPI_Group_free(&g1);
        MT_CHECK(ct_class(rc) == MPI_ERR_GROUP, "free of MPI_GROUP_NULL: class %d",
                 ct_class(rc));
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
    MPI_Group_free(&wg);
    free(x);
    free(y);
    return mt_finalize();
}
