/* Cartesian topologies: MPI_Dims_create against known answers, Cart_create (periodic and not,
 * fewer grid points than processes, zero dimensions), Topo_test, Cartdim_get, Cart_get,
 * Cart_coords / Cart_rank round trips for every rank (with wrap-around on periodic dimensions),
 * Cart_shift against coordinates computed here and by traffic, Cart_sub, Cart_map, dup keeps the
 * topology, and errors. */
#include "commtest.h"

struct dims_case {
    int nnodes, ndims, in[4], out[4];
};

static const struct dims_case dims_cases[] = {
    {6, 2, {0, 0}, {3, 2}},
    {7, 2, {0, 0}, {7, 1}},
    {12, 3, {0, 0, 0}, {3, 2, 2}},
    {16, 3, {0, 0, 0}, {4, 2, 2}},
    {24, 3, {0, 0, 0}, {4, 3, 2}},
    {64, 3, {0, 0, 0}, {4, 4, 4}},
    {1, 3, {0, 0, 0}, {1, 1, 1}},
    {30, 2, {0, 0}, {6, 5}},
    {36, 2, {0, 0}, {6, 6}},
    {8, 4, {0, 0, 0, 0}, {2, 2, 2, 1}},
    {210, 3, {0, 0, 0}, {7, 6, 5}},
    {12, 3, {0, 3, 0}, {2, 3, 2}},
    {24, 3, {2, 0, 0}, {2, 4, 3}},
    {16, 3, {0, 0, 4}, {2, 2, 4}},
    {9, 2, {3, 3}, {3, 3}},
    {1024, 2, {0, 0}, {32, 32}},
    {5, 1, {0}, {5}},
};

static void check_dims(void)
{
    size_t i;
    int d[4], k, rc;
    for (i = 0; i < sizeof dims_cases / sizeof dims_cases[0]; i++) {
        const struct dims_case *c = &dims_cases[i];
        memcpy(d, c->in, sizeof d);
        MPI_Dims_create(c->nnodes, c->ndims, d);
        for (k = 0; k < c->ndims; k++)
            MT_CHECK(d[k] == c->out[k], "Dims_create(%d, %d) case %zu: dims[%d] = %d, expected %d",
                     c->nnodes, c->ndims, i, k, d[k], c->out[k]);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    d[0] = 3;
    d[1] = 0;
    rc = MPI_Dims_create(10, 2, d);
    MT_CHECK(ct_class(rc) == MPI_ERR_DIMS, "Dims_create(10, {3, 0}): class %d", ct_class(rc));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

/* Row-major coordinates of r in dims. */
static void coords_of(int r, int nd, const int *dims, int *co)
{
    int i;
    for (i = nd - 1; i >= 0; i--) {
        co[i] = r % dims[i];
        r /= dims[i];
    }
}

static int rank_of(int nd, const int *dims, const int *co)
{
    int i, r = 0;
    for (i = 0; i < nd; i++)
        r = r * dims[i] + co[i];
    return r;
}

static void check_grid(int nd, const int *dims, const int *periods, int n_expected)
{
    MPI_Comm cart, d;
    int i, j, r, st, got_nd = -1, gd[4], gp[4], gc[4], co[4], mine[4];
    MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &cart);
    if (mt_rank >= n_expected) {
        MT_CHECK(cart == MPI_COMM_NULL, "rank %d is outside the grid but got a communicator",
                 mt_rank);
        return;
    }
    {
        int *w = (int *)mt_malloc(sizeof(int) * (size_t)n_expected);
        for (i = 0; i < n_expected; i++)
            w[i] = i;
        ct_check_comm(cart, w, n_expected, "cart");
        free(w);
    }
    MPI_Topo_test(cart, &st);
    MT_CHECK(st == MPI_CART, "Topo_test = %d", st);
    MPI_Cartdim_get(cart, &got_nd);
    MT_CHECK(got_nd == nd, "Cartdim_get = %d, expected %d", got_nd, nd);
    MPI_Comm_rank(cart, &r);
    MPI_Cart_get(cart, 4, gd, gp, gc);
    coords_of(r, nd, dims, mine);
    for (i = 0; i < nd; i++) {
        MT_CHECK(gd[i] == dims[i] && (gp[i] != 0) == (periods[i] != 0) && gc[i] == mine[i],
                 "Cart_get dim %d: (%d, %d, %d), expected (%d, %d, %d)", i, gd[i], gp[i], gc[i],
                 dims[i], periods[i], mine[i]);
    }
    /* coords <-> rank for every rank */
    for (j = 0; j < n_expected; j++) {
        int back = -1;
        MPI_Cart_coords(cart, j, 4, co);
        coords_of(j, nd, dims, gc);
        for (i = 0; i < nd; i++)
            MT_CHECK(co[i] == gc[i], "Cart_coords(%d)[%d] = %d, expected %d", j, i, co[i], gc[i]);
        MPI_Cart_rank(cart, co, &back);
        MT_CHECK(back == j, "Cart_rank(Cart_coords(%d)) = %d", j, back);
        /* wrap-around on periodic dimensions */
        for (i = 0; i < nd; i++)
            if (periods[i])
                co[i] += 2 * dims[i];
        MPI_Cart_rank(cart, co, &back);
        MT_CHECK(back == j, "Cart_rank of wrapped coords of %d = %d", j, back);
    }
    /* shifts */
    for (i = 0; i < nd; i++) {
        int disp;
        for (disp = -2; disp <= 2; disp++) {
            int src = -7, dst = -7, want_src, want_dst, c;
            MPI_Cart_shift(cart, i, disp, &src, &dst);
            memcpy(co, mine, sizeof co);
            c = mine[i] + disp;
            if (periods[i])
                c = ((c % dims[i]) + dims[i]) % dims[i];
            co[i] = c;
            want_dst = (c < 0 || c >= dims[i]) ? MPI_PROC_NULL : rank_of(nd, dims, co);
            c = mine[i] - disp;
            if (periods[i])
                c = ((c % dims[i]) + dims[i]) % dims[i];
            co[i] = c;
            want_src = (c < 0 || c >= dims[i]) ? MPI_PROC_NULL : rank_of(nd, dims, co);
            MT_CHECK(src == want_src && dst == want_dst,
                     "Cart_shift(dim %d, disp %d) = (%d, %d), expected (%d, %d)", i, disp, src,
                     dst, want_src, want_dst);
            /* traffic along the shift */
            {
                int out = r, in = -1;
                MPI_Sendrecv(&out, 1, MPI_INT, dst, 40, &in, 1, MPI_INT, src, 40, cart,
                             MPI_STATUS_IGNORE);
                if (src != MPI_PROC_NULL)
                    MT_CHECK(in == src, "shift traffic: got %d from %d", in, src);
            }
        }
    }
    /* dup keeps the topology */
    MPI_Comm_dup(cart, &d);
    MPI_Topo_test(d, &st);
    MT_CHECK(st == MPI_CART, "dup of cart: Topo_test = %d", st);
    MPI_Cartdim_get(d, &got_nd);
    MT_CHECK(got_nd == nd, "dup of cart: ndims %d", got_nd);
    MPI_Comm_free(&d);

    /* Cart_sub: keep every other dimension, and none */
    if (nd > 0) {
        int remain[4], sub_nd = 0, subdims[4], sz = -1, sr = -1, want_sr = 0, cnt = 1, sub_got;
        MPI_Comm sub;
        for (i = 0; i < nd; i++) {
            remain[i] = i % 2 == 0;
            if (remain[i]) {
                subdims[sub_nd++] = dims[i];
                cnt *= dims[i];
                want_sr = want_sr * dims[i] + mine[i];
            }
        }
        MPI_Cart_sub(cart, remain, &sub);
        MPI_Comm_size(sub, &sz);
        MPI_Comm_rank(sub, &sr);
        MT_CHECK(sz == cnt && sr == want_sr, "Cart_sub: size %d rank %d, expected %d %d", sz, sr,
                 cnt, want_sr);
        MPI_Cartdim_get(sub, &sub_got);
        MT_CHECK(sub_got == sub_nd, "Cart_sub ndims %d, expected %d", sub_got, sub_nd);
        MPI_Cart_coords(sub, sr, 4, co);
        for (i = 0, j = 0; i < nd; i++)
            if (remain[i]) {
                MT_CHECK(co[j] == mine[i], "Cart_sub coord %d = %d, expected %d", j, co[j],
                         mine[i]);
                j++;
            }
        /* members of my sub-grid: those with my coordinates in the dropped dimensions */
        {
            int *w = (int *)mt_malloc(sizeof(int) * (size_t)cnt), k = 0, q;
            for (q = 0; q < n_expected; q++) {
                int qc[4], same = 1;
                coords_of(q, nd, dims, qc);
                for (i = 0; i < nd; i++)
                    if (!remain[i] && qc[i] != mine[i])
                        same = 0;
                if (same)
                    w[k++] = q;
            }
            ct_check_comm(sub, w, k, "Cart_sub");
            free(w);
        }
        MPI_Comm_free(&sub);
        for (i = 0; i < nd; i++)
            remain[i] = 0;
        MPI_Cart_sub(cart, remain, &sub);
        /* MPI-3 and later: every process gets a zero-dimensional grid of its own (MPICH 4.0 gives
         * MPI_COMM_NULL to all but one) */
#ifdef WANMPI
        MT_CHECK(sub != MPI_COMM_NULL, "Cart_sub keeping no dimension gave MPI_COMM_NULL");
#endif
        if (sub != MPI_COMM_NULL) {
            MPI_Comm_size(sub, &sz);
            MT_CHECK(sz == 1, "Cart_sub keeping no dimension: size %d", sz);
            MPI_Comm_free(&sub);
        }
        (void)subdims;
    }
    MPI_Comm_free(&cart);
}

int main(int argc, char **argv)
{
    int dims[4], periods[4], newrank, rc;
    mt_init(&argc, &argv);
    check_dims();

    dims[0] = dims[1] = 0;
    MPI_Dims_create(mt_size, 2, dims);
    periods[0] = 1;
    periods[1] = 0;
    check_grid(2, dims, periods, mt_size);

    dims[0] = dims[1] = dims[2] = 0;
    MPI_Dims_create(mt_size, 3, dims);
    periods[0] = 0;
    periods[1] = 1;
    periods[2] = 1;
    check_grid(3, dims, periods, mt_size);

    dims[0] = mt_size;
    periods[0] = 0;
    check_grid(1, dims, periods, mt_size);
    if (mt_size > 1) {
        dims[0] = mt_size - 1; /* the last rank is left out */
        periods[0] = 1;
        check_grid(1, dims, periods, mt_size - 1);
    }
    check_grid(0, dims, periods, 1);

    dims[0] = mt_size;
    MPI_Cart_map(MPI_COMM_WORLD, 1, dims, periods, &newrank);
    MT_CHECK(newrank >= 0 && newrank < mt_size, "Cart_map gave %d", newrank);
#ifndef OPEN_MPI /* Open MPI 4.1 maps every process, also those outside the grid */
    dims[0] = 1;
    MPI_Cart_map(MPI_COMM_WORLD, 1, dims, periods, &newrank);
    MT_CHECK(newrank == 0 || newrank == MPI_UNDEFINED, "Cart_map to one point gave %d", newrank);
    MT_CHECK(mt_sum(newrank == 0) == 1, "Cart_map to one point: not exactly one rank 0");
#endif

    /* errors */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        int src, dst;
        rc = MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst);
        MT_CHECK(ct_class(rc) == MPI_ERR_TOPOLOGY, "Cart_shift without topology: class %d",
                 ct_class(rc));
#ifdef WANMPI
        {
            MPI_Comm c;
            dims[0] = -1;
            rc = MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c);
            MT_CHECK(ct_class(rc) == MPI_ERR_DIMS, "Cart_create dims -1: class %d", ct_class(rc));
            dims[0] = mt_size + 1;
            rc = MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c);
            MT_CHECK(ct_class(rc) == MPI_ERR_ARG, "Cart_create too big: class %d", ct_class(rc));
            dims[0] = mt_size;
            MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c);
            MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
            rc = MPI_Cart_shift(c, 1, 1, &src, &dst);
            MT_CHECK(ct_class(rc) == MPI_ERR_ARG, "Cart_shift bad direction: class %d",
                     ct_class(rc));
            rc = MPI_Cart_coords(c, mt_size, 1, dims);
            MT_CHECK(ct_class(rc) == MPI_ERR_RANK, "Cart_coords bad rank: class %d",
                     ct_class(rc));
            rc = MPI_Graphdims_get(c, &src, &dst);
            MT_CHECK(ct_class(rc) == MPI_ERR_TOPOLOGY, "Graphdims_get on cart: class %d",
                     ct_class(rc));
            MPI_Comm_free(&c);
        }
#endif
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return mt_finalize();
}
