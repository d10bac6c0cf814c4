/* Graph and distributed graph topologies: Graph_create (with a repeated edge and a self loop,
 * fewer nodes than processes), Graphdims_get, Graph_get, Graph_neighbors(_count) for every node,
 * Graph_map, Topo_test; Dist_graph_create_adjacent (weighted, unweighted, empty) and
 * Dist_graph_create (edges given by processes other than their ends), checked with
 * Dist_graph_neighbors(_count) against the graph built here. */
#include "commtest.h"

/* Node i of an n-node graph: i+1, i-1 (mod n), and node 0 also has itself and 1 again. */
static int graph_nbrs(int i, int n, int *out)
{
    int k = 0;
    out[k++] = (i + 1) % n;
    out[k++] = (i - 1 + n) % n;
    if (i == 0) {
        out[k++] = 0;
        out[k++] = 1 % n;
    }
    return k;
}

static void check_graph(int nnodes)
{
    int *index = (int *)mt_malloc(sizeof(int) * (size_t)nnodes);
    int *edges = (int *)mt_malloc(sizeof(int) * 4 * (size_t)nnodes);
    int i, j, ne = 0, nb[4], got[8], cnt, st, nn, nedges, newrank;
    MPI_Comm g, d;
    for (i = 0; i < nnodes; i++) {
        ne += graph_nbrs(i, nnodes, edges + ne);
        index[i] = ne;
    }
    MPI_Graph_create(MPI_COMM_WORLD, nnodes, index, edges, 0, &g);
    MPI_Graph_map(MPI_COMM_WORLD, nnodes, index, edges, &newrank);
#ifndef OPEN_MPI /* Open MPI 4.1 maps every process, also those outside the graph */
    MT_CHECK((mt_rank < nnodes) == (newrank != MPI_UNDEFINED), "Graph_map gave %d", newrank);
#endif
    if (mt_rank >= nnodes) {
        MT_CHECK(g == MPI_COMM_NULL, "rank outside the graph got a communicator");
        free(index);
        free(edges);
        return;
    }
    MPI_Topo_test(g, &st);
    MT_CHECK(st == MPI_GRAPH, "Topo_test = %d", st);
    MPI_Graphdims_get(g, &nn, &nedges);
    MT_CHECK(nn == nnodes && nedges == ne, "Graphdims_get = (%d, %d), expected (%d, %d)", nn,
             nedges, nnodes, ne);
    {
        int *gi = (int *)mt_malloc(sizeof(int) * (size_t)nnodes);
        int *ge = (int *)mt_malloc(sizeof(int) * (size_t)ne);
        MPI_Graph_get(g, nnodes, ne, gi, ge);
        for (i = 0; i < nnodes; i++)
            MT_CHECK(gi[i] == index[i], "Graph_get index[%d] = %d", i, gi[i]);
        for (i = 0; i < ne; i++)
            MT_CHECK(ge[i] == edges[i], "Graph_get edges[%d] = %d", i, ge[i]);
        free(gi);
        free(ge);
    }
    for (i = 0; i < nnodes; i++) {
        int want = graph_nbrs(i, nnodes, nb);
        MPI_Graph_neighbors_count(g, i, &cnt);
        MT_CHECK(cnt == want, "Graph_neighbors_count(%d) = %d, expected %d", i, cnt, want);
        MPI_Graph_neighbors(g, i, 8, got);
        for (j = 0; j < want && j < cnt; j++)
            MT_CHECK(got[j] == nb[j], "Graph_neighbors(%d)[%d] = %d, expected %d", i, j, got[j],
                     nb[j]);
    }
    MPI_Comm_dup(g, &d);
    MPI_Topo_test(d, &st);
    MT_CHECK(st == MPI_GRAPH, "dup of graph: Topo_test = %d", st);
    MPI_Comm_free(&d);
    MPI_Comm_free(&g);
    free(index);
    free(edges);
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = (const int *)a, *y = (const int *)b;
    return x[0] != y[0] ? x[0] - y[0] : x[1] - y[1];
}

/* Compares (neighbor, weight) multisets. */
static void same_edges(const int *nb, const int *w, int n, const int *wantnb, const int *wantw,
                       int wn, const char *what)
{
    int *a = (int *)mt_malloc(sizeof(int) * 2 * (size_t)(n + 1));
    int *b = (int *)mt_malloc(sizeof(int) * 2 * (size_t)(wn + 1));
    int i;
    MT_CHECK(n == wn, "%s: %d edges, expected %d", what, n, wn);
    if (n == wn) {
        for (i = 0; i < n; i++) {
            a[2 * i] = nb[i];
            a[2 * i + 1] = w ? w[i] : 0;
            b[2 * i] = wantnb[i];
            b[2 * i + 1] = wantw ? wantw[i] : 0;
        }
        qsort(a, (size_t)n, 2 * sizeof(int), cmp_pair);
        qsort(b, (size_t)n, 2 * sizeof(int), cmp_pair);
        for (i = 0; i < 2 * n; i++)
            MT_CHECK(a[i] == b[i], "%s: edge list differs at %d (%d vs %d)", what, i, a[i], b[i]);
    }
    free(a);
    free(b);
}

static void check_dist_graph(void)
{
    MPI_Comm dg;
    int left = (mt_rank - 1 + mt_size) % mt_size, right = (mt_rank + 1) % mt_size;
    int src[4], sw[4], dst[4], dw[4], indeg, outdeg, weighted, st;
    int gs[16], gsw[16], gd[16], gdw[16];
    /* adjacent, weighted: left -> me (weight 10+left), me -> right twice (weights) */
    src[0] = left;
    sw[0] = 10 + left;
    dst[0] = right;
    dw[0] = 10 + mt_rank;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, sw, 1, dst, dw, MPI_INFO_NULL, 0, &dg);
    MPI_Topo_test(dg, &st);
    MT_CHECK(st == MPI_DIST_GRAPH, "Topo_test = %d", st);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    MT_CHECK(indeg == 1 && outdeg == 1 && weighted, "adjacent counts (%d, %d, %d)", indeg, outdeg,
             weighted);
    MPI_Dist_graph_neighbors(dg, 16, gs, gsw, 16, gd, gdw);
    MT_CHECK(gs[0] == left && gsw[0] == 10 + left && gd[0] == right && gdw[0] == 10 + mt_rank,
             "adjacent neighbors (%d w%d, %d w%d)", gs[0], gsw[0], gd[0], gdw[0]);
    MPI_Comm_free(&dg);
    /* adjacent, unweighted, and empty */
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, 1, dst,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    MT_CHECK(indeg == 1 && outdeg == 1 && !weighted, "unweighted counts (%d, %d, %d)", indeg,
             outdeg, weighted);
    MPI_Comm_free(&dg);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, src, MPI_WEIGHTS_EMPTY, 0, dst,
                                   MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    MT_CHECK(indeg == 0 && outdeg == 0, "empty counts (%d, %d)", indeg, outdeg);
    MPI_Comm_free(&dg);

    /* general: the edge i -> (i+1)%n (weight i) is given by process (i+2)%n, and the edge
     * i -> (i+3)%n (weight 100+i) by process i itself; rank 0 also gives 0 -> 0 (weight 7). */
    {
        int sources[3], degrees[3], dests[3], weights[3], n = 0, ne = 0, i;
        int ws[8], wsw[8], wd[8], wdw[8], ni = 0, no = 0;
        int giver = (mt_rank - 2 + 2 * mt_size) % mt_size; /* I give the edge giver -> giver+1 */
        sources[n] = giver;
        degrees[n++] = 1;
        dests[ne] = (giver + 1) % mt_size;
        weights[ne++] = giver;
        sources[n] = mt_rank;
        degrees[n++] = 1;
        dests[ne] = (mt_rank + 3) % mt_size;
        weights[ne++] = 100 + mt_rank;
        if (mt_rank == 0) {
            sources[n] = 0;
            degrees[n++] = 1;
            dests[ne] = 0;
            weights[ne++] = 7;
        }
        MPI_Dist_graph_create(MPI_COMM_WORLD, n, sources, degrees, dests, weights, MPI_INFO_NULL,
                              0, &dg);
        /* expected, from the whole edge list */
        for (i = 0; i < mt_size; i++) {
            int e[3][3] = {{i, (i + 1) % mt_size, i}, {i, (i + 3) % mt_size, 100 + i}, {0, 0, 7}};
            int k;
            for (k = 0; k < (i == 0 ? 3 : 2); k++) {
                if (e[k][0] == mt_rank) {
                    wd[no] = e[k][1];
                    wdw[no++] = e[k][2];
                }
                if (e[k][1] == mt_rank) {
                    ws[ni] = e[k][0];
                    wsw[ni++] = e[k][2];
                }
            }
        }
        MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
        MT_CHECK(weighted, "general dist graph not weighted");
        MPI_Dist_graph_neighbors(dg, 16, gs, gsw, 16, gd, gdw);
        same_edges(gs, gsw, indeg, ws, wsw, ni, "general: in-edges");
        same_edges(gd, gdw, outdeg, wd, wdw, no, "general: out-edges");
        MPI_Comm_free(&dg);
    }
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    check_graph(mt_size);
    if (mt_size > 2)
        check_graph(mt_size - 1);
    check_dist_graph();
    return mt_finalize();
}
