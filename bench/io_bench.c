/* io_bench: collective write (and read back) of a 2-D block-distributed array of doubles through
 * a subarray view, the MPI-IO pattern of issue 15 (standard MPI only; bench/compare-io.sh builds
 * it with wanmpi, Open MPI and MPICH).
 *
 *   io_bench FILE [MIB] [REPS] [ROWS_FIRST]
 *
 * The global array is N x N doubles with N*N*8 = MIB MiB (default 256), the ranks a
 * MPI_Dims_create grid, each holding one contiguous block; element (i, j) = i*N + j, so every
 * library writes the same bytes. Each repetition: open (create), set_view(subarray),
 * write_all, close; the time is from before open to after close (max over ranks), best of REPS
 * (default 3). Then one read_all of the file, checked. Output (rank 0):
 *   write_s=<best seconds> write_MBps=<MB/s> read_s=<seconds> check=<ok|BAD>
 * The file is left in place so that the script can cmp it between libraries.
 * IO_BENCH_HINTS="key=value,key=value" passes info hints (e.g. cb_nodes=1,cb_buffer_size=...). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

int main(int argc, char **argv)
{
    int rank, size, dims[2] = {0, 0}, gs[2], ls[2], st[2], rep, reps, bad = 0, allbad;
    long mib, n, lr, lc, i, j;
    double *a, t0, t, best = 1e30, tr;
    MPI_Datatype ft;
    MPI_File fh;
    MPI_Info info = MPI_INFO_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: io_bench FILE [MIB] [REPS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mib = argc > 2 ? atol(argv[2]) : 256;
    reps = argc > 3 ? atoi(argv[3]) : 3;
    n = (long)sqrt((double)mib * 1048576.0 / 8.0);
    MPI_Dims_create(size, 2, dims);
    n = n / (dims[0] * dims[1]) * (dims[0] * dims[1]);
    lr = n / dims[0];
    lc = n / dims[1];
    gs[0] = (int)n;
    gs[1] = (int)n;
    ls[0] = (int)lr;
    ls[1] = (int)lc;
    st[0] = (int)((rank / dims[1]) * lr);
    st[1] = (int)((rank % dims[1]) * lc);
    a = malloc((size_t)(lr * lc) * sizeof(double));
    for (i = 0; i < lr; i++)
        for (j = 0; j < lc; j++)
            a[i * lc + j] = (double)((st[0] + i) * n + st[1] + j);
    if (getenv("IO_BENCH_HINTS")) {
        char *h = strdup(getenv("IO_BENCH_HINTS")), *tok, *save = NULL;
        MPI_Info_create(&info);
        for (tok = strtok_r(h, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(tok, '=');
            if (eq) {
                *eq = 0;
                MPI_Info_set(info, tok, eq + 1);
            }
        }
        free(h);
    }
    MPI_Type_create_subarray(2, gs, ls, st, MPI_ORDER_C, MPI_DOUBLE, &ft);
    MPI_Type_commit(&ft);
    for (rep = 0; rep < reps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
        MPI_File_set_view(fh, 0, MPI_DOUBLE, ft, "native", info);
        MPI_File_write_all(fh, a, (int)(lr * lc), MPI_DOUBLE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (t < best)
            best = t;
    }
    memset(a, 0, (size_t)(lr * lc) * sizeof(double));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, info, &fh);
    MPI_File_set_view(fh, 0, MPI_DOUBLE, ft, "native", info);
    MPI_File_read_all(fh, a, (int)(lr * lc), MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    tr = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &tr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (i = 0; i < lr; i++)
        for (j = 0; j < lc; j++)
            if (a[i * lc + j] != (double)((st[0] + i) * n + st[1] + j))
                bad++;
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("n=%ld write_s=%.4f write_MBps=%.1f read_s=%.4f check=%s\n", n, best,
               (double)n * n * 8 / best / 1e6, tr, allbad ? "BAD" : "ok");
    MPI_Type_free(&ft);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    free(a);
    MPI_Finalize();
    return allbad != 0;
}
