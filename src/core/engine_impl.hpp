// Internal to core: the engine's state and its intra-cluster frame header, shared by
// engine.cpp (protocol), progress.cpp (poll/wait) and wan.cpp (the IMPI translation of these
// frames). Not an interface for other layers.
//
// Threading: everything here is touched only under the API lock (see engine.hpp).
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/engine.hpp"
#include "core/pvars.hpp"
#include "core/seq_order.hpp"
#include "runtime/impi_startup.hpp"
#include "runtime/pmi_client.hpp"
#include "transport/transport.hpp"

namespace wanmpi::core {

class WanTransport;

using transport::SendOp;
using transport::SendResult;
using transport::Transport;

// ---- wire header ----------------------------------------------------------------------------
// 64 bytes, little-endian fields at fixed offsets (ranks of one cluster share a byte order; the
// IMPI wan transport has its own big-endian format). Encoded field by field, never by struct.
enum FrameType : uint8_t {
    F_EAGER = 1, F_RTS, F_CTS, F_DATA, F_FIN, F_SYNC_ACK, F_CANCEL_REQ, F_CANCEL_RESP, F_CREDIT
};
// FL_STRICT (inbound only, set by the wan route): a numbered message that travelled outside its
// (communicator, tag) stream's lane, so its stream is not FIFO for it (core/seq_order.hpp).
enum : uint8_t { FL_SYNC = 1, FL_YES = 2, FL_STRICT = 4 };

struct Hdr {
    uint8_t type = 0;
    uint8_t flags = 0;
    uint32_t ctx = 0;
    int32_t src = 0;
    int32_t tag = 0;
    uint64_t size = 0;
    uint64_t sreq = 0;
    uint64_t rreq = 0;
    uint64_t addr = 0;    // RTS: sender address for get(); DATA: offset
    uint64_t credit = 0;  // eager credit returned to the receiver of this frame
    // EAGER/RTS from a laned wan link: the message's number per (source, context), 0 if not
    // numbered (core/seq_order.hpp). Never set by intra-cluster routes.
    uint64_t seq = 0;
};

template <class T> inline void put(uint8_t* p, T v) { std::memcpy(p, &v, sizeof v); }
template <class T> inline T get(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "intra-cluster header is little-endian");

inline void encode(const Hdr& h, uint8_t* p) {
    p[0] = h.type;
    p[1] = h.flags;
    p[2] = p[3] = 0;
    put(p + 4, h.ctx);
    put(p + 8, h.src);
    put(p + 12, h.tag);
    put(p + 16, h.size);
    put(p + 24, h.sreq);
    put(p + 32, h.rreq);
    put(p + 40, h.addr);
    put(p + 48, h.credit);
    put(p + 56, h.seq);
}
inline Hdr decode(const uint8_t* p) {
    Hdr h;
    h.type = p[0];
    h.flags = p[1];
    h.ctx = get<uint32_t>(p + 4);
    h.src = get<int32_t>(p + 8);
    h.tag = get<int32_t>(p + 12);
    h.size = get<uint64_t>(p + 16);
    h.sreq = get<uint64_t>(p + 24);
    h.rreq = get<uint64_t>(p + 32);
    h.addr = get<uint64_t>(p + 40);
    h.credit = get<uint64_t>(p + 48);
    h.seq = get<uint64_t>(p + 56);
    return h;
}
static constexpr int64_t kMsgCost = transport::kHeaderSize;  // credit charged per message

// ---- the engine state -----------------------------------------------------------------------
struct Ctrl {
    int peer;
    uint8_t hdr[transport::kHeaderSize];
};

class Engine final : public transport::RecvSink {
public:
    void* on_header(int peer, const uint8_t* hdr, uint64_t len) override {
        return on_header_at(peer, 0, hdr, len);
    }
    void on_frame(int peer, const uint8_t* hdr, const void* data, uint64_t len) override {
        on_frame_at(peer, 0, hdr, data, len);
    }
    void* on_header_at(int peer, unsigned slot, const uint8_t* hdr, uint64_t len) override;
    void on_frame_at(int peer, unsigned slot, const uint8_t* hdr, const void* data,
                     uint64_t len) override;
    void on_peer_failed(int peer, const std::string& why) override;

    std::unique_ptr<runtime::PmiClient> pmi;
    int rank = 0, size = 1;
    int level = MPI_THREAD_SINGLE;
    std::thread::id main_thread;
    std::string hostname;
    std::vector<std::unique_ptr<Transport>> transports;
    std::vector<Transport*> route;       // per world rank
    std::vector<RouteKind> route_kind;   // per world rank: which MPI_T counters its messages add to
    std::vector<int> host_of;            // per world rank
    std::vector<int64_t> eager_max;      // per world rank
    std::vector<int64_t> credit;         // bytes I may still send eagerly to each peer
    std::vector<int64_t> owed;           // credit I owe each peer
    // Peers that may have owed > 0, each listed at most once (owed_listed). credit_due: some
    // peer's owed reached credit_due_at (credit_limit / 4), so return_credit() has work; it
    // runs on every poll() and returns at once otherwise.
    std::vector<int> owed_list;
    std::vector<char> owed_listed;
    bool credit_due = false;
    int64_t credit_due_at = 0;
    LeanSet* lean_head = nullptr;  // lean receives posted (engine.hpp), usually none or one set
    LeanRecv* lean_match(const Hdr& h, uint64_t len, Inbound& in);
    std::vector<Inbound> inbound;                // slot 0 of each peer
    std::unordered_map<uint64_t, Inbound> inbound_slots;  // peer << 8 | slot, slots > 0
    Inbound& inbound_of(int peer, unsigned slot) {
        return slot == 0 ? inbound[size_t(peer)] : inbound_slots[uint64_t(peer) << 8 | slot];
    }
    // Arrivals of numbered messages (laned wan links) and the matching rule over them.
    SeqWindows seq_windows;
    // After the numbered message `seq` arrived (SeqWindows::arrive returned `next`) and was
    // placed: offer the messages its arrival freed of a gap to the posted receives, in number
    // order (no-op for seq 0 or no gap filled).
    // (Inline test, out-of-line work: every arriving message calls it, almost always for nothing.)
    void seq_release(int world_src, uint32_t ctx, uint64_t seq, uint64_t next) {
        if (next > seq + 1) seq_release_gap(world_src, ctx, seq, next);
    }
    void seq_release_gap(int world_src, uint32_t ctx, uint64_t seq, uint64_t next);
    std::vector<char> dead;
    std::vector<std::string> dead_why;
    bool quiescing = false;              // in MPI_Finalize after the last fence: EOFs expected
    int64_t credit_limit = 0;
    int64_t spin_ns = 0;
    // clusters (IMPI): cluster index per world rank (empty: all in cluster 0)
    int nclusters = 1;
    std::vector<int> cluster_of;
    int coll_xsize = 1024;
    int coll_maxlinear = 4;
    std::unique_ptr<impi::Startup> impi;  // IMPI job: the global job, the agent (PMI rank 0)
    WanTransport* wan = nullptr;          // route to the other clusters (owned by transports)

    Request* posted_head = nullptr;
    Request* posted_tail = nullptr;
    Unexp* unexp_head = nullptr;
    Unexp* unexp_tail = nullptr;

    std::vector<Request*> reqs{nullptr};  // index 0 unused: MPI_REQUEST_NULL
    std::vector<uint32_t> free_reqs;
    std::vector<Ctrl> ctrl_q;
    // CTS received: DATA frames to post after progress() returns (transports are not re-entered
    // from their own callbacks).
    struct Cts {
        Request* r;
        uint32_t gen;
        uint64_t rreq;
        int64_t want;
    };
    std::vector<Cts> cts_q;
    std::vector<SendOp*> free_ops;
    int epfd = -1;
    int wake_fd = -1;

    // buffered sends
    char* bsend_buf = nullptr;
    int64_t bsend_size = 0;
    std::map<int64_t, int64_t> bsend_used;  // offset -> length

    Request* by_wire(uint64_t id) {
        uint32_t idx = uint32_t(id), gen = uint32_t(id >> 32);
        if (idx == 0 || idx >= reqs.size()) return nullptr;
        Request* r = reqs[idx];
        return (r && r->gen == gen) ? r : nullptr;
    }
    void send_ctrl(int peer, Hdr& h);
    void flush_ctrl();
    void return_credit();
    void fill_credit(int peer, Hdr& h) {
        h.credit = uint64_t(owed[peer]);
        owed[peer] = 0;
    }
    void owe(int peer, int64_t n) {
        if (!owed_listed[peer]) {
            owed_listed[peer] = 1;
            owed_list.push_back(peer);
        }
        owed[peer] += n;
        if (owed[peer] >= credit_due_at) credit_due = true;
    }
    // A message to / from world rank `w` started / arrived (MPI_T counters, core/pvars.hpp).
    void count_sent(int w, int64_t bytes) {
        RouteCounters& c = g_pvars.route[route_kind[size_t(w)]];
        c.msgs_sent.add(1);
        c.bytes_sent.add(uint64_t(bytes));
    }
    void count_recv(int w, int64_t bytes) {
        RouteCounters& c = g_pvars.route[route_kind[size_t(w)]];
        c.msgs_recv.add(1);
        c.bytes_recv.add(uint64_t(bytes));
    }
    void maybe_complete(Request* r);
    void finish(Request* r);
    void fail(Request* r, int code);
    void deliver_eager(Request* r, const void* data, int64_t len, int world_src, bool sync,
                       uint64_t sreq);
    void rndv_recv(Request* r, int world_src, uint64_t sreq, uint64_t addr, int64_t size);
    void send_data(Request* r, uint64_t rreq, int64_t want);
    Request* match_posted(uint32_t ctx, int src, int tag, int world_src = -1, uint64_t seq = 0,
                          bool strict = false);
    void unexp_append(Unexp* u);
    void unexp_unlink(Unexp* u);
    void posted_append(Request* r);
    void posted_unlink(Request* r);
    int start_send(Request* r);
    int start_recv(Request* r);
};

extern Engine* g;  // the process's engine, between engine_init and exit

}  // namespace wanmpi::core
