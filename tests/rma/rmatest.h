/* rmatest.h: the small harness of the one-sided tests (standard MPI only, so the programs also
 * run under MPICH and Open MPI). CHECK counts a failure and prints it at once; rt_finish sums the
 * failures over MPI_COMM_WORLD, rank 0 prints " No Errors" or the count, and the exit status says
 * the same. Window flavors are named on the command line (rt_flavor). */
#ifndef RMATEST_H
#define RMATEST_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rt_rank, rt_size, rt_errs;

#define CHECK(cond, ...)                                                           \
    do {                                                                           \
        if (!(cond)) {                                                             \
            ++rt_errs;                                                             \
            fprintf(stderr, "[rank %d] FAIL %s:%d: %s: ", rt_rank, __FILE__,       \
                    __LINE__, #cond);                                              \
            fprintf(stderr, __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                 \
        }                                                                          \
    } while (0)

static void rt_init(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rt_size);
}

static int rt_finish(void) {
    int total = 0;
    MPI_Allreduce(&rt_errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rt_rank == 0) {
        if (total == 0) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
        fflush(stdout);
    }
    MPI_Finalize();
    return total != 0;
}

/* A window of `n` bytes of the flavor named by `flavor` ("create", "allocate", "dynamic",
 * "shared"); *base is this rank's memory. For dynamic windows the memory is attached and every
 * rank's address is gathered in *addrs (displacements are addresses there); otherwise *addrs
 * holds zeros and displacements count from the window base. */
typedef struct {
    MPI_Win win;
    char *base;
    MPI_Aint *addrs;
    int dynamic;
    void *own;
} rt_win;

static inline rt_win rt_win_make(const char *flavor, MPI_Aint n, int disp_unit, MPI_Comm comm) {
    rt_win w;
    int size;
    memset(&w, 0, sizeof w);
    MPI_Comm_size(comm, &size);
    w.addrs = (MPI_Aint *)calloc((size_t)size, sizeof(MPI_Aint));
    if (!strcmp(flavor, "allocate")) {
        MPI_Win_allocate(n, disp_unit, MPI_INFO_NULL, comm, &w.base, &w.win);
    } else if (!strcmp(flavor, "shared")) {
        MPI_Win_allocate_shared(n, disp_unit, MPI_INFO_NULL, comm, &w.base, &w.win);
    } else if (!strcmp(flavor, "dynamic")) {
        MPI_Aint a;
        w.dynamic = 1;
        w.own = malloc((size_t)n + 1);
        w.base = (char *)w.own;
        MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &w.win);
        MPI_Win_attach(w.win, w.base, n);
        MPI_Get_address(w.base, &a);
        MPI_Allgather(&a, 1, MPI_AINT, w.addrs, 1, MPI_AINT, comm);
    } else {
        w.own = malloc((size_t)n + 1);
        w.base = (char *)w.own;
        MPI_Win_create(w.base, n, disp_unit, MPI_INFO_NULL, comm, &w.win);
    }
    return w;
}

/* Displacement of element `i` (of `unit` bytes) at rank `r`. */
static inline MPI_Aint rt_disp(const rt_win *w, int r, MPI_Aint i, int unit) {
    return w->dynamic ? w->addrs[r] + i * unit : i;
}

/* A spin lock on the long long at `lock` of rank 0 taken with MPI_Compare_and_swap (0 -> mine),
 * then a plain get-increment-put of the long long at `ctr` under it; the caller releases the
 * lock (the tests release it in different ways). Inside a passive-target epoch on rank 0. */
static inline void rt_cas_locked_incr(MPI_Win win, MPI_Aint lock, MPI_Aint ctr, long long mine) {
    long long zero = 0, prev = -1, v = 0;
    do {
        MPI_Compare_and_swap(&mine, &zero, &prev, MPI_LONG_LONG, 0, lock, win);
        MPI_Win_flush(0, win);
    } while (prev != 0);
    MPI_Get(&v, 1, MPI_LONG_LONG, 0, ctr, 1, MPI_LONG_LONG, win);
    MPI_Win_flush(0, win);
    ++v;
    MPI_Put(&v, 1, MPI_LONG_LONG, 0, ctr, 1, MPI_LONG_LONG, win);
    MPI_Win_flush(0, win);
}

static inline void rt_win_free(rt_win *w) {
    if (w->dynamic) MPI_Win_detach(w->win, w->base);
    MPI_Win_free(&w->win);
    free(w->own);
    free(w->addrs);
}

#endif
