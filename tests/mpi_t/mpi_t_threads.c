/* MPI_T from several threads at once (it must be thread safe whatever MPI_Init_thread gave):
 * with MPI_THREAD_MULTIPLE, two tool threads read every performance variable, read every
 * control variable and start, stop and reset handles of their own sessions while the main
 * thread sends N_MSGS messages to itself; a handle the main thread started before must count
 * exactly N_MSGS on the self route, and every call must succeed. One rank. */
#include <pthread.h>
#include <stdlib.h>

#include "mpit_util.h"

#define N_MSGS 2000

static volatile int stop_tools = 0;
static int tool_errs[2];

static void *tool(void *arg)
{
    int id = *(int *)arg, n = 0, ncv = 0, c;
    MPI_T_pvar_session s;
    if (MPI_T_pvar_session_create(&s) != MPI_SUCCESS) tool_errs[id]++;
    MPI_T_pvar_get_num(&n);
    MPI_T_cvar_get_num(&ncv);
    MPI_T_pvar_handle *h = calloc((size_t)n, sizeof *h);
    for (int i = 0; i < n; i++)
        if (MPI_T_pvar_handle_alloc(s, i, NULL, &h[i], &c) != MPI_SUCCESS) tool_errs[id]++;
    while (!stop_tools) {
        MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES);
        for (int i = 0; i < n; i++) {
            unsigned long long v[2];
            if (MPI_T_pvar_read(s, h[i], v) != MPI_SUCCESS) tool_errs[id]++;
        }
        for (int i = 0; i < ncv; i++) {
            MPI_T_cvar_handle ch;
            MPI_Datatype dt;
            char buf[8192];
            MPI_T_cvar_get_info(i, NULL, NULL, NULL, &dt, NULL, NULL, NULL, NULL, NULL);
            if (MPI_T_cvar_handle_alloc(i, NULL, &ch, &c) != MPI_SUCCESS) tool_errs[id]++;
            if (c <= (int)sizeof buf && MPI_T_cvar_read(ch, buf) != MPI_SUCCESS) tool_errs[id]++;
            MPI_T_cvar_handle_free(&ch);
        }
        MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES);
        MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES);
    }
    MPI_T_pvar_session_free(&s);
    free(h);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int c;
    OK(MPI_T_pvar_session_create(&s));
    OK(MPI_T_pvar_handle_alloc(s, pvar_index("self_msgs_sent", MPI_T_PVAR_CLASS_COUNTER), NULL, &h,
                               &c));
    OK(MPI_T_pvar_start(s, h));
    pthread_t t[2];
    int ids[2] = {0, 1};
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, tool, &ids[i]);
    for (int i = 0; i < N_MSGS; i++) {
        int x = i;
        MPI_Sendrecv_replace(&x, 1, MPI_INT, 0, 1, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
        CHECK(x == i, "message %d came back as %d", i, x);
    }
    stop_tools = 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    unsigned long long v = 0;
    OK(MPI_T_pvar_read(s, h, &v));
    CHECK(v == N_MSGS, "self_msgs_sent %llu, expected %d", v, N_MSGS);
    CHECK(tool_errs[0] == 0 && tool_errs[1] == 0, "tool threads: %d and %d failed calls",
          tool_errs[0], tool_errs[1]);
    OK(MPI_T_pvar_session_free(&s));
    OK(MPI_T_finalize());
    MPI_Finalize();
    return mpit_done(0);
}
