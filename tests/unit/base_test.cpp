#include <cstdlib>
#include <gtest/gtest.h>

#include "base/codec.hpp"
#include "base/socket.hpp"
#include "base/tunables.hpp"

using namespace wanmpi::base;

TEST(Tunables, ParseInt) {
    EXPECT_EQ(parse_int("42"), 42);
    EXPECT_EQ(parse_int("4k"), 4096);
    EXPECT_EQ(parse_int("2M"), 2 << 20);
    EXPECT_EQ(parse_int("1GiB"), 1LL << 30);
    EXPECT_EQ(parse_int("0x10"), 16);
    EXPECT_FALSE(parse_int("").has_value());
    EXPECT_FALSE(parse_int("abc").has_value());
    EXPECT_FALSE(parse_int("12q").has_value());
}

TEST(Tunables, ParseBoolDouble) {
    EXPECT_EQ(parse_bool("yes"), true);
    EXPECT_EQ(parse_bool("OFF"), false);
    EXPECT_FALSE(parse_bool("maybe").has_value());
    EXPECT_DOUBLE_EQ(*parse_double("2.5"), 2.5);
    EXPECT_FALSE(parse_double("2.5x").has_value());
    EXPECT_EQ(parse_duration_us("10ms"), 10000);
    EXPECT_EQ(parse_duration_us("3s"), 3000000);
    EXPECT_FALSE(parse_duration_us("3parsecs").has_value());
}

TEST(Tunables, ParseRate) {
    EXPECT_DOUBLE_EQ(*parse_rate_bps("200mbit"), 200e6);
    EXPECT_DOUBLE_EQ(*parse_rate_bps("1Gbit/s"), 1e9);
    EXPECT_DOUBLE_EQ(*parse_rate_bps("1.5gbit"), 1.5e9);
    EXPECT_DOUBLE_EQ(*parse_rate_bps("800kbit"), 800e3);
    EXPECT_DOUBLE_EQ(*parse_rate_bps("25MBps"), 200e6);
    EXPECT_DOUBLE_EQ(*parse_rate_bps("25mbyte"), 200e6);
    EXPECT_DOUBLE_EQ(*parse_rate_bps("64000"), 64000);
    EXPECT_FALSE(parse_rate_bps("").has_value());
    EXPECT_FALSE(parse_rate_bps("0mbit").has_value());
    EXPECT_FALSE(parse_rate_bps("-5mbit").has_value());
    EXPECT_FALSE(parse_rate_bps("fast").has_value());
    EXPECT_FALSE(parse_rate_bps("10parsecs").has_value());
}

TEST(Tunables, EnvironmentAliasAndDefault) {
    setenv("WANMPI_TESTX_SIZE", "8k", 1);
    static Tunable<int64_t> t("TESTX", "SIZE", 5, "test knob");
    EXPECT_EQ(t.get(), 8192);
    setenv("MY_ALIAS_FOR_TEST", "7", 1);
    static Tunable<int64_t> a("TESTX", "ALIASED", 5, "test knob", Level::developer,
                              "MY_ALIAS_FOR_TEST");
    EXPECT_EQ(a.get(), 7);
    static Tunable<int64_t> d("TESTX", "DEFAULTED", 5, "test knob");
    EXPECT_EQ(d.get(), 5);
    setenv("WANMPI_TESTX_BAD", "notanumber", 1);
    static Tunable<int64_t> b("TESTX", "BAD", 9, "test knob");
    EXPECT_EQ(b.get(), 9);  // malformed values fall back to the default (with a warning)
    bool found = false;
    for (auto* i : all_tunables()) found |= i->env == "WANMPI_TESTX_SIZE";
    EXPECT_TRUE(found);
}

TEST(Codec, BigEndian) {
    uint8_t b[8];
    put_be32(b, 0x41555448);
    EXPECT_EQ(b[0], 0x41);
    EXPECT_EQ(b[3], 0x48);
    EXPECT_EQ(get_be32(b), 0x41555448u);
    put_be64(b, 0x0102030405060708ull);
    EXPECT_EQ(b[0], 1);
    EXPECT_EQ(b[7], 8);
    EXPECT_EQ(get_be64(b), 0x0102030405060708ull);
}

TEST(Socket, ParseHostPort) {
    auto a = parse_host_port("10.1.2.3:7000");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "10.1.2.3");
    EXPECT_EQ(a->port, 7000);
    auto b = parse_host_port("[::1]:80");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->host, "::1");
    EXPECT_FALSE(parse_host_port("nohost"));
    EXPECT_FALSE(parse_host_port("h:0"));
    EXPECT_FALSE(parse_host_port("h:70000"));
    EXPECT_FALSE(parse_host_port("h:12a"));
    EXPECT_FALSE(parse_host_port(":80"));
}

TEST(Socket, ListenConnectLoopback) {
    std::string err;
    int l = tcp_listen("127.0.0.1", 0, 4, &err);
    ASSERT_GE(l, 0) << err;
    uint16_t port = local_port(l);
    int c = tcp_connect("127.0.0.1", port, 1000, &err);
    ASSERT_GE(c, 0) << err;
    Fd lf(l), cf(c);
    EXPECT_EQ(write_full(c, "hi", 2), 2);
    // Connecting to a closed port fails with a message naming the address.
    Fd tmp(tcp_listen("127.0.0.1", 0, 1, &err));
    uint16_t dead = local_port(tmp.get());
    tmp.reset();
    EXPECT_LT(tcp_connect("127.0.0.1", dead, 1000, &err), 0);
    EXPECT_NE(err.find("127.0.0.1"), std::string::npos);
}
