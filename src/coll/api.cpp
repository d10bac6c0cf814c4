// MPI collective entry points: argument checks (only the arguments the standard says are
// significant on this rank), MPI_IN_PLACE rules, then the communicator's module chain builds a
// schedule that runs to completion (blocking) or under a request (nonblocking).
// Intercommunicators: every collective but Scan/Exscan (the "inter" component, inter.cpp); the
// root argument then is MPI_ROOT / MPI_PROC_NULL in the root's group and the root's rank in the
// other group, array arguments have one entry per remote rank, and MPI_IN_PLACE is not allowed.
#include <cstring>
#include <utility>

#include "bindings/impl.hpp"
#include "coll/api_impl.hpp"
#include "coll/coll.hpp"
#include "coll/sched.hpp"
#include "core/api.hpp"
#include "core/datatype.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "core/wan_rate.hpp"

namespace wanmpi::coll {
namespace {

using core::Comm;
using core::make_error;
using core::raise;

const char* fname() { return core::t_api_name ? core::t_api_name : "collective"; }

// comm_of's failures (kept out of line: comm_of runs on every call).
[[gnu::cold, gnu::noinline]] Comm* comm_error(MPI_Comm h, Comm* c, int* rc) {
    if (!c)
        *rc = raise(nullptr, make_error(MPI_ERR_COMM, "%s: invalid communicator 0x%x", fname(),
                                        unsigned(h)));
    else
        *rc = raise(c, make_error(MPI_ERR_COMM,
                                  "%s on intercommunicator %s: defined on intracommunicators only",
                                  fname(), c->name.c_str()));
    return nullptr;
}

// Looks the communicator up; on failure returns the raised error in *rc. Scan and Exscan
// (`intra_only`) are not defined on intercommunicators.
inline Comm* comm_of(MPI_Comm h, int* rc, bool intra_only = false) {
    Comm* c = core::comm_lookup(h);
    if (__builtin_expect(!c || (c->inter && intra_only), 0)) return comm_error(h, c, rc);
    *rc = MPI_SUCCESS;
    return c;
}

// What this rank does in a rooted collective: intracommunicator: the root or a member;
// intercommunicator: the root (MPI_ROOT), idle (MPI_PROC_NULL: the root's group), or a member
// of the other group (root = the root's rank there).
enum class Role { root, member, idle };
Role role_of(const Comm* c, int root) {
    if (c->inter) return root == MPI_ROOT ? Role::root : root == MPI_PROC_NULL ? Role::idle
                                                                               : Role::member;
    return c->rank == root ? Role::root : Role::member;
}

int chk_count(int64_t n, const char* what) {
    if (n < 0)
        return make_error(MPI_ERR_COUNT, "%s: negative %s %lld", fname(), what, (long long)n);
    return MPI_SUCCESS;
}
int chk_type(MPI_Datatype dt, const char* what) {
    if (!core::datatype_lookup(dt)) {
        int code = core::datatype_error(dt);  // says why: null, freed, not committed, ...
        return make_error(MPI_ERR_TYPE, "%s: %s: %s", fname(), what,
                          core::error_text(code).c_str());
    }
    return MPI_SUCCESS;
}
// chk_type that also hands back the type's facts: one lookup serves the check and the call.
int chk_ty(MPI_Datatype dt, const char* what, Ty* out) {
    *out = ty_of(dt);
    return out->d ? MPI_SUCCESS : chk_type(dt, what);
}
int chk_root(const Comm* c, int root) {
    if (c->inter) {
        if (root == MPI_ROOT || root == MPI_PROC_NULL || (root >= 0 && root < c->remote_size()))
            return MPI_SUCCESS;
        return make_error(MPI_ERR_ROOT,
                          "%s: invalid root %d on intercommunicator %s (MPI_ROOT, MPI_PROC_NULL "
                          "or a rank of the remote group of %d)", fname(), root, c->name.c_str(),
                          c->remote_size());
    }
    if (root < 0 || root >= c->size)
        return make_error(MPI_ERR_ROOT, "%s: invalid root %d (%s has %d ranks)", fname(), root,
                          c->name.c_str(), c->size);
    return MPI_SUCCESS;
}
int chk_array(const void* p, const char* what) {
    if (!p) return make_error(MPI_ERR_ARG, "%s: %s is NULL", fname(), what);
    return MPI_SUCCESS;
}
int chk_counts(const int* c, int n, const char* what) {
    if (int rc = chk_array(c, what)) return rc;
    for (int i = 0; i < n; ++i)
        if (c[i] < 0)
            return make_error(MPI_ERR_COUNT, "%s: %s[%d] = %d is negative", fname(), what, i, c[i]);
    return MPI_SUCCESS;
}
int no_in_place(const void* buf, const char* what) {
    if (buf == MPI_IN_PLACE)
        return make_error(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is not allowed as %s", fname(), what);
    return MPI_SUCCESS;
}
// MPI_IN_PLACE is not defined on intercommunicators.
int no_in_place_inter(const Comm* c, const void* buf) {
    if (c->inter && buf == MPI_IN_PLACE)
        return make_error(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE on intercommunicator %s", fname(),
                          c->name.c_str());
    return MPI_SUCCESS;
}
int not_aliased(const void* s, const void* r, int64_t bytes) {
    if (s != MPI_IN_PLACE && s == r && bytes > 0)
        return make_error(MPI_ERR_BUFFER,
                          "%s: send and receive buffers are the same (use MPI_IN_PLACE)", fname());
    return MPI_SUCCESS;
}
int chk_op(MPI_Op h, MPI_Datatype dt, const core::Op** out) {
    const core::Op* op = core::op_lookup(h);
    if (!op)
        return make_error(MPI_ERR_OP, "%s: invalid reduction operation 0x%x", fname(),
                          unsigned(h));
    *out = op;
    // A predefined op that is not defined for the type would fail in the middle of the
    // schedule on some ranks only; find out now with one element of scratch data.
    if ((uint32_t(h) & 0xffffff00u) == 0x58000000u) {
        // Builtin types never change meaning: remember the pairs that passed.
        static std::pair<MPI_Op, MPI_Datatype> ok[8];
        static unsigned next_ok = 0;
        for (auto& e : ok)
            if (e.first == h && e.second == dt) return MPI_SUCCESS;
        Ty t = ty_of(dt);
        alignas(64) char a[256] = {}, b[256] = {};
        if (t.tspan > 0 && t.tspan <= int64_t(sizeof a) && t.lb >= 0 && t.lb < t.tspan) {
            int rc = core::op_apply(op, a - t.lb, b - t.lb, 1, dt);
            if (rc != MPI_SUCCESS) return rc;
            if (t.d->builtin) ok[next_ok++ % 8] = {h, dt};
        }
    }
    return MPI_SUCCESS;
}
int chk_req(MPI_Request* r) {
    if (!r) return make_error(MPI_ERR_ARG, "%s: request pointer is NULL", fname());
    return MPI_SUCCESS;
}

int launch(Args& a, MPI_Request* req, Call call) {
    Comm* c = a.comm;
    a.nonblocking = req != nullptr;
    // (a caller that already looked a type up leaves it in a.st / a.rt)
    if (a.stype != MPI_DATATYPE_NULL && a.st.h != a.stype) a.st = ty_of(a.stype);
    if (a.rtype != MPI_DATATYPE_NULL && a.rt.h != a.rtype)
        a.rt = a.rtype == a.stype ? a.st : ty_of(a.rtype);
    Module* m = modules_of(c);
    if (!m)
        return raise(c, make_error(MPI_ERR_UNSUPPORTED_OPERATION,
                                   "%s: no collective module for %s", fname(), c->name.c_str()));
    // The lean dispatch of a blocking call: no rate phase on this communicator (modules_select
    // made m->lean so), so straight to the implementing module's direct function. Small calls
    // at small rank counts cost a few hundred instructions in all, and the general dispatch
    // below (WanShare and WanPhase, the module walk) was a fifth of that.
    const DirectFn lean = req ? nullptr : m->lean[int(a.kind)];
    if (lean) {
        int rc = lean(m->lean_mod[int(a.kind)], a);
        if (rc != kDeclined) return rc == MPI_SUCCESS ? rc : raise(c, rc);
    }
    // A blocking collective between clusters paces its WAN senders to their share of the link
    // for its duration (restored when it returns, whatever the outcome).
    core::WanShare share;
    if (!req)
        for (Module* h = m; h; h = h->next)
            if (h->wan_share) {
                h->wan_share(h, a, &share);
                break;
            }
    core::WanPhase phase(share);
    if (!req && !lean) {  // the module that implements the call may run it without a schedule
        Module* impl = m;
        while (impl && !impl->fn[int(a.kind)]) impl = impl->next;
        if (impl && impl->direct[int(a.kind)]) {
            int rc = impl->direct[int(a.kind)](impl, a);
            if (rc != kDeclined) return rc == MPI_SUCCESS ? rc : raise(c, rc);
        }
    }
    Sched* s = sched_new();
    if (req) {  // the user may free derived types as soon as the call returns
        if (a.stype != MPI_DATATYPE_NULL) s->retain(a.stype);
        if (a.rtype != MPI_DATATYPE_NULL) s->retain(a.rtype);
        for (int i = 0; a.stypes && a.sbuf != MPI_IN_PLACE && i < c->remote_size(); ++i)
            s->retain(a.stypes[i]);
        for (int i = 0; a.rtypes && i < c->remote_size(); ++i) s->retain(a.rtypes[i]);
    }
    int rc = build_with(m, a, *s);
    if (rc != MPI_SUCCESS) {
        sched_free(s);
        return raise(c, rc);
    }
    rc = call == Call::persistent ? start_persistent(s, c, req)
         : req                    ? start_nonblocking(s, c, req)
                                  : run_blocking(s);
    return rc == MPI_SUCCESS ? rc : raise(c, rc);
}

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (int rc_ = (expr); rc_ != MPI_SUCCESS) return raise(c, rc_);                        \
    } while (0)
#define COMM(h)                                                                                \
    int crc_;                                                                                  \
    Comm* c = comm_of(h, &crc_);                                                               \
    if (!c) return crc_

}  // namespace

// ---- the collectives (api_impl.hpp) ------------------------------------------------------------
int barrier(MPI_Comm comm, MPI_Request* req, Call call) {
    COMM(comm);
    if (call != Call::blocking) CHECK(chk_req(req));
    Args a;
    a.kind = Kind::barrier;
    a.comm = c;
    return launch(a, req, call);
}

int bcast(void* buf, int64_t count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request* req,
          Call call) {
    COMM(comm);
    if (call != Call::blocking) CHECK(chk_req(req));
    CHECK(chk_root(c, root));
    Args a;
    if (role_of(c, root) != Role::idle) {
        CHECK(chk_count(count, "count"));
        a.rt = ty_of(dt);  // one lookup for the check and the call (the hot small-Bcast path)
        if (!a.rt.d) CHECK(chk_type(dt, "datatype"));
        CHECK(no_in_place(buf, "the buffer"));
    }
    a.kind = Kind::bcast;
    a.comm = c;
    a.rbuf = buf;
    a.rcount = count;
    a.rtype = dt;
    a.root = root;
    return launch(a, req, call);
}

// Gather(v) and Scatter(v) mirror each other: the *root side* is the buffer only the root uses
// (gather: receive, with counts/displs for the v variant; scatter: send), the *member side* the
// one every rank uses (gather: send; scatter: receive), which may be MPI_IN_PLACE at the root of
// an intracommunicator (its own block stays where it is).
namespace {
struct Side {
    const void* buf;
    int64_t count;
    const int* counts;  // v variants, root side
    const int* displs;
    MPI_Datatype type;
};
}  // namespace
static int rooted(Kind kind, const Side& rs, const Side& ms, int root, MPI_Comm comm,
                  MPI_Request* req, Call call) {
    COMM(comm);
    if (call != Call::blocking) CHECK(chk_req(req));
    CHECK(chk_root(c, root));
    const bool g = kind == Kind::gather || kind == Kind::gatherv;
    const bool v = kind == Kind::gatherv || kind == Kind::scatterv;
    const Role role = role_of(c, root);
    const bool is_root = role == Role::root;
    // The member side is significant off the root, and at an intracommunicator root unless
    // MPI_IN_PLACE.
    const bool member_side =
        role == Role::member || (is_root && !c->inter && ms.buf != MPI_IN_PLACE);
    if (member_side) {
        if (!is_root)
            CHECK(no_in_place(ms.buf, g ? "send buffer on a non-root rank"
                                        : "receive buffer on a non-root rank"));
        CHECK(chk_count(ms.count, g ? "sendcount" : "recvcount"));
        CHECK(chk_type(ms.type, g ? "sendtype" : "recvtype"));
    }
    if (is_root) {
        CHECK(no_in_place(rs.buf, g ? "receive buffer" : "send buffer"));
        CHECK(no_in_place_inter(c, ms.buf));
        CHECK(chk_type(rs.type, g ? "recvtype" : "sendtype"));
        if (v) {
            CHECK(chk_counts(rs.counts, c->remote_size(), g ? "recvcounts" : "sendcounts"));
            CHECK(chk_array(rs.displs, "displs"));
        } else {
            CHECK(chk_count(rs.count, g ? "recvcount" : "sendcount"));
            CHECK(not_aliased(ms.buf, rs.buf, rs.count));
        }
    }
    Args a;
    a.kind = kind;
    a.comm = c;
    a.root = root;
    if (role == Role::idle) return launch(a, req, call);  // intercommunicator, the root's group
    const Side& snd = g ? ms : rs;
    const Side& rcv = g ? rs : ms;
    const bool snd_used = g ? member_side : is_root, rcv_used = g ? is_root : member_side;
    a.sbuf = snd.buf;
    a.scount = snd.count;
    a.scounts = snd.counts;
    a.sdispls = snd.displs;
    a.stype = snd_used ? snd.type : MPI_DATATYPE_NULL;
    a.rbuf = const_cast<void*>(rcv.buf);
    a.rcount = rcv.count;
    a.rcounts = rcv.counts;
    a.rdispls = rcv.displs;
    a.rtype = rcv_used ? rcv.type : MPI_DATATYPE_NULL;
    return launch(a, req, call);
}
int gather(Kind kind, const void* sbuf, int64_t scount, MPI_Datatype stype, void* rbuf,
           int64_t rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, int root,
           MPI_Comm comm, MPI_Request* req, Call call) {
    return rooted(kind, Side{rbuf, rcount, rcounts, displs, rtype},
                  Side{sbuf, scount, nullptr, nullptr, stype}, root, comm, req, call);
}
int scatter(Kind kind, const void* sbuf, int64_t scount, const int* scounts, const int* displs,
            MPI_Datatype stype, void* rbuf, int64_t rcount, MPI_Datatype rtype, int root,
            MPI_Comm comm, MPI_Request* req, Call call) {
    return rooted(kind, Side{sbuf, scount, scounts, displs, stype},
                  Side{rbuf, rcount, nullptr, nullptr, rtype}, root, comm, req, call);
}

int allgather(Kind kind, const void* sbuf, int64_t scount, MPI_Datatype stype, void* rbuf,
              int64_t rcount, const int* rcounts, const int* displs, MPI_Datatype rtype,
              MPI_Comm comm, MPI_Request* req, Call call) {
    COMM(comm);
    if (call != Call::blocking) CHECK(chk_req(req));
    CHECK(no_in_place_inter(c, sbuf));
    Args a;
    if (sbuf != MPI_IN_PLACE) {
        CHECK(chk_count(scount, "sendcount"));
        CHECK(chk_ty(stype, "sendtype", &a.st));
    }
    CHECK(no_in_place(rbuf, "receive buffer"));
    CHECK(chk_ty(rtype, "recvtype", &a.rt));
    if (kind == Kind::allgatherv) {
        CHECK(chk_counts(rcounts, c->remote_size(), "recvcounts"));
        CHECK(chk_array(displs, "displs"));
    } else {
        CHECK(chk_count(rcount, "recvcount"));
        CHECK(not_aliased(sbuf, rbuf, rcount));
    }
    a.kind = kind;
    a.comm = c;
    a.sbuf = sbuf;
    a.scount = scount;
    a.stype = sbuf != MPI_IN_PLACE ? stype : MPI_DATATYPE_NULL;
    a.rbuf = rbuf;
    a.rcount = rcount;
    a.rcounts = rcounts;
    a.rdispls = displs;
    a.rtype = rtype;
    return launch(a, req, call);
}

int alltoall(Kind kind, const void* sbuf, int64_t scount, const int* scounts, const int* sdispls,
             MPI_Datatype stype, const MPI_Datatype* stypes, void* rbuf, int64_t rcount,
             const int* rcounts, const int* rdispls, MPI_Datatype rtype,
             const MPI_Datatype* rtypes, MPI_Comm comm, MPI_Request* req, Call call) {
    COMM(comm);
    if (call != Call::blocking) CHECK(chk_req(req));
    const int n = c->remote_size();
    CHECK(no_in_place(rbuf, "receive buffer"));
    CHECK(no_in_place_inter(c, sbuf));
    const bool in_place = sbuf == MPI_IN_PLACE;
    Args a;
    switch (kind) {
    case Kind::alltoall:
        if (!in_place) {
            CHECK(chk_count(scount, "sendcount"));
            CHECK(chk_ty(stype, "sendtype", &a.st));
        }
        CHECK(chk_count(rcount, "recvcount"));
        CHECK(chk_ty(rtype, "recvtype", &a.rt));
        CHECK(not_aliased(sbuf, rbuf, rcount));
        break;
    case Kind::alltoallv:
        if (!in_place) {
            CHECK(chk_counts(scounts, n, "sendcounts"));
            CHECK(chk_array(sdispls, "sdispls"));
            CHECK(chk_ty(stype, "sendtype", &a.st));
        }
        CHECK(chk_counts(rcounts, n, "recvcounts"));
        CHECK(chk_array(rdispls, "rdispls"));
        CHECK(chk_ty(rtype, "recvtype", &a.rt));
        break;
    default:  // alltoallw
        if (!in_place) {
            CHECK(chk_counts(scounts, n, "sendcounts"));
            CHECK(chk_array(sdispls, "sdispls"));
            CHECK(chk_array(stypes, "sendtypes"));
            for (int i = 0; i < n; ++i) CHECK(chk_type(stypes[i], "sendtypes[i]"));
        }
        CHECK(chk_counts(rcounts, n, "recvcounts"));
        CHECK(chk_array(rdispls, "rdispls"));
        CHECK(chk_array(rtypes, "recvtypes"));
        for (int i = 0; i < n; ++i) CHECK(chk_type(rtypes[i], "recvtypes[i]"));
        break;
    }
    a.kind = kind;
    a.comm = c;
    a.sbuf = sbuf;
    a.scount = scount;
    a.scounts = scounts;
    a.sdispls = sdispls;
    a.stype = (!in_place && kind != Kind::alltoallw) ? stype : MPI_DATATYPE_NULL;
    a.stypes = stypes;
    a.rbuf = rbuf;
    a.rcount = rcount;
    a.rcounts = rcounts;
    a.rdispls = rdispls;
    a.rtype = kind != Kind::alltoallw ? rtype : MPI_DATATYPE_NULL;
    a.rtypes = rtypes;
    return launch(a, req, call);
}

// reduce, allreduce, scan, exscan, reduce_scatter(_block)
int reduction(Kind kind, const void* sbuf, void* rbuf, int64_t count, const int* rcounts,
              MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, MPI_Request* req, Call call) {
    int crc_;
    Comm* c = comm_of(comm, &crc_, kind == Kind::scan || kind == Kind::exscan);
    if (!c) return crc_;
    if (call != Call::blocking) CHECK(chk_req(req));
    const int n = c->size;
    int64_t total = count;
    if (kind == Kind::reduce_scatter) {
        CHECK(chk_counts(rcounts, n, "recvcounts"));
        total = 0;
        for (int i = 0; i < n; ++i) total += rcounts[i];
    } else {
        CHECK(chk_count(count, kind == Kind::reduce_scatter_block ? "recvcount" : "count"));
        if (kind == Kind::reduce_scatter_block) total = count * n;
    }
    Args a;
    CHECK(chk_ty(dt, "datatype", &a.rt));
    const core::Op* o = nullptr;
    CHECK(chk_op(op, dt, &o));
    if (kind != Kind::reduce || role_of(c, root) == Role::member)
        CHECK(no_in_place_inter(c, sbuf));
    if (kind == Kind::reduce) {
        CHECK(chk_root(c, root));
        if (role_of(c, root) == Role::idle) {
            // nothing is significant here
        } else if (role_of(c, root) == Role::root) {
            CHECK(no_in_place(rbuf, "receive buffer"));
            CHECK(not_aliased(sbuf, rbuf, count));
        } else {
            CHECK(no_in_place(sbuf, "send buffer on a non-root rank"));
        }
    } else {
        CHECK(no_in_place(rbuf, "receive buffer"));
        CHECK(not_aliased(sbuf, rbuf, total));
    }
    a.kind = kind;
    a.comm = c;
    a.sbuf = sbuf;
    a.rbuf = rbuf;
    a.rcount = count;
    a.rcounts = rcounts;
    a.rtype = dt;
    a.op = o;
    a.oph = op;
    a.root = root;
    return launch(a, req, call);
}

#undef CHECK
#undef COMM
}  // namespace wanmpi::coll

namespace wanmpi::impl {
using namespace wanmpi::coll;

int Barrier(MPI_Comm comm) { return barrier(comm, nullptr, Call::blocking); }
int Ibarrier(MPI_Comm comm, MPI_Request* request) {
    return barrier(comm, request, Call::nonblocking);
}

int Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    return bcast(buffer, count, datatype, root, comm, nullptr, Call::blocking);
}
int Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
           MPI_Request* request) {
    return bcast(buffer, count, datatype, root, comm, request, Call::nonblocking);
}

int Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm) {
    return gather(Kind::gather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr,
                  recvtype, root, comm, nullptr, Call::blocking);
}
int Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
            int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
    return gather(Kind::gather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr,
                  recvtype, root, comm, request, Call::nonblocking);
}
int Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
            MPI_Comm comm) {
    return gather(Kind::gatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                  recvtype, root, comm, nullptr, Call::blocking);
}
int Igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
             MPI_Comm comm, MPI_Request* request) {
    return gather(Kind::gatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                  recvtype, root, comm, request, Call::nonblocking);
}

int Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
            int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
    return scatter(Kind::scatter, sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf,
                   recvcount, recvtype, root, comm, nullptr, Call::blocking);
}
int Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
    return scatter(Kind::scatter, sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf,
                   recvcount, recvtype, root, comm, request, Call::nonblocking);
}
int Scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
             MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
             MPI_Comm comm) {
    return scatter(Kind::scatterv, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                   recvtype, root, comm, nullptr, Call::blocking);
}
int Iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
              MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
              int root, MPI_Comm comm, MPI_Request* request) {
    return scatter(Kind::scatterv, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                   recvtype, root, comm, request, Call::nonblocking);
}

int Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return allgather(Kind::allgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr,
                     nullptr, recvtype, comm, nullptr, Call::blocking);
}
int Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    return allgather(Kind::allgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr,
                     nullptr, recvtype, comm, request, Call::nonblocking);
}
int Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    return allgather(Kind::allgatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                     displs, recvtype, comm, nullptr, Call::blocking);
}
int Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                MPI_Request* request) {
    return allgather(Kind::allgatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                     displs, recvtype, comm, request, Call::nonblocking);
}

int Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return alltoall(Kind::alltoall, sendbuf, sendcount, nullptr, nullptr, sendtype, nullptr,
                    recvbuf, recvcount, nullptr, nullptr, recvtype, nullptr, comm, nullptr,
                    Call::blocking);
}
int Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    return alltoall(Kind::alltoall, sendbuf, sendcount, nullptr, nullptr, sendtype, nullptr,
                    recvbuf, recvcount, nullptr, nullptr, recvtype, nullptr, comm, request,
                    Call::nonblocking);
}
int Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
              MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
              MPI_Datatype recvtype, MPI_Comm comm) {
    return alltoall(Kind::alltoallv, sendbuf, 0, sendcounts, sdispls, sendtype, nullptr, recvbuf,
                    0, recvcounts, rdispls, recvtype, nullptr, comm, nullptr, Call::blocking);
}
int Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
               MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
               MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    return alltoall(Kind::alltoallv, sendbuf, 0, sendcounts, sdispls, sendtype, nullptr, recvbuf,
                    0, recvcounts, rdispls, recvtype, nullptr, comm, request, Call::nonblocking);
}
int Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
              const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
    return alltoall(Kind::alltoallw, sendbuf, 0, sendcounts, sdispls, MPI_DATATYPE_NULL,
                    sendtypes, recvbuf, 0, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes,
                    comm, nullptr, Call::blocking);
}
int Ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
               const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
               const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
               MPI_Request* request) {
    return alltoall(Kind::alltoallw, sendbuf, 0, sendcounts, sdispls, MPI_DATATYPE_NULL,
                    sendtypes, recvbuf, 0, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes,
                    comm, request, Call::nonblocking);
}

int Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
           int root, MPI_Comm comm) {
    return reduction(Kind::reduce, sendbuf, recvbuf, count, nullptr, datatype, op, root, comm,
                     nullptr, Call::blocking);
}
int Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
            int root, MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::reduce, sendbuf, recvbuf, count, nullptr, datatype, op, root, comm,
                     request, Call::nonblocking);
}
int Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm) {
    return reduction(Kind::allreduce, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm,
                     nullptr, Call::blocking);
}
int Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::allreduce, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm,
                     request, Call::nonblocking);
}
int Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    return reduction(Kind::reduce_scatter, sendbuf, recvbuf, 0, recvcounts, datatype, op, 0, comm,
                     nullptr, Call::blocking);
}
int Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::reduce_scatter, sendbuf, recvbuf, 0, recvcounts, datatype, op, 0, comm,
                     request, Call::nonblocking);
}
int Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm) {
    return reduction(Kind::reduce_scatter_block, sendbuf, recvbuf, recvcount, nullptr, datatype,
                     op, 0, comm, nullptr, Call::blocking);
}
int Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::reduce_scatter_block, sendbuf, recvbuf, recvcount, nullptr, datatype,
                     op, 0, comm, request, Call::nonblocking);
}
int Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
         MPI_Comm comm) {
    return reduction(Kind::scan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm, nullptr,
                     Call::blocking);
}
int Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
          MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::scan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm, request,
                     Call::nonblocking);
}
int Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
           MPI_Comm comm) {
    return reduction(Kind::exscan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm,
                     nullptr, Call::blocking);
}
int Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
            MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::exscan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm,
                     request, Call::nonblocking);
}

}  // namespace wanmpi::impl
