// Process groups: ordered lists of world ranks (every process of a job is in MPI_COMM_WORLD,
// so a world rank names a process). Handles: 0x48000000 | slot; slot 0 is MPI_GROUP_EMPTY, which
// is never destroyed. A group object belongs to its handle (MPI_Group_free destroys it); groups
// are values, so the communicator code copies the rank lists it needs.
// Threading: under the API lock.
#pragma once

#include <vector>
#include <mpi.h>

namespace wanmpi::core {

struct Group {
    std::vector<int> world;  // group rank -> world rank
    // world rank -> group rank (-1: not a member), built on first use
    mutable std::vector<int> index;
    int rank_of(int world_rank) const;
};

// nullptr for MPI_GROUP_NULL, freed and invalid handles.
const Group* group_lookup(MPI_Group h);
// A new group handle over `world` (MPI_GROUP_EMPTY when empty).
MPI_Group group_make(std::vector<int> world);

}  // namespace wanmpi::core
