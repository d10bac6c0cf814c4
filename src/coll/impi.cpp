// The "impi" collective component: IMPI's master-based algorithms for communicators whose members
// span more than one cluster (IMPI client), IMPI.md §6 and docs/impi-collectives.md.
//
// Every algorithm is phases over subsets of the communicator: a *local* phase inside each cluster
// (never crosses the WAN; built with the flat builders of algos.hpp on the cluster's members) and
// a *global* phase among one rank per cluster (the only traffic that crosses the WAN). The
// master of a cluster is its lowest rank in the communicator; masters are numbered by rank. For
// rooted collectives the root stands in for its cluster's master (IMPI's bcast/reduce rule), so
// the data never takes a detour through the root's master.
//
// Linear versus tree in the global phase (IMPI.md §6.3 [CONFLICT]): linear when the number of
// masters M <= IMPI_C_COLL_MAXLINEAR (LAM's `<=`, but against the negotiated value, as the
// checklist asks), the IMPI binomial hypercube tree above. Short versus long (IMPI_C_COLL_XSIZE):
// see each collective; bytes are the per-rank block (gather/scatter/alltoall) or the whole vector
// (allreduce).
//
// Flat builders on a subset: a Bld whose rank/n are the caller's index in the subset and the
// subset size, whose send/recv peers (subset indices) are translated to communicator ranks when
// the phase is done (on() below). All traffic stays in the communicator's collective context with
// the communicator's rank numbering, so a subset needs no context id of its own and no
// communication to set up. Each call reserves kTags consecutive tags (one per phase) from
// Comm::coll_seq, so phases, calls, and the flat module's calls never match each other's messages.
//
// Every schedule is built up front with no communication, so the nonblocking variants are the
// same schedules run under a request.
//
// Relies on (src/coll, owned by the collectives helper): Sched::steps_/ends_ being reachable (the
// peer translation and the round joining in on()), and the flat builders addressing peers only
// through Bld::rank/Bld::n (never Bld::c->rank/size).
//
// Collectives not implemented here (gatherv, scatterv, allgatherv, alltoallv/w, reduce_scatter,
// scan, exscan) go to the next module (flat), which is correct on any communicator, just not
// WAN-aware. Threading: under the API lock, like all of src/coll.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "base/tunables.hpp"
#include "coll/algos.hpp"
#include "coll/coll.hpp"
#include "core/comm_task.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "wanlink/pacer.hpp"

namespace wanmpi::coll {
namespace {

base::Tunable<bool> t_enable(
    "COLL", "IMPI", true,
    "Use the multi-cluster (IMPI master-based) collective algorithms on communicators that span "
    "several clusters; off: the single-cluster algorithms everywhere (for comparisons). Writable "
    "through MPI_T: communicators created afterwards follow the new value.",
    base::Level::tuner, nullptr, true, true);

// Overrides of the negotiated values, for tests and experiments (every rank must set the same).
base::Tunable<int64_t> t_xsize(
    "COLL", "IMPI_XSIZE", -1,
    "Multi-cluster collectives: short/long cut-over in bytes instead of the negotiated "
    "IMPI_C_COLL_XSIZE (-1: the negotiated value). Writable through MPI_T: communicators "
    "created afterwards use the new value.", base::Level::developer, nullptr, true, true);
base::Tunable<int64_t> t_maxlinear(
    "COLL", "IMPI_MAXLINEAR", -1,
    "Multi-cluster collectives: largest number of clusters whose global phase is linear, instead "
    "of the negotiated IMPI_C_COLL_MAXLINEAR (-1: the negotiated value); above it, trees. "
    "Writable through MPI_T: communicators created afterwards use the new value.",
    base::Level::developer, nullptr, true, true);

base::Tunable<bool> t_barrier_direct(
    "COLL", "IMPI_BARRIER_DIRECT", false,
    "Multi-cluster MPI_Barrier: the masters' global phase as one all-to-all round of zero-byte "
    "messages (1 one-way WAN delay) instead of IMPI's gather to master 0 and release (2 one-way "
    "delays). Every cluster must use the same setting; off keeps IMPI's message pattern. "
    "Writable through MPI_T (on every rank alike): barriers started afterwards use it.",
    base::Level::tuner, nullptr, true, true);

constexpr uint32_t kTags = 4;  // tags reserved per call: one per phase
enum Phase { P_LOCAL_IN = 0, P_GLOBAL = 1, P_LOCAL_OUT = 2, P_EXTRA = 3 };

// ---- the clusters of one communicator ----------------------------------------------------------
struct Topo {
    int n = 0, me = 0;
    int nm = 0;                             // masters = clusters the communicator spans
    std::vector<int> masters;               // master number -> comm rank (ascending)
    std::vector<std::vector<int>> locals;   // master number -> its cluster's comm ranks, ascending
    std::vector<int> mnum;                  // comm rank -> master number of its cluster
    std::vector<int> lidx;                  // comm rank -> index in locals[mnum]
    std::vector<int> runs;                  // starts of maximal same-cluster rank runs, then n
    bool blocked = false;                   // every cluster is one contiguous run of ranks
    int xsize = 1024, maxlinear = 4;        // IMPI_C_COLL_XSIZE / IMPI_C_COLL_MAXLINEAR

    bool linear() const { return nm <= maxlinear; }
    int k() const { return mnum[size_t(me)]; }
    const std::vector<int>& mine() const { return locals[size_t(k())]; }
    // locals[c] is a contiguous range of comm ranks
    bool contiguous(int c) const {
        const auto& l = locals[size_t(c)];
        return l.back() - l.front() + 1 == int(l.size());
    }
};

struct ImpiModule : Module {
    Topo t;
};

// A subset of the communicator's ranks: members (comm ranks; member i has sub-rank i), and the
// caller's sub-rank (-1: not a member).
struct Grp {
    const int* r;
    int n;
    int me;
};

Grp local_grp(const Topo& t) {
    const auto& l = t.mine();
    return {l.data(), int(l.size()), t.lidx[size_t(t.me)]};
}

const Ty& byte_ty() {
    static const Ty t = ty_of(MPI_BYTE);
    return t;
}

// Runs `f(Bld&)` -- the caller's part of a flat algorithm over `g` -- and translates its peers to
// communicator ranks. The phase's last round is closed, unless `open`: then steps built next join
// that round (used where the phase ends with sends only and the next phase may start at once,
// e.g. the root's WAN sends of bcast and its local bcast go out together instead of the local
// bcast waiting for the rendezvous of the WAN transfers).
template <class F>
void on(Sched& s, const Args& a, int tag, const Grp& g, F&& f, bool open = false) {
    if (g.me < 0) return;
    const size_t mark = s.steps_.size();
    Bld b(s, a.comm, tag);
    b.rank = g.me;
    b.n = g.n;
    b.op = a.op;
    b.oph = a.oph;
    f(b);
    for (size_t i = mark; i < s.steps_.size(); ++i) {
        Step& st = s.steps_[i];
        if (st.t == Step::T::send || st.t == Step::T::recv) st.peer = g.r[st.peer];
    }
    s.end_round();
    if (open && !s.ends_.empty() && s.ends_.back() == s.steps_.size() && s.steps_.size() > mark) {
        bool sends_only = true;
        const size_t first = s.ends_.size() >= 2 ? s.ends_[s.ends_.size() - 2] : 0;
        for (size_t i = first; i < s.steps_.size(); ++i)
            if (s.steps_[i].t != Step::T::send) sends_only = false;
        if (sends_only) s.ends_.pop_back();
    }
}

// ---- IMPI's binomial hypercube (IMPI.md §6.2) over sub-ranks 0..n-1, rooted at `root` --------
int cubedim(int n) {
    int d = 0;
    while ((1 << d) < n) ++d;
    return d;
}
int hibit(int v, int dim) {
    for (int i = dim - 1; i >= 0; --i)
        if (v & (1 << i)) return i;
    return -1;
}
// Parent (sub-rank) of the caller, or -1 at the root; children, largest subtree first.
int tree_parent(int r, int n, int root) {
    const int v = (r - root + n) % n;
    if (v == 0) return -1;
    return ((v & ~(1 << hibit(v, cubedim(n)))) + root) % n;
}
void tree_kids(int r, int n, int root, SmallVec<int>& kids) {
    const int v = (r - root + n) % n, dim = cubedim(n);
    for (int i = hibit(v, dim) + 1; i < dim; ++i)
        if ((v | (1 << i)) < n) kids.push_back(((v | (1 << i)) + root) % n);
}

// ---- phase builders (sub-rank numbering) -------------------------------------------------------
// Zero-byte fan-in to sub-rank 0 (binomial): sub-rank 0 leaves once every member has arrived.
void fanin(Bld& b) {
    const int r = b.rank, n = b.n, low = r ? (r & -r) : pof2_ceil(n);
    for (int mask = 1; mask < low && r + mask < n; mask <<= 1)
        b.recv(r + mask, nullptr, 0, MPI_BYTE);
    b.next();
    if (r) b.send(r - low, nullptr, 0, MPI_BYTE);
    b.next();
}

// Global barrier among masters (sub-rank 0 = master 0). Linear: M-1 zero-byte messages in, M-1
// out: one WAN round trip. Tree: fan-in then fan-out over the IMPI tree: 2*ceil(log2 M) one-way
// WAN delays on the critical path.
void global_barrier(Bld& b, bool linear) {
    const int r = b.rank, n = b.n;
    if (linear) {
        if (r == 0) {
            for (int i = 1; i < n; ++i) b.recv(i, nullptr, 0, MPI_BYTE);
            b.next();
            for (int i = 1; i < n; ++i) b.send(i, nullptr, 0, MPI_BYTE);
        } else {
            b.send(0, nullptr, 0, MPI_BYTE);
            b.recv(0, nullptr, 0, MPI_BYTE);
        }
        b.next();
        return;
    }
    SmallVec<int> kids;
    tree_kids(r, n, 0, kids);
    for (int c : kids) b.recv(c, nullptr, 0, MPI_BYTE);
    b.next();
    if (int p = tree_parent(r, n, 0); p >= 0) {
        b.send(p, nullptr, 0, MPI_BYTE);
        b.recv(p, nullptr, 0, MPI_BYTE);
        b.next();
    }
    for (int c : kids) b.send(c, nullptr, 0, MPI_BYTE);
    b.next();
}

// Global bcast among leaders. Linear: the root sends to every other leader (M-1 messages from
// the root, one WAN hop). Tree: the IMPI tree rooted at the root's master number.
void global_bcast(Bld& b, void* buf, int64_t count, const Ty& t, int root, bool linear) {
    if (linear) {
        bcast_linear(b, buf, count, t, root);
        return;
    }
    if (int p = tree_parent(b.rank, b.n, root); p >= 0) {
        b.recv(p, buf, count, t.h);
        b.next();
    }
    SmallVec<int> kids;
    tree_kids(b.rank, b.n, root, kids);
    for (int c : kids) b.send(c, buf, count, t.h);
    b.next();
}

// The single-cluster choice for the local phases (a subset of flat.cpp's table: the local
// network is fast; these only have to be sensible).
void local_bcast(Bld& b, void* buf, int64_t count, const Ty& t, int root) {
    if (b.n <= 1 || count == 0) return;
    const int64_t bytes = count * t.size;
    if (b.n <= 4) bcast_linear(b, buf, count, t, root);
    else if (bytes < 12288 || b.n < 8) bcast_binomial(b, buf, count, t, root);
    else bcast_scatter_allgather(b, buf, count, t, root, false);
}
void local_reduce(Bld& b, const void* in, void* out, int64_t count, const Ty& t, int root,
                  bool commutative) {
    if (commutative && b.n > 2 && count * t.size > 2048 && count >= b.n)
        reduce_rsg(b, in, out, count, t, root);
    else reduce_binomial(b, in, out, count, t, root, commutative);
}

const void* in_of(const Args& a) { return a.sbuf == MPI_IN_PLACE ? a.rbuf : a.sbuf; }

// Reserves this call's tags; every member calls every collective, so coll_seq agrees.
struct Tags {
    uint32_t base;
    explicit Tags(core::Comm* c) : base(c->coll_seq) { c->coll_seq += kTags; }
    int operator()(Phase p) const { return int((base + uint32_t(p)) & 0x3fffffff); }
};

void yield_if_small(Sched& s, int64_t bytes) { s.allow_yield(bytes <= yield_max_bytes()); }

// Leader of each cluster for a rooted collective: the root in its own cluster, else the master.
void leaders(const Topo& t, int root, SmallVec<int>& ld) {
    ld.resize(size_t(t.nm));
    for (int c = 0; c < t.nm; ++c) ld[size_t(c)] = t.masters[size_t(c)];
    ld[size_t(t.mnum[size_t(root)])] = root;
}

// ---- barrier ----------------------------------------------------------------------------------
// Local fan-in to the master, IMPI global phase among masters, local fan-out. WAN: linear 2(M-1)
// zero-byte messages, one round trip (2 one-way delays); tree 2 ceil(log2 M) one-way delays.
int impi_barrier(Module* mod, const Args& a, Sched& s) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    Tags tag(a.comm);
    yield_if_small(s, 0);
    const Grp lg = local_grp(t);
    on(s, a, tag(P_LOCAL_IN), lg, [](Bld& b) { fanin(b); });
    const Grp mg{t.masters.data(), t.nm, t.lidx[size_t(t.me)] == 0 ? t.k() : -1};
    on(s, a, tag(P_GLOBAL), mg, [&](Bld& b) {
        if (t_barrier_direct.get() && t.linear()) barrier_linear(b);
        else global_barrier(b, t.linear());
    });
    on(s, a, tag(P_LOCAL_OUT), lg,
       [](Bld& b) { bcast_binomial(b, nullptr, 0, byte_ty(), 0); });
    return MPI_SUCCESS;
}

// ---- bcast ------------------------------------------------------------------------------------
// Global phase among the root and the masters of the other clusters (linear: the root sends to
// each; tree: IMPI tree rooted at the root's master number with the root in its master's place),
// then a local bcast in each cluster from the root or the master. WAN: M-1 messages of the whole
// buffer, each cluster receives it exactly once; 1 one-way delay (linear).
int impi_bcast(Module* mod, const Args& a, Sched& s) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    if (a.rcount == 0 || a.rt.size == 0) return MPI_SUCCESS;
    Tags tag(a.comm);
    const int64_t bytes = a.rcount * a.rt.size;
    yield_if_small(s, bytes);
    SmallVec<int> ld;
    leaders(t, a.root, ld);
    const int k = t.k(), kr = t.mnum[size_t(a.root)];
    const Grp gg{ld.data(), t.nm, ld[size_t(k)] == t.me ? k : -1};
    on(s, a, tag(P_GLOBAL), gg,
       [&](Bld& b) { global_bcast(b, a.rbuf, a.rcount, a.rt, kr, t.linear()); }, true);
    const int lroot = t.lidx[size_t(ld[size_t(k)])];
    on(s, a, tag(P_LOCAL_OUT), local_grp(t),
       [&](Bld& b) { local_bcast(b, a.rbuf, a.rcount, a.rt, lroot); });
    s.end_round();
    return MPI_SUCCESS;
}

// ---- reduce -----------------------------------------------------------------------------------
// Commutative op (IMPI §4.16): local reduce to the leader (the root in its cluster, else the
// master), then the leaders' partials to the root: linear (M-1 messages of the whole vector into
// the root, one WAN hop) or up the IMPI tree. A leader posts its global receives together with
// its local phase, so WAN and local traffic overlap.
void reduce_commutative(const Topo& t, const Args& a, Sched& s, const Tags& tag, void* out_root) {
    const int64_t count = a.rcount;
    const Ty& ty = a.rt;
    SmallVec<int> ld;
    leaders(t, a.root, ld);
    const int k = t.k(), kr = t.mnum[size_t(a.root)];
    const bool leader = ld[size_t(k)] == t.me, root = t.me == a.root;
    void* part = root ? out_root : leader ? s.tmp_typed(ty, count) : nullptr;
    Bld g(s, a.comm, tag(P_GLOBAL));
    g.op = a.op;
    g.oph = a.oph;
    SmallVec<int> kids;  // master numbers
    SmallVec<void*> kbuf;
    int parent = -1;
    if (leader) {
        if (t.linear()) {
            if (root)
                for (int c = 0; c < t.nm; ++c)
                    if (c != kr) kids.push_back(c);
            if (!root) parent = kr;
        } else {
            tree_kids(k, t.nm, kr, kids);
            parent = tree_parent(k, t.nm, kr);
        }
        for (int c : kids) {
            void* p = s.tmp_typed(ty, count);
            kbuf.push_back(p);
            g.recv(ld[size_t(c)], p, count, ty.h);
        }
    }
    // The local phase's first round joins the global receives' round.
    const int lroot = t.lidx[size_t(ld[size_t(k)])];
    on(s, a, tag(P_LOCAL_IN), local_grp(t),
       [&](Bld& b) { local_reduce(b, in_of(a), part, count, ty, lroot, true); });
    if (!leader) return;
    for (size_t i = 0; i < kids.size(); ++i) g.reduce(kbuf[i], part, count, ty.h);
    if (parent >= 0) g.send(ld[size_t(parent)], part, count, ty.h);
    s.end_round();
}

// Any op, exact operand order: each maximal run of consecutive ranks in one cluster reduces
// locally (rank order) to its first rank (to the root in the root's run), and the root folds
// the runs' partials in rank order. WAN: one vector per run outside the root's cluster; in the
// usual IMPI layout (each cluster's ranks consecutive) that is one per cluster, M-1 in all;
// worst case (interleaved clusters) n-1, IMPI's "everyone sends to the root".
void reduce_ordered(const Topo& t, const Args& a, Sched& s, const Tags& tag, int root,
                    void* out_root) {
    const int64_t count = a.rcount;
    const Ty& ty = a.rt;
    const int nr = int(t.runs.size()) - 1;
    int myrun = 0, rootrun = 0;
    for (int q = 0; q < nr; ++q) {
        if (t.runs[size_t(q)] <= t.me && t.me < t.runs[size_t(q) + 1]) myrun = q;
        if (t.runs[size_t(q)] <= root && root < t.runs[size_t(q) + 1]) rootrun = q;
    }
    auto head = [&](int q) { return q == rootrun ? root : t.runs[size_t(q)]; };
    const int lo = t.runs[size_t(myrun)], len = t.runs[size_t(myrun) + 1] - lo;
    SmallVec<int> members;
    for (int i = 0; i < len; ++i) members.push_back(lo + i);
    const bool is_head = head(myrun) == t.me, is_root = t.me == root;
    Bld g(s, a.comm, tag(P_GLOBAL));
    g.op = a.op;
    g.oph = a.oph;
    SmallVec<void*> part(size_t(nr), nullptr);
    if (is_root) {  // the other runs' partials, received while the local phase runs
        for (int q = 0; q < nr; ++q) {
            if (q == rootrun) continue;
            part[size_t(q)] = s.tmp_typed(ty, count);
            g.recv(head(q), part[size_t(q)], count, ty.h);
        }
    }
    void* mine = is_root ? out_root : is_head ? s.tmp_typed(ty, count) : nullptr;
    on(s, a, tag(P_LOCAL_IN), Grp{members.data(), len, t.me - lo},
       [&](Bld& b) { reduce_binomial(b, in_of(a), mine, count, ty, head(myrun) - lo, false); });
    if (is_head && !is_root) {
        g.send(root, mine, count, ty.h);
        s.end_round();
        return;
    }
    if (!is_root) return;
    part[size_t(rootrun)] = mine;
    // out = P_0 (op) (P_1 (op) ( ... (op) P_{nr-1})), right to left into the last buffer.
    void* acc = part[size_t(nr) - 1];
    for (int q = nr - 2; q >= 0; --q) g.reduce(part[size_t(q)], acc, count, ty.h);
    if (acc != out_root) g.copy(acc, count, ty.h, out_root, count, ty.h);
    s.end_round();
}

int impi_reduce(Module* mod, const Args& a, Sched& s) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    if (a.rcount == 0 || a.rt.size == 0) return MPI_SUCCESS;
    Tags tag(a.comm);
    yield_if_small(s, a.rcount * a.rt.size);
    if (core::op_commutative(a.op)) reduce_commutative(t, a, s, tag, a.rbuf);
    else reduce_ordered(t, a, s, tag, a.root, a.rbuf);
    return MPI_SUCCESS;
}

// ---- allreduce --------------------------------------------------------------------------------
// Local reduce to the master, an allreduce among the masters, a local bcast. Among masters,
// short vectors (< XSIZE) take one WAN hop: every master sends its partial to every other
// (allreduce_linear; M ≤ MAXLINEAR) -- 1 one-way delay; long ones a direct reduce-scatter +
// allgather (allreduce_direct): each master sends 2(M-1)/M of the vector, 2 one-way delays.
// Above MAXLINEAR masters: recursive doubling (short, or non-commutative) or Rabenseifner.
// All of these keep rank order among masters, so when every cluster is one contiguous run of
// ranks, non-commutative ops take this path too; otherwise ordered reduce to rank 0 + bcast.
int impi_allreduce(Module* mod, const Args& a, Sched& s) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    if (a.rcount == 0 || a.rt.size == 0) return MPI_SUCCESS;
    Tags tag(a.comm);
    const int64_t count = a.rcount, bytes = count * a.rt.size;
    const Ty& ty = a.rt;
    yield_if_small(s, bytes);
    const bool commutative = core::op_commutative(a.op);
    const Grp lg = local_grp(t);
    if (!commutative && !t.blocked) {
        // reduce (ordered) to rank 0, then bcast from rank 0 through the masters.
        reduce_ordered(t, a, s, tag, 0, a.rbuf);
        const Grp mg{t.masters.data(), t.nm, t.lidx[size_t(t.me)] == 0 ? t.k() : -1};
        on(s, a, tag(P_EXTRA), mg,
           [&](Bld& b) { global_bcast(b, a.rbuf, count, ty, 0, t.linear()); }, true);
        on(s, a, tag(P_LOCAL_OUT), lg, [&](Bld& b) { local_bcast(b, a.rbuf, count, ty, 0); });
        s.end_round();
        return MPI_SUCCESS;
    }
    const bool master = t.lidx[size_t(t.me)] == 0;
    on(s, a, tag(P_LOCAL_IN), lg, [&](Bld& b) {
        local_reduce(b, in_of(a), master ? a.rbuf : nullptr, count, ty, 0, commutative);
    });
    const Grp mg{t.masters.data(), t.nm, master ? t.k() : -1};
    on(s, a, tag(P_GLOBAL), mg, [&](Bld& b) {
        if (t.linear()) {
            if (bytes < t.xsize || count < b.n) allreduce_linear(b, a.rbuf, a.rbuf, count, ty);
            else allreduce_direct(b, a.rbuf, a.rbuf, count, ty);
        } else if (bytes < t.xsize || !commutative || count < b.n) {
            allreduce_rdb(b, a.rbuf, a.rbuf, count, ty, commutative);
        } else {
            allreduce_rsag(b, a.rbuf, a.rbuf, count, ty);
        }
    });
    on(s, a, tag(P_LOCAL_OUT), lg, [&](Bld& b) { local_bcast(b, a.rbuf, count, ty, 0); });
    return MPI_SUCCESS;
}

// ---- gather / scatter -------------------------------------------------------------------------
// Short blocks (< XSIZE bytes per rank): through the leaders. Every rank sends its block to its
// cluster's leader (the root in the root's cluster), each other leader forwards its cluster's
// blocks to the root in one message: M-1 WAN messages, each block crosses the WAN once, 1 one-way
// delay plus a local hop. Long blocks: every rank straight to the root (no store-and-forward at
// the masters; the same WAN bytes).
int impi_gather(Module* mod, const Args& a, Sched& s) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    const bool root = t.me == a.root;
    const int64_t blk = root ? a.rcount * a.rt.size : a.scount * a.st.size;
    if (blk == 0) return MPI_SUCCESS;
    Tags tag(a.comm);
    yield_if_small(s, blk * t.n);
    Bld full(s, a.comm, tag(P_GLOBAL));
    if (blk >= t.xsize) {
        gather_linear(full, a.sbuf, a.scount, a.st, a.rbuf, a.rcount, a.rt, a.root);
        return MPI_SUCCESS;
    }
    SmallVec<int> ld;
    leaders(t, a.root, ld);
    const int k = t.k(), kr = t.mnum[size_t(a.root)];
    Bld lb(s, a.comm, tag(P_LOCAL_IN));
    const auto& L = t.mine();
    if (ld[size_t(k)] != t.me) {  // plain member
        lb.send(ld[size_t(k)], a.sbuf, a.scount, a.st.h);
        s.end_round();
        return MPI_SUCCESS;
    }
    if (!root) {  // a master: collect the cluster's blocks in local order, forward them
        char* W = s.tmp(int64_t(L.size()) * blk);
        for (size_t j = 0; j < L.size(); ++j) {
            if (L[j] == t.me)
                lb.copy(a.sbuf, a.scount, a.st.h, W + int64_t(j) * blk, blk, MPI_BYTE);
            else lb.recv(L[j], W + int64_t(j) * blk, blk, MPI_BYTE);
        }
        s.end_round();
        full.send(a.root, W, int64_t(L.size()) * blk, MPI_BYTE);
        s.end_round();
        return MPI_SUCCESS;
    }
    // The root: its cluster's blocks and the other clusters' bundles in one round.
    if (a.sbuf != MPI_IN_PLACE)
        lb.copy(a.sbuf, a.scount, a.st.h, at(a.rbuf, int64_t(t.me) * a.rcount, a.rt), a.rcount,
                a.rt.h);
    for (int p : L)
        if (p != t.me) lb.recv(p, at(a.rbuf, int64_t(p) * a.rcount, a.rt), a.rcount, a.rt.h);
    struct Unpack {
        int c;
        char* w;
    };
    SmallVec<Unpack> unpack;
    for (int c = 0; c < t.nm; ++c) {
        if (c == kr) continue;
        const auto& Lc = t.locals[size_t(c)];
        const int64_t nc = int64_t(Lc.size());
        if (t.contiguous(c)) {
            full.recv(ld[size_t(c)], at(a.rbuf, int64_t(Lc[0]) * a.rcount, a.rt), nc * a.rcount,
                      a.rt.h);
        } else {
            char* w = s.tmp(nc * blk);
            full.recv(ld[size_t(c)], w, nc * blk, MPI_BYTE);
            unpack.push_back({c, w});
        }
    }
    s.end_round();
    for (const Unpack& u : unpack) {
        const auto& Lc = t.locals[size_t(u.c)];
        for (size_t j = 0; j < Lc.size(); ++j)
            full.copy(u.w + int64_t(j) * blk, blk, MPI_BYTE,
                      at(a.rbuf, int64_t(Lc[j]) * a.rcount, a.rt), a.rcount, a.rt.h);
    }
    s.end_round();
    return MPI_SUCCESS;
}

// The mirror of gather: the root sends each other cluster's blocks to its master in one message
// (short blocks) or every block straight to its rank (long blocks).
int impi_scatter(Module* mod, const Args& a, Sched& s) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    const bool root = t.me == a.root;
    const int64_t blk = root ? a.scount * a.st.size : a.rcount * a.rt.size;
    if (blk == 0) return MPI_SUCCESS;
    Tags tag(a.comm);
    yield_if_small(s, blk * t.n);
    Bld full(s, a.comm, tag(P_GLOBAL));
    if (blk >= t.xsize) {
        scatter_linear(full, a.sbuf, a.scount, a.st, a.rbuf, a.rcount, a.rt, a.root);
        return MPI_SUCCESS;
    }
    SmallVec<int> ld;
    leaders(t, a.root, ld);
    const int k = t.k(), kr = t.mnum[size_t(a.root)];
    Bld lb(s, a.comm, tag(P_LOCAL_OUT));
    const auto& L = t.mine();
    if (ld[size_t(k)] != t.me) {
        lb.recv(ld[size_t(k)], a.rbuf, a.rcount, a.rt.h);
        s.end_round();
        return MPI_SUCCESS;
    }
    if (!root) {
        char* W = s.tmp(int64_t(L.size()) * blk);
        full.recv(a.root, W, int64_t(L.size()) * blk, MPI_BYTE);
        s.end_round();
        for (size_t j = 0; j < L.size(); ++j) {
            if (L[j] == t.me)
                lb.copy(W + int64_t(j) * blk, blk, MPI_BYTE, a.rbuf, a.rcount, a.rt.h);
            else lb.send(L[j], W + int64_t(j) * blk, blk, MPI_BYTE);
        }
        s.end_round();
        return MPI_SUCCESS;
    }
    // The root: WAN bundles first (they have the longest way to go), then its own cluster.
    for (int c = 0; c < t.nm; ++c) {
        if (c == kr) continue;
        const auto& Lc = t.locals[size_t(c)];
        const int64_t nc = int64_t(Lc.size());
        if (t.contiguous(c)) {
            full.send(ld[size_t(c)], at(a.sbuf, int64_t(Lc[0]) * a.scount, a.st), nc * a.scount,
                      a.st.h);
        } else {
            char* w = s.tmp(nc * blk);
            for (size_t j = 0; j < Lc.size(); ++j)
                full.copy(at(a.sbuf, int64_t(Lc[j]) * a.scount, a.st), a.scount, a.st.h,
                          w + int64_t(j) * blk, blk, MPI_BYTE);
            full.send(ld[size_t(c)], w, nc * blk, MPI_BYTE);
        }
    }
    for (int p : L)
        if (p != t.me) lb.send(p, at(a.sbuf, int64_t(p) * a.scount, a.st), a.scount, a.st.h);
    if (a.rbuf != MPI_IN_PLACE)
        lb.copy(at(a.sbuf, int64_t(t.me) * a.scount, a.st), a.scount, a.st.h, a.rbuf, a.rcount,
                a.rt.h);
    s.end_round();
    return MPI_SUCCESS;
}

// ---- allgather --------------------------------------------------------------------------------
// Local gather to the master, the masters exchange their clusters' blocks (linear: each master
// sends its cluster's blocks to every other master, one WAN hop; above MAXLINEAR masters a ring
// of M-1 steps), local bcast of the whole result. Each block crosses into each other cluster
// exactly once (the lower bound), whatever the size, so there is no XSIZE switch. The blocks
// travel in a packed cluster-order image; when every cluster is a contiguous run of ranks and
// the receive type is contiguous, that image is the receive buffer itself.
int impi_allgather(Module* mod, const Args& a, Sched& s) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    const int64_t blk = a.rcount * a.rt.size;
    if (blk == 0) return MPI_SUCCESS;
    Tags tag(a.comm);
    yield_if_small(s, blk * t.n);
    SmallVec<int64_t> off(size_t(t.nm) + 1, 0);  // byte offset of each cluster's region
    for (int c = 0; c < t.nm; ++c)
        off[size_t(c) + 1] = off[size_t(c)] + int64_t(t.locals[size_t(c)].size()) * blk;
    const bool direct = t.blocked && a.rt.contig;
    char* W = direct ? static_cast<char*>(a.rbuf) : s.tmp(int64_t(t.n) * blk);
    const int k = t.k(), j = t.lidx[size_t(t.me)];
    const auto& L = t.mine();
    Bld lb(s, a.comm, tag(P_LOCAL_IN));
    char* mine = W + off[size_t(k)] + int64_t(j) * blk;
    if (j != 0) {
        if (a.sbuf != MPI_IN_PLACE) lb.send(L[0], a.sbuf, a.scount, a.st.h);
        else lb.send(L[0], at(a.rbuf, int64_t(t.me) * a.rcount, a.rt), a.rcount, a.rt.h);
    } else {
        if (a.sbuf != MPI_IN_PLACE) lb.copy(a.sbuf, a.scount, a.st.h, mine, blk, MPI_BYTE);
        else if (!direct)
            lb.copy(at(a.rbuf, int64_t(t.me) * a.rcount, a.rt), a.rcount, a.rt.h, mine, blk,
                    MPI_BYTE);
        for (size_t i = 1; i < L.size(); ++i)
            lb.recv(L[i], W + off[size_t(k)] + int64_t(i) * blk, blk, MPI_BYTE);
    }
    s.end_round();
    const Grp mg{t.masters.data(), t.nm, j == 0 ? k : -1};
    on(s, a, tag(P_GLOBAL), mg, [&](Bld& b) {
        if (t.linear()) {
            for (int c = 0; c < t.nm; ++c)
                if (c != k) b.recv(c, W + off[size_t(c)], off[size_t(c) + 1] - off[size_t(c)],
                                   MPI_BYTE);
            for (int i = 1; i < t.nm; ++i) {
                int c = (k + i) % t.nm;
                b.send(c, W + off[size_t(k)], off[size_t(k) + 1] - off[size_t(k)], MPI_BYTE);
            }
            b.next();
        } else {
            SmallVec<int> cnt(size_t(t.nm)), dsp(size_t(t.nm));
            for (int c = 0; c < t.nm; ++c) {
                cnt[size_t(c)] = int(off[size_t(c) + 1] - off[size_t(c)]);
                dsp[size_t(c)] = int(off[size_t(c)]);
            }
            allgatherv_ring(b, MPI_IN_PLACE, 0, byte_ty(), W, cnt.data(), dsp.data(), byte_ty());
        }
    });
    on(s, a, tag(P_LOCAL_OUT), local_grp(t),
       [&](Bld& b) { local_bcast(b, W, int64_t(t.n) * blk, byte_ty(), 0); });
    if (!direct) {
        for (int c = 0; c < t.nm; ++c) {
            const auto& Lc = t.locals[size_t(c)];
            for (size_t i = 0; i < Lc.size(); ++i)
                lb.copy(W + off[size_t(c)] + int64_t(i) * blk, blk, MPI_BYTE,
                        at(a.rbuf, int64_t(Lc[i]) * a.rcount, a.rt), a.rcount, a.rt.h);
        }
        s.end_round();
    }
    return MPI_SUCCESS;
}

// ---- alltoall ---------------------------------------------------------------------------------
// Short blocks (< XSIZE): combined through the masters, so the WAN carries one message per
// ordered pair of clusters instead of one per pair of ranks: (1) every rank sends its master the
// blocks for each other cluster (one local message per cluster) and exchanges blocks with its
// own cluster directly; (2) master k sends master c the |L_k| x |L_c| blocks from its cluster to
// c's; (3) each master sends each of its ranks the blocks addressed to it. WAN: M(M-1) messages,
// every block crosses once, 1 one-way delay (+2 local hops). Long blocks: the next module's
// direct exchange (no store-and-forward through the masters; the same WAN bytes).
int impi_alltoall(Module* mod, const Args& a, Sched& s) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    const int64_t blk = a.rcount * a.rt.size;
    if (blk >= t.xsize) return build_with(mod->next, a, s);
    if (blk == 0) return MPI_SUCCESS;
    Tags tag(a.comm);
    yield_if_small(s, blk * t.n);
    const int k = t.k(), j = t.lidx[size_t(t.me)];
    const auto& L = t.mine();
    const int64_t nl = int64_t(L.size()), nrem = int64_t(t.n) - nl;
    Bld b0(s, a.comm, tag(P_LOCAL_IN));   // direct exchange inside the cluster
    Bld b3(s, a.comm, tag(P_EXTRA));      // blocks for other clusters, to the master
    Bld bg(s, a.comm, tag(P_GLOBAL));     // master <-> master
    Bld b2(s, a.comm, tag(P_LOCAL_OUT));  // master -> ranks
    // Source blocks: the user's send buffer, or a packed image of the receive buffer.
    const char* S = static_cast<const char*>(a.sbuf);
    int64_t scount = a.scount;
    MPI_Datatype sdt = a.stype;
    Ty st = a.st;
    if (a.sbuf == MPI_IN_PLACE) {
        char* img = s.tmp(int64_t(t.n) * blk);
        b0.copy(a.rbuf, int64_t(t.n) * a.rcount, a.rt.h, img, int64_t(t.n) * blk, MPI_BYTE);
        S = img;
        scount = blk;
        sdt = MPI_BYTE;
        st = byte_ty();
    }
    auto src = [&](int p) { return at(S, int64_t(p) * scount, st); };
    auto dst = [&](int p) { return at(a.rbuf, int64_t(p) * a.rcount, a.rt); };
    // (1) inside the cluster, and the remote-bound blocks to the master
    for (int p : L)
        if (p != t.me) b0.recv(p, dst(p), a.rcount, a.rt.h);
    for (int p : L)
        if (p != t.me) b0.send(p, src(p), scount, sdt);
    b0.copy(src(t.me), scount, sdt, dst(t.me), a.rcount, a.rt.h);
    // Sends a (contiguous-range or packed) run of blocks for cluster c's ranks.
    auto blocks_for = [&](int c, char* pack_at) -> const char* {
        const auto& Lc = t.locals[size_t(c)];
        if (t.contiguous(c)) return nullptr;  // caller sends typed straight from S
        for (size_t i = 0; i < Lc.size(); ++i)
            b3.copy(src(Lc[i]), scount, sdt, pack_at + int64_t(i) * blk, blk, MPI_BYTE);
        return pack_at;
    };
    SmallVec<char*> B(size_t(t.nm), nullptr);  // master: bundle for cluster c, [local j][dest]
    if (j != 0) {
        char* D = s.tmp(nrem * blk);  // from the master: [cluster][source] blocks for me
        b2.recv(L[0], D, nrem * blk, MPI_BYTE);
        for (int c = 0; c < t.nm; ++c) {
            if (c == k) continue;
            const auto& Lc = t.locals[size_t(c)];
            const int64_t nc = int64_t(Lc.size());
            if (const char* p = blocks_for(c, s.tmp(nc * blk)))
                b3.send(L[0], p, nc * blk, MPI_BYTE);
            else b3.send(L[0], src(Lc[0]), nc * scount, sdt);
        }
        s.end_round();
        int64_t pos = 0;
        for (int c = 0; c < t.nm; ++c) {
            if (c == k) continue;
            for (int p : t.locals[size_t(c)]) {
                b2.copy(D + pos, blk, MPI_BYTE, dst(p), a.rcount, a.rt.h);
                pos += blk;
            }
        }
        s.end_round();
        return MPI_SUCCESS;
    }
    // The master.
    for (int c = 0; c < t.nm; ++c) {
        if (c == k) continue;
        const auto& Lc = t.locals[size_t(c)];
        const int64_t nc = int64_t(Lc.size());
        B[size_t(c)] = s.tmp(nl * nc * blk);
        if (t.contiguous(c)) {
            b3.copy(src(Lc[0]), nc * scount, sdt, B[size_t(c)], nc * blk, MPI_BYTE);
        } else {
            for (size_t i = 0; i < Lc.size(); ++i)
                b3.copy(src(Lc[i]), scount, sdt, B[size_t(c)] + int64_t(i) * blk, blk, MPI_BYTE);
        }
        for (int64_t i = 1; i < nl; ++i)
            b3.recv(L[size_t(i)], B[size_t(c)] + i * nc * blk, nc * blk, MPI_BYTE);
    }
    s.end_round();
    // (2) master <-> master: R[c] = [source in c][dest in my cluster]
    SmallVec<char*> R(size_t(t.nm), nullptr);
    for (int i = 1; i < t.nm; ++i) {
        int c = (k - i + t.nm) % t.nm;
        const int64_t nc = int64_t(t.locals[size_t(c)].size());
        R[size_t(c)] = s.tmp(nc * nl * blk);
        bg.recv(t.masters[size_t(c)], R[size_t(c)], nc * nl * blk, MPI_BYTE);
    }
    for (int i = 1; i < t.nm; ++i) {
        int c = (k + i) % t.nm;
        const int64_t nc = int64_t(t.locals[size_t(c)].size());
        bg.send(t.masters[size_t(c)], B[size_t(c)], nl * nc * blk, MPI_BYTE);
    }
    s.end_round();
    // (3) to each local rank its blocks, [cluster][source]; mine straight into the receive buffer
    for (int64_t i = 0; i < nl; ++i) {
        char* D = i ? s.tmp(nrem * blk) : nullptr;
        int64_t pos = 0;
        for (int c = 0; c < t.nm; ++c) {
            if (c == k) continue;
            const auto& Lc = t.locals[size_t(c)];
            for (size_t q = 0; q < Lc.size(); ++q) {
                const char* from = R[size_t(c)] + (int64_t(q) * nl + i) * blk;
                if (i) b2.copy(from, blk, MPI_BYTE, D + pos, blk, MPI_BYTE);
                else b2.copy(from, blk, MPI_BYTE, dst(Lc[q]), a.rcount, a.rt.h);
                pos += blk;
            }
        }
        if (i) b2.send(L[size_t(i)], D, nrem * blk, MPI_BYTE);
    }
    s.end_round();
    return MPI_SUCCESS;
}

// ---- the component ----------------------------------------------------------------------------
// ---- rate-managed collectives -------------------------------------------------------------
// Who sends across the WAN at once (GridMPI paced Alltoall(v); we pace these five): in the
// master-based algorithms above only the masters do (1 per cluster: the full link rate); in the
// next module's direct exchanges (long alltoall blocks, alltoallv/w) every rank of the cluster
// does, all at once; in its ring Allgatherv only the ranks whose right neighbour is in another
// cluster. Calls that move little are left alone: a setsockopt per WAN socket at entry and exit
// costs more than pacing a few packets saves.
base::Tunable<int64_t> t_paced_min(
    "COLL", "WAN_PACED_MIN", 64 * 1024,
    "Rate-managed collectives (with WANMPI_WAN_RATE): Alltoall(v/w) and Allgather(v) calls in "
    "which a rank receives at least this many bytes pace its WAN sockets to its share of the "
    "link (rate / concurrent WAN senders of its cluster, or in proportion to its WAN bytes "
    "where they differ) for the call; smaller calls are left alone. -1: never (every rank of a "
    "cluster must agree on -1). Writable through MPI_T: calls started afterwards use the new "
    "value.",
    base::Level::tuner, nullptr, true, true);

base::Tunable<std::string> t_shares(
    "COLL", "WAN_SHARES", "volume",
    "Rate-managed Alltoallv/w: volume gives each rank a share of the link in proportion to the "
    "bytes it sends across (the ranks of a cluster exchange their volumes at the start of the "
    "call); equal gives each rank the same share (rate / ranks of its cluster), for "
    "comparisons. Every rank of a cluster must use the same setting.",
    base::Level::developer);

// Bytes this rank sends to comm rank j in an Alltoallv/w.
int64_t a2av_send_bytes(const Args& a, int j) {
    const bool w = a.kind == Kind::alltoallw;
    if (a.sbuf == MPI_IN_PLACE)
        return int64_t(a.rcounts[j]) * (w ? ty_of(a.rtypes[j]).size : a.rt.size);
    return int64_t(a.scounts[j]) * (w ? ty_of(a.stypes[j]).size : a.st.size);
}

// Work-conserving shares. With a share of link / senders each, a rank with less to send than
// the others finishes early and leaves its share unused while the rest go on at theirs
// (Alltoallv 1 MiB: 1.49x the bytes/rate bound). So the ranks of a cluster tell each other how
// many bytes each sends across the WAN in this call (`mine`; 0: none, or not managed), and each
// takes link x its bytes / the cluster's: all finish together. The exchange stays inside the
// cluster (one 8-byte message to and from every other rank of it, microseconds against the
// call's milliseconds on the WAN), in the communicator's collective context under a tag of its
// own (core/comm_task.hpp), so it never matches a collective's messages and needs no sequence
// number the other clusters would have to follow. Every rank of the cluster must take part:
// the decision to exchange depends only on what they all share (the call, the communicator,
// the tunable's -1). The shares themselves: wanlink::volume_share.
void share_by_volume(const Topo& t, const Args& a, int64_t mine, core::WanShare* out) {
    const auto& L = t.mine();
    const size_t nl = L.size(), me = size_t(t.lidx[size_t(t.me)]);
    std::vector<int64_t> v(nl, 0);
    v[me] = mine;
    if (nl > 1) {
        Sched* s = sched_new();
        Bld b(*s, a.comm, core::mgmt_tag(core::TagKind::wan_share, 0));
        for (size_t i = 0; i < nl; ++i)
            if (i != me) {
                b.recv(L[i], &v[i], 1, MPI_INT64_T);
                b.send(L[i], &v[me], 1, MPI_INT64_T);
            }
        b.next();
        s->allow_yield(true);
        if (run_blocking(s) != MPI_SUCCESS) return;  // the call itself will report the failure
    }
    const wanlink::VolumeShare vs = wanlink::volume_share(v.data(), nl, me);
    if (vs.share <= 0) return;
    out->senders = vs.senders;
    out->index = vs.index;
    out->share = vs.share;
}

void impi_wan_share(Module* mod, const Args& a, core::WanShare* out) {
    const Topo& t = static_cast<ImpiModule*>(mod)->t;
    const int64_t kManagedMin = t_paced_min.get();
    if (t.nm < 2 || kManagedMin < 0) return;
    const int nl = int(t.mine().size());
    const int k = t.k();
    out->flows = t.n - nl;  // direct exchanges: every remote rank at once
    out->index = t.lidx[size_t(t.me)];
    int64_t bytes = 0;
    switch (a.kind) {
    case Kind::allgather:
    case Kind::alltoall:
        bytes = a.rcount * a.rt.size * t.n;
        if (bytes < kManagedMin) return;
        if (a.kind == Kind::allgather || a.rcount * a.rt.size < t.xsize) {
            out->flows = t.nm - 1;  // master to masters
            out->index = 0;
            out->senders = 1;
            return;
        }
        out->senders = nl;
        return;
    case Kind::allgatherv: {
        for (int i = 0; i < t.n; ++i) bytes += int64_t(a.rcounts[i]) * a.rt.size;
        if (bytes < kManagedMin) return;
        if (std::strcmp(flat_algorithm(a), "ring") != 0) {
            out->senders = nl;  // recursive doubling: the crossing step has all of them
            return;
        }
        // Ring: only the edges leaving the cluster cross, one flow each, carrying about the
        // same bytes (all blocks but one): the link in equal parts among them. The others do
        // not send across the WAN at all.
        int senders = 0, index = -1;
        for (int r : t.mine()) {
            if (t.mnum[size_t((r + 1) % t.n)] == k) continue;
            if (r == t.me) index = senders;
            ++senders;
        }
        if (index < 0) return;
        out->senders = senders;
        out->flows = 1;
        out->index = index;
        return;
    }
    case Kind::alltoallv:
    case Kind::alltoallw: {
        // Received bytes decide whether this rank is managed (as for the others).
        int64_t mine = 0;
        for (int i = 0; i < t.n; ++i) {
            bytes += int64_t(a.rcounts[i]) *
                     (a.kind == Kind::alltoallw ? ty_of(a.rtypes[i]).size : a.rt.size);
            if (t.mnum[size_t(i)] == k) continue;
            const int64_t b = a2av_send_bytes(a, i);
            mine += b;
            if (b > 0) out->peer_bytes.emplace_back(a.comm->world[size_t(i)], uint64_t(b));
        }
        if (t_shares.get() == "equal") {
            out->peer_bytes.clear();
            if (bytes >= kManagedMin) out->senders = nl;
            return;
        }
        // The exchange happens whether this rank is managed or not, so that the ranks of the
        // cluster stay in step.
        share_by_volume(t, a, bytes < kManagedMin ? 0 : mine, out);
        return;
    }
    default:
        return;
    }
}

Module* impi_query(core::Comm* c) {
    if (c->inter || core::cluster_count() < 2 || !t_enable.get()) return nullptr;
    auto m = std::make_unique<ImpiModule>();
    Topo& t = m->t;
    t.n = c->size;
    t.me = c->rank;
    t.mnum.resize(size_t(t.n));
    t.lidx.resize(size_t(t.n));
    std::map<int, int> num;  // cluster index -> master number
    for (int i = 0; i < t.n; ++i) {
        const int cl = core::cluster_of(c->world[size_t(i)]);
        auto it = num.find(cl);
        if (it == num.end()) {
            it = num.emplace(cl, int(t.masters.size())).first;
            t.masters.push_back(i);
            t.locals.emplace_back();
        }
        const int k = it->second;
        t.mnum[size_t(i)] = k;
        t.lidx[size_t(i)] = int(t.locals[size_t(k)].size());
        t.locals[size_t(k)].push_back(i);
    }
    t.nm = int(t.masters.size());
    if (t.nm < 2) return nullptr;  // inside one cluster: the single-cluster algorithms
    for (int i = 0; i < t.n; ++i)
        if (i == 0 || t.mnum[size_t(i)] != t.mnum[size_t(i) - 1]) t.runs.push_back(i);
    t.runs.push_back(t.n);
    t.blocked = int(t.runs.size()) - 1 == t.nm;
    // Negative = "the default" on the wire (IMPI.md §3.6): 1024 bytes, 4 masters.
    t.xsize = t_xsize.get() >= 0 ? int(t_xsize.get()) : core::impi_coll_xsize();
    t.maxlinear = t_maxlinear.get() >= 0 ? int(t_maxlinear.get()) : core::impi_coll_maxlinear();
    if (t.xsize < 0) t.xsize = 1024;
    if (t.maxlinear < 0) t.maxlinear = 4;
    m->name = "impi";
    m->fn[int(Kind::barrier)] = impi_barrier;
    m->fn[int(Kind::bcast)] = impi_bcast;
    m->fn[int(Kind::reduce)] = impi_reduce;
    m->fn[int(Kind::allreduce)] = impi_allreduce;
    m->fn[int(Kind::gather)] = impi_gather;
    m->fn[int(Kind::scatter)] = impi_scatter;
    m->fn[int(Kind::allgather)] = impi_allgather;
    m->fn[int(Kind::alltoall)] = impi_alltoall;
    m->wan_share = impi_wan_share;
    m->destroy = [](Module* mm) { delete static_cast<ImpiModule*>(mm); };
    WANMPI_LOG(debug, "coll/impi: %s spans %d clusters (%s), XSIZE %d, MAXLINEAR %d",
               c->name.c_str(), t.nm, t.blocked ? "blocked" : "interleaved", t.xsize,
               t.maxlinear);
    return m.release();
}

const Component kImpi{"impi", 30, impi_query};
struct Register {
    Register() { register_component(&kImpi); }
} g_register;

}  // namespace
}  // namespace wanmpi::coll
