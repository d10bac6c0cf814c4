// MPI point-to-point API: argument checks, then the engine (engine.hpp) does the work.
// Errors go through the communicator's error handler (raise); request errors through the
// handler of the request's communicator.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bindings/impl.hpp"
#include "core/api.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

static bool req_done(void* p) { return static_cast<Request*>(p)->complete; }

// Completes a request from the user's view: status, error, release or deactivate.
static int retire(Request* r, MPI_Status* st, MPI_Request* handle) {
    fill_status(r, st);
    int err = r->status.MPI_ERROR;
    if (r->persistent) {
        r->active = false;
    } else {
        request_release(r);
        if (handle) *handle = MPI_REQUEST_NULL;
    }
    return err;
}

static void empty_status(MPI_Status* st) {
    if (st == MPI_STATUS_IGNORE) return;
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->count_lo = 0;
    st->count_hi_and_cancelled = 0;
}

// Post a one-shot or persistent operation. `out` receives the request (nullptr: blocking
// call, the request is completed and released here).
int post(ReqKind kind, const void* buf, int64_t count, MPI_Datatype dt, int peer, int tag,
         MPI_Comm comm, Mode mode, MPI_Request* out, bool persistent, MPI_Status* st,
         bool coll = false) {
    WANMPI_GET_COMM(c, comm);
    // Blocking standard sends and receives of contiguous data from/to a named rank first try the
    // requestless paths (engine.hpp): one eager frame straight into the transport; a whole eager
    // message already waiting in the unexpected queue. Everything else (no credit, a full queue,
    // rendezvous, synchronous senders, truncation, wildcards, bad arguments) takes a request
    // below, which also reports the errors.
    if (!out && !persistent && peer >= 0 && peer < c->remote_size() && tag >= 0 &&
        (kind == ReqKind::recv || mode == Mode::standard)) {
        const Datatype* d = datatype_lookup(dt);
        if (d && d->contig && count >= 0) {
            const uint32_t ctx = coll ? c->ctx + 1 : c->ctx;
            if (kind == ReqKind::send) {
                bool sent = false;
                int rc = send_now(c, ctx, peer, tag, buf, count * d->size, &sent);
                if (rc != MPI_SUCCESS) return raise(c, rc);
                if (sent) return MPI_SUCCESS;
            } else {
                if (recv_now(ctx, peer, tag, const_cast<void*>(buf), count * d->size, st))
                    return MPI_SUCCESS;
            }
        }
    }
    Request* r = request_new(kind);
    if (!r) return raise(c, make_error(MPI_ERR_INTERN, "out of request handles"));
    int rc = request_setup(r, buf, count, dt, peer, tag, c, mode);
    if (rc != MPI_SUCCESS) {
        request_release(r);
        return raise(c, rc);
    }
    if (coll) r->ctx = c->ctx + 1;
    if (persistent) {
        r->persistent = true;
        r->complete = true;  // inactive
        *out = request_handle(r);
        return MPI_SUCCESS;
    }
    rc = start(r);
    if (rc != MPI_SUCCESS) {
        request_release(r);
        return raise(c, rc);
    }
    if (out) {
        *out = request_handle(r);
        return MPI_SUCCESS;
    }
    wait_until(req_done, r);
    return raise(c, retire(r, st, nullptr));
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

// ---- blocking ---------------------------------------------------------------------------------
int Send_c(const void* buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    return post(ReqKind::send, buf, count, dt, dest, tag, comm, Mode::standard, nullptr, false,
                MPI_STATUS_IGNORE);
}
int Ssend_c(const void* buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    return post(ReqKind::send, buf, count, dt, dest, tag, comm, Mode::sync, nullptr, false,
                MPI_STATUS_IGNORE);
}
int Bsend_c(const void* buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    return post(ReqKind::send, buf, count, dt, dest, tag, comm, Mode::buffered, nullptr, false,
                MPI_STATUS_IGNORE);
}
int Rsend_c(const void* buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    return post(ReqKind::send, buf, count, dt, dest, tag, comm, Mode::ready, nullptr, false,
                MPI_STATUS_IGNORE);
}
int Recv_c(void* buf, MPI_Count count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
           MPI_Status* status) {
    return post(ReqKind::recv, buf, count, dt, source, tag, comm, Mode::standard, nullptr, false,
                status);
}
int Send(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    return Send_c(buf, count, dt, dest, tag, comm);
}
int Ssend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    return Ssend_c(buf, count, dt, dest, tag, comm);
}
int Bsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    return Bsend_c(buf, count, dt, dest, tag, comm);
}
int Rsend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    return Rsend_c(buf, count, dt, dest, tag, comm);
}
int Recv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
         MPI_Status* status) {
    return Recv_c(buf, count, dt, source, tag, comm, status);
}

int Sendrecv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
               int sendtag, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source,
               int recvtag, MPI_Comm comm, MPI_Status* status) {
    MPI_Request rr, sr;
    int rc = post(ReqKind::recv, recvbuf, recvcount, recvtype, source, recvtag, comm,
                  Mode::standard, &rr, false, nullptr);
    if (rc != MPI_SUCCESS) return rc;
    rc = post(ReqKind::send, sendbuf, sendcount, sendtype, dest, sendtag, comm, Mode::standard,
              &sr, false, nullptr);
    if (rc != MPI_SUCCESS) {
        Request* r = request_lookup(rr);
        cancel(r);
        wait_until(req_done, r);
        request_release(r);
        return rc;
    }
    Request* s = request_lookup(sr);
    Request* r = request_lookup(rr);
    wait_until(req_done, s);
    wait_until(req_done, r);
    int e1 = retire(s, MPI_STATUS_IGNORE, nullptr);
    int e2 = retire(r, status, nullptr);
    return raise(comm_lookup(comm), e1 != MPI_SUCCESS ? e1 : e2);
}
int Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
             MPI_Comm comm, MPI_Status* status) {
    return Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                      source, recvtag, comm, status);
}

int Sendrecv_replace(void* buf, int count, MPI_Datatype dt, int dest, int sendtag, int source,
                     int recvtag, MPI_Comm comm, MPI_Status* status) {
    WANMPI_GET_COMM(c, comm);
    const Datatype* d = datatype_lookup(dt);
    if (!d) return raise(c, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    if (count < 0) return raise(c, make_error(MPI_ERR_COUNT, "negative count %d", count));
    // Send a packed copy; receive into the user's buffer.
    std::vector<char> tmp(size_t(d->size * count));
    if (count) pack(*d, buf, count, tmp.data());
    return Sendrecv_c(tmp.data(), d->size * count, MPI_BYTE, dest, sendtag, buf, count, dt,
                      source, recvtag, comm, status);
}

// ---- nonblocking and persistent ---------------------------------------------------------------
#define NB(Name, kind, mode, persistent)                                                       \
    int Name(const void* buf, int count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm,    \
             MPI_Request* request) {                                                           \
        return post(kind, buf, count, dt, peer, tag, comm, mode, request, persistent, nullptr); \
    }
NB(Isend, ReqKind::send, Mode::standard, false)
NB(Issend, ReqKind::send, Mode::sync, false)
NB(Ibsend, ReqKind::send, Mode::buffered, false)
NB(Irsend, ReqKind::send, Mode::ready, false)
NB(Send_init, ReqKind::send, Mode::standard, true)
NB(Ssend_init, ReqKind::send, Mode::sync, true)
NB(Bsend_init, ReqKind::send, Mode::buffered, true)
NB(Rsend_init, ReqKind::send, Mode::ready, true)
#undef NB
#define NB_C(Name, kind, mode, persistent)                                                     \
    int Name(const void* buf, MPI_Count count, MPI_Datatype dt, int peer, int tag,              \
             MPI_Comm comm, MPI_Request* request) {                                            \
        return post(kind, buf, count, dt, peer, tag, comm, mode, request, persistent, nullptr); \
    }
NB_C(Issend_c, ReqKind::send, Mode::sync, false)
NB_C(Ibsend_c, ReqKind::send, Mode::buffered, false)
NB_C(Irsend_c, ReqKind::send, Mode::ready, false)
NB_C(Send_init_c, ReqKind::send, Mode::standard, true)
NB_C(Ssend_init_c, ReqKind::send, Mode::sync, true)
NB_C(Bsend_init_c, ReqKind::send, Mode::buffered, true)
NB_C(Rsend_init_c, ReqKind::send, Mode::ready, true)
#undef NB_C
int Recv_init_c(void* buf, MPI_Count count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                MPI_Request* request) {
    return post(ReqKind::recv, buf, count, dt, source, tag, comm, Mode::standard, request, true,
                nullptr);
}
int Irecv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
          MPI_Request* request) {
    return post(ReqKind::recv, buf, count, dt, source, tag, comm, Mode::standard, request, false,
                nullptr);
}
int Recv_init(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
    return post(ReqKind::recv, buf, count, dt, source, tag, comm, Mode::standard, request, true,
                nullptr);
}
int Isend_c(const void* buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
            MPI_Request* request) {
    return post(ReqKind::send, buf, count, dt, dest, tag, comm, Mode::standard, request, false,
                nullptr);
}
int Irecv_c(void* buf, MPI_Count count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
            MPI_Request* request) {
    return post(ReqKind::recv, buf, count, dt, source, tag, comm, Mode::standard, request, false,
                nullptr);
}

static int bad_request(MPI_Request h) {
    return raise(nullptr, make_error(MPI_ERR_REQUEST, "invalid request handle 0x%x", unsigned(h)));
}

int Start(MPI_Request* request) {
    if (!request) return raise(nullptr, make_error(MPI_ERR_ARG, "null request pointer"));
    Request* r = request_lookup(*request);
    if (!r || !r->persistent) return bad_request(*request);
    if (r->active)
        return raise(r->comm, make_error(MPI_ERR_REQUEST, "MPI_Start on an active request"));
    int rc;
    if (r->kind == ReqKind::ext) {
        r->active = true;
        r->complete = false;
        r->status = MPI_Status{};
        r->status.MPI_SOURCE = MPI_ANY_SOURCE;
        r->status.MPI_TAG = MPI_ANY_TAG;
        rc = r->ext_start ? r->ext_start(r) : MPI_SUCCESS;
        if (rc != MPI_SUCCESS) {  // nothing started: the request stays inactive
            r->active = false;
            r->complete = true;
        }
    } else {
        rc = start(r);
    }
    return rc == MPI_SUCCESS ? rc : raise(r->comm, rc);
}

int Startall(int count, MPI_Request reqs[]) {
    if (count < 0) return raise(nullptr, make_error(MPI_ERR_COUNT, "negative count %d", count));
    for (int i = 0; i < count; ++i) {
        int rc = Start(&reqs[i]);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

// ---- completion -------------------------------------------------------------------------------
// A handle that takes part: non-null and (one-shot, or persistent and active).
static bool lookup_active(MPI_Request h, Request** out, int* err) {
    *out = nullptr;
    *err = MPI_SUCCESS;
    if (h == MPI_REQUEST_NULL) return false;
    Request* r = request_lookup(h);
    if (!r) {
        *err = bad_request(h);
        return false;
    }
    if (r->persistent && !r->active) return false;
    *out = r;
    return true;
}

int Wait(MPI_Request* request, MPI_Status* status) {
    if (!request) return raise(nullptr, make_error(MPI_ERR_ARG, "null request pointer"));
    Request* r;
    int err;
    if (!lookup_active(*request, &r, &err)) {
        if (err != MPI_SUCCESS) return err;
        empty_status(status);
        return MPI_SUCCESS;
    }
    wait_until(req_done, r);
    Comm* c = r->comm;
    return raise(c, retire(r, status, request));
}

int Test(MPI_Request* request, int* flag, MPI_Status* status) {
    if (!request) return raise(nullptr, make_error(MPI_ERR_ARG, "null request pointer"));
    Request* r;
    int err;
    if (!lookup_active(*request, &r, &err)) {
        if (err != MPI_SUCCESS) return err;
        *flag = 1;
        empty_status(status);
        return MPI_SUCCESS;
    }
    if (!r->complete) poll();
    *flag = r->complete;
    if (!r->complete) return MPI_SUCCESS;
    Comm* c = r->comm;
    return raise(c, retire(r, status, request));
}

struct Many {
    int n;
    Request** r;
};
static bool all_done(void* p) {
    auto* m = static_cast<Many*>(p);
    for (int i = 0; i < m->n; ++i)
        if (m->r[i] && !m->r[i]->complete) return false;
    return true;
}
static bool any_done(void* p) {
    auto* m = static_cast<Many*>(p);
    for (int i = 0; i < m->n; ++i)
        if (m->r[i] && m->r[i]->complete) return true;
    return false;
}

static int collect(int count, MPI_Request reqs[], std::vector<Request*>& rs, int* nactive) {
    rs.assign(size_t(count), nullptr);
    *nactive = 0;
    for (int i = 0; i < count; ++i) {
        int err;
        if (lookup_active(reqs[i], &rs[size_t(i)], &err)) ++*nactive;
        else if (err != MPI_SUCCESS) return err;
    }
    return MPI_SUCCESS;
}

// Retire every complete request in rs; errors go into statuses (MPI_ERR_IN_STATUS).
static int retire_many(int count, MPI_Request reqs[], std::vector<Request*>& rs,
                       MPI_Status statuses[], int* outcount, int indices[]) {
    int errs = 0;
    Comm* errcomm = nullptr;
    int n = 0;
    for (int i = 0; i < count; ++i) {
        Request* r = rs[size_t(i)];
        if (!r || !r->complete) continue;
        MPI_Status* st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE
                                                         : &statuses[indices ? n : i];
        Comm* c = r->comm;
        int e = retire(r, st, &reqs[i]);
        if (st != MPI_STATUS_IGNORE) st->MPI_ERROR = e;
        if (e != MPI_SUCCESS && !errs++) errcomm = c;
        if (indices) indices[n] = i;
        ++n;
    }
    if (outcount) *outcount = n;
    if (errs)
        return raise(errcomm, make_error(MPI_ERR_IN_STATUS, "%d of the requests failed; see the "
                                                            "statuses", errs));
    return MPI_SUCCESS;
}

int Waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
    if (count < 0) return raise(nullptr, make_error(MPI_ERR_COUNT, "negative count %d", count));
    std::vector<Request*> rs;
    int nactive;
    if (int e = collect(count, reqs, rs, &nactive)) return e;
    Many m{count, rs.data()};
    wait_until(all_done, &m);
    if (statuses != MPI_STATUSES_IGNORE)
        for (int i = 0; i < count; ++i)
            if (!rs[size_t(i)]) {
                empty_status(&statuses[i]);
                statuses[i].MPI_ERROR = MPI_SUCCESS;
            }
    return retire_many(count, reqs, rs, statuses, nullptr, nullptr);
}

int Testall(int count, MPI_Request reqs[], int* flag, MPI_Status statuses[]) {
    if (count < 0) return raise(nullptr, make_error(MPI_ERR_COUNT, "negative count %d", count));
    std::vector<Request*> rs;
    int nactive;
    if (int e = collect(count, reqs, rs, &nactive)) return e;
    Many m{count, rs.data()};
    if (!all_done(&m)) poll();
    *flag = all_done(&m);
    if (!*flag) return MPI_SUCCESS;
    if (statuses != MPI_STATUSES_IGNORE)
        for (int i = 0; i < count; ++i)
            if (!rs[size_t(i)]) {
                empty_status(&statuses[i]);
                statuses[i].MPI_ERROR = MPI_SUCCESS;
            }
    return retire_many(count, reqs, rs, statuses, nullptr, nullptr);
}

static int any_common(int count, MPI_Request reqs[], int* index, int* flag, MPI_Status* status,
                      bool block) {
    if (count < 0) return raise(nullptr, make_error(MPI_ERR_COUNT, "negative count %d", count));
    std::vector<Request*> rs;
    int nactive;
    if (int e = collect(count, reqs, rs, &nactive)) return e;
    if (nactive == 0) {
        *index = MPI_UNDEFINED;
        if (flag) *flag = 1;
        empty_status(status);
        return MPI_SUCCESS;
    }
    Many m{count, rs.data()};
    if (block) wait_until(any_done, &m);
    else if (!any_done(&m)) poll();
    for (int i = 0; i < count; ++i) {
        Request* r = rs[size_t(i)];
        if (r && r->complete) {
            *index = i;
            if (flag) *flag = 1;
            Comm* c = r->comm;
            return raise(c, retire(r, status, &reqs[i]));
        }
    }
    *index = MPI_UNDEFINED;
    if (flag) *flag = 0;
    return MPI_SUCCESS;
}

int Waitany(int count, MPI_Request reqs[], int* index, MPI_Status* status) {
    return any_common(count, reqs, index, nullptr, status, true);
}
int Testany(int count, MPI_Request reqs[], int* index, int* flag, MPI_Status* status) {
    return any_common(count, reqs, index, flag, status, false);
}

static int some_common(int incount, MPI_Request reqs[], int* outcount, int indices[],
                       MPI_Status statuses[], bool block) {
    if (incount < 0) return raise(nullptr, make_error(MPI_ERR_COUNT, "negative count %d", incount));
    std::vector<Request*> rs;
    int nactive;
    if (int e = collect(incount, reqs, rs, &nactive)) return e;
    if (nactive == 0) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    Many m{incount, rs.data()};
    if (block) wait_until(any_done, &m);
    else if (!any_done(&m)) poll();
    return retire_many(incount, reqs, rs, statuses, outcount, indices);
}
int Waitsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
    return some_common(incount, reqs, outcount, indices, statuses, true);
}
int Testsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
    return some_common(incount, reqs, outcount, indices, statuses, false);
}

int Request_free(MPI_Request* request) {
    if (!request) return raise(nullptr, make_error(MPI_ERR_ARG, "null request pointer"));
    Request* r = request_lookup(*request);
    if (!r) return bad_request(*request);
    // A finished (or inactive persistent) request goes now; a pending one when it finishes.
    if (r->complete) request_release(r);
    else r->user_freed = true;
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
    Request* r;
    int err;
    if (!lookup_active(request, &r, &err)) {
        if (err != MPI_SUCCESS) return err;
        *flag = 1;
        empty_status(status);
        return MPI_SUCCESS;
    }
    if (!r->complete) poll();
    *flag = r->complete;
    if (r->complete) fill_status(r, status);
    return MPI_SUCCESS;
}

int Cancel(MPI_Request* request) {
    if (!request) return raise(nullptr, make_error(MPI_ERR_ARG, "null request pointer"));
    Request* r = request_lookup(*request);
    if (!r) return bad_request(*request);
    if (r->persistent && !r->active)
        return raise(r->comm, make_error(MPI_ERR_REQUEST, "MPI_Cancel on an inactive request"));
    return raise(r->comm, cancel(r));
}

int Test_cancelled(const MPI_Status* status, int* flag) {
    *flag = (uint32_t(status->count_hi_and_cancelled) & 0x80000000u) != 0;
    return MPI_SUCCESS;
}

// ---- probe and matched receive ----------------------------------------------------------------
struct ProbeArgs {
    uint32_t ctx;
    int src, tag;
    Unexp* found;
};
static bool probe_done(void* p) {
    auto* a = static_cast<ProbeArgs*>(p);
    a->found = find_unexpected(a->ctx, a->src, a->tag, false);
    return a->found != nullptr;
}

static int probe_check(Comm* c, int source, int tag) {
    if (source != MPI_ANY_SOURCE && source != MPI_PROC_NULL && (source < 0 || source >= c->size))
        return raise(c, make_error(MPI_ERR_RANK, "invalid source rank %d: %s has %d ranks", source,
                                   c->name.c_str(), c->size));
    if (tag < 0 && tag != MPI_ANY_TAG)
        return raise(c, make_error(MPI_ERR_TAG, "invalid tag %d", tag));
    return MPI_SUCCESS;
}

static void proc_null_status(MPI_Status* st) {
    if (st == MPI_STATUS_IGNORE) return;
    st->MPI_SOURCE = MPI_PROC_NULL;
    st->MPI_TAG = MPI_ANY_TAG;
    st->count_lo = 0;
    st->count_hi_and_cancelled = 0;
}

int Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
    WANMPI_GET_COMM(c, comm);
    if (int e = probe_check(c, source, tag)) return e;
    if (source == MPI_PROC_NULL) {
        proc_null_status(status);
        return MPI_SUCCESS;
    }
    ProbeArgs a{c->ctx, source, tag, nullptr};
    wait_until(probe_done, &a);
    status_of_unexp(a.found, status);
    return MPI_SUCCESS;
}

int Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
    WANMPI_GET_COMM(c, comm);
    if (int e = probe_check(c, source, tag)) return e;
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        proc_null_status(status);
        return MPI_SUCCESS;
    }
    ProbeArgs a{c->ctx, source, tag, nullptr};
    if (!probe_done(&a)) {
        poll();
        probe_done(&a);
    }
    *flag = a.found != nullptr;
    if (a.found) status_of_unexp(a.found, status);
    return MPI_SUCCESS;
}

// Matched messages (MPI_Mprobe): 0x2c800000 | index into this table.
static std::vector<std::pair<Unexp*, Comm*>>& messages() {
    static std::vector<std::pair<Unexp*, Comm*>> v{{nullptr, nullptr}};
    return v;
}
static MPI_Message message_new(Unexp* u, Comm* c) {
    auto& v = messages();
    for (size_t i = 1; i < v.size(); ++i)
        if (!v[i].first) {
            v[i] = {u, c};
            return MPI_Message(0x2c800000 | int(i));
        }
    v.push_back({u, c});
    return MPI_Message(0x2c800000 | int(v.size() - 1));
}

int Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
    WANMPI_GET_COMM(c, comm);
    if (int e = probe_check(c, source, tag)) return e;
    if (source == MPI_PROC_NULL) {
        proc_null_status(status);
        *message = MPI_MESSAGE_NO_PROC;
        return MPI_SUCCESS;
    }
    ProbeArgs a{c->ctx, source, tag, nullptr};
    wait_until(probe_done, &a);
    find_unexpected(c->ctx, source, tag, true);  // unlink the same (first) match
    status_of_unexp(a.found, status);
    *message = message_new(a.found, c);
    return MPI_SUCCESS;
}

int Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
            MPI_Status* status) {
    WANMPI_GET_COMM(c, comm);
    if (int e = probe_check(c, source, tag)) return e;
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        proc_null_status(status);
        *message = MPI_MESSAGE_NO_PROC;
        return MPI_SUCCESS;
    }
    ProbeArgs a{c->ctx, source, tag, nullptr};
    if (!probe_done(&a)) {
        poll();
        probe_done(&a);
    }
    *flag = a.found != nullptr;
    if (!a.found) return MPI_SUCCESS;
    find_unexpected(c->ctx, source, tag, true);
    status_of_unexp(a.found, status);
    *message = message_new(a.found, c);
    return MPI_SUCCESS;
}

int Imrecv_c(void* buf, MPI_Count count, MPI_Datatype dt, MPI_Message* message,
             MPI_Request* request) {
    if (!message) return raise(nullptr, make_error(MPI_ERR_ARG, "null message pointer"));
    if (*message == MPI_MESSAGE_NO_PROC) {
        Request* r = request_new(ReqKind::recv);
        request_setup(r, buf, count, MPI_BYTE, MPI_PROC_NULL, 0, comm_lookup(MPI_COMM_SELF),
                      Mode::standard);
        start(r);
        *request = request_handle(r);
        *message = MPI_MESSAGE_NULL;
        return MPI_SUCCESS;
    }
    uint32_t idx = uint32_t(*message) & 0x7fffff;
    auto& v = messages();
    if ((uint32_t(*message) & 0xff800000u) != 0x2c800000u || idx == 0 || idx >= v.size() ||
        !v[idx].first)
        return raise(nullptr, make_error(MPI_ERR_REQUEST, "invalid message handle 0x%x",
                                         unsigned(*message)));
    auto [u, c] = v[idx];
    Request* r = request_new(ReqKind::recv);
    int rc = request_setup(r, buf, count, dt, u->src, u->tag, c, Mode::standard);
    if (rc != MPI_SUCCESS) {
        request_release(r);
        return raise(c, rc);
    }
    v[idx] = {nullptr, nullptr};
    r->active = true;
    receive_matched(r, u);
    *request = request_handle(r);
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
}

int Imrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* message, MPI_Request* request) {
    return Imrecv_c(buf, count, dt, message, request);
}

int Mrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* message, MPI_Status* status) {
    return Mrecv_c(buf, count, dt, message, status);
}
int Mrecv_c(void* buf, MPI_Count count, MPI_Datatype dt, MPI_Message* message,
            MPI_Status* status) {
    MPI_Request req;
    int rc = Imrecv_c(buf, count, dt, message, &req);
    if (rc != MPI_SUCCESS) return rc;
    return Wait(&req, status);
}

// ---- buffered-send buffer ---------------------------------------------------------------------
int Buffer_attach_c(void* buffer, MPI_Count size) { return raise(nullptr, bsend_attach(buffer, size)); }
int Buffer_attach(void* buffer, int size) { return Buffer_attach_c(buffer, size); }
int Buffer_detach_c(void* buffer_addr, MPI_Count* size) {
    int64_t s = 0;
    int rc = bsend_detach(buffer_addr, &s);
    *size = s;
    return raise(nullptr, rc);
}
int Buffer_detach(void* buffer_addr, int* size) {
    MPI_Count s = 0;
    int rc = Buffer_detach_c(buffer_addr, &s);
    *size = int(s);
    return rc;
}

}  // namespace wanmpi::impl
