// The point-to-point engine: communicators, requests, matching, eager/rendezvous protocols and
// progress over the transports. One Engine per process, created by MPI_Init.
//
// Wire protocol between ranks of one cluster (all transports carry the same 64-byte header,
// encoded little-endian field by field in engine.cpp):
//   EAGER      ctx src tag size [sreq if SYNC] + payload     a whole message
//   RTS        ctx src tag size sreq addr                    rendezvous request-to-send
//   CTS        sreq rreq size(wanted)                        receiver matched; send DATA frames
//   DATA       rreq off + payload                            a piece of a rendezvous message
//   FIN        sreq                                          receiver pulled the data (get)
//   SYNC_ACK   sreq                                          a synchronous eager send matched
//   CANCEL_REQ sreq / CANCEL_RESP sreq flag                  remote cancel of a send
//   CREDIT                                                   returns eager credit only
// Every header also returns `credit` bytes of eager credit (piggy-back). A sender may have at
// most WANMPI_P2P_EAGER_CREDIT bytes of eager messages (payload + header) that the receiver has
// not consumed yet; beyond that it uses rendezvous, so a flood into a rank that posts no
// receives costs the receiver one small RTS record per message, never the payload.
//
// Ordering: a transport delivers frames of one ordered pair in order, each pair uses exactly one
// route, and matching happens in arrival order, so MPI's non-overtaking rule holds; the posted
// and unexpected queues are single lists in post/arrival order, so MPI_ANY_SOURCE matches across
// routes correctly.
//
// Threading: all Engine methods run under the API lock (one thread at a time); a thread
// blocked in wait() drops the lock while it sleeps in the kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <mpi.h>

#include "base/kvs.hpp"
#include "core/comm.hpp"
#include "core/datatype.hpp"
#include "transport/transport.hpp"

namespace wanmpi::core {

enum class Mode : uint8_t { standard, sync, buffered, ready };
// send/recv: point-to-point. ext: a request driven by other code (collective schedules,
// generalized requests): it sets `complete` itself, and `ext_free(ext)` runs on release.
enum class ReqKind : uint8_t { send, recv, ext };

struct Unexp;

struct Request {
    uint32_t idx = 0;
    uint32_t gen = 0;
    ReqKind kind = ReqKind::send;
    Mode mode = Mode::standard;
    bool persistent = false;
    bool active = false;        // persistent: started and not yet completed by Wait/Test
    bool complete = false;      // MPI's view: Wait/Test may return it
    bool user_freed = false;    // MPI_Request_free on a pending request
    bool matched = false;       // recv: taken off the posted queue
    bool cancel_sent = false;
    bool internal = false;      // freed automatically on completion (bsend copies)
    bool wait_fin = false;      // rendezvous send: waiting for the receiver (CTS or FIN)
    bool wait_sync = false;     // synchronous eager send: waiting for SYNC_ACK
    bool dt_held = false;       // datatype_retain() was called for dt
    bool comm_held = false;     // comm_retain() was called for comm
    int pending = 0;            // internal operations still outstanding (see engine.cpp)
    MPI_Status status{};
    int64_t bytes_done = 0;     // bytes moved (recv: received so far)
    // arguments
    Comm* comm = nullptr;
    int peer = 0;               // comm rank, MPI_ANY_SOURCE or MPI_PROC_NULL
    int world_peer = -1;
    int tag = 0;
    uint32_t ctx = 0;           // context id matched on: comm->ctx, or comm->ctx + 1 (collectives)
    void* buf = nullptr;
    int64_t count = 0;
    const Datatype* dt = nullptr;
    int64_t bytes = 0;          // size * count
    // protocol state
    char* pack_buf = nullptr;   // contiguous staging copy for non-contiguous datatypes
    uint64_t remote_rreq = 0;
    std::vector<transport::SendOp> ops;       // the eager frame or the RTS, when queued
    std::vector<transport::SendOp> data_ops;  // rendezvous DATA pieces
    Unexp* unexp = nullptr;     // recv matched to an unexpected message still arriving
    void* bsend_block = nullptr;
    void* ext = nullptr;                    // ReqKind::ext: owner's state
    void (*ext_free)(void* ext) = nullptr;  // called by request_release
    int (*ext_cancel)(Request* r) = nullptr;  // MPI_Cancel on an ext request (nullptr: no-op)
    // Persistent ext request (persistent collectives, partitioned communication): MPI_Start
    // calls this after marking the request active and not complete; error code, not raised.
    int (*ext_start)(Request* r) = nullptr;
    Request* next = nullptr;    // posted queue
    Request* prev = nullptr;
    uint64_t wire_id() const { return (uint64_t(gen) << 32) | idx; }
};

// Per-peer receive state for the frame a transport is currently filling.
struct Inbound {
    enum class Kind : uint8_t { none, direct, unexp, data, scratch, lean } kind = Kind::none;
    Request* req = nullptr;
    Unexp* unexp = nullptr;
    struct LeanRecv* lean = nullptr;  // Kind::lean: the entry and its set (lean_post)
    struct LeanSet* lean_set = nullptr;
    std::vector<char> scratch;
};

class Engine;
Engine& engine();  // the process's engine (after MPI_Init)

Request* request_lookup(MPI_Request h);

}  // namespace wanmpi::core

namespace wanmpi::core {

// Unexpected message: arrived (header at least) before a matching receive was posted.
struct Unexp {
    uint32_t ctx = 0;
    int src = 0;          // comm rank of the sender
    int tag = 0;
    int world_src = 0;
    int64_t size = 0;
    bool rts = false;     // rendezvous: only the RTS is here
    bool sync = false;
    bool data_complete = false;
    uint64_t sreq = 0;
    uint64_t addr = 0;
    uint64_t seq = 0;      // number per (world_src, ctx) from a laned wan link; 0: none
    // Sent on two lanes (FL_STRICT): matched only once every lower number arrived, whatever the
    // receive's tag (core/seq_order.hpp).
    bool strict = false;
    char* data = nullptr;  // eager payload (malloc'd)
    Request* waiter = nullptr;
    Unexp* next = nullptr;
    Unexp* prev = nullptr;
};

// ---- set-up (init.cpp) ------------------------------------------------------------------
int engine_init(int required, int* provided);
int engine_finalize();
bool engine_running();
int world_rank();
int world_size();
const std::string& processor_name();
int thread_level();
bool is_main_thread();
base::Kvs* kvs();
int host_of(int world_rank);       // same value = same host (shared memory possible)
int universe_size();               // from the launcher; world_size() when it does not say

// ---- clusters (IMPI jobs, issue 6) ----------------------------------------------------------
// A job spans one cluster (IMPI client) unless mpirun -client started it. World ranks are global:
// client 0's ranks first (IMPI.md §3.6). For a single-cluster job cluster_count() is 1 and every
// rank is in cluster 0, except when the developer tunable WANMPI_IMPI_FAKE_CLUSTERS (a list of
// cluster indices, one per world rank, e.g. "0,0,1,1") pretends otherwise: that lets the
// cluster-aware collectives be exercised in a one-machine, one-cluster job (messages still take
// the local routes).
int cluster_count();
int cluster_of(int world_rank);
// IMPI host of a world rank: every wanmpi rank is its own IMPI host (GridMPI style), so this is
// the world rank in an IMPI job, and host_count() == world_size(); MPI_HOST_COLOR/SIZE use it.
int impi_host_of(int world_rank);
int impi_host_count();
// Negotiated IMPI collective parameters (IMPI.md §6.3): IMPI_C_COLL_XSIZE (short/long cut-over
// in bytes) and IMPI_C_COLL_MAXLINEAR (linear global phase up to this many masters). The IMPI
// defaults (1024, 4) outside an IMPI job.
int impi_coll_xsize();
int impi_coll_maxlinear();
int appnum();
void pmi_abort(int code, const std::string& msg);  // tells the launcher; returns

// ---- requests -----------------------------------------------------------------------------
Request* request_new(ReqKind kind);
void request_release(Request* r);          // back to the pool (must be complete or inactive)
MPI_Request request_handle(const Request* r);

// Fill a request's arguments; returns MPI_SUCCESS or an error code (not yet raised).
int request_setup(Request* r, const void* buf, int64_t count, MPI_Datatype dt, int peer, int tag,
                  Comm* comm, Mode mode);
int start(Request* r);   // post a (persistent or one-shot) request; error code on failure

// Complete the status of a finished request (MPI_Status for the user); PROC_NULL aware.
void fill_status(const Request* r, MPI_Status* st);

// ---- progress -----------------------------------------------------------------------------
int poll();                                        // one pass over all transports and hooks
// Extra work run by every poll() (collective schedules advance here, giving nonblocking
// collectives asynchronous progress). Returns how much progress it made (0 = none).
void add_progress_hook(int (*hook)());
// Waits until done(ctx): spin, yield (when the policy allows), then block in the kernel
// (progress.cpp has the policy). `w` null: the point-to-point policy (WANMPI_PROGRESS_*); the
// blocking collectives pass their own (coll/sched.cpp: WANMPI_COLL_*). Calling thread: any
// thread inside MPI holding the API lock (it is dropped around yields and sleeps with
// MPI_THREAD_MULTIPLE).
struct WaitPolicy {
    int64_t spin_ns = -1;   // poll this long after the last progress; -1: adaptive PROGRESS_SPIN_US
    int64_t yield_ns = -1;  // then poll and sched_yield() until this long without progress;
                            // -1: PROGRESS_YIELD_US (automatic: only on oversubscribed hosts)
};
void wait_until(bool (*done)(void*), void* ctx, const WaitPolicy* w = nullptr);
// How long a waiting rank polls before it yields or sleeps (WANMPI_PROGRESS_SPIN_US, resolved:
// automatic = 50 us when this host has no more ranks than cores, else 0).
int64_t progress_spin_ns();

// ---- point-to-point for collectives ----------------------------------------------------------
// Start a send or receive in the communicator's collective context (ctx + 1: never matches user
// messages). `buf`/`count`/`dt` as in MPI; peer is a rank of `comm` (of the remote group for an
// intercommunicator). Returns MPI_SUCCESS or an error code (not raised); *out is the request,
// which the caller watches (`complete`, `status.MPI_ERROR`) and must release with
// request_release() once complete. Tags: any int >= 0 (derive them from Comm::coll_seq so that
// concurrent nonblocking collectives on one communicator never match each other's messages).
int coll_post(ReqKind kind, const void* buf, int64_t count, MPI_Datatype dt, int peer, int tag,
              Comm* comm, Request** out);

// ---- requestless fast paths (small blocking collectives, blocking sends) -------------------
// send_now: sends the `bytes` contiguous bytes at `buf` to rank `peer` of `comm` (not
// MPI_PROC_NULL) in context `ctx` with `tag`, as one eager frame, at once and without a request,
// if the peer's eager credit, the route's inline limit and its queue allow. *sent says whether
// it did; when it did not, nothing was sent or charged, and the caller posts a request instead
// (which then goes out after everything sent before: order is kept). Returns MPI_SUCCESS or an
// error code, not raised (dead peer).
int send_now(Comm* comm, uint32_t ctx, int peer, int tag, const void* buf, int64_t bytes,
             bool* sent);
// recv_now: receives from rank `src` of the communicator (not MPI_ANY_SOURCE) with `tag` in
// context `ctx` into the contiguous `buf` of `cap` bytes, when the first matching unexpected
// message is a whole non-synchronous eager message of at most `cap` bytes; fills `st` (source,
// tag, count; may be MPI_STATUS_IGNORE). Returns false, having changed nothing, in every other case (the caller then posts
// a request, which deals with the rest: rendezvous, synchronous mode, truncation).
bool recv_now(uint32_t ctx, int src, int tag, void* buf, int64_t cap,
              MPI_Status* st = MPI_STATUS_IGNORE);
// Lean receives: requestless posted receives, for the blocking exchanges of small collectives
// (coll/flat.cpp). recv_now only finds what is already in the unexpected queue, so every message
// of an exchange used to be queued on arrival (a record, a payload copy) and copied again; a
// lean receive is matched on arrival instead, and the payload lands in `buf` at once. It takes
// a whole, non-synchronous eager frame of at most `cap` bytes from (ctx, src, tag) that no posted
// request matches (posted requests keep their place in MPI's order); anything else is queued as
// before, where recv_now and find_unexpected see it. Posting does not look into the unexpected
// queue: the caller tries recv_now first. Each entry must be the only receive of its (ctx, src,
// tag) (the exchanges' tags are one per call). `state`: 0 waiting, 1 payload arriving (a
// transport may deliver a frame in pieces), 2 done. lean_unpost() first polls until no entry is
// arriving (unless its peer failed), then unlinks the set: call it on every path before the
// buffers go away. Thread: the poster, holding the API lock; the sets of concurrent exchanges
// (MPI_THREAD_MULTIPLE) are chained.
struct LeanRecv {
    uint32_t ctx;
    int src;        // rank in the communicator, as frames name it
    int world_src;  // the same peer's world rank (failure check)
    int tag;
    void* buf;
    int64_t cap;
    uint8_t state;
};
struct LeanSet {
    LeanRecv* v = nullptr;
    int n = 0;
    int left = 0;  // entries not done
    LeanSet* next = nullptr;
    LeanSet* prev = nullptr;
};
void lean_post(LeanSet* s);
void lean_unpost(LeanSet* s);
// Whether rank `peer` of `comm` is known to have failed (a requestless wait that only polls
// recv_now must stop then and let a request report the failure).
bool peer_dead(const Comm* comm, int peer);
// Binds this rank to one core if WANMPI_PROGRESS_BIND says so (progress.cpp); once per process,
// at the end of init (later calls do nothing).
void bind_once();

// ---- probe / matched receive ----------------------------------------------------------------
Unexp* find_unexpected(uint32_t ctx, int src, int tag, bool remove);
void status_of_unexp(const Unexp* u, MPI_Status* st);
int receive_matched(Request* r, Unexp* u);         // r set up as a recv; takes ownership of u

// ---- cancel ---------------------------------------------------------------------------------
int cancel(Request* r);

// ---- buffered sends -------------------------------------------------------------------------
int bsend_attach(void* buf, int64_t size);
int bsend_detach(void* buf_addr, int64_t* size);
int bsend_start(Request* r);   // copies the data into the attached buffer and sends the copy

}  // namespace wanmpi::core
