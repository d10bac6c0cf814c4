/* coll_loop: one small collective called N times in a row, for instruction counts.
 *
 *   coll_loop barrier|bcast|allreduce|alltoall|allgather BYTES N
 *
 * bench/count-coll-instr.sh runs it with one rank under callgrind, counting only inside the
 * collective's MPI entry point, and divides by N: instructions per call on a shared machine,
 * where timings move by 30 % from run to run. BYTES as coll_bench.c counts them (per rank for
 * alltoall/allgather; the whole vector for bcast/allreduce, MPI_FLOAT sum). Standard MPI only.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_coll.h"

int main(int argc, char **argv)
{
    static char sbuf[65536], rbuf[65536];
    MPI_Init(&argc, &argv);
    if (argc < 4) {
        fprintf(stderr, "usage: coll_loop COLL BYTES N\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *c = argv[1];
    int bytes = atoi(argv[2]), n = atoi(argv[3]), size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (bytes < 0 || bytes * size > (int)sizeof rbuf) {
        fprintf(stderr, "coll_loop: BYTES x ranks must be within %zu\n", sizeof rbuf);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(sbuf, 1, sizeof sbuf);
    for (int i = 0; i < n; ++i) {
        if (bench_coll(c, sbuf, rbuf, bytes) != 0) {
            fprintf(stderr, "coll_loop: unknown collective %s\n", c);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Finalize();
    return 0;
}
