/* pacing_bench: collectives and streams over a bottleneck between clusters, for WAN pacing and
 * TCP adaptation (issue 12; bench/compare-pacing.sh runs it).
 *
 * Standard MPI only: the same source is built with wanmpi's mpicc and with Open MPI's
 * (mpicc.openmpi) and run over the same emulated link.
 *
 *   pacing_bench [-t SPEC[,SPEC...]] [-S DIR] [-g GAP_MS] [-m MSG] [-w WINDOW] [-b BIN_MS]
 *                [-a RANK] [-p PEER] [-s SEED]
 *     SPEC is KIND[:SIZE[:N]] (SIZE with K/M/G suffixes); the tests run in the order given:
 *       a2a:B:R      R x MPI_Alltoall, B bytes per pair
 *       a2av:B:R     R x MPI_Alltoallv, uneven: rank s sends rank d w(s,d) x B bytes, w in
 *                    [0.25, 1.75) drawn from SEED and the pair (the same in every run and MPI)
 *       ft:B:R       FT-like: R x { "compute" (sleep GAP_MS: the network idles, the 2 cores are
 *                    not taken); MPI_Alltoall(B per pair) } (NAS FT's transpose)
 *       is:B:R       IS-like: R x { count keys per bucket; MPI_Allreduce(counts);
 *                    MPI_Alltoall(send counts); MPI_Alltoallv(keys) }, B = mean key bytes per
 *                    pair, uneven as a2av (NAS IS's rank step; as bench/relay_kernels.c)
 *       bw:B:R       R x one MPI_Send of B bytes from RANK to PEER (median, and the first)
 *       stream:MSG:SECS  RANK streams MSG-byte messages to PEER for SECS seconds (WINDOW
 *                    MPI_Isend in flight, WINDOW receives posted); PEER timestamps every receipt
 *                    (CLOCK_MONOTONIC: all ranks of a wanemu job share the machine's clock) and
 *                    reports the largest gap between consecutive receipts
 *       phase:B:TOTAL  one unmeasured MPI_Alltoall(B), then from a common start 2 x
 *                    MPI_Alltoall(B per pair) and, the moment RANK's Alltoall returns, RANK
 *                    sends TOTAL bytes to PEER as MSG-byte messages (-m, WINDOW in flight);
 *                    PEER reports the bytes received per BIN_MS bin from that moment
 *     -S DIR     synchronise with a driving script around each measurement: world rank 0
 *                creates DIR/<n>.mark (n = 1, 2, ...; its content "<test> begin|end") and
 *                waits (at most 60 s) for DIR/<n>.go, with every other rank held in a barrier
 *                or the start broadcast, so that the script can read counters (the link's
 *                drops, the hosts' TCP retransmissions) while the network is quiet
 *     -g GAP_MS  ft's compute gap (default 50)
 *     -m MSG     message size of phase (default 8K; stream's is its SIZE)
 *     -w WINDOW  messages in flight in stream and phase (default 16 and 64)
 *     -b BIN_MS  phase's bin (default 10)
 *     -a RANK    sender of bw, stream, phase (default 0)
 *     -p PEER    receiver (default: the first rank of the last cluster; clusters are told apart
 *                by processor names "c<I>h<J>" as wanemu gives them, else size/2)
 *     -s SEED    a2av and is: seed of the uneven sizes (default 1)
 *
 * Every collective test first runs one unmeasured call (connections, buffers), then every rank
 * starts the measured loop at one instant of CLOCK_MONOTONIC (rank 0 broadcasts it 0.1 s ahead)
 * and the time is that to the LAST rank's return.
 *
 * Output (rank 0, or the receiver for stream and phase), one line per test:
 *   pacing_bench: KIND ranks=N bytes=B reps=R calls=C gap_s=G wan_dir_bytes=D wan_bytes=W
 *                 time_s=T
 *     calls: collective calls per run that must cross the WAN (each costs at least one one-way
 *     delay); gap_s: total compute gap; wan_dir_bytes: the most bytes any one direction between
 *     two clusters carries (the bottleneck's share); wan_bytes: all bytes between clusters
 *   pacing_bench: bw bytes=B reps=R time_s=MEDIAN first_s=FIRST a=A peer=P
 *   pacing_bench: stream msg=M secs=S msgs=N bytes=B max_gap_s=G gap_from=T0 gap_to=T1
 *                 first=T2 last=T3 mbit=AVG a=A peer=P   (T*: CLOCK_MONOTONIC seconds)
 *     and, the moment it ends, every gap of more than 0.5 s between receipts:
 *   pacing_bench: stream_gap from=T0 to=T1 s=G
 *   pacing_bench: phase bytes_per_pair=B a2a_s=T total=BYTES msg=M time_s=T2 start=T0
 *                 bin_ms=10 bins=b0,b1,...   (bytes received in each bin after start)
 * B, D, W in bytes; MB nowhere (the script converts).
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_wan.h"

static int rank, size;
static int *cluster_of; /* per world rank, -1 if unknown */
static const char *sync_dir;
static int sync_n;

/* ---- helpers ---------------------------------------------------------------------------- */

static double common_start(void)
{
    double t = bench_now_s() + 0.1;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    bench_wait_until(t);
    return t;
}

static void sleep_s(double s)
{
    struct timespec ts;
    if (s <= 0) return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Rank 0 tells the script "<what>" and waits for its go; the others wait in a barrier. */
static void sync_point(const char *what)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (!sync_dir) return;
    ++sync_n;
    if (rank == 0) {
        char mark[4096], tmp[4096], go[4096];
        snprintf(mark, sizeof mark, "%s/%d.mark", sync_dir, sync_n);
        snprintf(tmp, sizeof tmp, "%s/%d.mark.tmp", sync_dir, sync_n);
        snprintf(go, sizeof go, "%s/%d.go", sync_dir, sync_n);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%s\n", what);
            fclose(f);
            rename(tmp, mark);
        }
        double end = bench_now_s() + 60;
        while (access(go, F_OK) != 0 && bench_now_s() < end) sleep_s(0.002);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}


static int nclusters(void)
{
    int n = 0;
    for (int r = 0; r < size; ++r)
        if (cluster_of[r] + 1 > n) n = cluster_of[r] + 1;
    return n;
}

/* Deterministic weight in [0.25, 1.75) for the pair (from, to). */
static double pair_weight(unsigned seed, int from, int to)
{
    uint64_t x = (uint64_t)seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)from << 32 | (unsigned)to);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return 0.25 + 1.5 * (double)(x >> 11) / (double)(1ull << 53);
}

/* bytes(s, d) for every pair: the WAN total and the busiest cluster-to-cluster direction. */
static void wan_volume(double (*bytes)(int, int, void *), void *arg, double *wan, double *dirmax)
{
    int nc = nclusters();
    double *dir = calloc((size_t)(nc * nc + 1), sizeof(double));
    *wan = 0;
    *dirmax = 0;
    for (int s = 0; s < size; ++s)
        for (int d = 0; d < size; ++d) {
            int cs = cluster_of[s], cd = cluster_of[d];
            if (s == d || cs < 0 || cd < 0 || cs == cd) continue;
            double b = bytes(s, d, arg);
            *wan += b;
            dir[cs * nc + cd] += b;
            if (dir[cs * nc + cd] > *dirmax) *dirmax = dir[cs * nc + cd];
        }
    free(dir);
}

static double even_bytes(int s, int d, void *arg)
{
    (void)s;
    (void)d;
    return (double)*(long *)arg;
}

struct uneven {
    unsigned seed;
    long mean; /* elements */
    int elem;  /* bytes per element */
};
static long uneven_count(const struct uneven *u, int s, int d)
{
    return (long)((double)u->mean * pair_weight(u->seed, s, d));
}
static double uneven_bytes(int s, int d, void *arg)
{
    const struct uneven *u = arg;
    return (double)uneven_count(u, s, d) * u->elem;
}

/* Time from a common start to the last rank's return (valid on rank 0). */
static double finish(double t0)
{
    double end = bench_now_s(), maxend = 0;
    MPI_Reduce(&end, &maxend, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return maxend - t0;
}

static void report_coll(const char *kind, long bytes, int reps, int calls_per_rep, double gap_s,
                        double wan, double dirmax, double dt)
{
    if (rank != 0) return;
    printf("pacing_bench: %s ranks=%d bytes=%ld reps=%d calls=%d gap_s=%.4f wan_dir_bytes=%.0f "
           "wan_bytes=%.0f time_s=%.4f\n", kind, size, bytes, reps, calls_per_rep * reps,
           gap_s * reps, dirmax * reps, wan * reps, dt);
    fflush(stdout);
}

/* The script's marks around a measurement: "<kind>:<size> begin" / "... end" (sync_point). */
static void mark(const char *kind, long sz, const char *edge)
{
    char label[64];
    snprintf(label, sizeof label, "%s:%ld %s", kind, sz, edge);
    sync_point(label);
}

/* A timed collective measurement: the begin mark, then a common start (returned). */
static double coll_begin(const char *kind, long per)
{
    mark(kind, per, "begin");
    return common_start();
}

/* ... and its end: the last rank's return, the end mark, rank 0's report line. */
static void coll_end(const char *kind, long per, int reps, int calls_per_rep, double gap_s,
                     double wan, double dirmax, double t0)
{
    double dt = finish(t0);
    mark(kind, per, "end");
    report_coll(kind, per, reps, calls_per_rep, gap_s, wan, dirmax, dt);
}

/* ---- collective tests -------------------------------------------------------------------- */

static void test_a2a(const char *kind, long per, int reps, double gap)
{
    size_t n = (size_t)per * (size_t)size;
    char *sb = bench_alloc(n), *rb = bench_alloc(n);
    double wan, dirmax;
    wan_volume(even_bytes, &per, &wan, &dirmax);
    MPI_Alltoall(sb, (int)per, MPI_CHAR, rb, (int)per, MPI_CHAR, MPI_COMM_WORLD);
    double t0 = coll_begin(kind, per);
    for (int i = 0; i < reps; ++i) {
        if (gap > 0) sleep_s(gap);
        MPI_Alltoall(sb, (int)per, MPI_CHAR, rb, (int)per, MPI_CHAR, MPI_COMM_WORLD);
    }
    coll_end(kind, per, reps, 1, gap, wan, dirmax, t0);
    free(sb);
    free(rb);
}

static void test_a2av(long per, int reps, unsigned seed)
{
    struct uneven u = {seed, per, 1};
    int *sc = malloc(sizeof(int) * (size_t)size), *rc = malloc(sizeof(int) * (size_t)size);
    int *sd = malloc(sizeof(int) * (size_t)size), *rd = malloc(sizeof(int) * (size_t)size);
    long ns = 0, nr = 0;
    double wan, dirmax;
    for (int d = 0; d < size; ++d) {
        sc[d] = (int)uneven_count(&u, rank, d);
        sd[d] = (int)ns;
        ns += sc[d];
        rc[d] = (int)uneven_count(&u, d, rank);
        rd[d] = (int)nr;
        nr += rc[d];
    }
    char *sb = bench_alloc((size_t)ns), *rb = bench_alloc((size_t)nr);
    wan_volume(uneven_bytes, &u, &wan, &dirmax);
    MPI_Alltoallv(sb, sc, sd, MPI_CHAR, rb, rc, rd, MPI_CHAR, MPI_COMM_WORLD);
    double t0 = coll_begin("a2av", per);
    for (int i = 0; i < reps; ++i)
        MPI_Alltoallv(sb, sc, sd, MPI_CHAR, rb, rc, rd, MPI_CHAR, MPI_COMM_WORLD);
    coll_end("a2av", per, reps, 1, 0, wan, dirmax, t0);
    free(sb);
    free(rb);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
}

static void test_is(long per, int reps, unsigned seed)
{
    struct uneven u = {seed, per / 4, 4};
    int *scount = malloc(sizeof(int) * (size_t)size), *rcount = malloc(sizeof(int) * (size_t)size);
    int *sdisp = malloc(sizeof(int) * (size_t)size), *rdisp = malloc(sizeof(int) * (size_t)size);
    int *bucket = malloc(sizeof(int) * (size_t)size), *btotal = malloc(sizeof(int) * (size_t)size);
    long nkeys = 0;
    double wan, dirmax, t0 = 0;
    for (int d = 0; d < size; ++d) {
        scount[d] = (int)uneven_count(&u, rank, d);
        sdisp[d] = (int)nkeys;
        nkeys += scount[d];
    }
    wan_volume(uneven_bytes, &u, &wan, &dirmax);
    int *keys = malloc(sizeof(int) * (size_t)(nkeys + 1));
    srand(seed * 7919u + (unsigned)rank);
    for (int d = 0; d < size; ++d)
        for (int k = 0; k < scount[d]; ++k) keys[sdisp[d] + k] = (d << 20) | (rand() & 0xfffff);
    int *rkeys = NULL;
    for (int it = -1; it < reps; ++it) {
        if (it == 0) t0 = coll_begin("is", per);
        memset(bucket, 0, sizeof(int) * (size_t)size);
        for (long k = 0; k < nkeys; ++k) bucket[keys[k] >> 20]++;
        MPI_Allreduce(bucket, btotal, size, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoall(bucket, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
        long rn = 0;
        for (int s = 0; s < size; ++s) {
            rdisp[s] = (int)rn;
            rn += rcount[s];
        }
        if (!rkeys) rkeys = malloc(sizeof(int) * (size_t)(rn + 1));
        MPI_Alltoallv(keys, bucket, sdisp, MPI_INT, rkeys, rcount, rdisp, MPI_INT, MPI_COMM_WORLD);
    }
    coll_end("is", per, reps, 3, 0, wan, dirmax, t0);
    free(keys);
    free(rkeys);
    free(scount);
    free(rcount);
    free(sdisp);
    free(rdisp);
    free(bucket);
    free(btotal);
}

/* ---- point to point ---------------------------------------------------------------------- */

static void test_bw(long bytes, int reps, int me, int peer)
{
    char *buf = (rank == me || rank == peer) ? bench_alloc((size_t)bytes) : NULL;
    double *v = malloc(sizeof(double) * (size_t)(reps + 1));
    mark("bw", bytes, "begin");
    for (int i = 0; i < reps; ++i) {
        double t = common_start(), end = 0;
        if (rank == me) {
            MPI_Send(buf, (int)bytes, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
            MPI_Recv(&end, 1, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            v[i] = end - t;
        } else if (rank == peer) {
            MPI_Recv(buf, (int)bytes, MPI_CHAR, me, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            end = bench_now_s();
            MPI_Send(&end, 1, MPI_DOUBLE, me, 3, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    mark("bw", bytes, "end");
    if (rank == me) {
        double first = v[0], m = bench_median(v, reps);
        printf("pacing_bench: bw bytes=%ld reps=%d time_s=%.4f first_s=%.4f a=%d peer=%d\n", bytes,
               reps, m, first, me, peer);
        fflush(stdout);
    }
    free(v);
    free(buf);
}

/* A stream message starts with this header (the rest is payload). */
struct hdr {
    double start; /* the sender's start instant */
    int32_t seq;
    int32_t last; /* 1: the last data message */
};

/* RANK streams MSG-byte messages to PEER for SECS seconds, WINDOW in flight; then WINDOW empty
 * "pad" messages, which match whatever receives PEER still has posted (same tag, so in order). */
static void test_stream(long msg, double secs, int window, int me, int peer)
{
    if (msg < (long)sizeof(struct hdr)) msg = sizeof(struct hdr);
    mark("stream", msg, "begin");
    double t0 = common_start();
    if (rank == me) {
        char *buf = bench_alloc((size_t)msg * (size_t)window);
        MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)window);
        int seq = 0, done = 0;
        for (int k = 0; k < window; ++k) rq[k] = MPI_REQUEST_NULL;
        while (!done) {
            int k = seq;  /* the window fills first, then a slot is reused as it frees */
            if (seq >= window) MPI_Waitany(window, rq, &k, MPI_STATUS_IGNORE);
            struct hdr h = {t0, seq, bench_now_s() >= t0 + secs};
            memcpy(buf + (size_t)k * (size_t)msg, &h, sizeof h);
            MPI_Isend(buf + (size_t)k * (size_t)msg, (int)msg, MPI_CHAR, peer, 5, MPI_COMM_WORLD,
                      &rq[k]);
            ++seq;
            done = h.last;
        }
        MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
        for (int k = 0; k < window; ++k)
            MPI_Isend(buf, 0, MPI_CHAR, peer, 5, MPI_COMM_WORLD, &rq[k]);
        MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
        free(rq);
        free(buf);
    } else if (rank == peer) {
        char *buf = bench_alloc((size_t)msg * (size_t)window);
        MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)window);
        int *idx = malloc(sizeof(int) * (size_t)window);
        MPI_Status *st = malloc(sizeof(MPI_Status) * (size_t)window);
        int cap = 4096, n = 0, stop = 0, pads = 0, pending = window;
        double *ts = malloc(sizeof(double) * (size_t)cap);
        for (int k = 0; k < window; ++k)
            MPI_Irecv(buf + (size_t)k * (size_t)msg, (int)msg, MPI_CHAR, me, 5, MPI_COMM_WORLD,
                      &rq[k]);
        while (pending > 0) {
            int out = 0;
            MPI_Waitsome(window, rq, &out, idx, st);
            double now = bench_now_s();
            for (int j = 0; j < out; ++j) {
                int k = idx[j], cnt = 0;
                MPI_Get_count(&st[j], MPI_CHAR, &cnt);
                --pending;
                if (cnt == 0) {
                    ++pads;
                } else {
                    struct hdr h;
                    memcpy(&h, buf + (size_t)k * (size_t)msg, sizeof h);
                    if (n == cap) {
                        cap *= 2;
                        ts = realloc(ts, sizeof(double) * (size_t)cap);
                    }
                    if (n > 0 && now - ts[n - 1] > 0.5) {
                        /* said at once: if the job must be killed later, the gap is known */
                        printf("pacing_bench: stream_gap from=%.6f to=%.6f s=%.4f\n", ts[n - 1], now,
                               now - ts[n - 1]);
                        fflush(stdout);
                    }
                    ts[n++] = now;
                    if (h.last) stop = 1;
                    /* A new receive only for a data message before the last: then at most
                     * (data messages - 1) + WINDOW receives are ever posted, fewer than the
                     * messages sent, whatever order Waitsome reports completions in (a pad's
                     * can come before the last's, e.g. when large messages go by rendezvous). */
                    if (!stop) {
                        MPI_Irecv(buf + (size_t)k * (size_t)msg, (int)msg, MPI_CHAR, me, 5,
                                  MPI_COMM_WORLD, &rq[k]);
                        ++pending;
                    }
                }
            }
        }
        for (; pads < window; ++pads)
            MPI_Recv(buf, (int)msg, MPI_CHAR, me, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double gap = n > 0 ? ts[0] - t0 : 0, from = t0, to = n > 0 ? ts[0] : t0;
        for (int i = 1; i < n; ++i)
            if (ts[i] - ts[i - 1] > gap) {
                gap = ts[i] - ts[i - 1];
                from = ts[i - 1];
                to = ts[i];
            }
        double span = n > 1 ? ts[n - 1] - ts[0] : 0;
        printf("pacing_bench: stream msg=%ld secs=%.1f msgs=%d bytes=%.0f max_gap_s=%.4f "
               "gap_from=%.6f gap_to=%.6f first=%.6f last=%.6f mbit=%.1f a=%d peer=%d\n", msg,
               secs, n, (double)n * (double)msg, gap, from, to, n ? ts[0] : 0,
               n ? ts[n - 1] : 0, span > 0 ? (double)(n - 1) * (double)msg * 8 / span / 1e6 : 0,
               me, peer);
        fflush(stdout);
        free(ts);
        free(st);
        free(idx);
        free(rq);
        free(buf);
    }
    mark("stream", msg, "end");
}

/* Alltoall, then at once one-to-one: RANK -> PEER, TOTAL bytes in MSG-byte messages. */
static void test_phase(long per, long total, long msg, int window, double bin_s, int me,
                       int peer)
{
    size_t n = (size_t)per * (size_t)size;
    char *sb = bench_alloc(n), *rb = bench_alloc(n);
    if (msg < (long)sizeof(struct hdr)) msg = sizeof(struct hdr);
    int nmsg = (int)((total + msg - 1) / msg);
    char *buf = (rank == me || rank == peer) ? bench_alloc((size_t)msg * (size_t)window) : NULL;
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)window);
    MPI_Alltoall(sb, (int)per, MPI_CHAR, rb, (int)per, MPI_CHAR, MPI_COMM_WORLD);
    mark("phase", per, "begin");
    double t0 = common_start();
    for (int i = 0; i < 2; ++i)
        MPI_Alltoall(sb, (int)per, MPI_CHAR, rb, (int)per, MPI_CHAR, MPI_COMM_WORLD);
    double ta = bench_now_s();
    if (rank == me) {
        int next = 0;
        for (int k = 0; k < window; ++k) rq[k] = MPI_REQUEST_NULL;
        while (next < nmsg) {
            int k = next;
            if (next >= window) MPI_Waitany(window, rq, &k, MPI_STATUS_IGNORE);
            struct hdr h = {ta, next, next == nmsg - 1};
            memcpy(buf + (size_t)k * (size_t)msg, &h, sizeof h);
            MPI_Isend(buf + (size_t)k * (size_t)msg, (int)msg, MPI_CHAR, peer, 6, MPI_COMM_WORLD,
                      &rq[k]);
            ++next;
        }
        MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
    } else if (rank == peer) {
        int *idx = malloc(sizeof(int) * (size_t)window), posted = 0, got = 0, nb = 1024;
        double start = 0, tend = 0, *bins = calloc((size_t)nb, sizeof(double));
        for (int k = 0; k < window && posted < nmsg; ++k, ++posted)
            MPI_Irecv(buf + (size_t)k * (size_t)msg, (int)msg, MPI_CHAR, me, 6, MPI_COMM_WORLD,
                      &rq[k]);
        for (int k = posted; k < window; ++k) rq[k] = MPI_REQUEST_NULL;
        double *tss = malloc(sizeof(double) * (size_t)nmsg);
        while (got < nmsg) {
            int out = 0;
            MPI_Waitsome(window, rq, &out, idx, MPI_STATUSES_IGNORE);
            double now = bench_now_s();
            for (int j = 0; j < out; ++j) {
                int k = idx[j];
                if (got == 0) {
                    struct hdr h;
                    memcpy(&h, buf + (size_t)k * (size_t)msg, sizeof h);
                    start = h.start;
                }
                tss[got++] = now;
                if (posted < nmsg) {
                    MPI_Irecv(buf + (size_t)k * (size_t)msg, (int)msg, MPI_CHAR, me, 6,
                              MPI_COMM_WORLD, &rq[k]);
                    ++posted;
                }
            }
        }
        tend = bench_now_s();
        int used = 0;
        for (int i = 0; i < nmsg; ++i) {
            int b = tss[i] > start ? (int)((tss[i] - start) / bin_s) : 0;
            if (b >= nb) {
                int nnb = nb;
                while (b >= nnb) nnb *= 2;
                bins = realloc(bins, sizeof(double) * (size_t)nnb);
                memset(bins + nb, 0, sizeof(double) * (size_t)(nnb - nb));
                nb = nnb;
            }
            bins[b] += (double)msg;
            if (b + 1 > used) used = b + 1;
        }
        printf("pacing_bench: phase bytes_per_pair=%ld a2a_s=%.4f total=%.0f msg=%ld "
               "time_s=%.4f start=%.6f bin_ms=%.0f bins=", per, start - t0,
               (double)nmsg * (double)msg, msg, tend - start, start, bin_s * 1e3);
        for (int b = 0; b < used; ++b) printf("%s%.0f", b ? "," : "", bins[b]);
        printf(" a=%d peer=%d\n", me, peer);
        fflush(stdout);
        free(tss);
        free(bins);
        free(idx);
    }
    mark("phase", per, "end");
    free(rq);
    free(buf);
    free(sb);
    free(rb);
}

/* ---- main -------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *specs = "a2a:256K:4,a2av:256K:4,ft:256K:4,is:256K:4";
    int me = 0, peer = -1, swin = 16, pwin = 64;
    long pmsg = 8192;
    double gap_ms = 50, bin_ms = 10;
    unsigned seed = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; ++i) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-t")) specs = v;
        else if (!strcmp(a, "-S")) sync_dir = v;
        else if (!strcmp(a, "-g")) gap_ms = atof(v);
        else if (!strcmp(a, "-m")) pmsg = bench_parse_size(v);
        else if (!strcmp(a, "-w")) swin = pwin = atoi(v);
        else if (!strcmp(a, "-b")) bin_ms = atof(v);
        else if (!strcmp(a, "-a")) me = atoi(v);
        else if (!strcmp(a, "-p")) peer = atoi(v);
        else if (!strcmp(a, "-s")) seed = (unsigned)atoi(v);
        else continue;
        ++i;
    }
    cluster_of = bench_wan_setup("pacing_bench", rank, size, &me, &peer);
    if (swin < 1) swin = pwin = 1;

    char *list = strdup(specs);
    for (char *save = NULL, *spec = strtok_r(list, ",", &save); spec;
         spec = strtok_r(NULL, ",", &save)) {
        char kind[32] = {0};
        const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        size_t kl = c1 ? (size_t)(c1 - spec) : strlen(spec);
        if (kl >= sizeof kind) kl = sizeof kind - 1;
        memcpy(kind, spec, kl);
        long b = c1 ? bench_parse_size(c1 + 1) : 262144;
        const char *nv = c2 ? c2 + 1 : NULL;
        if (!strcmp(kind, "a2a")) test_a2a("a2a", b, nv ? atoi(nv) : 4, 0);
        else if (!strcmp(kind, "ft")) test_a2a("ft", b, nv ? atoi(nv) : 4, gap_ms / 1e3);
        else if (!strcmp(kind, "a2av")) test_a2av(b, nv ? atoi(nv) : 4, seed);
        else if (!strcmp(kind, "is")) test_is(b, nv ? atoi(nv) : 4, seed);
        else if (!strcmp(kind, "bw")) test_bw(b, nv ? atoi(nv) : 3, me, peer);
        else if (!strcmp(kind, "stream")) test_stream(c1 ? b : 262144, nv ? atof(nv) : 15, swin,
                                                      me, peer);
        else if (!strcmp(kind, "phase")) test_phase(b, nv ? bench_parse_size(nv) : 32L << 20,
                                                    pmsg, pwin, bin_ms / 1e3, me, peer);
        else if (rank == 0) fprintf(stderr, "pacing_bench: unknown test %s\n", kind);
    }
    free(list);
    free(cluster_of);
    MPI_Finalize();
    return 0;
}
