/* io_views: file views with derived filetypes, written and read independently and collectively,
 * the file checked byte by byte against the image the test computes itself (what plain pwrites
 * of the expected layout give). Scenarios:
 *   A  block-cyclic: filetype = B ints resized to an extent of B*size ints, disp = rank*B ints
 *      (resized extent; the holes are the other ranks' blocks);
 *   B  holes nobody fills: vector(3 blocks of 2 ints, stride 3) resized to 8*size ints, disp =
 *      rank*8 ints; the 3rd and 6th int of each rank's 8 must stay zero (two-phase must not
 *      write holes);
 *   C  2-D block distribution: a GR x GC global array of doubles, the ranks a Dims_create grid,
 *      filetype = subarray, and the memory side a subarray too (local block inside a halo);
 *   D  etype MPI_DOUBLE, filetype = struct{double at 0, double at 8*size} resized to 16*size
 *      bytes, interleaved between ranks by disp = rank*8.
 * Methods: write_at_all (default hints), write_all with two-phase forced, one aggregator and a
 * 64-byte collective buffer (many rounds), independent write, write_at_all with collective
 * buffering disabled. Each written file is read back by every rank with read_at_all (two-phase,
 * small buffer) and with independent reads through the same view. */
#include "iotest.h"

#define B 3
#define NA 24 /* ints per rank, scenarios A and B (multiple of 6) */
#define GR 12
#define GC 10

static char path[256];
static int px, py, mx, my, lr, lc; /* process grid, my coordinates, local block */

static int val_a(int r, int k) { return 100000 + r * 1000 + k; }
static double val_c(int i, int j) { return i * 100.0 + j + 0.25; }
static double val_d(int r, int k) { return r * 10000.0 + k + 0.5; }

/* Expected file images (rank-independent computation). */
static long image(char scen, unsigned char **out)
{
    long n = 0;
    unsigned char *b;
    int r, k, i, j;
    if (scen == 'A') {
        n = (long)mt_size * NA * 4;
        b = calloc(1, (size_t)n);
        for (r = 0; r < mt_size; r++)
            for (k = 0; k < NA; k++) {
                int v = val_a(r, k);
                long idx = ((long)(k / B) * mt_size + r) * B + k % B;
                memcpy(b + idx * 4, &v, 4);
            }
    } else if (scen == 'B') {
        /* the last rank's last tile ends the file (its last int is the tile's 8th) */
        n = ((long)(NA / 6 - 1) * 8 * mt_size + (mt_size - 1) * 8 + 8) * 4;
        b = calloc(1, (size_t)n);
        for (r = 0; r < mt_size; r++)
            for (k = 0; k < NA; k++) {
                int v = val_a(r, k), jj = k % 6;
                long idx = (long)(k / 6) * 8 * mt_size + r * 8 + (jj / 2) * 3 + jj % 2;
                memcpy(b + idx * 4, &v, 4);
            }
    } else if (scen == 'C') {
        n = (long)GR * GC * 8;
        b = calloc(1, (size_t)n);
        for (i = 0; i < GR; i++)
            for (j = 0; j < GC; j++) {
                double v = val_c(i, j);
                memcpy(b + ((long)i * GC + j) * 8, &v, 8);
            }
    } else {
        /* rank r's k-th double: tile k/2 (16*size bytes), at r*8 or r*8 + 8*size in it */
        n = (long)(NA / 2 - 1) * 16 * mt_size + (mt_size - 1) * 8 + 8 * mt_size + 8;
        b = calloc(1, (size_t)n);
        for (r = 0; r < mt_size; r++)
            for (k = 0; k < NA; k++) {
                double v = val_d(r, k);
                long off = (long)(k / 2) * 16 * mt_size + r * 8 + (k % 2) * 8 * mt_size;
                memcpy(b + off, &v, 8);
            }
    }
    *out = b;
    return n;
}

/* The view and the memory buffer/type of scenario `scen` for this rank. */
static void setup(char scen, MPI_File fh, MPI_Datatype *ft, MPI_Datatype *mt, int *mcount,
                  void **buf, void **rbuf)
{
    MPI_Datatype t;
    int k, i, j;
    if (scen == 'A' || scen == 'B') {
        int *d = malloc(NA * sizeof(int));
        for (k = 0; k < NA; k++)
            d[k] = val_a(mt_rank, k);
        if (scen == 'A') {
            MPI_Type_contiguous(B, MPI_INT, &t);
            MPI_Type_create_resized(t, 0, (MPI_Aint)B * mt_size * 4, ft);
        } else {
            MPI_Type_vector(3, 2, 3, MPI_INT, &t);
            MPI_Type_create_resized(t, 0, (MPI_Aint)8 * mt_size * 4, ft);
        }
        MPI_Type_free(&t);
        MPI_Type_commit(ft);
        MT_MPI(MPI_File_set_view(fh, (MPI_Offset)mt_rank * (scen == 'A' ? B : 8) * 4, MPI_INT,
                                 *ft, "native", MPI_INFO_NULL));
        *mt = MPI_INT;
        *mcount = NA;
        *buf = d;
        *rbuf = calloc(NA, sizeof(int));
    } else if (scen == 'C') {
        int gs[2] = {GR, GC}, ls[2] = {lr, lc}, st[2] = {mx * lr, my * lc};
        int ms[2] = {lr + 2, lc + 2}, mst[2] = {1, 1};
        double *d = calloc((size_t)(lr + 2) * (lc + 2), sizeof(double));
        for (i = 0; i < lr; i++)
            for (j = 0; j < lc; j++)
                d[(i + 1) * (lc + 2) + j + 1] = val_c(mx * lr + i, my * lc + j);
        MPI_Type_create_subarray(2, gs, ls, st, MPI_ORDER_C, MPI_DOUBLE, ft);
        MPI_Type_commit(ft);
        MPI_Type_create_subarray(2, ms, ls, mst, MPI_ORDER_C, MPI_DOUBLE, mt);
        MPI_Type_commit(mt);
        MT_MPI(MPI_File_set_view(fh, 0, MPI_DOUBLE, *ft, "native", MPI_INFO_NULL));
        *mcount = 1;
        *buf = d;
        *rbuf = calloc((size_t)(lr + 2) * (lc + 2), sizeof(double));
    } else {
        int bl[2] = {1, 1};
        MPI_Aint dp[2];
        MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_DOUBLE};
        double *d = malloc(NA * sizeof(double));
        dp[0] = 0;
        dp[1] = (MPI_Aint)8 * mt_size;
        for (k = 0; k < NA; k++)
            d[k] = val_d(mt_rank, k);
        MPI_Type_create_struct(2, bl, dp, ty, &t);
        MPI_Type_create_resized(t, 0, (MPI_Aint)16 * mt_size, ft);
        MPI_Type_free(&t);
        MPI_Type_commit(ft);
        MT_MPI(MPI_File_set_view(fh, (MPI_Offset)mt_rank * 8, MPI_DOUBLE, *ft, "native",
                                 MPI_INFO_NULL));
        *mt = MPI_DOUBLE;
        *mcount = NA;
        *buf = d;
        *rbuf = calloc(NA, sizeof(double));
    }
}

static MPI_Info hints(const char *cbw, const char *nodes, const char *bufsize)
{
    MPI_Info info;
    MPI_Info_create(&info);
    if (cbw) {
        MPI_Info_set(info, "romio_cb_write", cbw);
        MPI_Info_set(info, "romio_cb_read", cbw);
    }
    if (nodes)
        MPI_Info_set(info, "cb_nodes", nodes);
    if (bufsize)
        MPI_Info_set(info, "cb_buffer_size", bufsize);
    return info;
}

static void run(char scen, int method)
{
    static const char *names[] = {"write_at_all", "write_all two-phase 1 aggregator 64 B",
                                  "independent write", "write_at_all cb disabled"};
    MPI_File fh;
    MPI_Datatype ft, mt = MPI_DATATYPE_NULL;
    MPI_Info info = method == 1 ? hints("enable", "1", "64")
                    : method == 3 ? hints("disable", NULL, NULL) : hints(NULL, NULL, NULL);
    MPI_Status st;
    void *buf, *rbuf;
    int mcount, cnt, pass;
    unsigned char *want;
    long n;
    char what[160];

    snprintf(what, sizeof what, "scenario %c, %s", scen, names[method]);
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL); /* may not exist */
    MPI_Barrier(MPI_COMM_WORLD);
    MT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
    setup(scen, fh, &ft, &mt, &mcount, &buf, &rbuf);
    if (method == 0 || method == 3)
        MT_MPI(MPI_File_write_at_all(fh, 0, buf, mcount, mt, &st));
    else if (method == 1)
        MT_MPI(MPI_File_write_all(fh, buf, mcount, mt, &st));
    else
        MT_MPI(MPI_File_write(fh, buf, mcount, mt, &st));
    MPI_Get_count(&st, mt, &cnt);
    MT_CHECK(cnt == mcount, "%s: write count %d", what, cnt);
    MT_MPI(MPI_File_sync(fh));
    n = image(scen, &want);
    io_compare(path, want, n, what);
    free(want);
    /* read back through the view: collectively, then independently */
    for (pass = 0; pass < 2; pass++) {
        size_t bytes = scen == 'C' ? (size_t)(lr + 2) * (lc + 2) * 8
                                   : (size_t)NA * (scen == 'D' ? 8 : 4);
        memset(rbuf, 0, bytes);
        if (pass == 0)
            MT_MPI(MPI_File_read_at_all(fh, 0, rbuf, mcount, mt, &st));
        else
            MT_MPI(MPI_File_read_at(fh, 0, rbuf, mcount, mt, &st));
        MPI_Get_count(&st, mt, &cnt);
        MT_CHECK(cnt == mcount, "%s: read-back %d count %d", what, pass, cnt);
        MT_CHECK(memcmp(rbuf, buf, bytes) == 0, "%s: read-back %d differs from what was written",
                 what, pass);
    }
    MT_MPI(MPI_File_close(&fh));
    MPI_Type_free(&ft);
    if (scen == 'C')
        MPI_Type_free(&mt);
    MPI_Info_free(&info);
    free(buf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    int dims[2] = {0, 0}, method;
    const char *s;

    mt_init(&argc, &argv);
    io_path(path, sizeof path, "views");
    MPI_Dims_create(mt_size, 2, dims);
    px = dims[0];
    py = dims[1];
    mx = mt_rank / py;
    my = mt_rank % py;
    lr = GR / px;
    lc = GC / py;
    if (lr * px != GR || lc * py != GC) {
        if (mt_rank == 0)
            printf("scenario C needs a grid dividing %dx%d; run with 1, 2, 3, 4 or 6 ranks\n", GR,
                   GC);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (s = "ABCD"; *s; s++)
        for (method = 0; method < 4; method++)
            run(*s, method);
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    return mt_finalize();
}
