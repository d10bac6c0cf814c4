// Progress: one pass over the transports and hooks (poll), and waiting (spin, then block in
// the kernel). See engine.hpp for the contract; the policy knobs are WANMPI_PROGRESS_*.
#include <sys/epoll.h>
#include <unistd.h>

#include "base/clock.hpp"
#include "core/api.hpp"
#include "core/engine_impl.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

// ---- progress ---------------------------------------------------------------------------------
static std::vector<int (*)()>& hooks() {
    static std::vector<int (*)()> h;
    return h;
}
void add_progress_hook(int (*hook)()) { hooks().push_back(hook); }

int coll_post(ReqKind kind, const void* buf, int64_t count, MPI_Datatype dt, int peer, int tag,
              Comm* comm, Request** out) {
    Request* r = request_new(kind);
    if (!r) return make_error(MPI_ERR_INTERN, "out of request handles");
    int rc = request_setup(r, buf, count, dt, peer, tag, comm, Mode::standard);
    if (rc == MPI_SUCCESS) {
        r->ctx = comm->ctx + 1;
        rc = start(r);
    }
    if (rc != MPI_SUCCESS) {
        request_release(r);
        return rc;
    }
    *out = r;
    return MPI_SUCCESS;
}

int poll() {
    int n = 0;
    for (auto& t : g->transports) n += t->progress(*g);
    for (auto h : hooks()) n += h();
    if (!g->cts_q.empty()) {
        std::vector<Engine::Cts> q;
        q.swap(g->cts_q);
        for (auto& c : q) {
            if (c.r->gen != c.gen || c.r->complete) continue;  // failed meanwhile
            g->send_data(c.r, c.rreq, c.want);
            if (--c.r->pending == 0) g->maybe_complete(c.r);
        }
    }
    g->return_credit();
    g->flush_ctrl();
    return n;
}

void wait_until(bool (*done)(void*), void* ctx) {
    if (done(ctx)) return;
    for (;;) {
        int64_t deadline = base::now_ns() + g->spin_ns;
        do {
            for (int i = 0; i < 64; ++i) {
                poll();
                if (done(ctx)) return;
            }
        } while (base::now_ns() < deadline);
        // Block in the kernel until a transport has work (see Transport::prepare_sleep).
        for (auto& t : g->transports) t->prepare_sleep();
        int n = poll();
        if (!done(ctx) && n == 0) {
            epoll_event ev[8];
            bool multi = g_thread_multiple.load(std::memory_order_relaxed);
            if (multi) g_api_lock.unlock();
            // With several threads in MPI another thread may complete our request while we
            // sleep without waking us, so sleep in short slices then.
            int rc = epoll_wait(g->epfd, ev, 8, multi ? 1 : 1000);
            if (multi) g_api_lock.lock();
            for (int i = 0; i < rc; ++i)
                if (ev[i].data.fd == g->wake_fd) {
                    uint64_t v;
                    ssize_t r = read(g->wake_fd, &v, sizeof v);
                    (void)r;
                }
        }
        for (auto& t : g->transports) t->finish_sleep();
        if (done(ctx)) return;
    }
}

}  // namespace wanmpi::core
