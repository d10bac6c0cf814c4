// Nonblocking schedules for communicator management: context-id agreement, the constructors
// (dup, split, create, Intercomm_create/merge, topologies) and the neighbor collectives, written
// as C++20 coroutines over core::coll_post (point-to-point in a communicator's collective context).
//
// A Task is a lazily started coroutine returning an MPI error code. Tasks await sub-tasks
// (`int rc = co_await sub(...)`) and WaitReqs (requests posted with coll_post). A root task runs
// as a Job: job_run_blocking() drives it to completion (blocking MPI calls), job_request() wraps it
// in a ReqKind::ext request (MPI_Comm_idup, MPI_Ineighbor_*). Every live job is advanced by one
// progress hook (add_progress_hook), so a pending MPI_Comm_idup progresses inside any MPI call,
// and a blocking constructor never stops other pending jobs. A job is never resumed
// re-entrantly (the hook skips while a job runs).
//
// Lifetime: a coroutine's parameters that are references must outlive it; sub-tasks are awaited
// at once, so references into the caller's frame are fine; root tasks take everything by value.
// Threading: under the API lock (the hook runs inside poll()).
//
// Tags (collective context of the communicator the messages travel on): 0x40000000 | kind << 26
// | (id & 0xfffff) << 6 | step. Kinds: seq (a collective constructor, id = Comm::mgmt_seq),
// group (MPI_Comm_create_group, id = the user's tag), leaders (MPI_Intercomm_create between
// the leaders, id = the user's tag), neighbor (neighbor collectives, id = Comm::nbr_seq), pset
// (MPI_Comm_create_from_group and MPI_Intercomm_create_from_groups, in MPI_COMM_WORLD's
// collective context, id = a hash of the string tag). Matching
// is FIFO per (source, tag), so reuse of an id after 2^20 operations is harmless as long as the
// members post in the same order, which MPI's collective ordering guarantees.
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>
#include <mpi.h>

#include "core/comm.hpp"
#include "core/engine.hpp"

namespace wanmpi::core {

class [[nodiscard]] Task {
public:
    struct promise_type {
        std::coroutine_handle<> cont;
        int rc = MPI_SUCCESS;
        Task get_return_object() {
            return Task(std::coroutine_handle<promise_type>::from_promise(*this));
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        struct Final {
            bool await_ready() noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
                auto c = h.promise().cont;
                return c ? c : std::noop_coroutine();
            }
            void await_resume() noexcept {}
        };
        Final final_suspend() noexcept { return {}; }
        void return_value(int v) { rc = v; }
        void unhandled_exception() { std::terminate(); }
    };
    Task() = default;
    explicit Task(std::coroutine_handle<promise_type> h) : h_(h) {}
    Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
    Task& operator=(Task&& o) noexcept {
        if (this != &o) {
            if (h_) h_.destroy();
            h_ = std::exchange(o.h_, {});
        }
        return *this;
    }
    Task(const Task&) = delete;
    ~Task() {
        if (h_) h_.destroy();
    }
    // Awaiting a task runs it to completion (it resumes the awaiter when done).
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> c) noexcept {
        h_.promise().cont = c;
        return h_;
    }
    int await_resume() noexcept { return h_.promise().rc; }

    bool valid() const { return bool(h_); }
    bool done() const { return h_.done(); }
    int rc() const { return h_.promise().rc; }
    std::coroutine_handle<> handle() const { return h_; }

private:
    std::coroutine_handle<promise_type> h_;
};

// Waits until every request in `reqs` completes, releases them and clears the vector; yields the
// first error (status.MPI_ERROR) or MPI_SUCCESS.
struct WaitReqs {
    std::vector<Request*>& reqs;
    bool await_ready() const;
    void await_suspend(std::coroutine_handle<> h);
    int await_resume();
};

// Runs a task to completion, making progress; returns its error code.
int job_run_blocking(Task t);
// Starts a task as a nonblocking MPI request (ReqKind::ext on `comm`, which the request keeps
// retained): complete with status.MPI_ERROR = the task's code. *out gets the request.
int job_request(Task t, Comm* comm, Request** out);

// ---- tags ---------------------------------------------------------------------------------------
// partitioned: MPI_Psend_init/MPI_Precv_init (part.cpp), which use the 26 low bits as they wish.
// wan_share: the rate-managed collectives' exchange of WAN volumes inside a cluster
// (coll/impi.cpp), id 0: one exchange at a time, in collective order.
enum class TagKind : int {
    seq = 0, group = 1, leaders = 2, neighbor = 3, pset = 4, partitioned = 5, wan_share = 6
};
inline int mgmt_tag(TagKind k, uint32_t id, int step = 0) {
    return 0x40000000 | (int(k) << 26) | int((id & 0xfffffu) << 6) | (step & 63);
}

// ---- members of a collective schedule ------------------------------------------------------
// The processes taking part: ranks of the intracommunicator `via` (all of them when `ranks` is
// empty), numbered 0..n-1 in that order; `me` is this process's number. Messages travel in
// via's collective context with tags `tag + step`.
struct Members {
    Comm* via = nullptr;
    std::vector<int> ranks;
    int me = 0;
    int n = 0;
    int tag = 0;
    int peer(int i) const { return ranks.empty() ? i : ranks[size_t(i)]; }
};
Members members_all(Comm* via, int tag);

// Point-to-point helpers returning error codes (not raised); requests appended to `reqs`. On
// error the requests already in `reqs` are handed to the engine (released when they complete).
int post_typed(ReqKind kind, const void* buf, int64_t count, MPI_Datatype dt, int peer, int tag,
               Comm* c, std::vector<Request*>& reqs);
int post_send(const void* buf, int64_t bytes, int peer, int tag, Comm* c,
              std::vector<Request*>& reqs);
int post_recv(void* buf, int64_t bytes, int peer, int tag, Comm* c, std::vector<Request*>& reqs);

// Element-wise maximum over the members (dissemination: ceil(log2 n) rounds, any n; max is
// idempotent so the overlapping windows of a non-power-of-two n do no harm). Steps 0..31.
Task allreduce_max(const Members& m, std::vector<int64_t>& v);
// Every member's `mine` (same length everywhere), in member order, into `all` (Bruck's
// dissemination allgather). Steps 0..31.
Task allgather(const Members& m, std::vector<int64_t> mine, std::vector<int64_t>& all);
// Binomial broadcast of a vector of any length from member `root`. Steps 32..47.
Task bcast(const Members& m, int root, std::vector<int64_t>& v);
// Exchange vectors of any length with `peer` of `c` (either kind of communicator): sends `out`,
// receives into `in`. Steps 48..63 of `tag`.
Task sendrecv(Comm* c, int peer, int tag, std::vector<int64_t> out, std::vector<int64_t>& in);

// ---- context-id agreement (comm_ctx.cpp) ---------------------------------------------------
// Orders concurrent agreements identically on every process (see comm_ctx.cpp).
struct AgreeKey {
    uint32_t ctx = 0;   // context id of the parent communicator
    uint32_t kind = 0;  // TagKind
    uint32_t id = 0;    // mgmt_seq or the user's tag
    auto operator<=>(const AgreeKey&) const = default;
};
// The remote half of an agreement that spans two groups (intercommunicators): the member with
// number `leader` talks to `peer` of `comm` with tag `tag` (steps 48..63).
struct InterLink {
    Comm* comm = nullptr;
    int peer = 0;
    int tag = 0;
    int leader = 0;
};
// Agrees on `nctx` new context ids (the first in *out; the next ones 4 apart) among the members
// (and the remote group through `link` when non-null). Every member must call it with the same
// key and nctx; `ignore` members take part but will not use the ids (e.g. MPI_UNDEFINED in a
// split).
// `first_iter` 1: round 0 already ran inside another collective and failed (ctx_round0_*).
Task agree_ctx(const Members& m, const InterLink* link, AgreeKey key, bool ignore, int nctx,
               uint32_t* out, int first_iter = 0);
// Round 0 folded into a collective the members run anyway (MPI_Comm_split's allgather), saving
// a round: begin() takes the eager lock if it can and gives the values to contribute; end(), with
// their maxima over the members, releases it and returns true if the ids are decided (*out, *rc),
// false if agree_ctx(..., first_iter = 1) must go on.
struct Round0 {
    bool own = false;
    bool ignore = false;
    int64_t max_cid = 0;
    int64_t blocked = 0;
};
Round0 ctx_round0_begin(bool ignore);
bool ctx_round0_end(Round0& r, int64_t max_cid, int64_t blocked, int nctx, uint32_t* out,
                    int* rc);
// Elementwise max over the members and, through `link`, the remote group: local allreduce,
// leaders' exchange, local broadcast.
Task allreduce_max_inter(const Members& m, const InterLink* link, std::vector<int64_t>& v);
// The highest context id this process has in use or has handed out (IMPI's IMPI_max_cid).
uint32_t ctx_max_in_use();

}  // namespace wanmpi::core
