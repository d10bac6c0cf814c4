/* bench_common.h: helpers shared by the p2p benchmarks (standard MPI only, so each benchmark
 * builds unchanged against wanmpi, MPICH and Open MPI). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif
