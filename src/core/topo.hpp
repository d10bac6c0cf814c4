// Virtual topologies attached to communicators (Comm::topo): Cartesian grids, graphs and
// distributed graphs. A Topo is immutable once attached and shared by duplicates (MPI_Comm_dup
// keeps the topology). Ranks are never reordered (the `reorder` argument is accepted and
// ignored, which the standard allows): rank i of the new communicator is rank i of the old one.
// Threading: under the API lock.
#pragma once

#include <vector>
#include <mpi.h>

#include "core/comm.hpp"

namespace wanmpi::core {

struct Topo {
    int kind = MPI_UNDEFINED;  // MPI_CART, MPI_GRAPH or MPI_DIST_GRAPH
    // MPI_CART
    std::vector<int> dims, periods;
    // MPI_GRAPH: MPI_Graph_create's arrays (the whole graph, as every process gave it)
    std::vector<int> index, edges;
    // MPI_DIST_GRAPH: this process's adjacency
    std::vector<int> sources, sourceweights, destinations, destweights;
    bool weighted = false;
};

// Cartesian coordinates of `rank` (row-major: the last dimension varies fastest).
std::vector<int> cart_coords(const Topo& t, int rank);
// The neighbors for neighbor collectives, in MPI's order: `in` are the processes whose data
// arrives in receive block i, `out` the destinations of send block i. Cartesian: for each
// dimension the negative then the positive neighbor (MPI_PROC_NULL off a non-periodic edge);
// graph: the neighbors of MPI_Graph_neighbors, both ways; distributed graph: sources and
// destinations.
void topo_neighbors(const Comm& c, std::vector<int>& in, std::vector<int>& out);

}  // namespace wanmpi::core
