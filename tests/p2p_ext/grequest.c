/* Generalized requests: MPI_Grequest_start / MPI_Grequest_complete. Checks that MPI_Test does not
 * report a pending request, that MPI_Wait/MPI_Test/MPI_Waitany/MPI_Waitall/MPI_Request_get_status
 * give the status query_fn sets (source, tag, elements, cancelled), that free_fn runs exactly once
 * with the extra state (also after MPI_Request_free of a pending request), that cancel_fn gets
 * the right `complete` flag, that query_fn's error code reaches the caller, and that a request
 * completed by another thread (MPI_THREAD_MULTIPLE, if provided) wakes a rank blocked in MPI_Wait.
 * Mixed with ordinary point-to-point requests in one MPI_Waitall. */
#include "mptest.h"

#include <pthread.h>

struct state {
    int queries, frees, cancels, last_complete;
    int src, tag, count, cancelled, query_err;
};

static int query_fn(void *extra, MPI_Status *st)
{
    struct state *s = extra;
    s->queries++;
    st->MPI_SOURCE = s->src;
    st->MPI_TAG = s->tag;
    MPI_Status_set_elements(st, MPI_INT, s->count);
    MPI_Status_set_cancelled(st, s->cancelled);
    return s->query_err;
}

static int free_fn(void *extra)
{
    ((struct state *)extra)->frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    struct state *s = extra;
    s->cancels++;
    s->last_complete = complete;
    if (!complete)
        s->cancelled = 1;
    return MPI_SUCCESS;
}

static void init_state(struct state *s, int src, int tag, int count)
{
    memset(s, 0, sizeof *s);
    s->src = src;
    s->tag = tag;
    s->count = count;
}

static void *completer(void *arg)
{
    MPI_Request *req = arg;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL); /* let the main thread block first (not pass/fail logic) */
    MPI_Grequest_complete(*req);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    struct state s;
    MPI_Request req;
    MPI_Status st;
    int flag, n;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    mt_setup();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Basic: pending, then complete, then Wait. */
    init_state(&s, 3, 77, 5);
    MT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &req));
    MT_MPI(MPI_Test(&req, &flag, &st));
    MT_CHECK(!flag, "pending generalized request reported complete");
    MT_MPI(MPI_Request_get_status(req, &flag, &st));
    MT_CHECK(!flag, "Request_get_status: pending request reported complete");
    MT_MPI(MPI_Grequest_complete(req));
    MT_MPI(MPI_Request_get_status(req, &flag, &st));
    MT_CHECK(flag && st.MPI_TAG == 77, "Request_get_status after complete: flag %d tag %d", flag,
             st.MPI_TAG);
    MT_CHECK(req != MPI_REQUEST_NULL && s.frees == 0, "Request_get_status freed the request");
    MT_MPI(MPI_Wait(&req, &st));
    MT_CHECK(req == MPI_REQUEST_NULL, "Wait did not free the request");
    MPI_Get_count(&st, MPI_INT, &n);
    MPI_Test_cancelled(&st, &flag);
    MT_CHECK(st.MPI_SOURCE == 3 && st.MPI_TAG == 77 && n == 5 && !flag,
             "status %d/%d count %d cancelled %d", st.MPI_SOURCE, st.MPI_TAG, n, flag);
    MT_CHECK(s.queries >= 1 && s.frees == 1, "queries %d frees %d", s.queries, s.frees);

    /* Cancel before completion: cancel_fn(complete=0), status says cancelled. */
    init_state(&s, 1, 2, 0);
    MT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &req));
    MT_MPI(MPI_Cancel(&req));
    MT_CHECK(s.cancels == 1 && s.last_complete == 0, "cancel_fn calls %d complete %d", s.cancels,
             s.last_complete);
    MT_MPI(MPI_Grequest_complete(req));
    MT_MPI(MPI_Wait(&req, &st));
    MPI_Test_cancelled(&st, &flag);
    MT_CHECK(flag, "cancelled generalized request: status not cancelled");
    MT_CHECK(s.frees == 1, "frees %d", s.frees);

    /* Cancel after completion: cancel_fn(complete=1). */
    init_state(&s, 1, 2, 0);
    MT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &req));
    MT_MPI(MPI_Grequest_complete(req));
    MT_MPI(MPI_Cancel(&req));
    MT_CHECK(s.cancels == 1 && s.last_complete == 1, "late cancel_fn complete %d",
             s.last_complete);
    MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));

    /* Request_free of a pending request: free_fn runs once, after completion. */
    init_state(&s, 0, 0, 0);
    {
        MPI_Request keep;
        MT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &req));
        keep = req;
        MT_MPI(MPI_Request_free(&req));
        MT_CHECK(req == MPI_REQUEST_NULL && s.frees == 0, "Request_free: frees %d", s.frees);
        MT_MPI(MPI_Grequest_complete(keep));
        MT_CHECK(s.frees == 1, "free_fn after complete of a freed request: %d", s.frees);
    }

    /* query_fn's error reaches MPI_Wait (and the status with MPI_Waitall). */
    init_state(&s, 0, 0, 0);
    s.query_err = MPI_ERR_OTHER;
    MT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &req));
    MT_MPI(MPI_Grequest_complete(req));
    {
        int rc = MPI_Wait(&req, &st), cls = 0;
        MPI_Error_class(rc, &cls);
        MT_CHECK(cls == MPI_ERR_OTHER, "query_fn error: Wait returned class %d", cls);
    }

    /* Mixed with point-to-point in Waitall and Waitany. */
    {
        struct state a, b;
        MPI_Request reqs[3];
        MPI_Status sts[3];
        int peer = mt_partner(), x = mt_rank, y = -1, idx = -1;
        init_state(&a, 10, 11, 1);
        init_state(&b, 20, 21, 2);
        MT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &a, &reqs[0]));
        MT_MPI(MPI_Irecv(&y, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &reqs[1]));
        MT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &b, &reqs[2]));
        MT_MPI(MPI_Grequest_complete(reqs[2]));
        MT_MPI(MPI_Waitany(3, reqs, &idx, &sts[0]));
        MT_CHECK(idx == 1 || idx == 2, "Waitany returned %d (a pending grequest?)", idx);
        MT_MPI(MPI_Send(&x, 1, MPI_INT, peer, 5, MPI_COMM_WORLD));
        MT_MPI(MPI_Grequest_complete(reqs[0]));
        MT_MPI(MPI_Waitall(3, reqs, sts));
        MT_CHECK(y == peer, "p2p in mixed Waitall: %d", y);
        MT_CHECK(sts[0].MPI_SOURCE == 10 && sts[0].MPI_TAG == 11, "mixed status %d/%d",
                 sts[0].MPI_SOURCE, sts[0].MPI_TAG);
        MT_CHECK(a.frees == 1 && b.frees == 1, "mixed frees %d %d", a.frees, b.frees);
    }

    /* Completed by another thread while this one blocks in MPI_Wait. */
    if (provided == MPI_THREAD_MULTIPLE) {
        pthread_t th;
        init_state(&s, 4, 44, 1);
        MT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &req));
        pthread_create(&th, NULL, completer, &req);
        MT_MPI(MPI_Wait(&req, &st));
        pthread_join(th, NULL);
        MT_CHECK(st.MPI_TAG == 44 && s.frees == 1, "threaded: tag %d frees %d", st.MPI_TAG,
                 s.frees);
    }

    return mt_finalize();
}
