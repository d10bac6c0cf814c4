// Progress: one pass over the transports and hooks (poll), and waiting (spin, then block in
// the kernel). See engine.hpp for the contract; the policy knobs are WANMPI_PROGRESS_*.
#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "base/status.hpp"
#include "base/tunables.hpp"
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

bool peer_dead(const Comm* comm, int peer) {
    return g->dead[size_t(comm->peer_world(peer))] != 0;
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

// The waiting policy, in three phases (each restarts after every wake-up):
//  1. spin: poll for WANMPI_PROGRESS_SPIN_US (engine.cpp: 50 us when this host has no more
//     ranks than cores, else 0). The cheapest way to catch a reply that is microseconds away.
//     Adaptive, see below.
//  2. yield: on an oversubscribed host, poll with sched_yield() between passes for up to
//     WANMPI_PROGRESS_YIELD_US. The message we wait for there usually needs another rank of this
//     job to run first; a yield hands it our core at once (a ring of 8 ranks on 2 cores: ~4 us
//     per hop, against ~18 us when every hop is a sleep and a wake-up). But under EEVDF each
//     yield also pushes our deadline a whole slice back, so when unrelated CPU-bound processes
//     share the core, every yield may hand them a full time slice (measured once: a ring 5-20x
//     slower than blocking). So a yield that took longer than YIELD_SLOW_US (someone else ran a
//     real slice) ends the phase at once, and the next YIELD_PENALTY waits skip it: blocking is
//     the better choice on a machine that is busy with other work (it also resets the deadline).
//  3. block in epoll_wait on every transport's wait_fd() until something arrives
//     (Transport::prepare_sleep makes the wake-up race-free). A woken sleeper gets the CPU
//     back quickly, so on a loaded host this is also the fast way to pass a message.
static base::Tunable<int64_t> t_yield_us(
    "PROGRESS", "YIELD_US", -1,
    "Microseconds a waiting rank polls with sched_yield() after spinning and before it blocks "
    "in the kernel, while yields come back quickly (no unrelated process is taking the core). "
    "-1 = automatic: 500 when this host has more ranks than cores, else 0.",
    base::Level::tuner);
static base::Tunable<int64_t> t_yield_slow_us(
    "PROGRESS", "YIELD_SLOW_US", 200,
    "A sched_yield() that takes longer than this many microseconds (an unrelated process ran) "
    "ends the yield phase and makes the next YIELD_PENALTY waits block without yielding "
    "(0 = never give up yielding).",
    base::Level::developer);
static base::Tunable<int64_t> t_yield_penalty(
    "PROGRESS", "YIELD_PENALTY", 16,
    "Waits that skip the yield phase after a slow sched_yield() (see YIELD_SLOW_US).",
    base::Level::developer);
static int yield_penalty = 0;

static int64_t yield_ns() {
    static int64_t v = -1;
    if (v < 0) {
        int64_t us = t_yield_us.get();
        if (us < 0) {
            int me = g->host_of.empty() ? 0 : g->host_of[size_t(g->rank)];
            int local = 0;
            for (int h : g->host_of) local += h == me;
            us = local > std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)) ? 500 : 0;
        }
        v = us * 1000;
    }
    return v;
}

// Adaptive spin. A spin only pays when the awaited message comes from a rank running on
// another core at the same time. When two ranks share one core (the scheduler put them there,
// e.g. because of a synchronous wake-up or load elsewhere), every spin instead keeps the peer
// from running: measured on a 2-rank ping-pong, 70-80 us per message instead of 4.5 us. So
// after kSpinFailLimit waits in a row whose first spin expired, waits go straight to blocking
// (which hands the core to the peer at once), and every kSpinProbe-th wait spins again to find
// out whether spinning has become useful (the peer moved to its own core, or the phase of the
// program changed).
//
// Binding. The adaptive spin limits the damage of sharing a core, but a pair stuck on one core
// in blocking mode still pays a context switch per message (~5 us) where two cores give 0.2 us,
// and the scheduler rarely separates ranks that block (they look half idle). So, as Open MPI
// does by default for up to 2 ranks, a rank binds itself to one core when its host has no more
// ranks than the cores it may use (WANMPI_PROGRESS_BIND=auto), at the end of MPI_Init. Not when
// the launcher or the user already restricted the affinity to fewer cores than the host has, and
// never on an oversubscribed host, where ranks must be free to go wherever a core is idle.
// (It used to happen on the first wait in wait_until. A rank whose waits all ended in the
// collectives' poll-and-yield loop (coll/sched.cpp) never got there and stayed unbound while
// its peer was bound; the scheduler then often ran both on the bound core, each wait spun its
// full 50 us while the peer could not run, and a whole run of 8 B Allreduces cost 57 us each
// instead of 0.5 (about one 2-rank run in three on a loaded host). Binding every rank before its
// first call also keeps a migration out of the first calls.)
static base::Tunable<std::string> t_bind(
    "PROGRESS", "BIND", "auto",
    "Bind each rank to one core: auto (when this host has more than one rank and no more ranks "
    "than usable cores, and the affinity was not restricted already) or none.",
    base::Level::user);
static const bool t_bind_named = (t_bind.set_choices({"auto", "none"}), true);

void bind_once() {
    static bool tried = false;
    if (tried) return;
    tried = true;
    const std::string& mode = t_bind.get();
    if (mode == "none") return;
    if (mode != "auto") {
        WANMPI_LOG(warn, "WANMPI_PROGRESS_BIND must be auto or none, not '%s'; not binding",
                   mode.c_str());
        return;
    }
    int me = g->host_of.empty() ? 0 : g->host_of[size_t(g->rank)];
    int local = 0, index = 0;
    for (size_t r = 0; r < g->host_of.size(); ++r)
        if (g->host_of[r] == me) {
            if (int(r) < g->rank) ++index;
            ++local;
        }
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (local < 2 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = CPU_COUNT(&allowed);
    if (n < online || local > n) return;  // restricted already, or oversubscribed
    for (int cpu = 0, k = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        if (k++ != index) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            WANMPI_LOG(debug, "binding to cpu %d: %s", cpu, base::errno_text(errno).c_str());
        else
            WANMPI_LOG(debug, "bound to cpu %d (local rank %d of %d)", cpu, index, local);
        return;
    }
}

constexpr int kSpinFailLimit = 4;
constexpr unsigned kSpinProbe = 16;
static int spin_fails = 0;
static unsigned spin_probe = 0;

void wait_until(bool (*done)(void*), void* ctx) {
    if (done(ctx)) return;
    bind_once();
    const int64_t ynanos = yield_ns();
    static const int64_t yslow = std::max<int64_t>(0, t_yield_slow_us.get()) * 1000;
    static const int ypenalty = int(std::clamp<int64_t>(t_yield_penalty.get(), 0, 1 << 20));
    int64_t spin = g->spin_ns;
    if (spin > 0 && spin_fails >= kSpinFailLimit && ++spin_probe % kSpinProbe != 0) spin = 0;
    bool first = true;
    for (;;) {
        // spin == 0: straight to blocking, whose prepare_sleep() is followed by one more poll.
        // (A pass over tcp costs a recv() syscall, so even "64 quick polls" would be a 30-60 us
        // spin that starves a peer sharing our core.)
        int64_t t = base::now_ns();
        if (spin > 0) {
            int64_t deadline = t + spin;
            do {
                for (int i = 0; i < 16; ++i) {
                    poll();
                    if (done(ctx)) {
                        if (first) spin_fails = 0;
                        return;
                    }
                }
            } while ((t = base::now_ns()) < deadline);
        }
        if (first && spin > 0 && spin_fails < (1 << 20)) ++spin_fails;
        first = false;
        if (ynanos > 0 && yield_penalty > 0) {
            --yield_penalty;
        } else if (ynanos > 0) {
            int64_t deadline = t + ynanos;
            bool multi = g_thread_multiple.load(std::memory_order_relaxed);
            do {
                if (multi) g_api_lock.unlock();
                sched_yield();
                if (multi) g_api_lock.lock();
                int64_t t1 = base::now_ns();
                for (int i = 0; i < 4; ++i) {
                    poll();
                    if (done(ctx)) return;
                }
                if (yslow > 0 && t1 - t > yslow) {
                    yield_penalty = ypenalty;
                    break;
                }
                t = base::now_ns();
            } while (t < deadline);
        }
        // Block in the kernel until a transport has work (see Transport::prepare_sleep).
        for (auto& tr : g->transports) tr->prepare_sleep();
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
        for (auto& tr : g->transports) tr->finish_sleep();
        // Collect what woke us before deciding to spin or sleep again. A spin after a wake-up
        // does not count as a success: the message that woke us is simply there.
        poll();
        if (done(ctx)) return;
    }
}

}  // namespace wanmpi::core
