// MPI's order across lanes (issue 14, docs/design/lanes.md "MPI's order across lanes"): the
// receiver's side of the sequence numbers a laned wan link puts on matching packets.
//
// A link of several lanes delivers the matching packets of one (source, context id) in send
// order per lane, but not across lanes: every (context id, tag) stream is on one lane, so it is
// FIFO; two streams may be reordered. The sender numbers the messages of each (source
// process, destination process, context id) 1, 2, 3, ... (0: not numbered: a link of one lane,
// every intra-cluster route). The receiver records arrivals (SeqWindows) and restricts which
// arrived messages a receive may take:
//  - explicit tag: the oldest arrived message of its stream, at once, gaps or not. An earlier
//    message still missing has another tag (its stream is FIFO), so it cannot match.
//  - MPI_ANY_TAG: only a message with no gap before it (every lower number arrived), and then
//    the lowest-numbered such message of that source, which is the one a single connection
//    would have delivered first.
//  - MPI_ANY_SOURCE: the same per source; any source's candidate may be taken.
//  - a *strict* message is taken by any receive only with no gap before it, as by MPI_ANY_TAG,
//    and then as the lowest-numbered of its stream that arrived. Once a sender has sent a
//    message on two lanes outside its stream's lane (wan.cpp twice_lane), it marks every later
//    message to that process strict: a stream is then no longer FIFO on one lane, so neither
//    its own lane nor arrival order says what was sent first, only the numbers do. Messages
//    sent before that are not strict and arrive before every strict one of their stream.
// Posted receives are walked in posting order with the same rule. A wildcard receive that must
// wait for a gap does not stop a later posted receive from taking the message: the missing
// message is from the same source and context, was sent earlier and matches the wildcard
// receive (any tag), so the wildcard receive's first match is never this message. When a gap
// fills, the messages it released are offered to the posted receives in number order.
// Probes use the same visibility, which only grows. MPI's promise holds: a receive with the
// source and tag a probe returned in its status gets the probed message (it is the oldest of
// its stream). A later receive with MPI_ANY_SOURCE may instead get another source's message
// whose gap filled meanwhile; Mprobe/Improbe take the message at the probe itself.
//
// The matching helpers are templates over the engine's intrusive queue nodes (Unexp, Request)
// so that tests/unit drives the same code with stand-ins. Threading: under the API lock.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>

namespace wanmpi::core {

constexpr int kSeqAnySource = -2;  // MPI_ANY_SOURCE (static_assert in engine.cpp)
constexpr int kSeqAnyTag = -1;     // MPI_ANY_TAG

class SeqWindows {
public:
    // The message numbered s (>= 1) of (world_src, ctx) arrived. Returns the lowest number
    // still missing afterwards: every number in (s, returned) was already here and has just
    // become free of gaps (empty range when nothing was waiting on s).
    uint64_t arrive(int world_src, uint32_t ctx, uint64_t s) {
        W& w = w_[key(world_src, ctx)];
        if (s < w.next) return w.next;  // a duplicate: cannot happen on a sound link
        if (s > w.next) {
            w.ahead.insert(s);
            return w.next;
        }
        ++w.next;
        while (!w.ahead.empty() && *w.ahead.begin() == w.next) {
            w.ahead.erase(w.ahead.begin());
            ++w.next;
        }
        return w.next;
    }
    // Every number below s of (world_src, ctx) arrived.
    bool no_gap_before(int world_src, uint32_t ctx, uint64_t s) const {
        auto it = w_.find(key(world_src, ctx));
        return s <= 1 || (it != w_.end() && it->second.next >= s);
    }
    // Numbers of (world_src, ctx) that arrived out of order, still waiting for a gap.
    size_t waiting(int world_src, uint32_t ctx) const {
        auto it = w_.find(key(world_src, ctx));
        return it == w_.end() ? 0 : it->second.ahead.size();
    }

private:
    struct W {
        uint64_t next = 1;         // lowest number not arrived
        std::set<uint64_t> ahead;  // arrived numbers above it
    };
    static uint64_t key(int src, uint32_t ctx) { return uint64_t(uint32_t(src)) << 32 | ctx; }
    std::unordered_map<uint64_t, W> w_;
};

// May a receive for `tag` take the arrived message u (fields ctx, world_src, seq) now?
template <class U> bool seq_visible(const SeqWindows& w, const U* u, int tag) {
    return u->seq == 0 || (tag != kSeqAnyTag && !u->strict) ||
           w.no_gap_before(u->world_src, u->ctx, u->seq);
}

// The unexpected message a receive (ctx, src, tag) takes now, or nullptr. The list (fields
// next, ctx, src, tag, world_src, seq) is in arrival order.
template <class U> U* seq_find(U* head, const SeqWindows& w, uint32_t ctx, int src, int tag) {
    auto fits = [&](const U* u) {
        return u->ctx == ctx && (src == kSeqAnySource || u->src == src) &&
               (tag == kSeqAnyTag || u->tag == tag) && seq_visible(w, u, tag);
    };
    U* first = nullptr;
    for (U* u = head; u && !first; u = u->next)
        if (fits(u)) first = u;
    if (!first || first->seq == 0 || (tag != kSeqAnyTag && !first->strict)) return first;
    // ANY_TAG, or a strict message (which may have arrived before an earlier one of its
    // stream): of that source's visible messages, the one sent first.
    for (U* u = first->next; u; u = u->next)
        if (u->world_src == first->world_src && u->seq != 0 && u->seq < first->seq && fits(u))
            first = u;
    return first;
}

// The first posted receive (fields next, ctx, peer, tag) that takes an arriving message.
template <class R>
R* seq_match_posted(R* head, const SeqWindows& w, uint32_t ctx, int src, int tag, int world_src,
                    uint64_t seq, bool strict = false) {
    for (R* r = head; r; r = r->next) {
        if (r->ctx != ctx || (r->peer != kSeqAnySource && r->peer != src) ||
            (r->tag != kSeqAnyTag && r->tag != tag))
            continue;
        if (seq != 0 && (r->tag == kSeqAnyTag || strict) && !w.no_gap_before(world_src, ctx, seq))
            continue;
        return r;
    }
    return nullptr;
}

}  // namespace wanmpi::core
