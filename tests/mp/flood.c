/* flood [COUNT [SIZE [RSS_MB_PER_SENDER]]]: every rank but 0 Isends COUNT messages of SIZE bytes
 * (default 4000 x 4 KiB, eager size everywhere) to rank 0, which posts no receive until each
 * sender has also sent a "done posting" message on another tag. MPI's progress rule requires
 * that message to get through even while the flood is unreceived, so a library with per-peer
 * eager credits must not queue it behind the stalled flood. Then rank 0 receives everything
 * (MPI_ANY_SOURCE) and checks count, per-sender order (a 4-byte sequence mark) and contents.
 * With RSS_MB_PER_SENDER > 0, rank 0's resident memory may grow by at most that many MiB per
 * sender while the flood sits unreceived (a library that buffers every unexpected eager message
 * grows by COUNT*SIZE per sender, so choose COUNT*SIZE well above the bound). With one rank,
 * rank 0 floods itself. */
#include "mptest.h"

#include <unistd.h>

#define NBUF 16

static long rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv)
{
    int count, size, bound_mb, i, k, nsend;
    unsigned char *buf[NBUF], *rbuf;
    MPI_Request *req = NULL;
    long rss0 = 0, rss1 = 0;

    mt_init(&argc, &argv);
    count = argc > 1 ? atoi(argv[1]) : 4000;
    size = argc > 2 ? atoi(argv[2]) : 4096;
    bound_mb = argc > 3 ? atoi(argv[3]) : 0;
    if (size < 4)
        size = 4;
    nsend = mt_size > 1 ? mt_size - 1 : 1;

    /* NBUF distinct send buffers, reused round robin (several pending sends may share one). */
    for (k = 0; k < NBUF; k++) {
        buf[k] = (unsigned char *)mt_malloc((size_t)size);
        mt_fill(buf[k], (size_t)size, (uint64_t)(mt_rank * 100 + k));
        memcpy(buf[k], &k, 4);
    }
    rbuf = (unsigned char *)mt_malloc((size_t)size);

    /* Warm-up: every connection exists before the baseline is taken. */
    if (mt_rank == 0) {
        for (i = 1; i < mt_size; i++) {
            MPI_Send(buf[0], 4, MPI_BYTE, i, 5, MPI_COMM_WORLD);
            MPI_Recv(rbuf, 4, MPI_BYTE, i, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        rss0 = rss_kib();
    } else {
        MPI_Recv(rbuf, 4, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf[0], 4, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
    }

    if (mt_rank != 0 || mt_size == 1) {
        req = (MPI_Request *)mt_malloc(sizeof(MPI_Request) * (size_t)count);
        for (i = 0; i < count; i++)
            MPI_Isend(buf[i % NBUF], size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[i]);
        if (mt_rank != 0)
            MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    }
    if (mt_rank == 0) {
        int *next = (int *)calloc((size_t)mt_size, sizeof(int)), *got = (int *)calloc((size_t)mt_size, sizeof(int));
        MPI_Status st;
        for (i = 1; i < mt_size; i++)
            MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        rss1 = rss_kib();
        printf("flood: %d sender(s) x %d x %d B unreceived; rank 0 RSS grew by %ld KiB "
               "(payload %ld KiB)\n",
               nsend, count, size, rss1 - rss0, (long)nsend * count * (size / 1024));
        fflush(stdout);
        if (bound_mb > 0)
            MT_CHECK(rss1 - rss0 <= bound_mb * 1024L * nsend,
                     "unexpected-message memory grew by %ld KiB > bound %d MiB x %d senders",
                     rss1 - rss0, bound_mb, nsend);
        for (i = 0; i < nsend * count; i++) {
            int c = -1, src, mark = -1, expect;
            MPI_Recv(rbuf, size, MPI_BYTE, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &c);
            src = st.MPI_SOURCE;
            if (src < 0 || src >= mt_size || c != size) {
                MT_CHECK(0, "bad message: %s", mt_status_str(&st, MPI_BYTE));
                continue;
            }
            memcpy(&mark, rbuf, 4);
            expect = next[src] % NBUF;
            MT_CHECK(mark == expect, "from %d: message %d has mark %d, expected %d (order)", src,
                     got[src], mark, expect);
            if (mark >= 0 && mark < NBUF && next[src] < 4 * NBUF) {
                /* contents: check the first few rounds fully, the rest by mark */
                unsigned char *ref = (unsigned char *)mt_malloc((size_t)size);
                mt_fill(ref, (size_t)size, (uint64_t)(src * 100 + mark));
                MT_CHECK(!memcmp(ref + 4, rbuf + 4, (size_t)size - 4), "from %d: data mismatch",
                         src);
                free(ref);
            }
            next[src]++;
            got[src]++;
        }
        for (i = 0; i < mt_size; i++)
            if (i != 0 || mt_size == 1)
                MT_CHECK(got[i] == count, "received %d of %d from rank %d", got[i], count, i);
        free(next);
        free(got);
    }
    if (req) {
        MPI_Waitall(count, req, MPI_STATUSES_IGNORE);
        free(req);
    }
    for (k = 0; k < NBUF; k++)
        free(buf[k]);
    free(rbuf);
    return mt_finalize();
}
