// Jobs (root tasks) and the small collective schedules the communicator code is built from. See
// comm_task.hpp for the model; the algorithms are the textbook ones, chosen because they work for
// any member count without special cases: dissemination allreduce, Bruck allgather, binomial
// broadcast.
#include "core/comm_task.hpp"

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"

namespace wanmpi::core {

namespace {

struct Job {
    Task task;
    std::coroutine_handle<> leaf;             // suspended in WaitReqs
    std::vector<Request*>* wait = nullptr;    // what the leaf waits for
    bool running = false;
    bool finished = false;
    Request* req = nullptr;  // nonblocking: the user's request
    Comm* comm = nullptr;    // retained while the job lives (nonblocking)
};

std::vector<Job*> g_jobs;
Job* g_current = nullptr;
bool g_in_hook = false;
bool g_hook_added = false;

bool reqs_done(const std::vector<Request*>& v) {
    for (Request* r : v)
        if (!r->complete) return false;
    return true;
}

void job_finish(Job* j) {
    j->finished = true;
    if (Request* r = j->req) {
        r->status.MPI_ERROR = j->task.rc();
        r->complete = true;
        r->active = false;
        j->req = nullptr;
        if (r->user_freed) request_release(r);
    }
}

void job_resume(Job* j, std::coroutine_handle<> h) {
    Job* prev = g_current;
    g_current = j;
    j->running = true;
    h.resume();
    j->running = false;
    g_current = prev;
    if (j->task.done()) job_finish(j);
}

// Resumes `j` if what it waits for has completed. Returns whether it ran.
bool job_step(Job* j) {
    if (j->running || j->finished || !j->leaf || !j->wait || !reqs_done(*j->wait)) return false;
    auto h = j->leaf;
    j->leaf = {};
    j->wait = nullptr;
    job_resume(j, h);
    return true;
}

// Nonblocking jobs are deleted here, outside any iteration over g_jobs.
void sweep() {
    for (size_t i = 0; i < g_jobs.size();) {
        Job* j = g_jobs[i];
        if (j->finished && j->comm) {
            g_jobs.erase(g_jobs.begin() + long(i));
            comm_release(j->comm);
            delete j;
        } else {
            ++i;
        }
    }
}

int progress_hook() {
    if (g_in_hook || g_jobs.empty()) return 0;
    g_in_hook = true;
    int n = 0;
    // Index loop: a job may start other jobs (appended) while it runs.
    for (size_t i = 0; i < g_jobs.size(); ++i) n += job_step(g_jobs[i]) ? 1 : 0;
    sweep();
    g_in_hook = false;
    return n;
}

void ensure_hook() {
    if (!g_hook_added) {
        add_progress_hook(progress_hook);
        g_hook_added = true;
    }
}

bool job_finished(void* p) { return static_cast<Job*>(p)->finished; }

}  // namespace

bool WaitReqs::await_ready() const { return reqs_done(reqs); }

void WaitReqs::await_suspend(std::coroutine_handle<> h) {
    g_current->leaf = h;
    g_current->wait = &reqs;
}

int WaitReqs::await_resume() {
    int rc = MPI_SUCCESS;
    for (Request* r : reqs) {
        if (rc == MPI_SUCCESS) rc = r->status.MPI_ERROR;
        request_release(r);
    }
    reqs.clear();
    return rc;
}

int job_run_blocking(Task t) {
    ensure_hook();
    Job j;
    j.task = std::move(t);
    g_jobs.push_back(&j);
    job_resume(&j, j.task.handle());
    if (!j.finished) wait_until(job_finished, &j);
    g_jobs.erase(std::find(g_jobs.begin(), g_jobs.end(), &j));
    return j.task.rc();
}

int job_request(Task t, Comm* comm, Request** out) {
    ensure_hook();
    Request* r = request_new(ReqKind::ext);
    if (!r) return make_error(MPI_ERR_INTERN, "out of request handles");
    r->comm = comm;
    r->peer = MPI_PROC_NULL;  // not a point-to-point request (MPI_Cancel treats it as done)
    r->active = true;
    r->complete = false;
    r->status = MPI_Status{};
    r->status.MPI_SOURCE = MPI_ANY_SOURCE;
    r->status.MPI_TAG = MPI_ANY_TAG;
    auto* j = new Job();
    j->task = std::move(t);
    j->req = r;
    j->comm = comm;
    comm_retain(comm);
    g_jobs.push_back(j);
    *out = r;
    job_resume(j, j->task.handle());
    if (!g_in_hook) sweep();
    return MPI_SUCCESS;
}

// ---- point-to-point ----------------------------------------------------------------------------
// An error leaves earlier requests of the same step pending: they are handed to the engine to
// release when they complete (a failed peer is the only way to get here).
static void abandon(std::vector<Request*>& reqs) {
    for (Request* r : reqs) {
        if (r->complete) request_release(r);
        else r->user_freed = true;
    }
    reqs.clear();
}

int post_typed(ReqKind kind, const void* buf, int64_t count, MPI_Datatype dt, int peer, int tag,
               Comm* c, std::vector<Request*>& reqs) {
    Request* r = nullptr;
    int rc = coll_post(kind, buf, count, dt, peer, tag, c, &r);
    if (rc != MPI_SUCCESS) {
        abandon(reqs);
        return rc;
    }
    reqs.push_back(r);
    return MPI_SUCCESS;
}

int post_send(const void* buf, int64_t bytes, int peer, int tag, Comm* c,
              std::vector<Request*>& reqs) {
    return post_typed(ReqKind::send, buf, bytes, MPI_BYTE, peer, tag, c, reqs);
}

int post_recv(void* buf, int64_t bytes, int peer, int tag, Comm* c, std::vector<Request*>& reqs) {
    return post_typed(ReqKind::recv, buf, bytes, MPI_BYTE, peer, tag, c, reqs);
}

Members members_all(Comm* via, int tag) {
    Members m;
    m.via = via;
    m.me = via->rank;
    m.n = via->size;
    m.tag = tag;
    return m;
}

// ---- schedules ---------------------------------------------------------------------------------
Task allreduce_max(const Members& m, std::vector<int64_t>& v) {
    const int n = m.n;
    const int64_t bytes = int64_t(v.size() * sizeof(int64_t));
    std::vector<int64_t> sbuf, rbuf(v.size());
    std::vector<Request*> reqs;
    for (int k = 1, s = 0; k < n; k <<= 1, ++s) {
        sbuf = v;
        int rc = post_recv(rbuf.data(), bytes, m.peer((m.me - k + n) % n), m.tag + s, m.via, reqs);
        if (rc == MPI_SUCCESS)
            rc = post_send(sbuf.data(), bytes, m.peer((m.me + k) % n), m.tag + s, m.via, reqs);
        if (rc == MPI_SUCCESS) rc = co_await WaitReqs{reqs};
        if (rc != MPI_SUCCESS) co_return rc;
        for (size_t i = 0; i < v.size(); ++i) v[i] = std::max(v[i], rbuf[i]);
    }
    co_return MPI_SUCCESS;
}

Task allgather(const Members& m, std::vector<int64_t> mine, std::vector<int64_t>& all) {
    const int n = m.n;
    const size_t b = mine.size();
    // tmp block j holds member (me + j) % n.
    std::vector<int64_t> tmp(b * size_t(n));
    std::copy(mine.begin(), mine.end(), tmp.begin());
    std::vector<Request*> reqs;
    for (int k = 1, s = 0; k < n; k <<= 1, ++s) {
        const int cnt = std::min(k, n - k);
        const int64_t bytes = int64_t(size_t(cnt) * b * sizeof(int64_t));
        int rc = post_recv(tmp.data() + size_t(k) * b, bytes, m.peer((m.me + k) % n), m.tag + s,
                           m.via, reqs);
        if (rc == MPI_SUCCESS)
            rc = post_send(tmp.data(), bytes, m.peer((m.me - k + n) % n), m.tag + s, m.via, reqs);
        if (rc == MPI_SUCCESS) rc = co_await WaitReqs{reqs};
        if (rc != MPI_SUCCESS) co_return rc;
    }
    all.assign(b * size_t(n), 0);
    for (int j = 0; j < n; ++j)
        std::copy(tmp.begin() + long(size_t(j) * b), tmp.begin() + long(size_t(j + 1) * b),
                  all.begin() + long(size_t((m.me + j) % n) * b));
    co_return MPI_SUCCESS;
}

Task bcast(const Members& m, int root, std::vector<int64_t>& v) {
    const int n = m.n;
    if (n <= 1) co_return MPI_SUCCESS;
    const int vr = (m.me - root + n) % n;
    auto member = [&](int vrank) { return m.peer((vrank + root) % n); };
    std::vector<Request*> reqs;
    int mask = 1;
    for (; mask < n; mask <<= 1) {
        if (vr & mask) {
            int64_t len = 0;
            int rc = post_recv(&len, sizeof len, member(vr - mask), m.tag + 32, m.via, reqs);
            if (rc == MPI_SUCCESS) rc = co_await WaitReqs{reqs};
            if (rc != MPI_SUCCESS) co_return rc;
            v.assign(size_t(len), 0);
            rc = post_recv(v.data(), len * 8, member(vr - mask), m.tag + 33, m.via, reqs);
            if (rc == MPI_SUCCESS) rc = co_await WaitReqs{reqs};
            if (rc != MPI_SUCCESS) co_return rc;
            break;
        }
    }
    int64_t len = int64_t(v.size());
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask < n) {
            int rc = post_send(&len, sizeof len, member(vr + mask), m.tag + 32, m.via, reqs);
            if (rc == MPI_SUCCESS)
                rc = post_send(v.data(), len * 8, member(vr + mask), m.tag + 33, m.via, reqs);
            if (rc != MPI_SUCCESS) co_return rc;
        }
    }
    co_return co_await WaitReqs{reqs};
}

Task sendrecv(Comm* c, int peer, int tag, std::vector<int64_t> out, std::vector<int64_t>& in) {
    std::vector<Request*> reqs;
    int64_t mylen = int64_t(out.size()), len = 0;
    int rc = post_recv(&len, sizeof len, peer, tag + 48, c, reqs);
    if (rc == MPI_SUCCESS) rc = post_send(&mylen, sizeof mylen, peer, tag + 48, c, reqs);
    if (rc == MPI_SUCCESS) rc = co_await WaitReqs{reqs};
    if (rc != MPI_SUCCESS) co_return rc;
    in.assign(size_t(len), 0);
    rc = post_recv(in.data(), len * 8, peer, tag + 49, c, reqs);
    if (rc == MPI_SUCCESS) rc = post_send(out.data(), mylen * 8, peer, tag + 49, c, reqs);
    if (rc == MPI_SUCCESS) rc = co_await WaitReqs{reqs};
    co_return rc;
}

Task allreduce_max_inter(const Members& m, const InterLink* link, std::vector<int64_t>& v) {
    int rc = co_await allreduce_max(m, v);
    if (rc != MPI_SUCCESS || !link) co_return rc;
    if (m.me == link->leader) {
        std::vector<int64_t> r;
        rc = co_await sendrecv(link->comm, link->peer, link->tag, v, r);
        if (rc != MPI_SUCCESS) co_return rc;
        if (r.size() != v.size())
            co_return make_error(MPI_ERR_INTERN, "intercommunicator agreement: the remote group "
                                                 "sent %zu values, expected %zu", r.size(),
                                 v.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = std::max(v[i], r[i]);
    }
    co_return co_await bcast(m, link->leader, v);
}

}  // namespace wanmpi::core
