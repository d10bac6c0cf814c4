// impi-relay's pure parts (impi_relay.hpp): the label rewriting of the start-up, the two views
// of the job, the per-packet check and rewrite, the dance check, trunk assignment and the trunk
// control codecs. The job is relay_fixture.hpp's: clients 0 and 2 public, client 1 private.
#include <gtest/gtest.h>

#include <cstring>

#include "base/codec.hpp"
#include "relay_fixture.hpp"
#include "runtime/impi_relay.hpp"
#include "runtime/impi_resume.hpp"

using namespace wanmpi;
using namespace wanmpi::impi;
using relay_fixture::World;
using Bytes = std::vector<uint8_t>;

namespace {

// Client 0: hosts 0 (2 procs), 1 (1 proc); client 1 (private): hosts 2 (1), 3 (2);
// client 2: host 4 (1). World ranks: 0,1 | 2 | 3 | 4,5 | 6.
World world3() { return relay_fixture::make_world({{2, 1}, {1, 2}, {1}}, 1); }

Bytes hdr_bytes(const Packet& p) {
    Bytes b(kPacketHeader);
    encode_packet(p, b.data());
    return b;
}

Packet packet(uint32_t type, const Proc& src, const Proc& dest, uint32_t len = 0) {
    Packet p;
    p.type = type;
    p.len = len;
    p.msglen = len + 1000;
    p.src = src;
    p.dest = dest;
    p.srqid = 0x1111222233334444ull;
    p.drqid = 0x5555666677778888ull;
    p.lsrank = 3;
    p.tag = -120;
    p.cid = 0xabcdef;
    p.seqnum = 99;
    p.count = -1;
    p.dtype = 0x0102030405060708ull;
    p.reserved = 0xfeedfacecafebeefull;
    return p;
}

}  // namespace

// ---- start-up labels -----------------------------------------------------------------------

TEST(RelayLabels, OutwardRewritesExactlyTheFourLabels) {
    World w = world3();
    for (uint32_t label : kLabelOrder) {
        Bytes out;
        base::Status s = relay_outward_contribution(w.faces, label, w.agent[label], w.own_nhosts(),
                                                    w.own_nprocs(), &out);
        ASSERT_TRUE(s.ok()) << label_name(label) << ": " << s.message();
        EXPECT_EQ(out, relay_fixture::expected_outward(w, label)) << label_name(label);
        if (!relay_fixture::rewritten(label)) {
            EXPECT_EQ(out, w.agent[label]) << label_name(label) << " must pass byte for byte";
        } else {
            EXPECT_NE(out, w.agent[label]) << label_name(label) << " must be rewritten";
        }
    }
    // An arbitrary label the relay does not know passes too (whatever its bytes).
    Bytes odd = {1, 2, 3}, out;
    ASSERT_TRUE(relay_outward_contribution(w.faces, 0x7777, odd, 2, 3, &out).ok());
    EXPECT_EQ(out, odd);
}

TEST(RelayLabels, OutwardRejectsWrongSizesAndMissingFaces) {
    World w = world3();
    for (uint32_t label : {H_IPV6, H_PORT, P_IPV6, impi::P_PID}) {
        Bytes good = w.agent[label], out;
        for (Bytes bad : {Bytes{}, Bytes(good.begin(), good.end() - 1), [&] {
                              Bytes b = good;
                              b.push_back(0);
                              return b;
                          }()}) {
            base::Status s = relay_outward_contribution(w.faces, label, bad, w.own_nhosts(),
                                                        w.own_nprocs(), &out);
            EXPECT_FALSE(s.ok()) << label_name(label) << " with " << bad.size() << " bytes";
        }
        // The counts disagree with the data.
        EXPECT_FALSE(relay_outward_contribution(w.faces, label, good, w.own_nhosts() + 1,
                                                w.own_nprocs() + 1, &out).ok());
    }
    RelayFaces few = w.faces;
    few.own_host_ports.pop_back();
    Bytes out;
    EXPECT_FALSE(relay_outward_contribution(few, H_PORT, w.agent[H_PORT], w.own_nhosts(),
                                            w.own_nprocs(), &out).ok());
    EXPECT_FALSE(relay_outward_contribution(few, H_IPV6, w.agent[H_IPV6], w.own_nhosts(),
                                            w.own_nprocs(), &out).ok());
}

TEST(RelayLabels, InwardReplacesOwnPartAndOutsideHosts) {
    World w = world3();
    for (uint32_t label : kLabelOrder) {
        CollReply in;
        base::Status s = relay_inward_reply(w.faces, w.client, label, w.server[label],
                                            w.agent[label], w.nhosts, w.nprocs, &in);
        ASSERT_TRUE(s.ok()) << label_name(label) << ": " << s.message();
        EXPECT_EQ(in.mask, w.server[label].mask);
        EXPECT_EQ(in.data, w.inward[label].data) << label_name(label);
        if (!relay_fixture::rewritten(label)) {
            EXPECT_EQ(in.data, w.server[label].data) << label_name(label) << " must pass";
        }
    }
    // P_PID: the outside procs (ranks 0-2, 6) get the relay's pids 0..3, the own part (ranks
    // 3-5) is the agent's, byte for byte.
    CollReply in;
    ASSERT_TRUE(relay_inward_reply(w.faces, 1, impi::P_PID, w.server[impi::P_PID],
                                   w.agent[impi::P_PID], w.nhosts, w.nprocs, &in).ok());
    ASSERT_EQ(in.data.size(), 7u * 8);
    for (int r : {0, 1, 2}) EXPECT_EQ(base::get_be64(in.data.data() + 8 * r), relay_proc_pid(r));
    EXPECT_EQ(0, std::memcmp(in.data.data() + 3 * 8, w.agent[impi::P_PID].data(), 3 * 8));
    EXPECT_EQ(base::get_be64(in.data.data() + 6 * 8), relay_proc_pid(3));
}

TEST(RelayLabels, InwardRejectsMasksSizesAndAgentMismatch) {
    World w = world3();
    CollReply in;
    for (uint32_t label : {H_IPV6, H_PORT, P_IPV6, impi::P_PID}) {
        const CollReply& good = w.server[label];
        for (uint32_t mask : {0u, 3u, 5u, 6u, 0xfu, 0xffffffffu}) {
            CollReply r = good;
            r.mask = mask;
            EXPECT_FALSE(relay_inward_reply(w.faces, 1, label, r, w.agent[label], w.nhosts,
                                            w.nprocs, &in).ok())
                << label_name(label) << " mask " << mask;
        }
        for (long d : {-1L, 1L, -long(good.data.size())}) {
            CollReply r = good;
            r.data.resize(size_t(long(r.data.size()) + d));
            EXPECT_FALSE(relay_inward_reply(w.faces, 1, label, r, w.agent[label], w.nhosts,
                                            w.nprocs, &in).ok())
                << label_name(label) << " size " << r.data.size();
        }
        Bytes short_agent(w.agent[label].begin(), w.agent[label].end() - 1);
        EXPECT_FALSE(relay_inward_reply(w.faces, 1, label, good, short_agent, w.nhosts, w.nprocs,
                                        &in).ok());
        EXPECT_FALSE(relay_inward_reply(w.faces, 1, label, good, {}, w.nhosts, w.nprocs, &in).ok());
    }
    // Too few outside faces for the outside hosts.
    RelayFaces few = w.faces;
    few.out_host_ids.pop_back();
    EXPECT_FALSE(relay_inward_reply(few, 1, H_IPV6, w.server[H_IPV6], w.agent[H_IPV6], w.nhosts,
                                    w.nprocs, &in).ok());
    few = w.faces;
    few.out_host_ports.pop_back();
    EXPECT_FALSE(relay_inward_reply(few, 1, H_PORT, w.server[H_PORT], w.agent[H_PORT], w.nhosts,
                                    w.nprocs, &in).ok());
}

// The private client first, and two clients only.
TEST(RelayLabels, PrivateClientZero) {
    World w = relay_fixture::make_world({{1, 1}, {2, 1}}, 0);
    EXPECT_EQ(w.in.hosts[0].addr(), "10.0.0.1");
    EXPECT_EQ(w.out.hosts[0].addr(), "192.0.2.1");
    EXPECT_EQ(w.in.hosts[2].addr(), "10.99.0.1");
    EXPECT_EQ(w.in.hosts[2].port, 8000);
    EXPECT_EQ(w.out.hosts[2].addr(), "10.1.0.1");
    for (uint32_t label : kLabelOrder) {
        CollReply in;
        ASSERT_TRUE(relay_inward_reply(w.faces, 0, label, w.server[label], w.agent[label],
                                       w.nhosts, w.nprocs, &in).ok());
        EXPECT_EQ(in.data, w.inward[label].data) << label_name(label);
    }
}

// ---- the two views ---------------------------------------------------------------------------

TEST(RelayMap, ViewsOfTheFixture) {
    World w = world3();
    ASSERT_EQ(w.out.hosts.size(), 5u);
    EXPECT_EQ(w.out.hosts[2].addr(), "192.0.2.1");
    EXPECT_EQ(w.out.hosts[3].port, 7001);
    EXPECT_EQ(w.in.hosts[2].addr(), "10.1.0.1");
    EXPECT_EQ(w.in.hosts[4].port, 8002);
    EXPECT_EQ(w.out.procs[4].id.host, relay_fixture::kPub);
    EXPECT_EQ(w.out.procs[4].id.pid, int64_t(relay_proc_pid(1)));
    EXPECT_EQ(relay_of(w.out.procs[4].id), "192.0.2.1");
    EXPECT_EQ(w.in.procs[4].id, w.ts[1].procs[1]);
    EXPECT_EQ(relay_of(w.in.procs[4].id), "");
    EXPECT_EQ(w.out.procs[6].id, w.ts[2].procs[0]);
    EXPECT_EQ(w.in.procs[6].id.host, relay_fixture::kPriv);
    EXPECT_EQ(w.in.procs[6].id.pid, int64_t(relay_proc_pid(3)));
    EXPECT_EQ(relay_of(w.in.procs[6].id), "10.99.0.1");
    EXPECT_TRUE(w.map.own(2) && w.map.own(3) && !w.map.own(0) && !w.map.own(4));
}

TEST(RelayMap, RejectsViewsThatDiffer) {
    World w = world3();
    RelayMap m;
    EXPECT_TRUE(make_relay_map(1, 1, 0, w.out, w.in, &m).ok());
    EXPECT_TRUE(make_relay_map(1, 3, 2, w.out, w.in, &m).ok());
    EXPECT_FALSE(make_relay_map(-1, 1, 0, w.out, w.in, &m).ok());
    EXPECT_FALSE(make_relay_map(3, 1, 0, w.out, w.in, &m).ok());
    EXPECT_FALSE(make_relay_map(1, 0, 0, w.out, w.in, &m).ok());
    EXPECT_FALSE(make_relay_map(1, 2, 2, w.out, w.in, &m).ok());
    EXPECT_FALSE(make_relay_map(1, 2, -1, w.out, w.in, &m).ok());
    // The views of another job: client 2 has two hosts inside.
    World other = relay_fixture::make_world({{2, 1}, {1, 2}, {1, 1}}, 1);
    EXPECT_FALSE(make_relay_map(1, 1, 0, w.out, other.in, &m).ok());
    // Same counts, but the procs sit on other hosts.
    World moved = relay_fixture::make_world({{1, 2}, {1, 2}, {1}}, 1);
    EXPECT_FALSE(make_relay_map(1, 1, 0, w.out, moved.in, &m).ok());
    // Fewer clients.
    World two = relay_fixture::make_world({{2, 1}, {1, 2}}, 1);
    EXPECT_FALSE(make_relay_map(1, 1, 0, w.out, two.in, &m).ok());
    // The host of a proc, a host's client, a host's proc count.
    Job in = w.in;
    in.procs[2].host = 0;
    EXPECT_FALSE(make_relay_map(1, 1, 0, w.out, in, &m).ok());
    in = w.in;
    in.hosts[4].client = 1;
    EXPECT_FALSE(make_relay_map(1, 1, 0, w.out, in, &m).ok());
    in = w.in;
    in.hosts[1].nprocs = 2;
    EXPECT_FALSE(make_relay_map(1, 1, 0, w.out, in, &m).ok());
    in = w.in;
    in.procs[5].client = 2;
    EXPECT_FALSE(make_relay_map(1, 1, 0, w.out, in, &m).ok());
}

// ---- packets ---------------------------------------------------------------------------------

TEST(RelayRewrite, BothWaysExactly) {
    World w = world3();
    const RelayMap& m = w.map;
    // Ranks 3 (host 2), 4 and 5 (host 3) are the private client's.
    for (uint32_t type : {uint32_t(PK_DATA), uint32_t(PK_DATASYNC), uint32_t(PK_PROTOACK),
                          uint32_t(PK_SYNCACK), uint32_t(PK_CANCEL), uint32_t(PK_CANCELYES),
                          uint32_t(PK_CANCELNO)}) {
        for (auto [own_rank, out_rank] : {std::pair{3, 0}, std::pair{4, 6}, std::pair{5, 2}}) {
            int h = m.in.procs[size_t(own_rank)].host, j = m.in.procs[size_t(out_rank)].host;
            uint32_t len = packet_has_payload(type) ? 777 : 0;
            // Outward: inside ids in, outside ids out.
            Bytes b = hdr_bytes(packet(type, m.in.procs[size_t(own_rank)].id,
                                       m.in.procs[size_t(out_rank)].id, len));
            Bytes want = hdr_bytes(packet(type, m.out.procs[size_t(own_rank)].id,
                                          m.out.procs[size_t(out_rank)].id, len));
            uint64_t pay = 12345;
            EXPECT_EQ(relay_rewrite(m, h, j, true, b.data(), &pay), "");
            EXPECT_EQ(b, want) << "outward type " << type;
            EXPECT_EQ(pay, len);
            // Inward: the reverse.
            b = hdr_bytes(packet(type, m.out.procs[size_t(out_rank)].id,
                                 m.out.procs[size_t(own_rank)].id, len));
            want = hdr_bytes(packet(type, m.in.procs[size_t(out_rank)].id,
                                    m.in.procs[size_t(own_rank)].id, len));
            EXPECT_EQ(relay_rewrite(m, h, j, false, b.data(), &pay), "");
            EXPECT_EQ(b, want) << "inward type " << type;
            EXPECT_EQ(pay, len);
        }
    }
    // LAM's 128 in pk_len of a PROTOACK: no payload follows, the field passes as it is.
    Bytes b = hdr_bytes(packet(PK_PROTOACK, m.in.procs[3].id, m.in.procs[0].id));
    base::put_be32(b.data() + 4, 128);
    uint64_t pay = 1;
    EXPECT_EQ(relay_rewrite(m, 2, 0, true, b.data(), &pay), "");
    EXPECT_EQ(pay, 0u);
    EXPECT_EQ(base::get_be32(b.data() + 4), 128u);
}

// The stream acknowledgements of resumable links (PK_WAN_ACK, srqid = bytes consumed) pass,
// rewritten like any packet, only on pairs whose hosts agreed to resume.
TEST(RelayRewrite, StreamAcksOnlyOnResumablePairs) {
    World w = world3();
    const RelayMap& m = w.map;
    Bytes b = hdr_bytes(packet(PK_WAN_ACK, m.in.procs[3].id, m.in.procs[0].id));
    uint64_t pay = 1;
    EXPECT_NE(relay_rewrite(m, 2, 0, true, b.data(), &pay), "");
    Bytes want = hdr_bytes(packet(PK_WAN_ACK, m.out.procs[3].id, m.out.procs[0].id));
    EXPECT_EQ(relay_rewrite(m, 2, 0, true, b.data(), &pay, true), "");
    EXPECT_EQ(b, want);
    EXPECT_EQ(pay, 0u);
}

// A compressed payload (impi_wire.hpp compressed_mark) passes like any other: the relay checks
// pk_len (the compressed length) against the limits, forwards that many payload bytes, and
// leaves the mark in pk_reserved as it is; only the proc ids change.
TEST(RelayRewrite, CompressedPacketPassesWithItsMark) {
    World w = world3();
    const RelayMap& m = w.map;
    Bytes b = hdr_bytes(packet(PK_DATA, m.in.procs[3].id, m.in.procs[0].id, 4096));
    mark_compressed(b.data(), 321, 4096);
    Bytes want = hdr_bytes(packet(PK_DATA, m.out.procs[3].id, m.out.procs[0].id, 4096));
    mark_compressed(want.data(), 321, 4096);
    uint64_t pay = 0;
    EXPECT_EQ(relay_rewrite(m, 2, 0, true, b.data(), &pay), "");
    EXPECT_EQ(pay, 321u);
    EXPECT_EQ(b, want);
}

TEST(RelayRewrite, FiniPassesUntouched) {
    World w = world3();
    Proc zero{HostId{}, -1};
    for (bool outward : {true, false}) {
        Bytes b = hdr_bytes(packet(PK_FINI, zero, zero, 0)), orig = b;
        base::put_be32(b.data() + 4, 128);
        base::put_be32(orig.data() + 4, 128);
        uint64_t pay = 5;
        EXPECT_EQ(relay_rewrite(w.map, 2, 0, outward, b.data(), &pay), "");
        EXPECT_EQ(b, orig);
        EXPECT_EQ(pay, 0u);
    }
}

TEST(RelayRewrite, RejectsWrongProcsTypesAndLengths) {
    World w = world3();
    const RelayMap& m = w.map;
    const auto& in = m.in.procs;
    const auto& out = m.out.procs;
    auto bad = [&](int h, int j, bool outward, const Packet& p) {
        Bytes b = hdr_bytes(p), orig = b;
        uint64_t pay = 0;
        std::string err = relay_rewrite(m, h, j, outward, b.data(), &pay);
        EXPECT_NE(err, "") << "h " << h << " j " << j << " outward " << outward;
        EXPECT_EQ(b, orig) << "a rejected header is left as it was";
        return err;
    };
    // Outward from host 3 (ranks 4, 5) to host 0 (ranks 0, 1).
    bad(3, 0, true, packet(PK_DATA, in[3].id, in[0].id, 4));   // src on host 2, not 3
    bad(3, 0, true, packet(PK_DATA, in[4].id, in[5].id, 4));   // dest on host 3 (own side)
    bad(3, 0, true, packet(PK_DATA, in[4].id, in[6].id, 4));   // dest on host 4, not 0
    bad(3, 0, true, packet(PK_DATA, in[4].id, in[2].id, 4));   // dest on host 1, not 0
    bad(3, 0, true, packet(PK_DATA, in[0].id, in[4].id, 4));   // src outside, dest inside
    bad(3, 0, true, packet(PK_DATA, out[4].id, in[0].id, 4));  // src by its outside id
    Proc unknown{host_id_from_ipv4("10.1.1.1"), 12345};
    bad(3, 0, true, packet(PK_DATA, unknown, in[0].id, 4));
    bad(3, 0, true, packet(PK_SYNCACK, in[4].id, unknown));
    // Inward from host 0 (ranks 0, 1) to host 3 (ranks 4, 5); the right one passes.
    {
        Bytes b = hdr_bytes(packet(PK_DATA, out[1].id, out[4].id, 4));
        uint64_t pay = 0;
        EXPECT_EQ(relay_rewrite(m, 3, 0, false, b.data(), &pay), "");
    }
    bad(3, 0, false, packet(PK_DATA, out[0].id, out[3].id, 4));  // dest on host 2, not 3
    bad(3, 0, false, packet(PK_DATA, out[0].id, in[4].id, 4));   // dest by its inside id
    bad(3, 0, false, packet(PK_DATA, out[2].id, out[4].id, 4));  // src on host 1, not 0
    bad(3, 0, false, packet(PK_DATA, out[4].id, out[0].id, 4));  // the reverse direction
    bad(3, 0, false, packet(PK_PROTOACK, out[0].id, unknown));
    bad(3, 0, false, packet(PK_CANCEL, unknown, out[4].id));
    // Bad type, payload above maxlen (1 MiB), payload above msglen.
    Packet p = packet(8, in[4].id, in[0].id);
    bad(3, 0, true, p);
    p = packet(PK_DATA, in[4].id, in[0].id, 4);
    p.type = 0xffffffffu;
    bad(3, 0, true, p);
    p = packet(PK_DATA, in[4].id, in[0].id, (1u << 20) + 1);
    EXPECT_NE(bad(3, 0, true, p).find("exceeds"), std::string::npos);
    p = packet(PK_DATASYNC, in[4].id, in[0].id, 100);
    p.msglen = 99;
    bad(3, 0, true, p);
    // The largest allowed payload passes.
    Bytes b = hdr_bytes(packet(PK_DATA, in[4].id, in[0].id, 1u << 20));
    uint64_t pay = 0;
    EXPECT_EQ(relay_rewrite(m, 3, 0, true, b.data(), &pay), "");
    EXPECT_EQ(pay, 1u << 20);
}

// ---- the dance and the trunks ----------------------------------------------------------------

TEST(RelayDance, ChecksRanks) {
    World w = world3();
    const RelayMap& m = w.map;
    // A public port of own host 2: outside hosts above 2 connect (only host 4).
    EXPECT_EQ(relay_check_dance(m, 2, true, 4), "");
    EXPECT_NE(relay_check_dance(m, 2, true, 0), "");  // not higher
    EXPECT_NE(relay_check_dance(m, 2, true, 1), "");
    EXPECT_NE(relay_check_dance(m, 2, true, 3), "");  // same side
    EXPECT_NE(relay_check_dance(m, 2, true, 2), "");
    EXPECT_NE(relay_check_dance(m, 2, true, 5), "");  // out of range
    EXPECT_NE(relay_check_dance(m, 2, true, 0xffffffffu), "");
    EXPECT_NE(relay_check_dance(m, 2, true, 0x80000000u), "");
    EXPECT_EQ(relay_check_dance(m, 3, true, 4), "");
    // A private port of outside host 0: own hosts 2 and 3 connect.
    EXPECT_EQ(relay_check_dance(m, 0, false, 2), "");
    EXPECT_EQ(relay_check_dance(m, 0, false, 3), "");
    EXPECT_NE(relay_check_dance(m, 0, false, 1), "");  // same side
    EXPECT_NE(relay_check_dance(m, 0, false, 4), "");  // same side
    EXPECT_NE(relay_check_dance(m, 0, false, 0), "");
    // Outside host 4 is above every own host: they accept from it, never connect to it.
    EXPECT_NE(relay_check_dance(m, 4, false, 2), "");
    EXPECT_NE(relay_check_dance(m, 4, false, 3), "");
    EXPECT_NE(relay_check_dance(m, 4, false, 5), "");
}

TEST(RelayTrunks, HostsSpreadByIndex) {
    World w = world3();
    RelayMap m = w.map;
    m.trunks = 1;
    for (int h = 0; h < 5; ++h) EXPECT_EQ(m.trunk_of(h), 0);
    m.trunks = 2;
    // Own hosts 2, 3 are the cluster's 0th and 1st; outside hosts 0, 1, 4 the 0th, 1st, 2nd.
    EXPECT_EQ(m.trunk_of(2), 0);
    EXPECT_EQ(m.trunk_of(3), 1);
    EXPECT_EQ(m.trunk_of(0), 0);
    EXPECT_EQ(m.trunk_of(1), 1);
    EXPECT_EQ(m.trunk_of(4), 0);
    m.trunks = 3;
    EXPECT_EQ(m.trunk_of(4), 2);
    EXPECT_EQ(m.trunk_of(3), 1);
    // Every relay gets a fair share: with 64 trunks and 5 hosts, no trunk has two.
    m.trunks = 64;
    EXPECT_EQ(m.trunk_of(4), 2);
}

// ---- trunk control codecs --------------------------------------------------------------------

TEST(RelayCodecs, HelloRoundTripAndRejects) {
    TrunkHello h{host_id_from_ipv4("192.0.2.7"), host_id_from_ipv4("10.0.0.7")}, g;
    Bytes b = encode_trunk_hello(h);
    ASSERT_EQ(b.size(), 36u);
    EXPECT_EQ(base::get_be32(b.data()), 2u);
    ASSERT_EQ(decode_trunk_hello(b.data(), b.size(), &g), "");
    EXPECT_EQ(g.pub, h.pub);
    EXPECT_EQ(g.priv, h.priv);
    Bytes big = b;
    big.resize(64, 0);
    for (size_t n = 0; n <= 64; ++n)
        if (n != 36) {
            EXPECT_NE(decode_trunk_hello(big.data(), n, &g), "") << n;
        }
    for (uint32_t v : {0u, 1u, 3u, 0x02000000u, 0xffffffffu}) {  // 1: before TJOB had keys
        Bytes x = b;
        base::put_be32(x.data(), v);
        EXPECT_NE(decode_trunk_hello(x.data(), 36, &g), "") << v;
    }
    for (size_t at : {4u, 20u}) {
        Bytes x = b;
        x[at] = 0xfe;  // an IPv6 address: the relay speaks IPv4
        EXPECT_NE(decode_trunk_hello(x.data(), 36, &g), "") << at;
    }
}

TEST(RelayCodecs, PortsRoundTripAndRejects) {
    TrunkPorts req{3, 2, {}}, got;
    Bytes b = encode_trunk_ports(req);
    ASSERT_EQ(b.size(), 8u);
    ASSERT_EQ(decode_trunk_ports(b.data(), b.size(), false, &got), "");
    EXPECT_EQ(got.n_pub, 3u);
    EXPECT_EQ(got.n_priv, 2u);
    EXPECT_TRUE(got.ports.empty());
    EXPECT_NE(decode_trunk_ports(b.data(), b.size(), true, &got), "");  // the ports are missing
    TrunkPorts ans{3, 2, {1, 2, 65535, 4000, 5}};
    Bytes a = encode_trunk_ports(ans);
    ASSERT_EQ(a.size(), 28u);
    ASSERT_EQ(decode_trunk_ports(a.data(), a.size(), true, &got), "");
    EXPECT_EQ(got.ports, ans.ports);
    EXPECT_NE(decode_trunk_ports(a.data(), a.size(), false, &got), "");  // a request has none
    Bytes big = a;
    big.resize(64, 0);
    for (size_t n = 0; n <= 64; ++n) {
        if (n != 28) {
            EXPECT_NE(decode_trunk_ports(big.data(), n, true, &got), "") << n;
        }
        if (n != 8) {
            EXPECT_NE(decode_trunk_ports(big.data(), n, false, &got), "") << n;
        }
    }
    for (uint32_t port : {0u, 65536u, 0xffffffffu}) {
        Bytes x = a;
        base::put_be32(x.data() + 8 + 4 * 4, port);
        EXPECT_NE(decode_trunk_ports(x.data(), x.size(), true, &got), "") << port;
    }
    // Counts that would make the expected length overflow or exceed the job's hosts.
    for (auto [np, nv] : {std::pair{0xffffffffu, 1u}, std::pair{1u, 0xffffffffu},
                          std::pair{0x40000000u, 0x40000000u}, std::pair{(1u << 20) + 1, 0u}}) {
        Bytes x = a;
        base::put_be32(x.data(), np);
        base::put_be32(x.data() + 4, nv);
        EXPECT_NE(decode_trunk_ports(x.data(), x.size(), true, &got), "");
        EXPECT_NE(decode_trunk_ports(x.data(), 8, false, &got), "");
    }
    TrunkPorts none{0, 0, {}};
    Bytes z = encode_trunk_ports(none);
    EXPECT_EQ(decode_trunk_ports(z.data(), z.size(), true, &got), "");
}

TEST(RelayCodecs, JobRoundTripAndRejects) {
    World w = world3();
    TrunkJob tj{3, 2, 1, encode_job(w.out), encode_job(w.in), {}}, got;
    tj.keys.keyed = true;
    tj.keys.flags = wanlink::kFlagAuth | wanlink::kFlagResume;
    for (size_t i = 0; i < 32; ++i) tj.keys.key[i] = uint8_t(i + 1), tj.keys.session[i] = uint8_t(200 - i);
    Bytes b = encode_trunk_job(tj);
    ASSERT_EQ(b.size(), 20 + tj.out.size() + tj.in.size() + 68);
    ASSERT_EQ(decode_trunk_job(b.data(), b.size(), &got), "");
    EXPECT_EQ(got.trunks, 3u);
    EXPECT_EQ(got.index, 2u);
    EXPECT_EQ(got.client, 1u);
    EXPECT_EQ(got.out, tj.out);
    EXPECT_EQ(got.in, tj.in);
    EXPECT_TRUE(got.keys.keyed);
    EXPECT_EQ(got.keys.flags, tj.keys.flags);
    EXPECT_EQ(got.keys.key, tj.keys.key);
    EXPECT_EQ(got.keys.session, tj.keys.session);
    Job o, i;
    ASSERT_TRUE(decode_job(got.out, &o).ok());
    ASSERT_TRUE(decode_job(got.in, &i).ok());
    RelayMap m;
    EXPECT_TRUE(make_relay_map(int(got.client), int(got.trunks), int(got.index), o, i, &m).ok());
    // Empty views encode and decode (the decoder of the job texts rejects them later).
    for (auto [x, y] : {std::pair{"", ""}, std::pair{"a", ""}, std::pair{"", "b"}}) {
        TrunkJob e{2, 1, 0, x, y, {}};
        Bytes eb = encode_trunk_job(e);
        ASSERT_EQ(eb.size(), 20 + e.out.size() + e.in.size() + 68);
        ASSERT_EQ(decode_trunk_job(eb.data(), eb.size(), &got), "");
        EXPECT_EQ(got.out, e.out);
        EXPECT_EQ(got.in, e.in);
    }
    // Every truncation, and one byte more.
    for (size_t n = 0; n < b.size(); ++n) EXPECT_NE(decode_trunk_job(b.data(), n, &got), "") << n;
    Bytes longer = b;
    longer.push_back(0);
    EXPECT_NE(decode_trunk_job(longer.data(), longer.size(), &got), "");
    // Trunk count, index, client.
    auto with = [&](size_t at, uint32_t v) {
        Bytes x = b;
        base::put_be32(x.data() + at, v);
        return decode_trunk_job(x.data(), x.size(), &got);
    };
    for (uint32_t t : {0u, 1u, 65u, 0xffffffffu}) EXPECT_NE(with(0, t), "") << t;
    EXPECT_EQ(with(0, 64), "");
    for (uint32_t x : {0u, 3u, 4u, 0xffffffffu}) EXPECT_NE(with(4, x), "") << x;
    for (uint32_t c : {32u, 0x80000000u, 0xffffffffu}) EXPECT_NE(with(8, c), "") << c;
    EXPECT_EQ(with(8, 31), "");
    // The outside view's length: too long by one, far too long, shorter (the inside length then
    // is read from the middle of the text and cannot fill the message exactly).
    uint32_t a = uint32_t(tj.out.size());
    for (uint32_t len : {a + 1, a + uint32_t(tj.in.size()) + 1, 0xffffffffu, 0xfffffff0u, a - 1, 0u})
        EXPECT_NE(with(12, len), "") << len;
    // The inside view's length.
    for (uint32_t len : {uint32_t(tj.in.size()) + 1, uint32_t(tj.in.size()) - 1, 0u, 0xffffffffu})
        EXPECT_NE(with(16 + a, len), "") << len;
    // Link flags: only keyed (bit 8) and the HELLO flags a relay may demand.
    const size_t kf = 20 + tj.out.size() + tj.in.size();
    for (uint32_t f : {0x200u, 0x108u, 0x120u, 0x80000000u}) EXPECT_NE(with(kf, f), "") << f;
    EXPECT_EQ(with(kf, 0x107u), "");
}

// ---- restarts: BACK and the state file (impi_resume.hpp) ----------------------------------

TEST(RelayRestart, BackRoundTripAndRefusals) {
    BackMsg b;
    b.client = 7;
    b.fini = true;
    for (size_t i = 0; i < 32; ++i) b.session[i] = uint8_t(i * 3);
    Bytes e = encode_back(b);
    BackMsg got;
    ASSERT_EQ(decode_back(e.data(), e.size(), &got), "");
    EXPECT_EQ(got.client, 7u);
    EXPECT_TRUE(got.fini);
    EXPECT_EQ(got.session, b.session);
    for (size_t n = 0; n < e.size(); ++n) EXPECT_NE(decode_back(e.data(), n, &got), "") << n;
    Bytes x = e;
    base::put_be32(x.data(), 32);
    EXPECT_NE(decode_back(x.data(), x.size(), &got), "");
    x = e;
    base::put_be32(x.data() + 4, 2);
    EXPECT_NE(decode_back(x.data(), x.size(), &got), "");
}

TEST(RelayRestart, TrunkBackRoundTripAndRefusals) {
    BackMsg b;
    b.client = 3;
    for (size_t i = 0; i < 32; ++i) b.session[i] = uint8_t(i + 1);
    Bytes e = encode_trunk_back(b, 2);
    ASSERT_EQ(e.size(), kTrunkBackLen);
    BackMsg got;
    uint32_t index = 0;
    ASSERT_EQ(decode_trunk_back(e.data(), e.size(), &got, &index), "");
    EXPECT_EQ(got.client, 3u);
    EXPECT_FALSE(got.fini);
    EXPECT_EQ(got.session, b.session);
    EXPECT_EQ(index, 2u);
    for (size_t n = 0; n < e.size(); ++n)
        EXPECT_NE(decode_trunk_back(e.data(), n, &got, &index), "") << n;
    for (uint32_t bad : {0u, 64u, 0xffffffffu}) {  // the primary (0) never comes back with TBCK
        Bytes x = e;
        base::put_be32(x.data() + kBackLen, bad);
        EXPECT_NE(decode_trunk_back(x.data(), x.size(), &got, &index), "") << bad;
    }
    Bytes x = e;
    base::put_be32(x.data() + 4, 1);  // FINI: only the agent's BACK carries it
    EXPECT_NE(decode_trunk_back(x.data(), x.size(), &got, &index), "");
}

namespace {
wanlink::Secret secret_of(const std::string& text) {
    wanlink::Secret s;
    s.bytes.assign(text.begin(), text.end());
    s.source = "test";
    return s;
}
RelayState sample_state() { return relay_fixture::sample_state(world3()); }
}  // namespace

TEST(RelayRestart, StateRoundTrip) {
    wanlink::Secret k = secret_of("0123456789abcdef0123456789abcdef");
    RelayState st = sample_state();
    std::string text = encode_relay_state(st, k);
    RelayState got;
    ASSERT_EQ(decode_relay_state(text, k, &got), "");
    EXPECT_EQ(got.server, st.server);
    EXPECT_EQ(got.client, st.client);
    EXPECT_EQ(got.pub, st.pub);
    EXPECT_EQ(got.priv, st.priv);
    EXPECT_EQ(got.port, st.port);
    EXPECT_EQ(got.ports, st.ports);
    EXPECT_EQ(got.flags, st.flags);
    EXPECT_EQ(got.session, st.session);
    EXPECT_EQ(got.out, st.out);
    EXPECT_EQ(got.in, st.in);
    // No key material in it: neither the secret nor the link key derived from it.
    EXPECT_EQ(text.find("0123456789abcdef"), std::string::npos);
    wanlink::Key lk = wanlink::link_key(k, st.session.data());
    std::string lk_hex;
    for (uint8_t c : lk) {
        char h[3];
        std::snprintf(h, sizeof h, "%02x", c);
        lk_hex += h;
    }
    EXPECT_EQ(text.find(lk_hex), std::string::npos);
}

// With trunks every relay has a state file; a member's names the primary and has no control
// port. A file without the "trunk" line (written before trunks could restart) is "trunk 1 0".
TEST(RelayRestart, StateOfATrunkMember) {
    wanlink::Secret k = secret_of("0123456789abcdef0123456789abcdef");
    RelayState st = sample_state();
    st.trunks = 3;
    st.index = 2;
    st.port = 0;
    st.server = "10.1.0.9:4000";
    std::string text = encode_relay_state(st, k);
    RelayState got;
    ASSERT_EQ(decode_relay_state(text, k, &got), "");
    EXPECT_EQ(got.trunks, 3);
    EXPECT_EQ(got.index, 2);
    EXPECT_EQ(got.port, 0u);
    EXPECT_EQ(got.server, st.server);
    // A member with a control port, or a primary without one, is refused.
    RelayState bad = st;
    bad.port = 4000;
    EXPECT_NE(decode_relay_state(encode_relay_state(bad, k), k, &got), "");
    bad = sample_state();
    bad.port = 0;
    EXPECT_NE(decode_relay_state(encode_relay_state(bad, k), k, &got), "");
    // An index that is not below the count.
    bad = st;
    bad.index = 3;
    EXPECT_NE(decode_relay_state(encode_relay_state(bad, k), k, &got), "");
}

TEST(RelayRestart, StateRefusesAnotherSecretEditsAndTruncation) {
    wanlink::Secret k = secret_of("0123456789abcdef0123456789abcdef");
    std::string text = encode_relay_state(sample_state(), k);
    RelayState got;
    // Another job's secret.
    std::string e = decode_relay_state(text, secret_of("another-secret-0123456789abcdef!"), &got);
    EXPECT_NE(e.find("does not verify"), std::string::npos) << e;
    // Every single-byte edit before the MAC line is caught (format or MAC).
    size_t mac_at = text.rfind("mac ");
    for (size_t i = 0; i < mac_at; i += 7) {
        std::string x = text;
        x[i] = char(x[i] ^ 0x01);
        EXPECT_NE(decode_relay_state(x, k, &got), "") << i;
    }
    // Every truncation.
    for (size_t n = 0; n < text.size() - 1; n += 5)
        EXPECT_NE(decode_relay_state(text.substr(0, n), k, &got), "") << n;
    EXPECT_NE(decode_relay_state("", k, &got), "");
    EXPECT_NE(decode_relay_state("wanmpi-relay-state 2\nmac 00\n", k, &got), "");
}
