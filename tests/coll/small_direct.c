/* small_direct: small Barrier, Allreduce, Allgather and Alltoall on small communicators, the
 * calls an MPI may run without its general machinery (wanmpi: one exchange without a schedule,
 * flat.cpp flat_direct_*), against the cases that machinery exists for.
 *
 * Standard MPI only. What it checks (each against values computed here):
 *  1. Mixed datatypes: with the same type signature, some ranks pass contiguous types and others
 *     strided vector types (Allgather, Alltoall), sizes 1 B to 8 KiB, in place and not.
 *  2. Allreduce with a non-commutative user op (2x2 matrix product mod 2^31-1): the result must
 *     be x0*x1*...*xn-1 in rank order on every rank, bitwise equal everywhere; with MPI_SUM on
 *     doubles every rank must get bitwise the same value; in place and not.
 *  3. Flood: one rank sleeps while the others run thousands of small Allreduces, Allgathers,
 *     Alltoalls and Barriers (buffering runs out in the middle; every result must be right).
 *  4. Interleaving: nonblocking Iallreduce / Iallgather / Ibarrier outstanding while blocking
 *     calls run on the same communicator; collectives match in call order.
 *  5. Sub-communicators of every size (Comm_split) and a duplicated communicator.
 *  6. The first calls of a fresh communicator (Comm_dup) right after ranks arrive at different
 *     times, one rank late by 20 ms: results right (no timing is judged here; bench/ does that).
 *  7. (Linux) CPU binding is all or nothing: after the calls above, either every rank of a host
 *     may run on as many CPUs as it could at start, or every rank is bound to CPUs no other rank
 *     of the host has. An MPI may bind ranks or not; a job where some ranks are bound and their
 *     peers are not lets the scheduler stack a pair on one core, where each wait spins while
 *     the rank it waits for cannot run (wanmpi bound a rank on its first sleep in a wait, which
 *     ranks whose collective waits never slept did not reach: 57 us per 8 B Allreduce instead
 *     of 0.5 in about one 2-rank run in three on a loaded host).
 * Usage: small_direct [-q]   (-q: fewer sizes and iterations)
 */
#define _GNU_SOURCE
#include <mpi.h>

#ifdef __linux__
#include <sched.h>
#endif
#include <stdint.h>
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

static void nap(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static int value(int rank, int i, int salt) { return (rank * 7919 + i * 31 + salt) & 0x7fffffff; }

/* A vector type of `n` ints with a hole after each: the same signature as n MPI_INTs. */
static MPI_Datatype strided(int n)
{
    MPI_Datatype t;
    MPI_Type_vector(n, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

/* ---- 1. Allgather and Alltoall with mixed datatypes ------------------------------------- */
static void allgather_mixed(MPI_Comm comm, int n, int salt, int in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int odd = (rank + salt) & 1; /* odd ranks send (or receive) strided */
    int *s = malloc(sizeof(int) * 2 * (size_t)n + 4);
    int *r = malloc(sizeof(int) * 2 * (size_t)n * (size_t)size + 4);
    for (int i = 0; i < 2 * n; ++i) s[i] = odd ? (i % 2 ? -7 : value(rank, i / 2, salt)) : -7;
    if (!odd)
        for (int i = 0; i < n; ++i) s[i] = value(rank, i, salt);
    for (int i = 0; i < 2 * n * size; ++i) r[i] = -1;
    if (in_place) { /* receive contiguous, my block already in place */
        for (int i = 0; i < n; ++i) r[rank * n + i] = value(rank, i, salt);
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INT, comm);
    } else if (odd) {
        MPI_Datatype v = strided(n);
        MPI_Allgather(s, 1, v, r, n, MPI_INT, comm);
        MPI_Type_free(&v);
    } else {
        MPI_Allgather(s, n, MPI_INT, r, n, MPI_INT, comm);
    }
    for (int p = 0; p < size; ++p)
        for (int i = 0; i < n; ++i)
            CHECK(r[p * n + i] == value(p, i, salt),
                  "allgather n=%d salt=%d in_place=%d rank %d: block %d[%d] = %d, expected %d", n,
                  salt, in_place, rank, p, i, r[p * n + i], value(p, i, salt));
    free(s);
    free(r);
}

static void alltoall_mixed(MPI_Comm comm, int n, int salt)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int odd = (rank + salt) & 1; /* odd ranks receive strided */
    int *s = malloc(sizeof(int) * (size_t)n * (size_t)size + 4);
    int *r = malloc(sizeof(int) * 2 * (size_t)n * (size_t)size + 4);
    for (int p = 0; p < size; ++p)
        for (int i = 0; i < n; ++i) s[p * n + i] = value(rank, p * n + i, salt);
    for (int i = 0; i < 2 * n * size; ++i) r[i] = -1;
    if (odd) {
        MPI_Datatype v, vr;
        MPI_Type_vector(n, 1, 2, MPI_INT, &v);
        MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * n * sizeof(int)), &vr);
        MPI_Type_commit(&vr);
        MPI_Alltoall(s, n, MPI_INT, r, 1, vr, comm);
        MPI_Type_free(&vr);
        MPI_Type_free(&v);
    } else {
        MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, comm);
    }
    for (int p = 0; p < size; ++p)
        for (int i = 0; i < n; ++i) {
            int got = odd ? r[p * 2 * n + 2 * i] : r[p * n + i];
            int want = value(p, rank * n + i, salt);
            CHECK(got == want, "alltoall n=%d salt=%d rank %d: from %d [%d] = %d, expected %d", n,
                  salt, rank, p, i, got, want);
        }
    free(s);
    free(r);
}

/* ---- 2. Allreduce: rank order and bitwise agreement --------------------------------------- */
#define MOD 2147483647LL
typedef struct {
    int64_t a, b, c, d;
} mat; /* 2x2 matrix mod MOD */
static mat mul(mat x, mat y)
{
    mat z = {(x.a * y.a + x.b * y.c) % MOD, (x.a * y.b + x.b * y.d) % MOD,
             (x.c * y.a + x.d * y.c) % MOD, (x.c * y.b + x.d * y.d) % MOD};
    return z;
}
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; ++i) y[i] = mul(x[i], y[i]); /* inout = in * inout */
}
static mat mat_of(int rank, int i, int salt)
{
    mat m = {value(rank, i, salt) % 1000 + 1, rank + 2, i + salt + 1, value(rank, i, salt + 1) % 97};
    return m;
}

static void allreduce_ordered(MPI_Comm comm, MPI_Datatype mt, MPI_Op op, int n, int salt,
                              int in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    mat *x = malloc(sizeof(mat) * (size_t)n), *y = malloc(sizeof(mat) * (size_t)n);
    for (int i = 0; i < n; ++i) x[i] = mat_of(rank, i, salt);
    if (in_place) {
        memcpy(y, x, sizeof(mat) * (size_t)n);
        MPI_Allreduce(MPI_IN_PLACE, y, n, mt, op, comm);
    } else {
        MPI_Allreduce(x, y, n, mt, op, comm);
    }
    for (int i = 0; i < n; ++i) {
        mat want = mat_of(0, i, salt);
        for (int p = 1; p < size; ++p) want = mul(want, mat_of(p, i, salt));
        CHECK(memcmp(&want, &y[i], sizeof(mat)) == 0,
              "allreduce (non-commutative) n=%d salt=%d in_place=%d rank %d: element %d wrong", n,
              salt, in_place, rank, i);
    }
    free(x);
    free(y);
}

static void allreduce_bitwise(MPI_Comm comm, int n, int salt, int in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    double *all = malloc(sizeof(double) * (size_t)n * (size_t)size);
    for (int i = 0; i < n; ++i) x[i] = 1.0 / (value(rank, i, salt) % 1013 + 3) * (rank % 2 ? 1e8 : 1e-8);
    if (in_place) {
        memcpy(y, x, sizeof(double) * (size_t)n);
        MPI_Allreduce(MPI_IN_PLACE, y, n, MPI_DOUBLE, MPI_SUM, comm);
    } else {
        MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, comm);
    }
    MPI_Allgather(y, n, MPI_DOUBLE, all, n, MPI_DOUBLE, comm);
    for (int p = 0; p < size; ++p)
        CHECK(memcmp(all + (size_t)p * (size_t)n, y, sizeof(double) * (size_t)n) == 0,
              "allreduce double sum n=%d rank %d: result differs from rank %d's", n, rank, p);
    for (int i = 0; i < n; ++i) {
        double lo = 0;
        for (int p = 0; p < size; ++p)
            lo += 1.0 / (value(p, i, salt) % 1013 + 3) * (p % 2 ? 1e8 : 1e-8);
        CHECK(y[i] > lo * (1 - 1e-12) && y[i] < lo * (1 + 1e-12),
              "allreduce double sum n=%d rank %d: [%d] = %g, expected %g", n, rank, i, y[i], lo);
    }
    free(x);
    free(y);
    free(all);
}

/* ---- 3. Flood while one rank sleeps --------------------------------------------------------- */
static void flood(MPI_Comm comm, int iters)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *ag = malloc(sizeof(int) * (size_t)size), *a2s = malloc(sizeof(int) * (size_t)size),
        *a2r = malloc(sizeof(int) * (size_t)size);
    for (int k = 0; k < iters; ++k) {
        if (rank == size - 1 && k % 500 == 0) nap(3000);
        long v = rank + k, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
        long want = (long)size * k + (long)size * (size - 1) / 2;
        CHECK(sum == want, "flood %d rank %d: allreduce %ld, expected %ld", k, rank, sum, want);
        int me = rank * 100000 + k;
        MPI_Allgather(&me, 1, MPI_INT, ag, 1, MPI_INT, comm);
        for (int p = 0; p < size; ++p)
            CHECK(ag[p] == p * 100000 + k, "flood %d rank %d: allgather [%d] = %d", k, rank, p,
                  ag[p]);
        for (int p = 0; p < size; ++p) a2s[p] = rank * 1000 + p + k * 7;
        MPI_Alltoall(a2s, 1, MPI_INT, a2r, 1, MPI_INT, comm);
        for (int p = 0; p < size; ++p)
            CHECK(a2r[p] == p * 1000 + rank + k * 7, "flood %d rank %d: alltoall [%d] = %d", k,
                  rank, p, a2r[p]);
        if (k % 3 == 0) MPI_Barrier(comm);
    }
    free(ag);
    free(a2s);
    free(a2r);
}

/* ---- 4. Nonblocking outstanding while blocking calls run ------------------------------------ */
static void interleave(MPI_Comm comm, int salt)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request q[3];
    int nb_in = rank + salt, nb_out = -1, b_in = 2 * rank + salt, b_out = -1;
    int *nb_ag = malloc(sizeof(int) * (size_t)size), *b_ag = malloc(sizeof(int) * (size_t)size);
    int nb_me = rank * 3 + salt, b_me = rank * 5 + salt;
    MPI_Iallreduce(&nb_in, &nb_out, 1, MPI_INT, MPI_SUM, comm, &q[0]);
    MPI_Iallgather(&nb_me, 1, MPI_INT, nb_ag, 1, MPI_INT, comm, &q[1]);
    MPI_Ibarrier(comm, &q[2]);
    if (rank == 0) nap(2000);
    MPI_Allreduce(&b_in, &b_out, 1, MPI_INT, MPI_SUM, comm);
    MPI_Barrier(comm);
    MPI_Allgather(&b_me, 1, MPI_INT, b_ag, 1, MPI_INT, comm);
    for (int i = 0; i < 3; ++i) MPI_Wait(&q[i], MPI_STATUS_IGNORE);
    CHECK(nb_out == size * (size - 1) / 2 + size * salt, "interleave rank %d: iallreduce %d", rank,
          nb_out);
    CHECK(b_out == size * (size - 1) + size * salt, "interleave rank %d: allreduce %d", rank, b_out);
    for (int p = 0; p < size; ++p) {
        CHECK(nb_ag[p] == p * 3 + salt, "interleave rank %d: iallgather [%d] = %d", rank, p,
              nb_ag[p]);
        CHECK(b_ag[p] == p * 5 + salt, "interleave rank %d: allgather [%d] = %d", rank, p, b_ag[p]);
    }
    free(nb_ag);
    free(b_ag);
}

/* ---- 7. binding: all ranks of a host or none ------------------------------------------------ */
static void binding(int start_cpus)
{
#ifdef __linux__
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    int hr, hn;
    MPI_Comm_rank(host, &hr);
    MPI_Comm_size(host, &hn);
    cpu_set_t now;
    CPU_ZERO(&now);
    sched_getaffinity(0, sizeof now, &now);
    int bound = CPU_COUNT(&now) < start_cpus, nbound = 0;
    MPI_Allreduce(&bound, &nbound, 1, MPI_INT, MPI_SUM, host);
    CHECK(nbound == 0 || nbound == hn,
          "binding: %d of the %d ranks on this host are bound (rank %d: %d of %d CPUs)", nbound,
          hn, rank, CPU_COUNT(&now), start_cpus);
    if (nbound == hn) { /* no CPU shared by two bound ranks */
        unsigned char mine[128] = {0}, all[128] = {0};
        for (int c = 0; c < 1024 && c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &now)) mine[c / 8] |= (unsigned char)(1u << (c % 8));
        int overlap = 0;
        unsigned char *every = malloc(128 * (size_t)hn);
        MPI_Allgather(mine, 128, MPI_UNSIGNED_CHAR, every, 128, MPI_UNSIGNED_CHAR, host);
        for (int p = 0; p < hn; ++p)
            for (int i = 0; i < 128 && p != hr; ++i) overlap |= every[p * 128 + i] & mine[i];
        (void)all;
        CHECK(!overlap || hn > start_cpus, "binding: rank %d shares a CPU with another bound rank",
              rank);
        free(every);
    }
    MPI_Comm_free(&host);
#else
    (void)start_cpus;
#endif
}

static void suite(MPI_Comm comm, MPI_Datatype mt, MPI_Op op, int quick)
{
    static const int sizes[] = {1, 2, 3, 8, 16, 64, 255, 256, 1024, 2048};
    const int ns = quick ? 6 : (int)(sizeof sizes / sizeof sizes[0]);
    for (int k = 0; k < ns; ++k) {
        int n = sizes[k];
        for (int salt = 0; salt < 2; ++salt) {
            allgather_mixed(comm, n, salt, 0);
            allgather_mixed(comm, n, salt, 1);
            alltoall_mixed(comm, n, salt);
            allreduce_bitwise(comm, n, salt, salt);
            if (n <= 128) {
                allreduce_ordered(comm, mt, op, n, salt, 0);
                allreduce_ordered(comm, mt, op, n, salt, 1);
            }
            MPI_Barrier(comm);
        }
    }
    interleave(comm, 1);
}

int main(int argc, char **argv)
{
#ifdef __linux__
    cpu_set_t before; /* (an MPI may bind during MPI_Init: only "fewer than now" counts later) */
    CPU_ZERO(&before);
    sched_getaffinity(0, sizeof before, &before);
#endif
    MPI_Init(&argc, &argv);
    int quick = argc > 1 && strcmp(argv[1], "-q") == 0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype mt;
    MPI_Type_contiguous(4, MPI_INT64_T, &mt);
    MPI_Type_commit(&mt);
    MPI_Op op;
    MPI_Op_create(matmul_op, 0, &op);

    /* 6. first calls of a fresh communicator, ranks arriving apart */
    MPI_Comm fresh;
    MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
    if (rank == size - 1) nap(20000);
    for (int k = 0; k < 50; ++k) {
        long v = k + rank, s = -1;
        MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, fresh);
        CHECK(s == (long)size * k + (long)size * (size - 1) / 2, "first calls %d rank %d: %ld", k,
              rank, s);
        MPI_Barrier(fresh);
    }
    MPI_Comm_free(&fresh);
#ifdef __linux__
    binding(CPU_COUNT(&before));
#endif

    suite(MPI_COMM_WORLD, mt, op, quick);
    flood(MPI_COMM_WORLD, quick ? 1000 : 3000);
    for (int sub = 1; sub < size; ++sub) { /* 5. sub-communicators of size sub and size-sub */
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, rank < sub, size - rank, &c);
        suite(c, mt, op, 1);
        MPI_Comm_free(&c);
    }
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    flood(dup, 300);
    MPI_Comm_free(&dup);

    MPI_Op_free(&op);
    MPI_Type_free(&mt);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0) printf(" No Errors\n");
        else printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return all != 0;
}
