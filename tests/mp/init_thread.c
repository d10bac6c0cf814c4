/* init_thread LEVEL: MPI_Init_thread with LEVEL = single|funneled|serialized|multiple;
 * provided >= required (MULTIPLE must be granted: issue 2 requires it), Query_thread == provided,
 * Is_thread_main true in the main thread and, when MULTIPLE is provided, false in another thread
 * (which may call MPI then); a pairwise exchange works at that level. */
#include "mptest.h"

#include <pthread.h>

static void *other_thread(void *arg)
{
    int *flag = (int *)arg;
    MPI_Is_thread_main(flag);
    return NULL;
}

int main(int argc, char **argv)
{
    int required = MPI_THREAD_SINGLE, provided = -1, q = -1, flag = -1;
    const char *lvl = argc > 1 ? argv[1] : "single";

    if (!strcmp(lvl, "single"))
        required = MPI_THREAD_SINGLE;
    else if (!strcmp(lvl, "funneled"))
        required = MPI_THREAD_FUNNELED;
    else if (!strcmp(lvl, "serialized"))
        required = MPI_THREAD_SERIALIZED;
    else if (!strcmp(lvl, "multiple"))
        required = MPI_THREAD_MULTIPLE;
    else {
        fprintf(stderr, "usage: init_thread single|funneled|serialized|multiple\n");
        return 2;
    }
    /* The levels are ordered (MPI standard: SINGLE < FUNNELED < SERIALIZED < MULTIPLE). */
    if (!(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
          MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE)) {
        printf("FAIL: thread level constants are not ordered\n");
        return 1;
    }

    MPI_Init_thread(&argc, &argv, required, &provided);
    mt_setup();
    MT_CHECK(provided >= required && provided <= MPI_THREAD_MULTIPLE,
             "Init_thread(%s=%d) provided %d", lvl, required, provided);
    MPI_Query_thread(&q);
    MT_CHECK(q == provided, "Query_thread %d != provided %d", q, provided);
    MPI_Is_thread_main(&flag);
    MT_CHECK(flag == 1, "Is_thread_main in main thread gave %d", flag);

    if (provided == MPI_THREAD_MULTIPLE) {
        pthread_t t;
        int other = -1;
        pthread_create(&t, NULL, other_thread, &other);
        pthread_join(t, NULL);
        MT_CHECK(other == 0, "Is_thread_main in another thread gave %d", other);
    }

    {
        int peer = mt_partner(), out[4] = {mt_rank, required, provided, 77}, in[4] = {0};
        MPI_Status st;
        MPI_Sendrecv(out, 4, MPI_INT, peer, 3, in, 4, MPI_INT, peer, 3, MPI_COMM_WORLD, &st);
        MT_CHECK(in[0] == peer && in[1] == required && in[3] == 77, "exchange got %d %d %d %d",
                 in[0], in[1], in[2], in[3]);
    }
    return mt_finalize();
}
