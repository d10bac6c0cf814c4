/* io_basic: MPI-IO file handling and independent access, on any number of ranks.
 *   - errors, with the right classes through the file handlers (MPI_ERRORS_RETURN by default):
 *     missing file, bad amodes, existing file with MPI_MODE_EXCL, writing a read-only file,
 *     reading a write-only file, invalid handle, negative offset (to a user file handler);
 *   - open/close/delete, get_amode/get_group/get_info (hints), set_size/preallocate/get_size;
 *   - explicit offsets and individual file pointers (seek/get_position/get_byte_offset), short
 *     reads at end of file (MPI_Get_count), nonblocking and split-collective forms;
 *   - MPI_File_c2f/f2c; MPI_MODE_DELETE_ON_CLOSE. */
#include "iotest.h"

#define N 100

static int handler_calls, handler_class;
static void on_error(MPI_File *fh, int *code, ...)
{
    (void)fh;
    handler_calls++;
    handler_class = io_class(*code);
}

int main(int argc, char **argv)
{
    char path[256];
    MPI_File fh = MPI_FILE_NULL, fh2;
    MPI_Status st;
    MPI_Request req;
    MPI_Offset sz, pos;
    MPI_Group g, wg;
    MPI_Info info, used;
    MPI_Errhandler eh;
    int data[N], got[2 * N], i, cnt, amode, res, flag, peer;
    char val[MPI_MAX_INFO_VAL + 1];

    mt_init(&argc, &argv);
    io_path(path, sizeof path, "basic");
    peer = (mt_rank + 1) % mt_size;

    /* --- errors before any file exists --- */
    IO_EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
                    MPI_ERR_NO_SUCH_FILE);
    MT_CHECK(fh == MPI_FILE_NULL, "failed open did not return MPI_FILE_NULL");
    IO_EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE,
                                  MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    IO_EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_WRONLY,
                                  MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    IO_EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL,
                                  MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    IO_EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, 0, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    if (mt_rank == 0)
        IO_EXPECT_CLASS(MPI_File_delete(path, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);
    IO_EXPECT_CLASS(MPI_File_get_size(MPI_FILE_NULL, &sz), MPI_ERR_FILE);

    /* --- create, with hints --- */
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "65536");
    MPI_Info_set(info, "romio_cb_write", "enable");
    MT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
    MPI_Info_free(&info);
    MT_MPI(MPI_File_get_amode(fh, &amode));
    MT_CHECK(amode == (MPI_MODE_RDWR | MPI_MODE_CREATE), "amode %d", amode);
    MT_MPI(MPI_File_get_group(fh, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &res);
    MT_CHECK(res == MPI_IDENT, "file group is not MPI_COMM_WORLD's (%d)", res);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MT_MPI(MPI_File_get_info(fh, &used));
    MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, val, &flag);
    MT_CHECK(flag && strcmp(val, "65536") == 0, "cb_buffer_size hint not reported (%d, %s)",
             flag, flag ? val : "");
    MPI_Info_free(&used);
    MT_MPI(MPI_File_get_errhandler(fh, &eh));
    MT_CHECK(eh == MPI_ERRORS_RETURN, "a new file's handler is not MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
    MT_CHECK(MPI_File_f2c(MPI_File_c2f(fh)) == fh, "c2f/f2c round trip");
    MT_CHECK(MPI_File_c2f(MPI_FILE_NULL) == 0, "c2f of MPI_FILE_NULL");

    /* --- explicit offsets: rank r's N ints at byte r*4N --- */
    for (i = 0; i < N; i++)
        data[i] = mt_rank * 1000 + i;
    MT_MPI(MPI_File_write_at(fh, (MPI_Offset)mt_rank * N * 4, data, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == N, "write_at count %d", cnt);
    MT_MPI(MPI_File_sync(fh));
    MT_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * N * 4, got, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == N, "read_at count %d", cnt);
    for (i = 0; i < N; i++)
        MT_CHECK(got[i] == peer * 1000 + i, "read_at[%d] = %d", i, got[i]);
    MT_MPI(MPI_File_get_size(fh, &sz));
    MT_CHECK(sz == (MPI_Offset)mt_size * N * 4, "size %lld", (long long)sz);
    /* a read across the end of file is short */
    MT_MPI(MPI_File_read_at(fh, sz - 8, got, 10, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == 2, "read across EOF: count %d, expected 2", cnt);
    MT_CHECK(got[1] == (mt_size - 1) * 1000 + N - 1, "last int %d", got[1]);

    /* --- individual file pointer (default view: etype MPI_BYTE) --- */
    MT_MPI(MPI_File_seek(fh, (MPI_Offset)peer * N * 4, MPI_SEEK_SET));
    MT_MPI(MPI_File_read(fh, got, N / 2, MPI_INT, &st));
    MT_MPI(MPI_File_get_position(fh, &pos));
    MT_CHECK(pos == (MPI_Offset)peer * N * 4 + N * 2, "position %lld", (long long)pos);
    MT_MPI(MPI_File_read(fh, got + N / 2, N / 2, MPI_INT, &st));
    for (i = 0; i < N; i++)
        MT_CHECK(got[i] == peer * 1000 + i, "read[%d] = %d", i, got[i]);
    MT_MPI(MPI_File_seek(fh, -4 * N, MPI_SEEK_CUR));
    MT_MPI(MPI_File_get_position(fh, &pos));
    MT_CHECK(pos == (MPI_Offset)peer * N * 4, "after SEEK_CUR: %lld", (long long)pos);
    MT_MPI(MPI_File_seek(fh, 0, MPI_SEEK_END));
    MT_MPI(MPI_File_get_position(fh, &pos));
    MT_CHECK(pos == sz, "after SEEK_END: %lld", (long long)pos);
    MT_MPI(MPI_File_get_byte_offset(fh, 12, &pos));
    MT_CHECK(pos == 12, "byte offset %lld", (long long)pos);
    IO_EXPECT_CLASS(MPI_File_seek(fh, -1, MPI_SEEK_SET), MPI_ERR_ARG);

    /* --- nonblocking, collective and split forms: rank r rewrites its block negated (once
     * every rank has read its peer's block) --- */
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < N; i++)
        data[i] = -(mt_rank * 1000 + i);
    MT_MPI(MPI_File_iwrite_at(fh, (MPI_Offset)mt_rank * N * 4, data, N / 2, MPI_INT, &req));
    MT_MPI(MPI_Wait(&req, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == N / 2, "iwrite_at count %d", cnt);
    MT_MPI(MPI_File_iwrite_at_all(fh, (MPI_Offset)mt_rank * N * 4 + N * 2, data + N / 2, N / 4,
                                  MPI_INT, &req));
    MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MT_MPI(MPI_File_write_at_all_begin(fh, (MPI_Offset)mt_rank * N * 4 + N * 3, data + 3 * N / 4,
                                       N / 4, MPI_INT));
    MT_MPI(MPI_File_write_at_all_end(fh, data + 3 * N / 4, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == N / 4, "split write count %d", cnt);
    MT_MPI(MPI_File_sync(fh));
    MT_MPI(MPI_File_iread_at(fh, (MPI_Offset)peer * N * 4, got, N, MPI_INT, &req));
    MT_MPI(MPI_Wait(&req, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == N, "iread_at count %d", cnt);
    for (i = 0; i < N; i++)
        MT_CHECK(got[i] == -(peer * 1000 + i), "after nonblocking writes [%d] = %d", i, got[i]);
    MT_MPI(MPI_File_seek(fh, (MPI_Offset)peer * N * 4, MPI_SEEK_SET));
    MT_MPI(MPI_File_read_all_begin(fh, got, N, MPI_INT));
    MT_MPI(MPI_File_read_all_end(fh, got, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(cnt == N && got[N - 1] == -(peer * 1000 + N - 1), "split read: %d, %d", cnt,
             got[N - 1]);
    /* large-count variant */
    MT_MPI(MPI_File_read_at_c(fh, 0, got, (MPI_Count)N, MPI_INT, &st));
    MT_CHECK(got[0] == 0, "read_at_c %d", got[0]);

    /* --- a user handler on the file sees the error; then resize --- */
    MPI_File_create_errhandler(on_error, &eh);
    MT_MPI(MPI_File_set_errhandler(fh, eh));
    MPI_Errhandler_free(&eh);
    MPI_File_read_at(fh, -5, got, 1, MPI_INT, &st);
    MT_CHECK(handler_calls == 1 && handler_class == MPI_ERR_ARG,
             "user file handler: %d calls, class %d", handler_calls, handler_class);
    MT_MPI(MPI_File_set_size(fh, 100));
    MT_MPI(MPI_File_get_size(fh, &sz));
    MT_CHECK(sz == 100, "size after set_size %lld", (long long)sz);
    MT_MPI(MPI_File_preallocate(fh, 1000));
    MT_MPI(MPI_File_get_size(fh, &sz));
    MT_CHECK(sz == 1000, "size after preallocate %lld", (long long)sz);
    MT_MPI(MPI_File_preallocate(fh, 10)); /* never shrinks */
    MT_MPI(MPI_File_get_size(fh, &sz));
    MT_CHECK(sz == 1000, "preallocate shrank the file to %lld", (long long)sz);
    MT_MPI(MPI_File_close(&fh));
    MT_CHECK(fh == MPI_FILE_NULL, "close did not set MPI_FILE_NULL");

    /* --- access modes --- */
    IO_EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path,
                                  MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL,
                                  MPI_INFO_NULL, &fh), MPI_ERR_FILE_EXISTS);
    MT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    IO_EXPECT_CLASS(MPI_File_write_at(fh, 0, data, 1, MPI_INT, &st), MPI_ERR_READ_ONLY);
    IO_EXPECT_CLASS(MPI_File_set_size(fh, 0), MPI_ERR_READ_ONLY);
    MT_MPI(MPI_File_close(&fh));
    MT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                         MPI_INFO_NULL, &fh2));
    IO_EXPECT_CLASS(MPI_File_read_at(fh2, 0, got, 1, MPI_INT, &st), MPI_ERR_ACCESS);
    MT_MPI(MPI_File_close(&fh2));
    if (mt_rank == 0) /* close returns on the other ranks before rank 0 deletes */
        MT_CHECK(access(path, F_OK) != 0, "MPI_MODE_DELETE_ON_CLOSE left %s behind", path);
    return mt_finalize();
}
