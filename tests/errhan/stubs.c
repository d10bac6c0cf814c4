/* stubs (the name of days when these were stubs): how the errors of MPI-IO and one-sided calls
 * meet their error handlers. Both are implemented (tests/io, tests/rma). wanmpi only.
 *   - MPI-IO first, while MPI_COMM_WORLD still has MPI_ERRORS_ARE_FATAL: file errors go to the
 *     handler of MPI_FILE_NULL, MPI_ERRORS_RETURN by default, so a failed MPI_File_open returns
 *     the error and MPI_FILE_NULL; a user file handler set on MPI_FILE_NULL is then called;
 *   - windows: window keyvals and window error handlers are created and freed; a window handler
 *     is refused by a communicator; a user handler on the communicator sees MPI_Win_create's
 *     error. */
#include "mptest.h"


static int fcalls, fcode;
static MPI_File ffile = (MPI_File)1;
static void file_handler(MPI_File *f, int *code, ...)
{
    fcalls++;
    ffile = *f;
    fcode = *code;
}

static int ccalls, ccode;
static MPI_Comm ccomm;
static void comm_handler(MPI_Comm *c, int *code, ...)
{
    ccalls++;
    ccomm = *c;
    ccode = *code;
}

static void win_handler(MPI_Win *w, int *code, ...)
{
    (void)w;
    (void)code;
}

int main(int argc, char **argv)
{
    MPI_File fh = (MPI_File)1;
    MPI_Win win = 12345;
    MPI_Errhandler eh, got;
    MPI_Request req = 777;
    MPI_Comm d;
    MPI_Offset off;
    int buf[4] = {0}, flag, kv, rc, cls;
    void *base = (void *)buf;

    mt_init(&argc, &argv);

    /* --- MPI-IO, default handlers ---------------------------------------------------------- */
    MT_MPI(MPI_File_get_errhandler(MPI_FILE_NULL, &got));
    MT_CHECK(got == MPI_ERRORS_RETURN, "default file error handler is not MPI_ERRORS_RETURN");
    MT_MPI(MPI_Errhandler_free(&got));
    /* MPI-IO is real now (tests/io): errors of calls without a file go to MPI_FILE_NULL's
     * handler and return with their own classes */
    rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-wanmpi-dir/x", MPI_MODE_RDONLY,
                       MPI_INFO_NULL, &fh);
    MPI_Error_class(rc, &cls);
    MT_CHECK(cls == MPI_ERR_NO_SUCH_FILE, "File_open of a missing file: class %d", cls);
    MT_CHECK(fh == MPI_FILE_NULL, "File_open did not return MPI_FILE_NULL");
    rc = MPI_File_iread_at(fh, 0, buf, 1, MPI_INT, &req);
    MPI_Error_class(rc, &cls);
    MT_CHECK(cls == MPI_ERR_FILE, "File_iread_at(MPI_FILE_NULL): class %d", cls);
    MT_CHECK(req == MPI_REQUEST_NULL, "File_iread_at did not return MPI_REQUEST_NULL");
    rc = MPI_File_get_position(fh, &off);
    MPI_Error_class(rc, &cls);
    MT_CHECK(cls == MPI_ERR_FILE, "File_get_position(MPI_FILE_NULL): class %d", cls);

    /* a user file handler on MPI_FILE_NULL */
    MT_MPI(MPI_File_create_errhandler(file_handler, &eh));
    MT_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, eh));
    MT_MPI(MPI_Errhandler_free(&eh));
    fcalls = 0;
    rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-wanmpi-dir/x", MPI_MODE_RDONLY,
                       MPI_INFO_NULL, &fh);
    MT_CHECK(fcalls == 1 && ffile == MPI_FILE_NULL && fcode == rc,
             "file handler: %d calls, file null %d, code %d vs %d", fcalls,
             ffile == MPI_FILE_NULL, fcode, rc);
    MT_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));

    /* --- one-sided (implemented: src/rma, tests/rma): only how its errors meet handlers ---- */
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kv, NULL));
    MT_MPI(MPI_Win_free_keyval(&kv));
    MT_CHECK(kv == MPI_KEYVAL_INVALID, "Win_free_keyval did not reset the keyval");
    MT_MPI(MPI_Win_create_errhandler(win_handler, &eh));
    rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    MT_CHECK(rc != MPI_SUCCESS, "a window error handler was accepted by a communicator");
    MT_MPI(MPI_Errhandler_free(&eh));

    /* Win_create's error (a negative size) goes to the communicator's handler */
    MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MT_MPI(MPI_Comm_create_errhandler(comm_handler, &eh));
    MT_MPI(MPI_Comm_set_errhandler(d, eh));
    MT_MPI(MPI_Errhandler_free(&eh));
    ccalls = 0;
    rc = MPI_Win_create(buf, -1, sizeof(int), MPI_INFO_NULL, d, &win);
    cls = -1;
    MPI_Error_class(rc, &cls);
    MT_CHECK(ccalls == 1 && ccomm == d && ccode == rc && cls == MPI_ERR_SIZE &&
                 win == MPI_WIN_NULL,
             "Win_create on d: handler calls %d, comm ok %d, class %d", ccalls, ccomm == d, cls);
    (void)base;
    (void)flag;
    MT_MPI(MPI_Comm_free(&d));
    return mt_finalize();
}
