/* bench_coll.h: one small collective on MPI_COMM_WORLD by name, for the programs that time or
 * count a single collective in a loop (coll_loop.c, first_calls.c). Standard MPI only. */
#ifndef BENCH_COLL_H
#define BENCH_COLL_H

#include <mpi.h>
#include <string.h>

/* Runs `name` (barrier, bcast, allreduce, alltoall, allgather) once with `bytes` per rank (root 0;
 * allreduce sums bytes / 4 floats). s and r hold at least size x bytes. Returns 0, or -1 for an
 * unknown name (nothing called). */
static inline int bench_coll(const char *name, void *s, void *r, int bytes)
{
    if (!strcmp(name, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
    else if (!strcmp(name, "bcast")) MPI_Bcast(s, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(name, "allreduce"))
        MPI_Allreduce(s, r, bytes / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(name, "alltoall"))
        MPI_Alltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD);
    else if (!strcmp(name, "allgather"))
        MPI_Allgather(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD);
    else return -1;
    return 0;
}

#endif
