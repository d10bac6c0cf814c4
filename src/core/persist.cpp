// Persistent requests made of one-shot operations (see persist.hpp).
//
// An active persistent request sits in g_active with the one-shot request of
// its current instance; a progress hook notices when that one completes, moves
// its error into the persistent request's status and releases it. The hook
// reports progress when it completes something, so a waiter that polls never
// sleeps in the kernel past a completion.
#include "core/persist.hpp"

#include <algorithm>
#include <vector>

#include "core/errors.hpp"

namespace wanmpi::core {
namespace {

struct Holder {
    std::unique_ptr<PersistentOp> op;
    Request* self = nullptr;
    Request* inner = nullptr;  // the running instance, while active
};

std::vector<Holder*> g_active;
bool g_hook_added = false;

// The instance is over: the persistent request completes with its error.
void finish(Holder* h) {
    Request* r = h->self;
    r->status.MPI_ERROR = h->inner->status.MPI_ERROR;
    request_release(h->inner);
    h->inner = nullptr;
    r->complete = true;
    if (r->user_freed) request_release(r);  // MPI_Request_free while it ran
}

int hook() {
    if (g_active.empty()) return 0;
    int n = 0;
    for (size_t i = 0; i < g_active.size();) {
        Holder* h = g_active[i];
        if (!h->inner->complete) {
            ++i;
            continue;
        }
        g_active[i] = g_active.back();
        g_active.pop_back();
        finish(h);
        ++n;
    }
    return n;
}

int persistent_start(Request* r) {
    auto* h = static_cast<Holder*>(r->ext);
    Request* inner = nullptr;
    int rc = h->op->start(&inner);
    if (rc != MPI_SUCCESS) return rc;
    h->inner = inner;
    if (inner->complete)
        finish(h);
    else
        g_active.push_back(h);
    return MPI_SUCCESS;
}

void release(void* p) {
    auto* h = static_cast<Holder*>(p);
    // Released only when inactive or complete (request_release's contract), so no
    // instance runs.
    g_active.erase(std::remove(g_active.begin(), g_active.end(), h), g_active.end());
    delete h;
}

}  // namespace

int persistent_new(Comm* comm, std::unique_ptr<PersistentOp> op, MPI_Request* out) {
    if (!g_hook_added) {
        add_progress_hook(hook);
        g_hook_added = true;
    }
    Request* r = request_new(ReqKind::ext);
    if (!r) return make_error(MPI_ERR_INTERN, "out of request handles");
    auto* h = new Holder{std::move(op), r, nullptr};
    r->comm = comm;  // also marks the slot live for request_lookup; errors go to
                     // its handler
    comm_retain(comm);
    r->comm_held = true;
    r->peer = MPI_PROC_NULL;
    r->world_peer = -1;
    r->persistent = true;
    r->active = false;
    r->complete = true;  // inactive
    r->status = MPI_Status{};
    r->ext = h;
    r->ext_free = release;
    r->ext_start = persistent_start;
    *out = request_handle(r);
    return MPI_SUCCESS;
}

}  // namespace wanmpi::core
