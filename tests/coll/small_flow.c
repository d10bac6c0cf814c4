/* small_flow: small collectives where ranks describe the same data differently, and under
 * flow control.
 *
 * Standard MPI only. What it checks (each against values computed here):
 *  1. Mixed datatypes: with the same type signature, some ranks pass a contiguous type and others
 *     a strided vector type, for every root and sizes around the small-message limits (1 B to
 *     8 KiB). An MPI may take a different code path for contiguous buffers (wanmpi sends small
 *     blocking broadcasts without a schedule); the messages must still match.
 *  2. Flood: the root broadcasts thousands of small messages while the other ranks are asleep,
 *     so the sender runs out of buffering (eager credit) in the middle and must fall back to
 *     waiting; every message must arrive, in order.
 *  3. Interleaving: a nonblocking Ibcast is outstanding while blocking Bcasts run on the same
 *     communicator; collectives match in call order.
 *  4. Sub-communicators of every size (Comm_split), where the tree shapes differ.
 *  5. Alltoall the same ways: mixed types, a flood of blocking calls while one rank sleeps, and
 *     many nonblocking Ialltoalls outstanding at once (an MPI may move small messages without
 *     requests; each message must still land in its own call's buffer).
 * Usage: small_flow [-q]   (-q: fewer sizes)
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int errors = 0;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            if (errors++ < 10) {                                                              \
                fprintf(stderr, __VA_ARGS__);                                                 \
                fputc('\n', stderr);                                                          \
            }                                                                                 \
        }                                                                                     \
    } while (0)

static int value(int root, int i, int salt) { return (root * 7919 + i * 31 + salt) & 0x7fffffff; }

/* Broadcast `n` ints from `root`; ranks with odd (rank + salt) use a vector type with holes. */
static void mixed(MPI_Comm comm, int n, int root, int salt)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    int strided = (rank + salt) % 2;
    int *buf = malloc(sizeof(int) * (size_t)(2 * n + 2));
    for (int i = 0; i < 2 * n + 2; ++i) buf[i] = -1;
    if (strided) {
        MPI_Datatype v;
        MPI_Type_vector(n, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
        if (rank == root)
            for (int i = 0; i < n; ++i) buf[2 * i] = value(root, i, salt);
        MPI_Bcast(buf, 1, v, root, comm);
        MPI_Type_free(&v);
        for (int i = 0; i < n; ++i) {
            CHECK(buf[2 * i] == value(root, i, salt), "mixed n=%d root=%d: strided [%d] = %d",
                  n, root, i, buf[2 * i]);
            CHECK(buf[2 * i + 1] == -1, "mixed n=%d root=%d: hole %d overwritten", n, root, i);
        }
    } else {
        if (rank == root)
            for (int i = 0; i < n; ++i) buf[i] = value(root, i, salt);
        MPI_Bcast(buf, n, MPI_INT, root, comm);
        for (int i = 0; i < n; ++i)
            CHECK(buf[i] == value(root, i, salt), "mixed n=%d root=%d: [%d] = %d, want %d", n,
                  root, i, buf[i], value(root, i, salt));
        CHECK(buf[n] == -1, "mixed n=%d root=%d: wrote past the end", n, root);
    }
    free(buf);
}

static void flood(MPI_Comm comm, int count, int bytes)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int root = size - 1;
    unsigned char *buf = malloc((size_t)bytes);
    if (rank != root) {  /* let the root run far ahead */
        struct timespec ts = {0, 150 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int k = 0; k < count; ++k) {
        for (int i = 0; i < bytes; ++i) buf[i] = rank == root ? (unsigned char)(k + i) : 0;
        MPI_Bcast(buf, bytes, MPI_BYTE, root, comm);
        for (int i = 0; i < bytes; ++i)
            if (buf[i] != (unsigned char)(k + i)) {
                CHECK(0, "flood %d B: message %d byte %d = %d, want %d", bytes, k, i, buf[i],
                      (unsigned char)(k + i));
                break;
            }
    }
    free(buf);
}

static void interleaved(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int a[16], b[4], c[300];
    MPI_Request rq;
    for (int i = 0; i < 16; ++i) a[i] = rank == 0 ? 1000 + i : -1;
    MPI_Ibcast(a, 16, MPI_INT, 0, comm, &rq);
    for (int k = 0; k < 20; ++k) {
        int root = k % size;
        for (int i = 0; i < 4; ++i) b[i] = rank == root ? k * 10 + i : -1;
        MPI_Bcast(b, 4, MPI_INT, root, comm);
        for (int i = 0; i < 4; ++i) CHECK(b[i] == k * 10 + i, "interleaved bcast %d: [%d]", k, i);
    }
    for (int i = 0; i < 300; ++i) c[i] = rank == size / 2 ? 7 * i : -1;
    MPI_Bcast(c, 300, MPI_INT, size / 2, comm);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < 16; ++i) CHECK(a[i] == 1000 + i, "interleaved ibcast [%d] = %d", i, a[i]);
    for (int i = 0; i < 300; ++i) CHECK(c[i] == 7 * i, "interleaved bcast c[%d] = %d", i, c[i]);
}

/* Alltoall of `n` ints per block; ranks with odd (rank + salt) receive with a strided type. */
static void a2a_mixed(MPI_Comm comm, int n, int salt)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sb = malloc(sizeof(int) * (size_t)(n * size));
    int *rb = malloc(sizeof(int) * (size_t)(2 * n * size + 1));
    for (int p = 0; p < size; ++p)
        for (int i = 0; i < n; ++i) sb[p * n + i] = value(rank, p * n + i, salt);
    for (int i = 0; i < 2 * n * size + 1; ++i) rb[i] = -1;
    if ((rank + salt) % 2) {
        MPI_Datatype v, vr;
        MPI_Type_vector(n, 1, 2, MPI_INT, &v);
        MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * n * sizeof(int)), &vr);
        MPI_Type_commit(&vr);
        MPI_Alltoall(sb, n, MPI_INT, rb, 1, vr, comm);
        MPI_Type_free(&vr);
        MPI_Type_free(&v);
        for (int p = 0; p < size; ++p)
            for (int i = 0; i < n; ++i) {
                CHECK(rb[2 * (p * n + i)] == value(p, rank * n + i, salt),
                      "a2a mixed n=%d: strided block %d [%d] = %d", n, p, i, rb[2 * (p * n + i)]);
                CHECK(rb[2 * (p * n + i) + 1] == -1, "a2a mixed n=%d: hole overwritten", n);
            }
    } else {
        MPI_Alltoall(sb, n, MPI_INT, rb, n, MPI_INT, comm);
        for (int p = 0; p < size; ++p)
            for (int i = 0; i < n; ++i)
                CHECK(rb[p * n + i] == value(p, rank * n + i, salt),
                      "a2a mixed n=%d: block %d [%d] = %d, want %d", n, p, i, rb[p * n + i],
                      value(p, rank * n + i, salt));
        CHECK(rb[n * size] == -1, "a2a mixed n=%d: wrote past the end", n);
    }
    free(sb);
    free(rb);
}

/* Blocking alltoalls back to back while rank 0 sleeps first, then `nb` Ialltoalls at once. */
static void a2a_flood(MPI_Comm comm, int count, int nb)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sb = malloc(sizeof(int) * (size_t)size), *rb = malloc(sizeof(int) * (size_t)size);
    if (rank == 0) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int k = 0; k < count; ++k) {
        for (int p = 0; p < size; ++p) sb[p] = k * 1000 + rank * 10 + p;
        MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, comm);
        for (int p = 0; p < size; ++p)
            if (rb[p] != k * 1000 + p * 10 + rank) {
                CHECK(0, "a2a flood %d: from %d got %d", k, p, rb[p]);
                break;
            }
    }
    int *nsb = malloc(sizeof(int) * (size_t)(size * nb)), *nrb = malloc(sizeof(int) * (size_t)(size * nb));
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)nb);
    for (int k = 0; k < nb; ++k) {
        for (int p = 0; p < size; ++p) nsb[k * size + p] = k * 1000 + rank * 10 + p;
        MPI_Ialltoall(nsb + k * size, 1, MPI_INT, nrb + k * size, 1, MPI_INT, comm, &rq[k]);
    }
    MPI_Waitall(nb, rq, MPI_STATUSES_IGNORE);
    for (int k = 0; k < nb; ++k)
        for (int p = 0; p < size; ++p)
            CHECK(nrb[k * size + p] == k * 1000 + p * 10 + rank, "ialltoall %d: from %d got %d",
                  k, p, nrb[k * size + p]);
    free(sb);
    free(rb);
    free(nsb);
    free(nrb);
    free(rq);
}

int main(int argc, char **argv)
{
    int rank, size, quick = argc > 1 && !strcmp(argv[1], "-q");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    static const int ints[] = {1, 2, 16, 255, 256, 1023, 1024, 1025, 2048};
    int nints = quick ? 5 : (int)(sizeof ints / sizeof ints[0]);
    for (int salt = 0; salt < 2; ++salt)
        for (int k = 0; k < nints; ++k)
            for (int root = 0; root < size; ++root) mixed(MPI_COMM_WORLD, ints[k], root, salt);

    flood(MPI_COMM_WORLD, quick ? 3000 : 10000, 8);
    flood(MPI_COMM_WORLD, quick ? 300 : 1000, 3000);
    interleaved(MPI_COMM_WORLD);
    for (int salt = 0; salt < 2; ++salt)
        for (int k = 0; k < nints; ++k) a2a_mixed(MPI_COMM_WORLD, ints[k], salt);
    a2a_flood(MPI_COMM_WORLD, quick ? 2000 : 5000, 200);

    /* every sub-communicator size: ranks 0..s-1 in one, the rest in another */
    for (int s = 1; s < size; ++s) {
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, rank < s, size - rank, &sub);
        int ss;
        MPI_Comm_size(sub, &ss);
        for (int root = 0; root < ss; ++root) mixed(sub, 100, root, s);
        interleaved(sub);
        MPI_Comm_free(&sub);
    }

    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "small_flow: %d errors\n" : " No Errors\n", all);
    MPI_Finalize();
    return all != 0;
}
