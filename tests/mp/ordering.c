/* ordering: MPI's non-overtaking rule. Each rank streams messages to its partner whose sizes jump
 * back and forth across every plausible eager/rendezvous boundary (0 B to 1 MiB, e.g. a 1 MiB
 * message followed by a 1 B one that must not overtake it), mixing Isend and Issend (and blocking
 * Send where the receives are known to be posted). The receiver checks that the i-th receive gets
 * the i-th message (size via Get_count, contents via a per-sequence pattern) when:
 *   A  receives are posted late (messages wait in the unexpected queue), same tag;
 *   B  receives are all posted before the first send, same tag;
 *   C  the tags vary and the receiver uses MPI_ANY_TAG;
 *   D  the receiver uses MPI_ANY_SOURCE with one tag;
 *   E  the receiver probes (MPI_Probe) each message before receiving it. */
#include "mptest.h"

static const int sizes[] = {0,     1,     7,     64,    1000,   4095,   4096,    8191,   8192,
                            8193,  16384, 16385, 32768, 65535,  65536,  65537,   131072, 262144,
                            1 << 20, 3,   2,     500000};
#define NS ((int)(sizeof sizes / sizeof sizes[0]))
#define N (2 * NS)
#define MAXSZ (1 << 20)

static int peer;
static unsigned char *sbuf[N];

static int size_of(int i) { return sizes[(i * 7) % NS]; }

static void post_sends(int phase, int tag_base, int vary_tag, int blocking_ok, MPI_Request *req)
{
    int i;
    for (i = 0; i < N; i++) {
        int n = size_of(i), tag = tag_base + (vary_tag ? i % 5 : 0);
        mt_fill(sbuf[i], (size_t)n, (uint64_t)(phase * 1000 + i));
        if (blocking_ok && i % 3 == 2) {
            MPI_Send(sbuf[i], n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            req[i] = MPI_REQUEST_NULL;
        } else if (i % 3 == 1)
            MPI_Issend(sbuf[i], n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[i]);
        else
            MPI_Isend(sbuf[i], n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[i]);
    }
}

static int check_msg(int phase, int i, const MPI_Status *st, const unsigned char *buf,
                     int tag_base, int vary_tag)
{
    int count = -1, n = size_of(i), tag = tag_base + (vary_tag ? i % 5 : 0);
    long long bad;
    MPI_Get_count(st, MPI_BYTE, &count);
    bad = count == n ? mt_verify(buf, (size_t)n, (uint64_t)(phase * 1000 + i)) : -1;
    MT_CHECK(count == n && bad < 0 && st->MPI_SOURCE == peer && st->MPI_TAG == tag,
             "phase %c: receive #%d expected %d B tag %d, got %s (data mismatch at %lld) - "
             "overtaken?",
             'A' + phase, i, n, tag, mt_status_str(st, MPI_BYTE), bad);
    return count == n && bad < 0;
}

int main(int argc, char **argv)
{
    int i, phase;
    unsigned char *rbuf[N];
    MPI_Request sreq[N], rreq[N];
    MPI_Status st[N];

    mt_init(&argc, &argv);
    peer = mt_partner();
    for (i = 0; i < N; i++) {
        sbuf[i] = (unsigned char *)mt_malloc((size_t)size_of(i));
        rbuf[i] = (unsigned char *)mt_malloc(MAXSZ);
    }

    for (phase = 0; phase < 5; phase++) {
        int tag_base = 100 * (phase + 1), vary = phase == 2;
        int src = phase == 3 ? MPI_ANY_SOURCE : peer;
        int rtag = phase == 2 ? MPI_ANY_TAG : tag_base;
        /* ANY_TAG only on ranks != 0 or when nothing else can reach rank 0 (see mptest.h);
         * the partner cannot finish before receiving everything we send afterwards. */
        if (phase == 1) {
            for (i = 0; i < N; i++)
                MPI_Irecv(rbuf[i], MAXSZ, MPI_BYTE, src, rtag, MPI_COMM_WORLD, &rreq[i]);
            MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 99, NULL, 0, MPI_BYTE, peer, 99,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            post_sends(phase, tag_base, vary, peer != mt_rank, sreq);
            MPI_Waitall(N, rreq, st);
            for (i = 0; i < N; i++)
                if (!check_msg(phase, i, &st[i], rbuf[i], tag_base, vary))
                    break;
        } else {
            post_sends(phase, tag_base, vary, 0, sreq);
            for (i = 0; i < N; i++) {
                if (phase == 4) {
                    int count = -1;
                    MPI_Probe(src, rtag, MPI_COMM_WORLD, &st[i]);
                    MPI_Get_count(&st[i], MPI_BYTE, &count);
                    MT_CHECK(count == size_of(i), "phase E: probe #%d saw %d B, expected %d", i,
                             count, size_of(i));
                }
                MPI_Recv(rbuf[0], MAXSZ, MPI_BYTE, src, rtag, MPI_COMM_WORLD, &st[i]);
                if (!check_msg(phase, i, &st[i], rbuf[0], tag_base, vary)) {
                    /* Drain the rest so the job ends instead of hanging. */
                    for (i++; i < N; i++)
                        MPI_Recv(rbuf[0], MAXSZ, MPI_BYTE, src, rtag, MPI_COMM_WORLD, &st[i]);
                    break;
                }
            }
        }
        MPI_Waitall(N, sreq, MPI_STATUSES_IGNORE);
    }
    for (i = 0; i < N; i++) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    return mt_finalize();
}
