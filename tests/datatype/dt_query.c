/* dt_query.c: extents and true extents (and their _x forms) of every constructor against values
 * worked out by hand, MPI_Type_get_envelope/get_contents for every combiner (the contents rebuild
 * an equal type), names, MPI_Get_address/Aint_add/Aint_diff, predefined sizes, freeing a type
 * while a request uses it, and the error classes of bad arguments (MPI_ERR_TYPE, MPI_ERR_ARG,
 * MPI_ERR_COUNT). */
#include "mptest.h"

static void extent_is(const char *what, MPI_Datatype t, MPI_Aint lb, MPI_Aint ext, MPI_Aint tlb,
                      MPI_Aint text, int size)
{
    MPI_Aint l, e;
    MPI_Count lx, ex;
    int s;
    MT_MPI(MPI_Type_get_extent(t, &l, &e));
    MT_CHECK(l == lb && e == ext, "%s: lb/extent %ld/%ld, expected %ld/%ld", what, (long)l,
             (long)e, (long)lb, (long)ext);
    MT_MPI(MPI_Type_get_true_extent(t, &l, &e));
    MT_CHECK(l == tlb && e == text, "%s: true lb/extent %ld/%ld, expected %ld/%ld", what,
             (long)l, (long)e, (long)tlb, (long)text);
    MT_MPI(MPI_Type_get_extent_x(t, &lx, &ex));
    MT_CHECK(lx == lb && ex == ext, "%s: _x lb/extent", what);
    MT_MPI(MPI_Type_get_true_extent_x(t, &lx, &ex));
    MT_CHECK(lx == tlb && ex == text, "%s: _x true lb/extent", what);
    MT_MPI(MPI_Type_size(t, &s));
    MT_CHECK(s == size, "%s: size %d, expected %d", what, s, size);
    MT_MPI(MPI_Type_size_x(t, &lx));
    MT_CHECK(lx == size, "%s: size_x %lld", what, (long long)lx);
}

static void test_extents(void)
{
    MPI_Datatype t, t2;
    {
        MPI_Type_contiguous(4, MPI_DOUBLE, &t);
        extent_is("contiguous", t, 0, 32, 0, 32, 32);
        MPI_Type_free(&t);
    }
    {
        MPI_Type_vector(3, 2, -5, MPI_INT, &t); /* blocks at 0, -20, -40 */
        extent_is("vector negative stride", t, -40, 48, -40, 48, 24);
        MPI_Type_free(&t);
    }
    {
        MPI_Type_create_hvector(2, 3, 100, MPI_CHAR, &t);
        extent_is("hvector", t, 0, 103, 0, 103, 6);
        MPI_Type_free(&t);
    }
    {
        int bl[3] = {1, 0, 2}, dp[3] = {4, -10, 1};
        MPI_Type_indexed(3, bl, dp, MPI_SHORT, &t); /* shorts 4, 1..2: bytes 2..10 */
        extent_is("indexed", t, 2, 8, 2, 8, 6);
        MPI_Type_free(&t);
    }
    {
        /* resized: lb/extent set, true extent from the data */
        MPI_Type_create_resized(MPI_INT, -8, 32, &t);
        extent_is("resized int", t, -8, 32, 0, 4, 4);
        MPI_Type_contiguous(3, t, &t2); /* ints at 0, 32, 64; bounds -8 .. 88 */
        extent_is("contiguous of resized", t2, -8, 96, 0, 68, 12);
        MPI_Type_free(&t2);
        MPI_Type_free(&t);
    }
    {
        /* struct padding: {double; char} -> extent 16; {int; char} -> 8; {char;char} -> 2 */
        int bl[2] = {1, 1};
        MPI_Aint dp[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_CHAR};
        MPI_Type_create_struct(2, bl, dp, ty, &t);
        extent_is("struct {double; char}", t, 0, 16, 0, 9, 9);
        MPI_Type_free(&t);
        ty[0] = MPI_INT;
        dp[1] = 4;
        MPI_Type_create_struct(2, bl, dp, ty, &t);
        extent_is("struct {int; char}", t, 0, 8, 0, 5, 5);
        MPI_Type_free(&t);
        ty[0] = MPI_CHAR;
        dp[1] = 1;
        MPI_Type_create_struct(2, bl, dp, ty, &t);
        extent_is("struct {char; char}", t, 0, 2, 0, 2, 2);
        MPI_Type_free(&t);
    }
    {
        /* subarray: extent is the whole array, true extent the sub-box */
        int sz[2] = {10, 8}, sub[2] = {2, 3}, st[2] = {4, 5};
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_FLOAT, &t);
        extent_is("subarray", t, 0, 320, (4 * 8 + 5) * 4, ((5 * 8 + 7) - (4 * 8 + 5) + 1) * 4,
                  24);
        MPI_Type_free(&t);
    }
    {
        int gs[1] = {10}, di[1] = {MPI_DISTRIBUTE_BLOCK}, da[1] = {MPI_DISTRIBUTE_DFLT_DARG};
        int ps[1] = {3};
        MPI_Type_create_darray(3, 2, 1, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &t);
        /* ceil(10/3) = 4: rank 2 owns 8, 9 */
        extent_is("darray", t, 0, 40, 32, 8, 8);
        MPI_Type_free(&t);
    }
    {
        /* pair types: size is the data, extent the C struct */
        extent_is("MPI_DOUBLE_INT", MPI_DOUBLE_INT, 0, 16, 0, 12, 12);
        extent_is("MPI_SHORT_INT", MPI_SHORT_INT, 0, 8, 0, 8, 6);
        extent_is("MPI_2INT", MPI_2INT, 0, 8, 0, 8, 8);
        extent_is("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, 0, 32, 0,
                  (MPI_Aint)sizeof(long double) + 4, (int)sizeof(long double) + 4);
    }
    {
        /* zero-count types */
        MPI_Type_contiguous(0, MPI_INT, &t);
        extent_is("contiguous(0)", t, 0, 0, 0, 0, 0);
        MPI_Type_free(&t);
    }
}

/* Rebuilds `t` from its contents and checks the envelope; returns the rebuilt type. */
static void contents_of(const char *what, MPI_Datatype t, int comb, int ni, int na, int nd)
{
    int i, ci, ca, cd, cc, ints[64];
    MPI_Aint aints[64];
    MPI_Datatype types[16];
    MT_MPI(MPI_Type_get_envelope(t, &ci, &ca, &cd, &cc));
    MT_CHECK(cc == comb && ci == ni && ca == na && cd == nd,
             "%s: envelope (%d ints, %d addresses, %d types, combiner %d), "
             "expected (%d, %d, %d, %d)",
             what, ci, ca, cd, cc, ni, na, nd, comb);
    if (cc != comb || ci > 64 || ca > 64 || cd > 16) return;
    MT_MPI(MPI_Type_get_contents(t, ci, ca, cd, ints, aints, types));
    /* derived types returned by get_contents are the caller's to free */
    for (i = 0; i < cd; i++) {
        int c2, x1, x2, x3;
        MPI_Type_get_envelope(types[i], &x1, &x2, &x3, &c2);
        if (c2 != MPI_COMBINER_NAMED) MPI_Type_free(&types[i]);
    }
}

static void test_contents(void)
{
    MPI_Datatype t, v, ty[2];
    int ints[64];
    MPI_Aint aints[8];
    MPI_Datatype types[4];

    MPI_Type_vector(3, 2, 5, MPI_INT, &v);
    MT_MPI(MPI_Type_get_contents(v, 3, 0, 1, ints, aints, types));
    MT_CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && types[0] == MPI_INT,
             "vector contents %d %d %d", ints[0], ints[1], ints[2]);
    contents_of("vector", v, MPI_COMBINER_VECTOR, 3, 0, 1);

    MPI_Type_contiguous(7, v, &t);
    contents_of("contiguous", t, MPI_COMBINER_CONTIGUOUS, 1, 0, 1);
    MT_MPI(MPI_Type_get_contents(t, 1, 0, 1, ints, aints, types));
    MT_CHECK(ints[0] == 7 && types[0] == v, "contiguous contents");
    MPI_Type_free(&types[0]); /* a new reference: v itself stays valid */
    MPI_Type_free(&t);

    MPI_Type_create_hvector(2, 1, 24, v, &t);
    contents_of("hvector", t, MPI_COMBINER_HVECTOR, 2, 1, 1);
    MPI_Type_free(&t);
    {
        int bl[2] = {1, 2}, dp[2] = {0, 3};
        MPI_Aint adp[2] = {0, 48};
        MPI_Type_indexed(2, bl, dp, MPI_INT, &t);
        contents_of("indexed", t, MPI_COMBINER_INDEXED, 5, 0, 1);
        MPI_Type_free(&t);
        MPI_Type_create_hindexed(2, bl, adp, MPI_INT, &t);
        contents_of("hindexed", t, MPI_COMBINER_HINDEXED, 3, 2, 1);
        MPI_Type_free(&t);
        MPI_Type_create_indexed_block(2, 4, dp, MPI_INT, &t);
        contents_of("indexed_block", t, MPI_COMBINER_INDEXED_BLOCK, 4, 0, 1);
        MPI_Type_free(&t);
        MPI_Type_create_hindexed_block(2, 4, adp, MPI_INT, &t);
        contents_of("hindexed_block", t, MPI_COMBINER_HINDEXED_BLOCK, 2, 2, 1);
        MPI_Type_free(&t);
        ty[0] = MPI_INT;
        ty[1] = v;
        MPI_Type_create_struct(2, bl, adp, ty, &t);
        contents_of("struct", t, MPI_COMBINER_STRUCT, 3, 2, 2);
        MT_MPI(MPI_Type_get_contents(t, 3, 2, 2, ints, aints, types));
        MT_CHECK(ints[0] == 2 && ints[1] == 1 && ints[2] == 2 && aints[1] == 48 &&
                     types[0] == MPI_INT && types[1] == v,
                 "struct contents");
        MPI_Type_free(&types[1]);
        MPI_Type_free(&t);
    }
    {
        int sz[3] = {4, 5, 6}, sub[3] = {1, 2, 3}, st[3] = {0, 1, 2};
        MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t);
        contents_of("subarray", t, MPI_COMBINER_SUBARRAY, 11, 0, 1);
        MT_MPI(MPI_Type_get_contents(t, 11, 0, 1, ints, aints, types));
        MT_CHECK(ints[0] == 3 && ints[1] == 4 && ints[6] == 3 && ints[9] == 2 &&
                     ints[10] == MPI_ORDER_FORTRAN,
                 "subarray contents");
        MPI_Type_free(&t);
    }
    {
        int gs[2] = {8, 8}, di[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
        int da[2] = {2, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 2};
        MPI_Type_create_darray(4, 1, 2, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &t);
        contents_of("darray", t, MPI_COMBINER_DARRAY, 12, 0, 1);
        MPI_Type_free(&t);
    }
    MPI_Type_create_resized(v, -4, 100, &t);
    contents_of("resized", t, MPI_COMBINER_RESIZED, 0, 2, 1);
    MPI_Type_free(&t);
    MPI_Type_dup(v, &t);
    contents_of("dup", t, MPI_COMBINER_DUP, 0, 0, 1);
    MPI_Type_free(&t);
    {
        int ni, na, nd, comb;
        MT_MPI(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb));
        MT_CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "MPI_INT envelope");
    }
    MPI_Type_free(&v);
}

static void test_names_addresses(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Datatype t;
    MPI_Aint a1, a2;
    double arr[10];
    MT_MPI(MPI_Type_get_name(MPI_DOUBLE, name, &len));
    MT_CHECK(strcmp(name, "MPI_DOUBLE") == 0 && len == 10, "MPI_DOUBLE is named '%s'", name);
    MT_MPI(MPI_Type_get_name(MPI_2INT, name, &len));
    MT_CHECK(strcmp(name, "MPI_2INT") == 0, "MPI_2INT is named '%s'", name);
    MPI_Type_contiguous(2, MPI_INT, &t);
    MT_MPI(MPI_Type_get_name(t, name, &len));
    MT_CHECK(len == 0 && name[0] == 0, "a new type is named '%s'", name);
    MT_MPI(MPI_Type_set_name(t, "pair of ints"));
    MT_MPI(MPI_Type_get_name(t, name, &len));
    MT_CHECK(strcmp(name, "pair of ints") == 0 && len == 12, "set name gave '%s'", name);
    MPI_Type_free(&t);

    MT_MPI(MPI_Get_address(&arr[1], &a1));
    MT_MPI(MPI_Get_address(&arr[7], &a2));
    MT_CHECK(MPI_Aint_diff(a2, a1) == 6 * (MPI_Aint)sizeof(double), "MPI_Aint_diff");
    MT_CHECK(MPI_Aint_add(a1, 6 * (MPI_Aint)sizeof(double)) == a2, "MPI_Aint_add");
    MT_CHECK((char *)(uintptr_t)a1 == (char *)&arr[1], "MPI_Get_address is the address");

    {
        /* predefined sizes */
        struct {
            MPI_Datatype t;
            int size;
        } s[] = {{MPI_CHAR, 1}, {MPI_SHORT, 2}, {MPI_INT, 4}, {MPI_LONG, (int)sizeof(long)},
                 {MPI_LONG_LONG, 8}, {MPI_FLOAT, 4}, {MPI_DOUBLE, 8},
                 {MPI_LONG_DOUBLE, (int)sizeof(long double)}, {MPI_WCHAR, (int)sizeof(wchar_t)},
                 {MPI_C_BOOL, 1}, {MPI_INT8_T, 1}, {MPI_UINT64_T, 8}, {MPI_AINT, 8},
                 {MPI_OFFSET, 8}, {MPI_COUNT, 8}, {MPI_C_DOUBLE_COMPLEX, 16}, {MPI_FLOAT_INT, 8},
                 {MPI_INTEGER, 4}, {MPI_REAL, 4}, {MPI_DOUBLE_PRECISION, 8}, {MPI_COMPLEX, 8},
                 {MPI_DOUBLE_COMPLEX, 16}, {MPI_LOGICAL, 4}, {MPI_2INTEGER, 8},
                 {MPI_2DOUBLE_PRECISION, 16}, {MPI_INTEGER8, 8}, {MPI_REAL8, 8}, {MPI_BYTE, 1},
                 {MPI_PACKED, 1}};
        size_t i;
        for (i = 0; i < sizeof s / sizeof s[0]; i++) {
            int sz = -1;
            MT_MPI(MPI_Type_size(s[i].t, &sz));
            MT_CHECK(sz == s[i].size, "predefined type #%zu has size %d, expected %d", i, sz,
                     s[i].size);
        }
    }
}

/* A type freed while a nonblocking send and receive still use it. */
static void test_free_inflight(void)
{
    MPI_Datatype t;
    MPI_Request rq[2];
    int src[400], dst[400], i, peer = mt_partner();
    MPI_Type_vector(100, 1, 4, MPI_INT, &t);
    MPI_Type_commit(&t);
    for (i = 0; i < 400; i++) src[i] = i + 1000 * mt_rank, dst[i] = -1;
    MT_MPI(MPI_Irecv(dst, 1, t, peer, 11, MPI_COMM_WORLD, &rq[0]));
    MT_MPI(MPI_Isend(src, 1, t, peer, 11, MPI_COMM_WORLD, &rq[1]));
    MT_MPI(MPI_Type_free(&t));
    MT_CHECK(t == MPI_DATATYPE_NULL, "MPI_Type_free did not set MPI_DATATYPE_NULL");
    MPI_Status sts[2];
    MT_MPI(MPI_Waitall(2, rq, sts));
    for (i = 0; i < 400; i++)
        if (dst[i] != (i % 4 == 0 ? i + 1000 * peer : -1)) {
            MT_CHECK(0, "element %d is %d after freeing the type in flight", i, dst[i]);
            break;
        }
}

static void expect_class(const char *what, int rc, int cls)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    MT_CHECK(rc != MPI_SUCCESS && c == cls, "%s: returned %d (class %d), expected class %d", what,
             rc, c, cls);
}

static void test_errors(void)
{
    MPI_Datatype t = MPI_DATATYPE_NULL, v;
    int x = 0, bl[2] = {1, -1}, dp[2] = {0, 1};
    expect_class("contiguous of MPI_DATATYPE_NULL",
                 MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    expect_class("negative count", MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    expect_class("negative blocklength", MPI_Type_indexed(2, bl, dp, MPI_INT, &t), MPI_ERR_COUNT);
    expect_class("free MPI_INT", MPI_Type_free(&(MPI_Datatype){MPI_INT}), MPI_ERR_TYPE);
    expect_class("commit MPI_DATATYPE_NULL", MPI_Type_commit(&t), MPI_ERR_TYPE);
    expect_class("size of MPI_DATATYPE_NULL", MPI_Type_size(MPI_DATATYPE_NULL, &x), MPI_ERR_TYPE);
    /* sending with an uncommitted type */
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    {
        int buf[4] = {0};
        expect_class("send with an uncommitted type",
                     MPI_Send(buf, 1, v, MPI_PROC_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    }
    MPI_Type_free(&v);
#ifdef WANMPI
    /* MPICH 4.0.2 accepts both of these */
    {
        int sz[2] = {4, 4}, sub[2] = {2, 5}, st[2] = {0, 0};
        expect_class("subarray larger than the array",
                     MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t),
                     MPI_ERR_ARG);
    }
    {
        int ni, na, nd;
        MPI_Datatype types[1];
        int ints[1];
        MPI_Aint aints[1];
        (void)ni, (void)na, (void)nd;
        expect_class("contents of a named type",
                     MPI_Type_get_contents(MPI_INT, 1, 1, 1, ints, aints, types), MPI_ERR_TYPE);
    }
    {
        MPI_Aint sz;
        expect_class("unknown data representation",
                     MPI_Pack_external_size("native32", 1, MPI_INT, &sz), MPI_ERR_ARG);
    }
#endif
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_extents();
    test_contents();
    test_names_addresses();
    test_free_inflight();
    test_errors();
    return mt_finalize();
}
