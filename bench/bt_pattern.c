/* bt_pattern: the communication pattern of NPB BT (multi-partition), with a memory-touching
 * stand-in for its computation.
 *
 *   bt_pattern [-d CELL_DIM] [-n ITERS] [-r RUNS] [-w WORK] [-q]
 *
 * Ranks form a q x q grid (q = sqrt(ranks); the number of ranks must be a square, as for BT) and
 * each rank owns q cells of CELL_DIM^3 points of 5 doubles (default 32: class A, 64^3, on 4
 * ranks). One iteration is BT's time step:
 *   copy_faces  pack 6 faces (2 layers each), MPI_Irecv from and MPI_Isend to the x/y/z
 *               predecessor and successor, one MPI_Waitall on all 12, unpack;
 *   compute_rhs WORK passes over the whole array;
 *   x/y/z_solve per direction, q stages forward (receive the predecessor's 30 doubles per face
 *               point, WORK passes over the cell, send 30 doubles per face point on: 240 KiB at
 *               CELL_DIM 32), then q stages backward (5 doubles per point: 40 KiB). Receives
 *               are posted one stage ahead and a send buffer is reused only after MPI_Wait, as
 *               in BT.
 *   add         one pass over the array.
 * Messages at CELL_DIM 32: faces 80 KiB, forward 240 KiB, backward 40 KiB. WORK 0 leaves only the
 * packing: communication dominates.
 *
 * A run is ITERS iterations after a warm-up of 2 and a barrier; its time per iteration is the
 * slowest rank's. Each rank also times how long it spent in MPI waits (MPI_Wait/Waitall). The
 * reported values are medians over RUNS runs (defaults: -d 32 -n 10 -r 5 -w 10).
 * Output from rank 0: "bt_pattern <ranks> <cell_dim> <work> <median_us_per_iter> <min_us>
 * <median_wait_us_per_iter> <runs>". */
#include <mpi.h>

#include <math.h>

#include "bench_common.h"

#define NV 5 /* BT's 5 solution components */

static int q, me_i, me_j, cd;
static size_t cell_pts;
static double *u; /* q cells, each (cd+4)^3 points (2 ghost layers per side) of NV doubles */
static double wait_s;

static int rank_of(int i, int j) { return ((i % q + q) % q) * q + ((j % q + q) % q); }

/* Neighbours in BT's multi-partition: successor in x = (i, j+1), in y = (i+1, j), in z =
 * (i+1, j+1) (BT's cell placement is diagonal, so each direction has its own partner). */
static int nbr(int dir, int sign)
{
    switch (dir) {
    case 0: return rank_of(me_i, me_j + sign);
    case 1: return rank_of(me_i + sign, me_j);
    default: return rank_of(me_i + sign, me_j + sign);
    }
}

static double *cell(int c) { return u + (size_t)c * cell_pts * NV; }

/* The stand-in for BT's arithmetic: `passes` read-modify-write sweeps over n doubles. */
static void work(double *p, size_t n, int passes)
{
    for (int k = 0; k < passes; k++)
        for (size_t i = 0; i < n; i++)
            p[i] = p[i] * 0.999 + 1e-3;
}

/* Face d (0..5: x-, x+, y-, y+, z-, z+) of cell c: 2 layers of cd*cd points, strided as in BT. */
static void face_copy(int c, int d, double *buf, int pack)
{
    int e = cd + 4, dir = d / 2, hi = d % 2;
    double *base = cell(c);
    size_t k = 0;
    for (int l = 0; l < 2; l++) {
        int plane = pack ? (hi ? cd + 1 - l : 2 + l) : (hi ? cd + 2 + l : 1 - l);
        for (int a = 2; a < cd + 2; a++)
            for (int b = 2; b < cd + 2; b++) {
                size_t idx = dir == 0 ? ((size_t)plane * e + a) * e + b
                           : dir == 1 ? ((size_t)a * e + plane) * e + b
                                      : ((size_t)a * e + b) * e + plane;
                for (int v = 0; v < NV; v++, k++) {
                    if (pack)
                        buf[k] = base[idx * NV + v];
                    else
                        base[idx * NV + v] = buf[k];
                }
            }
    }
}

static void waitall(int n, MPI_Request *r)
{
    double t = MPI_Wtime();
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
    wait_s += MPI_Wtime() - t;
}

static void wait1(MPI_Request *r)
{
    double t = MPI_Wtime();
    MPI_Wait(r, MPI_STATUS_IGNORE);
    wait_s += MPI_Wtime() - t;
}

static double *fsend[6], *frecv[6], *ssend[2], *srecv[2];
static size_t face_n, fwd_n, bwd_n;

static void copy_faces(int w)
{
    MPI_Request r[12];
    /* BT sends a cell's face only where the neighbouring cell is on another rank: with q cells
     * per rank one of them is at the physical boundary in each direction, so q-1 cells' faces
     * go into each message. */
    int cells = q > 1 ? q - 1 : 1;
    for (int d = 0; d < 6; d++)
        MPI_Irecv(frecv[d], (int)(face_n * cells), MPI_DOUBLE, nbr(d / 2, d % 2 ? -1 : 1), d,
                  MPI_COMM_WORLD, &r[d]);
    for (int d = 0; d < 6; d++) {
        for (int c = 0; c < cells; c++)
            face_copy(c, d, fsend[d] + c * face_n, 1);
        MPI_Isend(fsend[d], (int)(face_n * cells), MPI_DOUBLE, nbr(d / 2, d % 2 ? 1 : -1), d,
                  MPI_COMM_WORLD, &r[6 + d]);
    }
    waitall(12, r);
    for (int d = 0; d < 6; d++)
        for (int c = 0; c < cells; c++)
            face_copy(c + 1 < q ? c + 1 : 0, d, frecv[d] + c * face_n, 0);
    work(u, cell_pts * NV * q, w);
}

/* One direction's solve: q stages forward then q backward, pipelined across the ranks of the
 * direction's ring as BT's x_solve (receive from predecessor, compute the cell, send on). */
static void solve(int dir, int w)
{
    int pred = nbr(dir, -1), succ = nbr(dir, 1);
    MPI_Request rr = MPI_REQUEST_NULL, sr = MPI_REQUEST_NULL;
    int tag = 100 + dir * 10;
    if (q > 1)
        MPI_Irecv(srecv[0], (int)fwd_n, MPI_DOUBLE, pred, tag, MPI_COMM_WORLD, &rr);
    for (int s = 0; s < q; s++) {
        if (s > 0) {
            wait1(&rr);
            if (s + 1 < q)
                MPI_Irecv(srecv[s % 2 ? 1 : 0], (int)fwd_n, MPI_DOUBLE, pred, tag,
                          MPI_COMM_WORLD, &rr);
        }
        work(cell(s), cell_pts * NV, w);
        if (s + 1 < q) {
            wait1(&sr);
            memcpy(ssend[0], cell(s), fwd_n * sizeof(double)); /* fwd_n < a cell */
            MPI_Isend(ssend[0], (int)fwd_n, MPI_DOUBLE, succ, tag, MPI_COMM_WORLD, &sr);
        }
    }
    wait1(&sr);
    tag++;
    if (q > 1)
        MPI_Irecv(srecv[1], (int)bwd_n, MPI_DOUBLE, succ, tag, MPI_COMM_WORLD, &rr);
    for (int s = q - 1; s >= 0; s--) {
        if (s < q - 1) {
            wait1(&rr);
            if (s > 0)
                MPI_Irecv(srecv[1], (int)bwd_n, MPI_DOUBLE, succ, tag, MPI_COMM_WORLD, &rr);
        }
        work(cell(s), cell_pts * NV, w > 1 ? w / 2 : w);
        if (s > 0) {
            wait1(&sr);
            memcpy(ssend[1], cell(s), bwd_n * sizeof(double));
            MPI_Isend(ssend[1], (int)bwd_n, MPI_DOUBLE, pred, tag, MPI_COMM_WORLD, &sr);
        }
    }
    wait1(&sr);
}

static void iteration(int w)
{
    copy_faces(w);
    for (int dir = 0; dir < 3; dir++)
        solve(dir, w);
    work(u, cell_pts * NV * q, 1);
}

int main(int argc, char **argv)
{
    int rank, nranks, iters = 10, runs = 5, w = 10, quick = 0;
    cd = 32;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-d") && i + 1 < argc)
            cd = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-w") && i + 1 < argc)
            w = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
    }
    if (quick) {
        iters = iters > 5 ? 5 : iters;
        runs = runs > 3 ? 3 : runs;
    }
    if (runs < 1 || runs > 1000)
        runs = 7;
    q = (int)(sqrt((double)nranks) + 0.5);
    if (q * q != nranks || cd < 4) {
        if (rank == 0)
            fprintf(stderr, "bt_pattern: needs a square number of ranks and -d >= 4\n");
        MPI_Finalize();
        return 1;
    }
    me_i = rank / q;
    me_j = rank % q;
    cell_pts = (size_t)(cd + 4) * (cd + 4) * (cd + 4);
    u = (double *)bench_alloc(cell_pts * NV * q * sizeof(double));
    face_n = (size_t)cd * cd * 2 * NV;
    fwd_n = (size_t)cd * cd * 30;
    bwd_n = (size_t)cd * cd * NV;
    for (int d = 0; d < 6; d++) {
        fsend[d] = (double *)bench_alloc(face_n * (q > 1 ? q - 1 : 1) * sizeof(double));
        frecv[d] = (double *)bench_alloc(face_n * (q > 1 ? q - 1 : 1) * sizeof(double));
    }
    for (int i = 0; i < 2; i++) {
        ssend[i] = (double *)bench_alloc(fwd_n * sizeof(double));
        srecv[i] = (double *)bench_alloc(fwd_n * sizeof(double));
    }
    if (rank == 0)
        printf("# bt_pattern: %d ranks, %d cells of %d^3 per rank, work %d; messages: faces %zu B,"
               " forward %zu B, backward %zu B\n"
               "# ranks cell_dim work median_us_per_iter min_us median_wait_us_per_iter runs\n",
               nranks, q, cd, w, face_n * (q > 1 ? q - 1 : 1) * 8, fwd_n * 8, bwd_n * 8);

    double *t = (double *)malloc(sizeof(double) * runs), *tw = (double *)malloc(sizeof(double) * runs);
    for (int i = 0; i < 2; i++)
        iteration(w);
    for (int r = 0; r < runs; r++) {
        double mine[2], all[2];
        MPI_Barrier(MPI_COMM_WORLD);
        wait_s = 0;
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            iteration(w);
        mine[0] = (MPI_Wtime() - t0) / iters;
        mine[1] = wait_s / iters;
        MPI_Reduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        t[r] = all[0] * 1e6;
        tw[r] = all[1] * 1e6;
    }
    if (rank == 0) {
        double med = bench_median(t, runs), medw = bench_median(tw, runs);
        printf("bt_pattern %d %d %d %.1f %.1f %.1f %d\n", nranks, cd, w, med, t[0], medw, runs);
    }
    free(t);
    free(tw);
    MPI_Finalize();
    return 0;
}
