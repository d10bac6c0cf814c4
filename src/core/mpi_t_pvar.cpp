// MPI_T performance variables, sessions and handles (MPI 4.0 §15.3.7). Setup, cvars and
// categories: mpi_t.cpp; shared state and threading: mpi_t.hpp.
//
// The variables read what the library already counts, none bound to an object:
//   <route>_msgs_sent/_recv     COUNTER    MPI messages over route self/shm/tcp/wan
//   <route>_bytes_sent/_recv    AGGREGATE  their payload bytes           (core/pvars.hpp)
//   <route>_peers               SIZE       ranks the route reaches
//   posted_recvq_length, unexpected_recvq_length   LEVEL     the matching queues now
//   posted_recvq_hwm, unexpected_recvq_hwm         HIGHWATERMARK  their peak while started
//   wan_link_*                  the connections to other clusters (wanlink::LinkCounters and
//                               TCP_INFO, the numbers WANMPI_WAN_STATS prints at the end)
//   mpi_state                   STATE      not initialized / initialized / finalized
// Counters and aggregates are not continuous (a handle counts between start and stop; the
// count is kept across a stop and continues at the next start), writable (a write sets the
// handle's value) and atomic (readreset reads and zeroes in one step: the source is read once).
// LEVEL, SIZE and STATE are continuous and read-only. A high-water mark starts at the queue's
// length at MPI_T_pvar_start and is writable.
//
// A handle keeps `acc` (the value up to the last stop, write or reset) and, while started,
// `base` (the source's total at the last start/write/reset): value = acc + (source - base).
#include "core/mpi_t.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_set>

#include "bindings/impl.hpp"
#include "core/api.hpp"
#include "core/engine_impl.hpp"
#include "core/pvars.hpp"
#include "core/wan.hpp"

namespace wanmpi::core::mpit {
namespace {

// What a WAN link variable sums (or, for rtt, maximises) over this rank's connections.
enum class Wan { bytes_sent, bytes_recv, pkts_sent, pkts_recv, retrans, rtos, rtt_max, conns, rate };

// The current total (counters) or value (levels) of each variable's source.
uint64_t wan_value(Wan w) {
    // Counters that TCP_INFO gives are whole-life totals of sockets that close at MPI_Finalize:
    // keep the largest total seen so a closed socket does not make a counter run backwards.
    static uint64_t seen[9];
    uint64_t v = 0;
    std::lock_guard<std::recursive_mutex> api(g_api_lock);
    if (!g || !g->wan) return w == Wan::conns || w == Wan::rate || w == Wan::rtt_max ? 0 : seen[int(w)];
    if (w == Wan::rate) return g->wan->rate();
    for (const wanlink::LinkStat& s : g->wan->link_stats()) {
        switch (w) {
        case Wan::bytes_sent: v += s.c.bytes_sent; break;
        case Wan::bytes_recv: v += s.c.bytes_recv; break;
        case Wan::pkts_sent: v += s.c.msgs_sent; break;
        case Wan::pkts_recv: v += s.c.msgs_recv; break;
        case Wan::retrans: v += s.tcp.ok ? s.tcp.retrans : 0; break;
        case Wan::rtos: v += s.tcp.ok && s.tcp.has_rtos ? s.tcp.rtos : 0; break;
        case Wan::rtt_max: v = std::max<uint64_t>(v, s.tcp.ok ? s.tcp.rtt_us : 0); break;
        case Wan::conns: ++v; break;
        case Wan::rate: break;
        }
    }
    if (w == Wan::rtt_max || w == Wan::conns) return v;
    seen[int(w)] = std::max(seen[int(w)], v);
    return seen[int(w)];
}

struct Pvar {
    std::string name, desc, category;
    int cls;
    MPI_Datatype dt;
    int verbosity;
    bool readonly, continuous, atomic;
    std::function<uint64_t()> source;  // COUNTER/AGGREGATE: total; others: value now
    QueueLen* queue = nullptr;         // HIGHWATERMARK: the queue whose peak is harvested
    MPI_T_enum en = MPI_T_ENUM_NULL;
};

std::vector<Pvar>& pvars() {
    static std::vector<Pvar> v = [] {
        std::vector<Pvar> p;
        const int T = MPI_T_VERBOSITY_TUNER_BASIC, U = MPI_T_VERBOSITY_USER_BASIC;
        const MPI_Datatype ull = MPI_UNSIGNED_LONG_LONG;
        auto counter = [&](std::string name, std::string desc, std::string cat, int cls,
                           std::function<uint64_t()> src) {
            p.push_back({std::move(name), std::move(desc), std::move(cat), cls, ull, T, false,
                         false, true, std::move(src)});
        };
        auto level = [&](std::string name, std::string desc, std::string cat, int cls,
                         std::function<uint64_t()> src) {
            p.push_back({std::move(name), std::move(desc), std::move(cat), cls, ull, T, true,
                         true, false, std::move(src)});
        };
        static const char* const cats[] = {"SELF", "SHM", "TCP", "WAN"};
        static const char* const what[] = {
            "to itself", "to ranks of the same host", "to other hosts of the same cluster",
            "to ranks of other clusters (IMPI)"};
        for (int k = 0; k < kRouteKinds; ++k) {
            const std::string r = route_kind_name(k), cat = cats[k], to = what[k];
            RouteCounters* c = &g_pvars.route[k];
            counter(r + "_msgs_sent", "MPI messages this rank sent " + to + " (point-to-point and "
                    "the messages of collectives; one per message, eager or rendezvous)", cat,
                    MPI_T_PVAR_CLASS_COUNTER, [c] { return c->msgs_sent.get(); });
            counter(r + "_bytes_sent", "Payload bytes of the messages counted by " + r +
                    "_msgs_sent (headers and protocol frames not counted)", cat,
                    MPI_T_PVAR_CLASS_AGGREGATE, [c] { return c->bytes_sent.get(); });
            counter(r + "_msgs_recv", "MPI messages that arrived at this rank from ranks " +
                    to.substr(3) + " (counted on arrival, matched or unexpected)", cat,
                    MPI_T_PVAR_CLASS_COUNTER, [c] { return c->msgs_recv.get(); });
            counter(r + "_bytes_recv", "Payload bytes of the messages counted by " + r +
                    "_msgs_recv", cat, MPI_T_PVAR_CLASS_AGGREGATE,
                    [c] { return c->bytes_recv.get(); });
            level(r + "_peers", "Ranks this rank reaches over the " + r + " route (set by MPI_Init)",
                  cat, MPI_T_PVAR_CLASS_SIZE, [c] { return c->peers.get(); });
        }
        level("posted_recvq_length", "Receives posted and not yet matched", "P2P",
              MPI_T_PVAR_CLASS_LEVEL, [] { return g_pvars.posted.len.get(); });
        level("unexpected_recvq_length",
              "Messages (or rendezvous requests) that arrived before a matching receive and "
              "are not yet received", "P2P", MPI_T_PVAR_CLASS_LEVEL,
              [] { return g_pvars.unexp.len.get(); });
        p.push_back({"posted_recvq_hwm", "Longest the posted receive queue was while the handle "
                     "was started", "P2P", MPI_T_PVAR_CLASS_HIGHWATERMARK, ull, T, false, false,
                     true, [] { return g_pvars.posted.len.get(); }, &g_pvars.posted});
        p.push_back({"unexpected_recvq_hwm", "Longest the unexpected message queue was while the "
                     "handle was started", "P2P", MPI_T_PVAR_CLASS_HIGHWATERMARK, ull, T, false,
                     false, true, [] { return g_pvars.unexp.len.get(); }, &g_pvars.unexp});
        const char* link = " on this rank's connections to other clusters";
        counter("wan_link_bytes_sent", std::string("Bytes written") + link +
                " (IMPI headers included)", "WAN", MPI_T_PVAR_CLASS_AGGREGATE,
                [] { return wan_value(Wan::bytes_sent); });
        counter("wan_link_bytes_recv", std::string("Bytes read") + link + " (IMPI headers included)",
                "WAN", MPI_T_PVAR_CLASS_AGGREGATE, [] { return wan_value(Wan::bytes_recv); });
        counter("wan_link_packets_sent", std::string("IMPI packets sent") + link, "WAN",
                MPI_T_PVAR_CLASS_COUNTER, [] { return wan_value(Wan::pkts_sent); });
        counter("wan_link_packets_recv", std::string("IMPI packets received") + link, "WAN",
                MPI_T_PVAR_CLASS_COUNTER, [] { return wan_value(Wan::pkts_recv); });
        counter("wan_link_retrans", std::string("TCP segments retransmitted") + link +
                " (TCP_INFO tcpi_total_retrans)", "WAN", MPI_T_PVAR_CLASS_COUNTER,
                [] { return wan_value(Wan::retrans); });
        counter("wan_link_rtos", std::string("TCP retransmission timeouts") + link +
                " (TCP_INFO tcpi_total_rto; 0 on kernels before 6.7)", "WAN",
                MPI_T_PVAR_CLASS_COUNTER, [] { return wan_value(Wan::rtos); });
        level("wan_link_rtt_max_us", std::string("Largest smoothed RTT, in microseconds,") + link,
              "WAN", MPI_T_PVAR_CLASS_LEVEL, [] { return wan_value(Wan::rtt_max); });
        level("wan_link_connections", "TCP connections this rank has to ranks of other "
              "clusters (each lane of a link counts: WANMPI_WAN_LANES)", "WAN", MPI_T_PVAR_CLASS_SIZE, [] { return wan_value(Wan::conns); });
        level("wan_rate", "This rank's pacing budget across the WAN in bytes/s on the wire "
              "(WANMPI_WAN_RATE; 0: not paced)", "WAN", MPI_T_PVAR_CLASS_LEVEL,
              [] { return wan_value(Wan::rate); });
        Pvar st{"mpi_state", "Where this process is in MPI's life", "P2P",
                MPI_T_PVAR_CLASS_STATE, MPI_INT, U, true, true, false,
                [] { return uint64_t(g_init_state.load()); }};
        st.en = make_enum("mpi_state", {{0, "not_initialized"}, {1, "initialized"},
                                        {2, "finalized"}});
        p.push_back(std::move(st));
        return p;
    }();
    return v;
}

bool is_sum(const Pvar& v) {
    return v.cls == MPI_T_PVAR_CLASS_COUNTER || v.cls == MPI_T_PVAR_CLASS_AGGREGATE;
}

}  // namespace
}  // namespace wanmpi::core::mpit

struct wanmpi_t_pvar_session_s;

struct wanmpi_t_pvar_handle_s {
    wanmpi_t_pvar_session_s* session;
    int index;
    bool started = false;
    uint64_t acc = 0;   // sums: value up to the last stop/write/reset; HWM: the peak so far
    uint64_t base = 0;  // sums, while started: the source's total at start/write/reset
};

struct wanmpi_t_pvar_session_s {
    std::vector<std::unique_ptr<wanmpi_t_pvar_handle_s>> handles;
};

namespace wanmpi::core::mpit {
namespace {

std::unordered_set<MPI_T_pvar_session>& sessions() {
    static std::unordered_set<MPI_T_pvar_session> s;
    return s;
}

// Hands the peak of `v`'s queue since the last harvest to every started handle of `v` (see
// QueueLen in pvars.hpp).
void harvest(int index) {
    const Pvar& v = pvars()[size_t(index)];
    const uint64_t cur = v.queue->len.get();
    const uint64_t peak = std::max(v.queue->peak.exchange(cur), cur);
    for (auto* s : sessions())
        for (auto& h : s->handles)
            if (h->index == index && h->started) h->acc = std::max(h->acc, peak);
}

uint64_t value(wanmpi_t_pvar_handle_s* h) {
    const Pvar& v = pvars()[size_t(h->index)];
    if (v.queue) {
        if (h->started) harvest(h->index);
        return h->acc;
    }
    if (!is_sum(v)) return v.source();
    return h->acc + (h->started ? v.source() - h->base : 0);
}

// Sets the handle's value to `x` (write, and reset with x = the starting value).
void assign(wanmpi_t_pvar_handle_s* h, uint64_t x) {
    const Pvar& v = pvars()[size_t(h->index)];
    if (v.queue && h->started) harvest(h->index);
    h->acc = x;
    if (!v.queue && h->started) h->base = v.source();
}

void start(wanmpi_t_pvar_handle_s* h) {
    const Pvar& v = pvars()[size_t(h->index)];
    if (h->started) return;
    if (v.queue) {
        harvest(h->index);
        h->acc = v.queue->len.get();
    } else {
        h->base = v.source();
    }
    h->started = true;
}

void stop(wanmpi_t_pvar_handle_s* h) {
    if (!h->started) return;
    h->acc = value(h);
    h->started = false;
}

void write_buf(const Pvar& v, uint64_t x, void* buf) {
    if (v.dt == MPI_INT) *static_cast<int*>(buf) = int(x);
    else *static_cast<unsigned long long*>(buf) = x;
}

// The handle, if it is one of `session`'s (ALL_HANDLES is not a handle).
wanmpi_t_pvar_handle_s* find(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
    for (auto& h : session->handles)
        if (h.get() == handle) return h.get();
    return nullptr;
}

}  // namespace

int pvar_count() { return int(pvars().size()); }
const std::string& pvar_category(int index) { return pvars()[size_t(index)].category; }

void free_all_sessions() {
    for (auto* s : sessions()) delete s;
    sessions().clear();
}

}  // namespace wanmpi::core::mpit

namespace wanmpi::impl {
using namespace wanmpi::core::mpit;
// Validates session and handle; `h` is null for MPI_T_PVAR_ALL_HANDLES.
#define MPIT_SESSION_HANDLE(session, handle, h)                                     \
    MPIT_CHECK_INIT();                                                              \
    if (!sessions().count(session)) return MPI_T_ERR_INVALID_SESSION;               \
    wanmpi_t_pvar_handle_s* h = nullptr;                                            \
    if (handle != MPI_T_PVAR_ALL_HANDLES && !(h = find(session, handle)))           \
        return MPI_T_ERR_INVALID_HANDLE

int T_pvar_get_num(int* num_pvar) { return get_num(num_pvar, pvar_count); }

int T_pvar_get_info(int pvar_index, char* name, int* name_len, int* verbosity, int* var_class,
                    MPI_Datatype* datatype, MPI_T_enum* enumtype, char* desc, int* desc_len,
                    int* bind, int* readonly, int* continuous, int* atomic) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (pvar_index < 0 || pvar_index >= pvar_count()) return MPI_T_ERR_INVALID_INDEX;
    const Pvar& v = pvars()[size_t(pvar_index)];
    copy_string(v.name, name, name_len);
    if (verbosity) *verbosity = v.verbosity;
    if (var_class) *var_class = v.cls;
    if (datatype) *datatype = v.dt;
    if (enumtype) *enumtype = v.en;
    copy_string(v.desc, desc, desc_len);
    if (bind) *bind = MPI_T_BIND_NO_OBJECT;
    if (readonly) *readonly = v.readonly;
    if (continuous) *continuous = v.continuous;
    if (atomic) *atomic = v.atomic;
    return MPI_SUCCESS;
}

int T_pvar_get_index(const char* name, int var_class, int* pvar_index) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!name || !pvar_index) return MPI_T_ERR_INVALID;
    for (int i = 0; i < pvar_count(); ++i)
        if (pvars()[size_t(i)].name == name && pvars()[size_t(i)].cls == var_class) {
            *pvar_index = i;
            return MPI_SUCCESS;
        }
    return MPI_T_ERR_INVALID_NAME;
}

int T_pvar_session_create(MPI_T_pvar_session* session) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!session) return MPI_T_ERR_INVALID;
    auto* s = new (std::nothrow) wanmpi_t_pvar_session_s;
    if (!s) return MPI_T_ERR_MEMORY;
    sessions().insert(s);
    *session = s;
    return MPI_SUCCESS;
}

int T_pvar_session_free(MPI_T_pvar_session* session) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!session || !sessions().count(*session)) return MPI_T_ERR_INVALID_SESSION;
    sessions().erase(*session);
    delete *session;
    *session = MPI_T_PVAR_SESSION_NULL;
    return MPI_SUCCESS;
}

int T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index,
                        void* /*obj_handle: no pvar binds to an object*/, MPI_T_pvar_handle* handle,
                        int* count) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!sessions().count(session)) return MPI_T_ERR_INVALID_SESSION;
    if (pvar_index < 0 || pvar_index >= pvar_count()) return MPI_T_ERR_INVALID_INDEX;
    if (!handle || !count) return MPI_T_ERR_INVALID;
    auto h = std::unique_ptr<wanmpi_t_pvar_handle_s>(
        new (std::nothrow) wanmpi_t_pvar_handle_s{session, pvar_index});
    if (!h) return MPI_T_ERR_MEMORY;
    // Continuous variables are started from the moment they exist (MPI 4.0 §15.3.7).
    if (pvars()[size_t(pvar_index)].continuous) h->started = true;
    *handle = h.get();
    *count = 1;
    session->handles.push_back(std::move(h));
    return MPI_SUCCESS;
}

int T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle* handle) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!sessions().count(session)) return MPI_T_ERR_INVALID_SESSION;
    if (!handle || !find(session, *handle)) return MPI_T_ERR_INVALID_HANDLE;
    auto& hs = session->handles;
    hs.erase(std::find_if(hs.begin(), hs.end(), [&](auto& p) { return p.get() == *handle; }));
    *handle = MPI_T_PVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

namespace {
// start / stop / reset of one handle, or with MPI_T_PVAR_ALL_HANDLES of every handle of the
// session that allows it. `refused(v)`: the variable does not allow the operation, which is
// then the error `why` for one handle and a skip for ALL_HANDLES.
int on_handles(MPI_T_pvar_session session, MPI_T_pvar_handle handle, bool (*refused)(const Pvar&),
               int why, void (*op)(wanmpi_t_pvar_handle_s*)) {
    Guard g(lock());
    MPIT_SESSION_HANDLE(session, handle, h);
    if (!h) {
        for (auto& x : session->handles)
            if (!refused(pvars()[size_t(x->index)])) op(x.get());
        return MPI_SUCCESS;
    }
    if (refused(pvars()[size_t(h->index)])) return why;
    op(h);
    return MPI_SUCCESS;
}
bool continuous(const Pvar& v) { return v.continuous; }
bool readonly(const Pvar& v) { return v.readonly; }
void reset(wanmpi_t_pvar_handle_s* h) {
    const Pvar& v = pvars()[size_t(h->index)];
    assign(h, v.queue ? v.queue->len.get() : 0);
}
}  // namespace

int T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
    return on_handles(session, handle, continuous, MPI_T_ERR_PVAR_NO_STARTSTOP, start);
}

int T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
    return on_handles(session, handle, continuous, MPI_T_ERR_PVAR_NO_STARTSTOP, stop);
}

int T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
    return on_handles(session, handle, readonly, MPI_T_ERR_PVAR_NO_WRITE, reset);
}

int T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void* buf) {
    Guard g(lock());
    MPIT_SESSION_HANDLE(session, handle, h);
    if (!h) return MPI_T_ERR_INVALID_HANDLE;  // ALL_HANDLES only starts, stops and resets
    if (!buf) return MPI_T_ERR_INVALID;
    write_buf(pvars()[size_t(h->index)], value(h), buf);
    return MPI_SUCCESS;
}

int T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void* buf) {
    Guard g(lock());
    MPIT_SESSION_HANDLE(session, handle, h);
    if (!h) return MPI_T_ERR_INVALID_HANDLE;
    if (pvars()[size_t(h->index)].readonly) return MPI_T_ERR_PVAR_NO_WRITE;
    if (!buf) return MPI_T_ERR_INVALID;
    assign(h, *static_cast<const unsigned long long*>(buf));
    return MPI_SUCCESS;
}

int T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void* buf) {
    Guard g(lock());
    MPIT_SESSION_HANDLE(session, handle, h);
    if (!h) return MPI_T_ERR_INVALID_HANDLE;
    const Pvar& v = pvars()[size_t(h->index)];
    if (v.readonly) return MPI_T_ERR_PVAR_NO_WRITE;
    if (!v.atomic) return MPI_T_ERR_PVAR_NO_ATOMIC;
    if (!buf) return MPI_T_ERR_INVALID;
    // One reading of the source serves both the value and the new base, so nothing the engine
    // counts in between is lost or counted twice.
    if (v.queue) {
        write_buf(v, value(h), buf);
        h->acc = v.queue->len.get();
    } else if (h->started) {
        const uint64_t now = v.source();
        write_buf(v, h->acc + (now - h->base), buf);
        h->acc = 0;
        h->base = now;
    } else {
        write_buf(v, h->acc, buf);
        h->acc = 0;
    }
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
