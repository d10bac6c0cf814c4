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
//   zstd   - a DATA/DATASYNC payload may travel compressed (wanlink/compress.hpp, negotiated per
//            link; impi_wire.hpp compressed_mark): compress_out just before the packet's first
//            byte is written, inflate when its last byte was read.
// Request ids are the engine's wire ids (generation << 32 | index), unique among active
// requests, which is what IMPI asks of pk_srqid / pk_drqid.
//
// Head-of-line blocking (issue 14; the argument in docs/design/lanes.md): with
// WANMPI_WAN_PRIORITY the DATA of long messages already granted (after SYNCACK) waits in `bulk`
// and is cut into wire packets of at most `frag` bytes, one at a time, only when `wire` is
// empty; every other packet (eager messages, DATASYNC, SYNCACK, CANCEL*, PROTOACK) is queued
// before cuts not yet started. Only granted DATA moves, and only relative to other packets:
//  - it is never matched (found by pk_drqid), so matching sees DATA/DATASYNC in send order;
//  - fragments keep their order (the receiver places them by its running offset); on a link
//    of several lanes each carries its offset (pk_count) and a frame may be striped over the
//    lanes (`Peer::stripe`, WANMPI_WAN_STRIPE), its cuts arriving in any order;
//  - everything else keeps its order, so a CANCEL still follows the message it names;
//  - FINI waits for `bulk` to empty; a reordered packet was never partly written, so the byte
//    stream (and replay after a reconnect, which works on its offsets) is unaffected.
// IMPI allows DATA fragments of any pk_len <= maxlen, so the peer may be any IMPI.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/tunables.hpp"
#include "core/wan_impl.hpp"

namespace wanmpi::core {
namespace wan_internal {

static base::Tunable<bool> t_priority(
    "WAN", "PRIORITY", true,
    "Small packets to another cluster (eager messages, rendezvous and cancel packets, "
    "acknowledgements) pass the queued data of long messages the receiver already granted, "
    "which is cut into packets of WANMPI_WAN_FRAGMENT bytes as the socket takes them: a ping "
    "during a long transfer waits for at most one such packet (plus WANMPI_WAN_NOTSENT_LOWAT). "
    "MPI's ordering is kept (docs/design/lanes.md). 0: one queue in send order.",
    base::Level::tuner);
static base::Tunable<int64_t> t_fragment(
    "WAN", "FRAGMENT", -1,
    "Payload bytes per IMPI DATA packet of a long message after its first (k/m suffixes; at most "
    "IMPI_C_DATALEN). Once a packet is started nothing passes it on the connection. -1 (auto): "
    "2 x (the connection's window + WANMPI_WAN_NOTSENT_LOWAT) / IMPI_H_HIWATER, at least 64 "
    "KiB, so that flow control's window of HIWATER packets still covers the path. 0: "
    "IMPI_C_DATALEN (the plain IMPI fragment).",
    base::Level::tuner);

static base::Tunable<int64_t> t_twice(
    "WAN", "TWICE", -1,
    "Eager messages to another cluster of at most this many bytes (k/m suffixes) go on two "
    "lanes of the link (the first two in use); the receiver keeps the copy that "
    "comes first: a segment lost on one lane then delays the message only if the other copy is "
    "lost as well, instead of waiting for TCP's loss recovery. Costs their bytes twice. Needs "
    "two lanes in use (WANMPI_WAN_LANES); never in a rate-managed collective. -1 (auto): "
    "16 KiB while a lane of the link lost a segment in the last 10 s (TCP_INFO: a "
    "retransmission the peer did not report as a duplicate), else off. "
    "0: off.",
    base::Level::tuner);

bool priority_enabled() { return t_priority.get(); }
int64_t fragment_setting() { return t_fragment.get(); }
int64_t twice_setting() { return t_twice.get(); }

// Small messages on two lanes (docs/design/lanes.md "Small messages on two lanes"): every
// message sent twice goes on the first two lanes in use, whatever its stream's lane, so those
// two connections carry all of them and stay as busy as one connection would be (each lane
// of its own, a sparse stream's connection recovered losses late and BBR paced it to the few
// Mbit/s it had delivered: the farm's 8 KiB tasks took 26 ms one way instead of 12). Both
// copies carry the same pk_seqnum; the receiver keeps the first and matches it only once every
// lower number of its (source, communicator) arrived (FL_STRICT), since an earlier message of
// its stream may still be on the stream's own lane. Only plain eager DATA of user
// communicators: a DATASYNC would be answered twice, a long message is not small, and a
// collective's lean receives (engine lean_post) do not apply the strict rule.
bool Wan::twice_lane(Peer& p, const Hdr& h, uint64_t len, uint8_t* first, uint8_t* second) {
    if (twice_setting_ == 0 || p.k() < 2 || (h.flags & FL_SYNC) || (h.ctx & 1)) return false;
    if (rate_ && flows_ > 1) return false;  // a managed call's budget is sized for one copy
    const uint64_t max = twice_setting_ > 0 ? uint64_t(twice_setting_) : kTwiceAuto;
    if (len > max) return false;
    const uint8_t a = p.route[0], b = p.route[1];
    if (a == b) return false;  // one lane in use
    if (twice_setting_ < 0 && !lossy(p)) return false;
    *first = a;
    *second = b;
    return true;
}

// Whether the link lost segments lately: its lanes' losses grew in the last kLossyFor (TCP_INFO
// read at most every kLossCheck; a retransmission the peer reported as a duplicate was no loss:
// wanlink::LossWatch).
bool Wan::lossy(Peer& p) {
    const int64_t now = base::now_ns();
    if (now - p.loss_at >= kLossCheck) {
        p.loss_at = now;
        uint64_t r = 0, d = 0;
        for (const auto& l : p.lanes) {
            if (l->fd < 0) continue;
            const wanlink::TcpInfo t = wanlink::read_tcp_info(l->fd);
            if (!t.ok) continue;
            r += t.retrans;
            d += t.dsack_dups;
        }
        if (p.losses.update(r, d)) p.lossy_until = now + kLossyFor;
    }
    return now < p.lossy_until;
}

// The copy of a message sent twice, with its own payload. It goes through `held` behind the
// message (so it never passes a message the window holds back) but is not counted.
Out Wan::twin_of(const Out& o) {
    Out c;
    std::memcpy(c.hdr, o.hdr, sizeof c.hdr);
    if (o.len) {
        c.own.reset(new char[o.len]);
        std::memcpy(c.own.get(), o.payload, o.len);
        c.payload = c.own.get();
    }
    c.len = o.len;
    c.zcand = o.zcand;
    c.lane = o.twice_lane;
    c.counted = false;  // flow control counts the message once (on_packet_header)
    c.twin = true;
    return c;
}


uint8_t Wan::lane_for(Peer& p, const Hdr& h) const {
    if (p.k() <= 1) return 0;
    switch (h.type) {
    case F_EAGER:
    case F_RTS:
    case F_CANCEL_REQ:  // the engine names the message's context and tag: it follows it
        // A collective context (odd: core/comm.hpp) is one stream whatever its tags, which are
        // per-call sequence numbers and not streams of the user's: by tag, each call of a
        // communicator went out on another lane, so its small blocks met a lane idle since the
        // call before last and, in a rate-managed call, two lanes to one peer could each send
        // at the peer's whole part of the budget (docs/design/lanes.md "Which lane a packet
        // takes"). Large blocks are still striped over every lane where striping is on.
        return p.route[wanlink::lane_of(h.ctx, (h.ctx & 1) ? 0 : h.tag, p.k())];
    case F_CTS: {
        auto it = p.firsts.find(h.sreq);
        return it != p.firsts.end() ? answer_lane_of(p, it->second.lane) : 0;
    }
    case F_DATA: {
        auto it = p.long_sends.find(h.rreq);
        return it != p.long_sends.end() ? it->second.lane : 0;
    }
    case F_SYNC_ACK:
    case F_CANCEL_RESP: {
        auto it = p.answer_lane.find(h.sreq);
        return it != p.answer_lane.end() ? answer_lane_of(p, it->second) : 0;
    }
    default:
        return 0;
    }
}

bool Wan::translate(Peer& p, const Hdr& h, const char* payload, uint64_t len, Out& o) {
    Packet pk;
    o.lane = lane_for(p, h);
    switch (h.type) {
    case F_EAGER:
        pk = message_packet(p, (h.flags & FL_SYNC) ? impi::PK_DATASYNC : impi::PK_DATA, h, len);
        if (twice_lane(p, h, len, &o.lane, &o.twice_lane)) {
            pk.count = impi::kSentTwice;
            o.twice = true;
            p.strict_out = true;
        } else if (p.strict_out && !(h.ctx & 1)) {
            pk.count = impi::kStrictOrder;
        }
        if (h.flags & FL_SYNC) p.sends[h.sreq] = SendState{false, h.size, len, o.lane};
        o.payload = payload;
        o.len = len;
        break;
    case F_RTS: {
        // IMPI's first fragment is maxlen bytes; a wanmpi peer takes any length (it resumes at
        // what the DATASYNC carried), so with priority on it is one wire fragment: a long
        // message's DATASYNC then delays small packets no more than its later DATA does.
        uint64_t first = std::min<uint64_t>(h.size, maxlen_);
        if (priority_ && size_t(p.rank) < links_.results.size() &&
            links_.results[size_t(p.rank)].ext)
            first = std::min<uint64_t>(first, frag_of(*p.lanes[o.lane]));
        pk = message_packet(p, impi::PK_DATASYNC, h, first);
        if (p.strict_out && !(h.ctx & 1)) pk.count = impi::kStrictOrder;
        p.sends[h.sreq] = SendState{true, h.size, first, o.lane};
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
        p.answer_lane.erase(h.sreq);
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
        // Links of several lanes: the payload's offset in the message, in pk_count (a QoS field
        // plain IMPI leaves 0), since striped cuts arrive in any order (cut_bulk sets each).
        if (p.k() > 1) pk.count = int64_t(off + skip);
        o.payload = payload + skip;
        o.len = len - skip;
        break;
    }
    case F_SYNC_ACK:
        pk = base_packet(p, impi::PK_SYNCACK);
        pk.srqid = h.sreq;
        p.answer_lane.erase(h.sreq);
        break;
    case F_CANCEL_REQ:
        pk = base_packet(p, impi::PK_CANCEL);
        pk.srqid = h.sreq;
        break;
    case F_CANCEL_RESP:
        pk = base_packet(p, (h.flags & FL_YES) ? impi::PK_CANCELYES : impi::PK_CANCELNO);
        pk.srqid = h.sreq;
        if (h.flags & FL_YES) p.firsts.erase(h.sreq);  // the engine dropped it: so do we
        p.answer_lane.erase(h.sreq);
        break;
    default:  // CREDIT (IMPI flow control replaces it), FIN (no single copy across clusters)
        return false;
    }
    // Each packet's payload is compressed on its own (a fragment of a long message too), so
    // rendezvous, flow control, replay and impi-relay see whole IMPI packets as before.
    o.zcand = p.zstd && (pk.type == impi::PK_DATA || pk.type == impi::PK_DATASYNC) &&
              o.len >= zpol_.min_bytes;
    impi::encode_packet(pk, o.hdr);
    return true;
}

uint64_t Wan::link_rate(Lane& p) {
    if (rate_) return rate_;  // this rank's share of WANMPI_WAN_RATE (set_rate)
    if (uint64_t r = wanlink::wan_rate_Bps()) return r;
    // Measured: the connection's delivery rate. A sender busy compressing is app-limited and
    // its samples fall below what the link can do, which would argue for ever more
    // compression: keep the best recent sample, decaying slowly.
    const int64_t now = base::now_ns();
    if (now - p.link_at >= 100000000) {
        p.link_at = now;
        const wanlink::TcpInfo t = wanlink::read_tcp_info(p.fd);
        if (t.ok) p.link_Bps = std::max(t.delivery_Bps, p.link_Bps - p.link_Bps / 8);
    }
    return p.link_Bps;
}

void Wan::compress_out(Lane& p, Out& o) {
    if (!o.zcand) return;
    o.zcand = false;
    const uint64_t n = o.len;
    const int level = zpol_.level;
    const bool automatic = zpol_.mode == wanlink::CompressPolicy::automatic;
    const bool sampled = n > wanlink::Compressor::kSampleChunk * wanlink::Compressor::kSampleChunks;
    // The filter: fixed by the user, or re-chosen every kFilterProbe packets from samples of
    // each (its sample ratio then serves auto's rule below as well).
    double ratio = -1;
    if (!p.peer->zfilter) {
        p.zf = 0;
    } else if (!zf_auto_) {
        p.zf = uint8_t(zf_fixed_);
    } else if (p.zf_probe == 0) {
        p.zf = uint8_t(zc_.best_filter(o.payload, size_t(n), level,
                                       (1u << wanlink::kFilters) - 1, &ratio));
        p.zf_probe = kFilterProbe;
        if (!sampled) ratio = -1;  // small payloads are judged by their whole compression
    }
    if (p.zf_probe) --p.zf_probe;
    const auto filter = wanlink::Filter(p.zf);
    if (automatic && sampled) {
        if (ratio < 0) ratio = p.zlast;
        if (ratio < 0) ratio = zc_.sample_ratio(o.payload, n, level, filter);
        p.zlast = -1;
        if (!wanlink::worth_compressing(ratio, double(link_rate(p)), zc_.speed_Bps())) return;
    }
    // Room for less than the raw bytes: zstd gives up (0) when the output would not be smaller
    // (auto: 10 % smaller, what its rule asked for), and the packet goes as it is.
    const size_t cap = automatic ? size_t(n - n / 10) : size_t(n - 1);
    std::unique_ptr<char[]> buf(new char[cap]);
    const size_t c = zc_.compress(o.payload, size_t(n), buf.get(), cap, level, filter);
    if (c == 0) return;
    // A small payload compressed whole (no sample): the rate part of auto's rule still applies.
    if (automatic && !wanlink::worth_compressing(double(c) / double(n), double(link_rate(p)),
                                                 zc_.speed_Bps()))
        return;
    p.zlast = double(c) / double(n);
    o.own = std::move(buf);
    o.payload = o.own.get();
    o.len = c;
    impi::mark_compressed(o.hdr, uint32_t(c), uint32_t(n), p.zf);
    p.ctr.z_raw_sent += n;
    p.ctr.z_sent += c;
}

bool Wan::inflate(Lane& p) {
    if (!p.zin) return true;
    p.zin = false;
    const uint64_t raw = p.pk.len;
    char* out = p.dst;
    if (p.elen != raw) {  // a truncating receive takes only the first elen bytes
        p.zraw.resize(raw);
        out = p.zraw.data();
    }
    // A filtered payload decodes into scratch first, then the filter is undone into `out`.
    char* dec = out;
    if (p.zin_filter) {
        zfbuf_.resize(raw);
        dec = zfbuf_.data();
    }
    const std::string e = zd_.run(p.zbuf.data(), size_t(p.wlen), dec, size_t(raw));
    if (!e.empty()) {
        fail(*p.peer, "malformed compressed IMPI payload from " + lane_name(p) + ": " + e);
        return false;
    }
    if (p.zin_filter) wanlink::filter_decode(wanlink::Filter(p.zin_filter), dec, size_t(raw), out);
    if (out != p.dst) std::memcpy(p.dst, out, p.elen);
    p.ctr.z_recv += p.wlen;
    p.ctr.z_raw_recv += raw;
    return true;
}

SendResult Wan::try_send(int peer, const uint8_t* hb, const void* payload, uint64_t len) {
    Peer& p = peers_[size_t(peer)];
    if (!p.alive) return SendResult::failed;
    Hdr h = decode(hb);
    if (h.type == F_CREDIT || h.type == F_FIN) return SendResult::done;
    if (h.type == F_DATA) return SendResult::would_block;  // post_send queues or cuts it
    Lane& l = *p.lanes[lane_for(p, h)];
    if (!can_send_now(p, l)) return SendResult::would_block;
    Out o;
    if (!translate(p, h, static_cast<const char*>(payload), len, o)) return SendResult::done;
    if (o.twice) {
        // Both copies through `held` (their lanes are not l), each with its own payload: the
        // caller's buffer is ours only during this call.
        Out a = twin_of(o);
        a.lane = o.lane;
        p.lanes[o.lane]->ctr.twice_sent++;
        p.lanes[o.twice_lane]->ctr.twice_sent++;
        p.held.push_back(std::move(a));
        p.held.push_back(twin_of(o));
        admit(p);
        return SendResult::done;
    }
    p.sent++;  // every translated frame is a counted packet
    compress_out(l, o);
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
    ssize_t n = allowed ? io_writev(l, iov, niov) : 0;
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            broken(l, "sending to " + lane_name(l) + ": " + io_error(l));
            if (!p.alive) return SendResult::failed;
        }
        n = 0;
    }
    pacer_.consume(size_t(n));
    l.ctr.bytes_sent += uint64_t(n);
    if (uint64_t(n) == total) {
        l.ctr.msgs_sent++;
        return SendResult::done;
    }
    o.off = uint64_t(n);
    if (o.len && !o.own) {
        o.own.reset(new char[o.len]);
        std::memcpy(o.own.get(), o.payload, o.len);
        o.payload = o.own.get();
    }
    l.wire.push_back(std::move(o));
    return SendResult::done;
}

void Wan::post_send(int peer, SendOp* op) {
    Peer& p = peers_[size_t(peer)];
    // (A lane that is down keeps its queue: the stream resumes after the reconnect.)
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
    Lane& l = *p.lanes[o.lane];
    if (h.type == F_DATA) {
        Bulk b;
        impi::decode_packet(o.hdr, maxlen_, &b.pk);
        b.payload = o.payload;
        b.len = o.len;
        b.op = op;
        b.base = uint64_t(b.pk.count);
        if (priority_) {
            retune(l);
            if (stripe_now(p, l, b)) {
                auto st = std::make_unique<Striped>();
                st->op = op;
                b.st = st.get();
                b.op = nullptr;
                p.striped[st.get()] = std::move(st);
                p.stripe.push_back(b);
                return;
            }
            l.bulk.push_back(b);
            return;
        }
        // One queue in send order, but packets of `frag` bytes all the same (measured apart).
        const uint64_t frag = frag_of(l);
        while (b.cut < b.len) {
            Out c;
            const uint64_t n = std::min(frag, b.len - b.cut);
            b.pk.len = uint32_t(n);
            if (p.k() > 1) b.pk.count = int64_t(b.base + b.cut);
            impi::encode_packet(b.pk, c.hdr);
            c.payload = b.payload + b.cut;
            c.len = n;
            c.zcand = p.zstd && n >= zpol_.min_bytes;
            c.lane = o.lane;
            b.cut += n;
            if (b.cut == b.len) c.op = op;
            p.held.push_back(std::move(c));
        }
        admit(p);
        return;
    }
    if (o.twice) {
        p.lanes[o.lane]->ctr.twice_sent++;
        p.lanes[o.twice_lane]->ctr.twice_sent++;
        Out c = twin_of(o);
        p.held.push_back(std::move(o));
        p.held.push_back(std::move(c));
        admit(p);
        return;
    }
    p.held.push_back(std::move(o));
    admit(p);
}

uint64_t Wan::frag_of(Lane& l) {
    if (!l.frag) retune(l);
    return l.frag;
}

void Wan::retune(Lane& p) {
    const int64_t now = base::now_ns();
    if (p.frag && p.lowat_fd == p.fd && now - p.tuned_at < 10000000) return;
    p.tuned_at = now;
    uint64_t win = 0;
    uint32_t srtt = 0;
    const bool known = wanlink::socket_window(p.fd, &win, &srtt);
    int64_t lowat = lowat_setting_;
    if (lowat < 0) lowat = wanlink::auto_notsent_lowat(known ? win : 0, known ? srtt : 0);
    if (lowat > 0 && p.fd >= 0 && (known || lowat_setting_ > 0) &&
        (lowat != p.lowat || p.lowat_fd != p.fd)) {
        if (int e = wanlink::set_notsent_lowat(p.fd, lowat); e && !lowat_said_) {
            lowat_said_ = true;
            WANMPI_LOG(info, "TCP_NOTSENT_LOWAT not applied (%s): the kernel may queue a whole "
                             "socket buffer ahead of small messages", std::strerror(e));
        }
        p.lowat = lowat;
    }
    p.lowat_fd = p.fd;
    uint64_t frag = maxlen_;
    if (frag_setting_ > 0) {
        frag = uint64_t(frag_setting_);
    } else if (frag_setting_ < 0) {
        const uint64_t need = 2 * (win + uint64_t(std::max<int64_t>(lowat, 0))) / hiwater_;
        frag = std::max<uint64_t>(need, 64 << 10);
    }
    p.frag = std::clamp<uint64_t>(frag, 1, maxlen_);
}

// Striping (docs/design/lanes.md): on when asked, on a link with two lanes in use or more, for a
// frame of a message big enough to give every lane a cut; auto: where one connection falls
// short of the path, i.e. a loss-based congestion control (not BBR: at 1 % loss one BBR
// connection already filled 200 Mbit/s, and striping only put the transfer on the lanes of the
// other streams, tripling a ping's round trip during it: docs/benchmarks.md "Striping").
// Never during a rate-managed collective (flows_ > 1, no bucket): there each lane of a peer is
// paced to the peer's whole part of the budget (one stream per peer and step), so k striped
// lanes would send k parts and overrun the link the caps were sized for (Alltoallv of 1 MiB
// per pair, cubic, 4 lanes: 3.3 % of packets dropped against 0.1 % unstriped). The caps keep
// the queue from overflowing, which is the loss striping works around.
bool Wan::stripe_now(const Peer& p, Lane& l, const Bulk& b) {
    if (stripe_ == wanlink::Stripe::off || p.k() < 2) return false;
    if (rate_ && flows_ > 1) return false;
    unsigned used = 0;
    for (const auto& x : p.lanes) used += x->dropped ? 0 : 1;
    if (used < 2 || b.pk.msglen < uint64_t(used) * frag_of(l)) return false;
    if (stripe_ == wanlink::Stripe::on) return true;
    if (l.fd < 0) return false;
    const std::string cc = wanlink::socket_cc(l.fd);
    return !cc.empty() && cc.rfind("bbr", 0) != 0;
}

bool Wan::cut_bulk(Peer& p, Lane& l) {
    if (!can_cut(p, l)) return false;
    retune(l);
    // The lane's own (a message's DATA on its lane) first, then striped frames.
    std::deque<Bulk>& q = !l.bulk.empty() ? l.bulk : p.stripe;
    Bulk& b = q.front();
    Out o;
    const uint64_t n = std::min<uint64_t>(l.frag, b.len - b.cut);
    b.pk.len = uint32_t(n);
    if (p.k() > 1) b.pk.count = int64_t(b.base + b.cut);
    impi::encode_packet(b.pk, o.hdr);
    o.payload = b.payload + b.cut;
    o.len = n;
    o.bulk = true;
    o.lane = l.idx;
    o.zcand = p.zstd && n >= zpol_.min_bytes;  // each cut is a packet of its own
    o.st = b.st;
    if (b.st) b.st->unwritten++;
    b.cut += n;
    if (b.cut == b.len) {
        o.op = b.op;
        if (b.st) b.st->all_cut = true;
        q.pop_front();
    }
    p.sent++;
    l.wire.push_back(std::move(o));
    return true;
}

int Wan::write_some(Lane& l) {
    Peer& p = *l.peer;
    int done = 0;
    if (l.down || l.suspended || l.fd < 0) return 0;
    if (!l.wire.empty() || !l.bulk.empty()) retune(l);
    if (l.hold_until) {
        if (held_back(l)) return 0;
        l.hold_until = 0;
    }
    if (l.tls && l.tls->backlog() > 0) {
        if (l.tls->flush() < 0) {
            broken(l, "sending to " + lane_name(l) + ": " + io_error(l));
            return 0;
        }
        if (l.tls->backlog() > 0) return 0;
    }
    // After a reconnect: first what the peer had not received, from the log.
    while (p.alive && !l.down && l.replay_pos < l.log.end()) {
        iovec iov[32];
        int n = l.log.iov_from(l.replay_pos, iov, 32);
        ssize_t w = l.tls ? l.tls->writev(iov, n) : base::send_iov(l.fd, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return done;
            broken(l, "resending to " + lane_name(l) + ": " + io_error(l));
            return done;
        }
        l.replay_pos += uint64_t(w);
    }
    while (p.alive && !l.down && !(l.hold_until && held_back(l))) {
        if (l.wire.empty() && !cut_bulk(p, l)) break;
        // A full log takes no new data until the peer confirms some; its confirmations
        // (PK_WAN_ACK, queued at the front) still go, or two full logs would wait on each other.
        if (l.resume && l.log.full() && l.wire.front().off == 0 && !l.wire.front().is_ack) break;
        iovec iov[32];
        int n = 0;
        size_t queued = 0;
        for (auto it = l.wire.begin(); it != l.wire.end() && n < 31; ++it) {
            if (it->zcand) {
                // Compress just ahead of the socket, not the whole queue before the first byte.
                if (n > 0 && queued >= kStage) break;
                compress_out(l, *it);
            }
            queued += size_t(sizeof it->hdr + it->len - it->off);
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
        const bool warm = warming(l);
        if (warm) trim(kWarmChunk);
        ssize_t w = io_writev(l, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
            broken(l, "sending to " + lane_name(l) + ": " + io_error(l));
            break;
        }
        pacer_.consume(size_t(w));
        l.ctr.bytes_sent += uint64_t(w);
        if (warm && w > 0) l.hold_until = base::now_ns() + int64_t(1e9 * double(w) / double(cap_));
        uint64_t left = uint64_t(w);
        while (left > 0 || (!l.wire.empty() && l.wire.front().off ==
                                                   sizeof l.wire.front().hdr + l.wire.front().len)) {
            Out& o = l.wire.front();
            uint64_t rest = sizeof o.hdr + o.len - o.off;
            uint64_t take = std::min(rest, left);
            o.off += take;
            left -= take;
            if (o.off < sizeof o.hdr + o.len) break;
            if (o.op && o.op->on_complete) o.op->on_complete(o.op, true);
            if (o.st) striped_written(p, o.st);
            l.wire.pop_front();
            l.ctr.msgs_sent++;
            done++;
        }
    }
    return done;
}

void Wan::on_packet_header(Lane& l, transport::RecvSink& sink) {
    Peer& p = *l.peer;
    std::string err = impi::decode_packet(l.hdr, maxlen_, &l.pk);
    if (!err.empty()) {
        fail(p, "malformed IMPI packet from " + lane_name(l) + ": " + err);
        return;
    }
    l.wlen = l.pk.len;
    l.zin = false;
    uint32_t raw = 0;
    std::string zerr;
    if (impi::compressed_len(l.pk, maxlen_, &raw, &zerr, &l.zin_filter)) {
        if (!p.zstd || (l.zin_filter && !p.zfilter)) {
            fail(p, "IMPI packet from " + lane_name(l) + " is marked compressed" +
                        (l.zin_filter ? " with a filter" : "") +
                        " on a connection that did not negotiate it");
            return;
        }
        if (!zerr.empty()) {
            fail(p, "malformed compressed IMPI packet from " + lane_name(l) + ": " + zerr);
            return;
        }
        l.zin = true;
        l.pk.len = raw;  // from here on, the packet's length is the raw one
    }
    const Packet& pk = l.pk;
    l.got = 0;
    l.dst = nullptr;
    l.elen = 0;
    l.mode = Lane::In::discard;
    if (pk.type == impi::PK_WAN_LANES) {
        if (p.k() <= 1) {
            fail(p, "IMPI packet from " + lane_name(l) + ": lanes given up on a link of one lane");
            return;
        }
        on_lanes_dropped(p, pk.srqid);
        return;
    }
    if (pk.type == impi::PK_WAN_ACK) {
        if (!l.resume) {
            fail(p, "IMPI packet from " + lane_name(l) + ": a stream acknowledgement on a "
                    "connection that did not negotiate resuming");
            return;
        }
        if (!l.log.ack(pk.srqid))
            fail(p, "IMPI packet from " + lane_name(l) + " acknowledges " +
                    std::to_string(pk.srqid) + " bytes, but only " + std::to_string(l.log.end()) +
                    " were sent");
        return;
    }
    // A message sent on two lanes (twice_lane): the first copy in is the message, the second
    // is read and dropped. Flow control counts the message once, at its first copy (the sender
    // counts the first, not its copy: both always arrive, so the counts agree).
    bool second = false;
    if (pk.count == impi::kSentTwice && p.k() > 1) {
        if (pk.type != impi::PK_DATA || pk.seqnum == 0 || pk.drqid != 0 || pk.len != pk.msglen ||
            pk.cid > 0xffffffffu) {
            fail(p, "IMPI packet from " + lane_name(l) + " marked as sent twice is not a "
                    "numbered eager DATA packet");
            return;
        }
        const auto key = std::make_pair(uint32_t(pk.cid), pk.seqnum);
        second = p.twice_seen.erase(key) > 0;
        if (second) l.ctr.twice_dropped++;
        else p.twice_seen.insert(key);
    }
    bool counted = pk.type != impi::PK_PROTOACK && pk.type != impi::PK_FINI && !second;
    if (counted && ++p.rcvd >= ackmark_) {
        p.rcvd -= ackmark_;
        send_protoack(p);
    }
    if (pk.type != impi::PK_DATA && pk.type != impi::PK_DATASYNC) return;
    if (pk.cid > 0xffffffffu) {
        WANMPI_LOG(warn, "IMPI packet from %s with context id %llu (not one of ours); dropped",
                   lane_name(l).c_str(), (unsigned long long)pk.cid);
        return;
    }
    // pk_seqnum orders matching packets across lanes (message_packet); on a link of one lane
    // it means nothing to us (another IMPI may use the QoS field its own way).
    if (p.k() <= 1) l.pk.seqnum = 0;
    Hdr h;
    if (pk.type == impi::PK_DATA && pk.drqid != 0) {
        // A later fragment of a long message: no matching, found by drqid.
        auto it = p.long_recvs.find(pk.drqid);
        if (it == p.long_recvs.end()) return;  // receive gone (failed/truncated): discard
        LongRecv& lr = it->second;
        // Where it goes: on a link of several lanes the sender says (pk_count: striped cuts
        // arrive in any order); else fragments come in order. lr.off counts the bytes in.
        const uint64_t at = p.k() > 1 ? uint64_t(pk.count) : lr.off;
        if (p.k() > 1 && (pk.count < 0 || at + pk.len > lr.size)) {
            fail(p, "IMPI DATA packet from " + lane_name(l) + " for bytes " + std::to_string(at) +
                        ".." + std::to_string(at + pk.len) + " of a " + std::to_string(lr.size) +
                        "-byte message");
            return;
        }
        uint64_t n = at < lr.want ? std::min<uint64_t>(pk.len, lr.want - at) : 0;
        h.type = F_DATA;
        h.rreq = pk.drqid;
        h.addr = at;
        lr.off += pk.len;
        if (lr.off >= lr.size) p.long_recvs.erase(it);
        if (n == 0) return;
        encode(h, l.ehdr);
        l.elen = n;
        l.mode = Lane::In::data;
    } else if (pk.len < pk.msglen) {
        // DATASYNC carrying the first fragment of a long message: keep it, offer the engine an
        // RTS; its CTS becomes our SYNCACK.
        if (pk.type != impi::PK_DATASYNC) {
            fail(p, "IMPI DATA packet from " + lane_name(l) +
                        " with pk_len < pk_msglen and no drqid");
            return;
        }
        l.mode = Lane::In::first;
        l.first_buf.resize(pk.len);
        l.dst = l.first_buf.data();
        l.elen = pk.len;
        return;
    } else {
        if (pk.len != pk.msglen) {
            fail(p, "IMPI packet from " + lane_name(l) + " has pk_len " +
                        std::to_string(pk.len) + " > pk_msglen " + std::to_string(pk.msglen));
            return;
        }
        if (second) return;  // its payload is read and discarded (mode discard)
        h = match_hdr(F_EAGER, pk);
        h.flags = pk.type == impi::PK_DATASYNC ? FL_SYNC : 0;
        if (strict_in(p, pk)) h.flags |= FL_STRICT;
        if (pk.type == impi::PK_DATASYNC && p.k() > 1) p.answer_lane[pk.srqid] = l.idx;
        encode(h, l.ehdr);
        l.elen = pk.len;
        l.mode = Lane::In::eager;
    }
    void* dst = sink.on_header_at(l.rank, l.idx, l.ehdr, l.elen);
    if (!dst && l.elen > 0) {
        l.tmp.resize(l.elen);
        dst = l.tmp.data();
    }
    l.dst = static_cast<char*>(dst);
}

void Wan::on_packet_done(Lane& l, transport::RecvSink& sink) {
    Peer& p = *l.peer;
    const Packet& pk = l.pk;
    switch (pk.type) {
    case impi::PK_DATA:
    case impi::PK_DATASYNC:
        if (l.mode == Lane::In::eager || l.mode == Lane::In::data) {
            sink.on_frame_at(l.rank, l.idx, l.ehdr, l.dst, l.elen);
        } else if (l.mode == Lane::In::first) {
            p.firsts[pk.srqid] = Peer::First{std::move(l.first_buf), pk.msglen, l.idx};
            if (p.k() > 1) p.answer_lane[pk.srqid] = l.idx;
            l.first_buf = {};
            Hdr rts = match_hdr(F_RTS, pk);
            if (strict_in(p, pk)) rts.flags |= FL_STRICT;
            deliver_ctrl(l, rts, sink);
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
            p.long_sends[pk.drqid] = LongSend{s.first, s.size, pk.srqid, s.lane};
        }
        deliver_ctrl(l, h, sink);
        break;
    }
    case impi::PK_CANCEL: {
        if (p.k() > 1) p.answer_lane[pk.srqid] = l.idx;
        Hdr h;
        h.type = F_CANCEL_REQ;
        h.sreq = pk.srqid;
        deliver_ctrl(l, h, sink);
        break;
    }
    case impi::PK_CANCELYES:
    case impi::PK_CANCELNO: {
        if (pk.type == impi::PK_CANCELYES) p.sends.erase(pk.srqid);
        Hdr h;
        h.type = F_CANCEL_RESP;
        h.flags = pk.type == impi::PK_CANCELYES ? FL_YES : 0;
        h.sreq = pk.srqid;
        deliver_ctrl(l, h, sink);
        break;
    }
    case impi::PK_FINI:
        l.fini_rcvd = true;
        break;
    default:
        break;
    }
    l.in_payload = false;
    l.hdr_got = 0;
}

// Reads what the socket has for one lane (bounded, so one busy lane cannot starve the others)
// and delivers whole packets. Returns the number of packets handled.
int Wan::read_some(Lane& p, transport::RecvSink& sink) {
    Peer& pr = *p.peer;
    int handled = 0;
    rpos_ = rend_ = 0;
    uint64_t budget = 8u << 20;
    if (p.down || p.suspended || p.fd < 0) return 0;
    while (pr.alive && !p.down && budget > 0) {
        if (rpos_ == rend_) {
            // Big payload still to come: read it straight into its destination (a compressed
            // one into its staging buffer).
            char* to = p.zin ? p.zbuf.data() : p.dst;
            const uint64_t cap = p.zin ? p.wlen : p.elen;
            if (p.in_payload && to && p.got < cap && cap - p.got >= kStage / 2) {
                ssize_t n = io_recv(p, to + p.got, size_t(std::min(cap - p.got, budget)));
                if (n > 0) {
                    p.ctr.bytes_recv += uint64_t(n);
                    p.got += uint64_t(n);
                    budget -= std::min<uint64_t>(budget, uint64_t(n));
                    if (p.got == p.wlen) {
                        if (!inflate(p)) break;
                        on_packet_done(p, sink);
                        handled++;
                    }
                    continue;
                }
                if (n == 0) goto eof;
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
                goto error;
            }
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
        while (rpos_ < rend_ && pr.alive) {
            if (!p.in_payload) {
                size_t take = std::min(rend_ - rpos_, sizeof p.hdr - p.hdr_got);
                std::memcpy(p.hdr + p.hdr_got, rbuf_.data() + rpos_, take);
                rpos_ += take;
                p.hdr_got += take;
                if (p.hdr_got < sizeof p.hdr) break;
                on_packet_header(p, sink);
                if (!pr.alive) break;
                if (p.zin) {  // a compressed payload nobody wants is skipped, not decoded
                    if (p.dst && p.elen) p.zbuf.resize(p.wlen);
                    else p.zin = false;
                }
                p.ctr.msgs_recv++;
                p.in_payload = true;
                if (!impi::packet_has_payload(p.pk.type) || p.wlen == 0) {
                    on_packet_done(p, sink);
                    handled++;
                }
                continue;
            }
            uint64_t take = std::min<uint64_t>(rend_ - rpos_, p.wlen - p.got);
            char* to = p.zin ? p.zbuf.data() : p.dst;
            const uint64_t cap = p.zin ? p.wlen : p.elen;
            if (to && p.got < cap) {
                uint64_t in = std::min(take, cap - p.got);
                std::memcpy(to + p.got, rbuf_.data() + rpos_, in);
            }
            rpos_ += take;
            p.got += take;
            if (p.got == p.wlen) {
                if (!inflate(p)) break;
                on_packet_done(p, sink);
                handled++;
            }
        }
        // Unread staged bytes never outlive this call: the loop above consumes all of rbuf_.
    }
    return handled;
eof:
    if (p.fini_rcvd && !p.in_payload && p.hdr_got == 0) {
        // Orderly: the peer sent FINI on this lane and closed it. Once it closed them all, the
        // peer is gone (nothing more can be sent to it; not a failure).
        close_lane(p);
        p.open = false;
        bool any = false;
        for (const auto& l : pr.lanes) any = any || l->open;
        if (!any) pr.alive = false;
        return handled;
    }
    broken(p, "the connection to " + lane_name(p) + " closed without IMPI FINI (the rank or " +
              (impi::relay_of(pr.proc).empty() ? "its cluster died)" : "its cluster or the relay died)"));
    return handled;
error:
    // TLS reports a close without close_notify as an error; after the peer's FINI it is the
    // peer's orderly end all the same.
    if (p.fini_rcvd && !p.in_payload && p.hdr_got == 0) goto eof;
    broken(p, "receiving from " + lane_name(p) + ": " + io_error(p));
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
            if (!l.op && lp.alive && (lp.lanes[0]->in_payload || lp.lanes[0]->hdr_got > 0)) {
                // The engine keeps one inbound frame per peer and slot: a frame of ours (slot
                // 0) must not land between the header and the end of a packet being read on
                // lane 0. Next time.
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
    if (stall_ms_ > 0) n += watch_stalls();
    // Round robin over the peers, so that a limited budget is shared, not taken by the first.
    const size_t np = list_.size();
    if (np) rr_ = (rr_ + 1) % np;
    for (size_t i = 0; i < np; ++i) {
        const int r = list_[(rr_ + i) % np];
        Peer& p = peers_[size_t(r)];
        for (size_t j = 0; j < p.lanes.size() && p.alive; ++j) {
            Lane& l = *p.lanes[j];
            if (l.down) {
                n += reconnect_step(l);
                if (l.down) continue;
            }
            n += write_some(l);
            n += read_some(l, sink);
            if (l.resume && p.alive && !l.down && l.recv_off - l.acked_out >= wanlink::kAckEvery)
                queue_ack(l);
        }
        // PROTOACKs the reads queued (on lane 0), and granted DATA a PROTOACK let through
        for (size_t j = 0; j < p.lanes.size() && p.alive; ++j) {
            Lane& l = *p.lanes[j];
            if (!l.down && (!l.wire.empty() || can_cut(p, l))) n += write_some(l);
        }
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
// the busy sockets still sum to the budget, so the cluster stays within the link. With weights
// (set_weights: each peer's bytes in the call) the busy sockets share in proportion to them,
// so that they finish together and seldom need re-sharing (each re-share makes TCP ramp up to
// the new rate). Checked at most every millisecond (one ioctl per idle socket).
void Wan::share_caps() {
    const int64_t now = base::now_ns();
    if (now - shared_at_ < 1000000) return;
    shared_at_ = now;
    int busy = 0;
    uint64_t wsum = 0, wall = 0;
    busy_.assign(list_.size(), 0);
    for (size_t i = 0; i < list_.size(); ++i) {
        const int r = list_[i];
        const Peer& p = peers_[size_t(r)];
        if (!p.alive) continue;
        const uint64_t w = weight_.empty() ? 0 : weight_[size_t(r)];
        wall += w;
        bool b = !p.held.empty() || !p.stripe.empty();
        for (const auto& l : p.lanes)
            b = b || !l->wire.empty() || !l->bulk.empty() || wanlink::socket_unsent(l->fd) > 0;
        if (b) {
            ++busy;
            wsum += w;
            busy_[i] = 1;
        }
    }
    const uint64_t cap = wanlink::Pacer::socket_cap(rate_, std::clamp(busy, 1, flows_));
    if (weight_.empty()) {
        if (cap == cap_) return;
        cap_ = cap;
        for_lanes([&](Peer&, Lane& l) {
            if (l.fd >= 0) wanlink::set_socket_pacing(l.fd, cap);
        });
        return;
    }
    // Weighted: nothing queued anywhere yet (rendezvous grants on their way): all weights. An
    // idle socket gets the part it would have if it joined the busy ones now (a rendezvous
    // grant may arrive before the next pass), never more than the budget.
    if (!wsum) wsum = wall;
    if (wsum == shared_wsum_ && cap == cap_) return;
    shared_wsum_ = wsum;
    cap_ = cap;
    for (size_t i = 0; i < list_.size(); ++i) {
        const int r = list_[i];
        const Peer& p = peers_[size_t(r)];
        if (!p.alive) continue;
        const uint64_t w = busy_[i] || wsum == wall ? wsum : wsum + weight_[size_t(r)];
        // Each of the peer's lanes gets the peer's cap (as in set_rate: one stream of a
        // collective's step travels on one lane).
        const uint64_t c = cap_of(r, cap, w);
        for (const auto& l : p.lanes)
            if (l->fd >= 0) wanlink::set_socket_pacing(l->fd, c);
    }
}

// Dials the peer again (we are the higher host: we dialled at the dance): connect, our host
// rank, the link handshake of kind "reconnect" naming how much of its stream we consumed, TLS
// if the link had it, then resume. Blocking, bounded by a few seconds per attempt; attempts
// back off from 10 ms to 1 s until WANMPI_WAN_RECONNECT_S has passed since the break.
}  // namespace wan_internal

std::unique_ptr<WanTransport> make_wan_transport(const impi::Job& job, int my_rank,
                                                 std::vector<base::Fd> conns,
                                                 const std::vector<int>& peers, WanLinks links) {
    return std::make_unique<wan_internal::Wan>(job, my_rank, std::move(conns), peers,
                                               std::move(links));
}

}  // namespace wanmpi::core
