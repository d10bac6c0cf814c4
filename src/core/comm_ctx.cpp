// Context-id agreement: the IMPI rule (IMPI.md §5.6) - a new id is the maximum over the members
// of the highest id each has in use, plus 2 (ids come in pairs: ctx for point-to-point, ctx+1 for
// collectives) - made safe when several agreements are under way on one process at once
// (MPI_Comm_idup, MPI_THREAD_MULTIPLE).
//
// The danger: two agreements that share a process P compute their maxima from the same value of
// P's counter and pick the same id. The cure follows MPICH's context-id mask protocol, carried
// over from masks to maxima:
//   - An agreement runs in rounds; each round is one allreduce-MAX of (highest id in use,
//     "blocked" flag). A process contributes "not blocked" only while it holds a lock for that
//     round, and a round succeeds only if no member was blocked. So while a round that succeeds
//     is in flight, no other agreement of the same kind can install an id on any of its members,
//     and max + 2 is above every id they have.
//   - The first round of an agreement can stall: members wait for each other to even call the
//     constructor. A process must not stop other agreements meanwhile (P may Idup on C1 and then
//     dup C2 while Q does it the other way round; both must finish). So round 0 takes a separate
//     "eager" lock, and only rounds 1.. take the main lock. The two locks hand out disjoint ids:
//     round 0 ids are multiples of 4, later rounds' ids are 2 mod 4 (each id names the pair
//     ctx, ctx+1). Uncontended, every agreement is one round, and its id is the smallest multiple
//     of 4 above the maximum: max + 2 or max + 4.
//   - Rounds 1.. cannot stall (every member has entered), so they wait only for progress. An
//     agreement that lost a round joins a list ordered by its key (parent context id, kind, seq
//     or tag), identical on every member; a process grants the main lock only to the head of its
//     list. The globally smallest key then wins on every member and finishes: no livelock.
// Members that will not use the id (MPI_UNDEFINED colour, outside the group of MPI_Comm_create)
// contribute without locking and do not record the id.
//
// Counter: g.max_cid is the highest id this process installed (IMPI_max_cid); it never goes down,
// so ids are never reused (2^30 ids before exhaustion, reported as MPI_ERR_INTERN).
#include <algorithm>

#include "core/comm_task.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

namespace {
struct CtxState {
    uint32_t max_cid = 2;  // MPI_COMM_WORLD 0, MPI_COMM_SELF 2
    bool eager_busy = false;
    bool main_busy = false;
    struct Waiter {
        AgreeKey key;
        const void* token;
    };
    std::vector<Waiter> waiting;  // sorted by key
};
CtxState g;

struct Listed {
    const void* token = nullptr;
    ~Listed() {
        if (!token) return;
        auto it = std::find_if(g.waiting.begin(), g.waiting.end(),
                               [&](const CtxState::Waiter& w) { return w.token == token; });
        if (it != g.waiting.end()) g.waiting.erase(it);
    }
};
}  // namespace

uint32_t ctx_max_in_use() { return g.max_cid; }

// The id of a successful round: the first one above the maximum in the round's class.
static int decide(int iter, int64_t max_cid, bool ignore, int nctx, uint32_t* out) {
    const uint64_t cls = iter == 0 ? 0 : 2;
    uint64_t base = uint64_t(max_cid) + 1;
    while (base % 4 != cls) ++base;
    const uint64_t last = base + 4 * uint64_t(nctx - 1);
    if (last > 0xfffffff0u)
        return make_error(MPI_ERR_INTERN, "out of context ids (highest in use %lld)",
                          (long long)max_cid);
    if (!ignore) g.max_cid = std::max(g.max_cid, uint32_t(last));
    *out = uint32_t(base);
    return MPI_SUCCESS;
}

Round0 ctx_round0_begin(bool ignore) {
    Round0 r;
    r.ignore = ignore;
    if (!ignore && !g.eager_busy) r.own = g.eager_busy = true;
    r.max_cid = g.max_cid;
    r.blocked = (r.own || ignore) ? 0 : 1;
    return r;
}

bool ctx_round0_end(Round0& r, int64_t max_cid, int64_t blocked, int nctx, uint32_t* out,
                    int* rc) {
    if (r.own) g.eager_busy = false;
    r.own = false;
    *rc = MPI_SUCCESS;
    if (blocked) return false;
    *rc = decide(0, max_cid, r.ignore, nctx, out);
    return true;
}

Task agree_ctx(const Members& m, const InterLink* link, AgreeKey key, bool ignore, int nctx,
               uint32_t* out, int first_iter) {
    Listed listed;
    for (int iter = first_iter;; ++iter) {
        if (iter > 0 && !ignore && !listed.token) {
            listed.token = &listed;
            auto it = std::upper_bound(
                g.waiting.begin(), g.waiting.end(), key,
                [](const AgreeKey& k, const CtxState::Waiter& w) { return k < w.key; });
            g.waiting.insert(it, CtxState::Waiter{key, &listed});
        }
        bool own = false;
        if (!ignore) {
            if (iter == 0) {
                if (!g.eager_busy) own = g.eager_busy = true;
            } else if (!g.main_busy && !g.waiting.empty() && g.waiting.front().token == &listed) {
                own = g.main_busy = true;
            }
        }
        std::vector<int64_t> v = {int64_t(g.max_cid), (own || ignore) ? 0 : 1};
        int rc = co_await allreduce_max_inter(m, link, v);
        if (own) (iter == 0 ? g.eager_busy : g.main_busy) = false;
        if (rc != MPI_SUCCESS) co_return rc;
        if (v[1] == 0) co_return decide(iter, v[0], ignore, nctx, out);
    }
}

}  // namespace wanmpi::core
