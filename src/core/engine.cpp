#include "core/engine.hpp"
#include "core/engine_impl.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <sstream>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sched.h>
#include <thread>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "base/tunables.hpp"
#include "core/api.hpp"
#include "core/errors.hpp"
#include "runtime/pmi_client.hpp"
#include "transport/registry.hpp"
#include "core/wan.hpp"
#include "core/wan_rate.hpp"
#include "runtime/impi_startup.hpp"

namespace wanmpi::core {

Engine* g = nullptr;
EnginePvars g_pvars;

// ---- unexpected-message records -------------------------------------------------------------
// An unexpected message costs a record and, for an eager one, a payload buffer. Allocating both
// with new/malloc was the largest per-message cost of small collectives (about 1400 of the
// ~10,600 instructions of an 8-byte Allreduce at 4 ranks, callgrind), so both come from caches.
// Every payload block holds at least kSmallPayload bytes, so any block may serve any small
// payload; blocks of larger messages go back to malloc. The caches are bounded (kCacheMax), and
// the eager credit still bounds what a receiver holds (engine.hpp).
constexpr uint64_t kSmallPayload = 512;
constexpr size_t kCacheMax = 256;
static std::vector<Unexp*> g_unexp_cache;
static std::vector<char*> g_payload_cache;

static Unexp* unexp_new() {
    if (g_unexp_cache.empty()) return new Unexp();
    Unexp* u = g_unexp_cache.back();
    g_unexp_cache.pop_back();
    *u = Unexp();
    return u;
}

static char* payload_new(uint64_t len) {
    if (len == 0) return nullptr;
    if (len > kSmallPayload) return static_cast<char*>(std::malloc(len));
    if (g_payload_cache.empty()) return static_cast<char*>(std::malloc(kSmallPayload));
    char* p = g_payload_cache.back();
    g_payload_cache.pop_back();
    return p;
}

// Frees u and its payload (u->data may be null).
static void unexp_delete(Unexp* u) {
    if (u->data) {
        if (uint64_t(u->size) <= kSmallPayload && g_payload_cache.size() < kCacheMax)
            g_payload_cache.push_back(u->data);
        else
            std::free(u->data);
        u->data = nullptr;
    }
    if (g_unexp_cache.size() < kCacheMax) g_unexp_cache.push_back(u);
    else delete u;
}

// ---- requests -------------------------------------------------------------------------------
Request* request_new(ReqKind kind) {
    uint32_t idx;
    if (!g->free_reqs.empty()) {
        idx = g->free_reqs.back();
        g->free_reqs.pop_back();
    } else {
        idx = uint32_t(g->reqs.size());
        if (idx >= 0x800000) return nullptr;  // handle space (see mpi.h)
        g->reqs.push_back(new Request());
    }
    Request* r = g->reqs[idx];
    uint32_t gen = r->gen + 1;
    // Rebuilt in place (no temporary plus move-assignment: this runs for every message).
    r->~Request();
    new (r) Request();
    r->idx = idx;
    r->gen = gen;
    r->kind = kind;
    return r;
}

void request_release(Request* r) {
    if (r->ext_free) r->ext_free(r->ext);
    r->ext = nullptr;
    r->ext_free = nullptr;
    if (r->dt_held) datatype_release(r->dt);
    r->dt_held = false;
    if (r->comm_held) comm_release(r->comm);
    r->comm_held = false;
    std::free(r->pack_buf);
    r->pack_buf = nullptr;
    r->ops.clear();
    r->ops.shrink_to_fit();
    r->data_ops.clear();
    r->data_ops.shrink_to_fit();
    r->comm = nullptr;  // marks the slot free for request_lookup
    r->gen++;  // stale wire ids no longer resolve
    g->free_reqs.push_back(r->idx);
}

MPI_Request request_handle(const Request* r) { return MPI_Request(0x2c000000 | r->idx); }

Request* request_lookup(MPI_Request h) {
    uint32_t u = uint32_t(h);
    if ((u & 0xff800000u) != 0x2c000000u || !g) return nullptr;
    uint32_t idx = u & 0x7fffff;
    if (idx == 0 || idx >= g->reqs.size()) return nullptr;
    Request* r = g->reqs[idx];
    // A free slot is recognisable: it is in the free list with kind reset; we mark it by idx 0.
    return (r && r->idx == idx && r->comm) ? r : nullptr;
}

void fill_status(const Request* r, MPI_Status* st) {
    if (st == MPI_STATUS_IGNORE) return;
    st->MPI_SOURCE = r->status.MPI_SOURCE;
    st->MPI_TAG = r->status.MPI_TAG;
    st->count_lo = r->status.count_lo;
    st->count_hi_and_cancelled = r->status.count_hi_and_cancelled;
}

static void set_count(MPI_Status& st, int64_t bytes) {
    st.count_lo = int(uint32_t(uint64_t(bytes)));
    st.count_hi_and_cancelled =
        (st.count_hi_and_cancelled & int(0x80000000u)) | int((uint64_t(bytes) >> 32) & 0x7fffffff);
}
static void set_cancelled(MPI_Status& st) {
    st.count_hi_and_cancelled = int(uint32_t(st.count_hi_and_cancelled) | 0x80000000u);
}

int request_setup(Request* r, const void* buf, int64_t count, MPI_Datatype dth, int peer, int tag,
                  Comm* comm, Mode mode) {
    const Datatype* dt = datatype_lookup(dth);
    // Nothing moves to or from MPI_PROC_NULL, nor in a message of 0 elements, so like MPICH
    // accept MPI_DATATYPE_NULL there (MPICH test suite, pt2pt/recvnull, part/nonblocking_pready).
    if (!dt && dth == MPI_DATATYPE_NULL && (peer == MPI_PROC_NULL || count == 0))
        dt = datatype_lookup(MPI_BYTE);
    if (!dt) return datatype_error(dth);  // says why: null, freed, uncommitted, MPI_LB/UB
    if (count < 0) return make_error(MPI_ERR_COUNT, "negative count %lld", (long long)count);
    if (r->kind == ReqKind::send) {
        if (peer != MPI_PROC_NULL && (peer < 0 || peer >= comm->remote_size()))
            return make_error(MPI_ERR_RANK, "invalid destination rank %d: %s has %d ranks", peer,
                              comm->name.c_str(), comm->remote_size());
        if (tag < 0 || tag > 0x7fffffff)
            return make_error(MPI_ERR_TAG, "invalid tag %d (must be 0..MPI_TAG_UB)", tag);
    } else {
        if (peer != MPI_PROC_NULL && peer != MPI_ANY_SOURCE &&
            (peer < 0 || peer >= comm->remote_size()))
            return make_error(MPI_ERR_RANK, "invalid source rank %d: %s has %d ranks", peer,
                              comm->name.c_str(), comm->remote_size());
        if (tag < 0 && tag != MPI_ANY_TAG)
            return make_error(MPI_ERR_TAG, "invalid tag %d (must be 0..MPI_TAG_UB or MPI_ANY_TAG)",
                              tag);
    }
    r->buf = const_cast<void*>(buf);
    r->count = count;
    r->dt = dt;
    r->bytes = count * dt->size;
    r->peer = peer;
    r->tag = tag;
    r->comm = comm;
    r->ctx = comm->ctx;
    r->mode = mode;
    r->world_peer = (peer >= 0) ? comm->peer_world(peer) : -1;
    datatype_retain(dt);
    r->dt_held = true;
    comm_retain(comm);  // MPI_Comm_free of a communicator with pending requests is deferred
    r->comm_held = true;
    return MPI_SUCCESS;
}

// The request's operation is over. `active` stays set: for a persistent request it means
// "started and not yet returned by Wait/Test", which retire() ends.
void Engine::finish(Request* r) {
    r->complete = true;
    if (r->internal) {
        // bsend copy: release its space in the attached buffer
        if (r->bsend_block) bsend_used.erase(static_cast<char*>(r->bsend_block) - bsend_buf);
        request_release(r);
    } else if (r->user_freed) {
        request_release(r);
    }
}

void Engine::maybe_complete(Request* r) {
    if (r->kind == ReqKind::send && r->pending == 0 && !r->complete) finish(r);
}

void Engine::fail(Request* r, int code) {
    if (r->complete) return;
    if (r->status.MPI_ERROR == MPI_SUCCESS) r->status.MPI_ERROR = code;
    if (r->kind == ReqKind::recv && !r->matched) posted_unlink(r);
    if (r->unexp) {
        r->unexp->waiter = nullptr;
        r->unexp = nullptr;
    }
    r->pending = 0;
    finish(r);
}

// ---- queues ---------------------------------------------------------------------------------
void Engine::posted_append(Request* r) {
    r->next = nullptr;
    r->prev = posted_tail;
    if (posted_tail) posted_tail->next = r;
    else posted_head = r;
    posted_tail = r;
    g_pvars.posted.inc();
}
void Engine::posted_unlink(Request* r) {
    if (r->prev) r->prev->next = r->next;
    else if (posted_head == r) posted_head = r->next;
    else return;  // not in the list
    g_pvars.posted.dec();
    if (r->next) r->next->prev = r->prev;
    else posted_tail = r->prev;
    r->next = r->prev = nullptr;
}
void Engine::unexp_append(Unexp* u) {
    u->next = nullptr;
    u->prev = unexp_tail;
    if (unexp_tail) unexp_tail->next = u;
    else unexp_head = u;
    unexp_tail = u;
    g_pvars.unexp.inc();
}
void Engine::unexp_unlink(Unexp* u) {
    g_pvars.unexp.dec();
    if (u->prev) u->prev->next = u->next;
    else unexp_head = u->next;
    if (u->next) u->next->prev = u->prev;
    else unexp_tail = u->prev;
    u->next = u->prev = nullptr;
}

static_assert(kSeqAnySource == MPI_ANY_SOURCE && kSeqAnyTag == MPI_ANY_TAG);

// Matching (core/seq_order.hpp has the rule for numbered messages; for the others it is MPI's
// plain first-fit in posting / arrival order).
Request* Engine::match_posted(uint32_t ctx, int src, int tag, int world_src, uint64_t seq,
                              bool strict) {
    Request* r = seq_match_posted(posted_head, seq_windows, ctx, src, tag, world_src, seq, strict);
    if (!r) return nullptr;
    posted_unlink(r);
    r->matched = true;
    r->status.MPI_SOURCE = src;
    r->status.MPI_TAG = tag;
    return r;
}

Unexp* find_unexpected(uint32_t ctx, int src, int tag, bool remove) {
    Unexp* u = seq_find(g->unexp_head, g->seq_windows, ctx, src, tag);
    if (u && remove) g->unexp_unlink(u);
    return u;
}

void Engine::seq_release_gap(int world_src, uint32_t ctx, uint64_t seq, uint64_t next) {
    // Numbers seq+1 .. next-1 were waiting in the unexpected queue for this one: only wildcard
    // receives (and strict messages) could not take them, so offer them to the posted queue
    // now, lowest first.
    std::vector<Unexp*> freed;
    for (Unexp* u = unexp_head; u; u = u->next)
        if (u->world_src == world_src && u->ctx == ctx && u->seq > seq && u->seq < next)
            freed.push_back(u);
    std::sort(freed.begin(), freed.end(), [](Unexp* a, Unexp* b) { return a->seq < b->seq; });
    for (Unexp* u : freed) {
        if (u->waiter) continue;  // taken meanwhile (its payload is still arriving)
        Request* r = match_posted(u->ctx, u->src, u->tag, u->world_src, u->seq, u->strict);
        if (!r) continue;
        unexp_unlink(u);
        receive_matched(r, u);
    }
}

void status_of_unexp(const Unexp* u, MPI_Status* st) {
    if (st == MPI_STATUS_IGNORE) return;
    st->MPI_SOURCE = u->src;
    st->MPI_TAG = u->tag;
    st->count_hi_and_cancelled = 0;
    set_count(*st, u->size);
}

// ---- sending ----------------------------------------------------------------------------------
// Why rank w is unreachable: what progress reported, else what its route says right now (a send
// can fail before progress has reported the failure), never an empty text.
static std::string dead_text(int w) {
    if (!g->dead_why[w].empty()) return g->dead_why[w];
    if (w >= 0 && size_t(w) < g->route.size() && g->route[w]) {
        std::string f = g->route[w]->failure(w);
        if (!f.empty()) return f;
    }
    return "its connection is gone";
}

static void op_done(SendOp* op, bool ok) {
    auto* r = static_cast<Request*>(op->user);
    if (!r) {  // a queued control frame
        g->free_ops.push_back(op);
        return;
    }
    if (!ok) {
        g->fail(r, make_error(MPIX_ERR_PROC_FAILED, "send to rank %d failed: %s", r->world_peer,
                              dead_text(r->world_peer).c_str()));
        return;
    }
    if (--r->pending == 0) g->maybe_complete(r);
}

void Engine::send_ctrl(int peer, Hdr& h) {
    Ctrl c;
    c.peer = peer;
    fill_credit(peer, h);
    encode(h, c.hdr);
    ctrl_q.push_back(c);
}

void Engine::flush_ctrl() {
    // Swap out first: a failing send may call back into code that queues more.
    if (ctrl_q.empty()) return;
    std::vector<Ctrl> q;
    q.swap(ctrl_q);
    for (auto& c : q) {
        if (dead[c.peer]) continue;
        Transport* t = route[c.peer];
        if (t->try_send(c.peer, c.hdr, nullptr, 0) == SendResult::done) continue;
        SendOp* op;
        if (free_ops.empty()) op = new SendOp();
        else {
            op = free_ops.back();
            free_ops.pop_back();
        }
        *op = SendOp();
        std::memcpy(op->hdr, c.hdr, sizeof c.hdr);
        op->on_complete = op_done;
        op->user = nullptr;
        t->post_send(c.peer, op);
    }
}

void Engine::return_credit() {
    // Credit normally rides back on the frames we send the peer (fill_credit); an explicit
    // CREDIT frame goes only to peers owed at least credit_limit / 4 (a one-way flood).
    if (!credit_due) return;
    credit_due = false;
    size_t k = 0;
    for (int p : owed_list) {
        if (owed[p] >= credit_due_at) {
            Hdr h;
            h.type = F_CREDIT;
            send_ctrl(p, h);
        }
        if (owed[p] > 0) owed_list[k++] = p;
        else owed_listed[p] = 0;
    }
    owed_list.resize(k);
}

int Engine::start_send(Request* r) {
    int w = r->world_peer;
    if (dead[w])
        return make_error(MPIX_ERR_PROC_FAILED, "cannot send to rank %d: %s", w, dead_text(w).c_str());
    Transport* t = route[w];
    const void* payload = r->buf;
    if (!r->dt->contig && r->bytes > 0) {
        if (!r->pack_buf) r->pack_buf = static_cast<char*>(std::malloc(size_t(r->bytes)));
        if (!r->pack_buf) return make_error(MPI_ERR_NO_MEM, "out of memory packing %lld bytes",
                                            (long long)r->bytes);
        pack(*r->dt, r->buf, r->count, r->pack_buf);
        payload = r->pack_buf;
    }
    count_sent(w, r->bytes);
    Hdr h;
    h.ctx = r->ctx;
    h.src = r->comm->rank;
    h.tag = r->tag;
    h.size = uint64_t(r->bytes);
    h.sreq = r->wire_id();
    int64_t cost = r->bytes + kMsgCost;
    if (r->bytes <= eager_max[w] && credit[w] >= cost) {
        credit[w] -= cost;
        h.type = F_EAGER;
        if (r->mode == Mode::sync) {
            h.flags = FL_SYNC;
            r->pending++;  // until SYNC_ACK
            r->wait_sync = true;
        }
        fill_credit(w, h);
        if (uint64_t(r->bytes) <= t->max_inline()) {
            uint8_t hb[transport::kHeaderSize];
            encode(h, hb);
            SendResult res = t->try_send(w, hb, payload, uint64_t(r->bytes));
            if (res == SendResult::done) {
                maybe_complete(r);
                return MPI_SUCCESS;
            }
            if (res == SendResult::failed)
                return make_error(MPIX_ERR_PROC_FAILED, "send to rank %d failed: %s", w,
                                  dead_text(w).c_str());
        }
        r->ops.resize(1);
        SendOp& op = r->ops[0];
        encode(h, op.hdr);
        op.payload = payload;
        op.len = uint64_t(r->bytes);
        op.on_complete = op_done;
        op.user = r;
        r->pending++;
        t->post_send(w, &op);
        return MPI_SUCCESS;
    }
    // Rendezvous: the RTS now, the data after the receiver matched (FIN, or CTS then DATA).
    h.type = F_RTS;
    h.addr = reinterpret_cast<uint64_t>(payload);
    fill_credit(w, h);
    r->pending++;  // until FIN, or CTS (then until the DATA frames are out)
    r->wait_fin = true;
    r->ops.resize(1);
    SendOp& op = r->ops[0];
    encode(h, op.hdr);
    uint8_t hb[transport::kHeaderSize];
    std::memcpy(hb, op.hdr, sizeof hb);
    SendResult res = t->try_send(w, hb, nullptr, 0);
    if (res == SendResult::failed)
        return make_error(MPIX_ERR_PROC_FAILED, "send to rank %d failed: %s", w,
                                  dead_text(w).c_str());
    if (res == SendResult::would_block) {
        op.on_complete = op_done;
        op.user = r;
        r->pending++;
        t->post_send(w, &op);
    }
    return MPI_SUCCESS;
}

// Requestless eager send (engine.hpp). The same frame start_send() would build for a standard
// eager send of a contiguous buffer, but credit and the owed count are only committed once the
// transport took the frame, so "not sent" leaves no trace and the caller's fallback request
// goes out next, in order. sreq is 0: a blocking send cannot be cancelled, and 0 never names a
// request (request index 0 is MPI_REQUEST_NULL), so a stray CANCEL cannot hit it.
int send_now(Comm* comm, uint32_t ctx, int peer, int tag, const void* buf, int64_t bytes,
             bool* sent) {
    *sent = false;
    int w = comm->peer_world(peer);
    if (g->dead[w])
        return make_error(MPIX_ERR_PROC_FAILED, "cannot send to rank %d: %s", w,
                          dead_text(w).c_str());
    int64_t cost = bytes + kMsgCost;
    Transport* t = g->route[w];
    if (bytes > g->eager_max[w] || g->credit[w] < cost || uint64_t(bytes) > t->max_inline())
        return MPI_SUCCESS;
    Hdr h;
    h.type = F_EAGER;
    h.ctx = ctx;
    h.src = comm->rank;
    h.tag = tag;
    h.size = uint64_t(bytes);
    h.credit = uint64_t(g->owed[w]);
    uint8_t hb[transport::kHeaderSize];
    encode(h, hb);
    SendResult res = t->try_send(w, hb, buf, uint64_t(bytes));
    if (res == SendResult::failed)
        return make_error(MPIX_ERR_PROC_FAILED, "send to rank %d failed: %s", w,
                                  dead_text(w).c_str());
    if (res == SendResult::done) {
        g->credit[w] -= cost;
        g->owed[w] = 0;
        g->count_sent(w, bytes);
        *sent = true;
    }
    return MPI_SUCCESS;
}

// Requestless receive from the unexpected queue (engine.hpp): only the simplest case, the first
// matching message being a whole, non-synchronous eager message that fits; every other case
// (and "none yet") is left to a real request, which handles errors (truncation) and protocols.
bool recv_now(uint32_t ctx, int src, int tag, void* buf, int64_t cap, MPI_Status* st) {
    Unexp* u = find_unexpected(ctx, src, tag, false);
    if (!u || u->rts || u->sync || !u->data_complete || u->size > cap) return false;
    g->unexp_unlink(u);
    if (u->size > 0) std::memcpy(buf, u->data, size_t(u->size));
    g->owe(u->world_src, u->size + kMsgCost);
    status_of_unexp(u, st);
    unexp_delete(u);
    return true;
}

// ---- lean receives (engine.hpp) ---------------------------------------------------------------
LeanRecv* Engine::lean_match(const Hdr& h, uint64_t len, Inbound& in) {
    for (LeanSet* s = lean_head; s; s = s->next)
        for (int i = 0; i < s->n; ++i) {
            LeanRecv& l = s->v[i];
            if (l.state != 0 || l.ctx != h.ctx || l.src != h.src || l.tag != h.tag) continue;
            if (h.size != len || int64_t(len) > l.cap) return nullptr;  // queued; the owner falls back
            in.lean_set = s;
            return &l;
        }
    return nullptr;
}

void lean_post(LeanSet* s) {
    s->prev = nullptr;
    s->next = g->lean_head;
    if (g->lean_head) g->lean_head->prev = s;
    g->lean_head = s;
}

void lean_unpost(LeanSet* s) {
    // A frame still arriving writes into the entry's buffer until its last byte: wait for it
    // (a live peer's frame is already on its way), unless the peer failed and no byte will come.
    // (left == 0: every entry is done, none arriving.)
    for (; s->left > 0;) {
        bool arriving = false;
        for (int i = 0; i < s->n; ++i)
            if (s->v[i].state == 1 && !g->dead[s->v[i].world_src]) arriving = true;
        if (!arriving) break;
        poll();
    }
    if (s->prev) s->prev->next = s->next;
    else g->lean_head = s->next;
    if (s->next) s->next->prev = s->prev;
    s->next = s->prev = nullptr;
}

void Engine::send_data(Request* r, uint64_t rreq, int64_t want) {
    int w = r->world_peer;
    Transport* t = route[w];
    const char* payload = r->pack_buf ? r->pack_buf : static_cast<const char*>(r->buf);
    int64_t chunk = int64_t(std::min<uint64_t>(t->max_frame(), uint64_t(1) << 40));
    int64_t n = want == 0 ? 0 : (want + chunk - 1) / chunk;
    // Separate storage: r->ops[0] (the RTS) may still be referenced by the transport.
    r->data_ops.assign(size_t(n), SendOp());
    for (int64_t i = 0; i < n; ++i) {
        SendOp& op = r->data_ops[size_t(i)];
        Hdr h;
        h.type = F_DATA;
        h.rreq = rreq;
        h.addr = uint64_t(i * chunk);
        fill_credit(w, h);
        encode(h, op.hdr);
        op.payload = payload + i * chunk;
        op.len = uint64_t(std::min(chunk, want - i * chunk));
        op.on_complete = op_done;
        op.user = r;
        r->pending++;
        t->post_send(w, &op);
    }
}

// ---- receiving --------------------------------------------------------------------------------
static int truncate_error(const Request* r, int64_t size) {
    return make_error(MPI_ERR_TRUNCATE,
                      "message of %lld bytes from rank %d (tag %d) truncated to a %lld-byte buffer",
                      (long long)size, r->status.MPI_SOURCE, r->status.MPI_TAG,
                      (long long)r->bytes);
}

void Engine::deliver_eager(Request* r, const void* data, int64_t len, int world_src, bool sync,
                           uint64_t sreq) {
    int64_t n = std::min<int64_t>(len, r->bytes);
    if (n > 0 && data != r->buf) unpack(*r->dt, data, n, r->buf);
    set_count(r->status, n);
    if (len > r->bytes) r->status.MPI_ERROR = truncate_error(r, len);
    owe(world_src, len + kMsgCost);
    if (sync) {
        Hdr h;
        h.type = F_SYNC_ACK;
        h.sreq = sreq;
        send_ctrl(world_src, h);
    }
    finish(r);
}

void Engine::rndv_recv(Request* r, int w, uint64_t sreq, uint64_t addr, int64_t size) {
    int64_t want = std::min<int64_t>(size, r->bytes);
    set_count(r->status, want);
    if (size > r->bytes) r->status.MPI_ERROR = truncate_error(r, size);
    Transport* t = route[w];
    char* dest = static_cast<char*>(r->buf);
    if (!r->dt->contig && want > 0) {
        r->pack_buf = static_cast<char*>(std::malloc(size_t(want)));
        dest = r->pack_buf;
    }
    if (t->supports_get()) {
        base::Status st = want > 0 ? t->get(w, addr, dest, uint64_t(want)) : base::Status::OK();
        if (st.ok()) {
            if (r->pack_buf) unpack(*r->dt, r->pack_buf, want, r->buf);
            Hdr h;
            h.type = F_FIN;
            h.sreq = sreq;
            send_ctrl(w, h);
            finish(r);
            return;
        }
        // The transport could not read the peer's memory: fall back to CTS + DATA.
        WANMPI_LOG(debug, "get from rank %d failed (%s); using CTS/DATA", w, st.message().c_str());
    }
    r->bytes_done = 0;
    r->pending = 1;
    Hdr h;
    h.type = F_CTS;
    h.sreq = sreq;
    h.rreq = r->wire_id();
    h.size = uint64_t(want);
    send_ctrl(w, h);
    if (want == 0) {
        if (r->pack_buf) unpack(*r->dt, r->pack_buf, 0, r->buf);
        finish(r);
    }
}

int receive_matched(Request* r, Unexp* u) {
    r->matched = true;
    r->status.MPI_SOURCE = u->src;
    r->status.MPI_TAG = u->tag;
    if (u->rts) {
        g->rndv_recv(r, u->world_src, u->sreq, u->addr, u->size);
        unexp_delete(u);
    } else if (u->data_complete) {
        g->deliver_eager(r, u->data, u->size, u->world_src, u->sync, u->sreq);
        unexp_delete(u);
    } else {
        u->waiter = r;  // the payload is still arriving; on_frame completes r
        r->unexp = u;
    }
    return MPI_SUCCESS;
}

int Engine::start_recv(Request* r) {
    if (r->peer >= 0 && dead[r->world_peer])
        return make_error(MPIX_ERR_PROC_FAILED, "cannot receive from rank %d: %s", r->world_peer,
                          dead_why[r->world_peer].c_str());
    if (Unexp* u = find_unexpected(r->ctx, r->peer, r->tag, true)) return receive_matched(r, u);
    posted_append(r);
    return MPI_SUCCESS;
}

int start(Request* r) {
    r->complete = false;
    r->active = true;
    r->matched = false;
    r->pending = 0;
    r->bytes_done = 0;
    r->status = MPI_Status{};
    r->status.MPI_ERROR = MPI_SUCCESS;
    if (r->peer == MPI_PROC_NULL) {
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        r->status.MPI_TAG = MPI_ANY_TAG;
        r->complete = true;
        return MPI_SUCCESS;
    }
    if (r->kind == ReqKind::send) {
        if (r->mode == Mode::buffered && !r->internal) return bsend_start(r);
        return g->start_send(r);
    }
    return g->start_recv(r);
}

// ---- RecvSink ---------------------------------------------------------------------------------
void* Engine::on_header_at(int peer, unsigned slot, const uint8_t* hb, uint64_t len) {
    Inbound& in = inbound_of(peer, slot);
    uint8_t type = hb[0];
    if (type == F_EAGER) {
        Hdr h = decode(hb);
        // A numbered message is placed (matched or queued) before the ones its arrival frees
        // of a gap: it was sent before them.
        const uint64_t next = h.seq ? seq_windows.arrive(peer, h.ctx, h.seq) : 0;
        const bool strict = h.seq && (h.flags & FL_STRICT);
        if (Request* r = match_posted(h.ctx, h.src, h.tag, peer, h.seq, strict)) {
            in.kind = Inbound::Kind::direct;
            in.req = r;
            seq_release(peer, h.ctx, h.seq, next);
            if (len == 0) return nullptr;
            if (r->dt->contig && int64_t(len) <= r->bytes) return r->buf;
            in.scratch.resize(len);
            return in.scratch.data();
        }
        if (lean_head && !(h.flags & FL_SYNC)) {
            if (LeanRecv* l = lean_match(h, len, in)) {
                l->state = 1;
                in.kind = Inbound::Kind::lean;
                in.lean = l;
                seq_release(peer, h.ctx, h.seq, next);
                return len ? l->buf : nullptr;
            }
        }
        Unexp* u = unexp_new();
        u->ctx = h.ctx;
        u->src = h.src;
        u->tag = h.tag;
        u->world_src = peer;
        u->size = int64_t(h.size);
        u->sync = h.flags & FL_SYNC;
        u->sreq = h.sreq;
        u->seq = h.seq;
        u->strict = strict;
        u->data = payload_new(len);
        unexp_append(u);
        in.kind = Inbound::Kind::unexp;
        in.unexp = u;
        seq_release(peer, h.ctx, h.seq, next);
        return u->data;
    }
    if (type == F_DATA) {
        Hdr h = decode(hb);
        Request* r = by_wire(h.rreq);
        if (!r || r->kind != ReqKind::recv || h.addr + len > uint64_t(r->bytes)) {
            WANMPI_LOG(warn, "DATA frame from rank %d for an unknown receive; dropped", peer);
            in.kind = Inbound::Kind::scratch;
            in.scratch.resize(len);
            return in.scratch.data();
        }
        in.kind = Inbound::Kind::data;
        in.req = r;
        return (r->pack_buf ? r->pack_buf : static_cast<char*>(r->buf)) + h.addr;
    }
    in.kind = Inbound::Kind::scratch;
    if (len) {
        in.scratch.resize(len);
        return in.scratch.data();
    }
    return nullptr;
}

void Engine::on_frame_at(int peer, unsigned slot, const uint8_t* hb, const void* data,
                         uint64_t len) {
    Hdr h = decode(hb);
    credit[peer] += int64_t(h.credit);
    Inbound& in = inbound_of(peer, slot);
    switch (h.type) {
    case F_EAGER:
        count_recv(peer, int64_t(len));
        if (in.kind == Inbound::Kind::direct) {
            deliver_eager(in.req, data, int64_t(len), peer, h.flags & FL_SYNC, h.sreq);
        } else if (in.kind == Inbound::Kind::lean) {
            in.lean->state = 2;
            in.lean_set->left--;
            owe(peer, int64_t(len) + kMsgCost);
        } else if (in.kind == Inbound::Kind::unexp) {
            Unexp* u = in.unexp;
            u->data_complete = true;
            if (Request* r = u->waiter) {
                r->unexp = nullptr;
                deliver_eager(r, u->data, u->size, peer, u->sync, u->sreq);
                unexp_delete(u);
            }
        }
        break;
    case F_RTS: {
        count_recv(peer, int64_t(h.size));
        const uint64_t next = h.seq ? seq_windows.arrive(peer, h.ctx, h.seq) : 0;
        const bool strict = h.seq && (h.flags & FL_STRICT);
        if (Request* r = match_posted(h.ctx, h.src, h.tag, peer, h.seq, strict)) {
            rndv_recv(r, peer, h.sreq, h.addr, int64_t(h.size));
        } else {
            Unexp* u = unexp_new();
            u->ctx = h.ctx;
            u->src = h.src;
            u->tag = h.tag;
            u->world_src = peer;
            u->size = int64_t(h.size);
            u->rts = true;
            u->data_complete = true;
            u->sreq = h.sreq;
            u->addr = h.addr;
            u->seq = h.seq;
            u->strict = strict;
            unexp_append(u);
        }
        seq_release(peer, h.ctx, h.seq, next);
        break;
    }
    case F_CTS:
        if (Request* r = by_wire(h.sreq); r && r->kind == ReqKind::send && r->wait_fin) {
            r->wait_fin = false;
            cts_q.push_back({r, r->gen, h.rreq, std::min<int64_t>(int64_t(h.size), r->bytes)});
        }
        break;
    case F_DATA:
        if (in.kind == Inbound::Kind::data) {
            Request* r = in.req;
            r->bytes_done += int64_t(len);
            int64_t want = int64_t(uint64_t(uint32_t(r->status.count_lo)) |
                                   (uint64_t(r->status.count_hi_and_cancelled & 0x7fffffff) << 32));
            if (r->bytes_done >= want && !r->complete) {
                if (r->pack_buf) unpack(*r->dt, r->pack_buf, want, r->buf);
                r->pending = 0;
                finish(r);
            }
        }
        break;
    case F_FIN:
        if (Request* r = by_wire(h.sreq); r && r->kind == ReqKind::send && r->wait_fin) {
            r->wait_fin = false;
            if (--r->pending == 0) maybe_complete(r);
        }
        break;
    case F_SYNC_ACK:
        if (Request* r = by_wire(h.sreq); r && r->kind == ReqKind::send && r->wait_sync) {
            r->wait_sync = false;
            if (--r->pending == 0) maybe_complete(r);
        }
        break;
    case F_CANCEL_REQ: {
        Hdr resp;
        resp.type = F_CANCEL_RESP;
        resp.sreq = h.sreq;
        for (Unexp* u = unexp_head; u; u = u->next) {
            if (u->world_src == peer && u->sreq == h.sreq && u->data_complete) {
                unexp_unlink(u);
                if (!u->rts) owe(peer, u->size + kMsgCost);
                unexp_delete(u);
                resp.flags = FL_YES;
                break;
            }
        }
        send_ctrl(peer, resp);
        break;
    }
    case F_CANCEL_RESP:
        if (Request* r = by_wire(h.sreq); r && r->kind == ReqKind::send) {
            if (h.flags & FL_YES) {
                // The receiver dropped the message: no CTS/FIN/SYNC_ACK will come for it.
                set_cancelled(r->status);
                if (r->wait_fin) r->pending--;
                if (r->wait_sync) r->pending--;
                r->wait_fin = r->wait_sync = false;
            }
            if (--r->pending == 0) maybe_complete(r);
        }
        break;
    case F_CREDIT:
        break;
    default:
        WANMPI_LOG(warn, "unknown frame type %u from rank %d; ignored", h.type, peer);
    }
    in.kind = Inbound::Kind::none;
}

void Engine::on_peer_failed(int peer, const std::string& why) {
    if (dead[peer]) return;
    dead[peer] = 1;
    dead_why[peer] = why;
    if (quiescing) return;
    WANMPI_LOG(debug, "peer rank %d failed: %s", peer, why.c_str());
    for (size_t i = 1; i < reqs.size(); ++i) {
        Request* r = reqs[i];
        if (r && r->comm && !r->complete && r->active && r->world_peer == peer)
            fail(r, make_error(MPIX_ERR_PROC_FAILED, "rank %d failed: %s", peer, why.c_str()));
    }
}

// ---- cancel -----------------------------------------------------------------------------------
int cancel(Request* r) {
    if (r->kind == ReqKind::ext) return r->ext_cancel ? r->ext_cancel(r) : MPI_SUCCESS;
    if (r->complete && r->kind == ReqKind::recv) return MPI_SUCCESS;
    if (r->kind == ReqKind::recv) {
        if (!r->matched) {
            g->posted_unlink(r);
            set_cancelled(r->status);
            g->finish(r);
        }
        return MPI_SUCCESS;
    }
    // Send: ask the receiver to drop the message if it has not been matched yet. The request
    // completes (cancelled or not) when the answer comes back.
    if (r->cancel_sent || r->peer == MPI_PROC_NULL || g->dead[r->world_peer]) return MPI_SUCCESS;
    r->cancel_sent = true;
    r->complete = false;
    r->pending++;
    Hdr h;
    h.type = F_CANCEL_REQ;
    h.sreq = r->wire_id();
    // The message's context and tag: a laned wan link sends the CANCEL on the message's lane,
    // behind the message (so the receiver always saw the message first).
    h.ctx = r->ctx;
    h.tag = r->tag;
    g->send_ctrl(r->world_peer, h);
    g->flush_ctrl();
    return MPI_SUCCESS;
}

// ---- buffered sends ---------------------------------------------------------------------------
int bsend_attach(void* buf, int64_t size) {
    if (g->bsend_buf) return make_error(MPI_ERR_BUFFER, "a buffer is already attached");
    if (size < 0) return make_error(MPI_ERR_ARG, "negative buffer size %lld", (long long)size);
    g->bsend_buf = static_cast<char*>(buf);
    g->bsend_size = size;
    return MPI_SUCCESS;
}

static bool no_bsends(void*) { return g->bsend_used.empty(); }

int bsend_detach(void* buf_addr, int64_t* size) {
    // Detach blocks until every message buffered in it has left (MPI 4.0 §3.6.1).
    wait_until(no_bsends, nullptr);
    *static_cast<void**>(buf_addr) = g->bsend_buf;
    *size = g->bsend_size;
    g->bsend_buf = nullptr;
    g->bsend_size = 0;
    return MPI_SUCCESS;
}

int bsend_start(Request* user) {
    int64_t need = user->bytes + MPI_BSEND_OVERHEAD;
    // First fit in the attached buffer; try once more after progress frees space.
    for (int attempt = 0; attempt < 2; ++attempt) {
        int64_t off = 0;
        for (auto& [o, l] : g->bsend_used) {
            if (o - off >= need) break;
            off = o + l;
        }
        if (g->bsend_buf && off + need <= g->bsend_size) {
            Request* r = request_new(ReqKind::send);
            if (!r) return make_error(MPI_ERR_INTERN, "out of request handles");
            char* block = g->bsend_buf + off;
            g->bsend_used[off] = need;
            if (user->bytes) pack(*user->dt, user->buf, user->count, block);
            r->internal = true;
            r->bsend_block = block;
            request_setup(r, block, user->bytes, MPI_BYTE, user->peer, user->tag, user->comm,
                          Mode::standard);
            r->active = true;
            int rc = g->start_send(r);
            if (rc != MPI_SUCCESS) {
                g->bsend_used.erase(off);
                request_release(r);
                return rc;
            }
            // The user's request is complete as soon as the data sits in the buffer.
            user->complete = true;
            return MPI_SUCCESS;
        }
        poll();
    }
    return make_error(MPI_ERR_BUFFER,
                      "MPI_Bsend of %lld bytes needs %lld bytes of attached buffer; %s",
                      (long long)user->bytes, (long long)need,
                      g->bsend_buf ? "not enough free space" : "no buffer is attached");
}

}  // namespace wanmpi::core
