/* io_ext32: the "external32" data representation. Each rank writes a record of several types
 * through an external32 view; the bytes on disk are checked to be big-endian IEEE / two's
 * complement of the standard's sizes, then read back through the view (values equal) and through
 * a native view (byte-swapped on little-endian hosts). Also: MPI_File_get_type_extent, a derived
 * buffer type (struct) with external32, and an unknown data representation's error class. */
#include "iotest.h"

#define REC 38 /* bytes per rank: int 4, double 8, short 2, float 4, int64 8, struct{int, double} 12 */

static void put_be(unsigned char *p, unsigned long long v, int n)
{
    int i;
    for (i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
}

int main(int argc, char **argv)
{
    char path[256];
    MPI_File fh;
    MPI_Status st;
    MPI_Aint ext;
    MPI_Datatype pair;
    int i32 = 0x01020304 + mt_rank, ri32 = 0, cnt, k;
    double f64 = 1.0 + mt_rank, rf64 = 0;
    short i16 = 0x0102, ri16 = 0;
    float f32 = 1.0f, rf32 = 0;
    long long i64 = 0x0102030405060708LL, ri64 = 0;
    struct {
        int a;
        double b;
    } s = {-2, 0.5}, rs = {0, 0};
    int bl[2] = {1, 1};
    MPI_Aint dp[2] = {0, 8};
    MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
    unsigned char want[REC], *file;
    long len;
    MPI_Offset base;
    union {
        double d;
        unsigned long long u;
    } cd;
    union {
        float f;
        unsigned int u;
    } cf;

    mt_init(&argc, &argv);
    i32 = 0x01020304 + mt_rank;
    f64 = 1.0 + mt_rank;
    io_path(path, sizeof path, "ext32");
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_create_struct(2, bl, dp, ty, &pair);
    MPI_Type_commit(&pair);
    MT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                         &fh));
    IO_EXPECT_CLASS(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "no-such-rep", MPI_INFO_NULL),
                    MPI_ERR_UNSUPPORTED_DATAREP);
    MT_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
    MT_MPI(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    MT_CHECK(ext == 4, "external32 extent of MPI_INT %ld", (long)ext);
    MT_MPI(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
    MT_CHECK(ext == 8, "external32 extent of MPI_DOUBLE %ld", (long)ext);
    MT_MPI(MPI_File_get_type_extent(fh, MPI_LONG, &ext));
    MT_CHECK(ext == 4, "external32 extent of MPI_LONG %ld (the standard says 4)", (long)ext);

    base = (MPI_Offset)mt_rank * REC;
    MT_MPI(MPI_File_write_at(fh, base, &i32, 1, MPI_INT, &st));
    MT_MPI(MPI_File_write_at(fh, base + 4, &f64, 1, MPI_DOUBLE, &st));
    MT_MPI(MPI_File_write_at(fh, base + 12, &i16, 1, MPI_SHORT, &st));
    MT_MPI(MPI_File_write_at(fh, base + 14, &f32, 1, MPI_FLOAT, &st));
    MT_MPI(MPI_File_write_at(fh, base + 18, &i64, 1, MPI_LONG_LONG, &st));
    MT_MPI(MPI_File_write_at_all(fh, base + 26, &s, 1, pair, &st)); /* 4 + 8 packed bytes */
    MPI_Get_count(&st, pair, &cnt);
    MT_CHECK(cnt == 1, "struct write count %d", cnt);
    MT_MPI(MPI_File_sync(fh));

    /* the expected big-endian bytes of every rank */
    if (mt_rank == 0) {
        file = io_slurp(path, &len);
        MT_CHECK(len == (long)mt_size * (REC), "file size %ld", len);
        for (k = 0; file && k < mt_size; k++) {
            memset(want, 0, sizeof want);
            put_be(want, 0x01020304u + (unsigned)k, 4);
            cd.d = 1.0 + k;
            put_be(want + 4, cd.u, 8);
            put_be(want + 12, 0x0102, 2);
            cf.f = 1.0f;
            put_be(want + 14, cf.u, 4);
            put_be(want + 18, 0x0102030405060708ULL, 8);
            put_be(want + 26, (unsigned long long)(unsigned int)-2, 4);
            cd.d = 0.5;
            put_be(want + 30, cd.u, 8);
            MT_CHECK(memcmp(file + k * REC, want, REC) == 0 || k * REC + REC > len,
                     "rank %d's external32 bytes differ (first byte 0x%02x)", k,
                     file[k * REC]);
            if (k * REC + REC <= len && memcmp(file + k * REC, want, REC) != 0) {
                int b;
                for (b = 0; b < REC; b++)
                    if (file[k * REC + b] != want[b]) {
                        MT_CHECK(0, "rank %d byte %d: 0x%02x, expected 0x%02x", k, b,
                                 file[k * REC + b], want[b]);
                        break;
                    }
            }
        }
        free(file);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* round trip */
    MT_MPI(MPI_File_read_at(fh, base, &ri32, 1, MPI_INT, &st));
    MT_MPI(MPI_File_read_at(fh, base + 4, &rf64, 1, MPI_DOUBLE, &st));
    MT_MPI(MPI_File_read_at(fh, base + 12, &ri16, 1, MPI_SHORT, &st));
    MT_MPI(MPI_File_read_at(fh, base + 14, &rf32, 1, MPI_FLOAT, &st));
    MT_MPI(MPI_File_read_at(fh, base + 18, &ri64, 1, MPI_LONG_LONG, &st));
    MT_MPI(MPI_File_read_at_all(fh, base + 26, &rs, 1, pair, &st));
    MPI_Get_count(&st, MPI_DOUBLE, &cnt);
    MT_CHECK(ri32 == i32 && rf64 == f64 && ri16 == i16 && rf32 == f32 && ri64 == i64,
             "round trip: %x %g %x %g %llx", ri32, rf64, ri16, rf32, ri64);
    MT_CHECK(rs.a == s.a && rs.b == s.b, "struct round trip: %d %g", rs.a, rs.b);

    /* the native view sees the raw big-endian int */
    MT_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MT_MPI(MPI_File_read_at(fh, base, &ri32, 1, MPI_INT, &st));
    {
        unsigned char b[4];
        memcpy(b, &ri32, 4);
        MT_CHECK(b[0] == 0x01 && b[1] == 0x02 && b[2] == 0x03 && b[3] == 0x04 + mt_rank,
                 "native read of external32 int: %02x %02x %02x %02x", b[0], b[1], b[2], b[3]);
    }
    MT_MPI(MPI_File_close(&fh));
    MPI_Type_free(&pair);
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    return mt_finalize();
}
