/* part: MPI 4.0 partitioned communication between ring neighbors. Each case runs ROUNDS rounds
 * of one persistent Psend_init/Precv_init pair with new data each round; the sender readies its
 * partitions out of order (last to first, then with Pready_range and Pready_list in shuffled
 * chunks) while the receiver polls MPI_Parrived and checks each partition as soon as it says it
 * has arrived. Cases: same partitioning on both sides; a receiver with fewer, larger partitions
 * than the sender (and one with more, smaller ones); a strided (non-contiguous) datatype on both
 * sides, alike and differently partitioned; two channels with different tags initialized in
 * opposite orders on the two sides (matched by tag); MPI_PROC_NULL. Then error classes:
 * Pready of a partition out of range (MPI_ERR_ARG), on a receive request and on an inactive
 * request (MPI_ERR_REQUEST), Psend_init with MPI_ANY_TAG (MPI_ERR_TAG), and a size mismatch
 * reported by the receive (MPI_ERR_TRUNCATE). */
#include "mpi4test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 3

static int size;



static int val(int round, int from, int i) { return 100000 * round + 1000 * from + i; }

/* Element i of the message lives at buf[i * stride]. */
static void one_case(const char* name, int sparts, int rparts, int total, int stride, int mode) {
    int right = (rank + 1) % size, left = (rank - 1 + size) % size, round, i, p;
    int *sbuf = malloc(sizeof(int) * total * stride), *rbuf = malloc(sizeof(int) * total * stride);
    int *order = malloc(sizeof(int) * sparts), *seen = malloc(sizeof(int) * rparts);
    MPI_Datatype t = MPI_INT;
    MPI_Request sreq, rreq;
    if (stride > 1) {
        MPI_Type_vector(1, 1, stride, MPI_INT, &t);
        MPI_Type_create_resized(t, 0, (MPI_Aint)(stride * sizeof(int)), &t);
        MPI_Type_commit(&t);
    }
    MPI_Psend_init(sbuf, sparts, total / sparts, t, right, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq);
    MPI_Precv_init(rbuf, rparts, total / rparts, t, left, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq);
    for (round = 0; round < ROUNDS; round++) {
        int arrived = 0, rc;
        for (i = 0; i < total * stride; i++) rbuf[i] = -1, sbuf[i] = -2;
        for (i = 0; i < total; i++) sbuf[i * stride] = val(round, rank, i);
        memset(seen, 0, sizeof(int) * rparts);
        MPI_Start(&rreq);
        MPI_Start(&sreq);
        if (mode == 0) {
            for (p = sparts - 1; p >= 0; p--) MPI_Pready(p, sreq); /* reverse order */
        } else {
            /* odd partitions as a list (shuffled), then the even ones as ranges of one */
            int n = 0;
            for (p = sparts - 1; p >= 0; p--)
                if (p % 2) order[n++] = p;
            MPI_Pready_list(n, order, sreq);
            for (p = 0; p < sparts; p += 2) MPI_Pready_range(p, p, sreq);
        }
        while (arrived < rparts) {
            for (p = 0; p < rparts; p++) {
                int flag = 0;
                if (seen[p]) continue;
                rc = MPI_Parrived(rreq, p, &flag);
                CHECK(rc == MPI_SUCCESS, "%s: Parrived %d", name, rc);
                if (!flag) continue;
                seen[p] = 1, arrived++;
                for (i = p * (total / rparts); i < (p + 1) * (total / rparts); i++)
                    CHECK(rbuf[i * stride] == val(round, left, i),
                          "%s round %d partition %d elem %d: %d", name, round, p, i,
                          rbuf[i * stride]);
            }
        }
        {
            MPI_Request both[2] = {sreq, rreq};
            MPI_Status st[2];
            int count = -1;
            rc = MPI_Waitall(2, both, st);
            CHECK(rc == MPI_SUCCESS, "%s: Waitall %d", name, rc);
            CHECK(st[1].MPI_SOURCE == left && st[1].MPI_TAG == 7, "%s: status %d/%d", name,
                  st[1].MPI_SOURCE, st[1].MPI_TAG);
            MPI_Get_count(&st[1], MPI_INT, &count);
            CHECK(count == total, "%s: count %d", name, count);
        }
        for (i = 0; i < total; i++)
            CHECK(rbuf[i * stride] == val(round, left, i), "%s round %d elem %d after wait", name,
                  round, i);
        if (stride > 1)
            for (i = 0; i < total * stride; i++)
                if (i % stride)
                    CHECK(rbuf[i] == -1, "%s: the gaps of the strided type are untouched", name);
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    if (t != MPI_INT) MPI_Type_free(&t);
    free(sbuf), free(rbuf), free(order), free(seen);
}

/* Two channels between the same pair with tags 1 and 2: the sender inits 1 then 2, the receiver
 * 2 then 1. Partitioned operations match by tag in init order, like other receives. */
static void two_channels(void) {
    int right = (rank + 1) % size, left = (rank - 1 + size) % size, i;
    int s1[4], s2[8], r1[4], r2[8];
    MPI_Request q[4];
    for (i = 0; i < 4; i++) s1[i] = 10 + rank, r1[i] = -1;
    for (i = 0; i < 8; i++) s2[i] = 20 + rank, r2[i] = -1;
    MPI_Psend_init(s1, 2, 2, MPI_INT, right, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]);
    MPI_Psend_init(s2, 4, 2, MPI_INT, right, 2, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]);
    MPI_Precv_init(r2, 2, 4, MPI_INT, left, 2, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]);
    MPI_Precv_init(r1, 1, 4, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &q[3]);
    MPI_Startall(4, q);
    MPI_Pready_range(0, 3, q[1]);
    MPI_Pready_range(0, 1, q[0]);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    for (i = 0; i < 4; i++) CHECK(r1[i] == 10 + left, "tag 1 channel [%d]: %d", i, r1[i]);
    for (i = 0; i < 8; i++) CHECK(r2[i] == 20 + left, "tag 2 channel [%d]: %d", i, r2[i]);
    for (i = 0; i < 4; i++) MPI_Request_free(&q[i]);
}

static void proc_null(void) {
    int b[4] = {1, 2, 3, 4}, flag = 0;
    MPI_Request s, r;
    MPI_Status st;
    MPI_Psend_init(b, 2, 2, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
    MPI_Precv_init(b, 2, 2, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    MPI_Start(&s);
    MPI_Start(&r);
    MPI_Pready(1, s);
    MPI_Pready(0, s);
    MPI_Parrived(r, 1, &flag);
    CHECK(flag, "Parrived from MPI_PROC_NULL");
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    MPI_Wait(&r, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "status of a receive from MPI_PROC_NULL: %d",
          st.MPI_SOURCE);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
}

static void errors(void) {
    int right = (rank + 1) % size, left = (rank - 1 + size) % size, rc;
    int b[8] = {0}, c[8] = {0};
    MPI_Request s, r, bad;
    MPI_Status st;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Psend_init(b, 2, 2, MPI_INT, right, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &bad);
    CHECK(cls(rc) == MPI_ERR_TAG, "Psend_init with MPI_ANY_TAG: class %d", cls(rc));
    rc = MPI_Precv_init(b, 0, 2, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &bad);
    CHECK(cls(rc) == MPI_ERR_ARG, "Precv_init with 0 partitions: class %d", cls(rc));
    /* the sender sends 8 ints, the receiver expects 6 */
    MPI_Psend_init(b, 4, 2, MPI_INT, right, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
    MPI_Precv_init(c, 3, 2, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    rc = MPI_Pready(0, s);
    CHECK(cls(rc) == MPI_ERR_REQUEST, "Pready on an inactive request: class %d", cls(rc));
    MPI_Start(&s);
    MPI_Start(&r);
    rc = MPI_Pready(4, s);
    CHECK(cls(rc) == MPI_ERR_ARG, "Pready of partition 4 of 4: class %d", cls(rc));
    rc = MPI_Pready(0, r);
    CHECK(cls(rc) == MPI_ERR_REQUEST, "Pready on a receive: class %d", cls(rc));
    MPI_Pready_range(0, 3, s);
    rc = MPI_Wait(&s, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "the send side completes: %d", rc);
    rc = MPI_Wait(&r, &st);
    CHECK(cls(rc) == MPI_ERR_TRUNCATE, "8 ints into a 6-int partitioned receive: class %d",
          cls(rc));
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char** argv) {
    int total;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    one_case("same", 8, 8, 64, 1, 0);
    one_case("receiver coarser", 8, 2, 64, 1, 1);
    one_case("receiver finer", 2, 8, 64, 1, 0);
    one_case("large", 4, 4, 1 << 18, 1, 1); /* 256 KiB partitions: rendezvous */
    one_case("strided alike", 4, 4, 64, 3, 1);
    one_case("strided coarser", 8, 4, 64, 3, 0);
    two_channels();
    proc_null();
    errors();
    total = mpi4_verdict(MPI_COMM_WORLD);
    MPI_Finalize();
    return total;
}
