/* pcoll: MPI 4.0 persistent collectives (MPI_X_init and MPI_X_init_c for every blocking
 * collective, neighbor ones included) and the large-count forms MPI_X_c / MPI_IX_c with
 * MPI_Count counts in range. Each persistent request is started ITERS times with new buffer
 * contents (its arguments are fixed at init, the data is read at each start) and every result
 * is checked against values computed here; one MPI_Startall starts a mix of them at once, in a
 * different order on odd ranks (MPI lets ranks start persistent collectives in any order).
 * Then the error classes of bad arguments: MPI_ERR_INFO, MPI_ERR_ROOT, MPI_ERR_COUNT (an
 * MPI_Count displacement beyond what wanmpi's v-collectives take), MPI_ERR_REQUEST. */
#include <limits.h>
#include "mpi4test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 4
#define N 5 /* elements per rank */

static int size;


/* The value rank r contributes at element i in iteration it. */
static int val(int it, int r, int i) { return 1000 * it + 10 * r + i + 1; }

static void run(MPI_Request* req) {
    int rc = MPI_Start(req);
    CHECK(rc == MPI_SUCCESS, "MPI_Start: %d", rc);
    rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "MPI_Wait: %d", rc);
    CHECK(*req != MPI_REQUEST_NULL, "a persistent request stays allocated");
}

static void test_bcast_barrier(int large) {
    int buf[N], it, i, root = size - 1;
    MPI_Request req, breq;
    if (large)
        MPI_Bcast_init_c(buf, (MPI_Count)N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Bcast_init(buf, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &breq);
    for (it = 0; it < ITERS; it++) {
        for (i = 0; i < N; i++) buf[i] = rank == root ? val(it, root, i) : -1;
        run(&req);
        for (i = 0; i < N; i++)
            CHECK(buf[i] == val(it, root, i), "bcast it %d [%d]=%d", it, i, buf[i]);
        run(&breq);
    }
    MPI_Request_free(&req);
    MPI_Request_free(&breq);
    CHECK(req == MPI_REQUEST_NULL, "Request_free sets MPI_REQUEST_NULL");
}

static void test_gather_scatter(int large) {
    int *all = malloc(sizeof(int) * N * size), mine[N], it, i, r, root = 0;
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    MPI_Count* ccounts = malloc(sizeof(MPI_Count) * size);
    MPI_Aint* cdispls = malloc(sizeof(MPI_Aint) * size);
    MPI_Request req[6];
    for (r = 0; r < size; r++) {
        counts[r] = N;
        displs[r] = N * (size - 1 - r); /* reversed blocks in the v variants */
        ccounts[r] = N;
        cdispls[r] = displs[r];
    }
    if (large) {
        MPI_Gather_init_c(mine, N, MPI_INT, all, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req[0]);
        MPI_Gatherv_init_c(mine, N, MPI_INT, all, ccounts, cdispls, MPI_INT, root, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &req[1]);
        MPI_Allgather_init_c(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                             &req[2]);
        MPI_Allgatherv_init_c(mine, N, MPI_INT, all, ccounts, cdispls, MPI_INT, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req[3]);
        MPI_Scatter_init_c(all, N, MPI_INT, mine, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req[4]);
        MPI_Scatterv_init_c(all, ccounts, cdispls, MPI_INT, mine, N, MPI_INT, root, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &req[5]);
    } else {
        MPI_Gather_init(mine, N, MPI_INT, all, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                        &req[0]);
        MPI_Gatherv_init(mine, N, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                         MPI_INFO_NULL, &req[1]);
        MPI_Allgather_init(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req[2]);
        MPI_Allgatherv_init(mine, N, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &req[3]);
        MPI_Scatter_init(all, N, MPI_INT, mine, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                         &req[4]);
        MPI_Scatterv_init(all, counts, displs, MPI_INT, mine, N, MPI_INT, root, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &req[5]);
    }
    for (it = 0; it < ITERS; it++) {
        int k;
        for (k = 0; k < 4; k++) { /* gather(v), allgather(v) */
            int v = k & 1, has = k >= 2 || rank == root;
            for (i = 0; i < N; i++) mine[i] = val(it + k, rank, i);
            for (i = 0; i < N * size; i++) all[i] = -1;
            run(&req[k]);
            if (!has) continue;
            for (r = 0; r < size; r++)
                for (i = 0; i < N; i++) {
                    int at = (v ? displs[r] : N * r) + i;
                    CHECK(all[at] == val(it + k, r, i), "op %d it %d from %d [%d]: %d", k, it, r, i,
                          all[at]);
                }
        }
        for (k = 4; k < 6; k++) { /* scatter(v) */
            int v = k & 1;
            if (rank == root)
                for (r = 0; r < size; r++)
                    for (i = 0; i < N; i++) all[(v ? displs[r] : N * r) + i] = val(it + k, r, i);
            for (i = 0; i < N; i++) mine[i] = -1;
            run(&req[k]);
            for (i = 0; i < N; i++)
                CHECK(mine[i] == val(it + k, rank, i), "scatter%s it %d [%d]: %d", v ? "v" : "", it,
                      i, mine[i]);
        }
    }
    for (i = 0; i < 6; i++) MPI_Request_free(&req[i]);
    free(all), free(counts), free(displs), free(ccounts), free(cdispls);
}

static void test_alltoall(int large) {
    int n = N * size, it, i, r, k;
    int *sb = malloc(sizeof(int) * n), *rb = malloc(sizeof(int) * n);
    int *cnt = malloc(sizeof(int) * size), *dsp = malloc(sizeof(int) * size),
        *bdsp = malloc(sizeof(int) * size);
    MPI_Count* ccnt = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *cdsp = malloc(sizeof(MPI_Aint) * size), *cbdsp = malloc(sizeof(MPI_Aint) * size);
    MPI_Datatype* types = malloc(sizeof(MPI_Datatype) * size);
    MPI_Request req[3];
    for (r = 0; r < size; r++) {
        cnt[r] = N, ccnt[r] = N;
        dsp[r] = N * r, cdsp[r] = dsp[r];
        bdsp[r] = (int)sizeof(int) * N * r, cbdsp[r] = bdsp[r];
        types[r] = MPI_INT;
    }
    if (large) {
        MPI_Alltoall_init_c(sb, N, MPI_INT, rb, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
        MPI_Alltoallv_init_c(sb, ccnt, cdsp, MPI_INT, rb, ccnt, cdsp, MPI_INT, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &req[1]);
        MPI_Alltoallw_init_c(sb, ccnt, cbdsp, types, rb, ccnt, cbdsp, types, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &req[2]);
    } else {
        MPI_Alltoall_init(sb, N, MPI_INT, rb, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
        MPI_Alltoallv_init(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &req[1]);
        MPI_Alltoallw_init(sb, cnt, bdsp, types, rb, cnt, bdsp, types, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &req[2]);
    }
    for (it = 0; it < ITERS; it++)
        for (k = 0; k < 3; k++) {
            /* block for rank r: val(it+k, 100*rank + r, i) */
            for (r = 0; r < size; r++)
                for (i = 0; i < N; i++) sb[N * r + i] = val(it + k, 100 * rank + r, i);
            for (i = 0; i < n; i++) rb[i] = -1;
            run(&req[k]);
            for (r = 0; r < size; r++)
                for (i = 0; i < N; i++)
                    CHECK(rb[N * r + i] == val(it + k, 100 * r + rank, i),
                          "alltoall%d it %d from %d [%d]: %d", k, it, r, i, rb[N * r + i]);
        }
    for (k = 0; k < 3; k++) MPI_Request_free(&req[k]);
    free(sb), free(rb), free(cnt), free(dsp), free(bdsp), free(ccnt), free(cdsp), free(cbdsp),
        free(types);
}

static void test_reductions(int large) {
    int n = N * size, it, i, r, k;
    int *sb = malloc(sizeof(int) * n), *rb = malloc(sizeof(int) * n),
        *rc = malloc(sizeof(int) * size);
    MPI_Count* crc = malloc(sizeof(MPI_Count) * size);
    MPI_Request req[6];
    for (r = 0; r < size; r++) rc[r] = N, crc[r] = N;
    if (large) {
        MPI_Reduce_init_c(sb, rb, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
        MPI_Allreduce_init_c(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
        MPI_Reduce_scatter_init_c(sb, rb, crc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                  &req[2]);
        MPI_Reduce_scatter_block_init_c(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                        &req[3]);
        MPI_Scan_init_c(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[4]);
        MPI_Exscan_init_c(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[5]);
    } else {
        MPI_Reduce_init(sb, rb, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
        MPI_Allreduce_init(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
        MPI_Reduce_scatter_init(sb, rb, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                &req[2]);
        MPI_Reduce_scatter_block_init(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                      &req[3]);
        MPI_Scan_init(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[4]);
        MPI_Exscan_init(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[5]);
    }
    for (it = 0; it < ITERS; it++)
        for (k = 0; k < 6; k++) {
            for (i = 0; i < n; i++) sb[i] = val(it + k, rank, i), rb[i] = -7;
            run(&req[k]);
            for (i = 0; i < N; i++) {
                int lo = 0, hi = size, want = 0, e = (k == 2 || k == 3) ? N * rank + i : i;
                if (k == 0 && rank != 0) break;
                if (k == 4) hi = rank + 1;
                if (k == 5) hi = rank;
                if (k == 5 && rank == 0) break; /* undefined on rank 0 */
                for (r = lo; r < hi; r++) want += val(it + k, r, e);
                CHECK(rb[i] == want, "reduction %d it %d [%d]: %d, want %d", k, it, i, rb[i], want);
            }
        }
    for (k = 0; k < 6; k++) MPI_Request_free(&req[k]);
    free(sb), free(rb), free(rc), free(crc);
}

/* Neighbor collectives on a periodic ring (two neighbors each, the same process twice when
 * size <= 2). */
static void test_neighbor(int large) {
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1}, it, k, i;
    int sb[2 * N], rb[2 * N], cnt[2] = {N, N}, dsp[2] = {0, N};
    MPI_Count ccnt[2] = {N, N};
    MPI_Aint cdsp[2] = {0, N}, bdsp[2] = {0, N * sizeof(int)};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    MPI_Request req[5];
    int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    if (large) {
        MPI_Neighbor_allgather_init_c(sb, N, MPI_INT, rb, N, MPI_INT, ring, MPI_INFO_NULL, &req[0]);
        MPI_Neighbor_allgatherv_init_c(sb, N, MPI_INT, rb, ccnt, cdsp, MPI_INT, ring, MPI_INFO_NULL,
                                       &req[1]);
        MPI_Neighbor_alltoall_init_c(sb, N, MPI_INT, rb, N, MPI_INT, ring, MPI_INFO_NULL, &req[2]);
        MPI_Neighbor_alltoallv_init_c(sb, ccnt, cdsp, MPI_INT, rb, ccnt, cdsp, MPI_INT, ring,
                                      MPI_INFO_NULL, &req[3]);
        MPI_Neighbor_alltoallw_init_c(sb, ccnt, bdsp, types, rb, ccnt, bdsp, types, ring,
                                      MPI_INFO_NULL, &req[4]);
    } else {
        MPI_Neighbor_allgather_init(sb, N, MPI_INT, rb, N, MPI_INT, ring, MPI_INFO_NULL, &req[0]);
        MPI_Neighbor_allgatherv_init(sb, N, MPI_INT, rb, cnt, dsp, MPI_INT, ring, MPI_INFO_NULL,
                                     &req[1]);
        MPI_Neighbor_alltoall_init(sb, N, MPI_INT, rb, N, MPI_INT, ring, MPI_INFO_NULL, &req[2]);
        MPI_Neighbor_alltoallv_init(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, ring,
                                    MPI_INFO_NULL, &req[3]);
        MPI_Neighbor_alltoallw_init(sb, cnt, bdsp, types, rb, cnt, bdsp, types, ring, MPI_INFO_NULL,
                                    &req[4]);
    }
    for (it = 0; it < ITERS; it++)
        for (k = 0; k < 5; k++) {
            /* block 0 goes to the left neighbor, block 1 to the right one (alltoall forms);
             * the allgather forms send block 0 to both */
            for (i = 0; i < N; i++) {
                sb[i] = val(it + k, 2 * rank, i);
                sb[N + i] = val(it + k, 2 * rank + 1, i);
            }
            for (i = 0; i < 2 * N; i++) rb[i] = -1;
            run(&req[k]);
            for (i = 0; i < N; i++) {
                int from_left = k < 2 ? val(it + k, 2 * left, i) : val(it + k, 2 * left + 1, i);
                int from_right = val(it + k, 2 * right, i);
                CHECK(rb[i] == from_left, "neighbor %d it %d left [%d]: %d want %d", k, it, i,
                      rb[i], from_left);
                CHECK(rb[N + i] == from_right, "neighbor %d it %d right [%d]: %d want %d", k, it, i,
                      rb[N + i], from_right);
            }
        }
    for (k = 0; k < 5; k++) MPI_Request_free(&req[k]);
    MPI_Comm_free(&ring);
}

/* A mix started by one MPI_Startall, in another order on odd ranks; also MPI_Testall polling
 * and a blocking collective between the rounds. */
static void test_startall(void) {
    int a[N], b[N], s[N], it, i;
    MPI_Request req[3], odd[3];
    MPI_Bcast_init(a, N, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Allreduce_init(s, b, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &req[2]);
    odd[0] = req[2], odd[1] = req[1], odd[2] = req[0];
    for (it = 0; it < ITERS; it++) {
        int flag = 0;
        for (i = 0; i < N; i++) {
            a[i] = rank == 0 ? val(it, 0, i) : 0;
            s[i] = val(it, rank, i);
            b[i] = -1;
        }
        MPI_Startall(3, rank % 2 ? odd : req);
        while (!flag) MPI_Testall(3, req, &flag, MPI_STATUSES_IGNORE);
        for (i = 0; i < N; i++) {
            CHECK(a[i] == val(it, 0, i), "startall bcast it %d [%d]", it, i);
            CHECK(b[i] == val(it, size - 1, i), "startall allreduce it %d [%d]", it, i);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Wait on an inactive persistent collective returns at once with an empty status. */
    {
        MPI_Status st;
        int rc = MPI_Wait(&req[0], &st);
        CHECK(rc == MPI_SUCCESS && st.MPI_SOURCE == MPI_ANY_SOURCE, "wait on an inactive request");
    }
    for (i = 0; i < 3; i++) MPI_Request_free(&req[i]);
}

/* The nonblocking and blocking large-count forms (counts in range). */
static void test_c_forms(void) {
    int n = N * size, i, r;
    int *sb = malloc(sizeof(int) * n), *rb = malloc(sizeof(int) * n);
    MPI_Count* cnt = malloc(sizeof(MPI_Count) * size);
    MPI_Aint* dsp = malloc(sizeof(MPI_Aint) * size);
    MPI_Request req;
    for (r = 0; r < size; r++) cnt[r] = N, dsp[r] = (MPI_Aint)N * r;
    for (i = 0; i < n; i++) sb[i] = val(1, rank, i), rb[i] = -1;
    MPI_Allreduce_c(sb, rb, (MPI_Count)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < n; i++) {
        int want = 0;
        for (r = 0; r < size; r++) want += val(1, r, i);
        CHECK(rb[i] == want, "Allreduce_c [%d]", i);
    }
    for (i = 0; i < n; i++) rb[i] = -1;
    MPI_Iallgatherv_c(sb, N, MPI_INT, rb, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (r = 0; r < size; r++)
        for (i = 0; i < N; i++)
            CHECK(rb[N * r + i] == val(1, r, i), "Iallgatherv_c from %d [%d]", r, i);
    for (i = 0; i < n; i++) rb[i] = -1;
    MPI_Alltoallv_c(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    for (r = 0; r < size; r++)
        for (i = 0; i < N; i++)
            CHECK(rb[N * r + i] == val(1, r, N * rank + i), "Alltoallv_c from %d [%d]", r, i);
    for (i = 0; i < N; i++) rb[i] = rank == 0 ? 42 + i : -1;
    MPI_Ibcast_c(rb, (MPI_Count)N, MPI_INT, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (i = 0; i < N; i++) CHECK(rb[i] == 42 + i, "Ibcast_c [%d]", i);
    free(sb), free(rb), free(cnt), free(dsp);
}


static void test_errors(void) {
    int buf[4] = {0}, rc;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Count* cnt = malloc(sizeof(MPI_Count) * size);
    MPI_Aint* dsp = malloc(sizeof(MPI_Aint) * size);
    MPI_Info freed;
    int r;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Info_create(&freed);
    MPI_Info_free(&freed);
    freed = (MPI_Info)0x1c000007; /* a handle that is not an info: whatever the encoding */
    rc = MPI_Bcast_init(buf, 1, MPI_INT, size, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    CHECK(cls(rc) == MPI_ERR_ROOT, "Bcast_init bad root: class %d", cls(rc));
    rc = MPI_Allreduce_init(buf, buf + 1, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, freed, &req);
    CHECK(cls(rc) == MPI_ERR_INFO, "Allreduce_init bad info: class %d", cls(rc));
    rc =
        MPI_Reduce_init(buf, buf + 1, -1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    CHECK(cls(rc) == MPI_ERR_COUNT, "Reduce_init negative count: class %d", cls(rc));
    for (r = 0; r < size; r++) cnt[r] = 1, dsp[r] = r;
    dsp[size - 1] = (MPI_Aint)INT_MAX + 10;
    rc = MPI_Allgatherv_c(buf, 1, MPI_INT, buf, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    CHECK(cls(rc) == MPI_ERR_COUNT, "Allgatherv_c displacement > INT_MAX: class %d", cls(rc));
    rc = MPI_Pready(0, MPI_REQUEST_NULL);
    CHECK(cls(rc) == MPI_ERR_REQUEST, "Pready on MPI_REQUEST_NULL: class %d", cls(rc));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    free(cnt), free(dsp);
}

int main(int argc, char** argv) {
    int total, large;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (large = 0; large < 2; large++) {
        test_bcast_barrier(large);
        test_gather_scatter(large);
        test_alltoall(large);
        test_reductions(large);
        test_neighbor(large);
    }
    test_startall();
    test_c_forms();
    test_errors();
    total = mpi4_verdict(MPI_COMM_WORLD);
    MPI_Finalize();
    return total;
}
