/* coll_errors: collectives reject bad arguments with the right error class through the
 * communicator's error handler (MPI_ERRORS_RETURN here), and keep working afterwards.
 * Intercommunicators: an invalid root is MPI_ERR_ROOT, and the collectives work after it
 * (their results: coll_inter.c).
 * Every rank makes the same bad call, so no rank is left waiting for another.
 */
#include "../mp/mptest.h"

static void expect_class(int rc, int cls, const char *what)
{
    int got = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &got);
    MT_CHECK(got == cls, "%s: error class %d, want %d", what, got, cls);
}

/* The handler of the communicator in lean_path(): counts calls, keeps the last class. */
static int handler_calls = 0, handler_class = MPI_SUCCESS;
static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

/* Small blocking collectives on a few ranks take a lean dispatch once the communicator's
 * collective modules are chosen (src/coll/api.cpp, launch): after good calls of the same shape
 * have warmed it, bad arguments must still be caught, with the right class, through this
 * communicator's own handler (not MPI_COMM_WORLD's), and the calls must work afterwards. */
static void lean_path(void)
{
    MPI_Comm dup;
    MPI_Errhandler eh;
    MPI_Datatype vec; /* created, never committed */
    int sb[64], rb[64], i, rc, calls;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_create_errhandler(count_errors, &eh);
    MPI_Comm_set_errhandler(dup, eh);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    for (i = 0; i < 64; ++i) sb[i] = mt_rank * 100 + i;
    for (i = 0; i < 3; ++i) {
        MPI_Barrier(dup);
        MPI_Alltoall(sb, 2, MPI_INT, rb, 2, MPI_INT, dup);
        MPI_Allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, dup);
        MPI_Allreduce(sb, rb, 2, MPI_INT, MPI_SUM, dup);
    }
    MT_CHECK(handler_calls == 0, "good calls called the handler %d times", handler_calls);
#define EXPECT(call, cls, what)                                                               \
    do {                                                                                      \
        calls = handler_calls;                                                                \
        rc = (call);                                                                          \
        expect_class(rc, cls, what);                                                          \
        MT_CHECK(handler_calls == calls + 1 && handler_class == cls,                          \
                 "%s: handler called %d times, class %d", what, handler_calls - calls,        \
                 handler_class);                                                              \
    } while (0)
    EXPECT(MPI_Alltoall(sb, 2, vec, rb, 2, vec, dup), MPI_ERR_TYPE, "alltoall uncommitted type");
    EXPECT(MPI_Alltoall(sb, -1, MPI_INT, rb, 2, MPI_INT, dup), MPI_ERR_COUNT,
           "alltoall sendcount -1");
    EXPECT(MPI_Allgather(sb, 2, MPI_INT, rb, 2, vec, dup), MPI_ERR_TYPE,
           "allgather uncommitted recvtype");
    EXPECT(MPI_Allgather(sb, 2, MPI_INT, MPI_IN_PLACE, 2, MPI_INT, dup), MPI_ERR_BUFFER,
           "allgather recvbuf MPI_IN_PLACE");
    EXPECT(MPI_Allreduce(sb, rb, 2, MPI_INT, MPI_OP_NULL, dup), MPI_ERR_OP,
           "allreduce MPI_OP_NULL");
    EXPECT(MPI_Allreduce(sb, sb, 2, MPI_INT, MPI_SUM, dup), MPI_ERR_BUFFER,
           "allreduce sendbuf == recvbuf");
#undef EXPECT
    /* and the right results afterwards */
    rc = MPI_Alltoall(sb, 2, MPI_INT, rb, 2, MPI_INT, dup);
    for (i = 0; i < 2 * mt_size; ++i)
        MT_CHECK(rc == MPI_SUCCESS && rb[i] == (i / 2) * 100 + mt_rank * 2 + i % 2,
                 "alltoall after the errors: rc %d, rb[%d] = %d", rc, i, rb[i]);
    rc = MPI_Allreduce(sb, rb, 2, MPI_INT, MPI_SUM, dup);
    MT_CHECK(rc == MPI_SUCCESS && rb[1] == 100 * mt_size * (mt_size - 1) / 2 + mt_size,
             "allreduce after the errors: rc %d, %d", rc, rb[1]);
    MT_CHECK(MPI_Barrier(dup) == MPI_SUCCESS, "barrier after the errors");
    MPI_Type_free(&vec);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&dup);
}

int main(int argc, char **argv)
{
    int rc, x = 1, y = 0, buf[8] = {0}, rbuf[64];
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    rc = MPI_Bcast(buf, 1, MPI_INT, mt_size, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_ROOT, "bcast root = size");
    rc = MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_ROOT, "reduce root = -1");
    rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_OP, "allreduce MPI_OP_NULL");
    rc = MPI_Allreduce(&x, &y, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD);
    {   /* MPICH reports the op as not defined for the (null) type: accept both classes */
        int cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        MT_CHECK(cls == MPI_ERR_TYPE || cls == MPI_ERR_OP,
                 "allreduce MPI_DATATYPE_NULL: error class %d, want %d", cls, MPI_ERR_TYPE);
    }
    rc = MPI_Bcast(buf, -1, MPI_INT, 0, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_COUNT, "bcast count -1");
    rc = MPI_Barrier(MPI_COMM_NULL);
    expect_class(rc, MPI_ERR_COMM, "barrier MPI_COMM_NULL");
    rc = MPI_Allgather(&x, -2, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_COUNT, "allgather sendcount -2");
    {
        float f = 1.0f, g = 0.0f;
        rc = MPI_Allreduce(&f, &g, 1, MPI_FLOAT, MPI_BAND, MPI_COMM_WORLD);
        expect_class(rc, MPI_ERR_OP, "allreduce MPI_BAND on MPI_FLOAT");
    }
    MPI_Request req = MPI_REQUEST_NULL;
    rc = MPI_Ibcast(buf, 1, MPI_INT, -5, MPI_COMM_WORLD, &req);
    expect_class(rc, MPI_ERR_ROOT, "ibcast root = -5");
    rc = MPI_Allreduce(MPI_IN_PLACE, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MT_CHECK(rc != MPI_SUCCESS, "allreduce with both buffers MPI_IN_PLACE succeeded");

    /* Still usable after the errors. */
    rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MT_CHECK(rc == MPI_SUCCESS && y == mt_size, "allreduce after errors: rc %d, %d", rc, y);

    lean_path();

    if (mt_size >= 2) {
        MPI_Comm half, inter;
        int color = mt_rank < mt_size / 2 ? 0 : 1;
        MPI_Comm_split(MPI_COMM_WORLD, color, mt_rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color == 0 ? mt_size / 2 : 0, 77, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        {
            int rsize;
            MPI_Comm_remote_size(inter, &rsize);
            rc = MPI_Bcast(&x, 1, MPI_INT, rsize, inter); /* neither a remote rank nor MPI_ROOT */
            expect_class(rc, MPI_ERR_ROOT, "intercomm bcast with root = remote size");
        }
        rc = MPI_Barrier(inter);
        MT_CHECK(rc == MPI_SUCCESS, "intercomm barrier: rc %d", rc);
        rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, inter);
        MT_CHECK(rc == MPI_SUCCESS && y == (color == 0 ? mt_size - mt_size / 2 : mt_size / 2),
                 "intercomm allreduce: rc %d, %d", rc, y);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    return mt_finalize();
}
