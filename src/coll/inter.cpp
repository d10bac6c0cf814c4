// The "inter" component: collectives on intercommunicators (MPI-3.1 §5.2.2), as schedules.
//
// Two kinds of traffic make up one call:
//  - between the groups: point-to-point on the intercommunicator's collective context (peers
//    are remote ranks), tag = the intercommunicator's call sequence number, which agrees on the
//    members of both groups because all of them call the intercommunicator's collectives in the
//    same order;
//  - inside a group: the flat builders on the intercommunicator's local intracommunicator
//    (Comm::local, hidden, owned by the communicator code) with a tag in a band of its own
//    (kLocalBand | seq), so it can never match a collective that code runs on `local`.
//
// Algorithms (chosen for simplicity and correctness; intercommunicator collectives are rare):
//   barrier            local barrier, leaders exchange a zero-byte message, local barrier
//   bcast              root -> remote rank 0, binomial bcast in the receiving group
//   gather(v)          every rank of the sending group sends to the root
//   scatter(v)         the root sends to every rank of the receiving group
//   allgather(v)       every rank sends its block to every remote rank
//   alltoall(v,w)      every rank exchanges its blocks with every remote rank
//   reduce             binomial reduce to rank 0 of the sending group (rank order kept for
//                      non-commutative ops), which sends to the root
//   allreduce          each group reduces to its rank 0; the leaders exchange the results; each
//                      group broadcasts the other group's result
//   reduce_scatter(_block)  as allreduce up to the leaders, then a scatter(v) in each group
// Scan and Exscan are not defined on intercommunicators (the API layer rejects them).
// Threading: under the API lock.
#include <cstring>

#include "coll/algos.hpp"
#include "coll/coll.hpp"
#include "core/errors.hpp"

namespace wanmpi::coll {

namespace {

constexpr int kLocalBand = 0x20000000;

const char* kRole = "intercommunicator collective";

// The two groups' rank 0 (`lead`) swap their group's reduction result (`mine`, `count`
// elements) for the other group's (`theirs`).
void leaders_exchange(Bld& ib, bool lead, const void* mine, void* theirs, int64_t count,
                      const Ty& t) {
    if (!lead) return;
    ib.recv(0, theirs, count, t.h);
    ib.send(0, mine, count, t.h);
    ib.next();
}

int inter_build(Module*, const Args& a, Sched& s) {
    core::Comm* c = a.comm;
    core::Comm* lc = c->local;
    if (!lc)
        return core::make_error(MPI_ERR_INTERN, "%s: %s has no local communicator", kRole,
                                c->name.c_str());
    const uint32_t seq = c->coll_seq++;
    Bld ib(s, c, int(seq & 0x1fffffff));                    // between the groups
    Bld lb(s, lc, kLocalBand | int(seq & 0x1fffffff));      // inside this group
    ib.op = lb.op = a.op;
    ib.oph = lb.oph = a.oph;
    const int rsize = c->remote_size(), lrank = lc->rank;
    const bool lead = lrank == 0;
    const bool commutative = a.op ? core::op_commutative(a.op) : true;
    const Ty& st = a.st;
    const Ty& rt = a.rt;

    switch (a.kind) {
    case Kind::barrier:
        barrier_dissemination(lb);
        if (lead) {
            ib.recv(0, nullptr, 0, MPI_BYTE);
            ib.send(0, nullptr, 0, MPI_BYTE);
            ib.next();
        }
        barrier_dissemination(lb);
        return MPI_SUCCESS;

    case Kind::bcast:
        if (a.root == MPI_PROC_NULL) return MPI_SUCCESS;
        if (a.root == MPI_ROOT) {
            ib.send(0, a.rbuf, a.rcount, rt.h);
            ib.next();
            return MPI_SUCCESS;
        }
        if (lead) {
            ib.recv(a.root, a.rbuf, a.rcount, rt.h);
            ib.next();
        }
        bcast_binomial(lb, a.rbuf, a.rcount, rt, 0);
        return MPI_SUCCESS;

    case Kind::gather:
    case Kind::gatherv:
        if (a.root == MPI_PROC_NULL) return MPI_SUCCESS;
        if (a.root == MPI_ROOT) {
            for (int i = 0; i < rsize; ++i) {
                if (a.kind == Kind::gather)
                    ib.recv(i, at(a.rbuf, int64_t(i) * a.rcount, rt), a.rcount, rt.h);
                else
                    ib.recv(i, at(a.rbuf, a.rdispls[i], rt), a.rcounts[i], rt.h);
            }
        } else {
            ib.send(a.root, a.sbuf, a.scount, st.h);
        }
        ib.next();
        return MPI_SUCCESS;

    case Kind::scatter:
    case Kind::scatterv:
        if (a.root == MPI_PROC_NULL) return MPI_SUCCESS;
        if (a.root == MPI_ROOT) {
            for (int i = 0; i < rsize; ++i) {
                if (a.kind == Kind::scatter)
                    ib.send(i, at(a.sbuf, int64_t(i) * a.scount, st), a.scount, st.h);
                else
                    ib.send(i, at(a.sbuf, a.sdispls[i], st), a.scounts[i], st.h);
            }
        } else {
            ib.recv(a.root, a.rbuf, a.rcount, rt.h);
        }
        ib.next();
        return MPI_SUCCESS;

    case Kind::allgather:
    case Kind::allgatherv:
        for (int i = 0; i < rsize; ++i) {
            if (a.kind == Kind::allgather)
                ib.recv(i, at(a.rbuf, int64_t(i) * a.rcount, rt), a.rcount, rt.h);
            else
                ib.recv(i, at(a.rbuf, a.rdispls[i], rt), a.rcounts[i], rt.h);
        }
        for (int i = 0; i < rsize; ++i) ib.send(i, a.sbuf, a.scount, st.h);
        ib.next();
        return MPI_SUCCESS;

    case Kind::alltoall:
    case Kind::alltoallv:
    case Kind::alltoallw:
        for (int i = 0; i < rsize; ++i) {
            if (a.kind == Kind::alltoall)
                ib.recv(i, at(a.rbuf, int64_t(i) * a.rcount, rt), a.rcount, rt.h);
            else if (a.kind == Kind::alltoallv)
                ib.recv(i, at(a.rbuf, a.rdispls[i], rt), a.rcounts[i], rt.h);
            else
                ib.recv(i, static_cast<char*>(a.rbuf) + a.rdispls[i], a.rcounts[i], a.rtypes[i]);
        }
        for (int i = 0; i < rsize; ++i) {
            if (a.kind == Kind::alltoall)
                ib.send(i, at(a.sbuf, int64_t(i) * a.scount, st), a.scount, st.h);
            else if (a.kind == Kind::alltoallv)
                ib.send(i, at(a.sbuf, a.sdispls[i], st), a.scounts[i], st.h);
            else
                ib.send(i, static_cast<const char*>(a.sbuf) + a.sdispls[i], a.scounts[i],
                        a.stypes[i]);
        }
        ib.next();
        return MPI_SUCCESS;

    case Kind::reduce: {
        if (a.root == MPI_PROC_NULL) return MPI_SUCCESS;
        if (a.root == MPI_ROOT) {
            ib.recv(0, a.rbuf, a.rcount, rt.h);
            ib.next();
            return MPI_SUCCESS;
        }
        void* t = lead ? lb.tmp_typed(rt, a.rcount) : nullptr;
        reduce_binomial(lb, a.sbuf, t, a.rcount, rt, 0, commutative);
        if (lead) {
            ib.send(a.root, t, a.rcount, rt.h);
            ib.next();
        }
        return MPI_SUCCESS;
    }

    case Kind::allreduce: {
        if (a.rcount == 0) return MPI_SUCCESS;
        void* t = lead ? lb.tmp_typed(rt, a.rcount) : nullptr;
        reduce_binomial(lb, a.sbuf, t, a.rcount, rt, 0, commutative);
        leaders_exchange(ib, lead, t, a.rbuf, a.rcount, rt);
        bcast_binomial(lb, a.rbuf, a.rcount, rt, 0);
        return MPI_SUCCESS;
    }

    case Kind::reduce_scatter:
    case Kind::reduce_scatter_block: {
        const int n = lc->size;
        SmallVec<int> cnt(size_t(n), 0), disp(size_t(n), 0);
        int64_t total = 0;
        for (int i = 0; i < n; ++i) {
            cnt[size_t(i)] = a.kind == Kind::reduce_scatter ? a.rcounts[i] : int(a.rcount);
            disp[size_t(i)] = int(total);
            total += cnt[size_t(i)];
        }
        if (total == 0) return MPI_SUCCESS;
        void* mine = lead ? lb.tmp_typed(rt, total) : nullptr;
        void* theirs = lead ? lb.tmp_typed(rt, total) : nullptr;
        reduce_binomial(lb, a.sbuf, mine, total, rt, 0, commutative);
        leaders_exchange(ib, lead, mine, theirs, total, rt);
        scatterv_linear(lb, theirs, cnt.data(), disp.data(), rt, a.rbuf, cnt[size_t(lrank)], rt,
                        0);
        return MPI_SUCCESS;
    }

    case Kind::scan:
    case Kind::exscan:
    case Kind::count_: break;
    }
    return core::make_error(MPI_ERR_COMM, "%s: %s is not defined on intercommunicators", kRole,
                            kind_name(a.kind));
}

Module* inter_query(core::Comm* comm) {
    return !comm->inter ? nullptr : make_module("inter", inter_build);
}

const Component kInter{"inter", 10, inter_query};
struct Register {
    Register() { register_component(&kInter); }
} g_register;

}  // namespace
}  // namespace wanmpi::coll
