/* Traffic whose lanes WANMPI_WAN_STATS can judge (issue 12/14, docs/design/lanes.md "Which
 * lane a packet takes"; the judging is wan_test.py's --stats onelane / lanespread):
 *
 *   lane_choice coll|dup|p2p|bursts [CALLS]
 *
 * coll: CALLS (default 300) MPI_Allreduce of 3 ints and CALLS MPI_Alltoall of 2 ints per block
 *       on MPI_COMM_WORLD, every result checked. All eager-sized, so no SYNCACK, no granted
 *       DATA, no striping: each call's packets are matching packets of one collective context,
 *       whose tags are per-call sequence numbers. The rule under test puts all of them on one
 *       lane per link; by tag they would spread over all lanes.
 * dup:  the same on a duplicate of MPI_COMM_WORLD (another collective context; the dup's own
 *       agreement is a few packets in MPI_COMM_WORLD's).
 * p2p:  each rank exchanges with the rank half the world away (another cluster when the
 *       clusters are of equal size) CALLS / 4 rounds of one small message on each of 64 tags,
 *       received per tag in send order with the payload checked: user point-to-point streams
 *       keep one lane per (communicator, tag), so the tags spread over all lanes.
 * bursts: CALLS rounds in which each rank of the first half of the world sends 16 small messages
 *       (tags 0..15) to the rank half the world away, which checks them and sends nothing back,
 *       then both pause 30 ms. The receiver's delayed ACK of a burst's tail is late for the
 *       sender's tail-loss probe on a short link, so TCP retransmits with no loss at all; the
 *       receiver reports the duplicate (D-SACK). WANMPI_WAN_TWICE=auto must not take that for
 *       a loss (judged by wan_test.py --stats notwice); with real loss it must (twice).
 *
 * Standard MPI only; prints " No Errors".
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NTAGS 64

static int check_colls(MPI_Comm comm, int calls) {
    int rank, size, errors = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int* sbuf = malloc(sizeof(int) * 2 * (size_t)size);
    int* rbuf = malloc(sizeof(int) * 2 * (size_t)size);
    for (int i = 0; i < calls; ++i) {
        int v[3] = {rank, i, 1}, r[3];
        MPI_Allreduce(v, r, 3, MPI_INT, MPI_SUM, comm);
        if (r[0] != size * (size - 1) / 2 || r[1] != size * i || r[2] != size) errors++;
    }
    for (int i = 0; i < calls; ++i) {
        for (int p = 0; p < size; ++p) {
            sbuf[2 * p] = rank * 1000 + p;
            sbuf[2 * p + 1] = i;
        }
        MPI_Alltoall(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, comm);
        for (int p = 0; p < size; ++p)
            if (rbuf[2 * p] != p * 1000 + rank || rbuf[2 * p + 1] != i) errors++;
    }
    free(sbuf);
    free(rbuf);
    return errors;
}

static int check_p2p(int rounds) {
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = (rank + size / 2) % size;
    if (peer == rank) return 0;
    int n = rounds * NTAGS;
    int* in = malloc(sizeof(int) * 2 * (size_t)n);
    int* out = malloc(sizeof(int) * 2 * (size_t)n);
    MPI_Request* req = malloc(sizeof(MPI_Request) * 2 * (size_t)n);
    /* Message j goes on tag j % NTAGS in round j / NTAGS; the receives of one tag are posted in
     * send order, so each must get its own round (MPI's order within a (source, tag) stream). */
    for (int j = 0; j < n; ++j)
        MPI_Irecv(&in[2 * j], 2, MPI_INT, peer, j % NTAGS, MPI_COMM_WORLD, &req[j]);
    for (int j = 0; j < n; ++j) {
        out[2 * j] = rank;
        out[2 * j + 1] = j / NTAGS;
        MPI_Isend(&out[2 * j], 2, MPI_INT, peer, j % NTAGS, MPI_COMM_WORLD, &req[n + j]);
    }
    MPI_Waitall(2 * n, req, MPI_STATUSES_IGNORE);
    for (int j = 0; j < n; ++j)
        if (in[2 * j] != peer || in[2 * j + 1] != j / NTAGS) errors++;
    free(in);
    free(out);
    free(req);
    return errors;
}

static int check_bursts(int rounds) {
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int half = size / 2;
    const int sender = rank < half;
    const int peer = sender ? rank + half : rank - half;
    if (peer >= size || (!sender && rank >= 2 * half)) return 0;  /* odd size: the last rests */
    int out[16][2], in[16][2];
    MPI_Request req[16];
    for (int r = 0; r < rounds; ++r) {
        for (int t = 0; t < 16; ++t) {
            if (sender) {
                out[t][0] = rank;
                out[t][1] = r;
                MPI_Isend(out[t], 2, MPI_INT, peer, t, MPI_COMM_WORLD, &req[t]);
            } else {
                MPI_Irecv(in[t], 2, MPI_INT, peer, t, MPI_COMM_WORLD, &req[t]);
            }
        }
        MPI_Waitall(16, req, MPI_STATUSES_IGNORE);
        if (!sender)
            for (int t = 0; t < 16; ++t)
                if (in[t][0] != peer || in[t][1] != r) errors++;
        /* A pause in which nothing goes either way: the last segments' ACKs are delayed. */
        const double until = MPI_Wtime() + 0.030;
        while (MPI_Wtime() < until) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return errors;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char* mode = argc > 1 ? argv[1] : "coll";
    int calls = argc > 2 ? atoi(argv[2]) : 300;
    if (calls < 4) calls = 4;
    if (strcmp(mode, "coll") == 0) {
        errors = check_colls(MPI_COMM_WORLD, calls);
    } else if (strcmp(mode, "dup") == 0) {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        errors = check_colls(dup, calls);
        MPI_Comm_free(&dup);
    } else if (strcmp(mode, "p2p") == 0) {
        errors = check_p2p(calls / 4);
    } else if (strcmp(mode, "bursts") == 0) {
        errors = check_bursts(calls);
    } else {
        if (rank == 0)
            fprintf(stderr, "lane_choice: unknown mode %s (coll, dup, p2p or bursts)\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf(" No Errors\n");
        else
            printf("lane_choice %s: %d errors\n", mode, all);
    }
    MPI_Finalize();
    return all != 0;
}
