// Communicator table. Handles are 0x44000000 | index for live communicators (MPI_COMM_WORLD is
// index 0, MPI_COMM_SELF index 1). Context ids: WORLD uses 0 (point-to-point) and 1
// (collectives), SELF 2 and 3; communicators created later get ids agreed collectively
// (issue 3, IMPI rule: max over members + 1).
#include <vector>

#include "bindings/impl.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

static std::vector<Comm*>& comms() {
    static std::vector<Comm*> v;
    return v;
}

Comm* comm_lookup(MPI_Comm h) {
    uint32_t u = uint32_t(h);
    if ((u & 0xff000000u) != 0x44000000u) return nullptr;
    uint32_t idx = u & 0xffffff;
    auto& v = comms();
    return idx < v.size() ? v[idx] : nullptr;
}

Comm* comm_world_setup(int rank, int size) {
    auto& v = comms();
    auto* w = new Comm();
    w->handle = MPI_COMM_WORLD;
    w->ctx = 0;
    w->rank = rank;
    w->size = size;
    w->world.resize(size);
    for (int i = 0; i < size; ++i) w->world[i] = i;
    w->name = "MPI_COMM_WORLD";
    auto* s = new Comm();
    s->handle = MPI_COMM_SELF;
    s->ctx = 2;
    s->rank = 0;
    s->size = 1;
    s->world = {rank};
    s->name = "MPI_COMM_SELF";
    v = {w, s};
    return w;
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

int Comm_rank(MPI_Comm comm, int* rank) {
    Comm* c = comm_lookup(comm);
    if (!c) return raise(nullptr, make_error(MPI_ERR_COMM, "invalid communicator 0x%x", unsigned(comm)));
    *rank = c->rank;
    return MPI_SUCCESS;
}
int Comm_size(MPI_Comm comm, int* size) {
    Comm* c = comm_lookup(comm);
    if (!c) return raise(nullptr, make_error(MPI_ERR_COMM, "invalid communicator 0x%x", unsigned(comm)));
    *size = c->size;
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
