/* errhan_badinfo: an info argument that is neither MPI_INFO_NULL nor a valid info (here: a freed
 * handle) is refused with MPI_ERR_INFO by every kind of call that takes one, through the error
 * handler of the object the call concerns (MPI_ERRORS_RETURN here), and the call creates
 * nothing. One rule in wanmpi (core::info_arg_check); standard MPI, so it runs under MPICH and
 * Open MPI too. */
#include "mptest.h"

#include <stdio.h>
#include <unistd.h>

static void expect_info_error(int rc, const char *what, int line)
{
    int cls = -1;
    if (rc == MPI_SUCCESS) {
        mt_fail(__FILE__, line, what, "accepted a freed info handle");
        return;
    }
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_INFO) mt_fail(__FILE__, line, what, "class %d, expected MPI_ERR_INFO", cls);
}
#define BADINFO(call) expect_info_error((call), #call, __LINE__)

int main(int argc, char **argv)
{
    MPI_Info bad;
    MPI_Win win = MPI_WIN_NULL;
    MPI_File fh = MPI_FILE_NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Session s = MPI_SESSION_NULL;
    char path[64];
    int buf[4] = {0}, rank;

    mt_init(&argc, &argv);
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MT_MPI(MPI_Info_create(&bad));
    MT_MPI(MPI_Info_free(&bad));
    MT_MPI(MPI_Info_create(&bad)); /* a handle that was valid and is freed: the case to refuse */
    {
        MPI_Info tmp = bad;
        MT_MPI(MPI_Info_free(&tmp));
    }

    /* windows: creation (the communicator's handler) and set_info (the window's) */
    BADINFO(MPI_Win_create(buf, sizeof buf, sizeof(int), bad, MPI_COMM_WORLD, &win));
    MT_CHECK(win == MPI_WIN_NULL, "Win_create with a bad info returned a window");
    MT_MPI(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    BADINFO(MPI_Win_set_info(win, bad));
    MT_MPI(MPI_Win_free(&win));

    /* files: open and delete (MPI_FILE_NULL's handler, MPI_ERRORS_RETURN by default), then
     * set_info and set_view on an open file (its handler) */
    snprintf(path, sizeof path, "/tmp/errhan_badinfo.%d", (int)getpid());
    MT_MPI(MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD));
    BADINFO(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, bad, &fh));
    MT_CHECK(fh == MPI_FILE_NULL, "File_open with a bad info returned a file");
    BADINFO(MPI_File_delete(path, bad));
    MT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR |
                         MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    BADINFO(MPI_File_set_info(fh, bad));
    BADINFO(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", bad));
    MT_MPI(MPI_File_close(&fh));

    /* a session, a partitioned send, a persistent collective */
    BADINFO(MPI_Session_init(bad, MPI_ERRORS_RETURN, &s));
    MT_CHECK(s == MPI_SESSION_NULL, "Session_init with a bad info returned a session");
    BADINFO(MPI_Psend_init(buf, 2, 2, MPI_INT, rank, 0, MPI_COMM_WORLD, bad, &req));
    MT_CHECK(req == MPI_REQUEST_NULL, "Psend_init with a bad info returned a request");
    BADINFO(MPI_Barrier_init(MPI_COMM_WORLD, bad, &req));
    MT_CHECK(req == MPI_REQUEST_NULL, "Barrier_init with a bad info returned a request");
    return mt_finalize();
}
