/* Every message exactly once and in MPI order while the connections between clusters are cut
 * (issue 13): run by wan.resilience with wan_test.py --kill-every, which ss -K's every
 * inter-cluster connection every few seconds.
 *
 *   resilience ROUNDS PER_PEER
 *
 * In each round every rank sends PER_PEER messages to every other rank (MPI_Isend, tags 0..3)
 * and receives as many with MPI_ANY_SOURCE / MPI_ANY_TAG. Each message carries its sender and
 * the sender's running sequence number towards this receiver; its bytes are a pattern derived
 * from both. Sizes: mostly 8-64 B, every 61st 64 KiB (the long-message protocol across
 * clusters), every 997th 1 MiB. The receiver checks the length, every byte, that the tag is
 * the one the sequence number implies, and that per sender the sequence numbers arrive as
 * 0, 1, 2, ... (non-overtaking: ANY_SOURCE/ANY_TAG receives match a sender's messages in the
 * order it sent them): a message lost, duplicated or reordered by a reconnect fails here.
 * Rank 0 says when the first round is done (wan.outage cuts the link then).
 * Standard MPI only: the same program runs under MPICH and Open MPI. Prints " No Errors".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (1 << 20)

static int msg_size(uint64_t seq) {
    if (seq % 997 == 996) return BIG;
    if (seq % 61 == 60) return 64 << 10;
    return 8 + (int)(seq % 57);
}

static unsigned char pattern(int src, uint64_t seq, int i) {
    return (unsigned char)((src * 131u) ^ (unsigned)(seq * 2654435761u) ^ (unsigned)(i * 7u));
}

static void fill(unsigned char* b, int src, uint64_t seq, int len) {
    memcpy(b, &seq, 8);  /* len >= 8 */
    for (int i = 8; i < len; ++i) b[i] = pattern(src, seq, i);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    int per_peer = argc > 2 ? atoi(argv[2]) : 1000;
    uint64_t* sseq = calloc((size_t)size, sizeof *sseq);  /* next seq towards each peer */
    uint64_t* rseq = calloc((size_t)size, sizeof *rseq);  /* next seq expected from each peer */
    int npeers = size - 1;
    size_t nsend = (size_t)npeers * (size_t)per_peer;
    MPI_Request* reqs = malloc(nsend * sizeof *reqs);
    unsigned char** bufs = malloc(nsend * sizeof *bufs);
    unsigned char* rbuf = malloc(BIG);
    unsigned char* want = malloc(BIG);
    long errors = 0, received = 0;
    double t0 = MPI_Wtime();
    for (int r = 0; r < rounds; ++r) {
        size_t k = 0;
        for (int i = 0; i < per_peer; ++i)
            for (int d = 0; d < size; ++d) {
                if (d == rank) continue;
                uint64_t seq = sseq[d]++;
                int len = msg_size(seq);
                bufs[k] = malloc((size_t)len);
                fill(bufs[k], rank, seq, len);
                MPI_Isend(bufs[k], len, MPI_BYTE, d, (int)(seq % 4), MPI_COMM_WORLD, &reqs[k]);
                ++k;
            }
        for (size_t j = 0; j < nsend; ++j) {
            MPI_Status st;
            MPI_Recv(rbuf, BIG, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int len, src = st.MPI_SOURCE;
            MPI_Get_count(&st, MPI_BYTE, &len);
            received++;
            uint64_t seq;
            memcpy(&seq, rbuf, 8);
            uint64_t exp = rseq[src]++;
            if (seq != exp || len != msg_size(exp) || st.MPI_TAG != (int)(exp % 4)) {
                if (errors++ < 10)
                    fprintf(stderr, "rank %d: from %d expected seq %llu (%d B, tag %d), got seq "
                            "%llu (%d B, tag %d)\n", rank, src, (unsigned long long)exp,
                            msg_size(exp), (int)(exp % 4), (unsigned long long)seq, len, st.MPI_TAG);
                rseq[src] = seq + 1;
                continue;
            }
            fill(want, src, seq, len);
            if (memcmp(want, rbuf, (size_t)len) != 0 && errors++ < 10)
                fprintf(stderr, "rank %d: message %llu from %d has wrong bytes\n", rank,
                        (unsigned long long)seq, src);
        }
        MPI_Waitall((int)nsend, reqs, MPI_STATUSES_IGNORE);
        for (size_t j = 0; j < nsend; ++j) free(bufs[j]);
        if (r == 0 && rank == 0) {
            /* wan.outage starts the link's outage on this line: traffic is flowing then */
            printf("resilience: round 1 of %d done\n", rounds);
            fflush(stdout);
        }
    }
    double t = MPI_Wtime() - t0;
    long tot_err = 0, tot_recv = 0;
    MPI_Reduce(&errors, &tot_err, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&received, &tot_recv, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("resilience: %ld messages checked in %.1f s over %d ranks\n", tot_recv, t, size);
        if (tot_err == 0) printf(" No Errors\n");
        else printf(" Found %ld errors\n", tot_err);
    }
    free(sseq); free(rseq); free(reqs); free(bufs); free(rbuf); free(want);
    MPI_Finalize();
    return tot_err != 0;
}
