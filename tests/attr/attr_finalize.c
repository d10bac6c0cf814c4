/* attr_finalize: MPI_Finalize deletes the attributes of MPI_COMM_SELF (and MPI_COMM_WORLD) first
 * thing, in LIFO order, while MPI is still initialized (MPI 4.0 §11.2.4; the "at_exit" idiom of
 * tools). Each rank checks its own log after MPI_Finalize and exits non-zero on failure; rank 0
 * prints " No Errors" if its log is right (the launcher fails the job if any rank fails). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#define N 12
static int order[N], calls, bad;

static int delete_cb(MPI_Comm comm, int keyval, void *value, void *extra)
{
    int finalized = 1;
    (void)keyval;
    (void)extra;
    MPI_Finalized(&finalized);
    if (finalized || comm != MPI_COMM_SELF)
        bad++;
    if (calls < N)
        order[calls] = (int)(intptr_t)value;
    calls++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int keys[N], i, rank, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (i = 0; i < N; i++)
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_cb, &keys[i], NULL);
    /* set in a scrambled keyval order so creation order and setting order differ */
    for (i = 0; i < N; i++)
        MPI_Comm_set_attr(MPI_COMM_SELF, keys[(i * 5) % N], (void *)(intptr_t)i);
    for (i = 0; i < N; i++)
        MPI_Comm_free_keyval(&keys[i]); /* the attributes stay until finalize */
    MPI_Finalize();
    if (calls != N) {
        printf("[rank %d] %d delete callbacks at MPI_Finalize, expected %d\n", rank, calls, N);
        errs++;
    }
    for (i = 0; i < N && i < calls; i++) {
        if (order[i] != N - 1 - i) {
            printf("[rank %d] delete %d had value %d, expected %d (LIFO)\n", rank, i, order[i],
                   N - 1 - i);
            errs++;
        }
    }
    if (bad) {
        printf("[rank %d] %d callbacks ran after MPI_Finalize or with the wrong communicator\n",
               rank, bad);
        errs++;
    }
    if (rank == 0 && errs == 0)
        printf(" No Errors\n");
    fflush(stdout);
    return errs ? 1 : 0;
}
