/* io_shared: the shared file pointer.
 *   - write_shared from every rank at once, R records each: the file holds every (rank, seq)
 *     record exactly once, whole, and nothing else; get_position_shared then says the total;
 *   - write_ordered (and its split form): rank r writes r+1 ints of value r, in rank order;
 *   - seek_shared back to 0, read_ordered: every rank reads its own part back;
 *   - read_shared after seek_shared: the ranks' reads together cover the records exactly once;
 *   - set_view resets the shared pointer (etype units: MPI_INT). */
#include "iotest.h"

#define R 40

struct rec {
    int rank, seq, check, pad;
};

int main(int argc, char **argv)
{
    char path[256];
    MPI_File fh;
    MPI_Status st;
    MPI_Offset pos;
    struct rec r, *all;
    unsigned char *bytes;
    long len;
    int i, k, *seen, *mine, nmine, total, cnt, sum;

    mt_init(&argc, &argv);
    io_path(path, sizeof path, "shared");
    MT_MPI(io_open_fresh(path, &fh));

    /* --- concurrent write_shared --- */
    for (k = 0; k < R; k++) {
        r.rank = mt_rank;
        r.seq = k;
        r.check = mt_rank * 7919 + k * 31 + 5;
        r.pad = -1;
        MT_MPI(MPI_File_write_shared(fh, &r, (int)sizeof r, MPI_BYTE, &st));
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        MT_CHECK(cnt == (int)sizeof r, "write_shared count %d", cnt);
    }
    MT_MPI(MPI_File_sync(fh));
    MT_MPI(MPI_File_get_position_shared(fh, &pos));
    MT_CHECK(pos == (MPI_Offset)mt_size * R * (MPI_Offset)sizeof r, "shared position %lld",
             (long long)pos);
    if (mt_rank == 0) {
        bytes = io_slurp(path, &len);
        MT_CHECK(len == (long)(mt_size * R * sizeof r), "file size %ld", len);
        seen = calloc((size_t)mt_size * R, sizeof(int));
        all = (struct rec *)bytes;
        for (i = 0; bytes && i < len / (long)sizeof r; i++) {
            struct rec x = all[i];
            if (x.rank < 0 || x.rank >= mt_size || x.seq < 0 || x.seq >= R ||
                x.check != x.rank * 7919 + x.seq * 31 + 5 || x.pad != -1) {
                MT_CHECK(0, "record %d is torn or foreign: %d %d %d %d", i, x.rank, x.seq,
                         x.check, x.pad);
                continue;
            }
            seen[x.rank * R + x.seq]++;
        }
        for (i = 0; i < mt_size * R; i++)
            MT_CHECK(seen[i] == 1, "record (rank %d, seq %d) found %d times", i / R, i % R,
                     seen[i]);
        free(seen);
        free(bytes);
    }

    /* --- read_shared: together the ranks read each record once --- */
    MT_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    mine = calloc((size_t)mt_size * R, sizeof(int));
    nmine = 0;
    for (;;) {
        MT_MPI(MPI_File_read_shared(fh, &r, (int)sizeof r, MPI_BYTE, &st));
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        if (cnt == 0)
            break;
        MT_CHECK(cnt == (int)sizeof r, "read_shared count %d", cnt);
        if (r.rank >= 0 && r.rank < mt_size && r.seq >= 0 && r.seq < R)
            mine[r.rank * R + r.seq]++;
        nmine++;
    }
    total = 0;
    MPI_Allreduce(&nmine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MT_CHECK(total == mt_size * R, "read_shared read %d records in all, expected %d", total,
             mt_size * R);
    seen = calloc((size_t)mt_size * R, sizeof(int));
    MPI_Allreduce(mine, seen, mt_size * R, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < mt_size * R; i++)
        MT_CHECK(seen[i] == 1, "read_shared: record %d read %d times", i, seen[i]);
    free(seen);
    free(mine);

    /* --- ordered: a new view (MPI_INT) restarts the shared pointer at 0 --- */
    MT_MPI(MPI_File_set_size(fh, 0));
    MT_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MT_MPI(MPI_File_get_position_shared(fh, &pos));
    MT_CHECK(pos == 0, "shared pointer after set_view: %lld", (long long)pos);
    mine = malloc((size_t)(mt_size + 1) * sizeof(int));
    for (i = 0; i <= mt_rank; i++)
        mine[i] = mt_rank;
    MT_MPI(MPI_File_write_ordered(fh, mine, mt_rank + 1, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == mt_rank + 1, "write_ordered count %d", cnt);
    /* the split form appends the same again */
    MT_MPI(MPI_File_write_ordered_begin(fh, mine, mt_rank + 1, MPI_INT));
    MT_MPI(MPI_File_write_ordered_end(fh, mine, &st));
    MT_MPI(MPI_File_sync(fh));
    sum = mt_size * (mt_size + 1) / 2;
    MT_MPI(MPI_File_get_position_shared(fh, &pos));
    MT_CHECK(pos == 2 * sum, "shared pointer after ordered writes: %lld, expected %d",
             (long long)pos, 2 * sum);
    if (mt_rank == 0) {
        int *v = (int *)io_slurp(path, &len);
        MT_CHECK(len == 2L * sum * 4, "ordered file size %ld", len);
        for (k = 0, i = 0; v && k < 2; k++) {
            int rr, j;
            for (rr = 0; rr < mt_size; rr++)
                for (j = 0; j <= rr; j++, i++)
                    MT_CHECK(v[i] == rr, "ordered: int %d is %d, expected %d", i, v[i], rr);
        }
        free(v);
    }
    MT_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    for (i = 0; i <= mt_rank; i++)
        mine[i] = -1;
    MT_MPI(MPI_File_read_ordered(fh, mine, mt_rank + 1, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == mt_rank + 1, "read_ordered count %d", cnt);
    for (i = 0; i <= mt_rank; i++)
        MT_CHECK(mine[i] == mt_rank, "read_ordered[%d] = %d", i, mine[i]);
    MT_MPI(MPI_File_get_position_shared(fh, &pos));
    MT_CHECK(pos == sum, "shared pointer after read_ordered: %lld", (long long)pos);
    free(mine);
    MT_MPI(MPI_File_close(&fh));
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    return mt_finalize();
}
