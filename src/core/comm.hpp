// Communicators as the engine sees them. Owned by core; the communicator operations (dup,
// split, create, intercommunicators, topologies, attributes) build and free these objects
// (comm.cpp, intercomm.cpp, topo*.cpp; context ids in comm_ctx.cpp, see docs/communicators.md).
//
// Invariants the engine relies on:
//   - `world[i]` is the world rank of rank i of the local group; `rank` indexes it;
//   - for an intercommunicator (`inter`), `remote_world[i]` is the world rank of rank i of the
//     remote group; point-to-point peers name remote ranks, and a message carries the sender's
//     rank in its local group (what the receiver sees as MPI_SOURCE);
//   - `ctx` is the same on every member and unique among the communicators a process belongs to;
//     ctx+1 is the collective context. Context ids are allocated in steps of 2.
// Handles: 0x44000000 | index into the table in comm.cpp (WORLD 0, SELF 1).
//
// Lifetime: `refs` counts the user's handle plus every pending operation that uses the object
// (comm_retain/comm_release). MPI_Comm_free drops the handle at once (the handle becomes invalid,
// attributes are deleted) and the object lives on until the last pending operation releases it;
// then the destroy hooks run (the collective layer frees `coll` there) and it is deleted.
// Tags in the collective context: 0x40000000 and above belong to communicator management
// (context-id agreement, constructors, neighbor collectives; see comm_task.hpp); collective
// algorithms use tags below 0x40000000.
// Threading: under the API lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <mpi.h>

namespace wanmpi::core {

struct Topo;  // topo.hpp

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

    // ---- owned by the communicator code (comm*.cpp, intercomm.cpp, topo*.cpp) ----
    // Intercommunicator: an intracommunicator over the local group (no user handle; its own
    // context id) that carries the local phases of intercommunicator constructors.
    Comm* local = nullptr;
    std::shared_ptr<const Topo> topo;  // Cartesian / graph / distributed graph, or empty
    MPI_Info info = MPI_INFO_NULL;     // hints set by the user (a dup owned by the comm)
    uint32_t mgmt_seq = 0;             // collective constructors started (tag derivation)
    uint32_t nbr_seq = 0;              // neighbor collectives started (tag derivation)
    bool hidden = false;               // `local` of an intercommunicator: not in the table

    int remote_size() const { return inter ? int(remote_world.size()) : size; }
    // The world rank of point-to-point peer `r` (a remote rank for intercommunicators).
    int peer_world(int r) const { return inter ? remote_world[size_t(r)] : world[size_t(r)]; }
};

Comm* comm_lookup(MPI_Comm h);

// Pending operations hold the communicator: comm_retain when they start, comm_release when
// they end. The last release of a freed communicator destroys it.
void comm_retain(Comm* c);
void comm_release(Comm* c);

// Called when a communicator object is destroyed (after MPI_Comm_free and the last pending
// operation), before its memory goes: the collective layer releases `coll` here. Hooks run in
// registration order; register once (e.g. at first use).
void comm_add_destroy_hook(void (*hook)(Comm* c));

// ---- for the communicator code ----------------------------------------------------------------
// Gives `c` a handle in the table (c->handle) and returns it.
MPI_Comm comm_register(Comm* c);
// A new communicator over `world` (intracommunicator) with this process at `rank`, no handle
// yet; ctx 0 until the agreement sets it.
Comm* comm_new(std::vector<int> world, int rank);
// The calling process's rank in `world`, or -1.
int rank_in(const std::vector<int>& world);

}  // namespace wanmpi::core
