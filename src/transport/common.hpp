// Helpers shared by the transports in this folder (private to src/transport).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace wanmpi::transport::detail {

// FNV-1a of the job id: short, printable-free identity of a job for segment/socket names and the
// tcp hello. Collisions only matter between jobs of the same user on one host/network.
inline uint64_t job_hash(const std::string& s) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

inline std::string hex64(uint64_t v) {
    static const char* d = "0123456789abcdef";
    std::string s(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4)
        s[i] = d[v & 15];
    return s;
}

// SendOp::sent holds this once an op has been failed (peer gone before the frame left), so a
// completion list can carry both outcomes without another field.
constexpr uint64_t kOpFailed = ~uint64_t(0);

// Intrusive FIFO of SendOps through SendOp::next. Not thread-safe (core's progress lock).
struct OpQueue {
    SendOp* head = nullptr;
    SendOp* tail = nullptr;
    bool empty() const { return head == nullptr; }
    void push(SendOp* op) {
        op->next = nullptr;
        if (tail)
            tail->next = op;
        else
            head = op;
        tail = op;
    }
    SendOp* pop() {
        SendOp* op = head;
        if (op) {
            head = op->next;
            if (!head) tail = nullptr;
            op->next = nullptr;
        }
        return op;
    }
    // A send that will not happen (its peer failed or is not served here): on this completion
    // list with ok = false.
    void fail(SendOp* op) {
        op->sent = kOpFailed;
        push(op);
    }
    // The same for every op of `q` (q becomes empty).
    void fail_all(OpQueue& q) {
        while (SendOp* op = q.pop()) fail(op);
    }
    // Append all of `o` (o becomes empty).
    void splice(OpQueue& o) {
        if (o.empty()) return;
        if (tail)
            tail->next = o.head;
        else
            head = o.head;
        tail = o.tail;
        o.head = o.tail = nullptr;
    }
};

// The record of `peer` when this transport serves it and it has not failed, else nullptr: where
// try_send answers `failed` and post_send fails the op. P: a transport's peer record, with
// `state` and the value P::ok.
template <class P>
P* live_peer(const std::vector<P*>& peers, int peer) {
    if (unsigned(peer) >= peers.size()) return nullptr;
    P* p = peers[size_t(peer)];
    return p && p->state == P::ok ? p : nullptr;
}

// Calls on_complete for every op in `q` (popping each before its callback, so a callback may post
// new sends). Returns the number completed.
inline int run_completions(OpQueue& q) {
    int n = 0;
    while (SendOp* op = q.pop()) {
        bool ok = op->sent != kOpFailed;
        ++n;
        if (op->on_complete) op->on_complete(op, ok);
    }
    return n;
}

}  // namespace wanmpi::transport::detail
