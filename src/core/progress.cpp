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

// The waiting policy, one for every wait in the library (point-to-point, requests, and the
// blocking collectives, which pass their own numbers: coll/sched.cpp), in three phases that
// restart after every wake-up:
//  1. spin: poll until WaitPolicy::spin_ns passed without progress. Point-to-point:
//     WANMPI_PROGRESS_SPIN_US (engine_init.cpp: 50 us when this host has no more ranks than
//     cores, else 0), adaptive (below). The cheapest way to catch a reply microseconds away.
//  2. yield: poll with sched_yield() between passes until WaitPolicy::yield_ns passed without
//     progress. Point-to-point only on an oversubscribed host (WANMPI_PROGRESS_YIELD_US, auto
//     500 us); small blocking collectives everywhere (WANMPI_COLL_YIELD_US, 1000 us). The
//     message we wait for there usually needs another rank of this job to run first, and a yield
//     hands it our core at once (a ring of 8 ranks on 2 cores: ~4 us per hop, against ~18 us
//     when every hop is a sleep and a wake-up; small allreduce/alltoall at 4 ranks: 5-10 us
//     against 50-100). But when unrelated programs share the core, each yield may give them a
//     whole time slice (under EEVDF a yield also pushes our deadline a slice back; measured once:
//     a ring 5-20x slower than blocking), and the scheduler favours a sleeper when it wakes. So
//     the governor below watches the yields after which nothing had arrived (a long yield that
//     brought messages was a peer doing our work): when they average more than
//     WANMPI_PROGRESS_YIELD_SLOW_US, no wait yields for the next 200 ms.
//  3. block in epoll_wait on every transport's wait_fd() until something arrives
//     (Transport::prepare_sleep makes the wake-up race-free). A woken sleeper gets the CPU
//     back quickly, so on a loaded host this is also the fast way to pass a message.
// (Until 2026-11 the blocking collectives had a loop of their own for phases 1-2, with its own
// governor; the two did the same job with different rules and are one loop now.)
static base::Tunable<int64_t> t_yield_us(
    "PROGRESS", "YIELD_US", -1,
    "Microseconds a waiting rank polls with sched_yield() after spinning and before it blocks "
    "in the kernel, counted from the last progress. -1 = automatic: 500 when this host has more "
    "ranks than cores, else 0. (Blocking collectives: WANMPI_COLL_YIELD_US.)",
    base::Level::tuner);
static base::Tunable<int64_t> t_yield_slow_us(
    "PROGRESS", "YIELD_SLOW_US", 200,
    "When the sched_yield() calls after which no message had arrived take this many "
    "microseconds on average (other programs get whole time slices: the host is loaded), no "
    "wait yields for the next 200 ms; they sleep instead (0 = never stop yielding).",
    base::Level::developer);

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

namespace {
// How yielding is going: a moving average of the time a sched_yield() takes when nothing
// arrived during it. Our own ranks hand the core back within microseconds; unrelated runnable
// programs keep it for a slice.
struct YieldGovernor {
    double avg_ns = 0;
    int64_t off_until_ns = 0;
    bool allowed(int64_t now) const { return now >= off_until_ns; }
    // Returns false when yielding should stop now.
    bool record(int64_t took_ns, int64_t now) {
        static const double slow_ns = double(std::max<int64_t>(0, t_yield_slow_us.get())) * 1000;
        if (slow_ns <= 0) return true;
        avg_ns += (double(took_ns) - avg_ns) * 0.0625;
        if (avg_ns > slow_ns) {
            off_until_ns = now + 200'000'000;
            avg_ns = 0;
            return false;
        }
        return true;
    }
} g_yield;
}  // namespace

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

void wait_until(bool (*done)(void*), void* ctx, const WaitPolicy* w) {
    if (done(ctx)) return;
    bind_once();
    const bool adaptive = !w || w->spin_ns < 0;
    int64_t spin = adaptive ? g->spin_ns : w->spin_ns;
    if (adaptive && spin > 0 && spin_fails >= kSpinFailLimit && ++spin_probe % kSpinProbe != 0)
        spin = 0;
    const int64_t ynanos = w && w->yield_ns >= 0 ? w->yield_ns : yield_ns();
    bool first = true;
    for (;;) {
        // 1. spin. spin == 0: on to yielding or blocking, whose prepare_sleep() is followed by one
        // more poll. (A pass over tcp costs a recv() syscall, so even "64 quick polls" would be
        // a 30-60 us spin that starves a peer sharing our core.)
        int64_t t = base::now_ns();
        if (spin > 0) {
            int64_t last = t;
            do {
                int n = 0;
                for (int i = 0; i < 16; ++i) {
                    n += poll();
                    if (done(ctx)) {
                        if (first && adaptive) spin_fails = 0;
                        return;
                    }
                }
                t = base::now_ns();
                if (n > 0) last = t;
            } while (t - last < spin);
        }
        if (first && adaptive && spin > 0 && spin_fails < (1 << 20)) ++spin_fails;
        first = false;
        // 2. yield, while the governor allows it.
        if (ynanos > 0 && g_yield.allowed(t)) {
            const bool multi = g_thread_multiple.load(std::memory_order_relaxed);
            int64_t last = t;
            for (;;) {
                if (multi) g_api_lock.unlock();
                sched_yield();
                if (multi) g_api_lock.lock();
                const int64_t took = base::now_ns() - t;
                int n = 0;
                for (int i = 0; i < 4; ++i) {
                    n += poll();
                    if (done(ctx)) return;
                }
                t = base::now_ns();
                if (!g_yield.record(n > 0 ? 0 : took, t)) break;
                if (n > 0) last = t;
                else if (t - last >= ynanos) break;
            }
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
