/* thread_multiple: MPI_THREAD_MULTIPLE with two threads per rank that communicate at the same
 * time on distinct tags with the matching threads of the partner rank (thread 0 with blocking
 * Send/Recv, thread 1 with Isend/Irecv/Waitall; 8 B to 100 KiB, so eager and rendezvous).
 * Before that, thread 0 blocks in MPI_Recv for a message the partner sends only after its thread
 * 1 finished all exchanges, so a library that holds a global lock while blocked deadlocks here
 * (and is killed by the timeout). */
#include "mptest.h"

#include <pthread.h>

#define ITERS 200
#define MAXSZ (100 * 1024)

static int peer;
static int terrs[2];
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

#define TCHECK(t, cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            pthread_mutex_lock(&print_lock);                                                       \
            printf("[rank %d thread %d] FAIL %s:%d: %s: ", mt_rank, t, __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fflush(stdout);                                                                        \
            pthread_mutex_unlock(&print_lock);                                                     \
            terrs[t]++;                                                                            \
        }                                                                                          \
    } while (0)

static int size_of(int it) { return it % 3 == 0 ? 8 : it % 3 == 1 ? 1024 : MAXSZ; }

static void exchange(int t, int it, unsigned char *sb, unsigned char *rb)
{
    int n = size_of(it), tag = 100 + t, count = -1;
    MPI_Status st;
    long long bad;
    mt_fill(sb, (size_t)n, (uint64_t)(mt_rank * 1000000 + t * 10000 + it));
    if (t == 1 || peer == mt_rank) {
        MPI_Request r[2];
        MPI_Status sts[2];
        MPI_Irecv(rb, MAXSZ, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(sb, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, sts);
        st = sts[0];
        MPI_Get_count(&st, MPI_BYTE, &count);
    } else if (mt_rank < peer) {
        MPI_Send(sb, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        MPI_Recv(rb, MAXSZ, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
    } else {
        MPI_Recv(rb, MAXSZ, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
        MPI_Send(sb, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        MPI_Get_count(&st, MPI_BYTE, &count);
    }
    TCHECK(t, count == n && st.MPI_SOURCE == peer && st.MPI_TAG == tag,
           "iteration %d: %s, expected %d B", it, mt_status_str(&st, MPI_BYTE), n);
    bad = mt_verify(rb, (size_t)n, (uint64_t)(peer * 1000000 + t * 10000 + it));
    TCHECK(t, bad < 0, "iteration %d: %d B mismatch at %lld", it, n, bad);
}

static void *thread_main(void *arg)
{
    int t = *(int *)arg, it, flag = -1;
    unsigned char *sb = (unsigned char *)malloc(MAXSZ), *rb = (unsigned char *)malloc(MAXSZ);
    MPI_Is_thread_main(&flag);
    TCHECK(t, flag == 0, "Is_thread_main true in a spawned thread");
    if (t == 0) {
        /* Blocks until the partner's thread 1 is done with all its exchanges. */
        int v = -1;
        MPI_Request r = MPI_REQUEST_NULL;
        if (peer == mt_rank) { /* self: our own thread 1 sends it */
            MPI_Irecv(&v, 1, MPI_INT, peer, 300, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else
            MPI_Recv(&v, 1, MPI_INT, peer, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        TCHECK(t, v == ITERS, "gate message %d", v);
    }
    for (it = 0; it < ITERS; it++)
        exchange(t, it, sb, rb);
    if (t == 1) {
        int v = ITERS;
        MPI_Send(&v, 1, MPI_INT, peer, 300, MPI_COMM_WORLD);
    }
    free(sb);
    free(rb);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = -1, ids[2] = {0, 1}, t;
    pthread_t th[2];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    mt_setup();
    if (provided != MPI_THREAD_MULTIPLE) {
        MT_CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
        return mt_finalize();
    }
    peer = mt_partner();
    for (t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, thread_main, &ids[t]);
    for (t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    mt_errs += terrs[0] + terrs[1];
    return mt_finalize();
}
