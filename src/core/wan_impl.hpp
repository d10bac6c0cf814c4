// Internals of the `wan` route (wan.hpp), shared by its two source files:
//   wan.cpp       engine frames <-> IMPI packets, the data path, flow control, pacing;
//   wan_link.cpp  the link under it (issue 13): TLS, the resumable stream, reconnects, and the
//                 opening of a link's extra lanes (issue 14).
// Nothing here is used outside src/core/wan*.cpp. Threading: like every transport, called
// under the engine's lock only.
#pragma once

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <set>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/log.hpp"
#include "core/engine_impl.hpp"
#include "core/wan.hpp"
#include "runtime/impi_wire.hpp"
#include "wanlink/compress.hpp"
#include "wanlink/handshake.hpp"
#include "wanlink/lanes.hpp"
#include "wanlink/pacer.hpp"
#include "wanlink/replay.hpp"
#include "wanlink/stall.hpp"
#include "wanlink/tcp_stats.hpp"
#include "wanlink/tcp_tune.hpp"
#include "wanlink/tls.hpp"

namespace wanmpi::core::wan_internal {

using impi::Packet;

// WANMPI_WAN_PRIORITY and WANMPI_WAN_FRAGMENT (wan.cpp).
bool priority_enabled();
int64_t fragment_setting();  // bytes; 0: IMPI_C_DATALEN; -1: auto
int64_t twice_setting();     // WANMPI_WAN_TWICE bytes; 0: off; -1: auto

struct Out {
    uint8_t hdr[impi::kPacketHeader];
    const char* payload = nullptr;
    uint64_t len = 0;
    uint64_t off = 0;             // bytes of hdr + payload already written
    SendOp* op = nullptr;         // completed once the packet is written
    std::unique_ptr<char[]> own;  // payload copy (try_send that could not write it all)
    bool counted = true;          // counts for flow control
    bool is_ack = false;          // PK_WAN_ACK
    bool bulk = false;            // a cut of granted long-message DATA (Lane::bulk)
    // A DATA/DATASYNC payload that may go compressed (wanlink/compress.hpp): decided and done
    // just before its first byte is written (Wan::compress_out), so that compressing one
    // packet overlaps with the kernel sending the ones before it.
    bool zcand = false;
    uint8_t lane = 0;             // the lane it goes on (Peer::held holds packets of all lanes)
    // An eager message sent twice (impi_wire.hpp kSentTwice; Wan::twice_lane): the lane of its
    // copy, set by translate (`lane` is then the first copy's). A copy owns its payload and
    // completes nothing.
    bool twice = false;
    uint8_t twice_lane = 0;
    bool twin = false;            // the copy (uncounted, unlike the other uncounted one: FINI)
    struct Striped* st = nullptr; // a cut of a striped frame: counted off in st when written
};

// An engine DATA frame striped over the lanes of its link (docs/design/lanes.md "Striping
// large messages"): its cuts go out on whichever lanes take them first, so the frame's SendOp
// completes only once every cut is written (the cuts point into the engine's buffer).
struct Striped {
    SendOp* op = nullptr;
    uint64_t unwritten = 0;  // cuts queued on some lane, not yet written
    bool all_cut = false;
};

// The DATA of a long message that the receiver granted (its SYNCACK came), as the engine posted
// it (one frame per IMPI_C_DATALEN bytes). With WANMPI_WAN_PRIORITY it waits here and is cut into
// wire packets of at most Lane::frag bytes one at a time, only when nothing else is queued:
// every other packet passes it (docs/design/lanes.md, "Head-of-line blocking on one lane").
struct Bulk {
    Packet pk;                    // the DATA packet; pk_len is set per cut
    const char* payload = nullptr;
    uint64_t len = 0;
    uint64_t cut = 0;             // bytes already cut into wire packets
    SendOp* op = nullptr;         // completed with the last cut, once it is written
    // Links of several lanes: the message offset of payload[0]; each cut carries its own in
    // pk_count (the receiver places it there: cuts of a striped frame arrive in any order).
    uint64_t base = 0;
    Striped* st = nullptr;        // striped (Peer::stripe): op is st's
};

// What the engine sent that a SYNCACK / CANCEL reply refers to.
struct SendState {
    bool is_long = false;  // DATASYNC of a long (rendezvous) message; else a synchronous short one
    uint64_t size = 0;
    uint64_t first = 0;    // bytes the DATASYNC carried
    uint8_t lane = 0;      // the message's lane: its DATA follows on it
};
// A long message being sent after SYNCACK: DATA frames from the engine start at offset 0; the
// first `first` bytes already went with the DATASYNC.
struct LongSend {
    uint64_t first = 0;
    uint64_t size = 0;
    uint64_t srqid = 0;
    uint8_t lane = 0;
};
// A long message being received (after our SYNCACK).
struct LongRecv {
    uint64_t off = 0;   // bytes received so far (the next fragment's offset)
    uint64_t want = 0;  // bytes the receive buffer takes; the rest is discarded
    uint64_t size = 0;
};

struct Peer;

// One TCP connection of a link (issue 14: a link to a peer host is k lanes; lane 0 is the
// dance's connection). Each lane is a byte stream of its own: socket, TLS session, send log and
// resume offsets (replay.hpp), receive state machine, queues of packets admitted to it.
struct Lane {
    Peer* peer = nullptr;  // the rank this lane belongs to
    int rank = -1;         // peer->rank
    uint8_t idx = 0;       // lane index: the engine's inbound slot (RecvSink::on_header_at)
    int fd = -1;
    bool open = true;      // false once closed in order after the peer's FINI on it
    bool fini_rcvd = false;
    bool want_out = false;  // EPOLLOUT registered
    std::deque<Out> wire;
    std::deque<Bulk> bulk;  // granted DATA not yet cut (WANMPI_WAN_PRIORITY), in order
    uint64_t frag = 0;      // wire packet size for granted DATA (retune)
    int64_t tuned_at = 0;   // last retune (ns)
    int lowat_fd = -1;      // the socket retune last ran for (a reconnect brings a new one)
    int64_t lowat = -1;     // the value set there
    // receive state machine
    uint8_t hdr[impi::kPacketHeader];
    size_t hdr_got = 0;
    bool in_payload = false;
    Packet pk;
    uint8_t ehdr[transport::kHeaderSize];  // the engine frame being delivered
    uint64_t elen = 0;                     // its payload length
    char* dst = nullptr;                   // where payload bytes [0, elen) go
    uint64_t got = 0;                      // payload bytes of the packet read so far
    enum class In : uint8_t { eager, data, first, discard } mode = In::discard;
    // Compression: a compressed packet's pk.len is rewritten to its raw length on arrival:
    // everything above works on raw lengths; `wlen` is what follows on the wire, read into
    // `zbuf` and decoded at its end.
    bool zin = false;          // the packet being read is compressed (and wanted)
    uint8_t zin_filter = 0;    // its filter (wanlink::Filter), undone after zstd
    // The filter this peer's payloads go through (auto: re-chosen by sampling every
    // kFilterProbe candidate packets, since one peer's traffic can change kind).
    uint8_t zf = 0;
    uint8_t zf_probe = 0;      // candidate packets until the next choice
    // The ratio the last candidate packet actually compressed to (-1: it went as it was, or
    // none yet). auto's rule takes it instead of a sample while the stream keeps compressing:
    // the previous packet is a free sample of the next, and sampling every 64 KiB cut costs a
    // quarter of compressing it.
    double zlast = -1;
    uint64_t wlen = 0;         // payload bytes of the packet being read, on the wire
    std::vector<char> zbuf, zraw;
    uint64_t link_Bps = 0;     // TCP_INFO delivery rate, for `auto` (refreshed every 100 ms)
    int64_t link_at = 0;
    std::vector<char> tmp;
    std::vector<char> first_buf;
    wanlink::LinkCounters ctr;                   // WANMPI_WAN_STATS
    int64_t hold_until = 0;                      // no writes before (stagger)
    // The link (issue 13, wanlink/): TLS, and the resumable stream (replay.hpp). While `down`
    // the peer stays alive for MPI: sends queue in `wire`, and the stream resumes at the
    // peer's recv_off once a reconnect succeeds (or the peer fails after reconnect_ms). An
    // extra lane starts down with `opening` set: its first connection is a reconnect from
    // offset 0 (HELLO kind 2), and it may take until the dance's timeout.
    std::unique_ptr<wanlink::Tls> tls;
    bool resume = false;
    bool opening = false;
    wanlink::SendLog log;
    uint64_t recv_off = 0;     // bytes of the peer's stream consumed
    uint64_t acked_out = 0;    // recv_off last sent in a PK_WAN_ACK
    uint64_t replay_pos = 0;   // next log byte to write; < log.end() while resending
    bool down = false;
    bool suspended = false;    // a reconnect handshake for this lane is under way: no reads
    int64_t down_since = 0;
    int64_t next_try = 0, backoff_ms = 10;
    std::string down_why;
    uint32_t reconnects = 0;
    uint64_t skip_in = 0;      // bytes of the new connection already consumed on the old one
    std::string last_err;      // why the last connection attempt failed (the connecting side)
    // The stall watch (wan_link.cpp watch_stalls): `doubt` from a write until TCP_INFO shows
    // nothing unacknowledged; `stalled` from a check that found no ACK and no new data for
    // WANMPI_WAN_STALL_MS until everything is acknowledged or the connection is replaced.
    bool doubt = false;
    bool stalled = false;
    // TCP_INFO's lifetime counters of the lane's earlier connections (a reconnect brings a new
    // socket), so that WANMPI_WAN_STATS counts every retransmission of the lane.
    uint64_t old_retrans = 0, old_rtos = 0, old_bytes_retrans = 0;
    // Given up (never opened: wan_link.cpp drop_lane): no socket, no queue, no FINI; the
    // streams hashed to it travel on Peer::route's replacement.
    bool dropped = false;
};

// A peer rank of another cluster: what IMPI keeps per proc pair (flow control, the request
// ids of messages in flight) and its lanes. Flow control counts packets of every lane (IMPI's
// counters are per pair and commutative: docs/design/lanes.md).
struct Peer {
    int rank = -1;
    bool alive = false;
    bool failed_reported = false;
    bool fini_sent = false;
    std::string why;
    impi::Proc proc;
    std::deque<Out> held;  // counted packets waiting for the window (and FINIs), in order
    uint64_t sent = 0;  // counted packets not yet acknowledged
    uint64_t rcvd = 0;  // counted packets received since the last PROTOACK
    // Compression (negotiated at the dance: both HELLOs had kFlagZstd; filters: kFlagZfilter).
    bool zstd = false;
    bool zfilter = false;
    std::vector<std::unique_ptr<Lane>> lanes;  // [0]: the dance's connection
    unsigned k() const { return unsigned(lanes.size()); }
    // The lane a (context id, tag) stream hashed to lane i travels on: i, until lane i is
    // dropped (it could not be opened); then a lane still in use, for good.
    std::vector<uint8_t> route;
    // Lanes > 1: the next pk_seqnum of a matching packet, per context id (numbers start at 1;
    // 0 means "not numbered": a link of one lane, or a plain IMPI peer).
    std::map<uint32_t, uint64_t> seq_out;
    // srqid -> the lane a DATASYNC or CANCEL came on: the answers to it (SYNCACK, CANCELYES/NO)
    // go back on that lane, in order with each other.
    std::map<uint64_t, uint8_t> answer_lane;
    std::map<uint64_t, SendState> sends;
    std::map<uint64_t, LongSend> long_sends;     // by drqid
    struct First {
        std::vector<char> data;
        uint64_t size = 0;  // pk_msglen
        uint8_t lane = 0;   // the lane of its DATASYNC (our SYNCACK goes back on it)
    };
    std::map<uint64_t, First> firsts;            // by srqid
    std::map<uint64_t, LongRecv> long_recvs;     // by drqid
    // Granted DATA striped over the lanes (WANMPI_WAN_STRIPE): every lane cuts from here when
    // its own bulk queue is empty and its socket takes data, so a lane slowed by loss takes
    // less. In order; the frames' completion records in `striped`.
    std::deque<Bulk> stripe;
    std::map<Striped*, std::unique_ptr<Striped>> striped;
    // Small messages on two lanes (docs/design/lanes.md "Small messages on two lanes").
    // In: (context id, pk_seqnum) of messages sent twice of which one copy arrived; the other
    // copy, when it comes, is dropped and erases the entry (both copies always arrive: lanes
    // resume after a break, and a lane given up moves its queue to another lane).
    std::set<std::pair<uint32_t, uint64_t>> twice_seen;
    // Out (auto): the losses seen on the link's lanes (TCP_INFO, read at most every
    // kLossCheck), and until when the link counts as lossy.
    int64_t loss_at = 0, lossy_until = 0;
    wanlink::LossWatch losses;
    // Out: a message went twice to this process, so every later matching packet of a user
    // communicator is marked for matching in number order (impi_wire.hpp kStrictOrder).
    bool strict_out = false;
    // The stall watch's probe of the path to the peer's host socket (or, behind impi-relay,
    // the relay's port for it) while a lane is stalled.
    wanlink::PathProbe probe;
    int64_t probe_hold = 0;  // no probe before (the path answered at once last time)
};

// An incoming connection on the host socket after the dance: a peer reconnecting (or a
// stranger), driven without blocking until its link handshake proves it.
struct Pending {
    base::Fd fd;
    uint8_t rank[4] = {};
    size_t got = 0;
    int peer = -1;
    Lane* lane = nullptr;  // known once the connector's HELLO named it (deferred answer)
    std::unique_ptr<wanlink::LinkHandshake> hs;
    int64_t deadline = 0;
    std::string from;
    uint64_t hello_recv_off = 0;  // the recv_off our HELLO named
};

// The engine header of a message that needs matching (EAGER, or the RTS of a long message):
// the IMPI packet's context id, source (rank in the sender's group), tag, size and request id.
inline Hdr match_hdr(uint8_t type, const Packet& pk) {
    Hdr h;
    h.type = type;
    h.ctx = uint32_t(pk.cid);
    h.src = pk.lsrank;
    h.tag = pk.tag;
    h.size = pk.msglen;
    h.sreq = pk.srqid;
    h.seq = pk.seqnum;  // laned links (core/seq_order.hpp); 0 otherwise
    return h;
}

// Hand the engine a frame without payload (RTS, SYNC_ACK/FIN/CTS, CANCEL_*): header, then done.
inline void deliver_ctrl(Lane& l, const Hdr& h, transport::RecvSink& sink) {
    encode(h, l.ehdr);
    sink.on_header_at(l.rank, l.idx, l.ehdr, 0);
    sink.on_frame_at(l.rank, l.idx, l.ehdr, nullptr, 0);
}

// A frame for the engine produced outside progress() (the stored first fragment after CTS), or
// a SendOp to complete: delivered by the next progress().
struct Local {
    int peer;
    SendOp* op = nullptr;
    bool ok = true;
    uint8_t ehdr[transport::kHeaderSize];
    std::vector<char> data;
};

class Wan final : public WanTransport {
public:
    Wan(const impi::Job& job, int me, std::vector<base::Fd> conns, const std::vector<int>& peers,
        WanLinks links)
        : job_(job), me_(me), links_(std::move(links)) {
        // Validated at start-up (impi_startup.cpp refuses a malformed value); off if not.
        if (!wanlink::compress_policy(&zpol_).ok()) zpol_.mode = wanlink::CompressPolicy::off;
        if (!wanlink::filter_policy(&zf_auto_, &zf_fixed_).ok()) {
            zf_auto_ = false;
            zf_fixed_ = wanlink::Filter::none;
        }
        maxlen_ = job.maxlen;
        hiwater_ = std::max<uint32_t>(1, job.hiwater);
        ackmark_ = std::clamp<uint32_t>(job.ackmark, 1, hiwater_);
        my_proc_ = job.procs[size_t(me)].id;
        peers_.reset(new Peer[size_t(job.size())]);
        const wanlink::TcpTuning tuning = wanlink::tcp_tuning_from_env();
        tuning_ = tuning;
        epfd_ = epoll_create1(EPOLL_CLOEXEC);
        bool any_lanes = false;
        for (int r : peers) {
            Peer& p = peers_[size_t(r)];
            p.rank = r;
            p.proc = job.procs[size_t(r)].id;
            const int fd = conns[size_t(r)].release();
            p.alive = fd >= 0;
            if (!p.alive) {
                p.why = "no IMPI connection to rank " + std::to_string(r);
                continue;
            }
            bool resume = false;
            unsigned k = 1;
            if (size_t(r) < links_.results.size()) {
                const impi::LinkResult& lr = links_.results[size_t(r)];
                resume = lr.resume && reconnect_ms_ > 0;
                p.zstd = lr.compress && zpol_.mode != wanlink::CompressPolicy::off;
                p.zfilter = p.zstd && lr.zfilter;
                if (lr.ext) k = std::clamp(lr.lanes, 1u, wanlink::kMaxLanes);
            }
            for (unsigned i = 0; i < k; ++i) {
                auto l = std::make_unique<Lane>();
                l->peer = &p;
                l->rank = r;
                l->idx = uint8_t(i);
                l->resume = resume;
                p.lanes.push_back(std::move(l));
                p.route.push_back(uint8_t(i));
            }
            Lane& l0 = *p.lanes[0];
            l0.fd = fd;
            if (size_t(r) < links_.tls.size()) l0.tls = std::move(links_.tls[size_t(r)]);
            start_socket(l0);
            // The extra lanes: the side that dialled at the dance dials them now, the other
            // accepts them on its host socket (serve_reconnects), like reconnects from offset 0.
            for (unsigned i = 1; i < k; ++i) {
                Lane& l = *p.lanes[i];
                l.opening = true;
                l.down = true;
                l.down_why = "lane " + std::to_string(i) + " to " + peer_name(r) + " not opened";
                l.down_since = l.next_try = base::now_ns() / 1000000;
            }
            any_lanes = any_lanes || k > 1;
            list_.push_back(r);
            any_resume_ = any_resume_ || resume;
        }
        // Reconnects and extra lanes come in on the host socket of the dance.
        if ((any_resume_ || any_lanes) && links_.listener) {
            base::set_nonblock(links_.listener.get(), true);
            epoll_event lev{};
            lev.events = EPOLLIN;
            lev.data.u32 = kListenTag;
            epoll_ctl(epfd_, EPOLL_CTL_ADD, links_.listener.get(), &lev);
        } else {
            links_.listener.reset();
        }
        rbuf_.resize(kStage);
        // Pacing: the bucket's refill wakes a rank that sleeps with bytes held back.
        tfd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (tfd_ >= 0) {
            epoll_event tev{};
            tev.events = EPOLLIN;
            tev.data.u32 = UINT32_MAX - 1;
            epoll_ctl(epfd_, EPOLL_CTL_ADD, tfd_, &tev);
        }
        // Work queued outside progress() (push_local) must wake a sleeping rank.
        evfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = UINT32_MAX;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, evfd_, &ev);
    }
    ~Wan() override { close_all(); }

    const char* name() const override { return "wan"; }
    std::string failure(int peer) const override { return peers_[size_t(peer)].why; }
    base::Status init(const transport::JobInfo&, base::Kvs&, const std::vector<int>&) override {
        return base::Status::OK();
    }
    base::Status connect(base::Kvs&) override { return base::Status::OK(); }
    void finalize() override { close_all(); }

    SendResult try_send(int peer, const uint8_t* hdr, const void* payload,
                        uint64_t len) override;
    void post_send(int peer, SendOp* op) override;
    int progress(transport::RecvSink& sink) override;
    bool flushed() const override {
        for (int r : list_) {
            const Peer& p = peers_[size_t(r)];
            if (!p.alive) continue;
            if (!p.held.empty() || !p.stripe.empty()) return false;
            for (const auto& l : p.lanes)
                if (l->open && (!l->wire.empty() || !l->bulk.empty())) return false;
        }
        return true;
    }
    int wait_fd() const override { return epfd_; }
    void prepare_sleep() override {
        // Bytes held back by the pacer: the refill timer wakes us, not the socket, which is
        // writable all along (waiting for EPOLLOUT then would spin: a rank that burns its
        // core starves the others and the network of a 2-core host).
        bool throttled = false;
        if (pacer_.limited()) {
            const int64_t now = base::now_ns();
            throttled = !pacer_.ready(now);
            if (throttled)
                for_lanes([&](Peer&, Lane& l) {
                    if (!l.wire.empty()) arm_timer(pacer_.wait_ns(pacer_.depth(), now));
                });
        }
        bool wake = false;
        for_lanes([&](Peer& p, Lane& l) {
            // The stall watch comes back while a lane's data is not known to be acknowledged.
            if (stall_ms_ > 0 && l.doubt && l.resume && l.fd >= 0)
                arm_timer(std::max<int64_t>(stall_checked_ + wanlink::kStallCheckNs -
                                                base::now_ns(), 0));
            if (l.down || !incoming_.empty()) {
                // Reconnect attempts, the reconnect deadline and pending handshakes are timed:
                // come back at the next attempt (the listener wakes the accepting side).
                // (Handshake bytes of pending connections wake us through epoll; the timer only
                // enforces their deadline.)
                const int64_t now_ms = base::now_ns() / 1000000;
                int64_t at = now_ms + 1000;
                if (l.down) {
                    at = std::min(at, l.down_since + down_limit_ms(l));
                    if (me_ > p.rank) at = std::min(at, l.next_try);
                }
                arm_timer(std::max<int64_t>(at - now_ms, 0) * 1000000);
                if (l.down) return;
            }
            if (l.fd < 0) return;
            // Plaintext TLS already decrypted is not in the socket: epoll would not wake us.
            if (l.tls && l.tls->pending() && !l.suspended) wake = true;
            bool want = (!l.wire.empty() || can_cut(p, l) || (l.tls && l.tls->backlog() > 0) ||
                         l.replay_pos < l.log.end()) &&
                        !throttled && !held_back(l);
            if (want == l.want_out) return;
            epoll_event ev{};
            ev.events = EPOLLIN | (want ? uint32_t(EPOLLOUT) : 0u);
            ev.data.u32 = tag_of(l);
            epoll_ctl(epfd_, EPOLL_CTL_MOD, l.fd, &ev);
            l.want_out = want;
        });
        if (wake && evfd_ >= 0) {
            uint64_t one = 1;
            ssize_t w = ::write(evfd_, &one, sizeof one);
            (void)w;
        }
    }
    uint64_t max_inline() const override { return 16384; }

    // A lower cap applies at once. A higher one (a rate-managed collective returning to the
    // rank's own MATB) waits until what the kernel still holds unsent under the old caps has
    // left at them: a collective's sends complete when their bytes are in the kernel, and
    // raising the caps then would release that backlog as one burst at the end of every call.
    void set_rate(uint64_t bytes_per_s, int flows) override {
        const uint64_t cap = wanlink::Pacer::socket_cap(bytes_per_s, flows);
        pending_ = false;
        if (cap_ != 0 && (cap == 0 || cap > cap_)) {
            int64_t wait_ns = 0;
            for_lanes([&](Peer&, Lane& l) {
                const int64_t unsent = wanlink::socket_unsent(l.fd);
                if (unsent > 0) wait_ns = std::max(wait_ns, int64_t(1e9 * double(unsent) / double(cap_)));
            });
            if (wait_ns > 0) {
                pending_ = true;
                pend_rate_ = bytes_per_s;
                pend_flows_ = flows;
                pend_at_ = base::now_ns() + wait_ns;
                arm_timer(wait_ns);
                return;
            }
        }
        apply_rate(bytes_per_s, flows);
    }
    void apply_rate(uint64_t bytes_per_s, int flows) {
        const uint64_t cap = wanlink::Pacer::socket_cap(bytes_per_s, flows);
        if (bytes_per_s == rate_ && cap == cap_ && !reweigh_) return;
        reweigh_ = false;
        // The bucket shares the budget among sockets the caller did not count (flows == 1:
        // point-to-point). When the caller counted them, the caps already sum to the budget,
        // and a bucket at the same rate would only add its own losses (a socket idle for a
        // moment cannot give its share to the others, yet the bucket handed it out): measured
        // 1.1-1.6x slower Alltoalls with it.
        const uint64_t bucket = flows > 1 ? 0 : bytes_per_s;
        if (bucket != pacer_.rate()) pacer_.set_rate(bucket, base::now_ns());
        // A cap going back up ends a rate-managed collective: the per-pattern restore.
        const bool restore = cap != 0 && cap_ != 0 && cap > cap_;
        rate_ = bytes_per_s;
        cap_ = cap;
        flows_ = flows;
        uint64_t wsum = 0;
        for (int r : list_)
            if (peers_[size_t(r)].alive && !weight_.empty()) wsum += weight_[size_t(r)];
        // Each lane gets its peer's whole cap: one (communicator, tag) stream, which is what a
        // collective's step sends, travels on one lane.
        for_lanes([&](Peer& p, Lane& l) {
            if (l.fd < 0) return;
            if (int e = wanlink::set_socket_pacing(l.fd, cap_of(p.rank, cap, wsum));
                e && !pacing_said_) {
                pacing_said_ = true;
                WANMPI_LOG(warn, "SO_MAX_PACING_RATE not applied (%s): only wanmpi's own "
                                 "budget paces the WAN sockets", std::strerror(e));
            }
            if (restore) wanlink::restore_window(l.fd);
        });
    }
    void set_weights(const std::vector<std::pair<int, uint64_t>>& w) override {
        // The next set_rate and share_caps pass apply the caps again even if budget and
        // flows are those of the previous call: its last pass left them as its end needed.
        reweigh_ = true;
        shared_wsum_ = ~uint64_t(0);
        weight_.clear();
        if (w.empty()) return;
        weight_.assign(size_t(job_.size()), 0);
        for (const auto& [r, b] : w)
            if (r >= 0 && r < job_.size()) weight_[size_t(r)] = b;
    }
    // The cap of peer r's socket: `cap` (an equal part of the budget), or with weights its
    // peer's part of `wsum` (the weights of the sockets sharing the budget). A socket the call
    // sends nothing on keeps the equal part: it still carries acknowledgements.
    uint64_t cap_of(int r, uint64_t cap, uint64_t wsum) const {
        if (weight_.empty() || !wsum || !cap || !weight_[size_t(r)]) return cap;
        const double share = double(weight_[size_t(r)]) / double(wsum);
        return std::max<uint64_t>(1, wanlink::Pacer::socket_cap(uint64_t(double(rate_) * share), 1));
    }
    uint64_t rate() const override { return pending_ ? pend_rate_ : rate_; }
    void stagger(int64_t first_ns, int64_t stride_ns) override {
        const int64_t now = base::now_ns();
        int64_t k = 0;
        for (int r : list_) {
            Peer& p = peers_[size_t(r)];
            if (!p.alive) continue;
            const int64_t at = first_ns + k++ * stride_ns;
            for (auto& l : p.lanes) l->hold_until = at > 0 ? now + at : 0;
        }
    }
    int flows() const override { return pending_ ? pend_flows_ : flows_; }
    std::vector<wanlink::LinkStat> link_stats() const override {
        std::vector<wanlink::LinkStat> v;
        for (int r : list_) {
            const Peer& p = peers_[size_t(r)];
            for (const auto& l : p.lanes) {
                if (l->dropped) continue;  // one row per lane in use
                wanlink::LinkStat s;
                s.rank = me_;
                s.peer_rank = r;
                s.peer_cluster = job_.procs[size_t(r)].client;
                s.peer_host = job_.hosts[size_t(job_.procs[size_t(r)].host)].addr();
                s.lane = l->idx;
                s.c = l->ctr;
                s.tcp = wanlink::read_tcp_info(l->fd);
                s.tcp.retrans += uint32_t(l->old_retrans);
                s.tcp.rtos += uint32_t(l->old_rtos);
                s.tcp.bytes_retrans += l->old_bytes_retrans;
                s.cc = l->fd >= 0 ? wanlink::socket_cc(l->fd) : "";
                v.push_back(std::move(s));
            }
        }
        return v;
    }
    uint64_t max_frame() const override { return maxlen_; }

    // FINI on every lane, each after that lane's data (admit holds it behind the lane's bulk).
    void begin_fini() override {
        for (int r : list_) {
            Peer& p = peers_[size_t(r)];
            if (!p.alive || p.fini_sent) continue;
            for (unsigned i = 0; i < p.k(); ++i) {
                if (p.lanes[i]->dropped) continue;
                Packet pk;
                pk.type = impi::PK_FINI;
                pk.src.pid = -1;
                pk.dest.pid = -1;
                Out& o = p.held.emplace_back();
                impi::encode_packet(pk, o.hdr);
                o.counted = false;
                o.lane = uint8_t(i);
            }
            p.fini_sent = true;
            admit(p);
        }
    }
    bool fini_done() const override {
        for (int r : list_) {
            const Peer& p = peers_[size_t(r)];
            if (!p.alive) continue;
            if (!p.held.empty() || !p.stripe.empty()) return false;
            for (const auto& l : p.lanes)  // (a lane the peer closed after its FINI is done)
                if (l->open && (!l->fini_rcvd || !l->wire.empty() || !l->bulk.empty()))
                    return false;
        }
        return true;
    }

private:
    static constexpr size_t kStage = 256 * 1024;

    template <class F> void for_lanes(F&& f) {
        for (int r : list_) {
            Peer& p = peers_[size_t(r)];
            if (!p.alive) continue;
            for (auto& l : p.lanes) f(p, *l);
        }
    }
    // epoll's tag of a lane's socket (progress() visits every lane anyway; only the special
    // tags below must not collide).
    static uint32_t tag_of(const Lane& l) { return uint32_t(l.rank) | uint32_t(l.idx) << 24; }
    // A new socket of a lane (the dance's, an extra lane's, a reconnect's): options, epoll.
    void start_socket(Lane& l) {
        base::set_nonblock(l.fd, true);
        base::set_nodelay(l.fd);
        wanlink::tune_socket(l.fd, tuning_);
        if (l.resume) wanlink::set_keepalive(l.fd, wanlink::keepalive_s());
        if (cap_) wanlink::set_socket_pacing(l.fd, cap_);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = tag_of(l);
        epoll_ctl(epfd_, EPOLL_CTL_ADD, l.fd, &ev);
        l.want_out = false;
        retune(l);  // TCP_NOTSENT_LOWAT from the first byte
    }
    // How long a lane may stay down: a broken one WANMPI_WAN_RECONNECT_S. One not opened yet:
    // the connecting side gives it up after WANMPI_WAN_LANE_OPEN_S (drop_lane); the accepting
    // side waits for that notice, which may itself wait for lane 0 to reconnect.
    int64_t down_limit_ms(const Lane& l) const {
        if (!l.opening) return reconnect_ms_;
        if (me_ > l.rank) return wanlink::lane_open_ms();
        return std::max<int64_t>(reconnect_ms_, 30000) + wanlink::lane_open_ms();
    }

    Packet base_packet(const Peer& p, uint32_t type) const {
        Packet pk;
        pk.type = type;
        pk.src = my_proc_;
        pk.dest = p.proc;
        return pk;
    }
    // The packet of a message to be matched (DATA/DATASYNC): the engine header's context id,
    // source, tag, size and request id; `len` bytes of it in this packet. (match_hdr reverses it.)
    // On a link of several lanes it is numbered per context id (pk_seqnum, a QoS field plain
    // IMPI leaves 0): the receiver restores MPI's order across lanes with it.
    Packet message_packet(Peer& p, uint32_t type, const Hdr& h, uint64_t len) {
        Packet pk = base_packet(p, type);
        pk.len = uint32_t(len);
        pk.msglen = h.size;
        pk.srqid = h.sreq;
        pk.lsrank = h.src;
        pk.tag = h.tag;
        pk.cid = h.ctx;
        if (p.k() > 1) {
            uint64_t& n = p.seq_out[h.ctx];
            pk.seqnum = ++n;
        }
        return pk;
    }
    // Which lane an engine frame goes on (docs/design/lanes.md, "Which lane a packet takes").
    uint8_t lane_for(Peer& p, const Hdr& h) const;
    // Engine frame -> packet (o.lane set). Returns false if nothing goes on the wire (the frame
    // is dropped or handled locally). May queue Local events. `payload` is the frame's payload.
    bool translate(Peer& p, const Hdr& h, const char* payload, uint64_t len, Out& o);
    void admit(Peer& p) {
        while (!p.held.empty() && (!p.held.front().counted || p.sent < hiwater_)) {
            Lane& l = *p.lanes[p.held.front().lane];
            // FINI (uncounted, like a message's copy sent twice) follows every byte of data of
            // its lane, and every striped cut (which may yet go on this lane).
            if (!p.held.front().counted && !p.held.front().twin &&
                (!l.bulk.empty() || !p.stripe.empty()))
                break;
            if (p.held.front().counted) p.sent++;
            to_wire(l, std::move(p.held.front()));
            p.held.pop_front();
        }
    }
    // Into the byte stream's queue: behind everything, except cuts of granted DATA not started
    // yet, which it passes (the order among all other packets stays as queued).
    void to_wire(Lane& l, Out&& o) {
        auto at = l.wire.end();
        while (at != l.wire.begin() && std::prev(at)->bulk && std::prev(at)->off == 0) --at;
        l.wire.insert(at, std::move(o));
    }
    // Granted DATA gets a window slot only while no other counted packet waits for one, and
    // never the last quarter of the window: a small message finds a slot without waiting for
    // the PROTOACKs of bulk data (hiwater < 4: no reserve, or nothing would move).
    // (An uncounted packet held is FINI, which waits for `bulk` itself.)
    bool can_cut(const Peer& p, const Lane& l) const {
        return (!l.bulk.empty() || stripe_turn(p, l)) &&
               (p.held.empty() || !p.held.front().counted) && p.sent + hiwater_ / 4 < hiwater_;
    }
    // A striped cut goes to a lane whose kernel holds no more bytes not yet acknowledged
    // (unsent and in flight, SIOCOUTQ) than any other lane in use, within one cut: the lane that
    // delivers fastest takes the most, and a lane holding a lost segment takes nothing more
    // until it recovers. A socket's being writable is not enough: IMPI's window (HIWATER packets
    // per pair) is what limits, and the lane served first after a PROTOACK would take all of
    // it; through impi-relay every lane's first leg is a fast LAN as well.
    // (A lane not its turn asks for no EPOLLOUT: prepare_sleep uses can_cut.)
    bool stripe_turn(const Peer& p, const Lane& l) const {
        if (p.stripe.empty() || l.down || l.dropped || l.fd < 0) return false;
        const int64_t mine = wanlink::socket_queued(l.fd);
        const int64_t slack = int64_t(std::max<uint64_t>(l.frag, 65536));
        for (const auto& x : p.lanes)
            if (x.get() != &l && !x->down && !x->dropped && x->fd >= 0 &&
                wanlink::socket_queued(x->fd) + slack < mine)
                return false;
        return true;
    }
    // The lane that carries the answers (SYNCACK, CANCELYES/NO) to a message that came on
    // lane `in`: the next lane in use, all answers to one message on the same one, so they
    // keep their order. Not `in` itself: that connection carries the same (communicator, tag)
    // stream the other way, and in a collective the answering rank's own block to the asker
    // is on it, an eager block being one IMPI packet that nothing passes: a SYNCACK waited
    // behind up to IMPI_C_DATALEN bytes at the paced rate, and the asker's long block waited
    // for it (rate-managed Alltoallv of 0.25-1.75 MiB per pair: 1.5x the bound).
    uint8_t answer_lane_of(const Peer& p, uint8_t in) const {
        return p.k() > 1 ? p.route[(in + 1u) % p.k()] : 0;
    }
    // Whether an eager message of `len` bytes on lane `lane` also goes on another lane (*other),
    // and the copy's queueing (docs/design/lanes.md "Small messages on two lanes").
    bool twice_lane(Peer& p, const Hdr& h, uint64_t len, uint8_t* first, uint8_t* second);
    bool lossy(Peer& p);
    static Out twin_of(const Out& o);
    // A matching packet the receiver must match in number order (core/seq_order.hpp "strict").
    static bool strict_in(const Peer& p, const Packet& pk) {
        return p.k() > 1 && (pk.count == impi::kSentTwice || pk.count == impi::kStrictOrder);
    }
    static constexpr uint64_t kTwiceAuto = 16384;            // auto: messages up to 16 KiB
    static constexpr int64_t kLossCheck = 100000000;         // TCP_INFO at most every 100 ms
    static constexpr int64_t kLossyFor = 10000000000;        // lossy for 10 s after a loss
    // Whether granted DATA of this frame is striped (WANMPI_WAN_STRIPE), and the bookkeeping
    // when one of its cuts has been written.
    bool stripe_now(const Peer& p, Lane& l, const Bulk& b);
    void striped_written(Peer& p, Striped* st) {
        if (--st->unwritten > 0 || !st->all_cut) return;
        if (st->op && st->op->on_complete) st->op->on_complete(st->op, true);
        p.striped.erase(st);
    }
    // The next wire packet of granted DATA into `wire` (empty then): at most `frag` bytes.
    bool cut_bulk(Peer& p, Lane& l);
    // WANMPI_WAN_NOTSENT_LOWAT and WANMPI_WAN_FRAGMENT (auto: from the connection's window),
    // re-read every 10 ms while granted DATA flows.
    void retune(Lane& l);
    uint64_t frag_of(Lane& l);
    bool can_send_now(const Peer& p, const Lane& l) const {
        return p.alive && !l.down && !l.suspended && l.wire.empty() && p.held.empty() &&
               p.sent < hiwater_ && l.replay_pos == l.log.end() &&
               !(l.tls && l.tls->backlog() > 0) && !(l.resume && l.log.full()) &&
               (!l.hold_until || !held_back(l)) && !warming(l);
    }
    // Linux paces nothing before a connection's tenth data segment: its initial window leaves
    // at NIC speed, and many connections starting together overflow the bottleneck (at
    // 2 x 2 ranks into 200 Mbit/s the first Alltoall lost packets, and cubic's slow-start
    // threshold fell to 9 segments: the job then ran at a third of the link for seconds).
    // While pacing is on, a connection's first kWarm bytes go kWarmChunk at a time, spaced at
    // its cap, from write_some (try_send defers to it).
    static constexpr uint64_t kWarm = 16384;
    static constexpr size_t kWarmChunk = 2 * 1448;
    bool warming(const Lane& l) const { return cap_ != 0 && l.ctr.bytes_sent < kWarm; }
    // A staggered start not reached yet (arms the timer for it).
    bool held_back(const Lane& l) const {
        if (!l.hold_until) return false;
        const int64_t now = base::now_ns();
        if (now >= l.hold_until) return false;
        const_cast<Wan*>(this)->arm_timer(l.hold_until - now);
        return true;
    }
    int write_some(Lane& l);
    // Compression (wanlink/compress.hpp): compress_out decides for a candidate packet about to
    // be written, and replaces its payload and header by the compressed ones if it goes
    // compressed; inflate decodes a compressed packet just read (false: the peer failed).
    void compress_out(Lane& l, Out& o);
    uint64_t link_rate(Lane& l);
    bool inflate(Lane& l);
    void share_caps();
    int read_some(Lane& l, transport::RecvSink& sink);
    void on_packet_header(Lane& l, transport::RecvSink& sink);
    void on_packet_done(Lane& l, transport::RecvSink& sink);
    // PROTOACK on lane 0: flow control is per proc pair, whatever lane the packets came on.
    void send_protoack(Peer& p) {
        Packet pk = base_packet(p, impi::PK_PROTOACK);
        Out o;
        impi::encode_packet(pk, o.hdr);
        o.counted = false;
        to_wire(*p.lanes[0], std::move(o));
    }
    void close_lane(Lane& l) {
        l.tls.reset();
        if (l.fd >= 0) {
            const wanlink::TcpInfo t = wanlink::read_tcp_info(l.fd);
            l.old_retrans += t.retrans;
            l.old_rtos += t.rtos;
            l.old_bytes_retrans += t.bytes_retrans;
            epoll_ctl(epfd_, EPOLL_CTL_DEL, l.fd, nullptr);
            ::close(l.fd);
        }
        l.fd = -1;
        l.want_out = false;
    }
    void fail(Peer& p, const std::string& why) {
        if (!p.alive) return;
        // Said here once: MPI reports it only where a call involves the peer.
        WANMPI_LOG(warn, "%s", why.c_str());
        p.alive = false;
        p.why = why;
        for (Out& o : p.held)
            if (o.op) push_local(Local{p.rank, o.op, false, {}, {}});
        p.held.clear();
        for (auto& [st, own] : p.striped)
            if (st->op) push_local(Local{p.rank, st->op, false, {}, {}});
        p.striped.clear();
        p.stripe.clear();
        end_probe(p);
        for (auto& lp : p.lanes) {
            Lane& l = *lp;
            close_lane(l);
            l.open = false;
            for (Out& o : l.wire)
                if (o.op) push_local(Local{p.rank, o.op, false, {}, {}});
            for (Bulk& b : l.bulk)
                if (b.op) push_local(Local{p.rank, b.op, false, {}, {}});
            l.wire.clear();
            l.bulk.clear();
        }
    }
    // ---- the link: TLS, the resumable stream, reconnects (issue 13) ----------------------------
    // Writes through TLS or to the socket; what was taken goes into the log of a resumable
    // stream (a copy: the bytes must outlive the caller's buffer until the peer confirms them).
    ssize_t io_writev(Lane& l, const iovec* iov, int n);
    ssize_t raw_recv(Lane& l, void* buf, size_t n);
    ssize_t io_recv(Lane& l, void* buf, size_t n);
    std::string io_error(const Lane& l) const;
    // The connection broke. A resumable stream goes down and waits for a reconnect (MPI sees
    // nothing); anything else fails the peer. A TLS record that failed authentication (altered
    // on the way) is dropped by TLS before a byte of it is delivered, so the stream resumes
    // just before it, from an untouched copy: an attacker who alters data costs a reconnect.
    void broken(Lane& l, const std::string& why);
    // "I have consumed recv_off bytes of your stream": at the front of the queue (after a packet
    // half written), so that it overtakes data a full log holds back.
    void queue_ack(Lane& l);
    wanlink::Hello hello_for(const Lane& l) const;
    // A new connection for a lane whose link handshake (and TLS) succeeded: resume the stream
    // where the peer stopped (an extra lane's first connection: from 0).
    bool resume_on(Lane& l, base::Fd fd, std::unique_ptr<wanlink::Tls> tls,
                   uint64_t peer_recv_off, uint64_t skip_in = 0);
    // The side that dialled at the dance (the higher host) dials again; the other waits on its
    // host socket (serve_reconnects). Both give up after WANMPI_WAN_RECONNECT_S.
    int reconnect_step(Lane& l);
    int serve_reconnects();
    // Lanes that cannot be opened (docs/design/lanes.md "A lane that cannot be opened"): the
    // link goes on without lane l. Its queued packets and the streams hashed to it move to
    // another lane in order; tell: we gave up (the connecting side), so PK_WAN_LANES tells the
    // peer on lane 0. on_lanes_dropped: the peer's notice (false: the peer failed).
    void drop_lane(Lane& l, const std::string& why, bool tell);
    bool on_lanes_dropped(Peer& p, uint64_t mask);
    // The stall watch (WANMPI_WAN_STALL_MS, docs/design/pacing.md "Resuming after an outage"):
    // checks the lanes written since their data was last all acknowledged (TCP_INFO, every
    // wanlink::kStallCheckNs), probes the path to a peer with a stalled lane, and replaces the
    // stalled connections as soon as the path answers after it did not. Returns the lanes
    // replaced.
    int watch_stalls();
    void end_probe(Peer& p) { p.probe.stop(); }
    const int64_t stall_ms_ = wanlink::stall_ms();
    int64_t stall_checked_ = 0;

    void push_local(Local l) {
        if (local_.empty() && evfd_ >= 0) {
            uint64_t one = 1;
            ssize_t w = ::write(evfd_, &one, sizeof one);
            (void)w;
        }
        local_.push_back(std::move(l));
    }
    // Bytes the pacer lets through now, of `want`; 0 arms the refill timer (progress or the
    // sleeping engine comes back when it fires).
    size_t paced(size_t want) {
        if (!pacer_.limited()) return want;
        int64_t now = base::now_ns();
        size_t ok = pacer_.allow(want, now);
        if (ok > 0) return ok;
        arm_timer(pacer_.wait_ns(want, now));
        return 0;
    }
    // The timer wakes progress() (and a sleeping engine) in `ns`; an earlier expiry stays.
    void arm_timer(int64_t ns) {
        if (tfd_ < 0) return;
        ns = std::max<int64_t>(ns, 20000);
        itimerspec cur{};
        timerfd_gettime(tfd_, &cur);
        const int64_t left = int64_t(cur.it_value.tv_sec) * 1000000000 + cur.it_value.tv_nsec;
        if (timer_armed_ && left > 0 && left <= ns) return;
        itimerspec its{};
        its.it_value.tv_sec = ns / 1000000000;
        its.it_value.tv_nsec = ns % 1000000000;
        timerfd_settime(tfd_, 0, &its, nullptr);
        timer_armed_ = true;
    }
    void close_all() {
        for (int r : list_) {
            Peer& p = peers_[size_t(r)];
            for (auto& l : p.lanes) {
                if (l->tls) l->tls->shutdown();  // close_notify: an orderly end, not a truncation
                l->tls.reset();
                if (l->fd >= 0) ::close(l->fd);
                l->fd = -1;
            }
            end_probe(p);
            p.alive = false;
        }
        if (epfd_ >= 0) ::close(epfd_);
        if (evfd_ >= 0) ::close(evfd_);
        if (tfd_ >= 0) ::close(tfd_);
        epfd_ = evfd_ = tfd_ = -1;
    }
    std::string peer_name(int r) const {
        const auto& pe = job_.procs[size_t(r)];
        const auto& h = job_.hosts[size_t(pe.host)];
        std::string relay = impi::relay_of(pe.id);
        return "rank " + std::to_string(r) + " (cluster " + std::to_string(pe.client) + ", " +
               h.addr() + ":" + std::to_string(h.port) +
               (relay.empty() ? "" : ", through impi-relay at " + relay) + ")";
    }
    // The peer, and the lane when the link has several.
    std::string lane_name(const Lane& l) const {
        std::string n = peer_name(l.rank);
        if (l.peer->k() > 1) n += " lane " + std::to_string(l.idx);
        return n;
    }

    const impi::Job& job_;
    int me_;
    WanLinks links_;
    wanlink::TcpTuning tuning_;
    int64_t reconnect_ms_ = wanlink::reconnect_ms();
    bool any_resume_ = false;
    std::vector<Pending> incoming_;
    int64_t accept_checked_ = 0;
    static constexpr uint32_t kListenTag = UINT32_MAX - 2;
    uint64_t maxlen_ = 0;
    uint32_t hiwater_ = 1, ackmark_ = 1;
    const bool priority_ = priority_enabled();
    const wanlink::Stripe stripe_ = wanlink::stripe_mode();
    const int64_t frag_setting_ = fragment_setting();
    const int64_t twice_setting_ = twice_setting();
    const int64_t lowat_setting_ = wanlink::notsent_lowat_setting();
    impi::Proc my_proc_;
    std::unique_ptr<Peer[]> peers_;
    std::vector<int> list_;
    std::vector<Local> local_;
    int epfd_ = -1;
    int evfd_ = -1;
    int tfd_ = -1;             // pacing refill timer
    wanlink::Pacer pacer_;     // this rank's WAN budget (set_rate)
    uint64_t rate_ = 0;        // the budget (set_rate), bytes/s on the wire; 0 = unlimited
    uint64_t cap_ = 0;         // each socket's SO_MAX_PACING_RATE (0 = unlimited)
    int flows_ = 1;            // sockets the budget is split among (set_rate)
    std::vector<uint64_t> weight_;  // per peer: bytes of the managed call (set_weights); empty: none
    int64_t shared_at_ = 0;    // last share_caps() pass
    uint64_t shared_wsum_ = 0; // the busy sockets' weights at that pass
    std::vector<char> busy_;   // share_caps: which of list_ still send (scratch)
    bool reweigh_ = false;     // set_weights since the last apply_rate
    bool pending_ = false;     // a higher rate waits for the kernel's backlog (set_rate)
    uint64_t pend_rate_ = 0;
    int pend_flows_ = 1;
    int64_t pend_at_ = 0;
    bool timer_armed_ = false; // tfd_ set and not yet read after firing
    bool pacing_said_ = false;
    bool lowat_said_ = false;
    size_t rr_ = 0;            // first peer served by the next progress(): the budget is shared
    wanlink::CompressPolicy zpol_;
    wanlink::Compressor zc_;
    wanlink::Decompressor zd_;
    bool zf_auto_ = true;                            // WANMPI_WAN_COMPRESS_FILTER=auto
    wanlink::Filter zf_fixed_ = wanlink::Filter::none;  // ... else this one
    static constexpr uint8_t kFilterProbe = 16;
    std::vector<char> zfbuf_;  // a decoded payload on its way through filter_decode
    std::vector<char> rbuf_;
    size_t rpos_ = 0, rend_ = 0;  // staging buffer of the lane being read (drained per call)
};

}  // namespace wanmpi::core::wan_internal
