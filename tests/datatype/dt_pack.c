/* dt_pack.c: MPI_Pack/Unpack/Pack_size round trips with derived types, several calls sharing one
 * buffer (position), packed data sent as MPI_PACKED and unpacked on the other side, MPI_BOTTOM
 * with absolute addresses, truncation errors; and "external32": the exact big-endian bytes of
 * every basic type, sizes from MPI_Pack_external_size, round trips through derived types. */
#include "mptest.h"

#include <complex.h>
#include <stdbool.h>
#include <stddef.h>

static void check_bytes(const char *what, const unsigned char *got, const unsigned char *exp, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (got[i] != exp[i]) {
            MT_CHECK(0, "%s: byte %d is 0x%02x, expected 0x%02x", what, i, got[i], exp[i]);
            return;
        }
}

/* One basic value packed to external32 must give exactly `exp` (n bytes), and come back. */
static void ext32_one(const char *what, MPI_Datatype dt, const void *val, int vsize,
                      const unsigned char *exp, int n)
{
    unsigned char buf[64], back[64];
    MPI_Aint pos = 0, size = -1;
    memset(buf, 0xAA, sizeof buf);
    MT_MPI(MPI_Pack_external_size("external32", 1, dt, &size));
    MT_CHECK(size == n, "%s: external32 size %ld, expected %d", what, (long)size, n);
    MT_MPI(MPI_Pack_external("external32", val, 1, dt, buf, sizeof buf, &pos));
    MT_CHECK(pos == n, "%s: position %ld after packing, expected %d", what, (long)pos, n);
    check_bytes(what, buf, exp, n);
    memset(back, 0, sizeof back);
    pos = 0;
    MT_MPI(MPI_Unpack_external("external32", buf, n, &pos, back, 1, dt));
    MT_CHECK(pos == n && memcmp(back, val, (size_t)vsize) == 0, "%s: round trip differs", what);
}

static void test_external32(void)
{
    {
        signed char v = -2;
        unsigned char e[] = {0xfe};
        ext32_one("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, &v, 1, e, 1);
    }
    {
        short v = 0x1234;
        unsigned char e[] = {0x12, 0x34};
        ext32_one("MPI_SHORT", MPI_SHORT, &v, 2, e, 2);
    }
    {
        int v = -0x01020304;
        unsigned char e[] = {0xfe, 0xfd, 0xfc, 0xfc};
        ext32_one("MPI_INT", MPI_INT, &v, 4, e, 4);
    }
    {
        unsigned v = 0xdeadbeef;
        unsigned char e[] = {0xde, 0xad, 0xbe, 0xef};
        ext32_one("MPI_UNSIGNED", MPI_UNSIGNED, &v, 4, e, 4);
    }
    {
        /* MPI_LONG is 4 bytes in external32 */
        long v = -5;
        unsigned char e[] = {0xff, 0xff, 0xff, 0xfb};
        ext32_one("MPI_LONG", MPI_LONG, &v, sizeof v, e, 4);
    }
    {
        long long v = 0x0102030405060708LL;
        unsigned char e[] = {1, 2, 3, 4, 5, 6, 7, 8};
        ext32_one("MPI_LONG_LONG", MPI_LONG_LONG, &v, 8, e, 8);
    }
    {
        int64_t v = -2;
        unsigned char e[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
        ext32_one("MPI_INT64_T", MPI_INT64_T, &v, 8, e, 8);
    }
    {
        uint16_t v = 0xbeef;
        unsigned char e[] = {0xbe, 0xef};
        ext32_one("MPI_UINT16_T", MPI_UINT16_T, &v, 2, e, 2);
    }
    {
        float v = 1.0f;
        unsigned char e[] = {0x3f, 0x80, 0x00, 0x00};
        ext32_one("MPI_FLOAT", MPI_FLOAT, &v, 4, e, 4);
    }
    {
        double v = -2.5;
        unsigned char e[] = {0xc0, 0x04, 0, 0, 0, 0, 0, 0};
        ext32_one("MPI_DOUBLE", MPI_DOUBLE, &v, 8, e, 8);
    }
    {
        /* long double: IEEE binary128; 1.5 = sign 0, exponent 0x3fff, fraction 0x8000... */
        long double v = 1.5L, back = 0;
        unsigned char e[16] = {0x3f, 0xff, 0x80};
        unsigned char buf[16];
        MPI_Aint pos = 0, size = 0;
        MT_MPI(MPI_Pack_external_size("external32", 1, MPI_LONG_DOUBLE, &size));
        MT_CHECK(size == 16, "MPI_LONG_DOUBLE external32 size %ld", (long)size);
        MT_MPI(MPI_Pack_external("external32", &v, 1, MPI_LONG_DOUBLE, buf, 16, &pos));
        check_bytes("MPI_LONG_DOUBLE", buf, e, 16);
        pos = 0;
        MT_MPI(MPI_Unpack_external("external32", buf, 16, &pos, &back, 1, MPI_LONG_DOUBLE));
        MT_CHECK(back == 1.5L, "MPI_LONG_DOUBLE round trip: %Lg", back);
    }
    {
        bool v = true;
        unsigned char e[] = {1};
        ext32_one("MPI_C_BOOL", MPI_C_BOOL, &v, 1, e, 1);
    }
    {
        float _Complex v = 1.0f - 2.0f * I;
        unsigned char e[] = {0x3f, 0x80, 0, 0, 0xc0, 0x00, 0, 0};
        ext32_one("MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, &v, 8, e, 8);
    }
#ifdef WANMPI
    /* pair types: members without padding (MPICH 4.0.2 asserts on pair types in external32) */
    {
        struct {
            double d;
            int i;
        } v = {1.0, 7};
        unsigned char e[] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
        ext32_one("MPI_DOUBLE_INT", MPI_DOUBLE_INT, &v, 12, e, 12);
    }
    {
        struct {
            short s;
            int i;
        } v = {-1, 0x01020304};
        unsigned char e[] = {0xff, 0xff, 1, 2, 3, 4};
        unsigned char buf[8];
        MPI_Aint pos = 0;
        MT_MPI(MPI_Pack_external("external32", &v, 1, MPI_SHORT_INT, buf, 8, &pos));
        MT_CHECK(pos == 6, "MPI_SHORT_INT external32 is %ld bytes", (long)pos);
        check_bytes("MPI_SHORT_INT", buf, e, 6);
    }
#endif
    {
        int v = 0x0a0b0c0d;
        unsigned char e[] = {0x0a, 0x0b, 0x0c, 0x0d};
        ext32_one("MPI_INTEGER", MPI_INTEGER, &v, 4, e, 4);
    }
    {
        double v = 0.5;
        unsigned char e[] = {0x3f, 0xe0, 0, 0, 0, 0, 0, 0};
        ext32_one("MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, &v, 8, e, 8);
    }
#ifdef WANMPI
    /* A derived type: struct {int a; char c; double d[2]} skips the padding. (MPICH 4.0.2's
     * external32 handles one basic type per datatype only and crashes here.) */
    {
        struct S {
            int a;
            char c;
            double d[2];
        } s[2] = {{1, 'x', {1.0, -1.0}}, {0x7f000001, 'y', {2.0, 0.25}}}, r[2];
        int bl[3] = {1, 1, 2};
        MPI_Aint dp[3] = {offsetof(struct S, a), offsetof(struct S, c), offsetof(struct S, d)};
        MPI_Datatype ty[3] = {MPI_INT, MPI_CHAR, MPI_DOUBLE}, st;
        unsigned char buf[64];
        unsigned char e[21] = {0, 0, 0, 1, 'x', 0x3f, 0xf0, 0, 0, 0, 0, 0, 0,
                               0xbf, 0xf0, 0, 0, 0, 0, 0, 0};
        MPI_Aint pos = 0, size = 0;
        MPI_Type_create_struct(3, bl, dp, ty, &st);
        MPI_Type_commit(&st);
        MT_MPI(MPI_Pack_external_size("external32", 2, st, &size));
        MT_CHECK(size == 42, "struct external32 size %ld, expected 42", (long)size);
        MT_MPI(MPI_Pack_external("external32", s, 2, st, buf, sizeof buf, &pos));
        MT_CHECK(pos == 42, "struct external32 position %ld", (long)pos);
        check_bytes("struct external32", buf, e, 21);
        memset(r, 0, sizeof r);
        pos = 0;
        MT_MPI(MPI_Unpack_external("external32", buf, 42, &pos, r, 2, st));
        MT_CHECK(r[1].a == s[1].a && r[1].c == 'y' && r[1].d[1] == 0.25 && r[0].d[0] == 1.0,
                 "struct external32 round trip");
        MPI_Type_free(&st);
    }
#endif
#ifdef WANMPI
    /* Output buffer too small: an error, never a write past it (MPICH 4.0.2 does not check). */
    {
        int v[4] = {1, 2, 3, 4}, rc;
        unsigned char buf[20];
        MPI_Aint pos = 0;
        memset(buf, 0x55, sizeof buf);
        rc = MPI_Pack_external("external32", v, 4, MPI_INT, buf, 12, &pos);
        MT_CHECK(rc != MPI_SUCCESS, "external32 overflow not detected");
        MT_CHECK(buf[12] == 0x55, "external32 wrote past outsize");
    }
#endif
}

static void test_native_pack(void)
{
    MPI_Datatype vec, st;
    double m[4][5];
    int a[6], i, j, pos, size, psize;
    char buf[512];
    /* column 2 of a 4x5 matrix, then 6 ints, in one buffer */
    for (i = 0; i < 4; i++)
        for (j = 0; j < 5; j++) m[i][j] = i * 10 + j;
    for (i = 0; i < 6; i++) a[i] = 100 + i;
    MPI_Type_vector(4, 1, 5, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MT_MPI(MPI_Pack_size(1, vec, MPI_COMM_WORLD, &psize));
    MT_CHECK(psize >= 32, "MPI_Pack_size of 4 doubles is %d", psize);
    pos = 0;
    MT_MPI(MPI_Pack(&m[0][2], 1, vec, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    MT_MPI(MPI_Pack(a, 6, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    size = pos;
    {
        double col[4];
        int b[6];
        pos = 0;
        MT_MPI(MPI_Unpack(buf, size, &pos, col, 4, MPI_DOUBLE, MPI_COMM_WORLD));
        MT_MPI(MPI_Unpack(buf, size, &pos, b, 6, MPI_INT, MPI_COMM_WORLD));
        for (i = 0; i < 4; i++) MT_CHECK(col[i] == i * 10 + 2, "column element %d = %g", i, col[i]);
        MT_CHECK(memcmp(a, b, sizeof a) == 0, "ints after the column");
        MT_CHECK(pos == size, "position %d after unpacking, packed %d", pos, size);
    }
    /* unpack into a strided destination */
    {
        double z[4][5];
        memset(z, 0, sizeof z);
        pos = 0;
        MT_MPI(MPI_Unpack(buf, size, &pos, &z[0][4], 1, vec, MPI_COMM_WORLD));
        for (i = 0; i < 4; i++)
            for (j = 0; j < 5; j++)
                MT_CHECK(z[i][j] == (j == 4 ? i * 10 + 2 : 0), "strided unpack [%d][%d] = %g", i,
                         j, z[i][j]);
    }
    /* send the packed buffer as MPI_PACKED, receive as the typed data */
    {
        int peer = mt_partner();
        double col[4];
        int b[6];
        MPI_Request req;
        MPI_Status stt;
        char rbuf[512];
        int cnt;
        MT_MPI(MPI_Isend(buf, size, MPI_PACKED, peer, 5, MPI_COMM_WORLD, &req));
        MT_MPI(MPI_Recv(rbuf, sizeof rbuf, MPI_PACKED, peer, 5, MPI_COMM_WORLD, &stt));
        MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        MPI_Get_count(&stt, MPI_PACKED, &cnt);
        pos = 0;
        MT_MPI(MPI_Unpack(rbuf, cnt, &pos, col, 4, MPI_DOUBLE, MPI_COMM_WORLD));
        MT_MPI(MPI_Unpack(rbuf, cnt, &pos, b, 6, MPI_INT, MPI_COMM_WORLD));
        MT_CHECK(col[3] == 32 && b[5] == 105, "MPI_PACKED over the wire: %g %d", col[3], b[5]);
    }
#ifdef WANMPI
    /* truncation: packing past outsize fails (MPICH 4.0.2 does not check) */
    {
        int rc, cls = -1;
        pos = 0;
        rc = MPI_Pack(a, 6, MPI_INT, buf, 20, &pos, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        MT_CHECK(rc != MPI_SUCCESS, "MPI_Pack beyond outsize succeeded");
        pos = 0;
        rc = MPI_Unpack(buf, 8, &pos, a, 6, MPI_INT, MPI_COMM_WORLD);
        MT_CHECK(rc != MPI_SUCCESS, "MPI_Unpack beyond insize succeeded");
    }
#endif
    MPI_Type_free(&vec);

#ifdef WANMPI
    /* MPI_BOTTOM: a struct of absolute addresses packed and unpacked (MPICH 4.0.2 rejects a
     * NULL inbuf here, though MPI_BOTTOM is valid) */
    {
        static int x = 42;
        static double y[2] = {1.5, -3.0};
        static int rx;
        static double ry[2];
        int bl[2] = {1, 2};
        MPI_Aint dp[2];
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, rt;
        MPI_Get_address(&x, &dp[0]);
        MPI_Get_address(y, &dp[1]);
        MPI_Type_create_struct(2, bl, dp, ty, &st);
        MPI_Type_commit(&st);
        MPI_Get_address(&rx, &dp[0]);
        MPI_Get_address(ry, &dp[1]);
        MPI_Type_create_struct(2, bl, dp, ty, &rt);
        MPI_Type_commit(&rt);
        pos = 0;
        MT_MPI(MPI_Pack(MPI_BOTTOM, 1, st, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        MT_CHECK(pos == 20, "MPI_BOTTOM pack size %d", pos);
        size = pos;
        pos = 0;
        MT_MPI(MPI_Unpack(buf, size, &pos, MPI_BOTTOM, 1, rt, MPI_COMM_WORLD));
        MT_CHECK(rx == 42 && ry[0] == 1.5 && ry[1] == -3.0, "MPI_BOTTOM unpack: %d %g %g", rx,
                 ry[0], ry[1]);
        MPI_Type_free(&st);
        MPI_Type_free(&rt);
    }
#endif
    /* large round trip through a vector of a struct with a hole */
    {
        struct P {
            int i;
            double d;
        } *p, *q;
        int n = 10000, bl[2] = {1, 1};
        MPI_Aint dp[2] = {offsetof(struct P, i), offsetof(struct P, d)};
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, v;
        char *pb;
        p = (struct P *)mt_malloc(sizeof *p * (size_t)n * 2);
        q = (struct P *)mt_malloc(sizeof *q * (size_t)n * 2);
        for (i = 0; i < 2 * n; i++) p[i].i = i, p[i].d = i * 0.5;
        memset(q, 0, sizeof *q * (size_t)n * 2);
        MPI_Type_create_struct(2, bl, dp, ty, &st);
        MPI_Type_vector(n, 1, 2, st, &v);
        MPI_Type_commit(&v);
        MT_MPI(MPI_Pack_size(1, v, MPI_COMM_WORLD, &psize));
        pb = (char *)mt_malloc((size_t)psize);
        pos = 0;
        MT_MPI(MPI_Pack(p, 1, v, pb, psize, &pos, MPI_COMM_WORLD));
        MT_CHECK(pos == n * 12, "packed %d bytes, expected %d", pos, n * 12);
        size = pos;
        pos = 0;
        MT_MPI(MPI_Unpack(pb, size, &pos, q, 1, v, MPI_COMM_WORLD));
        for (i = 0; i < 2 * n; i++)
            if (q[i].i != (i % 2 ? 0 : i) || q[i].d != (i % 2 ? 0 : i * 0.5)) {
                MT_CHECK(0, "vector-of-struct round trip element %d: %d %g", i, q[i].i, q[i].d);
                break;
            }
        free(p);
        free(q);
        free(pb);
        MPI_Type_free(&v);
        MPI_Type_free(&st);
    }
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_native_pack();
    test_external32();
    return mt_finalize();
}
