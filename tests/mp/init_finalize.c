/* init_finalize: MPI_Init/Finalize, Initialized/Finalized before and after, Get_version and
 * Get_library_version (also before Init and after Finalize, as MPI-3 allows), Comm_rank/size of
 * MPI_COMM_WORLD and MPI_COMM_SELF, Get_processor_name, Wtime/Wtick, Query_thread and
 * Is_thread_main after plain MPI_Init, and a message to self over MPI_COMM_SELF. */
#include "mptest.h"

static void check_version(const char *when)
{
    int v = -1, sv = -1, len = -1;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_version(&v, &sv);
    MT_CHECK(v == MPI_VERSION && sv == MPI_SUBVERSION, "%s: Get_version %d.%d, mpi.h says %d.%d",
             when, v, sv, MPI_VERSION, MPI_SUBVERSION);
    MT_CHECK(v >= 3, "%s: MPI version %d < 3", when, v);
    memset(lib, 0, sizeof lib);
    MPI_Get_library_version(lib, &len);
    MT_CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING, "%s: library version length %d",
             when, len);
    /* resultlen excludes the terminating NUL; Open MPI 4.1 counts it, so allow one more. */
    MT_CHECK(len >= 0 && len < MPI_MAX_LIBRARY_VERSION_STRING &&
                 ((int)strlen(lib) == len || (int)strlen(lib) + 1 == len),
             "%s: strlen %zu != len %d", when, strlen(lib), len);
}

int main(int argc, char **argv)
{
    int flag = -1, rank = -1, size = -1, len = -1, provided = -1, i;
    char name[MPI_MAX_PROCESSOR_NAME];
    double t0, t1, tick;

    MPI_Initialized(&flag);
    MT_CHECK(flag == 0, "Initialized before Init gave %d", flag);
    MPI_Finalized(&flag);
    MT_CHECK(flag == 0, "Finalized before Init gave %d", flag);
    check_version("before Init");

    mt_init(&argc, &argv);

    MPI_Initialized(&flag);
    MT_CHECK(flag == 1, "Initialized after Init gave %d", flag);
    MPI_Finalized(&flag);
    MT_CHECK(flag == 0, "Finalized after Init gave %d", flag);
    check_version("after Init");

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MT_CHECK(size >= 1 && rank >= 0 && rank < size, "world rank %d size %d", rank, size);
    MPI_Comm_rank(MPI_COMM_SELF, &rank);
    MPI_Comm_size(MPI_COMM_SELF, &size);
    MT_CHECK(rank == 0 && size == 1, "self rank %d size %d", rank, size);

    memset(name, 0x7f, sizeof name);
    MPI_Get_processor_name(name, &len);
    MT_CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "processor name length %d", len);
    if (len > 0 && len < MPI_MAX_PROCESSOR_NAME)
        MT_CHECK((int)strlen(name) == len, "processor name '%.*s' strlen != %d", len, name, len);

    /* Plain MPI_Init gives MPI_THREAD_SINGLE or more, the same on every query. */
    MPI_Query_thread(&provided);
    MT_CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE,
             "Query_thread gave %d", provided);
    flag = -1;
    MPI_Is_thread_main(&flag);
    MT_CHECK(flag == 1, "Is_thread_main in the main thread gave %d", flag);

    tick = MPI_Wtick();
    MT_CHECK(tick > 0.0 && tick <= 0.01, "Wtick %g", tick);
    t0 = MPI_Wtime();
    for (i = 0; i < 1000; i++) {
        t1 = MPI_Wtime();
        MT_CHECK(t1 >= t0, "Wtime went backwards: %.9f then %.9f", t0, t1);
        if (t1 < t0)
            break;
    }
    /* Busy-wait until the clock has advanced by a few ticks: it must move forward. */
    t0 = MPI_Wtime();
    for (i = 0; i < 100000000 && (t1 = MPI_Wtime()) < t0 + 5 * tick; i++)
        ;
    MT_CHECK(t1 >= t0 + 5 * tick, "Wtime did not advance by 5 ticks (%.9f -> %.9f)", t0, t1);

    /* COMM_SELF carries messages to oneself. */
    {
        int out = 42 + mt_rank, in = -1;
        MPI_Request rq;
        MPI_Status st;
        MPI_Irecv(&in, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &rq);
        MPI_Send(&out, 1, MPI_INT, 0, 7, MPI_COMM_SELF);
        MPI_Wait(&rq, &st);
        MT_CHECK(in == out && st.MPI_SOURCE == 0 && st.MPI_TAG == 7, "self message %d (%s)", in,
                 mt_status_str(&st, MPI_INT));
    }

    {
        int errs = mt_sum(mt_errs);
        if (mt_rank == 0 && errs == 0)
            printf(" No Errors\n");
        else if (mt_rank == 0)
            printf(" Found %d errors\n", errs);
        fflush(stdout);
        MPI_Finalize();
        MPI_Initialized(&flag);
        if (flag != 1) {
            printf("[rank %d] FAIL Initialized after Finalize gave %d\n", mt_rank, flag);
            errs++;
        }
        MPI_Finalized(&flag);
        if (flag != 1) {
            printf("[rank %d] FAIL Finalized after Finalize gave %d\n", mt_rank, flag);
            errs++;
        }
        check_version("after Finalize");
        errs += mt_errs;
        return errs ? 1 : 0;
    }
}
