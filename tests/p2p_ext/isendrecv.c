/* MPI_Isendrecv and MPI_Isendrecv_replace (MPI 4.0): a ring shift in both directions with
 * contiguous and strided data, small and large (rendezvous) messages, MPI_PROC_NULL partners,
 * MPI_ANY_SOURCE/MPI_ANY_TAG receives with the status checked, completion through MPI_Wait,
 * MPI_Test loops, MPI_Waitall over several requests and MPI_Request_free. */
#include "mptest.h"

static int check_status(const MPI_Status *st, int src, int tag, int count_bytes)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    return st->MPI_SOURCE == src && st->MPI_TAG == tag && n == count_bytes;
}

static void shift(int bytes, uint64_t seed)
{
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    unsigned char *s = malloc((size_t)bytes + 1), *r = malloc((size_t)bytes + 1);
    MPI_Request req;
    MPI_Status st;
    long long bad;

    /* Isendrecv to the right, from the left. */
    mt_fill(s, (size_t)bytes, seed + (uint64_t)mt_rank);
    memset(r, 0, (size_t)bytes);
    MT_MPI(MPI_Isendrecv(s, bytes, MPI_BYTE, right, 7, r, bytes, MPI_BYTE, left, 7,
                         MPI_COMM_WORLD, &req));
    MT_MPI(MPI_Wait(&req, &st));
    MT_CHECK(req == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    MT_CHECK(check_status(&st, left, 7, bytes), "status %d/%d (bytes %d)", st.MPI_SOURCE,
             st.MPI_TAG, bytes);
    bad = mt_verify(r, (size_t)bytes, seed + (uint64_t)left);
    MT_CHECK(bad < 0, "isendrecv %d bytes: wrong data at %lld", bytes, bad);

    /* Isendrecv_replace to the left, from MPI_ANY_SOURCE (only the right neighbour sends tag 8
     * to us), completed by an MPI_Test loop. */
    mt_fill(s, (size_t)bytes, seed + 100 + (uint64_t)mt_rank);
    {
        int flag = 0;
        MT_MPI(MPI_Isendrecv_replace(s, bytes, MPI_BYTE, left, 8, MPI_ANY_SOURCE, 8,
                                     MPI_COMM_WORLD, &req));
        while (!flag)
            MT_MPI(MPI_Test(&req, &flag, &st));
    }
    MT_CHECK(check_status(&st, right, 8, bytes), "replace status %d/%d", st.MPI_SOURCE,
             st.MPI_TAG);
    bad = mt_verify(s, (size_t)bytes, seed + 100 + (uint64_t)right);
    MT_CHECK(bad < 0, "isendrecv_replace %d bytes: wrong data at %lld", bytes, bad);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    shift(0, 1);
    shift(8, 2);
    shift(100000, 3);   /* above every route's eager threshold */
    shift(3 << 20, 4);  /* large: single-copy / streamed */

    /* Strided replace: every other int of 2*N is exchanged, the rest untouched. */
    {
        enum { N = 1000 };
        int buf[2 * N], i;
        int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
        MPI_Datatype vec;
        MPI_Request req;
        MPI_Status st;
        MPI_Type_vector(N, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        for (i = 0; i < 2 * N; i++)
            buf[i] = i % 2 ? -i : mt_rank * 100000 + i;
        MT_MPI(MPI_Isendrecv_replace(buf, 1, vec, right, 9, left, 9, MPI_COMM_WORLD, &req));
        MT_MPI(MPI_Wait(&req, &st));
        for (i = 0; i < 2 * N; i++) {
            int want = i % 2 ? -i : left * 100000 + i;
            if (buf[i] != want) {
                MT_CHECK(0, "strided replace: buf[%d] = %d, want %d", i, buf[i], want);
                break;
            }
        }
        MPI_Type_free(&vec);
    }

    /* MPI_PROC_NULL on both sides completes at once with the PROC_NULL status. */
    {
        int x = 5, y = 6;
        MPI_Request req;
        MPI_Status st;
        int n = -1;
        MT_MPI(MPI_Isendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, &y, 1, MPI_INT, MPI_PROC_NULL, 1,
                             MPI_COMM_WORLD, &req));
        MT_MPI(MPI_Wait(&req, &st));
        MPI_Get_count(&st, MPI_INT, &n);
        MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && n == 0 && y == 6, "proc_null: src %d n %d",
                 st.MPI_SOURCE, n);
    }

    /* Several in flight at once, completed by MPI_Waitall; one freed with MPI_Request_free. */
    {
        enum { K = 8 };
        int sb[K], rb[K], i;
        int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
        MPI_Request reqs[K];
        MPI_Status sts[K];
        for (i = 0; i < K; i++) {
            sb[i] = mt_rank * 1000 + i;
            rb[i] = -1;
            MT_MPI(MPI_Isendrecv(&sb[i], 1, MPI_INT, right, 20 + i, &rb[i], 1, MPI_INT, left,
                                 20 + i, MPI_COMM_WORLD, &reqs[i]));
        }
        MT_MPI(MPI_Waitall(K, reqs, sts));
        for (i = 0; i < K; i++)
            MT_CHECK(rb[i] == left * 1000 + i && sts[i].MPI_TAG == 20 + i, "waitall %d: %d", i,
                     rb[i]);
        {
            int v = mt_rank, w = -1;
            MPI_Request req;
            MT_MPI(MPI_Isendrecv(&v, 1, MPI_INT, right, 40, &w, 1, MPI_INT, left, 40,
                                 MPI_COMM_WORLD, &req));
            MT_MPI(MPI_Request_free(&req));
            MT_CHECK(req == MPI_REQUEST_NULL, "Request_free did not null the handle");
            /* The freed operation still completes: a later message on the same pair, tag 41,
             * arrives after it (non-overtaking), and then w must hold the value. */
            MT_MPI(MPI_Sendrecv(&v, 1, MPI_INT, right, 41, &v, 1, MPI_INT, left, 41,
                                MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MT_CHECK(w == left, "freed isendrecv: w = %d, want %d", w, left);
        }
    }

    /* Argument errors under MPI_ERRORS_RETURN. */
    {
        int x = 0;
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = MPI_Isendrecv(&x, -1, MPI_INT, 0, 1, &x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &req);
        int cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        MT_CHECK(cls == MPI_ERR_COUNT, "negative count gave class %d", cls);
        rc = MPI_Isendrecv(&x, 1, MPI_INT, mt_size, 1, &x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD,
                           &req);
        MPI_Error_class(rc, &cls);
        MT_CHECK(cls == MPI_ERR_RANK, "bad rank gave class %d", cls);
    }
    return mt_finalize();
}
