// MPI 4.0/4.1 point-to-point additions (MPI_Isendrecv, MPI_Isendrecv_replace, the large-count
// MPI_Sendrecv_replace_c, MPI_Buffer_flush/iflush) and generalized requests
// (MPI_Grequest_start/complete), built on the
// engine's ReqKind::ext requests: the engine never drives them; code here sets `complete`, and
// request_release() calls `ext_free`.
//
// Isendrecv: an ext request owning an inner send and receive on the user's context. A progress
// hook (run by every poll()) completes the outer request once both inner ones are done, so
// Wait/Test/Waitany/... need nothing special. The hook costs one emptiness check while no
// Isendrecv is pending.
//
// Buffer_iflush: an ext request the same hook completes once the attached buffer holds no
// message still on its way (what MPI_Buffer_detach waits for).
//
// Generalized requests: the status comes from the user's query_fn. The standard calls it from
// the Wait/Test that completes the request; wanmpi calls it in MPI_Grequest_complete (and again
// after a cancel of a completed request), which gives the same status for every program that
// has its result ready when it calls MPI_Grequest_complete (the usual reason to call it).
// free_fn runs when the request is released (Wait/Test, or MPI_Request_free + completion); its
// error code is logged, not returned (the engine's release path has no error return).
//
// Threading: under the API lock like every MPI call. MPI_Grequest_complete may come from
// another thread (MPI_THREAD_MULTIPLE): it pokes the engine's wake eventfd so a waiter asleep
// in the kernel re-checks at once.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/log.hpp"
#include "bindings/impl.hpp"
#include "core/api.hpp"
#include "core/engine.hpp"
#include "core/engine_impl.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {
namespace {

// ---- Isendrecv --------------------------------------------------------------------------------
struct SendRecv {
    Request* send = nullptr;
    Request* recv = nullptr;
    char* tmp = nullptr;  // Isendrecv_replace: packed copy of the outgoing data
};

std::vector<Request*>& pending_sr() {
    static std::vector<Request*> v;
    return v;
}

void sr_free(void* p) {
    auto* s = static_cast<SendRecv*>(p);
    // Normally both are complete and released by the hook; a request released early (error
    // path) still owns them.
    for (Request* q : {s->send, s->recv})
        if (q) {
            if (!q->complete) cancel(q);
            if (q->complete) request_release(q);
            else q->user_freed = true;  // the engine releases it when it finishes
        }
    std::free(s->tmp);
    delete s;
}

int sr_cancel(Request* r) {
    auto* s = static_cast<SendRecv*>(r->ext);
    int rc = MPI_SUCCESS;
    if (s->recv && !s->recv->complete) rc = cancel(s->recv);
    if (s->send && !s->send->complete) {
        int e = cancel(s->send);
        if (rc == MPI_SUCCESS) rc = e;
    }
    return rc;
}

std::vector<Request*>& pending_flush() {
    static std::vector<Request*> v;
    return v;
}

bool no_bsends(void*) { return g->bsend_used.empty(); }

void complete_ext(Request* r) {
    r->complete = true;
    if (r->user_freed) request_release(r);
}

// Completes outer requests whose send and receive are both done, and buffer flushes.
int sr_hook() {
    int n = 0;
    auto& f = pending_flush();
    if (!f.empty() && g->bsend_used.empty()) {
        std::vector<Request*> done;
        done.swap(f);
        for (Request* r : done) complete_ext(r);
        n += int(done.size());
    }
    auto& v = pending_sr();
    if (v.empty()) return n;
    for (size_t i = 0; i < v.size();) {
        Request* r = v[i];
        auto* s = static_cast<SendRecv*>(r->ext);
        if (!s->send->complete || !s->recv->complete) {
            ++i;
            continue;
        }
        MPI_Status st = s->recv->status;
        int es = s->send->status.MPI_ERROR, er = s->recv->status.MPI_ERROR;
        st.MPI_ERROR = er != MPI_SUCCESS ? er : es;
        if (uint32_t(s->send->status.count_hi_and_cancelled) & 0x80000000u)
            st.count_hi_and_cancelled = int(uint32_t(st.count_hi_and_cancelled) | 0x80000000u);
        r->status = st;
        request_release(s->send);
        request_release(s->recv);
        s->send = s->recv = nullptr;
        v[i] = v.back();
        v.pop_back();
        complete_ext(r);
        ++n;
    }
    return n;
}

// A one-shot send or receive on the communicator's point-to-point context.
int start_inner(ReqKind kind, const void* buf, int64_t count, MPI_Datatype dt, int peer, int tag,
                Comm* c, Request** out) {
    Request* r = request_new(kind);
    if (!r) return make_error(MPI_ERR_INTERN, "out of request handles");
    int rc = request_setup(r, buf, count, dt, peer, tag, c, Mode::standard);
    if (rc == MPI_SUCCESS) rc = start(r);
    if (rc != MPI_SUCCESS) {
        request_release(r);
        return rc;
    }
    *out = r;
    return MPI_SUCCESS;
}

void hook_once() {
    static bool hooked = false;
    if (!hooked) {
        add_progress_hook(sr_hook);
        hooked = true;
    }
}

// Post recv then send (the receive first, as MPI_Sendrecv does, so a self-exchange matches at
// once) and hand out the outer request.
int isendrecv(const void* sendbuf, int64_t sendcount, MPI_Datatype sendtype, int dest, int sendtag,
              void* recvbuf, int64_t recvcount, MPI_Datatype recvtype, int source, int recvtag,
              Comm* c, MPI_Request* request, char* tmp) {
    hook_once();
    auto* s = new SendRecv;
    s->tmp = tmp;
    int rc = start_inner(ReqKind::recv, recvbuf, recvcount, recvtype, source, recvtag, c, &s->recv);
    if (rc == MPI_SUCCESS)
        rc = start_inner(ReqKind::send, sendbuf, sendcount, sendtype, dest, sendtag, c, &s->send);
    if (rc != MPI_SUCCESS) {
        sr_free(s);
        return rc;
    }
    Request* r = request_new(ReqKind::ext);
    if (!r) {
        sr_free(s);
        return make_error(MPI_ERR_INTERN, "out of request handles");
    }
    r->comm = c;
    comm_retain(c);
    r->comm_held = true;
    r->ctx = c->ctx;
    r->ext = s;
    r->ext_free = sr_free;
    r->ext_cancel = sr_cancel;
    pending_sr().push_back(r);
    sr_hook();  // both may be done already (MPI_PROC_NULL, self)
    *request = request_handle(r);
    return MPI_SUCCESS;
}

// ---- generalized requests -----------------------------------------------------------------
struct Greq {
    MPI_Grequest_query_function* query;
    MPI_Grequest_free_function* free;
    MPI_Grequest_cancel_function* cancel;
    void* extra;
};

void greq_free(void* p) {
    auto* q = static_cast<Greq*>(p);
    if (q->free) {
        int rc = q->free(q->extra);
        if (rc != MPI_SUCCESS)
            WANMPI_LOG(warn, "generalized request: free_fn returned error %d (ignored)", rc);
    }
    delete q;
}

void greq_query(Request* r) {
    auto* q = static_cast<Greq*>(r->ext);
    MPI_Status st{};
    st.MPI_SOURCE = MPI_UNDEFINED;
    st.MPI_TAG = MPI_UNDEFINED;
    st.MPI_ERROR = MPI_SUCCESS;
    int rc = q->query ? q->query(q->extra, &st) : MPI_SUCCESS;
    r->status.MPI_SOURCE = st.MPI_SOURCE;
    r->status.MPI_TAG = st.MPI_TAG;
    r->status.count_lo = st.count_lo;
    r->status.count_hi_and_cancelled = st.count_hi_and_cancelled;
    r->status.MPI_ERROR = rc;
}

int greq_cancel(Request* r) {
    auto* q = static_cast<Greq*>(r->ext);
    int rc = q->cancel ? q->cancel(q->extra, r->complete ? 1 : 0) : MPI_SUCCESS;
    if (r->complete) greq_query(r);  // the cancel may have changed what query_fn reports
    return rc;
}

Request* greq_lookup(MPI_Request h) {
    Request* r = request_lookup(h);
    return (r && r->kind == ReqKind::ext && r->ext_free == greq_free) ? r : nullptr;
}

int check_sr(Comm* c, int64_t sendcount, int64_t recvcount) {
    if (sendcount < 0 || recvcount < 0)
        return raise(c, make_error(MPI_ERR_COUNT, "negative count %lld",
                                   (long long)(sendcount < 0 ? sendcount : recvcount)));
    return MPI_SUCCESS;
}

}  // namespace
}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

#define CHECK_REQ_PTR(p)                                                                       \
    if (!(p)) return raise(nullptr, make_error(MPI_ERR_ARG, "null request pointer"))

int Isendrecv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                int sendtag, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                int source, int recvtag, MPI_Comm comm, MPI_Request* request) {
    WANMPI_GET_COMM(c, comm);
    CHECK_REQ_PTR(request);
    if (int e = check_sr(c, sendcount, recvcount)) return e;
    int rc = isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                       source, recvtag, c, request, nullptr);
    return rc == MPI_SUCCESS ? rc : raise(c, rc);
}

int Isendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
              void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
              MPI_Comm comm, MPI_Request* request) {
    return Isendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                       source, recvtag, comm, request);
}

int Isendrecv_replace_c(void* buf, MPI_Count count, MPI_Datatype dt, int dest, int sendtag,
                        int source, int recvtag, MPI_Comm comm, MPI_Request* request) {
    WANMPI_GET_COMM(c, comm);
    CHECK_REQ_PTR(request);
    const Datatype* d = datatype_lookup(dt);
    if (!d) return raise(c, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    if (int e = check_sr(c, count, count)) return e;
    // The outgoing data is packed first, so the receive may overwrite buf at once.
    int64_t bytes = d->size * count;
    char* tmp = static_cast<char*>(std::malloc(size_t(bytes > 0 ? bytes : 1)));
    if (!tmp)
        return raise(c, make_error(MPI_ERR_NO_MEM, "no memory for a %lld-byte copy",
                                   (long long)bytes));
    if (bytes > 0 && dest != MPI_PROC_NULL) pack(*d, buf, count, tmp);
    int rc = isendrecv(tmp, bytes, MPI_BYTE, dest, sendtag, buf, count, dt, source, recvtag, c,
                       request, tmp);
    return rc == MPI_SUCCESS ? rc : raise(c, rc);
}

int Isendrecv_replace(void* buf, int count, MPI_Datatype dt, int dest, int sendtag, int source,
                      int recvtag, MPI_Comm comm, MPI_Request* request) {
    return Isendrecv_replace_c(buf, count, dt, dest, sendtag, source, recvtag, comm, request);
}

int Sendrecv_replace_c(void* buf, MPI_Count count, MPI_Datatype dt, int dest, int sendtag,
                       int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
    WANMPI_GET_COMM(c, comm);
    const Datatype* d = datatype_lookup(dt);
    if (!d) return raise(c, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    if (count < 0)
        return raise(c, make_error(MPI_ERR_COUNT, "negative count %lld", (long long)count));
    std::vector<char> tmp(size_t(d->size * count));
    if (count) pack(*d, buf, count, tmp.data());
    return Sendrecv_c(tmp.data(), d->size * count, MPI_BYTE, dest, sendtag, buf, count, dt,
                      source, recvtag, comm, status);
}

int Buffer_flush(void) {
    wait_until(no_bsends, nullptr);
    return MPI_SUCCESS;
}

int Buffer_iflush(MPI_Request* request) {
    CHECK_REQ_PTR(request);
    Comm* world = comm_lookup(MPI_COMM_WORLD);
    Request* r = request_new(ReqKind::ext);
    if (!r) return raise(world, make_error(MPI_ERR_INTERN, "out of request handles"));
    r->comm = world;  // lives until MPI_Finalize: not retained
    r->status.MPI_SOURCE = MPI_ANY_SOURCE;
    r->status.MPI_TAG = MPI_ANY_TAG;
    *request = request_handle(r);
    if (g->bsend_used.empty()) {
        r->complete = true;
        return MPI_SUCCESS;
    }
    hook_once();
    pending_flush().push_back(r);
    return MPI_SUCCESS;
}

int Grequest_start(MPI_Grequest_query_function* query_fn, MPI_Grequest_free_function* free_fn,
                   MPI_Grequest_cancel_function* cancel_fn, void* extra_state,
                   MPI_Request* request) {
    CHECK_REQ_PTR(request);
    Comm* world = comm_lookup(MPI_COMM_WORLD);
    Request* r = request_new(ReqKind::ext);
    if (!r) return raise(world, make_error(MPI_ERR_INTERN, "out of request handles"));
    // Not tied to a communicator; errors go to MPI_COMM_WORLD's handler (as for raise(nullptr)).
    // COMM_WORLD lives until MPI_Finalize, so it is not retained.
    r->comm = world;
    r->status.MPI_SOURCE = MPI_UNDEFINED;
    r->status.MPI_TAG = MPI_UNDEFINED;
    r->ext = new Greq{query_fn, free_fn, cancel_fn, extra_state};
    r->ext_free = greq_free;
    r->ext_cancel = greq_cancel;
    *request = request_handle(r);
    return MPI_SUCCESS;
}

int Grequest_complete(MPI_Request request) {
    Request* r = greq_lookup(request);
    if (!r)
        return raise(nullptr, make_error(MPI_ERR_REQUEST,
                                         "MPI_Grequest_complete: 0x%x is not a generalized "
                                         "request", unsigned(request)));
    if (r->complete)
        return raise(nullptr, make_error(MPI_ERR_REQUEST,
                                         "MPI_Grequest_complete called twice on 0x%x",
                                         unsigned(request)));
    greq_query(r);
    r->complete = true;
    if (r->user_freed) {
        request_release(r);
    } else if (g && g->wake_fd >= 0 && g_thread_multiple.load(std::memory_order_relaxed)) {
        uint64_t one = 1;
        ssize_t n = ::write(g->wake_fd, &one, sizeof one);
        (void)n;
    }
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
