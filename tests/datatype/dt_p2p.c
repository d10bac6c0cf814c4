/* dt_p2p.c: every datatype constructor through point-to-point, values checked.
 *
 * For each type the test builds, by hand and independently of MPI, the type's typemap as byte
 * blocks of one element plus its extent. Then, with its partner (0<->1, 2<->3, ...; an odd last
 * rank talks to itself, so the self route is covered too):
 *   A  typed send, receive as MPI_PACKED: the bytes must be the source bytes in typemap order
 *      (the packed form of a homogeneous job is the raw data, in wanmpi as in MPICH);
 *   B  MPI_PACKED send of such bytes, typed receive into a sentinel-filled buffer: the typemap's
 *      bytes get the data in order, every other byte keeps the sentinel;
 *   C  typed send, typed receive: the typemap's bytes are copied, the rest untouched;
 * each with a small count (eager) and a count large enough for rendezvous, plus MPI_Get_count /
 * MPI_Get_elements on the status. Types: contiguous, vector (also negative stride), hvector,
 * indexed, hindexed, indexed_block, hindexed_block, struct (mixed basic types), subarray (C and
 * Fortran order), darray (block, cyclic, cyclic(k), none), resized, dup, nested, MPI_BOTTOM with
 * absolute addresses, zero-size types.
 */
#include "mptest.h"

typedef struct {
    MPI_Aint off, len;
} blk_t;

static blk_t *g_map;
static int g_nmap, g_capmap;

static void map_reset(void) { g_nmap = 0; }
static void map_add(MPI_Aint off, MPI_Aint len)
{
    if (g_nmap == g_capmap) {
        g_capmap = g_capmap ? 2 * g_capmap : 64;
        g_map = (blk_t *)realloc(g_map, (size_t)g_capmap * sizeof(blk_t));
    }
    g_map[g_nmap].off = off;
    g_map[g_nmap].len = len;
    g_nmap++;
}

/* Basic elements per element, for MPI_Get_elements (set by each case). */
static MPI_Aint g_elems;

#define SENTINEL 0xEE

/* Runs A, B, C for `count` elements of `t` (typemap in g_map, `extent` bytes apart). */
static void exchange(const char *name, MPI_Datatype t, int count, MPI_Aint extent)
{
    int peer = mt_partner();
    MPI_Aint lo = 0, hi = 0, size = 0, i, k, j;
    int b;
    for (b = 0; b < g_nmap; b++) size += g_map[b].len;
    for (i = 0; i < count; i++)
        for (b = 0; b < g_nmap; b++) {
            MPI_Aint o = i * extent + g_map[b].off;
            if (o < lo) lo = o;
            if (o + g_map[b].len > hi) hi = o + g_map[b].len;
        }
    MPI_Aint span = hi - lo, total = size * count;
    unsigned char *src = (unsigned char *)mt_malloc((size_t)span + 1);
    unsigned char *dst = (unsigned char *)mt_malloc((size_t)span + 1);
    unsigned char *packed = (unsigned char *)mt_malloc((size_t)total + 1);
    unsigned char *expect = (unsigned char *)mt_malloc((size_t)total + 1);
    unsigned char *sbase = src - lo, *dbase = dst - lo;
    MPI_Request req;
    MPI_Status st;
    int cnt;
    mt_fill(src, (size_t)span, 7 + (uint64_t)count);
    /* expected packed stream */
    for (i = 0, k = 0; i < count; i++)
        for (b = 0; b < g_nmap; b++)
            for (j = 0; j < g_map[b].len; j++) expect[k++] = sbase[i * extent + g_map[b].off + j];

    /* A: typed -> packed */
    memset(packed, 0, (size_t)total + 1);
    MT_MPI(MPI_Isend(sbase, count, t, peer, 1, MPI_COMM_WORLD, &req));
    MT_MPI(MPI_Recv(packed, (int)total, MPI_PACKED, peer, 1, MPI_COMM_WORLD, &st));
    MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MPI_Get_count(&st, MPI_PACKED, &cnt);
    MT_CHECK(cnt == total, "%s x%d: A received %d bytes, expected %ld", name, count, cnt,
             (long)total);
    for (k = 0; k < total; k++)
        if (packed[k] != expect[k]) {
            MT_CHECK(0, "%s x%d: A packed byte %ld is %d, expected %d", name, count, (long)k,
                     packed[k], expect[k]);
            break;
        }

    /* B: packed -> typed */
#ifndef WANMPI
    /* MPICH 4.0.2 over UCX reports "Message truncated" for large MPI_PACKED messages received
     * into a struct type with gaps; phases A and C still cover it there. */
    if (count > 100 && g_nmap > 2) goto phase_c;
#endif
    memset(dst, SENTINEL, (size_t)span);
    MT_MPI(MPI_Isend(expect, (int)total, MPI_PACKED, peer, 2, MPI_COMM_WORLD, &req));
    MT_MPI(MPI_Recv(dbase, count, t, peer, 2, MPI_COMM_WORLD, &st));
    MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MPI_Get_count(&st, t, &cnt);
    MT_CHECK(cnt == count || size == 0, "%s x%d: B MPI_Get_count %d", name, count, cnt);
    if (g_elems >= 0) {
        MPI_Get_elements(&st, t, &cnt);
        MT_CHECK(cnt == g_elems * count, "%s x%d: B MPI_Get_elements %d, expected %ld", name,
                 count, cnt, (long)(g_elems * count));
    }
    {
        unsigned char *mark = (unsigned char *)calloc((size_t)span + 1, 1);
        int bad = 0;
        for (i = 0, k = 0; i < count; i++)
            for (b = 0; b < g_nmap; b++)
                for (j = 0; j < g_map[b].len; j++) {
                    MPI_Aint o = i * extent + g_map[b].off + j;
                    mark[o - lo] = 1;
                    if (!bad && dbase[o] != expect[k]) {
                        MT_CHECK(0, "%s x%d: B byte at offset %ld is %d, expected %d", name,
                                 count, (long)o, dbase[o], expect[k]);
                        bad = 1;
                    }
                    k++;
                }
        for (k = 0; k < span && !bad; k++)
            if (!mark[k] && dst[k] != SENTINEL) {
                MT_CHECK(0, "%s x%d: B wrote outside the typemap at offset %ld", name, count,
                         (long)(k + lo));
                bad = 1;
            }
        free(mark);
    }

#ifndef WANMPI
phase_c:
#endif
    /* C: typed -> typed */
    memset(dst, SENTINEL, (size_t)span);
    MT_MPI(MPI_Isend(sbase, count, t, peer, 3, MPI_COMM_WORLD, &req));
    MT_MPI(MPI_Recv(dbase, count, t, peer, 3, MPI_COMM_WORLD, &st));
    MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (i = 0; i < count; i++)
        for (b = 0; b < g_nmap; b++)
            if (memcmp(dbase + i * extent + g_map[b].off, sbase + i * extent + g_map[b].off,
                       (size_t)g_map[b].len) != 0) {
                MT_CHECK(0, "%s x%d: C block %d of element %ld differs", name, count, b, (long)i);
                i = count;
                break;
            }
    free(src);
    free(dst);
    free(packed);
    free(expect);
}

/* Checks size/extent against the hand-made map, then exchanges a small and a large count. */
static void run_case(const char *name, MPI_Datatype t, MPI_Aint extent, MPI_Aint lb)
{
    MPI_Aint size = 0, glb, gext;
    int b, tsize;
    for (b = 0; b < g_nmap; b++) size += g_map[b].len;
    MT_MPI(MPI_Type_commit(&t));
    MPI_Type_size(t, &tsize);
    MPI_Type_get_extent(t, &glb, &gext);
    MT_CHECK(tsize == size, "%s: MPI_Type_size %d, expected %ld", name, tsize, (long)size);
    MT_CHECK(gext == extent && glb == lb, "%s: lb/extent %ld/%ld, expected %ld/%ld", name,
             (long)glb, (long)gext, (long)lb, (long)extent);
    exchange(name, t, 1, extent);
    exchange(name, t, 3, extent);
    if (size > 0) {
        int big = (int)(100000 / size) + 1; /* rendezvous on every route */
        exchange(name, t, big, extent);
    }
    MPI_Type_free(&t);
}

int main(int argc, char **argv)
{
    MPI_Datatype t, t2, t3;
    int i, j, k;
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* contiguous(5, int) */
    map_reset();
    map_add(0, 20);
    g_elems = 5;
    MPI_Type_contiguous(5, MPI_INT, &t);
    run_case("contiguous", t, 20, 0);

    /* vector(3, 2, 4, int) */
    map_reset();
    for (i = 0; i < 3; i++) map_add(i * 16, 8);
    g_elems = 6;
    MPI_Type_vector(3, 2, 4, MPI_INT, &t);
    run_case("vector", t, 40, 0);

    /* vector with negative stride: blocks at 0, -8, -16 ints */
    map_reset();
    for (i = 0; i < 3; i++) map_add(-i * 32, 4);
    g_elems = 3;
    MPI_Type_vector(3, 1, -8, MPI_INT, &t);
    run_case("vector-negstride", t, 68, -64);

    /* hvector(3, 2, 20 bytes, short) */
    map_reset();
    for (i = 0; i < 3; i++) map_add(i * 20, 4);
    g_elems = 6;
    MPI_Type_create_hvector(3, 2, 20, MPI_SHORT, &t);
    run_case("hvector", t, 44, 0);

    /* indexed(3, {2,1,3}, {9,0,5}, double): typemap order follows the arguments */
    {
        int bl[3] = {2, 1, 3}, dp[3] = {9, 0, 5};
        map_reset();
        for (i = 0; i < 3; i++) map_add(dp[i] * 8, bl[i] * 8);
        g_elems = 6;
        MPI_Type_indexed(3, bl, dp, MPI_DOUBLE, &t);
        run_case("indexed", t, 88, 0);
    }
    /* hindexed(3, {2,0,2}, {40,100,-8} bytes, int): a zero-length block does not count */
    {
        int bl[3] = {2, 0, 2};
        MPI_Aint dp[3] = {40, 100, -8};
        map_reset();
        map_add(40, 8);
        map_add(-8, 8);
        g_elems = 4;
        MPI_Type_create_hindexed(3, bl, dp, MPI_INT, &t);
        run_case("hindexed", t, 56, -8);
    }
    /* indexed_block(3, 2, {1,5,10}, int) */
    {
        int dp[3] = {1, 5, 10};
        map_reset();
        for (i = 0; i < 3; i++) map_add(dp[i] * 4, 8);
        g_elems = 6;
        MPI_Type_create_indexed_block(3, 2, dp, MPI_INT, &t);
        run_case("indexed_block", t, 44, 4);
    }
    /* hindexed_block(2, 3, {24, 0} bytes, float) */
    {
        MPI_Aint dp[2] = {24, 0};
        map_reset();
        map_add(24, 12);
        map_add(0, 12);
        g_elems = 6;
        MPI_Type_create_hindexed_block(2, 3, dp, MPI_FLOAT, &t);
        run_case("hindexed_block", t, 36, 0);
    }
    /* struct {char c; double d[2]; short s} at 0, 8, 24: extent padded to 32 (alignment 8) */
    {
        int bl[3] = {1, 2, 1};
        MPI_Aint dp[3] = {0, 8, 24};
        MPI_Datatype ty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT};
        map_reset();
        map_add(0, 1);
        map_add(8, 16);
        map_add(24, 2);
        g_elems = 4;
        MPI_Type_create_struct(3, bl, dp, ty, &t);
        run_case("struct", t, 32, 0);
    }
    /* struct of a vector and an int, vector placed after the int */
    {
        int bl[2] = {1, 2};
        MPI_Aint dp[2] = {16, 0};
        MPI_Datatype ty[2];
        MPI_Type_vector(2, 1, 3, MPI_INT, &t2); /* ints at 0 and 12, extent 16 */
        ty[0] = t2;
        ty[1] = MPI_INT;
        map_reset();
        map_add(16, 4);
        map_add(28, 4);
        map_add(0, 8);
        g_elems = 4;
        MPI_Type_create_struct(2, bl, dp, ty, &t);
        MPI_Type_free(&t2); /* still used by t: must stay alive */
        run_case("struct-of-vector", t, 32, 0);
    }
    /* subarray 2D, C order: 6x5 ints, sub 3x2 at (1,2) */
    {
        int sz[2] = {6, 5}, sub[2] = {3, 2}, st[2] = {1, 2};
        map_reset();
        for (i = 0; i < 3; i++) map_add(((1 + i) * 5 + 2) * 4, 8);
        g_elems = 6;
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t);
        run_case("subarray-C", t, 120, 0);
    }
    /* subarray 3D, Fortran order: 4x3x5 doubles, sub 2x2x3 at (1,0,2) */
    {
        int sz[3] = {4, 3, 5}, sub[3] = {2, 2, 3}, st[3] = {1, 0, 2};
        map_reset();
        for (k = 0; k < 3; k++)
            for (j = 0; j < 2; j++) map_add(((2 + k) * 12 + (0 + j) * 4 + 1) * 8, 16);
        g_elems = 12;
        MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t);
        run_case("subarray-F", t, 480, 0);
    }
    /* darray: 2D 10x7 ints over a 2x2 grid, C order, dim 0 block, dim 1 cyclic(2); and 1D
     * cyclic over 3, and Fortran-order block x none. Expected maps: the owned global elements in
     * address order. */
    {
        int gs[2] = {10, 7}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2}, r;
        for (r = 0; r < 4; r++) {
            int c0 = r / 2, c1 = r % 2, n = 0;
            char name[64];
            map_reset();
            for (i = 0; i < 10; i++)
                for (j = 0; j < 7; j++)
                    if (i / 5 == c0 && (j / 2) % 2 == c1) {
                        map_add((i * 7 + j) * 4, 4);
                        n++;
                    }
            g_elems = n;
            snprintf(name, sizeof name, "darray-C-r%d", r);
            MPI_Type_create_darray(4, r, 2, gs, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &t);
            run_case(name, t, 280, 0);
        }
    }
    {
        int gs[1] = {11}, dist[1] = {MPI_DISTRIBUTE_CYCLIC}, dargs[1] = {MPI_DISTRIBUTE_DFLT_DARG};
        int ps[1] = {3}, r;
        for (r = 0; r < 3; r++) {
            char name[64];
            map_reset();
            for (i = r; i < 11; i += 3) map_add(i * 8, 8);
            g_elems = g_nmap;
            snprintf(name, sizeof name, "darray-cyclic-r%d", r);
            MPI_Type_create_darray(3, r, 1, gs, dist, dargs, ps, MPI_ORDER_C, MPI_DOUBLE, &t);
            run_case(name, t, 88, 0);
        }
    }
    {
        int gs[2] = {9, 4}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_NONE};
        int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 1}, r;
        for (r = 0; r < 2; r++) {
            char name[64];
            map_reset();
            /* Fortran order: dim 0 fastest; block size ceil(9/2) = 5 */
            for (j = 0; j < 4; j++)
                for (i = 0; i < 9; i++)
                    if (i / 5 == r) map_add((j * 9 + i) * 4, 4);
            g_elems = g_nmap;
            snprintf(name, sizeof name, "darray-F-r%d", r);
            MPI_Type_create_darray(2, r, 2, gs, dist, dargs, ps, MPI_ORDER_FORTRAN, MPI_INT, &t);
            run_case(name, t, 144, 0);
        }
    }
    /* resized vector: extent shrunk so consecutive elements interleave */
    map_reset();
    map_add(0, 4);
    map_add(8, 4);
    g_elems = 2;
    MPI_Type_vector(2, 1, 2, MPI_INT, &t2);
    MPI_Type_create_resized(t2, 0, 4, &t);
    MPI_Type_free(&t2);
    /* elements overlap for the receive side when extent 4 (0,8 / 4,12 / 8,16...): use extent 16 */
    MPI_Type_free(&t);
    MPI_Type_vector(2, 1, 2, MPI_INT, &t2);
    MPI_Type_create_resized(t2, -4, 16, &t);
    MPI_Type_free(&t2);
    run_case("resized", t, 16, -4);

    /* dup of an indexed type */
    {
        int bl[2] = {1, 2}, dp[2] = {3, 0};
        map_reset();
        map_add(12, 4);
        map_add(0, 8);
        g_elems = 3;
        MPI_Type_indexed(2, bl, dp, MPI_INT, &t2);
        MPI_Type_dup(t2, &t);
        MPI_Type_free(&t2);
        run_case("dup", t, 16, 0);
    }
    /* nested: vector of (contiguous 3 of hvector(2,1,12 bytes) of short) */
    {
        MPI_Type_create_hvector(2, 1, 12, MPI_SHORT, &t3); /* shorts at 0, 12; extent 14 */
        MPI_Type_contiguous(3, t3, &t2);                   /* extent 42 */
        MPI_Type_vector(2, 1, 2, t2, &t);                  /* stride 84, extent 126 */
        MPI_Type_free(&t3);
        MPI_Type_free(&t2);
        map_reset();
        for (i = 0; i < 2; i++)
            for (j = 0; j < 3; j++)
                for (k = 0; k < 2; k++) map_add(i * 84 + j * 14 + k * 12, 2);
        g_elems = 12;
        run_case("nested", t, 126, 0);
    }
    /* struct with pair type and long double */
    {
        int bl[2] = {2, 1};
        MPI_Aint dp[2] = {0, 32};
        MPI_Datatype ty[2] = {MPI_DOUBLE_INT, MPI_LONG_DOUBLE};
        map_reset();
        map_add(0, 12);
        map_add(16, 12);
        map_add(32, 16);
#ifdef WANMPI
        g_elems = 5;
#else
        g_elems = -1; /* MPICH 4.0.2 returns 0 elements for structs of pair types */
#endif
        MPI_Type_create_struct(2, bl, dp, ty, &t);
        run_case("struct-pair", t, 48, 0);
    }
    /* zero-size types */
    map_reset();
    g_elems = 0;
    MPI_Type_contiguous(0, MPI_INT, &t);
    run_case("contiguous-0", t, 0, 0);

    /* MPI_BOTTOM with absolute addresses: struct {int a[3]; double x} at separate variables */
    {
        static int a[3];
        static double x, y[2];
        static int ra[3];
        static double rx;
        int bl[2] = {3, 1};
        MPI_Aint dp[2];
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, ts, tr;
        MPI_Request req;
        int peer = mt_partner();
        a[0] = 10 + mt_rank, a[1] = 20, a[2] = 30, x = 2.5 * mt_rank;
        (void)y;
        MPI_Get_address(a, &dp[0]);
        MPI_Get_address(&x, &dp[1]);
        MPI_Type_create_struct(2, bl, dp, ty, &ts);
        MPI_Type_commit(&ts);
        MPI_Get_address(ra, &dp[0]);
        MPI_Get_address(&rx, &dp[1]);
        MPI_Type_create_struct(2, bl, dp, ty, &tr);
        MPI_Type_commit(&tr);
        MT_MPI(MPI_Isend(MPI_BOTTOM, 1, ts, peer, 9, MPI_COMM_WORLD, &req));
        MT_MPI(MPI_Recv(MPI_BOTTOM, 1, tr, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        MT_CHECK(ra[0] == 10 + peer && ra[1] == 20 && ra[2] == 30 && rx == 2.5 * peer,
                 "MPI_BOTTOM struct: got %d %d %d %g", ra[0], ra[1], ra[2], rx);
        MPI_Type_free(&ts);
        MPI_Type_free(&tr);
    }
    free(g_map);
    return mt_finalize();
}
