// Synchronization (MPI-3.1 §11.5): fence, post/start/complete/wait/test, lock/unlock,
// lock_all/unlock_all, flush(_local)(_all), sync; and the requests of the R* operations.
//
//   fence      flush every target this rank wrote to since the last synchronization (a FLUSH
//              round trip each, skipped for targets it did not touch and with MPI_MODE_NOPRECEDE),
//              then a barrier on the window's communicator: when any rank leaves the barrier,
//              every operation of the epoch has been applied at its target.
//   PSCW       MPI_Win_post sends POST to each origin; MPI_Win_start only records its group and
//              an operation to a target waits for that target's POST (so start never blocks and
//              programs that call start before post on another rank cannot deadlock);
//              MPI_Win_complete sends COMPLETE to each target behind the operations (the target's
//              per-origin FIFO applies them first), after local completion; MPI_Win_wait waits for
//              one COMPLETE per origin of its group. Between ranks of one host on windows from
//              MPI_Win_allocate(_shared) POST and COMPLETE are counters in the segment instead
//              (rma.hpp, pscw_direct), unless operations went to the target as messages (then
//              COMPLETE is a message, ordered behind them).
//   lock       a LOCK message that the target answers when it grants (shared or exclusive; a FIFO
//              of waiters, so an exclusive request is not starved by later shared ones);
//              MPI_MODE_NOCHECK skips it. Unlock sends UNLOCK behind the operations and waits for
//              the answer (remote completion). Ranks on this host: the target's lock word.
//   flush      see origin.cpp. flush_local waits for the local requests only.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>

#include "base/clock.hpp"
#include "coll/api_impl.hpp"
#include "core/errors.hpp"
#include "core/group.hpp"
#include "rma/ops.hpp"
#include "rma/rma.hpp"

namespace wanmpi::rma {

namespace {

bool posted(void* p) {
    auto* x = static_cast<std::pair<Window*, int>*>(p);
    return x->first->posts_seen[size_t(x->second)] > 0;
}

std::vector<int> all_targets(const Window* w) {
    std::vector<int> v(size_t(w->nranks));
    for (int i = 0; i < w->nranks; ++i) v[size_t(i)] = i;
    return v;
}

// Window ranks of a group's members; -1 + *err if one is not in the window.
int group_ranks(Window* w, MPI_Group g, std::vector<int>* out) {
    const core::Group* grp = core::group_lookup(g);
    if (!grp) return core::make_error(MPI_ERR_GROUP, "invalid group 0x%x", unsigned(g));
    out->clear();
    for (int wr : grp->world) {
        int r = -1;
        for (int i = 0; i < w->nranks; ++i)
            if (w->comm->world[size_t(i)] == wr) r = i;
        if (r < 0)
            return core::make_error(MPI_ERR_GROUP, "the group holds a process (world rank %d) "
                                                   "that is not in the window", wr);
        out->push_back(r);
    }
    return MPI_SUCCESS;
}

// Operations went to some target as messages since its last flush.
bool any_sent(const Window* w) {
    for (uint8_t d : w->dirty)
        if (d) return true;
    return false;
}

bool any_lock(const Window* w) {
    if (w->lock_all) return true;
    for (uint8_t l : w->locked)
        if (l) return true;
    return false;
}

int barrier(Window* w) { return coll::barrier(w->icomm, nullptr, coll::Call::blocking); }

// PSCW by counters with rank t (either side): on this host, and a window whose operations are
// all loads and stores (allocate flavors). On user memory (create, dynamic) accumulates travel as
// messages the target must apply while it waits, and a target spinning on counters cannot sleep
// until a message wakes it: under load that cost 2-3x the message epoch, so POST and COMPLETE
// stay messages there.
bool pscw_direct(const Window* w, int t) { return on_host(w, t) && !w->shm_base.empty(); }

std::atomic_ref<uint32_t> pscw(const Window* w, bool done, int t, int o) {
    return std::atomic_ref<uint32_t>(*pscw_word(w, done, t, o));
}

// A PSCW counter or a lock word in the segment makes no event for the engine to sleep on: poll
// (others may need this rank's progress) and yield until `ready`. After ~100 us of that, each
// round also sleeps 20 us: on a machine with more runnable processes than cores a rank that
// only yields keeps losing the CPU to the rank it waits for (the scheduler favours sleepers).
// First, where the engine would spin (WANMPI_PROGRESS_SPIN_US: automatic = 50 us when this host
// has no more ranks than cores), poll without yielding: sched_yield() is a system call on
// every round, and the counter's change was seen only after it returned (OSU put with PSCW on
// an allocate window: 0.87-1.02 us a round against Open MPI's 0.49-0.60).
template <class F>
void spin_until(F ready) {
    if (ready()) return;  // the uncontended case (a free lock word): no clock read
    const int64_t t0 = base::now_ns();
    if (const int64_t spin = core::progress_spin_ns(); spin > 0) {
        for (unsigned i = 1;; ++i) {
            core::poll();
            if (ready()) return;
            if (i % 16 == 0 && base::now_ns() - t0 >= spin) break;
        }
    }
    for (unsigned i = 0; !ready(); ++i) {
        core::poll();
        if (i < 16 || base::now_ns() - t0 < 100000) {
            sched_yield();
        } else {
            timespec ts{0, 20000};
            nanosleep(&ts, nullptr);
        }
    }
}

}  // namespace

bool in_start_group(Window* w, int target) {
    if (!w->in_start) return false;
    for (size_t i = 0; i < w->start_group.size(); ++i) {
        if (w->start_group[i] != target) continue;
        if (!w->start_posted[i] && pscw_direct(w, target)) {
            // the target's post counter for this rank moves past what earlier epochs consumed
            auto c = pscw(w, false, target, w->rank);
            uint32_t& used = w->posts_used[size_t(target)];
            spin_until([&] { return c.load(std::memory_order_acquire) != used; });
            ++used;
            w->start_posted[i] = 1;
        } else if (!w->start_posted[i]) {
            std::pair<Window*, int> x{w, target};
            core::wait_until(posted, &x);
            --w->posts_seen[size_t(target)];
            w->start_posted[i] = 1;
        }
        return true;
    }
    return false;
}

MPI_Request completed_request(Window* w) {
    core::Request* r = pending_request(w);
    r->complete = true;
    return core::request_handle(r);
}

core::Request* pending_request(Window* w) {
    core::Request* r = core::request_new(core::ReqKind::ext);
    r->comm = w->comm;  // marks the slot live; errors go to its handler
    core::comm_retain(w->comm);
    r->comm_held = true;
    r->peer = MPI_PROC_NULL;
    r->world_peer = -1;
    r->complete = false;
    r->status = MPI_Status{};
    return r;
}

// ---- entry points -------------------------------------------------------------------------------
int win_fence(Window* w, int assert_) {
    if (w->in_start || w->in_post || any_lock(w))
        return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_fence inside a PSCW or lock epoch");
    int err = MPI_SUCCESS;
    // (only operations sent as messages need the FLUSH round trips: direct ones are complete,
    // and an epoch of those alone costs no target list and no allocation here)
    if (!(assert_ & MPI_MODE_NOPRECEDE) && any_sent(w)) err = flush_many(w, all_targets(w));
    else err = wait_target(w, -1);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // direct stores before the barrier
    int e2 = barrier(w);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    w->fence_epoch = !(assert_ & MPI_MODE_NOSUCCEED);
    return err != MPI_SUCCESS ? err : e2;
}

int win_post(Window* w, MPI_Group g, int) {
    if (w->in_post) return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_post: already posted");
    std::vector<int> ranks;
    int err = group_ranks(w, g, &ranks);
    if (err != MPI_SUCCESS) return err;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (int r : ranks) {
        if (pscw_direct(w, r)) {
            pscw(w, false, w->rank, r).fetch_add(1, std::memory_order_release);
            continue;
        }
        Hdr h;
        h.type = Msg::post;
        if ((err = send_ctrl(w, r, h)) != MPI_SUCCESS) return err;
    }
    w->post_group = std::move(ranks);
    w->in_post = true;
    return MPI_SUCCESS;
}

int win_start(Window* w, MPI_Group g, int) {
    if (w->in_start || any_lock(w))
        return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_start inside another access epoch");
    std::vector<int> ranks;
    int err = group_ranks(w, g, &ranks);
    if (err != MPI_SUCCESS) return err;
    w->start_group = std::move(ranks);
    w->start_posted.assign(w->start_group.size(), 0);
    w->in_start = true;
    w->fence_epoch = false;
    return MPI_SUCCESS;
}

int win_complete(Window* w) {
    if (!w->in_start)
        return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_complete without MPI_Win_start");
    int err = MPI_SUCCESS;
    std::atomic_thread_fence(std::memory_order_seq_cst);  // direct stores before COMPLETE
    for (int t : w->start_group) {
        in_start_group(w, t);  // consumes its POST if no operation did
        if (pscw_direct(w, t) && !w->dirty[size_t(t)]) {
            // Every operation to it was direct and is complete: the counter says it all. (After
            // messages, a COMPLETE message queues behind them instead.)
            pscw(w, true, t, w->rank).fetch_add(1, std::memory_order_release);
            continue;
        }
        Hdr h;
        h.type = Msg::complete;
        int e = send_ctrl(w, t, h);
        if (e != MPI_SUCCESS) err = e;
        w->dirty[size_t(t)] = 0;  // COMPLETE orders behind the operations
    }
    int e2 = wait_target(w, -1);
    w->in_start = false;
    w->start_group.clear();
    return err != MPI_SUCCESS ? err : e2;
}

namespace {
// Completions of the exposure epoch so far: COMPLETE messages plus the same-host origins'
// counters past what earlier epochs consumed (each origin completes once per epoch: its next
// MPI_Win_complete waits for this rank's next post).
int completes_now(const Window* w) {
    int n = w->completes_seen;
    for (int o : w->post_group)
        if (pscw_direct(w, o))
            n += int(pscw(w, true, w->rank, o).load(std::memory_order_acquire) -
                     w->done_used[size_t(o)]);
    return n;
}
bool completes_in(void* p) {
    auto* w = static_cast<Window*>(p);
    return completes_now(w) >= int(w->post_group.size());
}
}  // namespace

int win_wait(Window* w) {
    if (!w->in_post) return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_wait without MPI_Win_post");
    bool counters = false;
    for (int o : w->post_group) counters = counters || pscw_direct(w, o);
    if (counters)
        spin_until([w] { return completes_in(w); });
    else
        core::wait_until(completes_in, w);
    int by_counter = 0;
    for (int o : w->post_group)
        if (pscw_direct(w, o)) {
            uint32_t d = pscw(w, true, w->rank, o).load(std::memory_order_acquire);
            by_counter += int(d - w->done_used[size_t(o)]);
            w->done_used[size_t(o)] = d;
        }
    w->completes_seen -= int(w->post_group.size()) - by_counter;
    w->in_post = false;
    w->post_group.clear();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return MPI_SUCCESS;
}

int win_test(Window* w, int* flag) {
    if (!w->in_post) return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_test without MPI_Win_post");
    core::poll();
    *flag = completes_in(w);
    if (*flag) return win_wait(w);
    return MPI_SUCCESS;
}

// Locks each target: the lock word in the segment for ranks on this host (spinning with
// progress while it is held), a LOCK message answered on grant for the others.
static int lock_targets(Window* w, const std::vector<int>& targets, bool excl) {
    std::vector<int> remote;
    for (int t : targets) {
        if (!on_host(w, t)) {
            remote.push_back(t);
            continue;
        }
        spin_until([&] { return lock_try(w, t, excl); });
    }
    local_progress();
    if (remote.empty()) return MPI_SUCCESS;
    return round_trip(w, remote, Msg::lock, excl ? kFlagExclusive : 0, false);
}

// UNLOCK behind the operations, answered once they are applied; with MPI_MODE_NOCHECK no lock
// is held at the target, and a flush gives the remote completion.
static int unlock_targets(Window* w, const std::vector<int>& targets, bool excl, bool nocheck) {
    if (nocheck) {
        for (int t : targets) w->dirty[size_t(t)] = kDirtyFlush;
        return flush_many(w, targets);
    }
    // Ranks on this host: direct operations are complete already; operations sent as messages
    // (accumulates on user memory, CMA refused) are flushed before the lock word is released,
    // or the next holder could run before they are applied.
    std::vector<int> remote, here, sent;
    for (int t : targets) {
        if (!on_host(w, t)) remote.push_back(t);
        else if (here.push_back(t); w->dirty[size_t(t)]) sent.push_back(t);
    }
    int err = sent.empty() ? MPI_SUCCESS : flush_many(w, sent);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // direct stores before the release
    for (int t : here) lock_release(w, t, excl);
    if (remote.empty()) return err;
    int e2 = round_trip(w, remote, Msg::unlock, excl ? kFlagExclusive : 0, false);
    return err != MPI_SUCCESS ? err : e2;
}

int win_lock(Window* w, int type, int rank, int assert_) {
    if (type != MPI_LOCK_SHARED && type != MPI_LOCK_EXCLUSIVE)
        return core::make_error(MPI_ERR_LOCKTYPE, "lock type %d is neither MPI_LOCK_SHARED nor "
                                                  "MPI_LOCK_EXCLUSIVE", type);
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (rank < 0 || rank >= w->nranks)
        return core::make_error(MPI_ERR_RANK, "invalid rank %d: the window has %d ranks", rank,
                                w->nranks);
    if (w->locked[size_t(rank)] || w->lock_all)
        return core::make_error(MPI_ERR_RMA_SYNC, "rank %d is already locked by this process",
                                rank);
    if (w->in_start || w->fence_epoch) {
        // A fence epoch that has seen no operation may turn into lock epochs (MPICH allows it
        // too); one with operations pending may not.
        if (w->in_start || !w->out.empty())
            return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_lock inside an active-target "
                                                      "epoch");
        w->fence_epoch = false;
    }
    if (assert_ & ~(MPI_MODE_NOCHECK))
        return core::make_error(MPI_ERR_ASSERT, "invalid assert 0x%x for MPI_Win_lock",
                                unsigned(assert_));
    bool excl = type == MPI_LOCK_EXCLUSIVE;
    w->nocheck[size_t(rank)] = (assert_ & MPI_MODE_NOCHECK) != 0;
    if (!w->nocheck[size_t(rank)]) {
        // (a rank on this host: its lock word, without the vectors of the general path, which
        // cost a third of a lock / put / unlock iteration's instructions)
        int err = MPI_SUCCESS;
        if (on_host(w, rank)) {
            spin_until([&] { return lock_try(w, rank, excl); });
            local_progress();
        } else {
            err = lock_targets(w, std::vector<int>{rank}, excl);
        }
        if (err != MPI_SUCCESS) return err;
    }
    w->locked[size_t(rank)] = uint8_t(type - 233);
    return MPI_SUCCESS;
}

int win_unlock(Window* w, int rank) {
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (rank < 0 || rank >= w->nranks)
        return core::make_error(MPI_ERR_RANK, "invalid rank %d: the window has %d ranks", rank,
                                w->nranks);
    if (!w->locked[size_t(rank)])
        return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_unlock: rank %d is not locked", rank);
    bool excl = w->locked[size_t(rank)] == MPI_LOCK_EXCLUSIVE - 233;
    int err = MPI_SUCCESS;
    if (on_host(w, rank) && !w->nocheck[size_t(rank)] && !w->dirty[size_t(rank)]) {
        std::atomic_thread_fence(std::memory_order_seq_cst);  // direct stores before the release
        lock_release(w, rank, excl);
    } else {
        err = unlock_targets(w, std::vector<int>{rank}, excl, w->nocheck[size_t(rank)]);
    }
    w->locked[size_t(rank)] = 0;
    w->nocheck[size_t(rank)] = 0;
    return err;
}

int win_lock_all(Window* w, int assert_) {
    if (any_lock(w) || w->in_start)
        return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_lock_all inside another epoch");
    if (assert_ & ~(MPI_MODE_NOCHECK))
        return core::make_error(MPI_ERR_ASSERT, "invalid assert 0x%x for MPI_Win_lock_all",
                                unsigned(assert_));
    if (w->fence_epoch && !w->out.empty())
        return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_lock_all inside a fence epoch");
    w->fence_epoch = false;
    bool nocheck = (assert_ & MPI_MODE_NOCHECK) != 0;
    if (!nocheck) {
        int err = MPI_SUCCESS;
        if (w->all_here) {  // lock words only: no vectors (as win_lock)
            for (int t = 0; t < w->nranks; ++t)
                spin_until([&] { return lock_try(w, t, false); });
            local_progress();
        } else {
            err = lock_targets(w, all_targets(w), false);
        }
        if (err != MPI_SUCCESS) return err;
    }
    std::fill(w->nocheck.begin(), w->nocheck.end(), uint8_t(nocheck));  // (nranks entries)
    w->lock_all = true;
    return MPI_SUCCESS;
}

int win_unlock_all(Window* w) {
    if (!w->lock_all)
        return core::make_error(MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all without MPI_Win_lock_all");
    int err = MPI_SUCCESS;
    if (w->nocheck[0] == 0 && w->all_here && !any_sent(w)) {
        std::atomic_thread_fence(std::memory_order_seq_cst);  // direct stores before the release
        for (int t = 0; t < w->nranks; ++t) lock_release(w, t, false);
    } else {
        err = unlock_targets(w, all_targets(w), false, w->nocheck[0] != 0);
    }
    std::fill(w->nocheck.begin(), w->nocheck.end(), uint8_t(0));
    w->lock_all = false;
    return err;
}

static bool passive_ok(Window* w, int rank) {
    return w->lock_all || (rank >= 0 && rank < w->nranks && w->locked[size_t(rank)]);
}

int win_flush(Window* w, int rank, bool local) {
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (rank < 0 || rank >= w->nranks)
        return core::make_error(MPI_ERR_RANK, "invalid rank %d: the window has %d ranks", rank,
                                w->nranks);
    if (!passive_ok(w, rank))
        return core::make_error(MPI_ERR_RMA_SYNC, "flush of rank %d outside a passive-target "
                                                  "epoch on it", rank);
    return local ? wait_target(w, rank) : flush(w, rank);
}

int win_flush_all(Window* w, bool local) {
    if (!any_lock(w))
        return core::make_error(MPI_ERR_RMA_SYNC, "flush outside a passive-target epoch");
    if (local) return wait_target(w, -1);
    std::vector<int> t;
    for (int i = 0; i < w->nranks; ++i)
        if (passive_ok(w, i)) t.push_back(i);
    return flush_many(w, t);
}

int win_sync(Window*) {
    // The memory model is unified (one copy of window memory, which local stores and remote
    // operations both reach): a full memory barrier is all MPI_Win_sync has to do.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return MPI_SUCCESS;
}

}  // namespace wanmpi::rma
