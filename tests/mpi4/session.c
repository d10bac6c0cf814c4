/* session: MPI 4.0 Sessions without MPI_Init. Two sessions at once; their process sets
 * (mpi://WORLD and mpi://SELF, names and info); a group from each; a communicator from the
 * WORLD group with MPI_Comm_create_from_group and real communication on it (ring exchange,
 * Allreduce); the world model stays uninitialized (MPI_Initialized false) throughout; session
 * error handlers (a user handler sees the session and the code of a bad pset name, which is
 * MPI_ERR_ARG; MPI_Session_call_errhandler; get/set); bad handles; finalize both. */
#include "mpi4test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int handler_calls, handler_code;
static MPI_Session handler_session;


static void on_error(MPI_Session* s, int* code, ...) {
    handler_calls++;
    handler_code = *code;
    handler_session = *s;
}


int main(void) {
    MPI_Session s1, s2;
    MPI_Info info;
    MPI_Group world, self;
    MPI_Comm comm;
    MPI_Errhandler eh, got;
    int n, i, len, flag, size, gsize, rc, total, right, left, token;
    char name[MPI_MAX_PSET_NAME_LEN], value[64];

    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_SINGLE");
    rc = MPI_Session_init(info, MPI_ERRORS_RETURN, &s1);
    CHECK(rc == MPI_SUCCESS, "Session_init %d", rc);
    MPI_Info_free(&info);
    rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2);
    CHECK(rc == MPI_SUCCESS && s2 != s1, "second Session_init %d", rc);
    MPI_Initialized(&flag);
    CHECK(!flag, "sessions do not initialize the world model");

    /* process sets */
    MPI_Session_get_num_psets(s1, MPI_INFO_NULL, &n);
    CHECK(n >= 2, "num psets %d", n);
    {
        int have_world = 0, have_self = 0;
        for (i = 0; i < n; i++) {
            len = 0;
            MPI_Session_get_nth_pset(s1, MPI_INFO_NULL, i, &len, NULL);
            CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN, "pset %d length %d", i, len);
            MPI_Session_get_nth_pset(s1, MPI_INFO_NULL, i, &len, name);
            CHECK((int)strlen(name) == len - 1, "pset %d name '%s' length %d", i, name, len);
            have_world |= strcmp(name, "mpi://WORLD") == 0;
            have_self |= strcmp(name, "mpi://SELF") == 0;
        }
        CHECK(have_world && have_self, "mpi://WORLD and mpi://SELF are listed");
    }
    MPI_Session_get_pset_info(s1, "mpi://WORLD", &info);
    MPI_Info_get(info, "mpi_size", sizeof value - 1, value, &flag);
    CHECK(flag, "mpi_size of mpi://WORLD");
    MPI_Info_free(&info);

    MPI_Group_from_session_pset(s1, "mpi://WORLD", &world);
    MPI_Group_from_session_pset(s2, "mpi://SELF", &self);
    MPI_Group_size(world, &gsize);
    MPI_Group_rank(world, &rank);
    CHECK(atoi(value) == gsize, "mpi_size %s vs group size %d", value, gsize);
    MPI_Group_size(self, &n);
    CHECK(n == 1, "mpi://SELF has %d processes", n);

    /* a communicator from the WORLD set, and traffic on it */
    rc = MPI_Comm_create_from_group(world, "org.wanmpi.test.session", MPI_INFO_NULL,
                                    MPI_ERRORS_RETURN, &comm);
    CHECK(rc == MPI_SUCCESS, "Comm_create_from_group %d", rc);
    MPI_Comm_size(comm, &size);
    CHECK(size == gsize, "communicator size %d", size);
    right = (rank + 1) % size, left = (rank - 1 + size) % size;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 0, &token, 1, MPI_INT, left, 0, comm, MPI_STATUS_IGNORE);
    CHECK(token == left, "ring token %d from %d", token, left);
    MPI_Allreduce(&rank, &total, 1, MPI_INT, MPI_SUM, comm);
    CHECK(total == size * (size - 1) / 2, "allreduce %d", total);
    MPI_Comm_free(&comm);

    /* error handlers */
    MPI_Session_create_errhandler(on_error, &eh);
    MPI_Session_set_errhandler(s1, eh);
    rc = MPI_Group_from_session_pset(s1, "mpi://NO_SUCH_SET", &self);
    CHECK(cls(rc) == MPI_ERR_ARG, "bad pset name: class %d", cls(rc));
    CHECK(handler_calls == 1 && handler_session == s1 && cls(handler_code) == MPI_ERR_ARG,
          "the session handler ran: %d calls, class %d", handler_calls, cls(handler_code));
    MPI_Session_call_errhandler(s1, MPI_ERR_OTHER);
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER, "call_errhandler: %d",
          handler_calls);
    MPI_Session_get_errhandler(s1, &got);
    CHECK(got == eh, "get_errhandler");
    MPI_Errhandler_free(&got);
    MPI_Errhandler_free(&eh);
    rc = MPI_Session_get_pset_info(s2, "mpi://nowhere", &info);
    CHECK(cls(rc) == MPI_ERR_ARG, "bad pset name on s2 (MPI_ERRORS_RETURN): class %d", cls(rc));
    rc = MPI_Session_get_nth_pset(s2, MPI_INFO_NULL, 99, &len, name);
    CHECK(cls(rc) == MPI_ERR_ARG, "pset index out of range: class %d", cls(rc));

    MPI_Group_free(&world);
    MPI_Group_free(&self);
    MPI_Session_finalize(&s2);
    CHECK(s2 == MPI_SESSION_NULL, "finalize sets MPI_SESSION_NULL");
    rc = MPI_Session_get_num_psets(s2, MPI_INFO_NULL, &n);
    CHECK(cls(rc) == MPI_ERR_SESSION, "a finalized session: class %d", cls(rc));
    MPI_Session_finalize(&s1);
    if (rank == 0) {
        /* counted on every rank through the exit code; rank 0 prints the verdict of its own
         * checks and the launcher fails the test if any rank exits non-zero */
        if (errs == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", errs);
    }
    return errs != 0;
}
