// The "flat" component: single-cluster algorithms for every intracommunicator, and THE table of
// algorithms (kAlgos) with their restrictions, the automatic choice by message and communicator
// size, and the tunables that force one (WANMPI_COLL_<COLLECTIVE>=<algorithm>).
//
// Every rank must make the same choice, so the choice only depends on values that agree across
// ranks: the communicator size, the message size as MPI's type-signature rules make it equal
// everywhere (e.g. the receive block of gather at the root = the send block elsewhere), the
// op's commutativity, and the tunables (declared "agree").
#include <cstring>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "base/tunables.hpp"
#include "coll/algos.hpp"
#include "coll/coll.hpp"
#include "coll/reduce_fast.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::coll {

namespace {

// ---- tunables ---------------------------------------------------------------------------------
#define FORCE(var, NAME, kind)                                                                  \
    base::Tunable<std::string> var("COLL", NAME, "auto",                                        \
                                   "Algorithm for " kind ": auto, or one of the names listed "  \
                                   "for it in docs/collectives.md (not applicable: auto).",     \
                                   base::Level::tuner, nullptr, true)
FORCE(t_barrier, "BARRIER", "MPI_Barrier/Ibarrier");
FORCE(t_bcast, "BCAST", "MPI_Bcast/Ibcast");
FORCE(t_gather, "GATHER", "MPI_Gather/Igather");
FORCE(t_gatherv, "GATHERV", "MPI_Gatherv/Igatherv");
FORCE(t_scatter, "SCATTER", "MPI_Scatter/Iscatter");
FORCE(t_scatterv, "SCATTERV", "MPI_Scatterv/Iscatterv");
FORCE(t_allgather, "ALLGATHER", "MPI_Allgather/Iallgather");
FORCE(t_allgatherv, "ALLGATHERV", "MPI_Allgatherv/Iallgatherv");
FORCE(t_alltoall, "ALLTOALL", "MPI_Alltoall/Ialltoall");
FORCE(t_alltoallv, "ALLTOALLV", "MPI_Alltoallv/Ialltoallv");
FORCE(t_alltoallw, "ALLTOALLW", "MPI_Alltoallw/Ialltoallw");
FORCE(t_reduce, "REDUCE", "MPI_Reduce/Ireduce");
FORCE(t_allreduce, "ALLREDUCE", "MPI_Allreduce/Iallreduce");
FORCE(t_reduce_scatter, "REDUCE_SCATTER", "MPI_Reduce_scatter/Ireduce_scatter");
FORCE(t_reduce_scatter_block, "REDUCE_SCATTER_BLOCK",
      "MPI_Reduce_scatter_block/Ireduce_scatter_block");
FORCE(t_scan, "SCAN", "MPI_Scan/Iscan");
FORCE(t_exscan, "EXSCAN", "MPI_Exscan/Iexscan");
#undef FORCE

base::Tunable<std::string>* const kForce[kKinds] = {
    &t_barrier, &t_bcast, &t_gather, &t_gatherv, &t_scatter, &t_scatterv, &t_allgather,
    &t_allgatherv, &t_alltoall, &t_alltoallv, &t_alltoallw, &t_reduce, &t_allreduce,
    &t_reduce_scatter, &t_reduce_scatter_block, &t_scan, &t_exscan};

base::Tunable<int64_t> t_bcast_short(
    "COLL", "BCAST_SHORT", 12288,
    "MPI_Bcast: below this many bytes, or on fewer than BCAST_MIN_PROCS ranks, the binomial "
    "tree; above, scatter + allgather.", base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_bcast_long(
    "COLL", "BCAST_LONG", 524288,
    "MPI_Bcast: from this many bytes on, scatter + ring allgather (between SHORT and LONG on a "
    "power-of-two communicator: scatter + recursive-doubling allgather).", base::Level::tuner,
    nullptr, true);
base::Tunable<int64_t> t_bcast_min_procs(
    "COLL", "BCAST_MIN_PROCS", 8,
    "MPI_Bcast: communicators smaller than this use the binomial tree for every size (or the "
    "linear one up to BCAST_LINEAR_PROCS ranks).", base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_bcast_linear_procs(
    "COLL", "BCAST_LINEAR_PROCS", 4,
    "MPI_Bcast: communicators of at most this many ranks use the linear algorithm (the root "
    "sends to everyone; no rank waits for another to forward).", base::Level::tuner, nullptr,
    true);
base::Tunable<int64_t> t_bcast_segment(
    "COLL", "BCAST_SEGMENT", 65536,
    "MPI_Bcast pipeline algorithm: bytes per segment. Writable through MPI_T: broadcasts started "
    "afterwards use the new value.", base::Level::tuner, nullptr, true, true);
base::Tunable<int64_t> t_gather_linear(
    "COLL", "GATHER_LINEAR", 32768,
    "MPI_Gather/Scatter: from this many bytes per rank on, the linear algorithm (the root talks "
    "to every rank directly) instead of the binomial tree.", base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_allgather_short(
    "COLL", "ALLGATHER_SHORT", 81920,
    "MPI_Allgather(v): below this many bytes in total, recursive doubling (power-of-two "
    "communicators) or Bruck; above, the ring.", base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_allgather_linear_procs(
    "COLL", "ALLGATHER_LINEAR_PROCS", 4,
    "MPI_Allgather: communicators of at most this many ranks use the linear algorithm (one "
    "round, every block straight to every rank) for every size.", base::Level::tuner, nullptr,
    true);
base::Tunable<int64_t> t_alltoall_short(
    "COLL", "ALLTOALL_SHORT", 256,
    "MPI_Alltoall: blocks of at most this many bytes use Bruck's algorithm on communicators of "
    "at least ALLTOALL_BRUCK_PROCS ranks.", base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_alltoall_bruck_procs(
    "COLL", "ALLTOALL_BRUCK_PROCS", 8,
    "MPI_Alltoall: smallest communicator on which short blocks use Bruck's algorithm.",
    base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_alltoall_medium(
    "COLL", "ALLTOALL_MEDIUM", 32768,
    "MPI_Alltoall: blocks up to this many bytes (or any size on at most ALLTOALL_LINEAR_PROCS "
    "ranks) post every transfer at once (linear); larger ones exchange with one partner per "
    "round (pairwise).", base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_alltoall_linear_procs(
    "COLL", "ALLTOALL_LINEAR_PROCS", 8,
    "MPI_Alltoall: communicators of at most this many ranks use the linear algorithm for every "
    "block size.", base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_reduce_short(
    "COLL", "REDUCE_SHORT", 2048,
    "MPI_Reduce/Allreduce: up to this many bytes, binomial tree / recursive doubling; above, "
    "for commutative ops, Rabenseifner's reduce-scatter based algorithms.", base::Level::tuner,
    nullptr, true);
base::Tunable<int64_t> t_allreduce_linear(
    "COLL", "ALLREDUCE_LINEAR", 1024,
    "MPI_Allreduce: up to this many bytes on at most ALLREDUCE_LINEAR_PROCS ranks, the linear "
    "algorithm (one round: every vector to every rank, reduced locally in rank order).",
    base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_allreduce_linear_procs(
    "COLL", "ALLREDUCE_LINEAR_PROCS", 4, "MPI_Allreduce: see ALLREDUCE_LINEAR.",
    base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_allreduce_ring(
    "COLL", "ALLREDUCE_RING", 1 << 30,
    "MPI_Allreduce: from this many bytes on, commutative ops use the ring algorithm instead of "
    "Rabenseifner's.", base::Level::tuner, nullptr, true);
base::Tunable<int64_t> t_reduce_scatter_long(
    "COLL", "REDUCE_SCATTER_LONG", 524288,
    "MPI_Reduce_scatter(_block): from this many bytes in total on, commutative ops use the "
    "pairwise algorithm instead of recursive halving.", base::Level::tuner, nullptr, true);

// ---- per call ---------------------------------------------------------------------------------
struct Ctx {
    Ty st, rt;              // send and receive (or only) datatype
    bool commutative = true;
    int64_t bytes = 0;      // the size the choice depends on (see choose())
};

using Build = void (*)(Bld& b, const Args& a, const Ctx& x);
enum : unsigned { R_COMMUTATIVE = 1, R_POF2 = 2 };

struct Algo {
    Kind kind;
    const char* name;
    unsigned restrict_;
    Build build;
    const char* doc;
};

const void* in_of(const Args& a) { return a.sbuf == MPI_IN_PLACE ? a.rbuf : a.sbuf; }

// ---- wrappers: Args -> algorithm -------------------------------------------------------------
void w_barrier(Bld& b, const Args&, const Ctx&) { barrier_dissemination(b); }

void w_bcast_binomial(Bld& b, const Args& a, const Ctx& x) {
    bcast_binomial(b, a.rbuf, a.rcount, x.rt, a.root);
}
void w_bcast_scatter_ring(Bld& b, const Args& a, const Ctx& x) {
    bcast_scatter_allgather(b, a.rbuf, a.rcount, x.rt, a.root, false);
}
void w_bcast_scatter_rdb(Bld& b, const Args& a, const Ctx& x) {
    bcast_scatter_allgather(b, a.rbuf, a.rcount, x.rt, a.root, true);
}
void w_bcast_pipeline(Bld& b, const Args& a, const Ctx& x) {
    bcast_pipeline(b, a.rbuf, a.rcount, x.rt, a.root, t_bcast_segment.get());
}

void w_gather_linear(Bld& b, const Args& a, const Ctx& x) {
    gather_linear(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt, a.root);
}
void w_gather_binomial(Bld& b, const Args& a, const Ctx& x) {
    gather_binomial(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt, a.root);
}
void w_gatherv_linear(Bld& b, const Args& a, const Ctx& x) {
    gatherv_linear(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcounts, a.rdispls, x.rt, a.root);
}
void w_scatter_linear(Bld& b, const Args& a, const Ctx& x) {
    scatter_linear(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt, a.root);
}
void w_scatter_binomial(Bld& b, const Args& a, const Ctx& x) {
    scatter_binomial(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt, a.root);
}
void w_scatterv_linear(Bld& b, const Args& a, const Ctx& x) {
    scatterv_linear(b, a.sbuf, a.scounts, a.sdispls, x.st, a.rbuf, a.rcount, x.rt, a.root);
}

void w_allgather_ring(Bld& b, const Args& a, const Ctx& x) {
    allgather_ring(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt);
}
void w_allgather_rdb(Bld& b, const Args& a, const Ctx& x) {
    allgather_rdb(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt);
}
void w_allgather_bruck(Bld& b, const Args& a, const Ctx& x) {
    allgather_bruck(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt);
}
void w_allgatherv_ring(Bld& b, const Args& a, const Ctx& x) {
    allgatherv_ring(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcounts, a.rdispls, x.rt);
}
void w_allgatherv_rdb(Bld& b, const Args& a, const Ctx& x) {
    allgatherv_rdb(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcounts, a.rdispls, x.rt);
}

// Alltoall family: one block per peer; MPI_IN_PLACE sends a packed copy of rbuf.
void a2a_blocks(Bld& b, const Args& a, const Ctx& x, SmallVec<Blk>& S, SmallVec<Blk>& R) {
    const int n = b.n;
    S.resize(size_t(n));
    R.resize(size_t(n));
    const bool w = a.kind == Kind::alltoallw, v = a.kind == Kind::alltoallv;
    for (int i = 0; i < n; ++i) {
        if (w)
            R[size_t(i)] = {static_cast<char*>(a.rbuf) + a.rdispls[i], a.rcounts[i], a.rtypes[i]};
        else if (v) R[size_t(i)] = {at(a.rbuf, a.rdispls[i], x.rt), a.rcounts[i], a.rtype};
        else R[size_t(i)] = {at(a.rbuf, i * a.rcount, x.rt), a.rcount, a.rtype};
    }
    if (a.sbuf != MPI_IN_PLACE) {
        for (int i = 0; i < n; ++i) {
            if (w) S[size_t(i)] = {static_cast<const char*>(a.sbuf) + a.sdispls[i], a.scounts[i],
                                   a.stypes[i]};
            else if (v) S[size_t(i)] = {at(a.sbuf, a.sdispls[i], x.st), a.scounts[i], a.stype};
            else S[size_t(i)] = {at(a.sbuf, i * a.scount, x.st), a.scount, a.stype};
        }
        return;
    }
    SmallVec<int64_t> off(size_t(n) + 1, 0);
    for (int i = 0; i < n; ++i) {
        const Blk& r = R[size_t(i)];
        off[size_t(i) + 1] = off[size_t(i)] + r.count * (w ? ty_of(r.dt).size : x.rt.size);
    }
    char* tmp = b.tmp(off[size_t(n)]);
    for (int i = 0; i < n; ++i) {
        const Blk& r = R[size_t(i)];
        int64_t len = off[size_t(i) + 1] - off[size_t(i)];
        b.copy(r.p, r.count, r.dt, tmp + off[size_t(i)], len, MPI_BYTE);
        S[size_t(i)] = {tmp + off[size_t(i)], len, MPI_BYTE};
    }
}
void w_a2a_linear(Bld& b, const Args& a, const Ctx& x) {
    SmallVec<Blk> S, R;
    a2a_blocks(b, a, x, S, R);
    exchange_linear(b, S.data(), R.data());
}
void w_a2a_pairwise(Bld& b, const Args& a, const Ctx& x) {
    SmallVec<Blk> S, R;
    a2a_blocks(b, a, x, S, R);
    exchange_pairwise(b, S.data(), R.data());
}
void w_a2a_bruck(Bld& b, const Args& a, const Ctx& x) {
    alltoall_bruck(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt);
}

void w_reduce_binomial(Bld& b, const Args& a, const Ctx& x) {
    reduce_binomial(b, in_of(a), a.rbuf, a.rcount, x.rt, a.root, x.commutative);
}
void w_reduce_rsg(Bld& b, const Args& a, const Ctx& x) {
    reduce_rsg(b, in_of(a), a.rbuf, a.rcount, x.rt, a.root);
}
void w_allreduce_rdb(Bld& b, const Args& a, const Ctx& x) {
    allreduce_rdb(b, in_of(a), a.rbuf, a.rcount, x.rt, x.commutative);
}
void w_allreduce_rsag(Bld& b, const Args& a, const Ctx& x) {
    allreduce_rsag(b, in_of(a), a.rbuf, a.rcount, x.rt);
}
void w_allreduce_ring(Bld& b, const Args& a, const Ctx& x) {
    allreduce_ring(b, in_of(a), a.rbuf, a.rcount, x.rt);
}
void w_allreduce_reduce_bcast(Bld& b, const Args& a, const Ctx& x) {
    allreduce_reduce_bcast(b, in_of(a), a.rbuf, a.rcount, x.rt, x.commutative);
}

void rs_counts(const Args& a, int n, SmallVec<int64_t>& c) {
    c.resize(size_t(n));
    for (int i = 0; i < n; ++i)
        c[size_t(i)] = a.kind == Kind::reduce_scatter ? a.rcounts[i] : a.rcount;
}
void w_rs_halving(Bld& b, const Args& a, const Ctx& x) {
    SmallVec<int64_t> c;
    rs_counts(a, b.n, c);
    reduce_scatter_halving(b, in_of(a), a.rbuf, c.data(), x.rt);
}
void w_rs_pairwise(Bld& b, const Args& a, const Ctx& x) {
    SmallVec<int64_t> c;
    rs_counts(a, b.n, c);
    reduce_scatter_pairwise(b, in_of(a), a.rbuf, c.data(), x.rt);
}
void w_rs_reduce_scatterv(Bld& b, const Args& a, const Ctx& x) {
    SmallVec<int64_t> c;
    rs_counts(a, b.n, c);
    reduce_scatter_reduce_scatterv(b, in_of(a), a.rbuf, c.data(), x.rt, x.commutative);
}

void w_scan_rdb(Bld& b, const Args& a, const Ctx& x) {
    scan_rdb(b, in_of(a), a.rbuf, a.rcount, x.rt, x.commutative);
}
void w_scan_linear(Bld& b, const Args& a, const Ctx& x) {
    scan_linear(b, in_of(a), a.rbuf, a.rcount, x.rt);
}
void w_exscan_rdb(Bld& b, const Args& a, const Ctx& x) {
    exscan_rdb(b, in_of(a), a.rbuf, a.rcount, x.rt, x.commutative);
}
void w_exscan_linear(Bld& b, const Args& a, const Ctx& x) {
    exscan_linear(b, in_of(a), a.rbuf, a.rcount, x.rt);
}

void w_barrier_linear(Bld& b, const Args&, const Ctx&) { barrier_linear(b); }
void w_bcast_linear(Bld& b, const Args& a, const Ctx& x) {
    bcast_linear(b, a.rbuf, a.rcount, x.rt, a.root);
}
void w_allgather_linear(Bld& b, const Args& a, const Ctx& x) {
    allgather_linear(b, a.sbuf, a.scount, x.st, a.rbuf, a.rcount, x.rt);
}
void w_reduce_linear(Bld& b, const Args& a, const Ctx& x) {
    reduce_linear(b, in_of(a), a.rbuf, a.rcount, x.rt, a.root);
}
void w_allreduce_linear(Bld& b, const Args& a, const Ctx& x) {
    allreduce_linear(b, in_of(a), a.rbuf, a.rcount, x.rt);
}
void w_allreduce_direct(Bld& b, const Args& a, const Ctx& x) {
    allreduce_direct(b, in_of(a), a.rbuf, a.rcount, x.rt);
}
void w_rs_direct(Bld& b, const Args& a, const Ctx& x) {
    SmallVec<int64_t> c;
    rs_counts(a, b.n, c);
    reduce_scatter_direct(b, in_of(a), a.rbuf, c.data(), x.rt);
}
void w_scan_direct(Bld& b, const Args& a, const Ctx& x) {
    scan_direct(b, in_of(a), a.rbuf, a.rcount, x.rt, false);
}
void w_exscan_direct(Bld& b, const Args& a, const Ctx& x) {
    scan_direct(b, in_of(a), a.rbuf, a.rcount, x.rt, true);
}

// clang-format off
// THE table of flat algorithms. Restrictions: R_COMMUTATIVE = commutative ops only; R_POF2 =
// power-of-two communicator sizes only. docs/collectives.md shows the same table; choose()
// below says which one runs by default.
const Algo kAlgos[] = {
    {Kind::barrier, "dissemination", 0, w_barrier,
     "ceil(log2 n) rounds; round k: zero-byte message to rank+2^k, from rank-2^k"},
    {Kind::barrier, "linear", 0, w_barrier_linear,
     "one round: a zero-byte message to and from every rank"},

    {Kind::bcast, "linear", 0, w_bcast_linear,
     "the root sends to every rank (one hop; receivers pull large messages in parallel)"},
    {Kind::bcast, "binomial", 0, w_bcast_binomial,
     "binomial tree from the root, the whole message on every edge"},
    {Kind::bcast, "scatter_rdb", R_POF2, w_bcast_scatter_rdb,
     "binomial scatter of n chunks, then recursive-doubling allgather (van de Geijn)"},
    {Kind::bcast, "scatter_ring", 0, w_bcast_scatter_ring,
     "binomial scatter of n chunks, then ring allgather (van de Geijn)"},
    {Kind::bcast, "pipeline", 0, w_bcast_pipeline,
     "chain root -> root+1 -> ... in segments of COLL_BCAST_SEGMENT bytes"},

    {Kind::gather, "binomial", 0, w_gather_binomial,
     "binomial tree; interior ranks forward their subtree's blocks in one message"},
    {Kind::gather, "linear", 0, w_gather_linear, "every rank sends to the root"},
    {Kind::gatherv, "linear", 0, w_gatherv_linear, "every rank sends to the root"},
    {Kind::scatter, "binomial", 0, w_scatter_binomial,
     "binomial tree; interior ranks receive their subtree's blocks in one message"},
    {Kind::scatter, "linear", 0, w_scatter_linear, "the root sends to every rank"},
    {Kind::scatterv, "linear", 0, w_scatterv_linear, "the root sends to every rank"},

    {Kind::allgather, "linear", 0, w_allgather_linear,
     "one round: every rank sends its block to every rank"},
    {Kind::allgather, "recursive_doubling", R_POF2, w_allgather_rdb,
     "log2 n rounds exchanging doubling runs of blocks, in place in the receive buffer"},
    {Kind::allgather, "bruck", 0, w_allgather_bruck,
     "Bruck: ceil(log2 n) rounds through a packed buffer, any n"},
    {Kind::allgather, "ring", 0, w_allgather_ring,
     "n-1 rounds, block i-k passed to the right neighbour"},
    {Kind::allgatherv, "recursive_doubling", R_POF2, w_allgatherv_rdb,
     "recursive doubling over a packed image of all blocks"},
    {Kind::allgatherv, "ring", 0, w_allgatherv_ring, "n-1 rounds around the ring"},

    {Kind::alltoall, "bruck", 0, w_a2a_bruck,
     "Bruck: ceil(log2 n) rounds through packed buffers (small blocks, many ranks)"},
    {Kind::alltoall, "linear", 0, w_a2a_linear,
     "all n-1 receives and sends posted at once (\"scattered\")"},
    {Kind::alltoall, "pairwise", 0, w_a2a_pairwise,
     "n-1 rounds, one partner each (rank XOR k when n is a power of two)"},
    {Kind::alltoallv, "linear", 0, w_a2a_linear, "all transfers posted at once"},
    {Kind::alltoallv, "pairwise", 0, w_a2a_pairwise, "n-1 rounds, one partner each"},
    {Kind::alltoallw, "linear", 0, w_a2a_linear, "all transfers posted at once"},
    {Kind::alltoallw, "pairwise", 0, w_a2a_pairwise, "n-1 rounds, one partner each"},

    {Kind::reduce, "linear", 0, w_reduce_linear,
     "every rank sends to the root, which reduces in rank order"},
    {Kind::reduce, "binomial", 0, w_reduce_binomial,
     "binomial tree; non-commutative ops: tree rooted at rank 0 in rank order, result sent to "
     "the root"},
    {Kind::reduce, "reduce_scatter_gather", R_COMMUTATIVE, w_reduce_rsg,
     "Rabenseifner: recursive-halving reduce-scatter, blocks sent to the root"},

    {Kind::allreduce, "linear", 0, w_allreduce_linear,
     "one round: every rank's vector to every rank, then a local reduction in rank order"},
    {Kind::allreduce, "direct", 0, w_allreduce_direct,
     "direct reduce-scatter (block p to rank p, reduced in rank order) + direct allgather"},
    {Kind::allreduce, "recursive_doubling", 0, w_allreduce_rdb,
     "log2 n exchange rounds (+1 fold round each side for non-powers of two); rank order kept"},
    {Kind::allreduce, "reduce_scatter_allgather", R_COMMUTATIVE, w_allreduce_rsag,
     "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather"},
    {Kind::allreduce, "ring", R_COMMUTATIVE, w_allreduce_ring,
     "ring reduce-scatter + ring allgather, 2(n-1) rounds of count/n elements"},
    {Kind::allreduce, "reduce_bcast", 0, w_allreduce_reduce_bcast,
     "binomial reduce to rank 0, then binomial bcast"},

    {Kind::reduce_scatter, "direct", 0, w_rs_direct,
     "one round: block p to rank p, reduced there in rank order"},
    {Kind::reduce_scatter, "recursive_halving", R_COMMUTATIVE, w_rs_halving,
     "recursive halving (fold for non-powers of two)"},
    {Kind::reduce_scatter, "pairwise", R_COMMUTATIVE, w_rs_pairwise,
     "n-1 rounds: send block to rank+k, combine rank-k's contribution"},
    {Kind::reduce_scatter, "reduce_scatterv", 0, w_rs_reduce_scatterv,
     "binomial reduce to rank 0 (rank order), then scatterv"},
    {Kind::reduce_scatter_block, "direct", 0, w_rs_direct,
     "one round: block p to rank p, reduced there in rank order"},
    {Kind::reduce_scatter_block, "recursive_halving", R_COMMUTATIVE, w_rs_halving,
     "recursive halving (fold for non-powers of two)"},
    {Kind::reduce_scatter_block, "pairwise", R_COMMUTATIVE, w_rs_pairwise,
     "n-1 rounds: send block to rank+k, combine rank-k's contribution"},
    {Kind::reduce_scatter_block, "reduce_scatterv", 0, w_rs_reduce_scatterv,
     "binomial reduce to rank 0 (rank order), then scatter"},

    {Kind::scan, "direct", 0, w_scan_direct,
     "one round: every rank sends to all higher ranks; local reduction in rank order"},
    {Kind::scan, "recursive_doubling", 0, w_scan_rdb,
     "log2 n rounds of partial-result exchange; rank order kept"},
    {Kind::scan, "linear", 0, w_scan_linear, "chain: prefix from rank-1, result to rank+1"},
    {Kind::exscan, "direct", 0, w_exscan_direct,
     "one round: every rank sends to all higher ranks; local reduction in rank order"},
    {Kind::exscan, "recursive_doubling", 0, w_exscan_rdb,
     "log2 n rounds of partial-result exchange; rank order kept"},
    {Kind::exscan, "linear", 0, w_exscan_linear, "chain: prefix from rank-1, result to rank+1"},
};
// clang-format on

// The names each COLL_<KIND> tunable takes (MPI_T shows them as an enumeration): auto and the
// algorithms of its kind, in the table's order.
const bool kForceChoices = [] {
    for (int i = 0; i < kKinds; ++i) {
        std::vector<std::string> names{"auto"};
        for (const Algo& al : kAlgos)
            if (int(al.kind) == i) names.emplace_back(al.name);
        kForce[i]->set_choices(std::move(names));
    }
    return true;
}();

const Algo* find(Kind k, const char* name) {
    for (const Algo& al : kAlgos)
        if (al.kind == k && std::strcmp(al.name, name) == 0) return &al;
    return nullptr;
}

// find() for the string literals in choose(), cached by the literal's address: the per-call
// choice costs a few pointer compares instead of string compares over the table.
const Algo* pick(Kind k, const char* name) {
    struct Entry {
        Kind k;
        const char* name;
        const Algo* al;
    };
    // Per kind, so a lookup scans the few names choose() uses for that kind (it runs on every
    // call); keyed by the literal's address.
    static Entry cache[kKinds][8];
    static int used[kKinds];
    Entry* e = cache[int(k)];
    int& u = used[int(k)];
    for (int i = 0; i < u; ++i)
        if (e[i].name == name) return e[i].al;
    const Algo* al = find(k, name);
    if (u < 8) e[u++] = {k, name, al};
    return al;
}

bool applicable(const Algo* al, int n, const Ctx& x) {
    if ((al->restrict_ & R_COMMUTATIVE) && !x.commutative) return false;
    if ((al->restrict_ & R_POF2) && !is_pof2(n)) return false;
    return true;
}

// The default choice, by size. x.bytes: bcast/reduce/allreduce/scan: the whole message;
// gather/scatter and alltoall: one rank's block; allgather(v), reduce_scatter(_block): the
// total over all ranks.
// The switch points, read once: Tunable::get() goes through std::call_once (thread-local
// bookkeeping, ~50 instructions a call), and choose() runs on every collective call. They are
// "agree" tunables fixed at start-up (nothing sets them later).
struct Limits {
    int64_t allgather_linear_procs;
    int64_t allgather_short;
    int64_t allreduce_linear;
    int64_t allreduce_linear_procs;
    int64_t allreduce_ring;
    int64_t alltoall_bruck_procs;
    int64_t alltoall_linear_procs;
    int64_t alltoall_medium;
    int64_t alltoall_short;
    int64_t bcast_linear_procs;
    int64_t bcast_long;
    int64_t bcast_min_procs;
    int64_t bcast_short;
    int64_t gather_linear;
    int64_t reduce_scatter_long;
    int64_t reduce_short;
};
const Limits& limits() {
    static const Limits l{t_allgather_linear_procs.get(), t_allgather_short.get(), t_allreduce_linear.get(), t_allreduce_linear_procs.get(), t_allreduce_ring.get(), t_alltoall_bruck_procs.get(), t_alltoall_linear_procs.get(), t_alltoall_medium.get(), t_alltoall_short.get(), t_bcast_linear_procs.get(), t_bcast_long.get(), t_bcast_min_procs.get(), t_bcast_short.get(), t_gather_linear.get(), t_reduce_scatter_long.get(), t_reduce_short.get()};
    return l;
}

const Algo* choose(Kind k, int n, const Ctx& x) {
    const int64_t s = x.bytes;
    const Limits& L = limits();
    switch (k) {
    case Kind::barrier: return pick(k, "dissemination");
    case Kind::bcast:
        if (n <= L.bcast_linear_procs) return pick(k, "linear");
        if (s < L.bcast_short || n < L.bcast_min_procs) return pick(k, "binomial");
        if (s < L.bcast_long && is_pof2(n)) return pick(k, "scatter_rdb");
        return pick(k, "scatter_ring");
    case Kind::gather:
    case Kind::scatter:
        return pick(k, s < L.gather_linear ? "binomial" : "linear");
    case Kind::gatherv:
    case Kind::scatterv: return pick(k, "linear");
    case Kind::allgather:
        if (n <= L.allgather_linear_procs) return pick(k, "linear");
        if (s < L.allgather_short)
            return pick(k, is_pof2(n) ? "recursive_doubling" : "bruck");
        return pick(k, "ring");
    case Kind::allgatherv:
        return pick(k, s < L.allgather_short && is_pof2(n) ? "recursive_doubling" : "ring");
    case Kind::alltoall:
        if (s <= L.alltoall_short && n >= L.alltoall_bruck_procs)
            return pick(k, "bruck");
        if (s <= L.alltoall_medium || n <= L.alltoall_linear_procs)
            return pick(k, "linear");
        return pick(k, "pairwise");
    case Kind::alltoallv:
    case Kind::alltoallw: return pick(k, "linear");
    case Kind::reduce:
        if (!x.commutative || s <= L.reduce_short) return pick(k, "binomial");
        return pick(k, "reduce_scatter_gather");
    case Kind::allreduce:
        if (s <= L.allreduce_linear && n <= L.allreduce_linear_procs)
            return pick(k, "linear");
        if (!x.commutative || s <= L.reduce_short) return pick(k, "recursive_doubling");
        if (s >= L.allreduce_ring) return pick(k, "ring");
        return pick(k, "reduce_scatter_allgather");
    case Kind::reduce_scatter:
    case Kind::reduce_scatter_block:
        if (!x.commutative) return pick(k, "reduce_scatterv");
        return pick(k, s < L.reduce_scatter_long ? "recursive_halving" : "pairwise");
    case Kind::scan:
    case Kind::exscan: return pick(k, "recursive_doubling");
    case Kind::count_: break;
    }
    return nullptr;
}

// The forced algorithm of each kind, resolved once (nullptr: auto).
const Algo* forced(Kind k) {
    static const Algo* cache[kKinds];
    static bool resolved[kKinds];
    int i = int(k);
    if (!resolved[i]) {
        resolved[i] = true;
        const std::string& v = kForce[i]->get();
        if (!v.empty() && v != "auto") {
            cache[i] = find(k, v.c_str());
            if (!cache[i]) {
                std::string names;
                for (const Algo& al : kAlgos)
                    if (al.kind == k) names += std::string(names.empty() ? "" : ", ") + al.name;
                WANMPI_LOG(warn, "%s=%s: no such %s algorithm (known: auto, %s); using auto",
                           kForce[i]->info().env.c_str(), v.c_str(), kind_name(k), names.c_str());
            }
        }
    }
    return cache[i];
}

// True when the call moves no data on any rank (all ranks agree by MPI's rules).
bool nothing_to_do(const Args& a, const Ctx& x) {
    switch (a.kind) {
    case Kind::bcast:
    case Kind::reduce:
    case Kind::allreduce:
    case Kind::scan:
    case Kind::exscan:
    case Kind::reduce_scatter_block:
    case Kind::alltoall:
    case Kind::allgather:
    case Kind::reduce_scatter: return x.bytes == 0;
    default: return false;
    }
}

// Whether the call is small enough for its waits to yield (sched.cpp): the size the choice
// counts, or for the v/w variants an upper bound from this rank's own arrays.
bool yield_size_ok(const Args& a, const Ctx& x, int n) {
    int64_t bytes = x.bytes;
    if (a.kind == Kind::alltoallv || a.kind == Kind::gatherv || a.kind == Kind::scatterv ||
        a.kind == Kind::alltoallw)
        bytes = INT64_MAX;  // sizes differ per rank: never mind, sleep
    else if (a.kind == Kind::gather || a.kind == Kind::scatter)
        bytes *= n;
    return bytes <= yield_max_bytes();
}

int64_t sum_counts(const int* c, int n) {
    int64_t s = 0;
    for (int i = 0; i < n; ++i) s += c[i];
    return s;
}

// The facts the algorithm choice depends on.
Ctx ctx_of(const Args& a) {
    const int n = a.comm->size, r = a.comm->rank;
    Ctx x;
    x.st = a.st;
    x.rt = a.rt;
    if (a.op) x.commutative = core::op_commutative(a.op);
    switch (a.kind) {
    case Kind::bcast:
    case Kind::reduce:
    case Kind::allreduce:
    case Kind::scan:
    case Kind::exscan: x.bytes = a.rcount * x.rt.size; break;
    case Kind::gather: x.bytes = r == a.root ? a.rcount * x.rt.size : a.scount * x.st.size; break;
    case Kind::scatter: x.bytes = r == a.root ? a.scount * x.st.size : a.rcount * x.rt.size; break;
    case Kind::alltoall: x.bytes = a.rcount * x.rt.size; break;
    case Kind::allgather: x.bytes = n * a.rcount * x.rt.size; break;
    case Kind::allgatherv: x.bytes = sum_counts(a.rcounts, n) * x.rt.size; break;
    case Kind::reduce_scatter: x.bytes = sum_counts(a.rcounts, n) * x.rt.size; break;
    case Kind::reduce_scatter_block: x.bytes = n * a.rcount * x.rt.size; break;
    default: break;
    }
    return x;
}

// The forced algorithm if it applies, else the automatic choice (nullptr: none).
const Algo* algo_of(const Args& a, const Ctx& x, int n, bool say) {
    const Algo* al = forced(a.kind);
    if (al && !applicable(al, n, x)) {
        if (say)
            WANMPI_LOG(debug, "coll: %s %s not applicable (%s, %d ranks); automatic choice",
                       kind_name(a.kind), al->name,
                       x.commutative ? "commutative" : "non-commutative", n);
        al = nullptr;
    }
    return al ? al : choose(a.kind, n, x);
}

}  // namespace

const char* flat_algorithm(const Args& a) {
    const Algo* al = algo_of(a, ctx_of(a), a.comm->size, false);
    return al ? al->name : "";
}

namespace {

int flat_build(Module*, const Args& a, Sched& s) {
    core::Comm* c = a.comm;
    const int n = c->size;
    const Ctx x = ctx_of(a);
    // Every call takes one tag, so ranks stay in step whatever they do with it.
    Bld b(s, c, int(c->coll_seq++ & 0x3fffffff));
    b.op = a.op;
    b.oph = a.oph;
    if (nothing_to_do(a, x)) return MPI_SUCCESS;
    s.allow_yield(yield_size_ok(a, x, n));
    const Algo* al = algo_of(a, x, n, true);
    if (!al) return core::make_error(MPI_ERR_INTERN, "no algorithm for %s", kind_name(a.kind));
    al->build(b, a, x);
    return MPI_SUCCESS;
}

// ---- direct execution of small blocking broadcasts --------------------------------------------
// A schedule costs a few hundred instructions per message on top of the send or receive itself
// (request, round bookkeeping, completion), which dominates a broadcast of a few bytes: 8 B at
// 4 ranks took 2,750 instructions at the root (callgrind). So a blocking Bcast of at most
// COLL_DIRECT_MAX bytes of a contiguous type sends its messages at once without requests
// (core::send_now) and, off the root, takes its message straight from the unexpected queue when
// it is already there (core::recv_now). These are the very messages of the linear / binomial
// schedule (same tree, same tag), so a rank that builds the schedule instead (a non-contiguous
// type, data not here yet, no eager credit) interoperates with one that does not; whatever the
// direct path cannot finish at once, it hands to a schedule of the remaining steps.
base::Tunable<int64_t> t_direct_max(
    "COLL", "DIRECT_MAX", 4096,
    "Blocking MPI_Bcast of at most this many bytes (contiguous types, linear or binomial tree), "
    "and blocking Barrier, Allreduce, Allgather and Alltoall on at most 16 ranks whose messages "
    "are at most this many bytes (one-round algorithms), send and receive without building a "
    "schedule when the data and the eager credit are there (0 = always build the schedule).",
    base::Level::tuner);

// The algorithm a blocking call of this kind and size runs (forced or automatic).
const Algo* algo_for(Kind k, int n, const Ctx& x) {
    const Algo* al = forced(k);
    if (al && !applicable(al, n, x)) al = nullptr;
    return al ? al : choose(k, n, x);
}

// This rank's place in the broadcast tree: the parent (-1 at the root) and the children in the
// order the schedule sends to them (bcast_linear, bcast_binomial). ok = false: no direct path.
struct BcastPlan {
    int n = -1, rank = -1, root = -1;
    int64_t bytes = -1;
    bool ok = false;
    int parent = -1;
    int nchildren = 0;
    int children[32];
};

// The plan for (ranks, rank, root, bytes), remembered for the last combination: a loop of
// equal broadcasts, the common case, then pays a few comparisons instead of the choice.
const BcastPlan& bcast_plan(int n, int r, int root, int64_t bytes, const Ty& t) {
    static BcastPlan p;
    if (p.n == n && p.rank == r && p.root == root && p.bytes == bytes) return p;
    p = BcastPlan();
    p.n = n;
    p.rank = r;
    p.root = root;
    p.bytes = bytes;
    Ctx x;
    x.rt = t;
    x.bytes = bytes;
    const Algo* al = algo_for(Kind::bcast, n, x);
    const int rr = (r - root + n) % n;
    if (al && al->build == w_bcast_linear && n <= 33) {
        p.ok = true;
        if (rr != 0) p.parent = root;
        else
            for (int i = 1; i < n; ++i) p.children[p.nchildren++] = (root + i) % n;
    } else if (al && al->build == w_bcast_binomial) {
        p.ok = true;
        int mask = 1;
        for (; mask < n; mask <<= 1)
            if (rr & mask) {
                p.parent = (r - mask + n) % n;
                break;
            }
        for (mask >>= 1; mask > 0; mask >>= 1)
            if (rr + mask < n) p.children[p.nchildren++] = (r + mask) % n;
    }
    return p;
}

// ---- direct execution of small one-round exchanges ---------------------------------------------
// Barrier, Allreduce, Allgather and Alltoall on a small communicator run one round of the
// "linear" algorithms (barrier: dissemination, which is one round at 2 ranks): every rank sends
// to every other rank and receives from each. The schedule around that single exchange (pool,
// steps, rounds, progress hook, completion) cost about as much again as the exchange itself: at
// 2 ranks 8 B Allreduce took 0.28-0.47 us against Open MPI's 0.18-0.28. As for Bcast, these run
// the very messages of the schedule (same peers, same tag, same order per peer) without it: sends
// with core::send_now, receives with core::recv_now (what already arrived) and then as lean
// receives (core::lean_post: what arrives later lands in place, without a trip through the
// unexpected queue), waiting with the schedule's own policy (wait_blocking). Whatever cannot go that way (no
// eager credit, a message recv_now cannot take: rendezvous, synchronous, too long for the
// buffer; a failed peer) is handed to a schedule of the remaining steps with the same tag, which
// reports errors as usual. Reductions then run in rank order with the kernels the schedule's
// reduce steps use, so a rank that fell back computes bitwise the same result.
constexpr int kDirectPeers = 16;  // largest communicator the exchanges run on
constexpr int kExchangeMsgs = 32;  // per direction (Bcast: up to 32 children)

struct Exchange {
    core::Comm* c = nullptr;
    uint32_t ctx = 0;
    int tag = 0;
    int nr = 0, ns = 0;
    struct Msg {
        int peer;
        char* buf;
        int64_t count;  // elements of dt
        MPI_Datatype dt;
        int64_t bytes;
        bool done;
    } recv[kExchangeMsgs], send[kExchangeMsgs];
    int left = 0;        // receives not done
    bool stuck = false;  // a receive needs a request (see above)
    unsigned checks = 0; // calls of exchange_done (the stuck test runs on every 16th)
    // The receives recv_now did not find at once, posted as lean receives (engine.hpp) while
    // the exchange waits: lean[i] is recv[i]'s entry.
    bool posted = false;
    core::LeanSet set;
    core::LeanRecv lean[kExchangeMsgs];
};

// The wait condition: every receive taken from the unexpected queue or arrived in its lean
// entry, or one that cannot be.
// (Whether a receive is stuck is asked on every 16th call only: it searches the unexpected queue
// a second time, and the wait loop calls this after every pass; a stuck message is rare and can
// wait 16 passes for its request.)
bool exchange_done(void* p) {
    auto& x = *static_cast<Exchange*>(p);
    const bool check = (++x.checks & 15) == 0;  // not on the first call: the common "not yet"
    if (x.posted && !check) return x.set.left == 0;  // arrivals mark the lean entries
    for (int i = 0; i < x.nr; ++i) {
        Exchange::Msg& m = x.recv[i];
        if (m.done) continue;
        if (x.posted && x.lean[i].state == 2) continue;  // arrived: counted in set.left
        if (x.posted && x.lean[i].state == 1) {          // arriving, unless its peer failed
            if (core::peer_dead(x.c, m.peer)) x.stuck = true;
            continue;
        }
        if (core::recv_now(x.ctx, m.peer, x.tag, m.buf, m.bytes)) {
            m.done = true;
            --x.left;
            if (x.posted) x.lean[i].state = 2;  // taken from the queue: its entry matches nothing
        } else if (check && (core::find_unexpected(x.ctx, m.peer, x.tag, false) ||
                             core::peer_dead(x.c, m.peer))) {
            x.stuck = true;
        }
    }
    if (x.posted) {  // recv_now may have taken some above: count again
        int left = 0;
        for (int i = 0; i < x.nr; ++i) left += x.lean[i].state != 2;
        x.set.left = left;
        return left == 0 || x.stuck;
    }
    return x.left == 0 || x.stuck;
}

// Post the receives not done yet as lean receives (a message arriving from now on lands in
// place), and take them back: unpost waits for a frame still arriving, then every entry that
// arrived marks its receive done.
void exchange_post(Exchange& x) {
    int k = 0;
    for (int i = 0; i < x.nr; ++i) {
        const Exchange::Msg& m = x.recv[i];
        // done receives stay in the array (state 2) so that lean[i] is recv[i]'s entry
        x.lean[i] = {x.ctx,  m.peer, x.c->peer_world(m.peer), x.tag, m.buf, m.bytes,
                     uint8_t(m.done ? 2 : 0)};
        if (!m.done) ++k;
    }
    x.set.v = x.lean;
    x.set.n = x.nr;
    x.set.left = k;
    x.posted = true;
    core::lean_post(&x.set);
}
void exchange_unpost(Exchange& x) {
    core::lean_unpost(&x.set);
    x.posted = false;
    for (int i = 0; i < x.nr; ++i)
        if (!x.recv[i].done && x.lean[i].state == 2) {
            x.recv[i].done = true;
            --x.left;
        }
}

// Runs the exchange: sends in order (a send that cannot go now leaves it and the later ones to
// the schedule, which keeps per-peer order), then the receives. Returns MPI_SUCCESS when every
// message moved, or an error code.
int run_exchange(Exchange& x, bool yield_ok) {
    int first = 0;
    for (; first < x.ns; ++first) {
        bool sent = false;
        const Exchange::Msg& m = x.send[first];
        if (int rc = core::send_now(x.c, x.ctx, m.peer, x.tag, m.buf, m.bytes, &sent)) return rc;
        if (!sent) break;
    }
    x.left = x.nr;  // (add() made every receive not done)
    if (first == x.ns) {
        if (!exchange_done(&x)) {
            exchange_post(x);
            core::poll();  // a transport's queue may hold it: one pass moves it along
            if (!exchange_done(&x)) wait_blocking(exchange_done, &x, yield_ok);
            exchange_unpost(x);
        }
        if (!x.stuck) return MPI_SUCCESS;
    }
    Sched* s = sched_new();
    s->allow_yield(yield_ok);
    Bld b(*s, x.c, x.tag);
    for (int i = 0; i < x.nr; ++i)
        if (!x.recv[i].done) b.recv(x.recv[i].peer, x.recv[i].buf, x.recv[i].count, x.recv[i].dt);
    for (int i = first; i < x.ns; ++i)
        b.send(x.send[i].peer, x.send[i].buf, x.send[i].count, x.send[i].dt);
    b.next();
    return run_blocking(s);
}

void add(Exchange::Msg* v, int& k, int peer, const void* buf, int64_t count, const Ty& t) {
    v[k++] = {peer, const_cast<char*>(static_cast<const char*>(buf)), count, t.h, count * t.size,
              false};
}

// algo_for() as the direct paths ask it, remembered per kind for the last (ranks, bytes,
// commutativity): the choice depends on nothing else (choose(), applicable()), a loop of equal
// calls is the common case, and working it out (forced, choose, pick) was ~120 instructions of
// a ~2,000-instruction 8 B Alltoall.
[[gnu::always_inline]] inline const Algo* algo_memo(Kind k, int n, int64_t bytes,
                                                    bool commutative = true) {
    struct Memo {
        int n = -1;
        bool commutative = false;
        int64_t bytes = -1;
        const Algo* al = nullptr;
    };
    static Memo memo[kKinds];
    Memo& m = memo[int(k)];
    if (m.n != n || m.bytes != bytes || m.commutative != commutative) {
        Ctx x;
        x.bytes = bytes;
        x.commutative = commutative;
        m = {n, commutative, bytes, algo_for(k, n, x)};
    }
    return m.al;
}

// An exchange of one call on `c`: its collective context and its tag (one per call, as
// flat_build takes).
void begin(Exchange& x, core::Comm* c) {
    x.c = c;
    x.ctx = c->ctx + 1;
    x.tag = int(c->coll_seq++ & 0x3fffffff);
}

// Direct paths run small calls only (their messages go eager) on small communicators.
// (always_inline here and in algo_memo: called once per call, and the call itself was a tenth
// of what the lean dispatch of an 8 B Alltoall spends in src/coll.)
[[gnu::always_inline]] inline bool direct_size_ok(int n, int64_t bytes_per_msg) {
    static const int64_t max_bytes = t_direct_max.get();
    return max_bytes > 0 && n >= 2 && n <= kDirectPeers && bytes_per_msg <= max_bytes;
}

int flat_direct_bcast(Module*, const Args& a) {
    core::Comm* c = a.comm;
    const int n = c->size;
    const int64_t bytes = a.rcount * a.rt.size;
    static const int64_t max_bytes = t_direct_max.get();
    if (!a.rt.contig || bytes <= 0 || bytes > max_bytes || n < 2) return kDeclined;
    const BcastPlan& p = bcast_plan(n, c->rank, a.root, bytes, a.rt);
    if (!p.ok) return kDeclined;

    const int tag = int(c->coll_seq++ & 0x3fffffff);  // as flat_build: one tag per call
    const uint32_t ctx = c->ctx + 1;                   // the collective context (coll_post)
    char* buf = static_cast<char*>(a.rbuf);
    int first = 0;  // first child not served yet
    if (p.parent >= 0 && !core::recv_now(ctx, p.parent, tag, buf, bytes)) {
        core::poll();  // it may be in a transport's queue: one pass moves it to the unexpected list
        if (!core::recv_now(ctx, p.parent, tag, buf, bytes)) {
            // Wait for it as the one-round exchanges do (below), without a schedule; what
            // recv_now cannot take goes to a schedule of that receive. (p may change under
            // run_blocking: copy the children first.)
            const int nch = p.nchildren;
            int ch[32];
            std::memcpy(ch, p.children, sizeof(int) * size_t(nch));
            Exchange x;
            x.c = c;
            x.ctx = ctx;
            x.tag = tag;
            add(x.recv, x.nr, p.parent, buf, a.rcount, a.rt);
            Ctx cx;
            cx.bytes = bytes;
            if (int rc = run_exchange(x, yield_size_ok(a, cx, n))) return rc;
            Exchange y;  // the children, sent as the exchanges send
            y.c = c;
            y.ctx = ctx;
            y.tag = tag;
            for (int i = 0; i < nch; ++i) add(y.send, y.ns, ch[i], buf, a.rcount, a.rt);
            return y.ns ? run_exchange(y, yield_size_ok(a, cx, n)) : MPI_SUCCESS;
        }
    }
    for (; first >= 0 && first < p.nchildren; ++first) {
        bool sent = false;
        if (int rc = core::send_now(c, ctx, p.children[first], tag, buf, bytes, &sent)) return rc;
        if (!sent) break;
    }
    if (first == p.nchildren) return MPI_SUCCESS;
    // The rest as a schedule with the same tag: the receive (if it did not happen) and the
    // children not served yet. (p may change under run_blocking: copy what it needs first.)
    Sched* s = sched_new();
    Ctx x;
    x.bytes = bytes;
    s->allow_yield(yield_size_ok(a, x, n));
    Bld b(*s, c, tag);
    if (first < 0) {
        b.recv(p.parent, buf, a.rcount, a.rt.h);
        b.next();
        first = 0;
    }
    for (int i = first; i < p.nchildren; ++i) b.send(p.children[i], buf, a.rcount, a.rt.h);
    b.next();
    return run_blocking(s);
}

int flat_direct_barrier(Module*, const Args& a) {
    core::Comm* c = a.comm;
    const int n = c->size, r = c->rank;
    if (!direct_size_ok(n, 0)) return kDeclined;
    const Algo* al = algo_memo(Kind::barrier, n, 0);
    // dissemination is the linear exchange at 2 ranks (one round, to and from the other rank)
    if (!(al->build == w_barrier_linear || (al->build == w_barrier && n == 2))) return kDeclined;
    Exchange x;
    begin(x, c);
    static const Ty t = ty_of(MPI_BYTE);
    for (int i = 1; i < n; ++i) add(x.recv, x.nr, (r - i + n) % n, nullptr, 0, t);
    for (int i = 1; i < n; ++i) add(x.send, x.ns, (r + i) % n, nullptr, 0, t);
    return run_exchange(x, true);
}

int flat_direct_allgather(Module*, const Args& a) {
    core::Comm* c = a.comm;
    const int n = c->size, r = c->rank;
    const bool in_place = a.sbuf == MPI_IN_PLACE;
    const int64_t bytes = a.rcount * a.rt.size;
    if (!direct_size_ok(n, bytes) || bytes <= 0 || !a.rt.contig) return kDeclined;
    if (!in_place && (!a.st.contig || a.scount * a.st.size != bytes)) return kDeclined;
    if (algo_memo(Kind::allgather, n, n * bytes)->build != w_allgather_linear) return kDeclined;
    Exchange x;
    begin(x, c);
    char* mine = at(a.rbuf, r * a.rcount, a.rt);
    if (!in_place) std::memcpy(mine, a.sbuf, size_t(bytes));
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        add(x.recv, x.nr, p, at(a.rbuf, p * a.rcount, a.rt), a.rcount, a.rt);
    }
    for (int i = 1; i < n; ++i) {
        if (!in_place) add(x.send, x.ns, (r + i) % n, a.sbuf, a.scount, a.st);
        else add(x.send, x.ns, (r + i) % n, mine, a.rcount, a.rt);
    }
    return run_exchange(x, n * bytes <= yield_max_bytes());  // as yield_size_ok()
}

int flat_direct_alltoall(Module*, const Args& a) {
    core::Comm* c = a.comm;
    const int n = c->size, r = c->rank;
    const int64_t bytes = a.rcount * a.rt.size;
    if (a.sbuf == MPI_IN_PLACE || !direct_size_ok(n, bytes) || bytes <= 0 || !a.rt.contig ||
        !a.st.contig || a.scount * a.st.size != bytes)
        return kDeclined;
    if (algo_memo(Kind::alltoall, n, bytes)->build != w_a2a_linear) return kDeclined;
    Exchange x;
    begin(x, c);
    std::memcpy(at(a.rbuf, r * a.rcount, a.rt), at(a.sbuf, r * a.scount, a.st), size_t(bytes));
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        add(x.recv, x.nr, p, at(a.rbuf, p * a.rcount, a.rt), a.rcount, a.rt);
    }
    for (int i = 1; i < n; ++i) {
        int p = (r + i) % n;
        add(x.send, x.ns, p, at(a.sbuf, p * a.scount, a.st), a.scount, a.st);
    }
    return run_exchange(x, bytes <= yield_max_bytes());  // as yield_size_ok()
}

// out = x_0 (op) x_1 (op) ... (op) x_{n-1}, right to left as ordered_reduce (alg_direct.cpp)
// and with the kernels of the schedule's reduce step (Sched::start_round).
int reduce_step(const Args& a, const void* in, void* inout) {
    if (reduce_fast(a.oph, a.rt.h, in, inout, a.rcount)) return MPI_SUCCESS;
    return core::op_apply(a.op, in, inout, a.rcount, a.rt.h);
}

int flat_direct_allreduce(Module*, const Args& a) {
    core::Comm* c = a.comm;
    const int n = c->size, r = c->rank;
    const int64_t bytes = a.rcount * a.rt.size;
    if (!direct_size_ok(n, bytes) || bytes <= 0 || !a.rt.contig) return kDeclined;
    // received vectors (and a copy of mine when in place) on the stack: 8-byte aligned pieces
    const int64_t slot = (bytes + 63) & ~int64_t(63);
    if (slot * n > 16384) return kDeclined;
    if (algo_memo(Kind::allreduce, n, bytes, core::op_commutative(a.op))->build !=
        w_allreduce_linear)
        return kDeclined;
    alignas(64) char tmp[16384];
    Exchange x;
    begin(x, c);
    const void* in = in_of(a);
    const void* src[kDirectPeers];
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        src[p] = tmp + slot * p;
        add(x.recv, x.nr, p, tmp + slot * p, a.rcount, a.rt);
    }
    for (int i = 1; i < n; ++i) add(x.send, x.ns, (r + i) % n, in, a.rcount, a.rt);
    src[r] = in;
    if (in == a.rbuf && r != n - 1) {  // my input would be overwritten first: keep a copy
        std::memcpy(tmp + slot * r, in, size_t(bytes));
        src[r] = tmp + slot * r;
    }
    if (int rc = run_exchange(x, bytes <= yield_max_bytes())) return rc;  // as yield_size_ok()
    if (src[n - 1] != a.rbuf) std::memcpy(a.rbuf, src[n - 1], size_t(bytes));
    for (int p = n - 1; p-- > 0;)
        if (int rc = reduce_step(a, src[p], a.rbuf)) return rc;
    return MPI_SUCCESS;
}

Module* flat_query(core::Comm* comm) {
    if (comm->inter) return nullptr;
    Module* m = make_module("flat", flat_build);
    m->direct[int(Kind::bcast)] = flat_direct_bcast;
    m->direct[int(Kind::barrier)] = flat_direct_barrier;
    m->direct[int(Kind::allgather)] = flat_direct_allgather;
    m->direct[int(Kind::alltoall)] = flat_direct_alltoall;
    m->direct[int(Kind::allreduce)] = flat_direct_allreduce;
    return m;
}

const Component kFlat{"flat", 10, flat_query};
struct Register {
    Register() { register_component(&kFlat); }
} g_register;

}  // namespace
}  // namespace wanmpi::coll
