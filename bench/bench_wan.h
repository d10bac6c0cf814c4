/* bench_wan.h: what the WAN benchmark programs (relay_kernels.c, pacing_bench.c) need to know
 * about the emulated sites, in one place. Include after <mpi.h> and bench_common.h. */
#ifndef BENCH_WAN_H
#define BENCH_WAN_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Cluster of every world rank from its processor name (wanemu hosts are c<I>h<J>), -1 where
 * the name says nothing; collective over MPI_COMM_WORLD. The caller frees the array. */
static inline int *bench_find_clusters(int size)
{
    char name[MPI_MAX_PROCESSOR_NAME + 1] = {0};
    int len = 0, me = -1, c, h;
    int *cluster_of = malloc(sizeof(int) * (size_t)size);
    MPI_Get_processor_name(name, &len);
    if (sscanf(name, "c%dh%d", &c, &h) == 2) me = c;
    MPI_Allgather(&me, 1, MPI_INT, cluster_of, 1, MPI_INT, MPI_COMM_WORLD);
    return cluster_of;
}

/* The first rank of the last cluster (the default partner of rank 0), or size / 2 when the
 * clusters are unknown. */
static inline int bench_default_peer(const int *cluster_of, int size)
{
    int last = -1, peer = -1;
    for (int r = 0; r < size; ++r)
        if (cluster_of[r] < 0) return size / 2;
        else if (cluster_of[r] > last) last = cluster_of[r];
    for (int r = 0; r < size && peer < 0; ++r)
        if (cluster_of[r] == last) peer = r;
    return peer > 0 ? peer : size / 2;
}

/* The common start of a WAN benchmark: at least 2 ranks (else a message on rank 0, then
 * MPI_Finalize and exit status 1), the clusters, and the pair of ranks (*me, *peer) the
 * point-to-point tests use: the caller's choice when valid, else rank 0 and
 * bench_default_peer. Returns the clusters (free them). */
static inline int *bench_wan_setup(const char *prog, int rank, int size, int *me, int *peer)
{
    int *cluster_of;
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "%s: needs at least 2 ranks\n", prog);
        MPI_Finalize();
        exit(1);
    }
    cluster_of = bench_find_clusters(size);
    if (*me < 0 || *me >= size) *me = 0;
    if (*peer < 0 || *peer >= size || *peer == *me) *peer = bench_default_peer(cluster_of, size);
    return cluster_of;
}

#endif
