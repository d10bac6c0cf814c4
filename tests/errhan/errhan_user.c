/* errhan_user: user error handlers on communicators.
 *   - MPI_Comm_create_errhandler + MPI_Comm_set_errhandler: a real error (send to an invalid rank)
 *     calls the handler once with the communicator and the error code the call then returns
 *     (class MPI_ERR_RANK), and MPI_Comm_call_errhandler calls it with the given code (predefined
 *     and user-added codes);
 *   - the handler is per communicator (MPI_COMM_WORLD keeps its own) and is inherited by
 *     MPI_Comm_dup; MPI_Comm_get_errhandler returns it (a new reference, freed by the caller);
 *   - MPI_Errhandler_free while attached: the communicator keeps using the handler;
 *   - MPI_ERRORS_RETURN / MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT can be set and read back, and
 *     MPI_Comm_call_errhandler with MPI_ERRORS_RETURN just returns;
 *   - a window or file error handler cannot be set on a communicator (error);
 *   - the deprecated MPI_Errhandler_create / _set / _get are not used (removed in MPI-3.0, absent
 *     from some MPIs); wanmpi has them for old codes. */
#include "mptest.h"

static int calls, last_code;
static MPI_Comm last_comm;

static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_comm = *comm;
    last_code = *code;
}

static int calls2;
static void handler2(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    calls2++;
}

static void file_handler(MPI_File *f, int *code, ...)
{
    (void)f;
    (void)code;
}

int main(int argc, char **argv)
{
    MPI_Errhandler eh, eh2, got, feh;
    MPI_Comm d, d2;
    int rc, cls, buf = 0, ucls, ucode;

    mt_init(&argc, &argv);
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MT_MPI(MPI_Comm_create_errhandler(handler, &eh));
    MT_CHECK(eh != MPI_ERRHANDLER_NULL, "Comm_create_errhandler returned MPI_ERRHANDLER_NULL");
    MT_MPI(MPI_Comm_set_errhandler(d, eh));
    MT_MPI(MPI_Comm_get_errhandler(d, &got));
    MT_CHECK(got == eh, "Comm_get_errhandler returned another handler");
    MT_MPI(MPI_Errhandler_free(&got));
    MT_CHECK(got == MPI_ERRHANDLER_NULL, "Errhandler_free did not reset the handle");

    /* a real error on d */
    calls = 0;
    rc = MPI_Send(&buf, 1, MPI_INT, mt_size + 5, 0, d);
    MT_CHECK(rc != MPI_SUCCESS, "send to an invalid rank succeeded");
    MT_CHECK(calls == 1, "handler called %d times for one error", calls);
    MT_CHECK(last_comm == d, "handler got communicator 0x%x, expected 0x%x", (unsigned)last_comm,
             (unsigned)d);
    MT_CHECK(last_code == rc, "handler got code %d, the call returned %d", last_code, rc);
    cls = -1;
    MPI_Error_class(rc, &cls);
    MT_CHECK(cls == MPI_ERR_RANK, "error class %d, expected MPI_ERR_RANK", cls);

    /* the error on MPI_COMM_WORLD does not call d's handler */
    calls = 0;
    rc = MPI_Send(&buf, 1, MPI_INT, mt_size + 5, 0, MPI_COMM_WORLD);
    MT_CHECK(rc != MPI_SUCCESS && calls == 0, "WORLD error: rc %d, d's handler called %d times",
             rc, calls);

    /* Comm_call_errhandler, predefined and user codes */
    calls = 0;
    MT_MPI(MPI_Comm_call_errhandler(d, MPI_ERR_OTHER));
    MT_CHECK(calls == 1 && last_code == MPI_ERR_OTHER && last_comm == d,
             "call_errhandler(MPI_ERR_OTHER): calls %d code %d", calls, last_code);
    MT_MPI(MPI_Add_error_class(&ucls));
    MT_MPI(MPI_Add_error_code(ucls, &ucode));
    MT_MPI(MPI_Comm_call_errhandler(d, ucode));
    MT_CHECK(calls == 2 && last_code == ucode, "call_errhandler(user code): calls %d code %d",
             calls, last_code);

    /* inherited by dup; freeing the handle keeps it attached */
    MT_MPI(MPI_Comm_dup(d, &d2));
    MT_MPI(MPI_Errhandler_free(&eh));
    calls = 0;
    MT_MPI(MPI_Comm_call_errhandler(d2, MPI_ERR_ARG));
    MT_CHECK(calls == 1 && last_comm == d2 && last_code == MPI_ERR_ARG,
             "dup'ed communicator: calls %d comm ok %d code %d", calls, last_comm == d2,
             last_code);
    rc = MPI_Recv(&buf, -1, MPI_INT, 0, 0, d2, MPI_STATUS_IGNORE);
    MT_CHECK(rc != MPI_SUCCESS && calls == 2, "negative count on d2: rc %d calls %d", rc, calls);

    /* a second handler replaces the first on d2 only */
    MT_MPI(MPI_Comm_create_errhandler(handler2, &eh2));
    MT_MPI(MPI_Comm_set_errhandler(d2, eh2));
    MT_MPI(MPI_Errhandler_free(&eh2));
    calls = calls2 = 0;
    MT_MPI(MPI_Comm_call_errhandler(d2, MPI_ERR_OTHER));
    MT_MPI(MPI_Comm_call_errhandler(d, MPI_ERR_OTHER));
    MT_CHECK(calls == 1 && calls2 == 1, "handlers called %d and %d times, expected 1 and 1", calls,
             calls2);

    /* predefined handlers */
    MT_MPI(MPI_Comm_set_errhandler(d2, MPI_ERRORS_RETURN));
    MT_MPI(MPI_Comm_call_errhandler(d2, MPI_ERR_OTHER)); /* returns, nothing happens */
    MT_MPI(MPI_Comm_get_errhandler(d2, &got));
    MT_CHECK(got == MPI_ERRORS_RETURN, "get_errhandler after setting MPI_ERRORS_RETURN");
    MT_MPI(MPI_Errhandler_free(&got)); /* freeing a predefined handler's handle is allowed */
/* MPI-4; MPICH 4.0 asserts on it, MPI-3 libraries (Open MPI 4) lack it */
#if defined(MPI_ERRORS_ABORT) && !(defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000)
    MT_MPI(MPI_Comm_set_errhandler(d2, MPI_ERRORS_ABORT));
    MT_MPI(MPI_Comm_get_errhandler(d2, &got));
    MT_CHECK(got == MPI_ERRORS_ABORT, "get_errhandler after setting MPI_ERRORS_ABORT");
#endif
    MT_MPI(MPI_Comm_set_errhandler(d2, MPI_ERRORS_ARE_FATAL));
    MT_MPI(MPI_Comm_get_errhandler(d2, &got));
    MT_CHECK(got == MPI_ERRORS_ARE_FATAL, "get_errhandler after setting MPI_ERRORS_ARE_FATAL");
    MT_MPI(MPI_Comm_set_errhandler(d2, MPI_ERRORS_RETURN));

    /* a file error handler is not a communicator error handler */
    MT_MPI(MPI_File_create_errhandler(file_handler, &feh));
#ifndef MPICH_NUMVERSION /* erroneous; MPICH does not detect it */
    rc = MPI_Comm_set_errhandler(d2, feh);
    MT_CHECK(rc != MPI_SUCCESS, "setting a file error handler on a communicator succeeded");
#endif
    MT_MPI(MPI_Errhandler_free(&feh));

    MT_MPI(MPI_Comm_free(&d2));
    MT_MPI(MPI_Comm_free(&d));
    return mt_finalize();
}
