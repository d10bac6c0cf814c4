/* MPI_Win_allocate_shared: one segment per host, contiguous parts in rank order; every rank
 * loads and stores its neighbours' parts directly (MPI_Win_shared_query), synchronised with
 * MPI_Win_sync and barriers (the unified model), and RMA operations on the same memory agree
 * with the loads. Also MPI_Win_shared_query(MPI_PROC_NULL) and a zero-size part. */
#include "rmatest.h"

int main(int argc, char **argv) {
    rt_init(&argc, &argv);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nr, ns;
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &ns);
    MPI_Aint mysize = nr == 1 ? 0 : 100 * sizeof(int); /* rank 1's part is empty */
    int *mine = NULL;
    MPI_Win win;
    MPI_Win_allocate_shared(mysize, sizeof(int), MPI_INFO_NULL, node, &mine, &win);
    int model = 0, *pm = NULL, flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &pm, &flag);
    if (flag) model = *pm;
    CHECK(flag && model == MPI_WIN_UNIFIED, "memory model %d", model);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < (int)(mysize / sizeof(int)); ++i) mine[i] = nr * 1000 + i;
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);
    for (int r = 0; r < ns; ++r) {
        MPI_Aint sz;
        int du;
        int *p;
        MPI_Win_shared_query(win, r, &sz, &du, &p);
        CHECK(du == (int)sizeof(int), "disp_unit %d", du);
        CHECK(sz == (r == 1 ? 0 : 100 * (MPI_Aint)sizeof(int)), "size of rank %d: %ld", r, (long)sz);
        for (int i = 0; i < (int)(sz / sizeof(int)); ++i)
            if (p[i] != r * 1000 + i) {
                CHECK(0, "load rank %d [%d] = %d", r, i, p[i]);
                break;
            }
        if (r > 0 && sz > 0) {
            int *prev;
            MPI_Aint psz;
            MPI_Win_shared_query(win, r - 1, &psz, &du, &prev);
            if (psz > 0)
                CHECK((char *)prev + psz == (char *)p, "parts of %d and %d not contiguous", r - 1, r);
        }
    }
    MPI_Barrier(node);
    /* store into the next non-empty part directly (each rank its own slot), then read it
     * back with MPI_Get */
    int right = (nr + 1) % ns;
    if (right == 1 && ns > 1) right = (right + 1) % ns;
    if (right != nr && ns > 1) {
        MPI_Aint sz;
        int du;
        int *p;
        MPI_Win_shared_query(win, right, &sz, &du, &p);
        p[50 + nr] = -nr - 1;
    }
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);
    if (right != nr && ns > 1) {
        int v = 0;
        MPI_Get(&v, 1, MPI_INT, right, 50 + nr, 1, MPI_INT, win);
        MPI_Win_flush(right, win);
        CHECK(v == -nr - 1, "get after store: %d, want %d", v, -nr - 1);
    }
    MPI_Aint sz;
    int du;
    int *p;
    MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &p);
    CHECK(sz == 100 * (MPI_Aint)sizeof(int), "PROC_NULL query size %ld", (long)sz);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    return rt_finish();
}
