/* hol_order: MPI's non-overtaking rule while a long message is on its way (issue 14). Between
 * clusters, wanmpi lets small packets pass the queued data of a long message that the receiver
 * already matched (WANMPI_WAN_PRIORITY); run with a small IMPI_C_DATALEN (and
 * WANMPI_WAN_FRAGMENT) so the long message is many packets and the small ones really pass them.
 *
 * Each phase: the receiver R posts the long receive first (so the long message is matched as
 * soon as its first packet arrives), says "go"; the sender S starts the long MPI_Isend, then
 * streams small messages to R (and, with DATALEN 4 KiB, some of 5000 and 20000 bytes: later long
 * messages whose first packet goes while the first one's data is still queued) until the long
 * send completed and at least 8 went, then an end marker with the count. Every small message
 * starts with its sequence number k; R checks that it receives them in sequence, with the tag
 * and size that k implies and the contents, and then the long message's status and contents.
 *   1  same communicator and tag as the long message, explicit tag; S uses Send, Isend, Issend,
 *      Ssend in turn
 *   2  same communicator, tags varying; R receives with MPI_ANY_TAG (the long one too) and
 *      probes (MPI_Probe, ANY_TAG) each message first, checking its size and tag; S cancels
 *      every 7th message (tag 7) right after starting it: R must see exactly those S could not
 *      cancel, still in sequence
 *   3  the small messages on a duplicate of MPI_COMM_WORLD, received with MPI_ANY_SOURCE and
 *      MPI_ANY_TAG; the long one on MPI_COMM_WORLD
 *   4  as 1, the other direction (rank 1 sends to rank 0), receives by MPI_Irecv posted in
 *      batches
 *   5  two long messages back to back (received by two MPI_ANY_TAG receives posted first: the
 *      first must get the first), then the small ones
 * Pass: " No Errors". Standard MPI only (runs under MPICH and Open MPI too). 2 ranks (others
 * idle).
 */
#include "mptest.h"

#define LONG_N (3 << 20) /* 3 MiB */
#define SMALL_MAX 20000
#define KMAX 3000
#define NSLOTS 64
#define TAG_GO 31000
#define TAG_END 31001
#define TAG_LONG 5
#define TAG_CANCEL 7
#define END_MAGIC 0x454e44

static const int small_sizes[] = {8, 9, 100, 4096, 20000, 16, 5000, 64};
#define NSIZES ((int)(sizeof small_sizes / sizeof small_sizes[0]))

static int size_of(int k) { return small_sizes[k % NSIZES]; }
static int tag_of(int phase, int k)
{
    if (phase == 1 || phase == 4)
        return 10;
    if (phase == 2 && k % 7 == 3)
        return TAG_CANCEL;
    return 10 + k % 5;
}
static uint64_t seed_of(int phase, int k) { return (uint64_t)phase * 100000 + (uint64_t)k; }

static void fill_small(unsigned char *b, int phase, int k)
{
    int n = size_of(k);
    mt_fill(b, (size_t)n, seed_of(phase, k));
    memcpy(b, &k, sizeof k);
}

/* Sender side of a phase. */
static void send_phase(int phase, int r, MPI_Comm comm_small, unsigned char *lbuf,
                       unsigned char *lbuf2)
{
    static unsigned char sb[KMAX][64]; /* payloads of up to 64 bytes stay until the Waitall */
    static MPI_Request reqs[KMAX + 2];
    unsigned char *big_small = (unsigned char *)mt_malloc((size_t)SMALL_MAX * NSLOTS);
    MPI_Request slot_req[NSLOTS];
    MPI_Request lreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int nreq = 0, k, i, done = 0, in_flight = 0, not_cancelled = 0, nlong = phase == 5 ? 2 : 1;
    for (i = 0; i < NSLOTS; i++)
        slot_req[i] = MPI_REQUEST_NULL;
    mt_fill(lbuf, LONG_N, seed_of(phase, 999999));
    if (nlong == 2)
        mt_fill(lbuf2, LONG_N, seed_of(phase, 999998));
    MPI_Recv(NULL, 0, MPI_BYTE, r, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Isend(lbuf, LONG_N, MPI_BYTE, r, TAG_LONG, MPI_COMM_WORLD, &lreq[0]);
    if (nlong == 2)
        MPI_Isend(lbuf2, LONG_N, MPI_BYTE, r, TAG_LONG + 1, MPI_COMM_WORLD, &lreq[1]);
    for (k = 0; k < KMAX && (!done || k < 8); k++) {
        int n = size_of(k), tag = tag_of(phase, k);
        /* Payloads above 64 bytes rotate among NSLOTS buffers, each reused only after its
         * previous send completed; they go by MPI_Isend (the long ones among them queue behind
         * the first long message's data, and the small ones behind them must not wait). */
        int slot = k % NSLOTS;
        unsigned char *b = n <= 64 ? sb[k] : big_small + (size_t)slot * SMALL_MAX;
        if (n > 64)
            MPI_Wait(&slot_req[slot], MPI_STATUS_IGNORE);
        fill_small(b, phase, k);
        if (phase == 2 && tag == TAG_CANCEL) {
            MPI_Request q;
            int cancelled = 0;
            MPI_Isend(b, n, MPI_BYTE, r, tag, comm_small, &q);
            MPI_Cancel(&q);
            MPI_Status st;
            MPI_Wait(&q, &st);
            MPI_Test_cancelled(&st, &cancelled);
            not_cancelled += !cancelled;
        } else if (n > 64) {
            MPI_Isend(b, n, MPI_BYTE, r, tag, comm_small, &slot_req[slot]);
        } else if (k % 4 == 0) {
            MPI_Send(b, n, MPI_BYTE, r, tag, comm_small);
        } else if (k % 4 == 1) {
            MPI_Isend(b, n, MPI_BYTE, r, tag, comm_small, &reqs[nreq++]);
        } else if (k % 4 == 2) {
            MPI_Issend(b, n, MPI_BYTE, r, tag, comm_small, &reqs[nreq++]);
        } else {
            MPI_Ssend(b, n, MPI_BYTE, r, tag, comm_small);
        }
        if (!done) {
            MPI_Testall(nlong, lreq, &done, MPI_STATUSES_IGNORE);
            if (done)
                in_flight = k + 1;
        }
    }
    /* Information only (timing decides it): how many went while the long data was queued. */
    printf("[rank %d] phase %d: %d of %d small messages sent before the long send completed\n",
           mt_rank, phase, done ? in_flight : k, k);
    {
        /* 12 bytes (no message of the sequence has that size), with the next tag in sequence
         * where R receives by explicit tags. */
        int end[3] = {k, not_cancelled, END_MAGIC};
        int any_tag = phase == 2 || phase == 3 || phase == 5;
        MPI_Send(end, 3, MPI_INT, r, any_tag ? TAG_END : tag_of(phase, k), comm_small);
    }
    MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
    MPI_Waitall(NSLOTS, slot_req, MPI_STATUSES_IGNORE);
    MPI_Waitall(nlong, lreq, MPI_STATUSES_IGNORE);
    free(big_small);
}

/* Checks small message #k (or reports what came instead). Returns 0 when R should stop. */
static int check_small(int phase, int k, const MPI_Status *st, const unsigned char *b, int src)
{
    int count = -1, got_k = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    if (count >= (int)sizeof got_k)
        memcpy(&got_k, b, sizeof got_k);
    MT_CHECK(got_k == k && count == size_of(k) && st->MPI_TAG == tag_of(phase, k) &&
                 st->MPI_SOURCE == src,
             "phase %d: message #%d expected (%d B, tag %d), got #%d (%d B, tag %d, source %d)"
             " - overtaken?",
             phase, k, size_of(k), tag_of(phase, k), got_k, count, st->MPI_TAG, st->MPI_SOURCE);
    if (got_k != k || count != size_of(k))
        return 0;
    {
        unsigned char ref[SMALL_MAX];
        fill_small(ref, phase, k);
        MT_CHECK(memcmp(ref, b, (size_t)count) == 0, "phase %d: message #%d: contents differ",
                 phase, k);
    }
    return 1;
}

static void recv_phase(int phase, int s, MPI_Comm comm_small, unsigned char *lbuf,
                       unsigned char *lbuf2)
{
    static unsigned char rb[SMALL_MAX + 64];
    MPI_Request lreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status lst[2], st;
    int nlong = phase == 5 ? 2 : 1, k = 0, i, end[3] = {-1, -1, 0}, delivered_c = 0, ok = 1;
    int any_tag = phase == 2 || phase == 3 || phase == 5;
    int src = phase == 3 ? MPI_ANY_SOURCE : s;
    for (i = 0; i < nlong; i++)
        MPI_Irecv(i ? lbuf2 : lbuf, LONG_N, MPI_BYTE, s, any_tag ? MPI_ANY_TAG : TAG_LONG,
                  MPI_COMM_WORLD, &lreq[i]);
    MPI_Send(NULL, 0, MPI_BYTE, s, TAG_GO, MPI_COMM_WORLD);
    if (!any_tag) {
        /* Explicit tags, in sequence; the end marker (12 bytes) comes with the next tag. */
        if (phase == 4) {
            /* MPI_Irecv posted 16 at a time (into separate slots), completed in order; those
             * posted beyond the end marker are cancelled. */
            static unsigned char slots[16][SMALL_MAX];
            MPI_Request q[16];
            int j, fin = 0;
            while (!fin) {
                for (j = 0; j < 16; j++)
                    MPI_Irecv(slots[j], SMALL_MAX, MPI_BYTE, s, tag_of(phase, k + j), comm_small,
                              &q[j]);
                for (j = 0; j < 16; j++) {
                    int count = -1, cancelled = 0;
                    MPI_Wait(&q[j], &st);
                    if (fin) {
                        MPI_Test_cancelled(&st, &cancelled);
                        MT_CHECK(cancelled, "phase 4: a receive posted after the end matched");
                        continue;
                    }
                    MPI_Get_count(&st, MPI_BYTE, &count);
                    if (count == 12) {
                        memcpy(end, slots[j], sizeof end);
                        fin = 1;
                        for (i = j + 1; i < 16; i++)
                            MPI_Cancel(&q[i]);
                        continue;
                    }
                    if (ok)
                        ok = check_small(phase, k, &st, slots[j], s);
                    k++;
                }
            }
        } else {
            for (;;) {
                int count = -1;
                MPI_Recv(rb, SMALL_MAX, MPI_BYTE, s, tag_of(phase, k), comm_small, &st);
                MPI_Get_count(&st, MPI_BYTE, &count);
                if (count == 12) {
                    memcpy(end, rb, sizeof end);
                    break;
                }
                if (ok)
                    ok = check_small(phase, k, &st, rb, s);
                k++;
            }
        }
        MT_CHECK(!ok || (k == end[0] && end[2] == END_MAGIC),
                 "phase %d: %d messages received, the sender sent %d", phase, k, end[0]);
    } else {
        for (;;) {
            if (phase == 2) {
                int count = -1, want_k = k;
                MPI_Probe(src, MPI_ANY_TAG, comm_small, &st);
                MPI_Get_count(&st, MPI_BYTE, &count);
                /* A cancelled message may be missing: the next one in sequence then shows. */
                while (st.MPI_TAG != TAG_END && tag_of(phase, want_k) == TAG_CANCEL &&
                       st.MPI_TAG != TAG_CANCEL)
                    want_k++;
                MT_CHECK(st.MPI_TAG == TAG_END ||
                             (count == size_of(want_k) && st.MPI_TAG == tag_of(phase, want_k)),
                         "phase 2: probe saw %d B tag %d, expected #%d: %d B tag %d", count,
                         st.MPI_TAG, want_k, size_of(want_k), tag_of(phase, want_k));
            }
            MPI_Recv(rb, SMALL_MAX, MPI_BYTE, src, MPI_ANY_TAG, comm_small, &st);
            if (st.MPI_TAG == TAG_END) {
                memcpy(end, rb, sizeof end);
                break;
            }
            if (!ok)
                continue; /* drain after a failure, so the job ends */
            if (phase == 2) {
                int got_k = -1;
                memcpy(&got_k, rb, sizeof got_k);
                /* Skip the sequence numbers of messages S may have cancelled. */
                while (k < got_k && tag_of(phase, k) == TAG_CANCEL)
                    k++;
                if (st.MPI_TAG == TAG_CANCEL)
                    delivered_c++;
            }
            ok = check_small(phase, k, &st, rb, s);
            k++;
        }
        if (ok) {
            while (k < end[0] && tag_of(phase, k) == TAG_CANCEL)
                k++;
            MT_CHECK(k == end[0], "phase %d: %d messages received, the sender sent %d", phase, k,
                     end[0]);
            if (phase == 2)
                MT_CHECK(delivered_c == end[1],
                         "phase 2: %d cancel candidates arrived, the sender could not cancel %d",
                         delivered_c, end[1]);
        }
    }
    MPI_Waitall(nlong, lreq, lst);
    for (i = 0; i < nlong; i++) {
        int count = -1;
        long long bad;
        MPI_Get_count(&lst[i], MPI_BYTE, &count);
        bad = mt_verify(i ? lbuf2 : lbuf, LONG_N, seed_of(phase, 999999 - (uint64_t)i));
        MT_CHECK(count == LONG_N && lst[i].MPI_TAG == TAG_LONG + i && bad < 0,
                 "phase %d: long message %d: %d B tag %d (expected %d B tag %d), first bad byte "
                 "%lld",
                 phase, i, count, lst[i].MPI_TAG, LONG_N, TAG_LONG + i, bad);
    }
}

int main(int argc, char **argv)
{
    int phase;
    MPI_Comm dup;
    unsigned char *lbuf, *lbuf2;
    mt_init(&argc, &argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (mt_size < 2) {
        MT_CHECK(mt_size >= 2, "needs 2 ranks");
        return mt_finalize();
    }
    lbuf = (unsigned char *)mt_malloc(LONG_N);
    lbuf2 = (unsigned char *)mt_malloc(LONG_N);
    for (phase = 1; phase <= 5; phase++) {
        int s = phase == 4 ? 1 : 0, r = 1 - s;
        MPI_Comm cs = phase == 3 ? dup : MPI_COMM_WORLD;
        if (mt_rank == s)
            send_phase(phase, r, cs, lbuf, lbuf2);
        else if (mt_rank == r)
            recv_phase(phase, s, cs, lbuf, lbuf2);
        mt_barrier();
    }
    free(lbuf);
    free(lbuf2);
    MPI_Comm_free(&dup);
    return mt_finalize();
}
