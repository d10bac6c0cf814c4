/* pacing_share: work-conserving shares of the link in a rate-managed MPI_Alltoallv (issue 12).
 *
 *   pacing_share RATE NP0 NP1
 *
 * RATE: WANMPI_WAN_RATE in bytes/s; NP0, NP1: ranks of the two clusters (MPI_COMM_WORLD holds
 * cluster 0's ranks first). Every rank runs one rank per host.
 *
 * The rank with index i in its cluster sends (1 + 3i) x (1 + j) units to the rank with index j
 * of the other cluster, so the ranks of a cluster send very different volumes across the WAN,
 * and each rank different volumes to each peer. With work-conserving shares, rank i's budget
 * for the call is B = RATE x (its units) / (its cluster's units), and each of its sockets to
 * the other cluster gets 93 % (the payload share, wanlink/pacer.hpp) of B x (its units) / (the
 * units of the sockets still sending, core/wan.cpp share_caps). Shares that ignored the
 * volumes would give B = RATE / NP and each socket B / k (k sockets still sending): with the
 * weights chosen the two sets of possible caps are disjoint.
 *
 * A second thread reads SO_MAX_PACING_RATE of every TCP socket of the process (/proc/self/fd)
 * every 200 us while the Alltoallvs run; every value a socket takes other than its pace before
 * the calls must be one of the expected ones within 1 %, and some must be seen. The thread
 * calls no MPI function. The data of every Alltoallv is checked too. Prints " No Errors" on
 * rank 0.
 *
 * The same thread also watches the lanes (WANMPI_WAN_LANES > 1: several sockets to one peer
 * host): in a rate-managed call each lane of a peer is paced to the peer's whole part, so a
 * peer's data must not be spread over several lanes at once (striping, WANMPI_WAN_STRIPE=on),
 * or the caps would sum to several times the budget. Every 5 ms it reads each socket's
 * tcpi_bytes_sent: a window in which two sockets to the same peer address each sent 4 KiB or
 * more (acknowledgements and IMPI credits are a few bytes) counts as spread; more than a quarter
 * of the windows in which anything was sent is an error (striped: a third to a half), judged
 * when 20 windows or more sent anything (compressed, the data of this program is a few KiB) (a call's last bytes on one lane can
 * still leave while the next call starts on another: a window, not the call).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#define UNIT (256 << 10)
#define MAXFD 256
#define MAXVAL 8

struct Hist {
    uint64_t v[MAXVAL];
    long n[MAXVAL];
};
static struct Hist hist[MAXFD];
static uint64_t before[MAXFD]; /* each socket's pace before the calls (0: unknown) */
static volatile int sampling = 1;
/* Lanes (sampler thread only): each socket's peer address and bytes sent in the window. */
static struct {
    struct sockaddr_storage peer;
    uint64_t sent;
} cur[MAXFD];
static int ncur;
static uint64_t last_sent[MAXFD];
static long busy_windows, spread_windows;

/* The pace of every TCP socket of the process: fn(fd, bytes/s). */
static void each_socket(void (*fn)(int, uint64_t)) {
    DIR* d = opendir("/proc/self/fd");
    if (!d) return;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        struct stat st;
        if (fd <= 2 || fd >= MAXFD || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        int type = 0, listening = 0;
        socklen_t len = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
        len = sizeof listening;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) continue;
        uint64_t v = 0;
        len = sizeof v;
        if (getsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, &len) != 0) continue;
        if (len == 4) v = (uint32_t)v == ~(uint32_t)0 ? ~(uint64_t)0 : (uint32_t)v;
        if (v != ~(uint64_t)0) fn(fd, v);
    }
    closedir(d);
}

static void note_before(int fd, uint64_t v) { before[fd] = v; }

static void note(int fd, uint64_t v) {
    if (v == before[fd]) return;
    struct Hist* h = &hist[fd];
    for (int i = 0; i < MAXVAL; ++i) {
        if (h->n[i] && h->v[i] == v) {
            h->n[i]++;
            return;
        }
        if (!h->n[i]) {
            h->v[i] = v;
            h->n[i] = 1;
            return;
        }
    }
}

static void note_sent(int fd, uint64_t v) {
    (void)v;
    socklen_t len = sizeof cur[ncur].peer;
    struct tcp_info ti;
    socklen_t tl = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (ncur >= MAXFD || getpeername(fd, (struct sockaddr*)&cur[ncur].peer, &len) != 0 ||
        getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) != 0)
        return;
    const uint64_t sent = ti.tcpi_bytes_sent;
    cur[ncur++].sent = last_sent[fd] && sent >= last_sent[fd] ? sent - last_sent[fd] : 0;
    last_sent[fd] = sent;
}

static int same_host(const struct sockaddr_storage* a, const struct sockaddr_storage* b) {
    if (a->ss_family != b->ss_family) return 0;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in*)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in*)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6*)a)->sin6_addr,
                      &((const struct sockaddr_in6*)b)->sin6_addr, 16) == 0;
    return 0;
}

static void* sampler(void* arg) {
    (void)arg;
    struct timespec ts = {0, 200000};
    for (long k = 0; sampling; ++k) {
        each_socket(note);
        if (k % 25 == 0) {
            ncur = 0;
            each_socket(note_sent);
            int busy = 0, spread = 0;
            for (int i = 0; i < ncur; ++i) {
                if (cur[i].sent < 4096) continue;
                busy = 1;
                for (int j = i + 1; j < ncur; ++j)
                    if (cur[j].sent >= 4096 && same_host(&cur[i].peer, &cur[j].peer)) spread = 1;
            }
            busy_windows += busy;
            spread_windows += spread;
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static unsigned char pattern(int from, int to, long i) { return (unsigned char)(from * 31 + to * 7 + i); }

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: pacing_share RATE NP0 NP1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const double rate = atof(argv[1]);
    const int np0 = atoi(argv[2]), np1 = atoi(argv[3]);
    if (np0 + np1 != size || np0 < 1 || np1 < 1) {
        if (rank == 0) fprintf(stderr, "pacing_share: %d + %d ranks, not %d\n", np0, np1, size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int in0 = rank < np0, nl = in0 ? np0 : np1, nr = size - nl;
    const int li = in0 ? rank : rank - np0;
    /* To the remote rank of index j (1 + 3 li)(1 + j) units; inside the cluster one unit. */
    int *sc = malloc(sizeof(int) * size), *rc = malloc(sizeof(int) * size);
    int *sd = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    long stot = 0, rtot = 0, sum = 0;
    for (int j = 0; j < size; ++j) {
        const int j0 = j < np0, jli = j0 ? j : j - np0;
        sc[j] = j0 == in0 ? UNIT : (1 + 3 * li) * (1 + jli) * UNIT;
        rc[j] = j0 == in0 ? UNIT : (1 + 3 * jli) * (1 + li) * UNIT;
        sd[j] = (int)stot;
        rd[j] = (int)rtot;
        stot += sc[j];
        rtot += rc[j];
    }
    for (int i = 0; i < nl; ++i)
        for (int j = 0; j < nr; ++j) sum += (1 + 3 * i) * (1 + j);
    unsigned char *sb = malloc((size_t)stot), *rb = malloc((size_t)rtot);
    for (int j = 0; j < size; ++j)
        for (long i = 0; i < sc[j]; ++i) sb[sd[j] + i] = pattern(rank, j, i);

    /* One call first: the connections exist and are warm (their first bytes are paced apart,
     * core/wan_impl.hpp), and the pace between calls is the rank's own. */
    MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    each_socket(note_before);
    pthread_t th;
    pthread_create(&th, NULL, sampler, NULL);
    for (int k = 0; k < 3; ++k) {
        memset(rb, 0, (size_t)rtot);
        MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
        for (int j = 0; j < size; ++j)
            for (long i = 0; i < rc[j]; ++i)
                if (rb[rd[j] + i] != pattern(j, rank, i)) {
                    if (errors++ < 5)
                        fprintf(stderr, "rank %d: byte %ld from %d is %d, expected %d\n", rank,
                                i, j, rb[rd[j] + i], pattern(j, rank, i));
                    break;
                }
    }
    sampling = 0;
    pthread_join(th, NULL);

    /* Every pace a socket took during the calls (other than its pace before them): 93 % of
     * B x units(j) / units(S) for a set S of this rank's remote peers that contains j. */
    long mine = 0;
    for (int j = 0; j < nr; ++j) mine += (1 + 3 * li) * (1 + j);
    const double budget = 0.93 * rate * (double)mine / (double)sum;
    const double equal = 0.93 * rate / nl;
    int seen = 0;
    for (int fd = 0; fd < MAXFD; ++fd) {
        const struct Hist* h = &hist[fd];
        for (int i = 0; i < MAXVAL && h->n[i]; ++i) {
            const double got = (double)h->v[i];
            int ok = 0;
            for (unsigned set = 1; set < (1u << nr) && !ok; ++set) {
                double units = 0;
                for (int j = 0; j < nr; ++j)
                    if (set & (1u << j)) units += 1 + j;
                for (int j = 0; j < nr && !ok; ++j)
                    if (set & (1u << j))
                        ok = fabs(got - budget * (1 + j) / units) <= 0.01 * got;
            }
            /* The rank's own pace between the calls (one rank per host: the whole link), once
             * its restore after a call had waited for the kernel's backlog (core/wan_impl.hpp)
             * past the moment `before` was read. */
            if (!ok) ok = fabs(got - 0.93 * rate) <= 0.01 * got;
            seen++;
            if (!ok) {
                errors++;
                fprintf(stderr,
                        "rank %d (index %d of %d in its cluster): socket %d paced to %.0f B/s "
                        "(%ld samples), not a part of the budget %.0f in proportion to the "
                        "volumes (equal shares: %.0f / k)\n",
                        rank, li, nl, fd, got, h->n[i], budget, equal);
            }
        }
    }
    if (busy_windows >= 20 && spread_windows * 4 > busy_windows) {
        errors++;
        fprintf(stderr,
                "rank %d: in %ld of %ld 5 ms windows with data sent, two sockets to one peer "
                "host sent 4 KiB or more each: a peer's data spread over lanes that are each "
                "paced to the peer's whole part of the budget\n",
                rank, spread_windows, busy_windows);
    }
    if (seen < 1) {
        errors++;
        fprintf(stderr, "rank %d: no socket changed its pace during the Alltoallvs\n", rank);
    } else {
        printf("rank %d: WAN sockets paced in proportion to the volumes, budget %.0f B/s "
               "(equal shares: %.0f / k), %d values; one peer's data on several lanes in %ld "
               "of %ld 5 ms windows with data sent\n",
               rank, budget, equal, seen, spread_windows, busy_windows);
    }
    int all = 0;
    MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all) printf(" Found %d errors\n", all);
        else printf(" No Errors\n");
    }
    free(sb);
    free(rb);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    MPI_Finalize();
    return 0;
}
