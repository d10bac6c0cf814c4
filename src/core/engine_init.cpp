// Engine set-up and tear-down (MPI_Init / MPI_Finalize of the point-to-point engine) and the
// accessors of what it learned at start-up: transports, eager limits, host and cluster layout,
// the IMPI job. Split from engine.cpp (which keeps requests, queues, sending, receiving,
// cancel and buffered sends); both share the Engine of engine_impl.hpp. Called on the main
// thread (engine_init, engine_finalize); the accessors from any thread holding the API lock.
#include "core/engine.hpp"
#include "core/engine_impl.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <sstream>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sched.h>
#include <thread>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "base/tunables.hpp"
#include "core/api.hpp"
#include "core/errors.hpp"
#include "runtime/pmi_client.hpp"
#include "transport/registry.hpp"
#include "core/wan.hpp"
#include "core/wan_rate.hpp"
#include "runtime/impi_startup.hpp"

namespace wanmpi::core {

static base::Tunable<std::string> t_transports(
    "TRANSPORTS", "", "self,shm,tcp",
    "Transports this rank may use (self, shm, tcp); a peer is reached by self, else shm on the "
    "same host, else tcp. E.g. 'self,tcp' sends every message over TCP, even on one host.",
    base::Level::user, nullptr, true);
static base::Tunable<int64_t> t_eager_credit(
    "P2P", "EAGER_CREDIT", 4 << 20,
    "Bytes of eager messages (payload + 64-byte header) a rank may have outstanding at one "
    "receiver before further messages go by rendezvous. Bounds the receiver's memory for "
    "unexpected messages.", base::Level::tuner, nullptr, true);
static base::Tunable<int64_t> t_shm_eager(
    "SHM", "EAGER_MAX", 16384,
    "Largest message sent eagerly between ranks of one host; larger ones use rendezvous "
    "(single copy with process_vm_readv where permitted).", base::Level::tuner);
static base::Tunable<int64_t> t_tcp_eager(
    "TCP", "EAGER_MAX", 65536,
    "Largest message sent eagerly over TCP; larger ones use rendezvous (RTS/CTS, then the "
    "payload straight into the receive buffer).", base::Level::tuner);
static base::Tunable<int64_t> t_self_eager(
    "SELF", "EAGER_MAX", 65536, "Largest message a rank sends to itself eagerly.",
    base::Level::developer);
static base::Tunable<std::string> t_fake_clusters(
    "IMPI", "FAKE_CLUSTERS", "",
    "Developer aid: cluster index of every world rank of a single-cluster job (e.g. '0,0,1,1'), "
    "so that the multi-cluster collective algorithms run on one machine. Ignored in real IMPI "
    "jobs (mpirun -client) and when the list does not have one entry per rank.",
    base::Level::developer);
static base::Tunable<int64_t> t_spin_us(
    "PROGRESS", "SPIN_US", -1,
    "Microseconds a waiting rank polls before it blocks in the kernel. -1 = automatic: 50 when "
    "this host has no more ranks than cores, 0 (block at once) when it is oversubscribed.",
    base::Level::tuner);


// ---- set-up and tear-down ---------------------------------------------------------------------
static std::string host_key() {
    // Ranks are on the same host when they share the kernel (boot id) and the network namespace:
    // ranks in different namespaces are different hosts (that is how wanemu builds sites).
    std::string boot;
    std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
    struct stat st {};
    stat("/proc/self/ns/net", &st);
    return boot + "-" + std::to_string(st.st_ino);
}

static std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, sep))
        if (!item.empty()) out.push_back(item);
    return out;
}

extern Comm* comm_world_setup(int rank, int size);

// Progress hook of the cluster's agent (PMI rank 0 of an IMPI job): checks the impi-server
// connection now and then (and whenever epoll says it is readable: the hook runs on every poll,
// the clock keeps it cheap).
// "transport NAME: WHAT" for a transport's start-up error (transports already name themselves
// in their messages: "shm: ..." would otherwise read "transport shm: shm: ...").
static std::string transport_error(const std::string& name, const std::string& what) {
    const std::string own = name + ": ";
    return "transport " + name + ": " + (what.rfind(own, 0) == 0 ? what.substr(own.size()) : what);
}

static int agent_hook() {
    static int64_t next = 0;
    int64_t now = base::now_ns();
    if (now < next || !g->impi || !g->impi->agent || !g->impi->agent->watching()) return 0;
    next = now + 20 * 1000 * 1000;
    base::Status s = g->impi->agent->poll_server();
    if (s.ok()) return 0;
    std::string msg = "IMPI job lost: " + s.message();
    WANMPI_LOG(error, "%s", msg.c_str());
    pmi_abort(1, msg);
    _exit(1);
}

int engine_init(int required, int* provided) {
    g = new Engine();
    base::Status err;
    g->pmi = runtime::PmiClient::from_env(&err);
    if (!g->pmi) {
        WANMPI_LOG(error, "cannot reach the launcher: %s", err.message().c_str());
        return MPI_ERR_OTHER;
    }
    g->rank = g->pmi->rank();
    g->size = g->pmi->size();
    base::log_set_identity("rank " + std::to_string(g->rank));
    g->main_thread = std::this_thread::get_id();
    g->level = std::clamp(required, int(MPI_THREAD_SINGLE), int(MPI_THREAD_MULTIPLE));
    if (provided) *provided = g->level;
    g_thread_multiple = g->level == MPI_THREAD_MULTIPLE;
    char hn[256] = {};
    gethostname(hn, sizeof hn - 1);
    g->hostname = hn;

    // Fence 1: host keys, so every rank can group the ranks of its cluster by host.
    const int ln = g->size;   // ranks of this cluster (PMI)
    const int lrank = g->rank;
    std::string my_key = host_key();
    if (ln > 1) {
        g->pmi->put("wh" + std::to_string(lrank), my_key);
        if (auto s = g->pmi->fence(); !s.ok()) {
            WANMPI_LOG(error, "bootstrap fence failed: %s", s.message().c_str());
            return MPI_ERR_OTHER;
        }
    }
    std::vector<int> local_host(ln);
    std::map<std::string, int> hosts;
    for (int r = 0; r < ln; ++r) {
        std::string key = my_key;
        if (r != lrank) {
            auto v = g->pmi->get("wh" + std::to_string(r));
            if (!v) {
                WANMPI_LOG(error, "bootstrap: no host key for rank %d", r);
                return MPI_ERR_OTHER;
            }
            key = *v;
        }
        local_host[r] = hosts.emplace(key, int(hosts.size())).first->second;
    }

    // IMPI (mpirun -client): the cluster joins the other clusters through impi-server; world
    // ranks become global (client 0's first) and the other clusters' ranks go by `wan`.
    impi::StartupOptions iopt;
    bool impi_on = false;
    if (auto s = impi::startup_options_from_env(&iopt, &impi_on); !s.ok()) {
        WANMPI_LOG(error, "IMPI set-up: %s", s.message().c_str());
        return MPI_ERR_OTHER;
    }
    int base_rank = 0;  // world rank of this cluster's PMI rank 0
    int n = ln;
    if (impi_on) {
        iopt.values.tag_ub = 0x7fffffff;  // MPI_TAG_UB of the engine
        g->impi = std::make_unique<impi::Startup>();
        if (auto s = impi::startup(*g->pmi, iopt, g->impi.get()); !s.ok()) {
            WANMPI_LOG(error, "IMPI start-up failed: %s", s.message().c_str());
            return MPI_ERR_OTHER;
        }
        const impi::Job& ij = g->impi->job;
        base_rank = ij.clients[size_t(g->impi->client)].first_rank;
        n = ij.size();
        g->rank = g->impi->rank;
        g->size = n;
        g->cluster_of.resize(n);
        for (int r = 0; r < n; ++r) g->cluster_of[r] = ij.procs[size_t(r)].client;
        g->nclusters = ij.nclients();
        g->coll_xsize = ij.xsize;
        g->coll_maxlinear = ij.maxlinear;
        base::log_set_identity("rank " + std::to_string(g->rank));
    }
    auto local = [&](int r) { return r >= base_rank && r < base_rank + ln; };
    // Host ids: unique across clusters (cluster << 20 | index), so MPI_COMM_TYPE_SHARED never
    // joins ranks of two clusters; a rank of another cluster counts as a host of its own.
    transport::JobInfo job;
    job.rank = g->rank;
    job.size = n;
    job.job_id = g->pmi->kvsname();
    job.host_of.resize(n);
    for (int r = 0; r < n; ++r) {
        int cl = g->cluster_of.empty() ? 0 : g->cluster_of[r];
        job.host_of[r] = local(r) ? (cl << 20) | local_host[r - base_rank]
                                  : (cl << 20) | 0x80000 | (r & 0x7ffff);
    }
    job.local_ranks = int(std::count(local_host.begin(), local_host.end(), local_host[lrank]));
    job.cores = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));

    // Routes: self, then shm for the same host, then tcp; wan for other clusters.
    // WANMPI_TRANSPORTS restricts the first three.
    std::vector<std::string> names = split(t_transports.get(), ',');
    auto enabled = [&](const char* nm) {
        return std::find(names.begin(), names.end(), nm) != names.end();
    };
    for (auto& nm : names)
        if (nm != "self" && nm != "shm" && nm != "tcp") {
            WANMPI_LOG(error, "WANMPI_TRANSPORTS: unknown transport '%s' (known: self, shm, tcp)",
                       nm.c_str());
            return MPI_ERR_OTHER;
        }
    std::map<std::string, std::vector<int>> peers_of;
    std::vector<std::string> route_name(n);
    std::vector<int> wan_peers;
    for (int r = 0; r < n; ++r) {
        const char* pick = nullptr;
        if (!local(r)) {
            route_name[r] = "wan";
            wan_peers.push_back(r);
            continue;
        }
        if (r == g->rank && enabled("self")) pick = "self";
        else if (job.host_of[r] == job.host_of[g->rank] && enabled("shm")) pick = "shm";
        else if (enabled("tcp")) pick = "tcp";
        if (!pick) {
            WANMPI_LOG(error, "no transport reaches rank %d (WANMPI_TRANSPORTS=%s)", r,
                       t_transports.get().c_str());
            return MPI_ERR_OTHER;
        }
        route_name[r] = pick;
        peers_of[pick].push_back(r);
    }
    std::map<std::string, Transport*> by_name;
    for (auto& [nm, peers] : peers_of) {
        auto t = transport::make_transport(nm);
        if (!t) return MPI_ERR_INTERN;
        if (auto s = t->init(job, *g->pmi, peers); !s.ok()) {
            WANMPI_LOG(error, "%s", transport_error(nm, s.message()).c_str());
            return MPI_ERR_OTHER;
        }
        by_name[nm] = t.get();
        g->transports.push_back(std::move(t));
    }
    if (!wan_peers.empty()) {
        WanLinks links;
        links.link = g->impi->link;
        links.results = g->impi->links;
        links.tls = std::move(g->impi->tls);
        links.listener = std::move(g->impi->listener);
        auto w = make_wan_transport(g->impi->job, g->rank, std::move(g->impi->conns), wan_peers,
                                    std::move(links));
        g->wan = w.get();
        by_name["wan"] = w.get();
        g->transports.push_back(std::move(w));
    }
    // Fence 2: transport addresses.
    if (ln > 1) {
        if (auto s = g->pmi->fence(); !s.ok()) {
            WANMPI_LOG(error, "bootstrap fence failed: %s", s.message().c_str());
            return MPI_ERR_OTHER;
        }
    }
    for (auto& t : g->transports)
        if (auto s = t->connect(*g->pmi); !s.ok()) {
            WANMPI_LOG(error, "%s", transport_error(t->name(), s.message()).c_str());
            return MPI_ERR_OTHER;
        }
    // Fence 3, where a host has several ranks: none leaves MPI_Init before every rank has
    // attached its peers' shared memory. Attaching takes the peer's segment fd (pidfd_getfd),
    // which needs the peer alive; without this fence a fast rank could finish MPI_Init and call
    // MPI_Abort, or exit, while a slower one was still attaching, and the slower one then failed
    // MPI_Init over a peer that had done nothing wrong (issue 16). MPICH and Open MPI users expect
    // MPI_Init to behave as if collective (MPICH synchronizes a host's ranks once they attached
    // its start-up shared memory, Open MPI ends MPI_Init with a fence), so an MPI_Abort right
    // after it shows up as the abort and nothing else. Costs one bootstrap round trip. A peer
    // that really dies during start-up is named by shm's connect() or by this fence's failure.
    if (ln > 1 && enabled("shm") && hosts.size() < size_t(ln)) {
        if (auto s = g->pmi->fence(); !s.ok()) {
            WANMPI_LOG(error, "bootstrap fence failed: %s", s.message().c_str());
            return MPI_ERR_OTHER;
        }
    }

    g->host_of = job.host_of;
    g->route.resize(n);
    g->eager_max.resize(n);
    g->credit_limit = t_eager_credit.get();
    g->credit.assign(n, g->credit_limit);
    g->owed.assign(n, 0);
    g->owed_listed.assign(n, 0);
    g->credit_due_at = std::max<int64_t>(1, g->credit_limit / 4);
    g->inbound.resize(n);
    g->dead.assign(n, 0);
    g->dead_why.assign(n, "");
    g->route_kind.assign(n, kRouteSelf);
    for (int r = 0; r < n; ++r) {
        Transport* t = by_name[route_name[r]];
        g->route[r] = t;
        const RouteKind k = route_name[r] == "wan" ? kRouteWan
                            : route_name[r] == "tcp" ? kRouteTcp
                            : route_name[r] == "shm" ? kRouteShm
                                                     : kRouteSelf;
        g->route_kind[r] = k;
        g_pvars.route[k].peers.add(1);
        if (route_name[r] == "wan") {
            // IMPI: short messages eagerly up to the negotiated maxlen, under IMPI's own flow
            // control (hiwater/ackmark) instead of the engine's eager credit.
            g->eager_max[r] = int64_t(t->max_frame());
            g->credit[r] = int64_t(1) << 62;
            continue;
        }
        int64_t em = route_name[r] == "self" ? t_self_eager.get()
                     : route_name[r] == "shm" ? t_shm_eager.get()
                                              : t_tcp_eager.get();
        g->eager_max[r] = std::min<int64_t>(em, int64_t(std::min<uint64_t>(
                                                    t->max_frame(), uint64_t(1) << 40)));
    }
    int64_t spin = t_spin_us.get();
    if (spin < 0) spin = job.local_ranks > job.cores ? 0 : 50;
    if (g->impi && g->impi->agent) {
        // The cluster's agent watches impi-server: a closed connection before our FINI means
        // another cluster (or the server) died, and this cluster must go down too.
        add_progress_hook(agent_hook);
    }
    g->spin_ns = spin * 1000;

    g->epfd = epoll_create1(EPOLL_CLOEXEC);
    g->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = g->wake_fd;
    epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->wake_fd, &ev);
    for (auto& t : g->transports) {
        int fd = t->wait_fd();
        if (fd < 0) continue;
        ev.data.fd = fd;
        epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    if (g->impi && g->impi->agent && g->impi->agent->server_fd() >= 0) {
        ev.data.fd = g->impi->agent->server_fd();
        epoll_ctl(g->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
    }
    if (!impi_on && !t_fake_clusters.get().empty()) {
        std::vector<std::string> items = split(t_fake_clusters.get(), ',');
        if (int(items.size()) == n) {
            g->cluster_of.resize(n);
            for (int r = 0; r < n; ++r) g->cluster_of[r] = std::atoi(items[r].c_str());
            g->nclusters = 1 + *std::max_element(g->cluster_of.begin(), g->cluster_of.end());
        } else {
            WANMPI_LOG(warn, "WANMPI_IMPI_FAKE_CLUSTERS has %zu entries for %d ranks; ignored",
                       items.size(), n);
        }
    }
    comm_world_setup(g->rank, n);
    wan_rate_init();
    bind_once();  // before the first call, so no rank runs unbound (progress.cpp)
    // The builtin datatype table is built on first use (~190,000 instructions): here, not in
    // the user's first call (the first 8 B collective of a run cost ~160 us against ~1 later).
    (void)datatype_lookup(MPI_BYTE);
    WANMPI_LOG(debug, "initialized: %d ranks, %d on this host, spin %lld us", n, job.local_ranks,
               (long long)spin);
    return MPI_SUCCESS;
}

static bool sends_drained(void*) {
    for (size_t i = 1; i < g->reqs.size(); ++i) {
        Request* r = g->reqs[i];
        if (r && r->comm && r->kind == ReqKind::send && r->active && !r->complete &&
            !g->dead[r->world_peer] && (r->internal || r->pending > 0))
            return false;
    }
    if (!g->ctrl_q.empty() || !g->cts_q.empty()) return false;
    for (auto& t : g->transports)
        if (!t->flushed()) return false;
    return true;
}

int engine_finalize() {
    // Everything this rank sent must have left before the others may exit (buffered sends and
    // frames still queued in transports), then a fence: after it no rank needs another.
    wait_until(sends_drained, nullptr);
    if (g->wan) {
        // IMPI FINI with every rank of the other clusters (IMPI.md §5.4): after it nothing more
        // comes from them, and the connections close.
        g->wan->begin_fini();
        wait_until([](void*) { return g->wan->fini_done(); }, nullptr);
    }
    for (int i = 0; i < 4; ++i) poll();  // flush credit/acks queued by the last frames
    int rc = MPI_SUCCESS;
    if (g->pmi->size() > 1) {
        if (auto s = g->pmi->fence(); !s.ok()) {
            WANMPI_LOG(error, "finalize fence failed: %s", s.message().c_str());
            rc = MPI_ERR_OTHER;
        }
    }
    g->quiescing = true;
    for (auto& t : g->transports) t->finalize();
    if (g->impi && g->impi->agent) {
        // Every rank of this cluster is past its IMPI FINIs (the fence above): tell the server.
        // The Agent (and its socket) lives until the process exits, so the server reads FINI
        // before it sees the close.
        if (int fd = g->impi->agent->server_fd(); fd >= 0) epoll_ctl(g->epfd, EPOLL_CTL_DEL, fd, nullptr);
        if (auto s = g->impi->agent->fini(); !s.ok()) {
            WANMPI_LOG(error, "IMPI: %s", s.message().c_str());
            rc = MPI_ERR_OTHER;
        }
    }
    g->pmi->finalize();
    return rc;
}

bool engine_running() { return g != nullptr; }
int world_rank() { return g ? g->rank : 0; }
int world_size() { return g ? g->size : 1; }
const std::string& processor_name() { return g->hostname; }
int thread_level() { return g ? g->level : MPI_THREAD_SINGLE; }
bool is_main_thread() { return g && std::this_thread::get_id() == g->main_thread; }
base::Kvs* kvs() { return g ? g->pmi.get() : nullptr; }
int host_of(int world_rank) { return g->host_of[size_t(world_rank)]; }
int universe_size() {
    if (g->impi) return g->size;
    int u = g->pmi->universe_size();
    return u > 0 ? u : g->size;
}
int appnum() { return g->pmi->appnum(); }

int cluster_count() { return g ? g->nclusters : 1; }
int64_t progress_spin_ns() { return g ? g->spin_ns : 0; }
int cluster_of(int world_rank) {
    return g && !g->cluster_of.empty() ? g->cluster_of[size_t(world_rank)] : 0;
}
int impi_host_of(int world_rank) { return world_rank; }
int impi_host_count() { return world_size(); }
int impi_coll_xsize() { return g ? g->coll_xsize : 1024; }
int impi_coll_maxlinear() { return g ? g->coll_maxlinear : 4; }
void pmi_abort(int code, const std::string& msg) {
    if (g && g->pmi) g->pmi->abort(code, msg);
}

}  // namespace wanmpi::core
