/* MPI_T's error classes (MPI 4.0 §15.3.10) and its life cycle: calls before MPI_T_init_thread,
 * bad indices, names, handles and sessions, operations a variable does not allow, nested
 * init/finalize, MPI_T before MPI_Init and after MPI_Finalize, categories that cover every
 * variable once, and no event types or sources. One rank. */
#include <stdlib.h>

#include "mpit_util.h"

static void not_initialized(void)
{
    int n;
    MPI_T_cvar_handle ch = MPI_T_CVAR_HANDLE_NULL;
    MPI_T_pvar_session s = MPI_T_PVAR_SESSION_NULL;
    EXPECT_RC(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT_RC(MPI_T_pvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT_RC(MPI_T_category_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT_RC(MPI_T_cvar_get_index("WANMPI_P2P_EAGER_CREDIT", &n), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT_RC(MPI_T_cvar_handle_free(&ch), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT_RC(MPI_T_pvar_session_create(&s), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT_RC(MPI_T_source_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT_RC(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
}

static unsigned mpi_state(void)
{
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int c, v = -1, i = pvar_index("mpi_state", MPI_T_PVAR_CLASS_STATE);
    OK(MPI_T_pvar_session_create(&s));
    OK(MPI_T_pvar_handle_alloc(s, i, NULL, &h, &c));
    OK(MPI_T_pvar_read(s, h, &v));
    OK(MPI_T_pvar_session_free(&s));
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    int provided, n, i;
    not_initialized();
    EXPECT_RC(MPI_T_init_thread(12345, &provided), MPI_T_ERR_INVALID);
    OK(MPI_T_init_thread(MPI_THREAD_FUNNELED, &provided));
    CHECK(provided == MPI_THREAD_FUNNELED, "provided %d", provided);
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)); /* nested */
    OK(MPI_T_finalize());
    OK(MPI_T_cvar_get_num(&n)); /* still initialized once */
    CHECK(mpi_state() == 0, "mpi_state before MPI_Init: %u", mpi_state());

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(mpi_state() == 1, "mpi_state in MPI: %u", mpi_state());

    /* the state variable's enumeration */
    {
        MPI_T_enum en;
        int cls, ro, cont, at, items, v, len = 64;
        char nm[64];
        i = pvar_index("mpi_state", MPI_T_PVAR_CLASS_STATE);
        OK(MPI_T_pvar_get_info(i, NULL, NULL, NULL, &cls, NULL, &en, NULL, NULL, NULL, &ro, &cont,
                               &at));
        CHECK(en != MPI_T_ENUM_NULL && ro && cont, "mpi_state info");
        OK(MPI_T_enum_get_info(en, &items, NULL, NULL));
        CHECK(items == 3, "mpi_state has %d items", items);
        OK(MPI_T_enum_get_item(en, 2, &v, nm, &len));
        CHECK(v == 2 && !strcmp(nm, "finalized"), "item 2: %d %s", v, nm);
        EXPECT_RC(MPI_T_enum_get_item(en, 3, &v, nm, &len), MPI_T_ERR_INVALID_ITEM);
        EXPECT_RC(MPI_T_enum_get_item(en, -1, &v, nm, &len), MPI_T_ERR_INVALID_ITEM);
        EXPECT_RC(MPI_T_enum_get_info((MPI_T_enum)&n, &items, NULL, NULL),
                  MPI_T_ERR_INVALID_HANDLE);
    }

    /* indices and names */
    int ncv, npv, ncat;
    OK(MPI_T_cvar_get_num(&ncv));
    OK(MPI_T_pvar_get_num(&npv));
    OK(MPI_T_category_get_num(&ncat));
    char name[128];
    int len = sizeof name;
    EXPECT_RC(MPI_T_cvar_get_info(ncv, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
              MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_cvar_get_info(-1, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
              MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_pvar_get_info(npv, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                  NULL, NULL),
              MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_category_get_info(ncat, name, &len, NULL, NULL, NULL, NULL, NULL),
              MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_category_get_cvars(ncat, 0, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_cvar_get_index("WANMPI_NO_SUCH_THING", &i), MPI_T_ERR_INVALID_NAME);
    EXPECT_RC(MPI_T_pvar_get_index("shm_msgs_sent", MPI_T_PVAR_CLASS_LEVEL, &i),
              MPI_T_ERR_INVALID_NAME); /* right name, wrong class */
    EXPECT_RC(MPI_T_category_get_index("no such category", &i), MPI_T_ERR_INVALID_NAME);
    MPI_T_cvar_handle ch;
    int count;
    EXPECT_RC(MPI_T_cvar_handle_alloc(ncv, NULL, &ch, &count), MPI_T_ERR_INVALID_INDEX);

    /* a truncated name: *len - 1 characters and the terminator */
    len = 5;
    OK(MPI_T_cvar_get_info(cvar_index("WANMPI_P2P_EAGER_CREDIT"), name, &len, NULL, NULL, NULL,
                           NULL, NULL, NULL, NULL));
    CHECK(len == 5 && !strcmp(name, "WANM"), "truncated name '%s' len %d", name, len);

    /* cvar handles */
    OK(MPI_T_cvar_handle_alloc(cvar_index("WANMPI_P2P_EAGER_CREDIT"), NULL, &ch, &count));
    MPI_T_cvar_handle stale = ch;
    OK(MPI_T_cvar_handle_free(&ch));
    MPI_Count v;
    EXPECT_RC(MPI_T_cvar_read(stale, &v), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_cvar_write(stale, &v), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_cvar_handle_free(&ch), MPI_T_ERR_INVALID_HANDLE); /* now NULL */

    /* pvar sessions and handles */
    MPI_T_pvar_session s1, s2, dead;
    MPI_T_pvar_handle h1, hl, hh;
    OK(MPI_T_pvar_session_create(&s1));
    OK(MPI_T_pvar_session_create(&s2));
    OK(MPI_T_pvar_session_create(&dead));
    OK(MPI_T_pvar_session_free(&dead));
    CHECK(dead == MPI_T_PVAR_SESSION_NULL, "session not reset by free");
    int ci = pvar_index("shm_msgs_sent", MPI_T_PVAR_CLASS_COUNTER);
    int li = pvar_index("unexpected_recvq_length", MPI_T_PVAR_CLASS_LEVEL);
    int hi = pvar_index("unexpected_recvq_hwm", MPI_T_PVAR_CLASS_HIGHWATERMARK);
    EXPECT_RC(MPI_T_pvar_handle_alloc(s1, npv, NULL, &h1, &count), MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_pvar_handle_alloc(dead, ci, NULL, &h1, &count), MPI_T_ERR_INVALID_SESSION);
    OK(MPI_T_pvar_handle_alloc(s1, ci, NULL, &h1, &count));
    OK(MPI_T_pvar_handle_alloc(s1, li, NULL, &hl, &count));
    OK(MPI_T_pvar_handle_alloc(s1, hi, NULL, &hh, &count));
    unsigned long long x = 0;
    EXPECT_RC(MPI_T_pvar_read(s2, h1, &x), MPI_T_ERR_INVALID_HANDLE); /* other session's */
    EXPECT_RC(MPI_T_pvar_read(s1, MPI_T_PVAR_ALL_HANDLES, &x), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_pvar_start(s1, hl), MPI_T_ERR_PVAR_NO_STARTSTOP);
    EXPECT_RC(MPI_T_pvar_stop(s1, hl), MPI_T_ERR_PVAR_NO_STARTSTOP);
    EXPECT_RC(MPI_T_pvar_write(s1, hl, &x), MPI_T_ERR_PVAR_NO_WRITE);
    EXPECT_RC(MPI_T_pvar_reset(s1, hl), MPI_T_ERR_PVAR_NO_WRITE);
    EXPECT_RC(MPI_T_pvar_readreset(s1, hl, &x), MPI_T_ERR_PVAR_NO_WRITE);
    EXPECT_RC(MPI_T_pvar_read(dead, h1, &x), MPI_T_ERR_INVALID_SESSION);
    OK(MPI_T_pvar_read(s1, hl, &x)); /* continuous: readable at once */
    OK(MPI_T_pvar_read(s1, h1, &x)); /* not started: its starting value */
    CHECK(x == 0, "unstarted counter reads %llu", x);
    OK(MPI_T_pvar_start(s1, h1));
    OK(MPI_T_pvar_start(s1, h1)); /* already started: no effect */
    /* a message to oneself counts on the self route, not shm */
    int self_i = pvar_index("self_msgs_sent", MPI_T_PVAR_CLASS_COUNTER);
    MPI_T_pvar_handle hs;
    OK(MPI_T_pvar_handle_alloc(s1, self_i, NULL, &hs, &count));
    OK(MPI_T_pvar_start(s1, hs));
    int token = 7;
    MPI_Sendrecv_replace(&token, 1, MPI_INT, 0, 0, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    OK(MPI_T_pvar_read(s1, hs, &x));
    CHECK(x == 1, "self_msgs_sent %llu after one message to self", x);
    OK(MPI_T_pvar_read(s1, h1, &x));
    CHECK(x == 0, "shm_msgs_sent %llu after a message to self", x);
    OK(MPI_T_pvar_handle_free(s1, &h1));
    CHECK(h1 == MPI_T_PVAR_HANDLE_NULL, "pvar handle not reset by free");
    EXPECT_RC(MPI_T_pvar_handle_free(s1, &h1), MPI_T_ERR_INVALID_HANDLE);

    /* categories: every variable in exactly one; the root holds the others */
    int *cv_seen = calloc((size_t)ncv, sizeof(int)), *pv_seen = calloc((size_t)npv, sizeof(int));
    for (int c = 0; c < ncat; c++) {
        int nc, np, nsub, ne;
        char cname[128], cdesc[256];
        int cl = sizeof cname, dl = sizeof cdesc;
        OK(MPI_T_category_get_info(c, cname, &cl, cdesc, &dl, &nc, &np, &nsub));
        OK(MPI_T_category_get_num_events(c, &ne));
        CHECK(ne == 0, "%s: %d events", cname, ne);
        int j;
        OK(MPI_T_category_get_index(cname, &j));
        CHECK(j == c, "%s: index %d", cname, j);
        int *idx = malloc(sizeof(int) * (size_t)(nc + np + nsub + 1));
        OK(MPI_T_category_get_cvars(c, nc, idx));
        for (int k = 0; k < nc; k++) cv_seen[idx[k]]++;
        OK(MPI_T_category_get_pvars(c, np, idx));
        for (int k = 0; k < np; k++) pv_seen[idx[k]]++;
        OK(MPI_T_category_get_categories(c, nsub, idx));
        if (c == 0) CHECK(nsub == ncat - 1, "root has %d of %d categories", nsub, ncat - 1);
        free(idx);
    }
    for (int k = 0; k < ncv; k++) CHECK(cv_seen[k] == 1, "cvar %d in %d categories", k, cv_seen[k]);
    for (int k = 0; k < npv; k++) CHECK(pv_seen[k] == 1, "pvar %d in %d categories", k, pv_seen[k]);
    free(cv_seen);
    free(pv_seen);
    int upd = -1;
    OK(MPI_T_category_changed(&upd));

    /* no event sources and no event types */
    MPI_Count ts;
    OK(MPI_T_source_get_num(&n));
    CHECK(n == 0, "%d sources", n);
    EXPECT_RC(MPI_T_source_get_timestamp(0, &ts), MPI_T_ERR_INVALID_INDEX);
    OK(MPI_T_event_get_num(&n));
    CHECK(n == 0, "%d event types", n);
    EXPECT_RC(MPI_T_event_get_index("anything", &i), MPI_T_ERR_INVALID_NAME);
    MPI_T_event_registration reg;
    EXPECT_RC(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);

    /* the error classes have strings */
    char msg[MPI_MAX_ERROR_STRING];
    int ml;
    CHECK(MPI_Error_string(MPI_T_ERR_INVALID_HANDLE, msg, &ml) == MPI_SUCCESS && ml > 0,
          "no error string");

    OK(MPI_T_pvar_session_free(&s1));
    OK(MPI_T_pvar_session_free(&s2));
    MPI_Finalize();
    /* MPI_T outlives MPI */
    CHECK(mpi_state() == 2, "mpi_state after MPI_Finalize: %u", mpi_state());
    OK(MPI_T_cvar_get_num(&n));
    OK(MPI_T_finalize());
    not_initialized();
    return mpit_done(0);
}
