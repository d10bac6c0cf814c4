/* bench_common.h: helpers shared by the benchmarks (p2p, and the WAN programs wan_bench.c and
 * relay_kernels.c; standard MPI only, so each benchmark builds unchanged against wanmpi, MPICH
 * and Open MPI). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__)
#define BENCH_UNUSED __attribute__((unused))
#else
#define BENCH_UNUSED
#endif

static BENCH_UNUSED int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of n samples (sorts them in place). */
static BENCH_UNUSED double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static BENCH_UNUSED void *bench_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    memset(p, 1, n); /* touch every page before timing */
    return p;
}

/* Parses "-M 16777216"-style size options; accepts K/M/G suffixes. */
static BENCH_UNUSED long bench_parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'k' || *end == 'K')
        v <<= 10;
    else if (*end == 'm' || *end == 'M')
        v <<= 20;
    else if (*end == 'g' || *end == 'G')
        v <<= 30;
    return v;
}

/* Whether `name` is an item of the comma-separated `list` (NULL: every name is). */
static BENCH_UNUSED int bench_wanted(const char *list, const char *name)
{
    size_t n = strlen(name);
    if (!list)
        return 1;
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (!c)
            break;
        p = c + 1;
    }
    return 0;
}

/* Seconds on CLOCK_MONOTONIC. */
static BENCH_UNUSED double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits until bench_now_s() >= t: sleeps until 0.3 ms before, then spins, so that ranks started
 * at one instant are within microseconds of it (WAN benchmarks start every sender together). */
static BENCH_UNUSED void bench_wait_until(double t)
{
    if (t - bench_now_s() > 0.0005) {
        double s = t - 0.0003;
        struct timespec ts;
        ts.tv_sec = (time_t)s;
        ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
    }
    while (bench_now_s() < t) {
    }
}

#endif
