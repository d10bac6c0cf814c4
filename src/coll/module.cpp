// Component registry and per-communicator module selection (see coll.hpp).
#include <algorithm>
#include <vector>

#include "base/log.hpp"
#include "coll/coll.hpp"
#include "core/errors.hpp"

namespace wanmpi::coll {

const char* kind_name(Kind k) {
    static const char* const names[kKinds] = {
        "barrier",   "bcast",          "gather",  "gatherv",   "scatter",
        "scatterv",  "allgather",      "allgatherv", "alltoall", "alltoallv",
        "alltoallw", "reduce",         "allreduce",  "reduce_scatter",
        "reduce_scatter_block", "scan", "exscan"};
    return int(k) < kKinds ? names[int(k)] : "?";
}

namespace {
std::vector<const Component*>& components() {
    static std::vector<const Component*> v;
    return v;
}
}  // namespace

Module* make_module(const char* name, CollFn fn) {
    auto* m = new Module();
    m->name = name;
    for (auto& f : m->fn) f = fn;
    m->destroy = [](Module* mm) { delete mm; };
    return m;
}

void register_component(const Component* c) {
    auto& v = components();
    v.push_back(c);
    std::stable_sort(v.begin(), v.end(),
                     [](const Component* a, const Component* b) {
                         return a->priority > b->priority;
                     });
}

Module* modules_select(core::Comm* comm) {
    if (comm->coll) return static_cast<Module*>(comm->coll);
    static bool hooked = false;
    if (!hooked) {
        core::comm_add_destroy_hook(coll_comm_release);
        hooked = true;
    }
    Module* head = nullptr;
    Module* tail = nullptr;
    for (const Component* c : components()) {
        Module* m = c->query(comm);
        if (!m) continue;
        if (tail) tail->next = m;
        else head = m;
        tail = m;
        WANMPI_LOG(debug, "coll: %s uses module %s (priority %d)", comm->name.c_str(), m->name,
                   c->priority);
    }
    bool managed = false;
    for (Module* m = head; m; m = m->next) managed |= m->wan_share != nullptr;
    for (int k = 0; head && !managed && k < kKinds; ++k) {
        Module* impl = head;
        while (impl && !impl->fn[k]) impl = impl->next;
        if (impl && impl->direct[k]) {
            head->lean[k] = impl->direct[k];
            head->lean_mod[k] = impl;
        }
    }
    comm->coll = head;
    return head;
}

void coll_comm_release(core::Comm* comm) {
    auto* m = static_cast<Module*>(comm->coll);
    comm->coll = nullptr;
    while (m) {
        Module* next = m->next;
        if (m->destroy) m->destroy(m);
        m = next;
    }
}

int build_with(Module* from, const Args& a, Sched& s) {
    for (Module* m = from; m; m = m->next)
        if (CollFn f = m->fn[int(a.kind)]) return f(m, a, s);
    return core::make_error(MPI_ERR_INTERN, "no collective module implements %s",
                            kind_name(a.kind));
}

}  // namespace wanmpi::coll
