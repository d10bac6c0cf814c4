// Communicators as the engine sees them. Owned by core; the communicator operations (dup,
// split, create, intercommunicators, topologies, attributes) build and free these objects.
//
// Invariants the engine relies on:
//   - `world[i]` is the world rank of rank i of the local group; `rank` indexes it;
//   - for an intercommunicator (`inter`), `remote_world[i]` is the world rank of rank i of the
//     remote group; point-to-point peers name remote ranks, and a message carries the sender's
//     rank in its local group (what the receiver sees as MPI_SOURCE);
//   - `ctx` is the same on every member and unique among the communicators a process belongs to;
//     ctx+1 is the collective context. Context ids are allocated in steps of 2.
// Handles: 0x44000000 | index into the table in comm.cpp (WORLD 0, SELF 1).
// Threading: under the API lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <mpi.h>

namespace wanmpi::core {

struct Comm {
    MPI_Comm handle = MPI_COMM_NULL;
    uint32_t ctx = 0;               // point-to-point context id; ctx+1 is for collectives
    int rank = 0;
    int size = 0;
    std::vector<int> world;         // local group: comm rank -> world rank
    bool inter = false;
    std::vector<int> remote_world;  // intercommunicator: remote rank -> world rank
    MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
    std::string name;
    uint32_t coll_seq = 0;          // collectives started on this communicator (tag derivation)
    void* coll = nullptr;           // collective module state (src/coll), owned by that layer
    int refs = 1;                   // user handle + pending operations (freed when 0)

    int remote_size() const { return inter ? int(remote_world.size()) : size; }
    // The world rank of point-to-point peer `r` (a remote rank for intercommunicators).
    int peer_world(int r) const { return inter ? remote_world[size_t(r)] : world[size_t(r)]; }
};

Comm* comm_lookup(MPI_Comm h);

}  // namespace wanmpi::core
