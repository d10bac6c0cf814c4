/* mptest.h: the small harness shared by the tests/mp programs.
 *
 * Standard MPI point-to-point only (no collectives, no communicator constructors: the library under
 * test may not have them yet), so every program also runs unchanged under MPICH and Open MPI.
 * Results are gathered to rank 0 with MPI_Send on a reserved tag; rank 0 prints " No Errors" (the
 * MPICH test-suite convention the ctest helper looks for) or the number of failures, and every rank
 * exits non-zero if any check failed. Reserved tags are above MT_TAG_MAX_USER, so test traffic and
 * harness traffic never match each other. Single-threaded use only (the thread test counts its
 * threads' errors itself).
 *
 * Harness traffic and wildcards: ranks > 0 send to rank 0 (tags MT_TAG_*) when they enter
 * mt_barrier/mt_sum/mt_finalize; rank 0 sends to rank r only after r has sent. So the only receive
 * that can match harness traffic by mistake is an MPI_ANY_TAG receive/probe on rank 0 from a
 * source that may already have finished its part of the test; avoid exactly that. MPI_ANY_SOURCE
 * with a test tag is always safe, and so is MPI_ANY_TAG on ranks > 0.
 *
 * Failures print "[rank R] FAIL file:line: ..." at once, unbuffered, so a
 * later hang still leaves the cause in the log.
 */
#ifndef MPTEST_H
#define MPTEST_H

#include <mpi.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MT_TAG_MAX_USER 32000 /* tests use tags 0..MT_TAG_MAX_USER */
#define MT_TAG_RESULT 32701
#define MT_TAG_BARRIER 32702
#define MT_TAG_RELEASE 32703

static int mt_rank = -1, mt_size = 0, mt_errs = 0;

#if defined(__GNUC__)
#define MT_UNUSED __attribute__((unused))
#define MT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MT_UNUSED
#define MT_PRINTF(a, b)
#endif

static MT_UNUSED MT_PRINTF(4, 5) void mt_fail(const char *file, int line, const char *expr,
                                              const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stdout, "[rank %d] FAIL %s:%d: %s%s%s\n", mt_rank, file, line, expr, msg[0] ? ": " : "",
            msg);
    fflush(stdout);
    if (++mt_errs >= 100) {
        fprintf(stdout, "[rank %d] too many failures, aborting\n", mt_rank);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* MT_CHECK(cond, "fmt", ...) records a failure with a message; the format is required. */
#define MT_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            mt_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                       \
    } while (0)

/* MT_MPI(call): the call must return MPI_SUCCESS (only meaningful under MPI_ERRORS_RETURN; under
 * the default handler a failing call never returns). */
#define MT_MPI(call)                                                                               \
    do {                                                                                           \
        int mt_rc_ = (call);                                                                       \
        if (mt_rc_ != MPI_SUCCESS) {                                                               \
            char mt_s_[MPI_MAX_ERROR_STRING];                                                      \
            int mt_l_ = 0;                                                                         \
            mt_s_[0] = 0;                                                                          \
            MPI_Error_string(mt_rc_, mt_s_, &mt_l_);                                               \
            mt_fail(__FILE__, __LINE__, #call, "returned %d (%s)", mt_rc_, mt_s_);                 \
        }                                                                                          \
    } while (0)

static MT_UNUSED void mt_setup(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
}

static MT_UNUSED void mt_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    mt_setup();
}

/* Barrier made of point-to-point messages: everyone reports to 0, 0 releases everyone. */
static MT_UNUSED void mt_barrier(void)
{
    int i;
    if (mt_rank == 0) {
        for (i = 1; i < mt_size; i++)
            MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, MT_TAG_BARRIER, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        for (i = 1; i < mt_size; i++)
            MPI_Send(NULL, 0, MPI_BYTE, i, MT_TAG_RELEASE, MPI_COMM_WORLD);
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, 0, MT_TAG_BARRIER, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, MT_TAG_RELEASE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* Sum of an int over all ranks, result on every rank (point-to-point only). */
static MT_UNUSED int mt_sum(int v)
{
    int i, x, total = v;
    if (mt_rank == 0) {
        for (i = 1; i < mt_size; i++) {
            MPI_Recv(&x, 1, MPI_INT, i, MT_TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += x;
        }
        for (i = 1; i < mt_size; i++)
            MPI_Send(&total, 1, MPI_INT, i, MT_TAG_RELEASE, MPI_COMM_WORLD);
    } else {
        MPI_Send(&v, 1, MPI_INT, 0, MT_TAG_RESULT, MPI_COMM_WORLD);
        MPI_Recv(&total, 1, MPI_INT, 0, MT_TAG_RELEASE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return total;
}

/* Gathers the failure count, prints the verdict on rank 0, finalizes. Use as the return value of
 * main: 0 only if no rank failed. */
static MT_UNUSED int mt_finalize(void)
{
    int total = mt_sum(mt_errs);
    if (mt_rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
        fflush(stdout);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}

/* Partner for pairwise tests: 0<->1, 2<->3, ...; the last rank of an odd size pairs with itself,
 * so the self route is exercised too. */
static MT_UNUSED int mt_partner(void)
{
    int p = mt_rank ^ 1;
    return p < mt_size ? p : mt_rank;
}

/* Deterministic pattern, different per (seed, offset), generated 8 bytes at a time so that
 * filling and checking 64 MiB costs milliseconds, not the test's time budget. */
static MT_UNUSED uint64_t mt_word(uint64_t seed, size_t j)
{
    uint64_t x = ((uint64_t)j + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return x;
}

static MT_UNUSED unsigned char mt_byte(uint64_t seed, size_t i)
{
    uint64_t w = mt_word(seed, i / 8);
    return (unsigned char)(w >> (8 * (i % 8)));
}

static MT_UNUSED void mt_fill(void *buf, size_t n, uint64_t seed)
{
    unsigned char *b = (unsigned char *)buf;
    size_t j, i;
    for (j = 0; j < n / 8; j++) {
        uint64_t w = mt_word(seed, j);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(b + 8 * j, &w, 8);
#else
        for (i = 0; i < 8; i++) /* byte order fixed, independent of the host's endianness */
            b[8 * j + i] = (unsigned char)(w >> (8 * i));
#endif
    }
    for (i = 8 * (n / 8); i < n; i++)
        b[i] = mt_byte(seed, i);
}

/* Returns the first mismatching offset, or -1 if buf holds the pattern. */
static MT_UNUSED long long mt_verify(const void *buf, size_t n, uint64_t seed)
{
    const unsigned char *b = (const unsigned char *)buf;
    size_t j, i;
    for (j = 0; j < n / 8; j++) {
        uint64_t w = mt_word(seed, j);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        uint64_t v;
        memcpy(&v, b + 8 * j, 8);
        if (v == w)
            continue;
#endif
        for (i = 0; i < 8; i++)
            if (b[8 * j + i] != (unsigned char)(w >> (8 * i)))
                return (long long)(8 * j + i);
    }
    for (i = 8 * (n / 8); i < n; i++)
        if (b[i] != mt_byte(seed, i))
            return (long long)i;
    return -1;
}

static MT_UNUSED void *mt_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stdout, "[rank %d] FAIL: out of memory allocating %zu bytes\n", mt_rank, n);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Status fields as a string, for failure messages. */
static MT_UNUSED const char *mt_status_str(const MPI_Status *st, MPI_Datatype dt)
{
    static char s[128];
    int count = -2;
    MPI_Get_count(st, dt, &count);
    snprintf(s, sizeof s, "source=%d tag=%d count=%d", st->MPI_SOURCE, st->MPI_TAG, count);
    return s;
}

#endif /* MPTEST_H */
