// The `wan` route: engine frames <-> IMPI packets over the host-to-host connections. The mapping
// and the flow-control rules are in wan.hpp; the packet layout is IMPI.md §5.2 (impi_wire.hpp).
//
// Per peer the state is:
//   out  - `wire`: packets admitted to the byte stream, written in order (the first may be half
//          written); `held`: counted packets waiting for the flow-control window, in order.
//          PROTOACKs skip `held` (they are never throttled) but never overtake bytes already
//          in `wire`, so the stream stays a sequence of whole packets.
//   in   - a small state machine: 128 header bytes, then pk_len payload bytes, read through a
//          staging buffer for small packets and straight into the destination for big ones.
//   sends  - srqid -> what the engine sent (sync short message or long message): a SYNCACK is
//            translated by it; drqid -> bytes of a long message the DATASYNC already carried.
//   recvs  - srqid -> the first fragment of a long message (kept until the engine matches it);
//            drqid -> offset/wanted bytes of a long message being received.
// Request ids are the engine's wire ids (generation << 32 | index), unique among active
// requests, which is what IMPI asks of pk_srqid / pk_drqid.
#include "core/wan.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/log.hpp"
#include "core/engine_impl.hpp"
#include "runtime/impi_wire.hpp"
#include "wanlink/handshake.hpp"
#include "wanlink/pacer.hpp"
#include "wanlink/replay.hpp"
#include "wanlink/tcp_tune.hpp"
#include "wanlink/tls.hpp"
#include <poll.h>

namespace wanmpi::core {

namespace {

using impi::Packet;

struct Out {
    uint8_t hdr[impi::kPacketHeader];
    const char* payload = nullptr;
    uint64_t len = 0;
    uint64_t off = 0;             // bytes of hdr + payload already written
    SendOp* op = nullptr;         // completed once the packet is written
    std::unique_ptr<char[]> own;  // payload copy (try_send that could not write it all)
    bool counted = true;          // counts for flow control
    bool is_ack = false;          // PK_WAN_ACK
};

// What the engine sent that a SYNCACK / CANCEL reply refers to.
struct SendState {
    bool is_long = false;  // DATASYNC of a long (rendezvous) message; else a synchronous short one
    uint64_t size = 0;
    uint64_t first = 0;    // bytes the DATASYNC carried
};
// A long message being sent after SYNCACK: DATA frames from the engine start at offset 0; the
// first `first` bytes already went with the DATASYNC.
struct LongSend {
    uint64_t first = 0;
    uint64_t size = 0;
    uint64_t srqid = 0;
};
// A long message being received (after our SYNCACK).
struct LongRecv {
    uint64_t off = 0;   // bytes received so far (the next fragment's offset)
    uint64_t want = 0;  // bytes the receive buffer takes; the rest is discarded
    uint64_t size = 0;
};

struct Peer {
    int rank = -1;
    int fd = -1;
    bool alive = false;
    bool failed_reported = false;
    bool fini_sent = false, fini_rcvd = false;
    bool want_out = false;  // EPOLLOUT registered
    std::string why;
    impi::Proc proc;
    std::deque<Out> wire, held;
    uint64_t sent = 0;  // counted packets not yet acknowledged
    uint64_t rcvd = 0;  // counted packets received since the last PROTOACK
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
    std::vector<char> tmp;
    std::vector<char> first_buf;
    std::map<uint64_t, SendState> sends;
    std::map<uint64_t, LongSend> long_sends;     // by drqid
    struct First {
        std::vector<char> data;
        uint64_t size = 0;  // pk_msglen
    };
    std::map<uint64_t, First> firsts;            // by srqid
    std::map<uint64_t, LongRecv> long_recvs;     // by drqid
    wanlink::LinkCounters ctr;                   // WANMPI_WAN_STATS
    int64_t hold_until = 0;                      // no writes before (stagger)
    // The link (issue 13, wanlink/): TLS, and the resumable stream (replay.hpp). While `down`
    // the peer stays alive for MPI: sends queue in `wire`, and the stream resumes at the
    // peer's recv_off once a reconnect succeeds (or the peer fails after reconnect_ms).
    std::unique_ptr<wanlink::Tls> tls;
    bool want_tls = false;
    bool resume = false;
    wanlink::SendLog log;
    uint64_t recv_off = 0;     // bytes of the peer's stream consumed
    uint64_t acked_out = 0;    // recv_off last sent in a PK_WAN_ACK
    uint64_t replay_pos = 0;   // next log byte to write; < log.end() while resending
    bool down = false;
    bool suspended = false;    // a reconnect handshake for this peer is under way: no reads
    int64_t down_since = 0;
    int64_t next_try = 0, backoff_ms = 10;
    std::string down_why;
    uint32_t reconnects = 0;
    uint64_t skip_in = 0;      // bytes of the new connection already consumed on the old one
};

// An incoming connection on the host socket after the dance: a peer reconnecting (or a
// stranger), driven without blocking until its link handshake proves it.
struct Pending {
    base::Fd fd;
    uint8_t rank[4] = {};
    size_t got = 0;
    int peer = -1;
    std::unique_ptr<wanlink::LinkHandshake> hs;
    int64_t deadline = 0;
    std::string from;
    uint64_t hello_recv_off = 0;  // the recv_off our HELLO named
};

// The engine header of a message that needs matching (EAGER, or the RTS of a long message):
// the IMPI packet's context id, source (rank in the sender's group), tag, size and request id.
Hdr match_hdr(uint8_t type, const Packet& pk) {
    Hdr h;
    h.type = type;
    h.ctx = uint32_t(pk.cid);
    h.src = pk.lsrank;
    h.tag = pk.tag;
    h.size = pk.msglen;
    h.sreq = pk.srqid;
    return h;
}

// Hand the engine a frame without payload (RTS, SYNC_ACK/FIN/CTS, CANCEL_*): header, then done.
void deliver_ctrl(Peer& p, const Hdr& h, transport::RecvSink& sink) {
    encode(h, p.ehdr);
    sink.on_header(p.rank, p.ehdr, 0);
    sink.on_frame(p.rank, p.ehdr, nullptr, 0);
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
        maxlen_ = job.maxlen;
        hiwater_ = std::max<uint32_t>(1, job.hiwater);
        ackmark_ = std::clamp<uint32_t>(job.ackmark, 1, hiwater_);
        my_proc_ = job.procs[size_t(me)].id;
        peers_.reset(new Peer[size_t(job.size())]);
        const wanlink::TcpTuning tuning = wanlink::tcp_tuning_from_env();
        epfd_ = epoll_create1(EPOLL_CLOEXEC);
        for (int r : peers) {
            Peer& p = peers_[size_t(r)];
            p.rank = r;
            p.fd = conns[size_t(r)].release();
            p.alive = p.fd >= 0;
            p.proc = job.procs[size_t(r)].id;
            if (!p.alive) {
                p.why = "no IMPI connection to rank " + std::to_string(r);
                continue;
            }
            if (size_t(r) < links_.results.size()) {
                p.resume = links_.results[size_t(r)].resume && reconnect_ms_ > 0;
                p.want_tls = links_.results[size_t(r)].tls;
            }
            if (size_t(r) < links_.tls.size()) p.tls = std::move(links_.tls[size_t(r)]);
            base::set_nonblock(p.fd, true);
            base::set_nodelay(p.fd);
            wanlink::tune_socket(p.fd, tuning);
            if (p.resume) wanlink::set_keepalive(p.fd, wanlink::keepalive_s());
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.u32 = uint32_t(r);
            epoll_ctl(epfd_, EPOLL_CTL_ADD, p.fd, &ev);
            list_.push_back(r);
            any_resume_ = any_resume_ || p.resume;
        }
        tuning_ = tuning;
        // Reconnects come in on the host socket of the dance (only if some peer can resume).
        if (any_resume_ && links_.listener) {
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
            if (p.alive && (!p.wire.empty() || !p.held.empty())) return false;
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
                for (int r : list_)
                    if (peers_[size_t(r)].alive && !peers_[size_t(r)].wire.empty()) {
                        arm_timer(pacer_.wait_ns(pacer_.depth(), now));
                        break;
                    }
        }
        bool wake = false;
        for (int r : list_) {
            Peer& p = peers_[size_t(r)];
            if (!p.alive) continue;
            if (p.down || !incoming_.empty()) {
                // Reconnect attempts, the reconnect deadline and pending handshakes are timed:
                // come back at the next attempt (the listener wakes the accepting side).
                // (Handshake bytes of pending connections wake us through epoll; the timer only
                // enforces their deadline.)
                const int64_t now_ms = base::now_ns() / 1000000;
                int64_t at = now_ms + 1000;
                if (p.down) {
                    at = std::min(at, p.down_since + reconnect_ms_);
                    if (me_ > p.rank) at = std::min(at, p.next_try);
                }
                arm_timer(std::max<int64_t>(at - now_ms, 0) * 1000000);
                if (p.down) continue;
            }
            // Plaintext TLS already decrypted is not in the socket: epoll would not wake us.
            if (p.tls && p.tls->pending() && !p.suspended) wake = true;
            bool want = (!p.wire.empty() || (p.tls && p.tls->backlog() > 0) ||
                         p.replay_pos < p.log.end()) &&
                        !throttled && !held_back(p);
            if (want == p.want_out) continue;
            epoll_event ev{};
            ev.events = EPOLLIN | (want ? uint32_t(EPOLLOUT) : 0u);
            ev.data.u32 = uint32_t(r);
            epoll_ctl(epfd_, EPOLL_CTL_MOD, p.fd, &ev);
            p.want_out = want;
        }
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
            for (int r : list_) {
                const Peer& p = peers_[size_t(r)];
                if (!p.alive) continue;
                const int64_t unsent = wanlink::socket_unsent(p.fd);
                if (unsent > 0) wait_ns = std::max(wait_ns, int64_t(1e9 * double(unsent) / double(cap_)));
            }
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
        if (bytes_per_s == rate_ && cap == cap_) return;
        // The bucket shares the budget among sockets the caller did not count (flows == 1:
        // point-to-point). When the caller counted them, the caps already sum to the budget,
        // and a bucket at the same rate would only add its own losses (a socket idle for a
        // moment cannot give its share to the others, yet the bucket handed it out): measured
        // 1.1-1.6x slower Alltoalls with it.
        const uint64_t bucket = flows > 1 ? 0 : bytes_per_s;
        if (bucket != pacer_.rate()) pacer_.set_rate(bucket, base::now_ns());
        rate_ = bytes_per_s;
        cap_ = cap;
        flows_ = flows;
        for (int r : list_) {
            Peer& p = peers_[size_t(r)];
            if (!p.alive) continue;
            if (int e = wanlink::set_socket_pacing(p.fd, cap); e && !pacing_said_) {
                pacing_said_ = true;
                WANMPI_LOG(warn, "SO_MAX_PACING_RATE not applied (%s): only wanmpi's own "
                                 "budget paces the WAN sockets", std::strerror(e));
            }
        }
    }
    uint64_t rate() const override { return pending_ ? pend_rate_ : rate_; }
    void stagger(int64_t first_ns, int64_t stride_ns) override {
        const int64_t now = base::now_ns();
        int64_t k = 0;
        for (int r : list_) {
            Peer& p = peers_[size_t(r)];
            if (!p.alive) continue;
            const int64_t at = first_ns + k++ * stride_ns;
            p.hold_until = at > 0 ? now + at : 0;
        }
    }
    int flows() const override { return pending_ ? pend_flows_ : flows_; }
    std::vector<wanlink::LinkStat> link_stats() const override {
        std::vector<wanlink::LinkStat> v;
        for (int r : list_) {
            const Peer& p = peers_[size_t(r)];
            wanlink::LinkStat s;
            s.rank = me_;
            s.peer_rank = r;
            s.peer_cluster = job_.procs[size_t(r)].client;
            s.peer_host = job_.hosts[size_t(job_.procs[size_t(r)].host)].addr();
            s.c = p.ctr;
            s.tcp = wanlink::read_tcp_info(p.fd);
            s.cc = p.fd >= 0 ? wanlink::socket_cc(p.fd) : "";
            v.push_back(std::move(s));
        }
        return v;
    }
    uint64_t max_frame() const override { return maxlen_; }

    void begin_fini() override {
        for (int r : list_) {
            Peer& p = peers_[size_t(r)];
            if (!p.alive || p.fini_sent) continue;
            Packet pk;
            pk.type = impi::PK_FINI;
            pk.src.pid = -1;
            pk.dest.pid = -1;
            Out& o = p.held.emplace_back();
            impi::encode_packet(pk, o.hdr);
            o.counted = false;
            p.fini_sent = true;
            admit(p);
        }
    }
    bool fini_done() const override {
        for (int r : list_) {
            const Peer& p = peers_[size_t(r)];
            if (p.alive && (!p.fini_rcvd || !p.wire.empty() || !p.held.empty())) return false;
        }
        return true;
    }

private:
    static constexpr size_t kStage = 256 * 1024;

    Packet base_packet(const Peer& p, uint32_t type) const {
        Packet pk;
        pk.type = type;
        pk.src = my_proc_;
        pk.dest = p.proc;
        return pk;
    }
    // The packet of a message to be matched (DATA/DATASYNC): the engine header's context id,
    // source, tag, size and request id; `len` bytes of it in this packet. (match_hdr reverses it.)
    Packet message_packet(const Peer& p, uint32_t type, const Hdr& h, uint64_t len) const {
        Packet pk = base_packet(p, type);
        pk.len = uint32_t(len);
        pk.msglen = h.size;
        pk.srqid = h.sreq;
        pk.lsrank = h.src;
        pk.tag = h.tag;
        pk.cid = h.ctx;
        return pk;
    }
    // Engine frame -> packet. Returns false if nothing goes on the wire (the frame is dropped or
    // handled locally). May queue Local events. `payload` is the frame's payload.
    bool translate(Peer& p, const Hdr& h, const char* payload, uint64_t len, Out& o);
    void admit(Peer& p) {
        while (!p.held.empty() && (!p.held.front().counted || p.sent < hiwater_)) {
            if (p.held.front().counted) p.sent++;
            p.wire.push_back(std::move(p.held.front()));
            p.held.pop_front();
        }
    }
    bool can_send_now(const Peer& p) const {
        return p.alive && !p.down && !p.suspended && p.wire.empty() && p.held.empty() &&
               p.sent < hiwater_ && p.replay_pos == p.log.end() &&
               !(p.tls && p.tls->backlog() > 0) && !(p.resume && p.log.full()) &&
               (!p.hold_until || !held_back(p)) && !warming(p);
    }
    // Linux paces nothing before a connection's tenth data segment: its initial window leaves
    // at NIC speed, and many connections starting together overflow the bottleneck (at
    // 2 x 2 ranks into 200 Mbit/s the first Alltoall lost packets, and cubic's slow-start
    // threshold fell to 9 segments: the job then ran at a third of the link for seconds).
    // While pacing is on, a connection's first kWarm bytes go kWarmChunk at a time, spaced at
    // its cap, from write_some (try_send defers to it).
    static constexpr uint64_t kWarm = 16384;
    static constexpr size_t kWarmChunk = 2 * 1448;
    bool warming(const Peer& p) const { return cap_ != 0 && p.ctr.bytes_sent < kWarm; }
    // A staggered start not reached yet (arms the timer for it).
    bool held_back(const Peer& p) const {
        if (!p.hold_until) return false;
        const int64_t now = base::now_ns();
        if (now >= p.hold_until) return false;
        const_cast<Wan*>(this)->arm_timer(p.hold_until - now);
        return true;
    }
    int write_some(Peer& p);
    void share_caps();
    int read_some(Peer& p, transport::RecvSink& sink);
    void on_packet_header(Peer& p, transport::RecvSink& sink);
    void on_packet_done(Peer& p, transport::RecvSink& sink);
    void send_protoack(Peer& p) {
        Packet pk = base_packet(p, impi::PK_PROTOACK);
        Out o;
        impi::encode_packet(pk, o.hdr);
        o.counted = false;
        p.wire.push_back(std::move(o));
    }
    void fail(Peer& p, const std::string& why) {
        if (!p.alive) return;
        // Said here once: MPI reports it only where a call involves the peer.
        WANMPI_LOG(warn, "%s", why.c_str());
        p.alive = false;
        p.why = why;
        p.tls.reset();
        if (p.fd >= 0) {
            epoll_ctl(epfd_, EPOLL_CTL_DEL, p.fd, nullptr);
            ::close(p.fd);
        }
        p.fd = -1;
        for (auto* q : {&p.wire, &p.held})
            for (Out& o : *q)
                if (o.op) push_local(Local{p.rank, o.op, false, {}, {}});
        p.wire.clear();
        p.held.clear();
    }
    // ---- the link: TLS, the resumable stream, reconnects (issue 13) ----------------------------
    // Writes through TLS or to the socket; what was taken goes into the log of a resumable
    // stream (a copy: the bytes must outlive the caller's buffer until the peer confirms them).
    ssize_t io_writev(Peer& p, const iovec* iov, int n) {
        ssize_t w = p.tls ? p.tls->writev(iov, n) : ::writev(p.fd, iov, n);
        if (w > 0 && p.resume) {
            p.log.append(iov, n, size_t(w));
            p.replay_pos = p.log.end();
        }
        return w;
    }
    ssize_t raw_recv(Peer& p, void* buf, size_t n) {
        return p.tls ? p.tls->recv(buf, n) : ::recv(p.fd, buf, n, MSG_DONTWAIT);
    }
    ssize_t io_recv(Peer& p, void* buf, size_t n) {
        // After a reconnect we accepted while the old connection still delivered: the peer
        // resends from the offset our HELLO named, and what we consumed since is dropped here.
        while (p.skip_in > 0) {
            char tmp[65536];
            ssize_t r = raw_recv(p, tmp, size_t(std::min<uint64_t>(sizeof tmp, p.skip_in)));
            if (r <= 0) return r;
            p.skip_in -= uint64_t(r);
        }
        ssize_t r = raw_recv(p, buf, n);
        if (r > 0) p.recv_off += uint64_t(r);
        return r;
    }
    std::string io_error(const Peer& p) const {
        const int e = errno;
        std::string t = std::strerror(e);
        if (p.tls && !p.tls->error().empty()) t += " (TLS: " + p.tls->error() + ")";
        if (e == EBADMSG) t += "; a TLS record failed authentication: the data was altered on the way";
        return t;
    }
    // The connection broke. A resumable stream goes down and waits for a reconnect (MPI sees
    // nothing); anything else fails the peer. A TLS record that failed authentication (altered
    // on the way) is dropped by TLS before a byte of it is delivered, so the stream resumes
    // just before it, from an untouched copy: an attacker who alters data costs a reconnect.
    void broken(Peer& p, const std::string& why) {
        if (!p.alive || p.down) return;
        if (!p.resume) return fail(p, why);
        WANMPI_LOG(warn, "%s; reconnecting (up to %lld s, WANMPI_WAN_RECONNECT_S)", why.c_str(),
                   (long long)(reconnect_ms_ / 1000));
        p.tls.reset();
        epoll_ctl(epfd_, EPOLL_CTL_DEL, p.fd, nullptr);
        ::close(p.fd);
        p.fd = -1;
        p.want_out = false;
        p.down = true;
        p.down_why = why;
        p.down_since = (base::now_ns() / 1000000);
        p.next_try = p.down_since;
        p.backoff_ms = 10;
        arm_timer(1'000'000);
    }
    // "I have consumed recv_off bytes of your stream": at the front of the queue (after a packet
    // half written), so that it overtakes data a full log holds back.
    void queue_ack(Peer& p) {
        Packet pk = base_packet(p, impi::PK_WAN_ACK);
        pk.srqid = p.recv_off;
        Out o;
        impi::encode_packet(pk, o.hdr);
        o.counted = false;
        o.is_ack = true;
        auto at = p.wire.begin();
        if (at != p.wire.end() && at->off > 0) ++at;
        p.wire.insert(at, std::move(o));
        p.acked_out = p.recv_off;
    }
    wanlink::Hello hello_for(const Peer& p) const {
        wanlink::Hello h;
        h.flags = links_.link.flags;
        h.kind = 1;
        h.from = uint32_t(me_);
        h.to = uint32_t(p.rank);
        h.recv_off = p.recv_off;
        h.epoch = p.reconnects + 1;
        return h;
    }
    // A new connection for a peer whose link handshake (and TLS) succeeded: resume the stream
    // where the peer stopped.
    bool resume_on(Peer& p, base::Fd fd, std::unique_ptr<wanlink::Tls> tls, uint64_t peer_recv_off,
                   uint64_t skip_in = 0) {
        if (peer_recv_off < p.log.begin() || peer_recv_off > p.log.end()) {
            fail(p, "reconnected to " + peer_name(p.rank) + ", but it asks to resume at byte " +
                    std::to_string(peer_recv_off) + " while this side keeps bytes " +
                    std::to_string(p.log.begin()) + ".." + std::to_string(p.log.end()));
            return false;
        }
        if (p.fd >= 0) {  // the peer found the old connection dead before we did
            epoll_ctl(epfd_, EPOLL_CTL_DEL, p.fd, nullptr);
            ::close(p.fd);
        }
        p.log.ack(peer_recv_off);
        p.replay_pos = peer_recv_off;
        p.skip_in = skip_in;
        p.fd = fd.release();
        p.tls = std::move(tls);
        base::set_nonblock(p.fd, true);
        base::set_nodelay(p.fd);
        wanlink::tune_socket(p.fd, tuning_);
        wanlink::set_keepalive(p.fd, wanlink::keepalive_s());
        if (cap_) wanlink::set_socket_pacing(p.fd, cap_);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = uint32_t(p.rank);
        epoll_ctl(epfd_, EPOLL_CTL_ADD, p.fd, &ev);
        p.want_out = false;
        const int64_t took = p.down ? (base::now_ns() / 1000000) - p.down_since : 0;
        p.down = false;
        p.suspended = false;
        p.reconnects++;
        WANMPI_LOG(warn, "reconnected to %s after %lld ms; resending %llu bytes it had not "
                         "received",
                   peer_name(p.rank).c_str(), (long long)took,
                   (unsigned long long)(p.log.end() - peer_recv_off));
        return true;
    }
    // The side that dialled at the dance (the higher host) dials again; the other waits on its
    // host socket (serve_reconnects). Both give up after WANMPI_WAN_RECONNECT_S.
    int reconnect_step(Peer& p);
    int serve_reconnects();

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
            if (p.tls) p.tls->shutdown();  // close_notify: an orderly end, not a truncation
            p.tls.reset();
            if (p.fd >= 0) ::close(p.fd);
            p.fd = -1;
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
    int64_t shared_at_ = 0;    // last share_caps() pass
    bool pending_ = false;     // a higher rate waits for the kernel's backlog (set_rate)
    uint64_t pend_rate_ = 0;
    int pend_flows_ = 1;
    int64_t pend_at_ = 0;
    bool timer_armed_ = false; // tfd_ set and not yet read after firing
    bool pacing_said_ = false;
    size_t rr_ = 0;            // first peer served by the next progress(): the budget is shared
    std::vector<char> rbuf_;
    size_t rpos_ = 0, rend_ = 0;  // staging buffer of the peer being read (drained per call)
};

bool Wan::translate(Peer& p, const Hdr& h, const char* payload, uint64_t len, Out& o) {
    Packet pk;
    switch (h.type) {
    case F_EAGER:
        pk = message_packet(p, (h.flags & FL_SYNC) ? impi::PK_DATASYNC : impi::PK_DATA, h, len);
        if (h.flags & FL_SYNC) p.sends[h.sreq] = SendState{false, h.size, len};
        o.payload = payload;
        o.len = len;
        break;
    case F_RTS: {
        uint64_t first = std::min<uint64_t>(h.size, maxlen_);
        pk = message_packet(p, impi::PK_DATASYNC, h, first);
        p.sends[h.sreq] = SendState{true, h.size, first};
        // The engine's buffer (user data or its packed copy) stays valid until the send
        // completes, which cannot happen before this packet is answered.
        o.payload = reinterpret_cast<const char*>(h.addr);
        o.len = first;
        break;
    }
    case F_CTS: {
        pk = base_packet(p, impi::PK_SYNCACK);
        pk.srqid = h.sreq;
        pk.drqid = h.rreq;
        auto it = p.firsts.find(h.sreq);
        uint64_t first = 0, size = 0;
        Local l{p.rank, nullptr, true, {}, {}};
        if (it != p.firsts.end()) {
            first = it->second.data.size();
            size = it->second.size;
            l.data = std::move(it->second.data);
            p.firsts.erase(it);
        }
        // The size of the whole message came with the DATASYNC; the engine tells us how much
        // it wants (its buffer may be smaller: MPI_ERR_TRUNCATE is its business).
        uint64_t want = h.size;
        p.long_recvs[h.rreq] = LongRecv{first, want, size};
        if (first >= size) p.long_recvs.erase(h.rreq);
        // The first fragment, as DATA at offset 0 (only what the buffer takes).
        uint64_t n = std::min(first, want);
        if (n > 0) {
            l.data.resize(n);
            Hdr d;
            d.type = F_DATA;
            d.rreq = h.rreq;
            d.addr = 0;
            encode(d, l.ehdr);
            push_local(std::move(l));
        }
        break;
    }
    case F_DATA: {
        auto it = p.long_sends.find(h.rreq);
        if (it == p.long_sends.end()) return false;  // unknown: nothing to send
        const LongSend ls = it->second;
        uint64_t off = h.addr;
        uint64_t skip = ls.first > off ? std::min(ls.first - off, len) : 0;
        if (off + len >= ls.size) p.long_sends.erase(it);
        if (skip == len) return false;
        pk = base_packet(p, impi::PK_DATA);
        pk.len = uint32_t(len - skip);
        pk.drqid = h.rreq;
        pk.srqid = ls.srqid;
        pk.msglen = ls.size;
        o.payload = payload + skip;
        o.len = len - skip;
        break;
    }
    case F_SYNC_ACK:
        pk = base_packet(p, impi::PK_SYNCACK);
        pk.srqid = h.sreq;
        break;
    case F_CANCEL_REQ:
        pk = base_packet(p, impi::PK_CANCEL);
        pk.srqid = h.sreq;
        break;
    case F_CANCEL_RESP:
        pk = base_packet(p, (h.flags & FL_YES) ? impi::PK_CANCELYES : impi::PK_CANCELNO);
        pk.srqid = h.sreq;
        if (h.flags & FL_YES) p.firsts.erase(h.sreq);  // the engine dropped it: so do we
        break;
    default:  // CREDIT (IMPI flow control replaces it), FIN (no single copy across clusters)
        return false;
    }
    impi::encode_packet(pk, o.hdr);
    return true;
}

SendResult Wan::try_send(int peer, const uint8_t* hb, const void* payload, uint64_t len) {
    Peer& p = peers_[size_t(peer)];
    if (!p.alive) return SendResult::failed;
    Hdr h = decode(hb);
    if (h.type == F_CREDIT || h.type == F_FIN) return SendResult::done;
    if (!can_send_now(p)) return SendResult::would_block;
    Out o;
    if (!translate(p, h, static_cast<const char*>(payload), len, o)) return SendResult::done;
    p.sent++;  // every translated frame is a counted packet
    // Write what the socket (and the pacer) takes now; keep a copy of the rest.
    uint64_t total = sizeof o.hdr + o.len;
    size_t allowed = paced(size_t(total));
    iovec iov[2] = {{o.hdr, sizeof o.hdr}, {const_cast<char*>(o.payload), size_t(o.len)}};
    int niov = o.len ? 2 : 1;
    if (allowed < total) {
        if (allowed <= sizeof o.hdr) {
            iov[0].iov_len = allowed;
            niov = 1;
        } else {
            iov[1].iov_len = allowed - sizeof o.hdr;
        }
    }
    ssize_t n = allowed ? io_writev(p, iov, niov) : 0;
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            broken(p, "sending to " + peer_name(peer) + ": " + io_error(p));
            if (!p.alive) return SendResult::failed;
        }
        n = 0;
    }
    pacer_.consume(size_t(n));
    p.ctr.bytes_sent += uint64_t(n);
    if (uint64_t(n) == total) {
        p.ctr.msgs_sent++;
        return SendResult::done;
    }
    o.off = uint64_t(n);
    if (o.len) {
        o.own.reset(new char[o.len]);
        std::memcpy(o.own.get(), o.payload, o.len);
        o.payload = o.own.get();
    }
    p.wire.push_back(std::move(o));
    return SendResult::done;
}

void Wan::post_send(int peer, SendOp* op) {
    Peer& p = peers_[size_t(peer)];
    // (A peer that is down keeps its queue: the stream resumes after the reconnect.)
    if (!p.alive) {
        push_local(Local{peer, op, false, {}, {}});
        return;
    }
    Hdr h = decode(op->hdr);
    Out o;
    if (!translate(p, h, static_cast<const char*>(op->payload), op->len, o)) {
        push_local(Local{peer, op, true, {}, {}});
        return;
    }
    o.op = op;
    p.held.push_back(std::move(o));
    admit(p);
}

int Wan::write_some(Peer& p) {
    int done = 0;
    if (p.down || p.suspended) return 0;
    if (p.hold_until) {
        if (held_back(p)) return 0;
        p.hold_until = 0;
    }
    if (p.tls && p.tls->backlog() > 0) {
        if (p.tls->flush() < 0) {
            broken(p, "sending to " + peer_name(p.rank) + ": " + io_error(p));
            return 0;
        }
        if (p.tls->backlog() > 0) return 0;
    }
    // After a reconnect: first what the peer had not received, from the log.
    while (p.alive && !p.down && p.replay_pos < p.log.end()) {
        iovec iov[32];
        int n = p.log.iov_from(p.replay_pos, iov, 32);
        ssize_t w = p.tls ? p.tls->writev(iov, n) : ::writev(p.fd, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return done;
            broken(p, "resending to " + peer_name(p.rank) + ": " + io_error(p));
            return done;
        }
        p.replay_pos += uint64_t(w);
    }
    while (p.alive && !p.down && !p.wire.empty() && !(p.hold_until && held_back(p))) {
        // A full log takes no new data until the peer confirms some; its confirmations
        // (PK_WAN_ACK, queued at the front) still go, or two full logs would wait on each other.
        if (p.resume && p.log.full() && p.wire.front().off == 0 && !p.wire.front().is_ack) break;
        iovec iov[32];
        int n = 0;
        for (auto it = p.wire.begin(); it != p.wire.end() && n < 31; ++it) {
            uint64_t off = it->off;
            if (off < sizeof it->hdr) {
                iov[n++] = {it->hdr + off, size_t(sizeof it->hdr - off)};
                off = 0;
            } else {
                off -= sizeof it->hdr;
            }
            if (it->len > off) iov[n++] = {const_cast<char*>(it->payload) + off,
                                           size_t(it->len - off)};
        }
        auto trim = [&](size_t ok) {  // the vector to `ok` bytes (ok > 0)
            for (int i = 0; i < n; ++i) {
                if (ok >= iov[i].iov_len) {
                    ok -= iov[i].iov_len;
                    continue;
                }
                iov[i].iov_len = ok;
                n = ok ? i + 1 : i;
                break;
            }
        };
        if (pacer_.limited()) {
            size_t want = 0;
            for (int i = 0; i < n; ++i) want += iov[i].iov_len;
            size_t ok = paced(want);
            if (ok == 0) break;
            trim(ok);
        }
        const bool warm = warming(p);
        if (warm) trim(kWarmChunk);
        ssize_t w = io_writev(p, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
            broken(p, "sending to " + peer_name(p.rank) + ": " + io_error(p));
            break;
        }
        pacer_.consume(size_t(w));
        p.ctr.bytes_sent += uint64_t(w);
        if (warm && w > 0) p.hold_until = base::now_ns() + int64_t(1e9 * double(w) / double(cap_));
        uint64_t left = uint64_t(w);
        while (left > 0 || (!p.wire.empty() && p.wire.front().off ==
                                                   sizeof p.wire.front().hdr + p.wire.front().len)) {
            Out& o = p.wire.front();
            uint64_t rest = sizeof o.hdr + o.len - o.off;
            uint64_t take = std::min(rest, left);
            o.off += take;
            left -= take;
            if (o.off < sizeof o.hdr + o.len) break;
            if (o.op && o.op->on_complete) o.op->on_complete(o.op, true);
            p.wire.pop_front();
            p.ctr.msgs_sent++;
            done++;
        }
    }
    return done;
}

void Wan::on_packet_header(Peer& p, transport::RecvSink& sink) {
    std::string err = impi::decode_packet(p.hdr, maxlen_, &p.pk);
    if (!err.empty()) {
        fail(p, "malformed IMPI packet from " + peer_name(p.rank) + ": " + err);
        return;
    }
    const Packet& pk = p.pk;
    p.got = 0;
    p.dst = nullptr;
    p.elen = 0;
    p.mode = Peer::In::discard;
    if (pk.type == impi::PK_WAN_ACK) {
        if (!p.resume) {
            fail(p, "IMPI packet from " + peer_name(p.rank) + ": a stream acknowledgement on a "
                    "connection that did not negotiate resuming");
            return;
        }
        if (!p.log.ack(pk.srqid))
            fail(p, "IMPI packet from " + peer_name(p.rank) + " acknowledges " +
                    std::to_string(pk.srqid) + " bytes, but only " + std::to_string(p.log.end()) +
                    " were sent");
        return;
    }
    bool counted = pk.type != impi::PK_PROTOACK && pk.type != impi::PK_FINI;
    if (counted && ++p.rcvd >= ackmark_) {
        p.rcvd -= ackmark_;
        send_protoack(p);
    }
    if (pk.type != impi::PK_DATA && pk.type != impi::PK_DATASYNC) return;
    if (pk.cid > 0xffffffffu) {
        WANMPI_LOG(warn, "IMPI packet from %s with context id %llu (not one of ours); dropped",
                   peer_name(p.rank).c_str(), (unsigned long long)pk.cid);
        return;
    }
    Hdr h;
    if (pk.type == impi::PK_DATA && pk.drqid != 0) {
        // A later fragment of a long message: no matching, found by drqid.
        auto it = p.long_recvs.find(pk.drqid);
        if (it == p.long_recvs.end()) return;  // receive gone (failed/truncated): discard
        LongRecv& lr = it->second;
        uint64_t n = lr.off < lr.want ? std::min<uint64_t>(pk.len, lr.want - lr.off) : 0;
        h.type = F_DATA;
        h.rreq = pk.drqid;
        h.addr = lr.off;
        lr.off += pk.len;
        if (lr.off >= lr.size) p.long_recvs.erase(it);
        if (n == 0) return;
        encode(h, p.ehdr);
        p.elen = n;
        p.mode = Peer::In::data;
    } else if (pk.len < pk.msglen) {
        // DATASYNC carrying the first fragment of a long message: keep it, offer the engine an
        // RTS; its CTS becomes our SYNCACK.
        if (pk.type != impi::PK_DATASYNC) {
            fail(p, "IMPI DATA packet from " + peer_name(p.rank) +
                        " with pk_len < pk_msglen and no drqid");
            return;
        }
        p.mode = Peer::In::first;
        p.first_buf.resize(pk.len);
        p.dst = p.first_buf.data();
        p.elen = pk.len;
        return;
    } else {
        if (pk.len != pk.msglen) {
            fail(p, "IMPI packet from " + peer_name(p.rank) + " has pk_len " +
                        std::to_string(pk.len) + " > pk_msglen " + std::to_string(pk.msglen));
            return;
        }
        h = match_hdr(F_EAGER, pk);
        h.flags = pk.type == impi::PK_DATASYNC ? FL_SYNC : 0;
        encode(h, p.ehdr);
        p.elen = pk.len;
        p.mode = Peer::In::eager;
    }
    void* dst = sink.on_header(p.rank, p.ehdr, p.elen);
    if (!dst && p.elen > 0) {
        p.tmp.resize(p.elen);
        dst = p.tmp.data();
    }
    p.dst = static_cast<char*>(dst);
}

void Wan::on_packet_done(Peer& p, transport::RecvSink& sink) {
    const Packet& pk = p.pk;
    switch (pk.type) {
    case impi::PK_DATA:
    case impi::PK_DATASYNC:
        if (p.mode == Peer::In::eager || p.mode == Peer::In::data) {
            sink.on_frame(p.rank, p.ehdr, p.dst, p.elen);
        } else if (p.mode == Peer::In::first) {
            p.firsts[pk.srqid] = Peer::First{std::move(p.first_buf), pk.msglen};
            p.first_buf = {};
            deliver_ctrl(p, match_hdr(F_RTS, pk), sink);
        }
        break;
    case impi::PK_PROTOACK:
        p.sent = p.sent > ackmark_ ? p.sent - ackmark_ : 0;
        admit(p);
        break;
    case impi::PK_SYNCACK: {
        auto it = p.sends.find(pk.srqid);
        if (it == p.sends.end()) break;  // cancelled meanwhile, or not ours: ignore
        SendState s = it->second;
        p.sends.erase(it);
        Hdr h;
        h.sreq = pk.srqid;
        if (!s.is_long) {
            h.type = F_SYNC_ACK;
        } else if (s.first >= s.size) {
            h.type = F_FIN;  // the DATASYNC carried all of it
        } else {
            h.type = F_CTS;
            h.rreq = pk.drqid;
            h.size = s.size;
            p.long_sends[pk.drqid] = LongSend{s.first, s.size, pk.srqid};
        }
        deliver_ctrl(p, h, sink);
        break;
    }
    case impi::PK_CANCEL: {
        Hdr h;
        h.type = F_CANCEL_REQ;
        h.sreq = pk.srqid;
        deliver_ctrl(p, h, sink);
        break;
    }
    case impi::PK_CANCELYES:
    case impi::PK_CANCELNO: {
        if (pk.type == impi::PK_CANCELYES) p.sends.erase(pk.srqid);
        Hdr h;
        h.type = F_CANCEL_RESP;
        h.flags = pk.type == impi::PK_CANCELYES ? FL_YES : 0;
        h.sreq = pk.srqid;
        deliver_ctrl(p, h, sink);
        break;
    }
    case impi::PK_FINI:
        p.fini_rcvd = true;
        break;
    default:
        break;
    }
    p.in_payload = false;
    p.hdr_got = 0;
}

// Reads what the socket has for one peer (bounded, so one busy peer cannot starve the others)
// and delivers whole packets. Returns the number of packets handled.
int Wan::read_some(Peer& p, transport::RecvSink& sink) {
    int handled = 0;
    rpos_ = rend_ = 0;
    uint64_t budget = 8u << 20;
    if (p.down || p.suspended) return 0;
    while (p.alive && !p.down && budget > 0) {
        if (rpos_ == rend_) {
            // Big payload still to come: read it straight into its destination.
            uint64_t need = p.in_payload ? p.pk.len - p.got : 0;
            if (p.in_payload && p.dst && p.got < p.elen && p.elen - p.got >= kStage / 2) {
                ssize_t n = io_recv(p, p.dst + p.got, size_t(std::min(p.elen - p.got, budget)));
                if (n > 0) {
                    p.ctr.bytes_recv += uint64_t(n);
                    p.got += uint64_t(n);
                    budget -= std::min<uint64_t>(budget, uint64_t(n));
                    if (p.got == p.pk.len) {
                        on_packet_done(p, sink);
                        handled++;
                    }
                    continue;
                }
                if (n == 0) goto eof;
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
                goto error;
            }
            (void)need;
            ssize_t n = io_recv(p, rbuf_.data(), rbuf_.size());
            if (n == 0) goto eof;
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
                goto error;
            }
            rpos_ = 0;
            rend_ = size_t(n);
            p.ctr.bytes_recv += uint64_t(n);
            budget -= std::min<uint64_t>(budget, uint64_t(n));
        }
        while (rpos_ < rend_ && p.alive) {
            if (!p.in_payload) {
                size_t take = std::min(rend_ - rpos_, sizeof p.hdr - p.hdr_got);
                std::memcpy(p.hdr + p.hdr_got, rbuf_.data() + rpos_, take);
                rpos_ += take;
                p.hdr_got += take;
                if (p.hdr_got < sizeof p.hdr) break;
                on_packet_header(p, sink);
                if (!p.alive) break;
                p.ctr.msgs_recv++;
                p.in_payload = true;
                if (!impi::packet_has_payload(p.pk.type) || p.pk.len == 0) {
                    on_packet_done(p, sink);
                    handled++;
                }
                continue;
            }
            uint64_t take = std::min<uint64_t>(rend_ - rpos_, p.pk.len - p.got);
            if (p.dst && p.got < p.elen) {
                uint64_t in = std::min(take, p.elen - p.got);
                std::memcpy(p.dst + p.got, rbuf_.data() + rpos_, in);
            }
            rpos_ += take;
            p.got += take;
            if (p.got == p.pk.len) {
                on_packet_done(p, sink);
                handled++;
            }
        }
        // Unread staged bytes never outlive this call: the loop above consumes all of rbuf_.
    }
    return handled;
eof:
    if (p.fini_rcvd && !p.in_payload && p.hdr_got == 0) {
        // Orderly: the peer sent FINI and closed.
        epoll_ctl(epfd_, EPOLL_CTL_DEL, p.fd, nullptr);
        p.tls.reset();
        ::close(p.fd);
        p.fd = -1;
        p.alive = false;
        return handled;
    }
    broken(p, "the connection to " + peer_name(p.rank) + " closed without IMPI FINI (the rank or " +
              (impi::relay_of(p.proc).empty() ? "its cluster died)" : "its cluster or the relay died)"));
    return handled;
error:
    // TLS reports a close without close_notify as an error; after the peer's FINI it is the
    // peer's orderly end all the same.
    if (p.fini_rcvd && !p.in_payload && p.hdr_got == 0) goto eof;
    broken(p, "receiving from " + peer_name(p.rank) + ": " + io_error(p));
    return handled;
}

int Wan::progress(transport::RecvSink& sink) {
    int n = 0;
    if (!local_.empty()) {
        uint64_t v;
        ssize_t rd = ::read(evfd_, &v, sizeof v);
        (void)rd;
        std::vector<Local> q;
        q.swap(local_);
        for (Local& l : q) {
            const Peer& lp = peers_[size_t(l.peer)];
            if (!l.op && lp.alive && (lp.in_payload || lp.hdr_got > 0)) {
                // The engine keeps one inbound frame per peer: a frame of ours must not land
                // between the header and the end of a packet being read. Next time.
                local_.push_back(std::move(l));
                continue;
            }
            if (l.op) {
                if (l.op->on_complete) l.op->on_complete(l.op, l.ok);
            } else {
                void* dst = sink.on_header(l.peer, l.ehdr, l.data.size());
                if (dst && !l.data.empty()) std::memcpy(dst, l.data.data(), l.data.size());
                sink.on_frame(l.peer, l.ehdr, dst ? dst : l.data.data(), l.data.size());
            }
            n++;
        }
    }
    if (timer_armed_) {
        // A fired timer must be read, or the epoll set stays readable and the rank never
        // sleeps again; one that has not fired yet stays armed.
        uint64_t v;
        if (::read(tfd_, &v, sizeof v) > 0) timer_armed_ = false;
    }
    if (pending_) {
        const int64_t now = base::now_ns();
        if (now >= pend_at_) {
            pending_ = false;
            apply_rate(pend_rate_, pend_flows_);
        } else if (!timer_armed_) {
            arm_timer(pend_at_ - now);
        }
    }
    if (links_.listener) n += serve_reconnects();
    // Round robin over the peers, so that a limited budget is shared, not taken by the first.
    const size_t np = list_.size();
    if (np) rr_ = (rr_ + 1) % np;
    for (size_t i = 0; i < np; ++i) {
        const int r = list_[(rr_ + i) % np];
        Peer& p = peers_[size_t(r)];
        if (!p.alive) {
            if (!p.failed_reported && !p.why.empty()) {
                p.failed_reported = true;
                sink.on_peer_failed(r, p.why);
            }
            continue;
        }
        if (p.down) {
            n += reconnect_step(p);
            if (p.down) continue;
        }
        n += write_some(p);
        n += read_some(p, sink);
        if (p.resume && p.alive && !p.down && p.recv_off - p.acked_out >= wanlink::kAckEvery)
            queue_ack(p);
        if (p.alive && !p.wire.empty()) n += write_some(p);  // PROTOACKs the reads queued
        if (!p.alive && !p.failed_reported && !p.why.empty()) {
            p.failed_reported = true;
            sink.on_peer_failed(r, p.why);
        }
    }
    if (flows_ > 1 && !pending_) share_caps();
    return n;
}

// In a rate-managed call the rank's budget is split among the `flows_` sockets it sends on. A
// socket whose data has all left (nothing queued here, nothing unsent in the kernel) gives its
// share to those still sending: an Alltoallv's small blocks finish early, and without this the
// rank's long ones would go on at a fraction of its budget while the link idles. The caps of
// the busy sockets still sum to the budget, so the cluster stays within the link. Checked at
// most every millisecond (one ioctl per idle socket).
void Wan::share_caps() {
    const int64_t now = base::now_ns();
    if (now - shared_at_ < 1000000) return;
    shared_at_ = now;
    int busy = 0;
    for (int r : list_) {
        const Peer& p = peers_[size_t(r)];
        if (p.alive && (!p.wire.empty() || !p.held.empty() || wanlink::socket_unsent(p.fd) > 0))
            ++busy;
    }
    const uint64_t cap = wanlink::Pacer::socket_cap(rate_, std::clamp(busy, 1, flows_));
    if (cap == cap_) return;
    cap_ = cap;
    for (int r : list_) {
        const Peer& p = peers_[size_t(r)];
        if (p.alive) wanlink::set_socket_pacing(p.fd, cap);
    }
}

// Dials the peer again (we are the higher host: we dialled at the dance): connect, our host
// rank, the link handshake of kind "reconnect" naming how much of its stream we consumed, TLS
// if the link had it, then resume. Blocking, bounded by a few seconds per attempt; attempts
// back off from 10 ms to 1 s until WANMPI_WAN_RECONNECT_S has passed since the break.
int Wan::reconnect_step(Peer& p) {
    const int64_t now = (base::now_ns() / 1000000);
    if (now - p.down_since >= reconnect_ms_) {
        fail(p, p.down_why + "; no reconnect within " + std::to_string(reconnect_ms_ / 1000) +
                    " s (WANMPI_WAN_RECONNECT_S)");
        return 0;
    }
    if (me_ < p.rank || now < p.next_try) return 0;
    p.next_try = now + p.backoff_ms;
    p.backoff_ms = std::min<int64_t>(p.backoff_ms * 2, 1000);
    const auto& h = job_.hosts[size_t(job_.procs[size_t(p.rank)].host)];
    const int64_t budget = std::clamp<int64_t>(reconnect_ms_ - (now - p.down_since), 1, 5000);
    const int64_t deadline = now + budget;
    std::string err;
    int fd = base::tcp_connect(h.addr(), h.port, int(budget), &err);
    if (fd < 0) {
        WANMPI_LOG(info, "reconnect to %s: %s", peer_name(p.rank).c_str(), err.c_str());
        return 0;
    }
    base::Fd f(fd);
    const int64_t connected_ms = base::now_ns() / 1000000;
    base::set_nonblock(fd, true);
    // The handshakes are small messages back to back: Nagle would hold each behind the
    // peer's delayed ACK (40 ms a step).
    base::set_nodelay(fd);
    uint8_t rk[4];
    base::put_be32(rk, uint32_t(me_));
    if (::send(fd, rk, 4, MSG_NOSIGNAL) != 4) return 0;
    wanlink::LinkHandshake hs(true, links_.link.keyed ? &links_.link.key : nullptr,
                              links_.link.session.data(), hello_for(p), uint32_t(p.rank));
    for (;;) {
        auto r = hs.step(fd);
        if (r == wanlink::LinkHandshake::done) break;
        if (r == wanlink::LinkHandshake::failed) {
            WANMPI_LOG(warn, "reconnect to %s: %s", peer_name(p.rank).c_str(), hs.reason().c_str());
            return 0;
        }
        pollfd pf{fd, POLLIN, 0};
        const int64_t left = deadline - (base::now_ns() / 1000000);
        if (left <= 0 || ::poll(&pf, 1, int(left)) <= 0) {
            WANMPI_LOG(info, "reconnect to %s: no handshake answer", peer_name(p.rank).c_str());
            return 0;
        }
    }
    std::unique_ptr<wanlink::Tls> tls;
    if (hs.tls()) {
        const auto psk = hs.tls_psk();
        base::Status st = wanlink::Tls::handshake(fd, true, psk.data(),
                                                  std::max<int64_t>(1, deadline - (base::now_ns() / 1000000)), &tls);
        if (!st.ok()) {
            WANMPI_LOG(warn, "reconnect to %s: %s", peer_name(p.rank).c_str(), st.message().c_str());
            return 0;
        }
    }
    WANMPI_LOG(info, "reconnect to %s: connected in %lld ms, handshake%s in %lld ms",
               peer_name(p.rank).c_str(), (long long)(connected_ms - now),
               tls ? " and TLS" : "", (long long)(base::now_ns() / 1000000 - connected_ms));
    return resume_on(p, std::move(f), std::move(tls), hs.peer().recv_off) ? 1 : 0;
}

// Connections on the host socket after the dance: peers reconnecting, or strangers. Each must
// send a host rank that is a higher peer of ours able to resume, then prove it holds the job's
// key in the link handshake; anything else is logged and closed, and the job goes on.
int Wan::serve_reconnects() {
    const int64_t now_ns = base::now_ns();
    if (incoming_.empty() && now_ns - accept_checked_ < 1'000'000) return 0;
    accept_checked_ = now_ns;
    const int64_t now = now_ns / 1'000'000;
    int n = 0;
    for (;;) {
        int fd = ::accept4(links_.listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        Pending c;
        c.fd = base::Fd(fd);
        c.from = base::peer_text(fd);
        base::set_nodelay(fd);
        // Its handshake bytes must wake a sleeping rank (closing the fd takes it out again).
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = kListenTag;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
        c.deadline = now + 10'000;
        if (incoming_.size() >= 64) {
            WANMPI_LOG(warn, "host socket: too many unproven connections; closing the one from %s",
                       incoming_.front().from.c_str());
            incoming_.erase(incoming_.begin());
        }
        incoming_.push_back(std::move(c));
    }
    for (size_t k = 0; k < incoming_.size();) {
        Pending& c = incoming_[k];
        auto drop = [&](const std::string& why) {
            WANMPI_LOG(warn, "host socket: refused the connection from %s: %s", c.from.c_str(),
                       why.c_str());
            incoming_.erase(incoming_.begin() + long(k));
        };
        if (now > c.deadline) {
            drop("no link handshake within 10 s");
            continue;
        }
        while (c.got < 4) {
            ssize_t r = ::recv(c.fd.get(), c.rank + c.got, 4 - c.got, MSG_DONTWAIT);
            if (r > 0) {
                c.got += size_t(r);
                continue;
            }
            break;
        }
        if (c.got < 4) {
            ++k;
            continue;
        }
        if (!c.hs) {
            const uint32_t r = base::get_be32(c.rank);
            if (r >= uint32_t(job_.size()) || int(r) <= me_ || !peers_[r].alive || !peers_[r].resume) {
                drop("it claims host " + std::to_string(r) + ", which does not reconnect to this host");
                continue;
            }
            c.peer = int(r);
            wanlink::Hello h = hello_for(peers_[r]);
            c.hello_recv_off = h.recv_off;
            c.hs = std::make_unique<wanlink::LinkHandshake>(
                false, links_.link.keyed ? &links_.link.key : nullptr, links_.link.session.data(), h, r);
        }
        auto res = c.hs->step(c.fd.get());
        if (res == wanlink::LinkHandshake::again) {
            ++k;
            continue;
        }
        if (res == wanlink::LinkHandshake::failed) {
            drop("claiming to be " + peer_name(c.peer) + ": " + c.hs->reason());
            continue;
        }
        Peer& p = peers_[size_t(c.peer)];
        std::unique_ptr<wanlink::Tls> tls;
        if (c.hs->tls()) {
            const auto psk = c.hs->tls_psk();
            base::Status st = wanlink::Tls::handshake(c.fd.get(), false, psk.data(), 5000, &tls);
            if (!st.ok()) {
                drop("TLS: " + st.message());
                continue;
            }
        }
        if (!p.alive) {
            incoming_.erase(incoming_.begin() + long(k));
            continue;
        }
        const uint64_t skip = p.recv_off - c.hello_recv_off;
        const uint64_t peer_off = c.hs->peer().recv_off;
        epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd.get(), nullptr);
        base::Fd fd = std::move(c.fd);
        incoming_.erase(incoming_.begin() + long(k));
        n += resume_on(p, std::move(fd), std::move(tls), peer_off, skip) ? 1 : 0;
    }
    return n;
}

}  // namespace

std::unique_ptr<WanTransport> make_wan_transport(const impi::Job& job, int my_rank,
                                                 std::vector<base::Fd> conns,
                                                 const std::vector<int>& peers, WanLinks links) {
    return std::make_unique<Wan>(job, my_rank, std::move(conns), peers, std::move(links));
}

}  // namespace wanmpi::core
