/* any_source: MPI_ANY_SOURCE with several senders at once (every rank, the receiver itself
 * included, so self and remote routes mix), small and rendezvous-size messages interleaved.
 * The receiver checks that every message arrives exactly once, that the messages of each sender
 * arrive in the order sent, and that status.MPI_SOURCE names the real sender:
 *   1  receives posted one at a time as messages arrive (unexpected queue), one tag;
 *   2  all receives pre-posted with MPI_ANY_SOURCE before the senders start;
 *   3  MPI_ANY_SOURCE + MPI_ANY_TAG with per-message tags, at a root other than rank 0 (see
 *      mptest.h on harness traffic), run last so no other traffic can reach that root;
 *   4  specific-source receives and ANY_SOURCE receives posted together. */
#include "mptest.h"

#define K 100
#define MAXSZ (256 * 1024)

static int msg_size(int i) { return i % 25 == 24 ? MAXSZ : i % 10 == 9 ? 20000 : 8 + i % 64; }

static void send_stream(int root, int tag, int vary, MPI_Request *req, unsigned char **buf)
{
    int i;
    for (i = 0; i < K; i++) {
        int n = msg_size(i);
        mt_fill(buf[i], (size_t)n, (uint64_t)(mt_rank * 100000 + tag * 1000 + i));
        memcpy(buf[i], &i, 4); /* sequence number */
        MPI_Isend(buf[i], n, MPI_BYTE, root, vary ? tag + i % 7 : tag, MPI_COMM_WORLD, &req[i]);
    }
}

/* next[src] is the next sequence number expected from src. */
static void check_one(const MPI_Status *st, const unsigned char *b, int *next, int tag, int vary,
                      int phase)
{
    int src = st->MPI_SOURCE, seq = -1, count = -1, n;
    long long bad;
    MPI_Get_count(st, MPI_BYTE, &count);
    if (src < 0 || src >= mt_size || count < 4) {
        MT_CHECK(0, "phase %d: bad status %s", phase, mt_status_str(st, MPI_BYTE));
        return;
    }
    memcpy(&seq, b, 4);
    MT_CHECK(seq == next[src], "phase %d: from %d got sequence %d, expected %d (overtaken)", phase,
             src, seq, next[src]);
    if (seq < 0 || seq >= K)
        return;
    n = msg_size(seq);
    MT_CHECK(count == n, "phase %d: from %d seq %d: %d B, expected %d", phase, src, seq, count, n);
    if (vary)
        MT_CHECK(st->MPI_TAG == tag + seq % 7, "phase %d: from %d seq %d: tag %d", phase, src,
                 seq, st->MPI_TAG);
    /* bytes 4.. follow the pattern of this (src, seq) */
    {
        unsigned char *tmp = (unsigned char *)mt_malloc((size_t)n);
        mt_fill(tmp, (size_t)n, (uint64_t)(src * 100000 + tag * 1000 + seq));
        bad = count == n && n > 4 && memcmp(tmp + 4, b + 4, (size_t)n - 4) ? 1 : -1;
        free(tmp);
    }
    MT_CHECK(bad < 0, "phase %d: from %d seq %d: data mismatch", phase, src, seq);
    next[src] = seq + 1;
}

int main(int argc, char **argv)
{
    unsigned char *sb[K], **rb;
    MPI_Request sreq[K], *rreq;
    MPI_Status *sts;
    int *next, i, r, total, pi;

    mt_init(&argc, &argv);
    total = mt_size * K;
    for (i = 0; i < K; i++)
        sb[i] = (unsigned char *)mt_malloc(MAXSZ);
    next = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);

    /* Phase 3 (ANY_TAG) runs last: nothing else may be addressed to its root meanwhile. */
    for (pi = 0; pi < 4; pi++) {
        int phase = pi < 2 ? pi + 1 : pi == 2 ? 4 : 3;
        int root = phase == 3 ? mt_size - 1 : 0, tag = phase * 10, vary = phase == 3;
        if (mt_rank != root) {
            if (phase == 2 || phase == 4) /* wait until the root has posted everything */
                MPI_Recv(NULL, 0, MPI_BYTE, root, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            send_stream(root, tag, vary, sreq, sb);
            MPI_Waitall(K, sreq, MPI_STATUSES_IGNORE);
            continue;
        }
        for (r = 0; r < mt_size; r++)
            next[r] = 0;
        if (phase == 1 || phase == 3) {
            unsigned char *b = (unsigned char *)mt_malloc(MAXSZ);
            MPI_Status st;
            send_stream(root, tag, vary, sreq, sb);
            for (i = 0; i < total; i++) {
                MPI_Recv(b, MAXSZ, MPI_BYTE, MPI_ANY_SOURCE, vary ? MPI_ANY_TAG : tag,
                         MPI_COMM_WORLD, &st);
                check_one(&st, b, next, tag, vary, phase);
            }
            free(b);
        } else {
            rb = (unsigned char **)mt_malloc(sizeof(*rb) * (size_t)total);
            rreq = (MPI_Request *)mt_malloc(sizeof(*rreq) * (size_t)total);
            sts = (MPI_Status *)mt_malloc(sizeof(*sts) * (size_t)total);
            for (i = 0; i < total; i++) {
                /* phase 4: the first size*K/4 receives name their source (round robin), the
                 * rest are wildcards. Each message matches the earliest posted receive that fits,
                 * so the first K/4 messages of every source land in its specific receives, in
                 * order, and the wildcards take the rest; no receive can starve. */
                int src = phase == 4 && i < mt_size * (K / 4) ? i % mt_size : MPI_ANY_SOURCE;
                rb[i] = (unsigned char *)mt_malloc(MAXSZ);
                MPI_Irecv(rb[i], MAXSZ, MPI_BYTE, src, tag, MPI_COMM_WORLD, &rreq[i]);
            }
            for (r = 0; r < mt_size; r++)
                if (r != root)
                    MPI_Send(NULL, 0, MPI_BYTE, r, 9, MPI_COMM_WORLD);
            send_stream(root, tag, vary, sreq, sb);
            MPI_Waitall(total, rreq, sts);
            /* Matching follows posting order, so per source the receives in post order hold
             * the sender's sequence (phase 4: specific receives first, then wildcards). */
            for (i = 0; i < total; i++) {
                if (phase == 4 && i < mt_size * (K / 4))
                    MT_CHECK(sts[i].MPI_SOURCE == i % mt_size,
                             "phase 4: receive %d for source %d matched source %d", i,
                             i % mt_size, sts[i].MPI_SOURCE);
                check_one(&sts[i], rb[i], next, tag, vary, phase);
            }
            for (i = 0; i < total; i++)
                free(rb[i]);
            free(rb);
            free(rreq);
            free(sts);
        }
        for (r = 0; r < mt_size; r++)
                MT_CHECK(next[r] == K, "phase %d: %d of %d messages from rank %d", phase,
                         next[r], K, r);
        MPI_Waitall(K, sreq, MPI_STATUSES_IGNORE);
    }
    for (i = 0; i < K; i++)
        free(sb[i]);
    free(next);
    return mt_finalize();
}
