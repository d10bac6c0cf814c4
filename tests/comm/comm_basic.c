/* Communicator basics: dup (and with info), compare, test_inter, names, info, group, free,
 * context isolation between a communicator and its duplicate, many dups (context allocation),
 * and the errors of the communicator calls under MPI_ERRORS_RETURN. */
#include "commtest.h"

static void check_names(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    char longname[300];
    int len = -1;
    MPI_Comm d;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    MT_CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name '%s' len %d", name,
             len);
    MPI_Comm_get_name(MPI_COMM_SELF, name, &len);
    MT_CHECK(strcmp(name, "MPI_COMM_SELF") == 0, "self name '%s'", name);
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_get_name(d, name, &len);
    MT_CHECK(len == 0 && name[0] == 0, "dup has name '%s' (len %d), expected empty", name, len);
    MPI_Comm_set_name(d, "my dup");
    MPI_Comm_get_name(d, name, &len);
    MT_CHECK(strcmp(name, "my dup") == 0 && len == 6, "set name gave '%s' len %d", name, len);
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    MPI_Comm_set_name(d, longname);
    MPI_Comm_get_name(d, name, &len);
    MT_CHECK(len == MPI_MAX_OBJECT_NAME - 1 && (int)strlen(name) == len,
             "long name truncated to %d, expected %d", len, MPI_MAX_OBJECT_NAME - 1);
    MPI_Comm_free(&d);
}

static void check_compare(void)
{
    MPI_Comm d, rev, half;
    int res = -1, inter = -1;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_compare(d, d, &res);
    MT_CHECK(res == MPI_IDENT, "compare(d, d) = %d", res);
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res);
    MT_CHECK(res == MPI_IDENT, "compare(world, world) = %d", res);
    MPI_Comm_compare(MPI_COMM_WORLD, d, &res);
    MT_CHECK(res == MPI_CONGRUENT, "compare(world, dup) = %d", res);
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res);
    MT_CHECK(res == (mt_size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(world, self) = %d",
             res);
    MPI_Comm_split(MPI_COMM_WORLD, 0, mt_size - mt_rank, &rev);
    MPI_Comm_compare(MPI_COMM_WORLD, rev, &res);
    MT_CHECK(res == (mt_size == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "compare(world, reversed) = %d",
             res);
    MPI_Comm_split(MPI_COMM_WORLD, mt_rank < (mt_size + 1) / 2, mt_rank, &half);
    MPI_Comm_compare(MPI_COMM_WORLD, half, &res);
    MT_CHECK(res == (mt_size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(world, half) = %d",
             res);
    MPI_Comm_test_inter(d, &inter);
    MT_CHECK(inter == 0, "dup is an intercommunicator");
    MPI_Comm_free(&d);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&half);
    MT_CHECK(d == MPI_COMM_NULL && rev == MPI_COMM_NULL, "free did not set MPI_COMM_NULL");
}

/* A message on a duplicate never matches a receive on the original, even with wildcards. */
static void check_isolation(void)
{
    MPI_Comm d, dd;
    int to = (mt_rank + 1) % mt_size, from = (mt_rank - 1 + mt_size) % mt_size;
    int a = 1000 + mt_rank, b = 2000 + mt_rank, c = 3000 + mt_rank, x = -1, y = -1, z = -1;
    MPI_Status st;
    MPI_Request r[3];
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_dup(d, &dd);
    /* Send on the duplicates first, so that they arrive before the world message. */
    MPI_Isend(&b, 1, MPI_INT, to, 7, d, &r[0]);
    MPI_Isend(&c, 1, MPI_INT, to, 7, dd, &r[1]);
    MPI_Isend(&a, 1, MPI_INT, to, 7, MPI_COMM_WORLD, &r[2]);
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    MPI_Recv(&z, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dd, MPI_STATUS_IGNORE);
    MPI_Recv(&y, 1, MPI_INT, from, 7, d, MPI_STATUS_IGNORE);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    MT_CHECK(x == 1000 + from && st.MPI_SOURCE == from, "world got %d from %d", x, st.MPI_SOURCE);
    MT_CHECK(y == 2000 + from, "dup got %d", y);
    MT_CHECK(z == 3000 + from, "dup of dup got %d", z);
    MPI_Comm_free(&dd);
    MPI_Comm_free(&d);
}

static void check_many(void)
{
    enum { N = 100 };
    MPI_Comm c[N];
    int i, *world = ct_members(MPI_COMM_WORLD, &i);
    for (i = 0; i < N; i++)
        MPI_Comm_dup(i == 0 ? MPI_COMM_WORLD : c[i - 1], &c[i]);
    /* Traffic on every one of them at once: each must keep its own messages. */
    {
        MPI_Request rq[2 * N];
        int in[N], out[N];
        int to = (mt_rank + 1) % mt_size, from = (mt_rank - 1 + mt_size) % mt_size;
        for (i = 0; i < N; i++) {
            out[i] = i * 100 + mt_rank;
            MPI_Irecv(&in[i], 1, MPI_INT, MPI_ANY_SOURCE, 0, c[i], &rq[i]);
        }
        for (i = N - 1; i >= 0; i--)
            MPI_Isend(&out[i], 1, MPI_INT, to, 0, c[i], &rq[N + i]);
        MPI_Waitall(2 * N, rq, MPI_STATUSES_IGNORE);
        for (i = 0; i < N; i++)
            MT_CHECK(in[i] == i * 100 + from, "comm %d got %d", i, in[i]);
    }
    ct_check_comm(c[N - 1], world, mt_size, "last dup");
    for (i = N - 1; i >= 0; i--)
        MPI_Comm_free(&c[i]);
    /* Create and free in a loop: ids must not run out. */
    for (i = 0; i < 200; i++) {
        MPI_Comm t;
        MPI_Comm_dup(MPI_COMM_WORLD, &t);
        MPI_Comm_free(&t);
    }
    free(world);
}

static void check_info_group(void)
{
    MPI_Comm d, d2;
    MPI_Info info, used;
    MPI_Group g, wg;
    int res = -1, nkeys = -1, flag = 0;
    char val[64];
    MPI_Info_create(&info);
    MPI_Info_set(info, "wanmpi_test_hint", "42");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &d);
    MPI_Info_free(&info);
    MPI_Comm_get_info(d, &used);
    MT_CHECK(used != MPI_INFO_NULL, "Comm_get_info returned MPI_INFO_NULL");
    if (used != MPI_INFO_NULL) {
        MPI_Info_get_nkeys(used, &nkeys);
        MT_CHECK(nkeys >= 0, "nkeys %d", nkeys);
        MPI_Info_free(&used);
    }
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "false");
    MPI_Comm_set_info(d, info);
    MPI_Info_free(&info);
    MPI_Comm_get_info(d, &used);
    if (used != MPI_INFO_NULL) {
        MPI_Info_get(used, "wanmpi_test_hint", sizeof val - 1, val, &flag);
        MPI_Info_free(&used);
    }
    MPI_Comm_dup(d, &d2);
    MPI_Comm_group(d2, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &res);
    MT_CHECK(res == MPI_IDENT, "group of dup vs world group: %d", res);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_Comm_free(&d2);
    MPI_Comm_free(&d);
}

static void check_errors(void)
{
    MPI_Comm w = MPI_COMM_WORLD, d, n = MPI_COMM_NULL;
    int rc, x;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    rc = MPI_Comm_free(&w);
    MT_CHECK(ct_class(rc) == MPI_ERR_COMM, "freeing MPI_COMM_WORLD: class %d", ct_class(rc));
    rc = MPI_Comm_rank(MPI_COMM_NULL, &x);
    MT_CHECK(ct_class(rc) == MPI_ERR_COMM, "rank of MPI_COMM_NULL: class %d", ct_class(rc));
    rc = MPI_Comm_dup(MPI_COMM_NULL, &d);
    MT_CHECK(ct_class(rc) == MPI_ERR_COMM, "dup of MPI_COMM_NULL: class %d", ct_class(rc));
    rc = MPI_Comm_free(&n);
    MT_CHECK(ct_class(rc) == MPI_ERR_COMM, "free of MPI_COMM_NULL: class %d", ct_class(rc));
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
#ifdef WANMPI /* MPICH 4.0 answers these without an error */
    rc = MPI_Comm_remote_size(d, &x);
    MT_CHECK(ct_class(rc) == MPI_ERR_COMM, "remote_size of an intracomm: class %d", ct_class(rc));
    {
        MPI_Comm s;
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        rc = MPI_Comm_split(d, -5, 0, &s);
        MT_CHECK(ct_class(rc) == MPI_ERR_ARG, "split with colour -5: class %d", ct_class(rc));
        rc = MPI_Comm_split_type(d, 12345, 0, MPI_INFO_NULL, &s);
        MT_CHECK(ct_class(rc) == MPI_ERR_ARG, "split_type 12345: class %d", ct_class(rc));
    }
#endif
    MPI_Comm_free(&d);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    check_names();
    check_compare();
    check_isolation();
    check_many();
    check_info_group();
    check_errors();
    return mt_finalize();
}
