// Lanes (issue 14): the order rule a receiver applies to numbered messages from a laned link
// (core/seq_order.hpp), driven through the same templates the engine uses, on stand-ins for its
// unexpected and posted queues; and the lane hash and setting (wanlink/lanes.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <set>

#include "core/seq_order.hpp"
#include "wanlink/lanes.hpp"

using namespace wanmpi;
using core::kSeqAnySource;
using core::kSeqAnyTag;

namespace {

// An arrived message (the engine's Unexp) and a posted receive (its Request), as lists.
struct Msg {
    uint32_t ctx = 0;
    int src = 0, tag = 0, world_src = 0;
    uint64_t seq = 0;
    bool strict = false;
    Msg* next = nullptr;
};
struct Recv {
    uint32_t ctx = 0;
    int peer = 0, tag = 0;
    Recv* next = nullptr;
};

// A receiver: the unexpected queue in arrival order, the posted queue in posting order, and
// the engine's steps (engine.cpp on_header / seq_release / find_unexpected) over them.
struct Receiver {
    core::SeqWindows w;
    std::deque<Msg> store;
    std::deque<Recv> rstore;
    std::vector<Msg*> unexp;
    std::vector<Recv*> posted;
    std::vector<std::pair<Recv*, Msg*>> matched;

    template <class T> static T* link(std::vector<T*>& v) {
        for (size_t i = 0; i < v.size(); ++i) v[i]->next = i + 1 < v.size() ? v[i + 1] : nullptr;
        return v.empty() ? nullptr : v[0];
    }
    Recv* take_posted(const Msg& m) {
        Recv* r = core::seq_match_posted(link(posted), w, m.ctx, m.src, m.tag, m.world_src, m.seq,
                                         m.strict);
        if (r) posted.erase(std::find(posted.begin(), posted.end(), r));
        return r;
    }
    Msg* arrive(int src, int tag, uint64_t seq, uint32_t ctx = 1, bool strict = false) {
        Msg& m = store.emplace_back();
        m.strict = strict;
        m.ctx = ctx;
        m.src = m.world_src = src;
        m.tag = tag;
        m.seq = seq;
        const uint64_t next = seq ? w.arrive(src, ctx, seq) : 0;
        if (Recv* r = take_posted(m)) matched.push_back({r, &m});
        else unexp.push_back(&m);
        if (seq && next > seq + 1) {  // seq_release
            std::vector<Msg*> freed;
            for (Msg* u : unexp)
                if (u->world_src == src && u->ctx == ctx && u->seq > seq && u->seq < next)
                    freed.push_back(u);
            std::sort(freed.begin(), freed.end(),
                      [](Msg* a, Msg* b) { return a->seq < b->seq; });
            for (Msg* u : freed)
                if (Recv* r = take_posted(*u)) {
                    unexp.erase(std::find(unexp.begin(), unexp.end(), u));
                    matched.push_back({r, u});
                }
        }
        return &m;
    }
    // A receive (or, remove = false, a probe) now: the message it takes, or nullptr (posted).
    Msg* recv(int src, int tag, bool remove = true, uint32_t ctx = 1) {
        Msg* u = core::seq_find(link(unexp), w, ctx, src, tag);
        if (u && remove) unexp.erase(std::find(unexp.begin(), unexp.end(), u));
        if (!u && remove) {
            Recv& r = rstore.emplace_back();
            r.ctx = ctx;
            r.peer = src;
            r.tag = tag;
            posted.push_back(&r);
        }
        return u;
    }
    Msg* match_of(const Recv* r) const {
        for (auto& [rr, m] : matched)
            if (rr == r) return m;
        return nullptr;
    }
};

// A random lane that still holds packets (each lane is FIFO: the caller takes its front), or
// nullptr once every lane is drained.
template <class Q, class Rnd> Q* any_lane(std::vector<Q>& lanes, Rnd& next) {
    std::vector<Q*> nonempty;
    for (auto& q : lanes)
        if (!q.empty()) nonempty.push_back(&q);
    return nonempty.empty() ? nullptr : nonempty[(next() >> 33) % nonempty.size()];
}

}  // namespace

TEST(SeqWindows, GapsFillInOrder) {
    core::SeqWindows w;
    EXPECT_TRUE(w.no_gap_before(0, 1, 1));
    EXPECT_EQ(w.arrive(0, 1, 2), 1u);  // 1 missing
    EXPECT_EQ(w.arrive(0, 1, 4), 1u);
    EXPECT_FALSE(w.no_gap_before(0, 1, 2));
    EXPECT_EQ(w.waiting(0, 1), 2u);
    EXPECT_EQ(w.arrive(0, 1, 1), 3u);  // 1 fills: 2 is free, 3 missing
    EXPECT_TRUE(w.no_gap_before(0, 1, 2));
    EXPECT_TRUE(w.no_gap_before(0, 1, 3));
    EXPECT_FALSE(w.no_gap_before(0, 1, 4));
    EXPECT_EQ(w.arrive(0, 1, 3), 5u);
    EXPECT_EQ(w.waiting(0, 1), 0u);
    // Other sources and contexts have windows of their own.
    EXPECT_FALSE(w.no_gap_before(1, 1, 2));
    EXPECT_FALSE(w.no_gap_before(0, 2, 2));
}

// Message 1 (tag 7, lane A) is late; 2 (tag 9, lane B) is here: an explicit-tag receive for 9
// takes it at once (its stream has nothing missing), ANY_TAG must wait for 1 and then gets 1.
TEST(SeqOrder, ExplicitTagTakesItsStreamDespiteAGap) {
    Receiver rc;
    rc.arrive(0, 9, 2);
    EXPECT_EQ(rc.recv(0, kSeqAnyTag, false), nullptr);  // probe: not visible yet
    Msg* m = rc.recv(0, 9);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->seq, 2u);
    EXPECT_EQ(rc.recv(0, kSeqAnyTag), nullptr);  // posted, waits
    rc.arrive(0, 7, 1);
    ASSERT_EQ(rc.matched.size(), 1u);
    EXPECT_EQ(rc.matched[0].second->seq, 1u);
}

// ANY_TAG and ANY_SOURCE receives see messages in send order, whatever the arrival order.
TEST(SeqOrder, WildcardsMatchInSendOrder) {
    Receiver rc;
    rc.arrive(0, 5, 3);
    rc.arrive(0, 6, 2);
    EXPECT_EQ(rc.recv(0, kSeqAnyTag, false), nullptr);
    EXPECT_EQ(rc.recv(kSeqAnySource, kSeqAnyTag, false), nullptr);
    rc.arrive(0, 4, 1);
    for (uint64_t want = 1; want <= 3; ++want) {
        Msg* m = rc.recv(kSeqAnySource, kSeqAnyTag);
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(m->seq, want);
    }
    EXPECT_EQ(rc.recv(0, kSeqAnyTag, false), nullptr);
}

// Another source without gaps is visible to ANY_SOURCE while source 0 has one.
TEST(SeqOrder, AnySourceTakesAnotherSourceWithoutGap) {
    Receiver rc;
    rc.arrive(0, 1, 2);
    rc.arrive(1, 1, 1);
    Msg* m = rc.recv(kSeqAnySource, kSeqAnyTag);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->world_src, 1);
    // Explicit tag with ANY_SOURCE: its stream's oldest, gap or not.
    m = rc.recv(kSeqAnySource, 1);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->seq, 2u);
}

// Posted receives: a wildcard receive that must wait for a gap leaves the message to a later
// explicit receive (the missing message matches the wildcard one), and gets the missing one.
// When a gap fills, held messages go to posted wildcard receives in number order.
TEST(SeqOrder, PostedQueueOrder) {
    Receiver rc;
    Recv* any = (rc.recv(0, kSeqAnyTag), rc.posted.back());
    Recv* t9 = (rc.recv(0, 9), rc.posted.back());
    rc.arrive(0, 9, 2);
    EXPECT_EQ(rc.match_of(t9)->seq, 2u);
    EXPECT_EQ(rc.match_of(any), nullptr);
    rc.arrive(0, 7, 1);
    EXPECT_EQ(rc.match_of(any)->seq, 1u);

    Receiver r2;
    Recv* a1 = (r2.recv(0, kSeqAnyTag), r2.posted.back());
    Recv* a2 = (r2.recv(0, kSeqAnyTag), r2.posted.back());
    Recv* a3 = (r2.recv(0, kSeqAnyTag), r2.posted.back());
    r2.arrive(0, 3, 3);
    r2.arrive(0, 2, 2);
    EXPECT_TRUE(r2.matched.empty());
    r2.arrive(0, 1, 1);
    ASSERT_EQ(r2.matched.size(), 3u);
    EXPECT_EQ(r2.match_of(a1)->seq, 1u);
    EXPECT_EQ(r2.match_of(a2)->seq, 2u);
    EXPECT_EQ(r2.match_of(a3)->seq, 3u);
}

// What a probe returns is what the next receive with the same arguments takes.
TEST(SeqOrder, ProbeThenReceive) {
    Receiver rc;
    rc.arrive(0, 8, 2);
    rc.arrive(0, 3, 1);
    Msg* p = rc.recv(0, kSeqAnyTag, false);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->seq, 1u);
    EXPECT_EQ(rc.recv(0, kSeqAnyTag), p);
}

// Unnumbered messages (one lane, intra-cluster) keep plain first-fit in arrival order.
TEST(SeqOrder, UnnumberedIsFirstFit) {
    Receiver rc;
    rc.arrive(0, 5, 0);
    rc.arrive(0, 6, 0);
    EXPECT_EQ(rc.recv(0, kSeqAnyTag)->tag, 5);
    EXPECT_EQ(rc.recv(kSeqAnySource, 6)->tag, 6);
}

// A random shuffle of the arrivals of several streams on 4 lanes (each lane FIFO): every
// ANY_TAG receive gets the messages in send order; explicit receives get their stream in order.
TEST(SeqOrder, RandomLaneInterleavings) {
    uint64_t rnd = 12345;
    auto next = [&] { return rnd = rnd * 6364136223846793005ull + 1442695040888963407ull; };
    for (int round = 0; round < 200; ++round) {
        const int n = 40;
        std::vector<std::deque<std::pair<int, uint64_t>>> lanes(4);  // (tag, seq) per lane
        for (int i = 1; i <= n; ++i) {
            const int tag = int(next() >> 60) % 6;
            lanes[wanlink::lane_of(1, tag, 4)].push_back({tag, uint64_t(i)});
        }
        Receiver rc;
        std::vector<Recv*> anys;
        for (int i = 0; i < n / 2; ++i) {
            rc.recv(0, kSeqAnyTag);
            anys.push_back(rc.posted.back());
        }
        while (auto* q = any_lane(lanes, next)) {
            rc.arrive(0, q->front().first, q->front().second);
            q->pop_front();
        }
        for (int i = 0; i < n / 2; ++i) ASSERT_EQ(rc.match_of(anys[i])->seq, uint64_t(i + 1));
        for (int i = n / 2; i < n; ++i) ASSERT_EQ(rc.recv(0, kSeqAnyTag)->seq, uint64_t(i + 1));
    }
}

// A strict message (sent on two lanes outside its stream's lane: wan.cpp twice_lane) may arrive
// before an earlier message of its own stream, which is still on the stream's lane: no receive
// may take it before that one, explicit tag or not; posted receives get both in send order.
TEST(SeqOrder, StrictWaitsForEveryEarlierNumber) {
    Receiver rc;
    rc.arrive(0, 7, 2, 1, true);
    EXPECT_EQ(rc.recv(0, 7, false), nullptr);  // probe: not visible
    EXPECT_EQ(rc.recv(kSeqAnySource, 7, false), nullptr);
    rc.arrive(0, 7, 1);
    EXPECT_EQ(rc.recv(0, 7)->seq, 1u);
    EXPECT_EQ(rc.recv(0, 7)->seq, 2u);

    Receiver r2;
    Recv* a = (r2.recv(0, 7), r2.posted.back());
    Recv* b = (r2.recv(0, 7), r2.posted.back());
    r2.arrive(0, 7, 2, 1, true);
    EXPECT_TRUE(r2.matched.empty());
    r2.arrive(0, 7, 1);
    ASSERT_EQ(r2.matched.size(), 2u);
    EXPECT_EQ(r2.match_of(a)->seq, 1u);
    EXPECT_EQ(r2.match_of(b)->seq, 2u);
}

// Random sends of several streams where small messages go twice, on lanes 0 and 1 (the receiver
// drops the copy that comes second) and large ones on their stream's lane, every message after
// the first sent twice strict: explicit receives still get each stream in send order, ANY_TAG
// receives everything in send order.
TEST(SeqOrder, RandomSentTwiceInterleavings) {
    uint64_t rnd = 987654321;
    auto next = [&] { return rnd = rnd * 6364136223846793005ull + 1442695040888963407ull; };
    for (int round = 0; round < 300; ++round) {
        const int n = 40;
        struct P { int tag; uint64_t seq; bool strict; };
        std::vector<std::deque<P>> lanes(4);
        std::vector<int> tag_of(n + 1);
        bool sent_twice = false;  // the sender's Peer::strict_out
        for (int i = 1; i <= n; ++i) {
            const int tag = int(next() >> 60) % 5;
            tag_of[size_t(i)] = tag;
            if ((next() >> 40) % 3 == 0 || i <= 3) {
                lanes[wanlink::lane_of(1, tag, 4)].push_back({tag, uint64_t(i), sent_twice});
            } else {
                sent_twice = true;
                lanes[0].push_back({tag, uint64_t(i), true});
                lanes[1].push_back({tag, uint64_t(i), true});
            }
        }
        Receiver rc;
        std::set<uint64_t> seen;
        const bool explicit_recvs = round % 2 == 0;
        std::vector<std::pair<int, Recv*>> posted;  // explicit: (tag, receive) in posting order
        if (explicit_recvs) {
            for (int i = 1; i <= n; ++i) {
                rc.recv(0, tag_of[size_t(i)]);
                posted.push_back({tag_of[size_t(i)], rc.posted.back()});
            }
        }
        while (auto* q = any_lane(lanes, next)) {
            const P pk = q->front();
            q->pop_front();
            if (pk.strict && !seen.insert(pk.seq).second) continue;  // the second copy
            rc.arrive(0, pk.tag, pk.seq, 1, pk.strict);
        }
        if (explicit_recvs) {
            // Receive number j of tag t must hold the j-th message of tag t sent.
            for (int t = 0; t < 5; ++t) {
                std::vector<uint64_t> sent, got;
                for (int i = 1; i <= n; ++i)
                    if (tag_of[size_t(i)] == t) sent.push_back(uint64_t(i));
                for (auto& [tag, r] : posted)
                    if (tag == t) got.push_back(rc.match_of(r) ? rc.match_of(r)->seq : 0);
                ASSERT_EQ(got, sent);
            }
        } else {
            for (int i = 1; i <= n; ++i) ASSERT_EQ(rc.recv(0, kSeqAnyTag)->seq, uint64_t(i));
        }
    }
}

TEST(Lanes, HashAndSetting) {
    std::set<unsigned> seen;
    for (int tag = 0; tag < 64; ++tag) {
        const unsigned l = wanlink::lane_of(3, tag, 4);
        EXPECT_LT(l, 4u);
        EXPECT_EQ(l, wanlink::lane_of(3, tag, 4));  // fixed: the same on every host
        seen.insert(l);
    }
    EXPECT_EQ(seen.size(), 4u);
    EXPECT_EQ(wanlink::lane_of(3, 5, 1), 0u);
    unsigned k = 99;
    EXPECT_TRUE(wanlink::parse_lanes("auto", &k).ok());
    EXPECT_EQ(k, 0u);
    EXPECT_TRUE(wanlink::parse_lanes("16", &k).ok());
    EXPECT_EQ(k, 16u);
    EXPECT_FALSE(wanlink::parse_lanes("0", &k).ok());
    EXPECT_FALSE(wanlink::parse_lanes("17", &k).ok());
    EXPECT_FALSE(wanlink::parse_lanes("four", &k).ok());
    EXPECT_EQ(wanlink::auto_lanes(500), 1u);
    EXPECT_EQ(wanlink::auto_lanes(20000), 4u);
    // WANMPI_WAN_STRIPE: auto, on, off (and 1/0); anything else fails MPI_Init.
    wanlink::Stripe st = wanlink::Stripe::off;
    EXPECT_TRUE(wanlink::parse_stripe("", &st).ok());
    EXPECT_EQ(st, wanlink::Stripe::autos);
    EXPECT_TRUE(wanlink::parse_stripe("on", &st).ok());
    EXPECT_EQ(st, wanlink::Stripe::on);
    EXPECT_TRUE(wanlink::parse_stripe("0", &st).ok());
    EXPECT_EQ(st, wanlink::Stripe::off);
    EXPECT_FALSE(wanlink::parse_stripe("yes", &st).ok());
}
