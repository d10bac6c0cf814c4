// Fuzz targets for what wanmpi decodes from the network during an IMPI start-up:
//
//   collate      the server's collated replies (label, client mask, concatenated data) as a
//                cluster's agent turns them into the global Job (impi_tables collate()),
//                checked for the invariants the ranks index with, and the Job's text form
//                round-tripping (encode_job/decode_job);
//   server       impi-server's command stream: a mutated client session (AUTH, IMPI, COLL...,
//                DONE, FINI) on a real socket against an in-process impi::Server; the server
//                must drop or fail it and, when it is still waiting, finish a real job after it;
//   agent        the other direction: a fake server answering an impi::Agent with a mutated
//                reply stream; the agent must fail with an error (or succeed) at once, never
//                wait for its start-up timeout;
//   packets      a stream of 128-byte IMPI packet headers + payloads framed as a host reads it
//                (decode_packet, with decode_cmd on the same bytes);
//   relay_codecs impi-relay's trunk control payloads (decode_trunk_hello, decode_trunk_ports in
//                both modes, decode_trunk_job): whatever decodes re-encodes to the same bytes;
//   relay_rewrite impi-relay's per-packet check and rewrite (relay_rewrite) of random headers
//                between the hosts of a fixed job (relay_fixture.hpp): a rejected header is left
//                as it was, an accepted one names procs of the pair's two hosts in the other
//                view and differs only in its proc ids;
//   link         wanmpi's link handshake (wanlink/handshake.hpp) as a host accepts it: HELLO
//                decode/encode round trip, and an acceptor that never lets forged bytes in;
//   relay_labels impi-relay's start-up label rewriting (relay_outward_contribution,
//                relay_inward_reply) on random data, masks and per-client counts;
//   zstd         a compressed DATA packet as a wanmpi host reads it (issue 14): the header's mark
//                (compressed_len), then the payload through wanlink::Decompressor into exactly
//                the announced raw length, guard bytes around it.
//
// Two drivers over the same targets:
//   - this file's gtest cases (always built, run in ctest): a deterministic-seed mutation fuzzer
//     from valid seeds (byte flips, interesting length values at field offsets, truncation,
//     insertion, duplication and removal of whole commands), a few seconds in total;
//   - libFuzzer (clang, tests/impi/fuzz-libfuzzer.sh): LLVMFuzzerTestOneInput below, where the
//     first byte picks the target. Build with -DWANMPI_LIBFUZZER.
// Every target returns normally on any input; a crash, a sanitizer report, a broken invariant or
// a hang (bounded waits, see kHang) is a failure.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/codec.hpp"
#include "base/socket.hpp"
#include "runtime/impi_agent.hpp"
#include "runtime/impi_relay.hpp"
#include "runtime/impi_resume.hpp"
#include "runtime/impi_server.hpp"
#include "runtime/impi_tables.hpp"
#include "synthetic_tables.hpp"
#include "relay_fixture.hpp"
#include "runtime/impi_wire.hpp"
#include "wanlink/compress.hpp"
#include "wanlink/handshake.hpp"

#ifndef WANMPI_LIBFUZZER
#include <gtest/gtest.h>
#endif

using namespace wanmpi;
using namespace wanmpi::impi;
using Bytes = std::vector<uint8_t>;

namespace {

// A target that has not returned after this long is hung (the server and agent under test run
// with sub-second timeouts of their own).
constexpr auto kHang = std::chrono::seconds(10);

[[noreturn]] void fail(const char* target, const std::string& why) {
    std::fprintf(stderr, "impi_fuzz: %s: %s\n", target, why.c_str());
    std::fflush(stderr);
    std::abort();  // libFuzzer keeps the input; gtest reports the death
}
#define FUZZ_CHECK(target, cond) \
    do { if (!(cond)) fail(target, "invariant broken: " #cond); } while (0)

void put32(Bytes& b, uint32_t v) {
    uint8_t x[4];
    base::put_be32(x, v);
    b.insert(b.end(), x, x + 4);
}
void cmd(Bytes& b, uint32_t c, int32_t len) {
    uint8_t h[kCmdHeader];
    encode_cmd(CmdHeader{c, len}, h);
    b.insert(b.end(), h, h + kCmdHeader);
}

// ---- synthetic clusters -------------------------------------------------------------------------

using wanmpi::impi::synthetic::tables;  // synthetic_tables.hpp

std::vector<ClusterTables> sample_clusters(std::mt19937_64& rng) {
    int n = 1 + int(rng() % 3);
    std::vector<ClusterTables> ts;
    for (int c = 0; c < n; ++c) {
        std::vector<int> hosts(1 + rng() % 3);
        for (auto& h : hosts) h = 1 + int(rng() % 3);
        ts.push_back(tables(c, hosts));
        if (rng() % 3 == 0) ts.back().versions = {kVersionPlain};
        if (rng() % 2) ts.back().datalen = 4096;
    }
    return ts;
}

// ================================================================================================
// collate: input format (what the libFuzzer target sees):
//   u8 nclients, then per label in kLabelOrder: u8 present, u32 mask, u16 len, len bytes.
// ================================================================================================

Bytes encode_replies(int nclients, const std::vector<ClusterTables>& ts) {
    Bytes b{uint8_t(nclients)};
    for (uint32_t label : kLabelOrder) {
        Bytes d;
        for (auto& t : ts) {
            auto c = contribution(t, label);
            d.insert(d.end(), c.begin(), c.end());
        }
        b.push_back(1);
        put32(b, (1u << ts.size()) - 1);
        b.push_back(uint8_t(d.size() >> 8));
        b.push_back(uint8_t(d.size()));
        b.insert(b.end(), d.begin(), d.end());
    }
    return b;
}

bool fuzz_collate(const uint8_t* p, size_t n) {
    if (n < 1) return false;
    size_t at = 0;
    int nclients = p[at++] % 40;  // beyond 32 on purpose
    std::map<uint32_t, CollReply> replies;
    for (uint32_t label : kLabelOrder) {
        if (at + 7 > n) break;
        bool present = p[at] & 1;
        uint32_t mask = base::get_be32(p + at + 1);
        size_t len = size_t(p[at + 5]) << 8 | p[at + 6];
        at += 7;
        len = std::min(len, n - at);
        if (present) {
            CollReply& r = replies[label];
            r.mask = mask;
            r.data.assign(p + at, p + at + len);
        }
        at += len;
    }
    Job job;
    if (!collate(nclients, replies, &job).ok()) return false;
    const char* t = "collate";
    // What every rank indexes with after the start-up.
    FUZZ_CHECK(t, job.nclients() == nclients && nclients >= 1);
    FUZZ_CHECK(t, job.version_matrix.size() == size_t(nclients * nclients));
    int h = 0, r = 0;
    for (const auto& c : job.clients) {
        FUZZ_CHECK(t, c.first_host == h && c.first_rank == r);
        FUZZ_CHECK(t, c.nhosts >= 0 && c.nprocs >= 0);
        h += c.nhosts;
        r += c.nprocs;
    }
    FUZZ_CHECK(t, size_t(h) == job.hosts.size() && size_t(r) == job.procs.size());
    for (size_t i = 0; i < job.hosts.size(); ++i) {
        FUZZ_CHECK(t, job.hosts[i].client >= 0 && job.hosts[i].client < nclients);
        FUZZ_CHECK(t, job.hosts[i].first_rank >= 0 && job.hosts[i].nprocs >= 0);
        FUZZ_CHECK(t, size_t(job.hosts[i].first_rank + job.hosts[i].nprocs) <= job.procs.size());
    }
    for (size_t i = 0; i < job.procs.size(); ++i) {
        const auto& pe = job.procs[i];
        FUZZ_CHECK(t, pe.host >= 0 && size_t(pe.host) < job.hosts.size());
        FUZZ_CHECK(t, job.hosts[size_t(pe.host)].client == pe.client);
        FUZZ_CHECK(t, job.rank_of(pe.id) == int(i));
    }
    FUZZ_CHECK(t, job.maxlen >= 1 && job.ackmark >= 1 && job.ackmark <= job.hiwater);
    FUZZ_CHECK(t, job.tag_ub >= kMinTagUb);
    for (int a = 0; a < nclients; ++a)
        for (int b = 0; b < nclients; ++b) FUZZ_CHECK(t, job.version(a, b) == job.version(b, a));
    Job again;
    std::string text = encode_job(job);
    FUZZ_CHECK(t, decode_job(text, &again).ok());
    FUZZ_CHECK(t, encode_job(again) == text);
    return true;
}

// ================================================================================================
// server: the input is the byte stream one client connection sends to impi::Server.
// ================================================================================================

// A valid session of client `rank`, and where its commands start (for structured mutations).
Bytes client_session(int rank, std::mt19937_64& rng, std::vector<size_t>* starts) {
    Bytes b;
    auto mark = [&] { if (starts) starts->push_back(b.size()); };
    mark();
    cmd(b, CMD_AUTH, 4);
    put32(b, 1u << AUTH_NONE);
    mark();
    cmd(b, CMD_IMPI, 4);
    put32(b, uint32_t(rank));
    for (uint32_t label : kLabelOrder) {
        if (rng() % 8 == 0) continue;  // labels are optional for the server
        Bytes d(rng() % 24);
        for (auto& x : d) x = uint8_t(rng());
        mark();
        cmd(b, CMD_COLL, int32_t(4 + d.size()));
        put32(b, label);
        b.insert(b.end(), d.begin(), d.end());
    }
    mark();
    cmd(b, CMD_DONE, 0);
    mark();
    cmd(b, CMD_FINI, 0);
    return b;
}

int listen_loopback() {
    std::string err;
    int fd = base::tcp_listen("127.0.0.1", 0, 64, &err);
    if (fd < 0) fail("setup", err);
    return fd;
}

int connect_loopback(uint16_t port) {
    std::string err;
    int fd = base::tcp_connect("127.0.0.1", port, 5000, &err);
    if (fd < 0) fail("setup", err);
    return fd;
}

void send_some(int fd, const uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return;  // the peer dropped us: fine, that is what hostile input gets
        p += k;
        n -= size_t(k);
    }
}

// Runs a well-formed client to the end of the job, or until the server has finished without
// it (then it was not needed: the hostile connection ended the job). Bounded by kHang.
void good_client(uint16_t port, int rank, std::future<int>& done) {
    std::mt19937_64 rng(uint64_t(rank) + 7);
    Bytes s = client_session(rank, rng, nullptr);
    int fd = connect_loopback(port);
    send_some(fd, s.data(), s.size());
    auto end = std::chrono::steady_clock::now() + kHang;
    uint8_t buf[4096];
    for (;;) {
        if (done.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready) break;
        if (std::chrono::steady_clock::now() > end) fail("server", "the server hangs");
        pollfd pf{fd, POLLIN, 0};
        if (::poll(&pf, 1, 20) > 0 && ::recv(fd, buf, sizeof buf, 0) <= 0) {
            // The server closed us: it has finished (FINI from everyone) or failed.
            if (done.wait_for(kHang) != std::future_status::ready)
                fail("server", "the server closed a client but did not finish");
            break;
        }
    }
    ::close(fd);
}

int fuzz_server(const uint8_t* p, size_t n, int nclients = 1) {
    int lfd = listen_loopback();
    uint16_t port = base::local_port(lfd);
    ServerConfig cfg;
    cfg.nclients = nclients;
    cfg.join_timeout_ms = 500;
    cfg.stall_timeout_ms = 500;
    std::packaged_task<int()> task([&] {
        Server s(cfg, lfd);
        return s.run();
    });
    std::future<int> done = task.get_future();
    std::thread th(std::move(task));
    // With two clients, a real client 1 is already waiting when the hostile bytes come.
    int other = -1;
    if (nclients == 2) {
        std::mt19937_64 rng(99);
        Bytes s = client_session(1, rng, nullptr);
        other = connect_loopback(port);
        send_some(other, s.data(), 12 + 12);  // AUTH + IMPI
    }
    int fd = connect_loopback(port);
    send_some(fd, p, n);
    ::shutdown(fd, SHUT_WR);
    // Read what the server answers (as a real client would before it closes) until the server
    // closes us, the job ends, or it has been quiet for a moment (it waits for more input).
    {
        uint8_t buf[4096];
        auto quiet = std::chrono::milliseconds(100);
        auto last = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - last < quiet) {
            if (done.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready) break;
            pollfd pf{fd, POLLIN, 0};
            if (::poll(&pf, 1, 20) <= 0) continue;
            if (::recv(fd, buf, sizeof buf, 0) <= 0) break;
            last = std::chrono::steady_clock::now();
        }
    }
    // Whatever the hostile stream did, it is over when we close it: a joined client that closes
    // before FINI ends the job (exit 1); an unjoined one is dropped and the job waits for a
    // real client 0, which we then provide (exit 0), unless the job already ended.
    ::close(fd);
    if (done.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
        if (other >= 0) {
            // Finish client 1 as well: the rest of its session.
            std::mt19937_64 rng(99);
            Bytes s = client_session(1, rng, nullptr);
            send_some(other, s.data() + 24, s.size() - 24);
        }
        good_client(port, 0, done);
    }
    if (done.wait_for(kHang) != std::future_status::ready) fail("server", "the server hangs");
    int rc = done.get();
    th.join();
    if (other >= 0) ::close(other);
    ::close(lfd);
    if (rc != 0 && rc != 1) fail("server", "run() returned " + std::to_string(rc));
    return rc;
}

// ================================================================================================
// agent: the input is what the "server" answers, written at once, then the server closes.
// ================================================================================================

Bytes server_replies(const std::vector<ClusterTables>& ts, std::vector<size_t>* starts) {
    Bytes b;
    auto mark = [&] { if (starts) starts->push_back(b.size()); };
    mark();
    put32(b, AUTH_NONE);  // bare {which, len}
    put32(b, 0);
    mark();
    cmd(b, CMD_IMPI, 4);
    put32(b, uint32_t(ts.size()));
    for (uint32_t label : kLabelOrder) {
        Bytes d;
        for (auto& t : ts) {
            auto c = contribution(t, label);
            d.insert(d.end(), c.begin(), c.end());
        }
        mark();
        cmd(b, CMD_COLL, int32_t(8 + d.size()));
        put32(b, label);
        put32(b, (1u << ts.size()) - 1);
        b.insert(b.end(), d.begin(), d.end());
    }
    mark();
    cmd(b, CMD_DONE, 0);
    return b;
}

bool fuzz_agent(const uint8_t* p, size_t n, const ClusterTables& mine) {
    int lfd = listen_loopback();
    uint16_t port = base::local_port(lfd);
    std::thread srv([&] {
        int fd = ::accept(lfd, nullptr, nullptr);
        if (fd < 0) return;
        send_some(fd, p, n);
        ::shutdown(fd, SHUT_WR);
        uint8_t buf[4096];
        pollfd pf{fd, POLLIN, 0};
        auto end = std::chrono::steady_clock::now() + kHang;
        // Drain until the agent closes (it does once start() returns, with our Agent).
        while (std::chrono::steady_clock::now() < end)
            if (::poll(&pf, 1, 50) > 0 && ::recv(fd, buf, sizeof buf, 0) <= 0) break;
        ::close(fd);
    });
    AgentConfig cfg;
    cfg.client = 0;
    cfg.server = "127.0.0.1:" + std::to_string(port);
    cfg.connect_timeout_ms = 5000;
    cfg.startup_timeout_ms = 60000;  // far above kHang: returning must not need the timeout
    auto t0 = std::chrono::steady_clock::now();
    bool good = false;
    {
        Agent a;
        Job job;
        base::Status s = a.start(cfg, mine, &job);
        good = s.ok();
        if (s.ok()) {
            FUZZ_CHECK("agent", job.nclients() >= 1 && job.size() >= 1);
            FUZZ_CHECK("agent", job.ackmark >= 1 && job.ackmark <= job.hiwater);
        } else {
            FUZZ_CHECK("agent", !s.message().empty());
        }
    }
    if (std::chrono::steady_clock::now() - t0 > kHang)
        fail("agent", "the agent waited for its timeout on a closed connection");
    srv.join();
    ::close(lfd);
    return good;
}

// ================================================================================================
// packets: a host's read loop over a byte stream (header, then pk_len payload bytes).
// ================================================================================================

void fuzz_packets(const uint8_t* p, size_t n, uint64_t maxlen) {
    size_t at = 0;
    while (at + kPacketHeader <= n) {
        Packet q;
        (void)decode_cmd(p + at);
        std::string err = decode_packet(p + at, maxlen, &q);
        if (!err.empty()) return;  // the host drops the connection here
        FUZZ_CHECK("packets", q.len <= maxlen);
        FUZZ_CHECK("packets", packet_has_payload(q.type) || q.len == 0);
        FUZZ_CHECK("packets", q.type <= PK_FINI || q.type == PK_WAN_ACK);
        at += kPacketHeader;
        if (q.len > n - at) return;  // truncated: the host waits for more or sees EOF
        at += q.len;
    }
}

// ================================================================================================
// link: wanmpi's link handshake between two hosts (wanlink/handshake.hpp), as the accepting side
// reads it after a claimed host rank: the first 64 bytes must decode to a HELLO that re-encodes
// to the same bytes, or be refused; an acceptor fed the input (then EOF) on a socket never
// succeeds (the proof cannot be forged), never hangs, and says why it failed.
// ================================================================================================

void fuzz_link(const uint8_t* p, size_t n) {
    if (n >= wanlink::kHello) {
        wanlink::Hello h;
        if (wanlink::decode_hello(p, &h).empty()) {
            uint8_t back[wanlink::kHello];
            wanlink::encode_hello(h, back);
            FUZZ_CHECK("link", std::memcmp(back, p, wanlink::kHello) == 0);
        }
    }
    static const uint8_t sess[32] = {};
    wanlink::Secret sec;
    sec.bytes.assign(24, 'k');
    static const wanlink::Key key = wanlink::link_key(sec, sess);
    wanlink::Hello mine;
    mine.from = 0;
    mine.to = 1;
    mine.flags = wanlink::kFlagAuth;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return;
    wanlink::LinkHandshake a(false, &key, sess, mine, 1);
    size_t at = 0;
    wanlink::LinkHandshake::Result r = wanlink::LinkHandshake::again;
    while (r == wanlink::LinkHandshake::again) {
        if (at < n) {
            ssize_t w = ::write(sv[0], p + at, std::min<size_t>(n - at, 4096));
            if (w > 0) at += size_t(w);
        } else {
            ::shutdown(sv[0], SHUT_WR);
        }
        r = a.step(sv[1]);
        char sink[256];
        while (::recv(sv[0], sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
        if (at >= n && r == wanlink::LinkHandshake::again) r = a.step(sv[1]);
    }
    FUZZ_CHECK("link", r == wanlink::LinkHandshake::failed && !a.reason().empty());
    ::close(sv[0]);
    ::close(sv[1]);
}

// ================================================================================================
// impi-relay. relay_codecs input: u8 which (0 TRNK, 1 TPRT request, 2 TPRT answer, 3 TJOB), then
// the payload. relay_rewrite: u8 h, u8 j, u8 flags, then a 128-byte header (zero-padded); flag
// bits 1/2 put a proc of the job (chosen by the header's pid bytes) into src/dest first, so the
// checks past "unknown proc" are reached. relay_labels: u8 label, u8 private client, u8 counts
// (2 bits per client, 4 clients at most), u32 mask, u16 agent length, then agent and reply data.
// ================================================================================================

const relay_fixture::World& relay_world() {
    static const relay_fixture::World w = relay_fixture::make_world({{2, 1}, {1, 2}, {1}}, 1);
    return w;
}

void fuzz_relay_codecs(const uint8_t* p, size_t n) {
    if (n < 1) return;
    const char* t = "relay_codecs";
    uint8_t which = p[0] % 6;
    ++p, --n;
    Bytes in(p, p + n);  // an exact-size copy: ASan sees any read past the payload
    const uint8_t* q = in.empty() ? nullptr : in.data();
    if (which == 0) {
        TrunkHello h;
        if (decode_trunk_hello(q, n, &h) == "") {
            FUZZ_CHECK(t, encode_trunk_hello(h) == in);
            FUZZ_CHECK(t, ipv4_from_host_id(h.pub) && ipv4_from_host_id(h.priv));
        }
    } else if (which <= 2) {
        TrunkPorts tp;
        bool with = which == 2;
        if (decode_trunk_ports(q, n, with, &tp) == "") {
            FUZZ_CHECK(t, tp.ports.size() == (with ? size_t(tp.n_pub) + tp.n_priv : 0));
            for (uint32_t port : tp.ports) FUZZ_CHECK(t, port >= 1 && port <= 65535);
            FUZZ_CHECK(t, encode_trunk_ports(tp) == in);
        }
    } else if (which == 4) {
        // BACK (impi_resume.hpp): a decoded message encodes to the same bytes.
        BackMsg b;
        if (decode_back(q, n, &b) == "") {
            FUZZ_CHECK(t, b.client < 32 && encode_back(b) == in);
        }
        // TBCK (a trunk member coming back): the same, with its index.
        uint32_t index = 0;
        if (decode_trunk_back(q, n, &b, &index) == "") {
            FUZZ_CHECK(t, b.client < 32 && !b.fini && index >= 1 && index <= 63 &&
                              encode_trunk_back(b, index) == in);
        }
    } else if (which == 5) {
        // The relay's state file: only a text with a MAC made with the secret decodes, and
        // what it decodes to survives another round trip unchanged.
        static const wanlink::Secret k{std::vector<uint8_t>(32, 0x5a), "fuzz"};
        RelayState st, st2;
        std::string text(in.begin(), in.end());
        if (decode_relay_state(text, k, &st) == "") {
            std::string again = encode_relay_state(st, k);
            FUZZ_CHECK(t, decode_relay_state(again, k, &st2) == "" &&
                              encode_relay_state(st2, k) == again);
        }
    } else {
        TrunkJob tj;
        if (decode_trunk_job(q, n, &tj) == "") {
            FUZZ_CHECK(t, tj.trunks >= 2 && tj.trunks <= 64 && tj.index >= 1 &&
                              tj.index < tj.trunks && tj.client < 32);
            FUZZ_CHECK(t, 20 + tj.out.size() + tj.in.size() + 68 == n);
            FUZZ_CHECK(t, encode_trunk_job(tj) == in);
            Job o, i;  // what a member does next with the texts
            if (decode_job(tj.out, &o).ok() && decode_job(tj.in, &i).ok()) {
                RelayMap m;
                (void)make_relay_map(int(tj.client), int(tj.trunks), int(tj.index), o, i, &m);
            }
        }
    }
}

void fuzz_relay_rewrite(const uint8_t* p, size_t n) {
    if (n < 3) return;
    const char* t = "relay_rewrite";
    const relay_fixture::World& w = relay_world();
    const RelayMap& m = w.map;
    std::vector<int> own, outside;
    for (int h = 0; h < int(m.out.hosts.size()); ++h) (m.own(h) ? own : outside).push_back(h);
    int h = own[p[0] % own.size()], j = outside[p[1] % outside.size()];
    bool outward = p[2] & 1;
    uint8_t hdr[kPacketHeader] = {};
    std::memcpy(hdr, p + 3, std::min(n - 3, kPacketHeader));
    const Job& from = outward ? m.in : m.out;
    const Job& to = outward ? m.out : m.in;
    for (int k = 0; k < 2; ++k)
        if (p[2] & (2 << k)) {
            size_t r = hdr[31 + 24 * k] % from.procs.size();  // the pid's last byte picks
            std::memcpy(hdr + 8 + 24 * k, from.procs[r].id.host.data(), 16);
            base::put_be64(hdr + 24 + 24 * k, uint64_t(from.procs[r].id.pid));
        }
    uint8_t before[kPacketHeader];
    std::memcpy(before, hdr, kPacketHeader);
    uint64_t pay = ~0ull;
    std::string err = relay_rewrite(m, h, j, outward, hdr, &pay);
    if (!err.empty()) {
        FUZZ_CHECK(t, std::memcmp(before, hdr, kPacketHeader) == 0);
        return;
    }
    Packet a, b;
    FUZZ_CHECK(t, decode_packet(before, m.out.maxlen, &a) == "");
    FUZZ_CHECK(t, decode_packet(hdr, m.out.maxlen, &b) == "");
    FUZZ_CHECK(t, pay == (packet_has_payload(a.type) ? a.len : 0) && pay <= m.out.maxlen);
    // Only the proc ids (bytes 8..55) may change.
    FUZZ_CHECK(t, std::memcmp(before, hdr, 8) == 0);
    FUZZ_CHECK(t, std::memcmp(before + 56, hdr + 56, kPacketHeader - 56) == 0);
    if (a.type == PK_FINI) {
        FUZZ_CHECK(t, std::memcmp(before, hdr, kPacketHeader) == 0);
        return;
    }
    int sh = outward ? h : j, dh = outward ? j : h;
    int rs = from.rank_of(a.src), rd = from.rank_of(a.dest);
    FUZZ_CHECK(t, rs >= 0 && rd >= 0);
    FUZZ_CHECK(t, from.procs[size_t(rs)].host == sh && from.procs[size_t(rd)].host == dh);
    FUZZ_CHECK(t, b.src == to.procs[size_t(rs)].id && b.dest == to.procs[size_t(rd)].id);
}

void fuzz_relay_labels(const uint8_t* p, size_t n) {
    if (n < 9) return;
    const char* t = "relay_labels";
    const relay_fixture::World& w = relay_world();
    static const uint32_t kLabels[] = {C_VERSION, C_NHOSTS, C_NPROCS, C_DATALEN, C_TAGUB,
                                       C_COLL_XSIZE, C_COLL_MAXLINEAR, H_IPV6, H_PORT, H_NPROCS,
                                       H_ACKMARK, H_HIWATER, P_IPV6, impi::P_PID, 0, 0x7777};
    uint32_t label = kLabels[p[0] % std::size(kLabels)];
    int nclients = 1 + (p[1] >> 4) % 4;
    int client = (p[1] & 15) % nclients;
    std::vector<uint32_t> nhosts, nprocs;
    for (int c = 0; c < nclients; ++c) {
        uint32_t x = (p[2] >> (2 * c)) & 3;
        nhosts.push_back(x);
        nprocs.push_back(x + (p[1] & 1));
    }
    uint32_t mask = base::get_be32(p + 3);
    size_t alen = std::min<size_t>(size_t(p[7]) << 8 | p[8], n - 9);
    Bytes agent(p + 9, p + 9 + alen);
    CollReply reply{mask, Bytes(p + 9 + alen, p + n)};
    // Outward: the agent's bytes with the client's counts.
    Bytes out;
    base::Status s = relay_outward_contribution(w.faces, label, agent, nhosts[size_t(client)],
                                                nprocs[size_t(client)], &out);
    if (s.ok()) {
        if (relay_fixture::rewritten(label)) FUZZ_CHECK(t, out.size() == agent.size());
        else FUZZ_CHECK(t, out == agent);
    }
    // Inward: the reply with the agent's part.
    CollReply in;
    s = relay_inward_reply(w.faces, client, label, reply, agent, nhosts, nprocs, &in);
    if (s.ok()) {
        FUZZ_CHECK(t, in.mask == reply.mask && in.data.size() == reply.data.size());
        if (!relay_fixture::rewritten(label)) FUZZ_CHECK(t, in.data == reply.data);
    } else {
        FUZZ_CHECK(t, !s.message().empty());
    }
}

// ================================================================================================
// zstd: header (128 bytes) + payload, as Wan::on_packet_header / inflate take them.
// ================================================================================================

void fuzz_zstd(const uint8_t* p, size_t n) {
    const char* t = "zstd";
    if (n < kPacketHeader) return;
    constexpr uint64_t kMax = 1 << 16;
    Packet q;
    if (!decode_packet(p, kMax, &q).empty()) return;
    uint32_t raw = 0;
    std::string err;
    uint8_t filter = 0;
    if (!compressed_len(q, kMax, &raw, &err, &filter) || !err.empty()) return;
    FUZZ_CHECK(t, q.len > 0 && q.len < raw && raw <= kMax && raw <= q.msglen);
    FUZZ_CHECK(t, filter < kZstdFilters);
    const size_t have = std::min<size_t>(q.len, n - kPacketHeader);  // a short read: EOF
    static wanlink::Decompressor d;
    constexpr size_t kGuard = 32;
    std::vector<uint8_t> out(raw + 2 * kGuard, 0xA5);
    std::vector<uint8_t> dec(raw + 2 * kGuard, 0xA5);
    // As Wan::inflate: a filtered payload decodes into scratch, then the filter is undone.
    uint8_t* first = filter ? dec.data() + kGuard : out.data() + kGuard;
    if (d.run(p + kPacketHeader, have, first, raw).empty() && filter)
        wanlink::filter_decode(wanlink::Filter(filter), first, raw, out.data() + kGuard);
    for (size_t i = 0; i < kGuard; ++i)
        FUZZ_CHECK(t, out[i] == 0xA5 && out[kGuard + raw + i] == 0xA5 && dec[i] == 0xA5 &&
                          dec[kGuard + raw + i] == 0xA5);
}

// ================================================================================================
// The mutation engine of the gtest driver.
// ================================================================================================

Bytes mutate(Bytes b, const std::vector<size_t>& starts, std::mt19937_64& rng) {
    static const uint32_t kInteresting[] = {0, 1, 3, 4, 7, 8, 0x7f, 0x80, 0xff, 0x100, 0xffff,
                                            0x10000, 0x7fffffff, 0x80000000u, 0xffffffffu,
                                            uint32_t(kMaxCmdPayload), uint32_t(kMaxCmdPayload) + 1};
    int ops = 1 + int(rng() % 4);
    for (int k = 0; k < ops; ++k) {
        if (b.empty()) b.push_back(0);
        size_t s = starts.empty() ? 0 : starts[rng() % starts.size()];
        switch (rng() % 9) {
        case 0:
        case 1:  // flip a byte
            b[rng() % b.size()] ^= uint8_t(1u << (rng() % 8));
            break;
        case 2:  // a random byte
            b[rng() % b.size()] = uint8_t(rng());
            break;
        case 3:  // an interesting value in a command's code or length field
        case 4: {
            size_t at = s + ((rng() % 2) ? 4 : 0) + (rng() % 3 == 0 ? 8 : 0);
            if (at + 4 <= b.size())
                base::put_be32(b.data() + at, kInteresting[rng() % std::size(kInteresting)]);
            break;
        }
        case 5:  // truncate
            b.resize(rng() % (b.size() + 1));
            break;
        case 6: {  // insert random bytes
            Bytes ins(1 + rng() % 16);
            for (auto& x : ins) x = uint8_t(rng());
            b.insert(b.begin() + long(rng() % (b.size() + 1)), ins.begin(), ins.end());
            break;
        }
        case 7: {  // duplicate a command (from one start to the next)
            if (starts.size() < 2) break;
            size_t i = rng() % (starts.size() - 1);
            if (starts[i + 1] > b.size()) break;
            Bytes c(b.begin() + long(starts[i]), b.begin() + long(starts[i + 1]));
            b.insert(b.begin() + long(starts[i + 1]), c.begin(), c.end());
            break;
        }
        default: {  // remove a command
            if (starts.size() < 2) break;
            size_t i = rng() % (starts.size() - 1);
            if (starts[i + 1] > b.size()) break;
            b.erase(b.begin() + long(starts[i]), b.begin() + long(starts[i + 1]));
            break;
        }
        }
    }
    return b;
}

}  // namespace

#ifdef WANMPI_LIBFUZZER
// libFuzzer: byte 0 picks the target, the rest is its input.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static bool once = [] {
        std::signal(SIGPIPE, SIG_IGN);
        setenv("WANMPI_LOG_LEVEL", "0", 1);
        return true;
    }();
    (void)once;
    if (size < 1) return 0;
    const uint8_t* p = data + 1;
    size_t n = size - 1;
    switch (data[0] % 9) {
    case 0: fuzz_collate(p, n); break;
    case 1:  // the next byte: 1 or 2 clients (with 2, a real client 1 is already waiting)
        if (n >= 1) fuzz_server(p + 1, n - 1, 1 + (p[0] & 1));
        break;
    case 2: fuzz_agent(p, n, tables(0, {2, 1})); break;
    case 3: fuzz_packets(p, n, 1 + (n ? p[0] : 0) * 4096u); break;
    case 4: fuzz_relay_codecs(p, n); break;
    case 5: fuzz_relay_rewrite(p, n); break;
    case 6: fuzz_link(p, n); break;
    case 7: fuzz_relay_labels(p, n); break;
    default: fuzz_zstd(p, n); break;
    }
    return 0;
}
#else

class ImpiFuzz : public ::testing::Test {
protected:
    static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }
};

TEST_F(ImpiFuzz, Collate) {
    std::mt19937_64 rng(20261201);
    int ok = 0;
    for (int i = 0; i < 20000; ++i) {
        auto ts = sample_clusters(rng);
        Bytes seed = encode_replies(int(ts.size()), ts);
        // Label boundaries for structured mutations: every 7-byte label header.
        std::vector<size_t> starts;
        for (size_t at = 1; at + 7 <= seed.size();) {
            starts.push_back(at);
            at += 7 + (size_t(seed[at + 5]) << 8 | seed[at + 6]);
        }
        Bytes in;
        if (i % 10 == 0) {
            in = seed;  // the honest replies must collate
            ok += fuzz_collate(in.data(), in.size());
            continue;
        }
        if (i % 10 == 1) {
            in.resize(rng() % 300);
            for (auto& x : in) x = uint8_t(rng());
        } else {
            in = mutate(seed, starts, rng);
            if (rng() % 4 == 0 && !in.empty()) in[0] = uint8_t(rng() % 40);  // client count
        }
        fuzz_collate(in.data(), in.size());
    }
    EXPECT_EQ(ok, 2000);
}

TEST_F(ImpiFuzz, ServerCommandStream) {
    std::mt19937_64 rng(20261202);
    int completed = 0;
    for (int i = 0; i < 1200; ++i) {
        std::vector<size_t> starts;
        Bytes seed = client_session(0, rng, &starts);
        Bytes in;
        switch (i % 8) {
        case 0:  // random garbage
            in.resize(rng() % 200);
            for (auto& x : in) x = uint8_t(rng());
            break;
        case 1:  // the valid session itself: the job must complete
            in = seed;
            break;
        default:
            in = mutate(seed, starts, rng);
        }
        int nclients = (i % 5 == 4) ? 2 : 1;
        int rc = fuzz_server(in.data(), in.size(), nclients);
        if (i % 8 == 1 && nclients == 1) {
            // An honest session of the only client is the whole job. (With two clients the
            // same bytes send FINI before the server's DONE, which the server refuses.)
            EXPECT_EQ(rc, 0) << "iteration " << i;
            ++completed;
        }
    }
    EXPECT_EQ(completed, 120);
}

TEST_F(ImpiFuzz, AgentReplyStream) {
    std::mt19937_64 rng(20261203);
    ClusterTables mine = tables(0, {2, 1});
    int ok = 0;
    for (int i = 0; i < 1000; ++i) {
        std::vector<ClusterTables> ts = {mine, tables(1, {1 + int(rng() % 3)})};
        std::vector<size_t> starts;
        Bytes seed = server_replies(ts, &starts);
        Bytes in = (i % 10 == 0) ? seed : mutate(seed, starts, rng);
        if (i % 10 == 5) {
            in.resize(rng() % 64);
            for (auto& x : in) x = uint8_t(rng());
        }
        bool good = fuzz_agent(in.data(), in.size(), mine);
        if (i % 10 == 0) {
            EXPECT_TRUE(good) << "the honest reply stream must give a job (iteration " << i << ")";
            ok += good;
        }
    }
    EXPECT_EQ(ok, 100);
}

TEST_F(ImpiFuzz, PacketStream) {
    std::mt19937_64 rng(20261204);
    for (int i = 0; i < 100000; ++i) {
        uint64_t maxlen = (rng() % 2) ? 4096 : 1 + rng() % (1 << 20);
        Bytes b;
        std::vector<size_t> starts;
        for (int k = 0, m = 1 + int(rng() % 4); k < m; ++k) {
            Packet p;
            p.type = uint32_t(rng() % 8);
            p.len = packet_has_payload(p.type) ? uint32_t(rng() % std::min<uint64_t>(maxlen, 64)) : 0;
            p.msglen = p.len + ((rng() % 2) ? 0 : rng() % 100000);
            p.tag = int32_t(rng());
            p.cid = rng();
            starts.push_back(b.size());
            uint8_t h[kPacketHeader];
            encode_packet(p, h);
            b.insert(b.end(), h, h + kPacketHeader);
            b.resize(b.size() + p.len, uint8_t(k));
        }
        Bytes in = (i % 5 == 0) ? b : mutate(b, starts, rng);
        fuzz_packets(in.data(), in.size(), maxlen);
    }
}

TEST_F(ImpiFuzz, LinkHandshake) {
    std::mt19937_64 rng(20261126);
    for (int i = 0; i < 4000; ++i) {
        wanlink::Hello h;
        h.from = uint32_t(rng() % 3);
        h.to = 0;
        h.flags = uint8_t(rng() % 16);
        h.kind = uint8_t(rng() % 2);
        h.recv_off = rng();
        uint8_t hb[wanlink::kHello];
        wanlink::encode_hello(h, hb);
        Bytes b(hb, hb + wanlink::kHello);
        b.resize(b.size() + wanlink::kMac, uint8_t(rng()));
        Bytes in = (i % 7 == 0) ? b : mutate(b, {0, wanlink::kHello}, rng);
        fuzz_link(in.data(), in.size());
    }
}

// ---- impi-relay ------------------------------------------------------------------------------

// A state file as impi-relay -state writes it, with the fuzz target's secret.
static Bytes restart_state_seed(const relay_fixture::World& w) {
    RelayState st = relay_fixture::sample_state(w);
    std::string t = encode_relay_state(st, wanlink::Secret{std::vector<uint8_t>(32, 0x5a), "fuzz"});
    return Bytes(t.begin(), t.end());
}

TEST_F(ImpiFuzz, RelayTrunkCodecs) {
    std::mt19937_64 rng(20261205);
    const relay_fixture::World& w = relay_world();
    TrunkHello hello{host_id_from_ipv4("192.0.2.7"), host_id_from_ipv4("10.0.0.7")};
    std::vector<Bytes> seeds = {
        encode_trunk_hello(hello),
        encode_trunk_ports(TrunkPorts{3, 2, {}}),
        encode_trunk_ports(TrunkPorts{3, 2, {1000, 1001, 1002, 2000, 2001}}),
        encode_trunk_job(TrunkJob{3, 1, 1, encode_job(w.out), encode_job(w.in), {}}),
        encode_trunk_job(TrunkJob{2, 1, 0, "", "", {}}),
        encode_back(BackMsg{5, true, {}}),
        restart_state_seed(w),
    };
    const uint8_t which[] = {0, 1, 2, 3, 3, 4, 5};
    int good = 0;
    for (int i = 0; i < 40000; ++i) {
        size_t k = size_t(i) % seeds.size();
        // Field boundaries for the structured mutations (every 4 bytes of the fixed part).
        std::vector<size_t> starts = {0, 4, 8, 12, 16, 20};
        Bytes in;
        if (i % 10 == 0) {
            in = seeds[k];
        } else if (i % 10 == 1) {
            in.resize(rng() % 64);
            for (auto& x : in) x = uint8_t(rng());
        } else {
            in = mutate(seeds[k], starts, rng);
        }
        in.insert(in.begin(), uint8_t(i % 10 == 1 ? rng() % 6 : which[k]));
        if (i % 10 == 0) {
            // The honest payloads decode.
            const uint8_t* q = in.data() + 1;
            size_t n = in.size() - 1;
            TrunkHello h;
            TrunkPorts tp;
            TrunkJob tj;
            BackMsg b;
            RelayState st;
            static const wanlink::Secret key{std::vector<uint8_t>(32, 0x5a), "fuzz"};
            std::string err = which[k] == 0   ? decode_trunk_hello(q, n, &h)
                              : which[k] == 3 ? decode_trunk_job(q, n, &tj)
                              : which[k] == 4 ? decode_back(q, n, &b)
                              : which[k] == 5 ? decode_relay_state(std::string(q, q + n), key, &st)
                                              : decode_trunk_ports(q, n, which[k] == 2, &tp);
            EXPECT_EQ(err, "") << "seed " << k;
            good += err.empty();
        }
        fuzz_relay_codecs(in.data(), in.size());
    }
    EXPECT_EQ(good, 4000);  // 40000 / 10 honest inputs over the 7 seeds
}

TEST_F(ImpiFuzz, RelayRewrite) {
    std::mt19937_64 rng(20261206);
    const relay_fixture::World& w = relay_world();
    const RelayMap& m = w.map;
    int rewritten = 0;
    for (int i = 0; i < 200000; ++i) {
        // A valid header between a random own and outside proc, in either direction.
        bool outward = rng() % 2;
        const Job& from = outward ? m.in : m.out;
        int a = int(rng() % from.procs.size()), b = int(rng() % from.procs.size());
        Packet p;
        p.type = uint32_t(rng() % 8);
        p.len = packet_has_payload(p.type) ? uint32_t(rng() % (m.out.maxlen + 2)) : uint32_t(rng());
        p.msglen = p.len + ((rng() % 4) ? 0 : rng() % 100000) - ((rng() % 8) ? 0 : 1);
        p.src = from.procs[size_t(a)].id;
        p.dest = from.procs[size_t(b)].id;
        p.srqid = rng();
        p.tag = int32_t(rng());
        Bytes in(3 + kPacketHeader);
        int sh = from.procs[size_t(a)].host, dh = from.procs[size_t(b)].host;
        // Mostly the hosts the procs are on (so that many headers pass), sometimes any.
        int h = outward ? sh : dh, j = outward ? dh : sh;
        if (rng() % 4 == 0 || !m.own(h) || m.own(j)) {
            h = int(rng() % 5);
            j = int(rng() % 5);
        }
        std::vector<int> own = {2, 3}, outside = {0, 1, 4};
        auto pos = [](const std::vector<int>& v, int x) {
            for (size_t k = 0; k < v.size(); ++k)
                if (v[k] == x) return int(k);
            return x;
        };
        in[0] = uint8_t(pos(own, h));
        in[1] = uint8_t(pos(outside, j));
        in[2] = uint8_t(outward);
        encode_packet(p, in.data() + 3);
        std::vector<size_t> starts = {3, 7, 11, 27, 35, 51, 59};
        if (i % 3 == 1) in = mutate(in, starts, rng);
        if (i % 50 == 2) {
            in.resize(3 + rng() % 140);
            for (auto& x : in) x = uint8_t(rng());
        }
        if (in.size() < 3) continue;
        // Count what passes (a check that the driver reaches the rewrite at all).
        if (in.size() >= 3 + kPacketHeader) {
            Bytes hdr(in.begin() + 3, in.begin() + 3 + kPacketHeader);
            uint64_t pay;
            static const std::vector<int> kOwn = {2, 3}, kOut = {0, 1, 4};
            if (relay_rewrite(m, kOwn[in[0] % 2], kOut[in[1] % 3], in[2] & 1, hdr.data(), &pay) == "")
                ++rewritten;
        }
        fuzz_relay_rewrite(in.data(), in.size());
    }
    EXPECT_GT(rewritten, 20000);
}

TEST_F(ImpiFuzz, RelayLabels) {
    std::mt19937_64 rng(20261207);
    const relay_fixture::World& w = relay_world();
    int inward_ok = 0;
    for (int i = 0; i < 50000; ++i) {
        // Seed: a real label of the fixture (client 1 of 3, counts 2/2/1 hosts) with its
        // honest agent contribution and server reply.
        uint32_t label = kLabelOrder[rng() % kLabelOrder.size()];
        size_t li = 0;
        while (li < kLabelOrder.size() && kLabelOrder[li] != label) ++li;
        const Bytes& agent = w.agent.at(label);
        const CollReply& r = w.server.at(label);
        Bytes in = {uint8_t(li), uint8_t(0x20 | 1), uint8_t(2 | 2 << 2 | 1 << 4)};
        put32(in, r.mask);
        in.push_back(uint8_t(agent.size() >> 8));
        in.push_back(uint8_t(agent.size()));
        in.insert(in.end(), agent.begin(), agent.end());
        in.insert(in.end(), r.data.begin(), r.data.end());
        // The fixture's procs per client are 3/3/1, not hosts + 1: only the host labels and the
        // C/H labels that pass untouched are honest as they are.
        if (i % 4 != 0) {
            std::vector<size_t> starts = {0, 1, 2, 3, 7, 9, 9 + agent.size()};
            in = mutate(in, starts, rng);
        }
        if (i % 20 == 1) {
            in.resize(rng() % 100);
            for (auto& x : in) x = uint8_t(rng());
        }
        if (in.size() >= 9 && i % 4 == 0 && label != P_IPV6 && label != impi::P_PID) {
            CollReply out;
            size_t alen = std::min<size_t>(size_t(in[7]) << 8 | in[8], in.size() - 9);
            CollReply rr{base::get_be32(in.data() + 3), Bytes(in.begin() + 9 + long(alen), in.end())};
            std::vector<uint32_t> nh = {2, 2, 1}, np = {3, 3, 2};
            inward_ok += relay_inward_reply(w.faces, 1, label, rr, Bytes(in.begin() + 9, in.begin() + 9 + long(alen)),
                                            nh, np, &out).ok();
        }
        fuzz_relay_labels(in.data(), in.size());
    }
    EXPECT_GT(inward_ok, 5000);
}

TEST_F(ImpiFuzz, ZstdPayloads) {
    std::mt19937_64 rng(20261126);
    // Seeds: compressible payloads of a few kinds, compressed and marked as the sender does.
    std::vector<Bytes> seeds;
    wanlink::Compressor c;
    for (int k = 0; k < 8; ++k) {
        Bytes raw(1000 + rng() % 30000);
        for (size_t i = 0; i < raw.size(); ++i)
            raw[i] = k % 3 == 0 ? 0 : k % 3 == 1 ? uint8_t(i % 97) : uint8_t(rng() % 4);
        Bytes z(raw.size());
        // Seeds of every filter (the mark "ZSF" + filter for 1..3).
        const uint8_t filter = uint8_t(k % wanlink::kFilters);
        size_t zn = c.compress(raw.data(), raw.size(), z.data(), z.size() - 1, 1 + k % 3,
                               wanlink::Filter(filter));
        ASSERT_GT(zn, 0u);
        Packet p;
        p.type = k % 2 ? PK_DATA : PK_DATASYNC;
        p.len = uint32_t(raw.size());
        p.msglen = raw.size() + rng() % 1000;
        Bytes b(kPacketHeader);
        encode_packet(p, b.data());
        mark_compressed(b.data(), uint32_t(zn), uint32_t(raw.size()), filter);
        b.insert(b.end(), z.begin(), z.begin() + long(zn));
        seeds.push_back(std::move(b));
    }
    const std::vector<size_t> starts = {4, 72, 120, 124, kPacketHeader};
    for (int i = 0; i < 20000; ++i) {
        Bytes in = seeds[size_t(i) % seeds.size()];
        if (i % 8 != 0) in = mutate(in, starts, rng);
        fuzz_zstd(in.data(), in.size());
    }
}

#endif
