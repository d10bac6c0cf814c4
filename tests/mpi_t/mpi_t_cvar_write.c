/* Writing a control variable changes what the library does: with the pipeline broadcast
 * (WANMPI_COLL_BCAST=pipeline in the test's environment), WANMPI_COLL_BCAST_SEGMENT sets the
 * segment size, so a broadcast of BYTES bytes from rank 0 reaches rank 1 as BYTES / segment
 * messages. Rank 1 counts them with the msgs_recv performance variables of every route, once
 * with the segment written to 1024 and once with 16384, on every rank alike (the variable's
 * scope is MPI_T_SCOPE_ALL_EQ). Also: the value reads back, and a tunable that is read only at
 * start refuses writes (MPI_T_ERR_CVAR_SET_NEVER) and keeps its value. */
#include <stdlib.h>

#include "mpit_util.h"

#define BYTES 65536

static const char *routes[] = {"self", "shm", "tcp", "wan"};

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);

    int ci = cvar_index("WANMPI_COLL_BCAST_SEGMENT");
    int scope = -1, count = 0;
    MPI_Datatype dt;
    OK(MPI_T_cvar_get_info(ci, NULL, NULL, NULL, &dt, NULL, NULL, NULL, NULL, &scope));
    CHECK(scope == MPI_T_SCOPE_ALL_EQ && dt == MPI_COUNT, "scope %d", scope);
    MPI_T_cvar_handle h;
    OK(MPI_T_cvar_handle_alloc(ci, NULL, &h, &count));
    MPI_Count seg = 0;
    OK(MPI_T_cvar_read(h, &seg));
    CHECK(seg == 65536, "default segment %lld", (long long)seg);

    MPI_T_pvar_session ses;
    OK(MPI_T_pvar_session_create(&ses));
    MPI_T_pvar_handle ph[4];
    for (int k = 0; k < 4; k++) {
        char n[64];
        int c;
        snprintf(n, sizeof n, "%s_msgs_recv", routes[k]);
        OK(MPI_T_pvar_handle_alloc(ses, pvar_index(n, MPI_T_PVAR_CLASS_COUNTER), NULL, &ph[k], &c));
    }
    char *buf = malloc(BYTES);
    const MPI_Count segs[] = {1024, 16384};
    for (int s = 0; s < 2; s++) {
        OK(MPI_T_cvar_write(h, &segs[s]));
        OK(MPI_T_cvar_read(h, &seg));
        CHECK(seg == segs[s], "read back %lld after writing %lld", (long long)seg,
              (long long)segs[s]);
        /* Rank 1 starts counting, then lets rank 0 go: nothing reaches rank 1 after that but
         * the broadcast's own messages. (Not a barrier: its last message to rank 1 may still
         * be on its way when rank 1 leaves it.) */
        int token = 0;
        if (me == 1) {
            OK(MPI_T_pvar_reset(ses, MPI_T_PVAR_ALL_HANDLES));
            OK(MPI_T_pvar_start(ses, MPI_T_PVAR_ALL_HANDLES));
            MPI_Send(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        } else if (me == 0) {
            MPI_Recv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        for (int i = 0; i < BYTES; i++) buf[i] = me == 0 ? (char)(i * 7 + s) : 0;
        MPI_Bcast(buf, BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
        /* ... and rank 0 waits until rank 1 stopped counting: otherwise its next call
         * (the next round's, or the final MPI_Allreduce's messages) could arrive in time to be
         * counted while rank 1 is still in the broadcast. */
        if (me == 1) {
            OK(MPI_T_pvar_stop(ses, MPI_T_PVAR_ALL_HANDLES));
            MPI_Send(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        } else if (me == 0) {
            MPI_Recv(&token, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        for (int i = 0; i < BYTES; i++)
            if (buf[i] != (char)(i * 7 + s)) {
                CHECK(0, "broadcast data wrong at %d", i);
                break;
            }
        unsigned long long got = 0;
        for (int k = 0; k < 4; k++) {
            unsigned long long v = 0;
            OK(MPI_T_pvar_read(ses, ph[k], &v));
            got += v;
        }
        if (me == 1)
            CHECK(got == (unsigned long long)(BYTES / segs[s]),
                  "segment %lld: rank 1 received %llu messages, expected %lld", (long long)segs[s],
                  got, (long long)(BYTES / segs[s]));
    }
    /* Not writable at runtime: the eager credit is read once, at MPI_Init. */
    int ri = cvar_index("WANMPI_P2P_EAGER_CREDIT");
    MPI_T_cvar_handle rh;
    OK(MPI_T_cvar_get_info(ri, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &scope));
    CHECK(scope == MPI_T_SCOPE_READONLY, "eager credit scope %d", scope);
    OK(MPI_T_cvar_handle_alloc(ri, NULL, &rh, &count));
    MPI_Count before = 0, after = 0, x = 12345;
    OK(MPI_T_cvar_read(rh, &before));
    EXPECT_RC(MPI_T_cvar_write(rh, &x), MPI_T_ERR_CVAR_SET_NEVER);
    OK(MPI_T_cvar_read(rh, &after));
    CHECK(before == after, "value changed by a refused write");
    OK(MPI_T_cvar_handle_free(&rh));
    OK(MPI_T_cvar_handle_free(&h));
    OK(MPI_T_pvar_session_free(&ses));
    OK(MPI_T_finalize());
    free(buf);
    int rc = mpit_done(1);
    MPI_Finalize();
    return rc;
}
