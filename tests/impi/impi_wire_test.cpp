// IMPI codecs against the byte examples of IMPI.md, and a fuzz target for the packet decoder
// run over a fixed number of random and mutated inputs (deterministic seed, a few seconds).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>

#include "base/codec.hpp"
#include "runtime/impi_wire.hpp"

namespace base = wanmpi::base;

using namespace wanmpi::impi;

TEST(ImpiWire, CommandHeaderBytes) {
    uint8_t b[8];
    encode_cmd({CMD_AUTH, 4}, b);
    const uint8_t want[8] = {0x41, 0x55, 0x54, 0x48, 0, 0, 0, 4};
    EXPECT_EQ(0, memcmp(b, want, 8));
    auto h = decode_cmd(want);
    EXPECT_EQ(h.cmd, uint32_t(CMD_AUTH));
    EXPECT_EQ(h.len, 4);
    EXPECT_STREQ(cmd_name(CMD_FINI), "FINI");
    EXPECT_EQ(cmd_name(0x12345678), nullptr);
    EXPECT_STREQ(label_name(H_HIWATER), "IMPI_H_HIWATER");
}

TEST(ImpiWire, HostIdForms) {
    HostId lam = host_id_from_ipv4("10.1.2.3");
    for (int i = 0; i < 12; ++i) EXPECT_EQ(lam[size_t(i)], 0);
    EXPECT_EQ(lam[12], 10);
    EXPECT_EQ(lam[15], 3);
    EXPECT_EQ(ipv4_from_host_id(lam), "10.1.2.3");
    HostId meta = lam;
    meta[10] = meta[11] = 0xff;  // MetaMPICH's IPv4-mapped form
    EXPECT_EQ(ipv4_from_host_id(meta), "10.1.2.3");
    HostId v6{};
    v6[0] = 0xfe;
    EXPECT_FALSE(ipv4_from_host_id(v6).has_value());
}

TEST(ImpiWire, PacketRoundTripAndLayout) {
    Packet p;
    p.type = PK_DATASYNC;
    p.len = 5;
    p.src.host = host_id_from_ipv4("10.0.0.1");
    p.src.pid = 1234;
    p.dest.host = host_id_from_ipv4("10.0.0.2");
    p.dest.pid = -1;
    p.srqid = 0x1122334455667788ull;
    p.drqid = 7;
    p.msglen = 100;
    p.lsrank = 3;
    p.tag = -120;
    p.cid = 0;
    uint8_t b[kPacketHeader];
    encode_packet(p, b);
    EXPECT_EQ(b[3], 1);           // pk_type at 0
    EXPECT_EQ(b[7], 5);           // pk_len at 4
    EXPECT_EQ(b[8 + 12], 10);     // src host id at 8
    EXPECT_EQ(b[24 + 7], 0xd2);   // src pid 1234 at 24
    EXPECT_EQ(b[48], 0xff);       // dest pid -1 at 48
    EXPECT_EQ(b[56], 0x11);       // srqid at 56
    EXPECT_EQ(b[84], 0xff);       // tag -120 at 84
    Packet q;
    EXPECT_EQ(decode_packet(b, 1 << 20, &q), "");
    EXPECT_EQ(q.type, p.type);
    EXPECT_EQ(q.len, p.len);
    EXPECT_EQ(q.src, p.src);
    EXPECT_EQ(q.dest, p.dest);
    EXPECT_EQ(q.srqid, p.srqid);
    EXPECT_EQ(q.tag, -120);
    EXPECT_EQ(q.msglen, 100u);
}

TEST(ImpiWire, DecoderRejectsBadPackets) {
    Packet p;
    p.type = PK_DATA;
    p.len = 2000;
    p.msglen = 2000;
    uint8_t b[kPacketHeader];
    encode_packet(p, b);
    Packet q;
    EXPECT_NE(decode_packet(b, 1024, &q), "");  // payload above maxlen
    p.len = 10;
    p.msglen = 5;
    encode_packet(p, b);
    EXPECT_NE(decode_packet(b, 1024, &q), "");  // payload above the message length
    b[3] = 9;
    EXPECT_NE(decode_packet(b, 1024, &q), "");  // unknown type
    p = Packet();
    p.type = PK_PROTOACK;
    encode_packet(p, b);
    b[7] = 128;  // LAM's len on control packets: ignored
    EXPECT_EQ(decode_packet(b, 1024, &q), "");
    EXPECT_EQ(q.len, 0u);
}

// The compressed-payload mark (wanmpi extension, pk_reserved): written by mark_compressed,
// recognised and checked by compressed_len.
TEST(ImpiWire, CompressedMark) {
    Packet p;
    p.type = PK_DATASYNC;
    p.len = 4096;
    p.msglen = 100000;
    uint8_t b[kPacketHeader];
    encode_packet(p, b);
    Packet q;
    uint32_t raw = 7;
    std::string err;
    ASSERT_EQ(decode_packet(b, 65536, &q), "");
    EXPECT_FALSE(compressed_len(q, 65536, &raw, &err));  // pk_reserved 0: not compressed
    EXPECT_EQ(raw, 7u);
    mark_compressed(b, 300, 4096);
    EXPECT_EQ(base::get_be32(b + 4), 300u);
    EXPECT_EQ(std::memcmp(b + 120, "ZSTD", 4), 0);
    ASSERT_EQ(decode_packet(b, 65536, &q), "");
    EXPECT_EQ(q.len, 300u);
    EXPECT_TRUE(compressed_len(q, 65536, &raw, &err));
    EXPECT_EQ(err, "");
    EXPECT_EQ(raw, 4096u);
    // What a receiver must refuse: no shorter than raw, empty, raw above maxlen or the message,
    // a control packet marked.
    for (auto [len, r, maxlen, msglen] :
         {std::tuple{4096u, 4096u, 65536u, 100000u}, std::tuple{0u, 4096u, 65536u, 100000u},
          std::tuple{300u, 70000u, 65536u, 100000u}, std::tuple{300u, 4096u, 65536u, 4000u}}) {
        Packet x = q;
        x.len = len;
        x.msglen = msglen;
        x.reserved = compressed_mark(r);
        EXPECT_TRUE(compressed_len(x, maxlen, &raw, &err));
        EXPECT_NE(err, "") << len << " " << r;
    }
    Packet c;
    c.type = PK_PROTOACK;
    c.reserved = compressed_mark(100);
    EXPECT_TRUE(compressed_len(c, 65536, &raw, &err));
    EXPECT_NE(err, "");
    // Filtered payloads: "ZSF" + the filter, 1..3 known; 0 and 4.. refused.
    uint8_t f = 9;
    Packet y = q;
    y.reserved = compressed_mark(4096, 3);
    EXPECT_EQ(y.reserved >> 32, 0x5A534603u);
    EXPECT_TRUE(compressed_len(y, 65536, &raw, &err, &f));
    EXPECT_EQ(err, "");
    EXPECT_EQ(f, 3);
    EXPECT_TRUE(compressed_len(q, 65536, &raw, &err, &f));
    EXPECT_EQ(f, 0);  // plain "ZSTD"
    for (uint64_t bad : {0u, 4u, 255u}) {
        y.reserved = kZstdFilterMark | (bad << 32) | 4096;
        EXPECT_TRUE(compressed_len(y, 65536, &raw, &err, &f));
        EXPECT_NE(err, "") << bad;
    }
    y.reserved = uint64_t(0x5A534700) << 32 | 4096;  // "ZSG.": not a mark at all
    EXPECT_FALSE(compressed_len(y, 65536, &raw, &err, &f));
}

// Fuzz target: any 128 bytes decode to either an error or a packet whose payload length is
// within bounds (what a reader then allocates). Never crashes.
static void fuzz_one(const uint8_t* data, uint64_t maxlen) {
    Packet q;
    std::string err = decode_packet(data, maxlen, &q);
    if (err.empty()) {
        ASSERT_LE(q.len, maxlen);
        if (!packet_has_payload(q.type)) {
            ASSERT_EQ(q.len, 0u);
        }
    }
    (void)decode_cmd(data);
}

TEST(ImpiWire, FuzzPacketDecoder) {
    std::mt19937_64 rng(20261121);
    uint8_t b[kPacketHeader];
    Packet seed;
    seed.type = PK_DATA;
    seed.len = 64;
    seed.msglen = 64;
    for (int i = 0; i < 200000; ++i) {
        if (i % 2) {
            for (auto& x : b) x = uint8_t(rng());
        } else {
            encode_packet(seed, b);
            for (int k = 0, n = int(rng() % 4) + 1; k < n; ++k) b[rng() % kPacketHeader] = uint8_t(rng());
        }
        fuzz_one(b, 1 + rng() % (1 << 20));
    }
}
