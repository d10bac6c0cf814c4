// The client side of the IMPI start-up: tables and collation (pure), the job's text form and its
// fuzz target, the agent against the real impi-server (2 and 3 clients, wrong key, server death,
// xsize disagreement, a lost cluster) and against a scripted server (skipped replies, the LOST
// notice), the host-to-host dance with hostile connections, the whole MPI_Init sequence over an
// in-process KVS, and mpirun's -client option.
#include <gtest/gtest.h>

#include <barrier>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <random>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/socket.hpp"
#include "runtime/impi_agent.hpp"
#include "runtime/impi_dance.hpp"
#include "runtime/impi_startup.hpp"
#include "runtime/impi_tables.hpp"
#include "synthetic_tables.hpp"
#include "runtime/launch_options.hpp"
#include "wanlink/handshake.hpp"

using namespace wanmpi;
using namespace wanmpi::impi;
using base::Status;

extern char** environ;

// A dance configuration with the given timeouts and pending limit, the rest defaulted.
DanceConfig dance_cfg(int64_t join_timeout_ms, int64_t timeout_ms, size_t max_pending) {
    DanceConfig c;
    c.join_timeout_ms = join_timeout_ms;
    c.timeout_ms = timeout_ms;
    c.max_pending = max_pending;
    return c;
}

namespace {

int64_t now_ms() { return base::now_ns() / 1000000; }

// ---- impi-server as a child process -------------------------------------------------------------

class ServerProc {
public:
    ServerProc(int n, std::vector<std::string> env = {}, std::vector<std::string> args = {}) {
        int out[2], err[2];
        EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
        EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
        std::vector<std::string> e;
        for (char** p = environ; *p; ++p) e.push_back(*p);
        e.push_back("WANMPI_LOG_LEVEL=2");
        for (auto& x : env) e.push_back(x);
        std::vector<std::string> a = {IMPI_SERVER_BIN, "-server", std::to_string(n)};
        a.insert(a.end(), args.begin(), args.end());
        pid_ = fork();
        if (pid_ == 0) {
            dup2(out[1], 1);
            dup2(err[1], 2);
            std::vector<char*> av, ev;
            for (auto& x : a) av.push_back(x.data());
            for (auto& x : e) ev.push_back(x.data());
            av.push_back(nullptr);
            ev.push_back(nullptr);
            execve(av[0], av.data(), ev.data());
            _exit(127);
        }
        close(out[1]);
        close(err[1]);
        out_ = out[0];
        err_ = err[0];
        std::string line;
        char c;
        while (read(out_, &c, 1) == 1 && c != '\n') line += c;
        auto colon = line.rfind(':');
        EXPECT_NE(colon, std::string::npos) << line;
        addr_ = "127.0.0.1:" + line.substr(colon + 1);
    }
    ~ServerProc() {
        kill_now();
        close(out_);
        close(err_);
    }
    const std::string& addr() const { return addr_; }
    // Reads the server's stderr until `needle` shows up (true) or timeout.
    bool wait_log(const std::string& needle, int64_t timeout_ms = 10000) {
        int64_t end = now_ms() + timeout_ms;
        while (log_.find(needle) == std::string::npos) {
            pollfd p{err_, POLLIN, 0};
            if (now_ms() >= end || poll(&p, 1, int(end - now_ms())) <= 0) return false;
            char b[4096];
            ssize_t n = read(err_, b, sizeof b);
            if (n <= 0) return false;
            log_.append(b, size_t(n));
        }
        return true;
    }
    // Exit status, or -1 if it had to be killed after timeout_ms.
    int wait(int64_t timeout_ms = 10000) {
        int64_t end = now_ms() + timeout_ms;
        while (pid_ > 0) {
            int st = 0;
            pid_t r = waitpid(pid_, &st, WNOHANG);
            if (r == pid_) {
                pid_ = -1;
                while (wait_log("\x01", 200)) {
                }
                return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
            if (now_ms() > end) {
                kill_now();
                return -1;
            }
            wait_log("\x01", 20);  // drain stderr meanwhile; never matches
        }
        return -1;
    }
    void kill_now() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
            pid_ = -1;
        }
    }
    const std::string& log() const { return log_; }

private:
    pid_t pid_ = -1;
    int out_ = -1, err_ = -1;
    std::string addr_, log_;
};

// ---- synthetic tables ---------------------------------------------------------------------------

using wanmpi::impi::synthetic::tables;  // synthetic_tables.hpp

// The replies an honest server sends for these clients' contributions.
std::map<uint32_t, CollReply> replies_for(const std::vector<ClusterTables>& ts) {
    std::map<uint32_t, CollReply> r;
    for (uint32_t label : kLabelOrder) {
        CollReply& c = r[label];
        c.mask = (1u << ts.size()) - 1;
        for (auto& t : ts) {
            auto d = contribution(t, label);
            c.data.insert(c.data.end(), d.begin(), d.end());
        }
    }
    return r;
}

AgentConfig agent_cfg(int client, const std::string& server) {
    AgentConfig c;
    c.client = client;
    c.server = server;
    c.connect_timeout_ms = 5000;
    c.startup_timeout_ms = 20000;
    return c;
}

struct AgentRun {
    std::vector<Agent> agents;
    std::vector<Job> jobs;
    std::vector<Status> status;
};

// Every agent in its own thread; the agents stay alive (connected) until the caller is done.
void run_agents(const std::string& server, const std::vector<ClusterTables>& ts, AgentRun* r,
                std::vector<AgentConfig> cfgs = {}) {
    size_t n = ts.size();
    r->agents.resize(n);
    r->jobs.resize(n);
    r->status.resize(n);
    std::vector<std::thread> th;
    for (size_t i = 0; i < n; ++i)
        th.emplace_back([&, i] {
            AgentConfig c = cfgs.empty() ? agent_cfg(int(i), server) : cfgs[i];
            r->status[i] = r->agents[i].start(c, ts[i], &r->jobs[i]);
        });
    for (auto& t : th) t.join();
}

// ---- raw sockets --------------------------------------------------------------------------------

int connect_local(uint16_t port) {
    std::string err;
    int fd = base::tcp_connect("127.0.0.1", port, 5000, &err);
    EXPECT_GE(fd, 0) << err;
    return fd;
}

void send_u32(int fd, uint32_t v) {
    uint8_t b[4];
    base::put_be32(b, v);
    ASSERT_EQ(base::write_full(fd, b, 4), 4);
}

// True if the peer closed fd within timeout_ms (reads and discards data).
bool sees_eof(int fd, int64_t timeout_ms) {
    int64_t end = now_ms() + timeout_ms;
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, int(std::max<int64_t>(0, end - now_ms()))) <= 0) return false;
        char b[64];
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n <= 0) return true;
    }
}

}  // namespace

// ================================================================================================
// Tables and collation (pure)
// ================================================================================================

TEST(ImpiTables, CollateThreeClients) {
    std::vector<ClusterTables> ts = {tables(0, {2}), tables(1, {1, 2, 1}), tables(2, {1, 1})};
    ts[0].datalen = 1 << 20, ts[1].datalen = 65536, ts[2].datalen = 262144;
    ts[0].hiwater = 64, ts[1].hiwater = 32, ts[2].hiwater = 100;
    ts[0].ackmark = 16, ts[1].ackmark = 20, ts[2].ackmark = 8;
    ts[0].tag_ub = 2147483647, ts[1].tag_ub = 65535, ts[2].tag_ub = 1000000;
    ts[2].versions = {kVersionPlain};
    ts[1].coll_xsize = 1024;  // -1 elsewhere: the same value
    Job job;
    ASSERT_TRUE(collate(3, replies_for(ts), &job).ok());
    EXPECT_EQ(job.nclients(), 3);
    EXPECT_EQ(job.size(), 8);
    EXPECT_EQ(job.hosts.size(), 6u);
    EXPECT_EQ(job.maxlen, 65536u);
    EXPECT_EQ(job.tag_ub, 65535);
    EXPECT_EQ(job.hiwater, 32u);
    EXPECT_EQ(job.ackmark, 8u);
    EXPECT_EQ(job.xsize, 1024);
    EXPECT_EQ(job.maxlinear, 4);
    // Client 0's procs first; within a client by host.
    EXPECT_EQ(job.clients[1].first_rank, 2);
    EXPECT_EQ(job.clients[1].first_host, 1);
    EXPECT_EQ(job.clients[2].first_rank, 6);
    EXPECT_EQ(job.clients[2].first_host, 4);
    EXPECT_EQ(job.hosts[2].first_rank, 3);
    EXPECT_EQ(job.hosts[2].nprocs, 2);
    EXPECT_EQ(job.hosts[2].client, 1);
    EXPECT_EQ(job.hosts[2].addr(), "10.1.1.1");
    EXPECT_EQ(job.hosts[2].port, 5001);
    EXPECT_EQ(job.procs[4].host, 2);
    EXPECT_EQ(job.procs[4].client, 1);
    for (int r = 0; r < job.size(); ++r) EXPECT_EQ(job.rank_of(job.procs[size_t(r)].id), r);
    EXPECT_EQ(job.rank_of(Proc{}), -1);
    // Version matrix: wanmpi pairs between 0 and 1; plain IMPI with the 0.0-only client 2.
    EXPECT_EQ(job.version(0, 1), kVersionWanmpi);
    EXPECT_TRUE(job.wanmpi_pair(1, 0));
    EXPECT_EQ(job.version(0, 2), kVersionPlain);
    EXPECT_EQ(job.version(2, 1), kVersionPlain);
    EXPECT_EQ(job.version(2, 2), kVersionPlain);
    EXPECT_EQ(version_text(job.version(0, 0)), "wanmpi.2");
}

TEST(ImpiTables, AckmarkClampedToHiwater) {
    std::vector<ClusterTables> ts = {tables(0, {1}), tables(1, {1})};
    ts[0].ackmark = 16, ts[0].hiwater = 64;
    ts[1].ackmark = 8, ts[1].hiwater = 8;
    ts[1].ackmark = 8;
    ts[0].ackmark = 30, ts[0].hiwater = 30;  // min ackmark 8, min hiwater 8
    Job job;
    ASSERT_TRUE(collate(2, replies_for(ts), &job).ok());
    EXPECT_EQ(job.hiwater, 8u);
    EXPECT_EQ(job.ackmark, 8u);
    // Raw values that would give ackmark > hiwater (another implementation's choice).
    auto r = replies_for(ts);
    base::put_be32(&r[H_ACKMARK].data[0], 20);
    base::put_be32(&r[H_ACKMARK].data[4], 20);
    base::put_be32(&r[H_HIWATER].data[0], 40);
    base::put_be32(&r[H_HIWATER].data[4], 10);
    ASSERT_TRUE(collate(2, r, &job).ok());
    EXPECT_EQ(job.hiwater, 10u);
    EXPECT_EQ(job.ackmark, 10u);
}

TEST(ImpiTables, XsizeDisagreementIsClearError) {
    std::vector<ClusterTables> ts = {tables(0, {1}), tables(1, {1})};
    ts[0].coll_xsize = -1;
    ts[1].coll_xsize = 4096;
    Job job;
    Status s = collate(2, replies_for(ts), &job);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("clients disagree on IMPI_C_COLL_XSIZE: client 0 uses 1024, "
                               "client 1 uses 4096"),
              std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("IMPI_COLL_XSIZE"), std::string::npos);
    ts[1].coll_xsize = -1;
    ts[0].coll_maxlinear = 8;
    s = collate(2, replies_for(ts), &job);
    EXPECT_NE(s.message().find("IMPI_C_COLL_MAXLINEAR"), std::string::npos) << s.message();
}

TEST(ImpiTables, CollateRejectsBadReplies) {
    std::vector<ClusterTables> ts = {tables(0, {2}), tables(1, {1})};
    Job job;
    auto expect_err = [&](std::map<uint32_t, CollReply> r, const char* want) {
        Status s = collate(2, std::move(r), &job);
        ASSERT_FALSE(s.ok()) << want;
        EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
    };
    auto r = replies_for(ts);
    r.erase(impi::P_PID);
    expect_err(r, "client 0 did not send IMPI_P_PID");
    r = replies_for(ts);
    r[H_PORT].data.pop_back();
    expect_err(r, "IMPI_H_PORT");
    r = replies_for(ts);
    r[C_NPROCS].data[3] = 9;  // client 0 claims 9 procs
    expect_err(r, "");
    r = replies_for(ts);
    base::put_be32(&r[C_TAGUB].data[4], 100);
    expect_err(r, "below the mandated 32767");
    r = replies_for(ts);
    r[C_VERSION].data[3] = 1;  // client 0's list starts with 0.1
    expect_err(r, "IMPI_C_VERSION");
    r = replies_for(ts);
    r[C_DATALEN].mask = 0x4;  // a client beyond the job
    expect_err(r, "beyond");
    // Two procs with the same IMPI_Proc.
    ts[1].procs[0] = ts[0].procs[0];
    expect_err(replies_for(ts), "same IMPI_Proc");
    // A client that sent DONE without optional labels: defaults.
    ts = {tables(0, {1}), tables(1, {1})};
    r = replies_for(ts);
    r.erase(C_COLL_XSIZE);
    r.erase(H_ACKMARK);
    r[C_VERSION].mask = 1;
    r[C_VERSION].data.resize(16);  // only client 0's list
    ASSERT_TRUE(collate(2, r, &job).ok());
    EXPECT_EQ(job.xsize, kDefaultXsize);
    EXPECT_EQ(job.ackmark, std::min(kFallbackAckmark, job.hiwater));
    EXPECT_EQ(job.version(0, 1), kVersionPlain);
}

TEST(ImpiTables, Validate) {
    ClusterTables t = tables(0, {1, 2});
    EXPECT_TRUE(validate(t).ok());
    t.procs.pop_back();
    EXPECT_FALSE(validate(t).ok());
    t = tables(0, {1});
    t.versions = {kVersionWanmpi};
    EXPECT_FALSE(validate(t).ok());
    t = tables(0, {1});
    t.ackmark = 65;
    EXPECT_NE(validate(t).message().find("IMPI_H_ACKMARK"), std::string::npos);
    t = tables(0, {1});
    t.hosts.clear();
    t.procs.clear();
    EXPECT_FALSE(validate(t).ok());
}

// ================================================================================================
// The job's text form, KVS splitting, fuzzing
// ================================================================================================

namespace {
class MapKvs : public base::Kvs {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    Status put(const std::string& k, const std::string& v) override {
        kv[k] = v;
        return Status::OK();
    }
    Status fence() override { return Status::OK(); }
    std::optional<std::string> get(const std::string& k) override {
        auto it = kv.find(k);
        if (it == kv.end()) return std::nullopt;
        return it->second;
    }
    std::map<std::string, std::string> kv;
};

Job sample_job() {
    std::vector<ClusterTables> ts = {tables(0, {2}), tables(1, {1, 3, 1}), tables(2, {1})};
    ts[2].versions = {kVersionPlain};
    Job job;
    EXPECT_TRUE(collate(3, replies_for(ts), &job).ok());
    return job;
}

// Invariants every decoded job satisfies (what the ranks then index with).
void check_job(const Job& j) {
    ASSERT_GE(j.nclients(), 1);
    ASSERT_EQ(j.version_matrix.size(), size_t(j.nclients() * j.nclients()));
    int h = 0, r = 0;
    for (const auto& c : j.clients) {
        ASSERT_EQ(c.first_host, h);
        ASSERT_EQ(c.first_rank, r);
        h += c.nhosts;
        r += c.nprocs;
    }
    ASSERT_EQ(size_t(h), j.hosts.size());
    ASSERT_EQ(size_t(r), j.procs.size());
    for (const auto& p : j.procs) {
        ASSERT_LT(size_t(p.host), j.hosts.size());
        ASSERT_EQ(j.hosts[size_t(p.host)].client, p.client);
    }
    ASSERT_GE(j.maxlen, 1u);
    ASSERT_GE(j.ackmark, 1u);
    ASSERT_LE(j.ackmark, j.hiwater);
    ASSERT_GE(j.tag_ub, kMinTagUb);
}
}  // namespace

TEST(ImpiTables, JobTextRoundTripAndKvs) {
    Job job = sample_job();
    std::string text = encode_job(job);
    EXPECT_EQ(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789-_"),
              std::string::npos);
    Job back;
    ASSERT_TRUE(decode_job(text, &back).ok());
    check_job(back);
    EXPECT_EQ(encode_job(back), text);
    EXPECT_EQ(back.hosts.size(), job.hosts.size());
    EXPECT_EQ(back.procs[3].id, job.procs[3].id);
    EXPECT_EQ(back.version(0, 2), kVersionPlain);

    // A big job over many keys, each piece within Hydra's 1023 bytes.
    std::vector<ClusterTables> ts = {tables(0, std::vector<int>(300, 1)), tables(1, {200})};
    ASSERT_TRUE(collate(2, replies_for(ts), &job).ok());
    text = encode_job(job);
    MapKvs kvs;
    ASSERT_TRUE(kvs_put_long(kvs, "impi-job", text).ok());
    EXPECT_GT(kvs.kv.size(), 10u);
    for (auto& [k, v] : kvs.kv) EXPECT_LE(v.size(), 1000u) << k;
    std::string got;
    bool found = false;
    ASSERT_TRUE(kvs_get_long(kvs, "impi-job", &got, &found).ok());
    EXPECT_TRUE(found);
    EXPECT_EQ(got, text);
    ASSERT_TRUE(kvs_get_long(kvs, "nothing", &got, &found).ok());
    EXPECT_FALSE(found);
    kvs.kv.erase("impi-job-3");
    EXPECT_FALSE(kvs_get_long(kvs, "impi-job", &got, &found).ok());
    kvs.kv["impi-job-n"] = "x";
    EXPECT_FALSE(kvs_get_long(kvs, "impi-job", &got, &found).ok());
}

TEST(ImpiTables, Base64url) {
    std::mt19937 rng(7);
    for (int n = 0; n < 64; ++n) {
        std::vector<uint8_t> b(static_cast<size_t>(n)), back;
        for (auto& x : b) x = uint8_t(rng());
        std::string s = base64url_encode(b.data(), b.size());
        ASSERT_TRUE(base64url_decode(s, &back));
        ASSERT_EQ(back, b);
    }
    std::vector<uint8_t> out;
    EXPECT_FALSE(base64url_decode("A", &out));     // impossible length
    EXPECT_FALSE(base64url_decode("AB=", &out));   // padding is not used
    EXPECT_FALSE(base64url_decode("AB", &out));    // non-canonical trailing bits
    EXPECT_TRUE(base64url_decode("AA", &out));
}

// Fuzz target for decode_job (and through it collate): random text, mutated and truncated
// encodings at the text and the binary level. Never crashes; whatever decodes is consistent.
TEST(ImpiTables, FuzzJobDecoder) {
    std::mt19937_64 rng(20261122);
    Job seed_job = sample_job();
    std::string seed = encode_job(seed_job);
    std::vector<uint8_t> bin;
    ASSERT_TRUE(base64url_decode(seed, &bin));
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=!";
    int decoded = 0;
    for (int i = 0; i < 12000; ++i) {
        std::string text;
        switch (i % 4) {
        case 0: {
            size_t n = rng() % 200;
            for (size_t k = 0; k < n; ++k) text += alphabet[rng() % 66];
            break;
        }
        case 1:
            text = seed;
            for (int k = 0, m = int(rng() % 4) + 1; k < m; ++k)
                text[rng() % text.size()] = alphabet[rng() % 64];
            break;
        case 2:
            text = seed.substr(0, rng() % seed.size());
            break;
        default: {
            std::vector<uint8_t> b = bin;
            for (int k = 0, m = int(rng() % 3) + 1; k < m; ++k) {
                size_t at = rng() % b.size();
                // Favour the length and count fields near the front and small values.
                b[at] = (rng() % 2) ? uint8_t(rng()) : uint8_t(rng() % 4);
            }
            if (rng() % 8 == 0) b.resize(rng() % b.size());
            text = base64url_encode(b.data(), b.size());
        }
        }
        Job j;
        if (decode_job(text, &j).ok()) {
            ++decoded;
            check_job(j);
            Job again;
            ASSERT_TRUE(decode_job(encode_job(j), &again).ok());
        }
    }
    EXPECT_GT(decoded, 0);  // some mutations (e.g. of pids) still decode
}

// ================================================================================================
// Agent against the real impi-server
// ================================================================================================

TEST(ImpiAgent, TwoClientsThroughServer) {
    ServerProc srv(2);
    std::vector<ClusterTables> ts = {tables(0, {1}), tables(1, {2, 1})};
    AgentRun r;
    run_agents(srv.addr(), ts, &r);
    for (auto& s : r.status) ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(encode_job(r.jobs[0]), encode_job(r.jobs[1]));
    const Job& j = r.jobs[1];
    EXPECT_EQ(j.size(), 4);
    EXPECT_EQ(j.clients[1].first_rank, 1);
    EXPECT_EQ(j.hosts[2].first_rank, 3);
    EXPECT_EQ(j.maxlen, 1u << 20);  // the long-fat-pipe defaults
    EXPECT_EQ(j.hiwater, 64u);
    EXPECT_EQ(j.ackmark, 16u);
    EXPECT_TRUE(j.wanmpi_pair(0, 1));
    EXPECT_GE(r.agents[0].server_fd(), 0);
    EXPECT_TRUE(r.agents[0].poll_server().ok());
    EXPECT_TRUE(r.agents[0].fini().ok());
    EXPECT_TRUE(r.agents[1].fini().ok());
    EXPECT_TRUE(r.agents[1].fini().ok());  // idempotent
    EXPECT_EQ(srv.wait(), 0) << srv.log();
}

TEST(ImpiAgent, ThreeClientsThroughServer) {
    ServerProc srv(3);
    std::vector<ClusterTables> ts = {tables(0, {2}), tables(1, {1, 2, 1}), tables(2, {1, 1})};
    ts[1].datalen = 65536;
    ts[2].hiwater = 20;
    ts[2].ackmark = 10;
    ts[0].tag_ub = 99999;
    ts[2].versions = {kVersionPlain};
    AgentRun r;
    run_agents(srv.addr(), ts, &r);
    for (auto& s : r.status) ASSERT_TRUE(s.ok()) << s.message();
    std::string want = encode_job(r.jobs[0]);
    EXPECT_EQ(encode_job(r.jobs[1]), want);
    EXPECT_EQ(encode_job(r.jobs[2]), want);
    const Job& j = r.jobs[2];
    check_job(j);
    EXPECT_EQ(j.size(), 8);
    EXPECT_EQ(j.hosts.size(), 6u);
    EXPECT_EQ(j.clients[2].first_rank, 6);
    EXPECT_EQ(j.clients[2].first_host, 4);
    EXPECT_EQ(j.maxlen, 65536u);
    EXPECT_EQ(j.tag_ub, 99999);
    EXPECT_EQ(j.hiwater, 20u);
    EXPECT_EQ(j.ackmark, 10u);
    EXPECT_EQ(j.version(0, 1), kVersionWanmpi);
    EXPECT_EQ(j.version(1, 2), kVersionPlain);
    // Every proc of every client at its global rank.
    for (int c = 0; c < 3; ++c)
        for (size_t i = 0; i < ts[size_t(c)].procs.size(); ++i)
            EXPECT_EQ(j.rank_of(ts[size_t(c)].procs[i]), j.clients[size_t(c)].first_rank + int(i));
    for (auto& a : r.agents) EXPECT_TRUE(a.fini().ok());
    EXPECT_EQ(srv.wait(), 0) << srv.log();
}

TEST(ImpiAgent, WrongKeyIsClearErrorAndServerGoesOn) {
    ServerProc srv(1, {"IMPI_AUTH_KEY=4242"});
    AgentConfig c = agent_cfg(0, srv.addr());
    c.auth = {false, true, 4243, {}};
    Agent a;
    Job job;
    Status s = a.start(c, tables(0, {1}), &job);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("wrong IMPI_AUTH_KEY?"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(srv.addr()), std::string::npos) << s.message();
    EXPECT_TRUE(srv.wait_log("wrong IMPI_AUTH_KEY")) << srv.log();
    // Offering only NONE to a server that wants the key: refused right after AUTH.
    c.auth = {true, false, 0, {}};
    s = a.start(c, tables(0, {1}), &job);
    EXPECT_NE(s.message().find("right after AUTH"), std::string::npos) << s.message();
    // The right key still gets in.
    c.auth = {false, true, 4242, {}};
    s = a.start(c, tables(0, {1}), &job);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(a.fini().ok());
    EXPECT_EQ(srv.wait(), 0) << srv.log();
}

TEST(ImpiAgent, ServerDiesWhileWaitingForOthers) {
    ServerProc srv(2);
    Status s;
    int64_t t0 = now_ms();
    std::thread th([&] {
        Agent a;
        Job job;
        s = a.start(agent_cfg(0, srv.addr()), tables(0, {1}), &job);
    });
    ASSERT_TRUE(srv.wait_log("client 0 joined")) << srv.log();
    srv.kill_now();
    th.join();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("IMPI server " + srv.addr() + " closed the connection while "
                               "waiting for the other clients to join"),
              std::string::npos)
        << s.message();
    EXPECT_LT(now_ms() - t0, 10000);
}

TEST(ImpiAgent, ServerDiesDuringLabels) {
    ServerProc srv(2);
    // Client 1 is a raw socket that joins and then says nothing.
    auto hp = base::parse_host_port(srv.addr());
    base::Fd raw(connect_local(hp->port));
    uint8_t m[12];
    encode_cmd({CMD_AUTH, 4}, m);
    base::put_be32(m + 8, 1);
    ASSERT_EQ(base::write_full(raw.get(), m, 12), 12);
    ASSERT_EQ(base::read_full(raw.get(), m, 8), 8);
    encode_cmd({CMD_IMPI, 4}, m);
    base::put_be32(m + 8, 1);
    ASSERT_EQ(base::write_full(raw.get(), m, 12), 12);
    Status s;
    std::thread th([&] {
        Agent a;
        Job job;
        s = a.start(agent_cfg(0, srv.addr()), tables(0, {1}), &job);
    });
    ASSERT_TRUE(srv.wait_log("client 0 joined")) << srv.log();
    ASSERT_EQ(base::read_full(raw.get(), m, 12), 12);  // the IMPI reply: both joined
    srv.kill_now();
    th.join();
    EXPECT_NE(s.message().find("closed the connection while waiting for the collated "
                               "IMPI_C_VERSION"),
              std::string::npos)
        << s.message();
}

TEST(ImpiAgent, UnreachableServerIsClearError) {
    std::string err;
    int fd = base::tcp_listen("127.0.0.1", 0, 1, &err);
    uint16_t port = base::local_port(fd);
    close(fd);
    AgentConfig c = agent_cfg(0, "127.0.0.1:" + std::to_string(port));
    c.connect_timeout_ms = 300;
    Agent a;
    Job job;
    Status s = a.start(c, tables(0, {1}), &job);
    EXPECT_NE(s.message().find("cannot reach the IMPI server"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("refused"), std::string::npos) << s.message();
    // A server that accepts (in its backlog) but never answers: a bounded wait, then a timeout
    // that says where it stuck.
    base::Fd silent(base::tcp_listen("127.0.0.1", 0, 4, &err));
    c = agent_cfg(0, "127.0.0.1:" + std::to_string(base::local_port(silent.get())));
    c.startup_timeout_ms = 300;
    int64_t t0 = now_ms();
    s = a.start(c, tables(0, {1}), &job);
    EXPECT_LT(now_ms() - t0, 3000);
    EXPECT_NE(s.message().find("timed out right after AUTH"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("WANMPI_IMPI_STARTUP_TIMEOUT"), std::string::npos) << s.message();
}

TEST(ImpiAgent, XsizeDisagreementThroughServer) {
    ServerProc srv(2);
    std::vector<ClusterTables> ts = {tables(0, {1}), tables(1, {1})};
    ts[0].coll_xsize = 1024;
    ts[1].coll_xsize = 2048;
    AgentRun r;
    run_agents(srv.addr(), ts, &r);
    for (auto& s : r.status) {
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.message().find("clients disagree on IMPI_C_COLL_XSIZE: client 0 uses 1024, "
                                   "client 1 uses 2048 (set IMPI_COLL_XSIZE"),
                  std::string::npos)
            << s.message();
    }
    EXPECT_EQ(srv.wait(), 1);  // the agents hung up before FINI
}

TEST(ImpiAgent, LostClusterIsReported) {
    ServerProc srv(2);
    AgentRun r;
    run_agents(srv.addr(), {tables(0, {1}), tables(1, {1})}, &r);
    for (auto& s : r.status) ASSERT_TRUE(s.ok()) << s.message();
    r.agents[1] = Agent();  // cluster 1 dies: its connection closes without FINI
    pollfd p{r.agents[0].server_fd(), POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10000), 1);
    Status s = r.agents[0].poll_server();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), base::Errc::peer_failed);
    // The server's LOST notice names the cluster that died.
    EXPECT_NE(s.message().find("IMPI server " + srv.addr() + " closed the connection before "
                               "our FINI: client 1 (a cluster) died"),
              std::string::npos)
        << s.message();
    EXPECT_EQ(r.agents[0].server_fd(), -1);
    EXPECT_FALSE(r.agents[0].fini().ok());
    EXPECT_EQ(srv.wait(), 1);
    EXPECT_NE(srv.log().find("client 1"), std::string::npos) << srv.log();
}

// A scripted server: skips are tolerated (a reply for a label we did not ask for), and the LOST
// notice names the dead client.
TEST(ImpiAgent, ScriptedServerSkipAndLostNotice) {
    std::string err;
    base::Fd lfd(base::tcp_listen("127.0.0.1", 0, 4, &err));
    uint16_t port = base::local_port(lfd.get());
    std::thread srv([&] {
        base::Fd c(accept(lfd.get(), nullptr, nullptr));
        base::set_nodelay(c.get());
        uint8_t m[16];
        base::read_full(c.get(), m, 12);  // AUTH
        uint8_t z[8] = {};
        base::write_full(c.get(), z, 8);  // NONE
        base::read_full(c.get(), m, 12);  // IMPI
        encode_cmd({CMD_IMPI, 4}, m);
        base::put_be32(m + 8, 2);  // 2 clients: we play client 1 ourselves
        base::write_full(c.get(), m, 12);
        ClusterTables other = tables(1, {1});
        for (uint32_t label : kLabelOrder) {
            base::read_full(c.get(), m, 8);
            CmdHeader h = decode_cmd(m);
            std::vector<uint8_t> body(size_t(h.len));
            base::read_full(c.get(), body.data(), body.size());
            // First a reply for a label nobody asked for.
            uint8_t junk[16];
            encode_cmd({CMD_COLL, 8}, junk);
            base::put_be32(junk + 8, 0x7777);
            base::put_be32(junk + 12, 3);
            base::write_full(c.get(), junk, 16);
            auto mine = std::vector<uint8_t>(body.begin() + 4, body.end());
            auto theirs = contribution(other, label);
            std::vector<uint8_t> rep(16);
            encode_cmd({CMD_COLL, int32_t(8 + mine.size() + theirs.size())}, rep.data());
            base::put_be32(&rep[8], label);
            base::put_be32(&rep[12], 3);
            rep.insert(rep.end(), mine.begin(), mine.end());
            rep.insert(rep.end(), theirs.begin(), theirs.end());
            base::write_full(c.get(), rep.data(), rep.size());
        }
        base::read_full(c.get(), m, 8);  // DONE
        encode_cmd({CMD_DONE, 0}, m);
        base::write_full(c.get(), m, 8);
        std::string why = "client 1 (10.1.0.1:7) closed the connection before FINI";
        std::vector<uint8_t> lost(12);
        encode_cmd({CMD_LOST, int32_t(4 + why.size())}, lost.data());
        base::put_be32(&lost[8], 1);
        lost.insert(lost.end(), why.begin(), why.end());
        base::write_full(c.get(), lost.data(), lost.size());
        shutdown(c.get(), SHUT_WR);
        sees_eof(c.get(), 10000);
    });
    Agent a;
    Job job;
    Status s = a.start(agent_cfg(0, "127.0.0.1:" + std::to_string(port)), tables(0, {2}), &job);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(job.size(), 3);
    EXPECT_EQ(job.clients[1].first_rank, 2);
    pollfd p{a.server_fd(), POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10000), 1);
    for (int i = 0; i < 100 && (s = a.poll_server()).ok(); ++i) poll(&p, 1, 100);
    EXPECT_NE(s.message().find("client 1 (a cluster) died: client 1 (10.1.0.1:7) closed"),
              std::string::npos)
        << s.message();
    a = Agent();
    srv.join();
}

TEST(ImpiAgent, AuthFromEnv) {
    AuthConfig a;
    unsetenv("IMPI_AUTH_NONE");
    unsetenv("IMPI_AUTH_KEY");
    unsetenv("WANMPI_IMPI_AUTH_NONE");
    unsetenv("WANMPI_IMPI_AUTH_KEY");
    ASSERT_TRUE(auth_from_env(&a).ok());
    EXPECT_TRUE(a.none);
    EXPECT_FALSE(a.key);
    setenv("IMPI_AUTH_KEY", "18446744073709551615", 1);
    ASSERT_TRUE(auth_from_env(&a).ok());
    EXPECT_FALSE(a.none);
    EXPECT_TRUE(a.key);
    EXPECT_EQ(a.key_value, 18446744073709551615ull);
    setenv("IMPI_AUTH_NONE", "", 1);
    ASSERT_TRUE(auth_from_env(&a).ok());
    EXPECT_TRUE(a.none && a.key);
    setenv("IMPI_AUTH_KEY", "12x", 1);
    EXPECT_NE(auth_from_env(&a).message().find("not a decimal 64-bit number"), std::string::npos);
    setenv("IMPI_AUTH_KEY", "18446744073709551616", 1);  // 2^64
    EXPECT_FALSE(auth_from_env(&a).ok());
    unsetenv("IMPI_AUTH_NONE");
    unsetenv("IMPI_AUTH_KEY");
}

// ================================================================================================
// The dance
// ================================================================================================

namespace {
Listener listener() {
    Listener l;
    Status s = open_listener(ListenConfig{"", "lo", ""}, &l);
    EXPECT_TRUE(s.ok()) << s.message();
    return l;
}

// Every connection of a finished dance reaches the right peer.
void check_mesh(std::vector<std::vector<base::Fd>>& conns) {
    int n = int(conns.size());
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b)
            if (conns[size_t(a)][size_t(b)])
                send_u32(conns[size_t(a)][size_t(b)].get(), uint32_t(a * 100 + b));
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) {
            ASSERT_EQ(bool(conns[size_t(a)][size_t(b)]), bool(conns[size_t(b)][size_t(a)]));
            if (a == b) {
                EXPECT_FALSE(conns[size_t(a)][size_t(b)]);
            }
            if (!conns[size_t(a)][size_t(b)]) continue;
            uint8_t buf[4];
            ASSERT_EQ(base::read_full(conns[size_t(a)][size_t(b)].get(), buf, 4), 4);
            EXPECT_EQ(base::get_be32(buf), uint32_t(b * 100 + a)) << a << "<-" << b;
        }
}
}  // namespace

TEST(ImpiDance, ThreeHostsWithHostileConnections) {
    const int n = 3;
    std::vector<Listener> ls;
    std::vector<DancePeer> peers;
    for (int h = 0; h < n; ++h) {
        ls.push_back(listener());
        peers.push_back({ls.back().addr, ls.back().port, "host " + std::to_string(h)});
    }
    // Hostile connections wait in every listener's queue before the real hosts come.
    std::vector<base::Fd> hostile;
    for (int h = 0; h < n; ++h) {
        auto add = [&](const std::vector<uint8_t>& bytes, bool keep) {
            base::Fd f(connect_local(ls[size_t(h)].port));
            if (!bytes.empty()) base::write_full(f.get(), bytes.data(), bytes.size());
            if (keep) hostile.push_back(std::move(f));
        };
        add({0xde, 0xad, 0xbe, 0xef}, true);          // garbage: rank out of range
        add({0, 0, 0, uint8_t(h)}, true);             // its own rank
        add({0, 0, 0, uint8_t(n)}, true);             // one past the last host
        add({0, 0}, false);                           // truncated, then closed
        add({0}, true);                               // stalls after one byte
        add({}, true);                                // stalls without a byte
    }
    std::vector<std::vector<base::Fd>> conns(n);
    std::vector<Status> st(n);
    DanceConfig cfg = dance_cfg(3000, 10000, 64);
    std::vector<std::thread> th;
    for (int h = 0; h < n; ++h)
        th.emplace_back([&, h] {
            st[size_t(h)] = dance(ls[size_t(h)].fd.get(), h, peers, cfg, &conns[size_t(h)]);
        });
    for (auto& t : th) t.join();
    for (auto& s : st) ASSERT_TRUE(s.ok()) << s.message();
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) ASSERT_EQ(bool(conns[size_t(a)][size_t(b)]), a != b);
    check_mesh(conns);
    // The ones that sent a wrong rank were closed.
    for (int h = 0; h < n - 1; ++h)
        for (int k = 0; k < 3; ++k) EXPECT_TRUE(sees_eof(hostile[size_t(h * 5 + k)].get(), 5000));
}

TEST(ImpiDance, DuplicateAndStalledPeersAreDropped) {
    Listener l = listener();
    std::vector<DancePeer> peers = {
        {l.addr, l.port, ""}, {"127.0.0.1", 1, ""}, {"127.0.0.1", 1, ""}};
    std::vector<base::Fd> conns;
    Status st;
    DanceConfig cfg = dance_cfg(1000, 20000, 64);
    std::thread th([&] { st = dance(l.fd.get(), 0, peers, cfg, &conns); });
    base::Fd stall(connect_local(l.port));
    base::Fd one(connect_local(l.port));
    send_u32(one.get(), 1);
    base::Fd dup(connect_local(l.port));
    send_u32(dup.get(), 1);
    EXPECT_TRUE(sees_eof(dup.get(), 5000));    // rank 1 is taken: closed
    EXPECT_TRUE(sees_eof(stall.get(), 5000));  // no rank within the join timeout: closed
    base::Fd two(connect_local(l.port));
    send_u32(two.get(), 2);
    th.join();
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(conns.size(), 3u);
    send_u32(conns[1].get(), 11);
    send_u32(conns[2].get(), 22);
    uint8_t b[4];
    ASSERT_EQ(base::read_full(one.get(), b, 4), 4);
    EXPECT_EQ(base::get_be32(b), 11u);
    ASSERT_EQ(base::read_full(two.get(), b, 4), 4);
    EXPECT_EQ(base::get_be32(b), 22u);
}

// A wanmpi host that finished its dance dials its extra lanes (link handshake kind 2) through
// the host socket at once: a host still in its dance must not take such a connection for the
// link (its lanes byte is a lane index): it closes it, and the link is the kind-0 connection
// with the lanes offered there (seen at 2 % loss: the two ends settled on 1 and 4 lanes).
TEST(ImpiDance, LaneConnectionDuringTheDanceIsNotTheLink) {
    Listener l = listener();
    std::vector<DancePeer> peers = {{l.addr, l.port, "", false, true}, {"127.0.0.1", 1, "", false, true}};
    LinkSetup ls;
    ls.lanes = 0;  // auto: the accepting side offers the most
    std::vector<LinkResult> out;
    DanceConfig cfg = dance_cfg(5000, 20000, 64);
    cfg.link = &ls;
    cfg.link_out = &out;
    std::vector<base::Fd> conns;
    Status st;
    std::thread th([&] { st = dance(l.fd.get(), 0, peers, cfg, &conns); });
    auto handshake = [&](int fd, uint8_t kind, uint8_t lanes_or_lane) {
        send_u32(fd, 1);
        wanlink::Hello h;
        h.kind = kind;
        (kind == 0 ? h.lanes : h.lane) = lanes_or_lane;
        h.from = 1;
        h.to = 0;
        wanlink::LinkHandshake hs(true, nullptr, ls.session.data(), h, 0);
        wanlink::LinkHandshake::Result r;
        const int64_t until = now_ms() + 5000;  // a dance that never answers: failed
        while ((r = hs.step(fd)) == wanlink::LinkHandshake::again && now_ms() < until) {
            pollfd p{fd, POLLIN, 0};
            poll(&p, 1, 100);
        }
        return r;
    };
    base::Fd lane(connect_local(l.port));
    EXPECT_EQ(handshake(lane.get(), 2, 1), wanlink::LinkHandshake::done);
    EXPECT_TRUE(sees_eof(lane.get(), 5000));  // not the link: closed
    base::Fd link(connect_local(l.port));
    EXPECT_EQ(handshake(link.get(), 0, 4), wanlink::LinkHandshake::done);
    th.join();
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].lanes, 4u);
    send_u32(conns[1].get(), 11);
    uint8_t b[4];
    ASSERT_EQ(base::read_full(link.get(), b, 4), 4);
    EXPECT_EQ(base::get_be32(b), 11u);
}

TEST(ImpiDance, SkippedHostsAreNotExpected) {
    Listener l = listener();
    std::vector<DancePeer> peers = {
        {l.addr, l.port, "", false}, {"127.0.0.1", 1, "", true}, {"127.0.0.1", 1, "", false}};
    std::vector<base::Fd> conns;
    Status st;
    std::thread th([&] { st = dance(l.fd.get(), 0, peers, dance_cfg(5000, 20000, 64), &conns); });
    base::Fd one(connect_local(l.port));
    send_u32(one.get(), 1);
    EXPECT_TRUE(sees_eof(one.get(), 5000));  // host 1 is not expected to connect
    base::Fd two(connect_local(l.port));
    send_u32(two.get(), 2);
    th.join();
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_FALSE(conns[1]);
    EXPECT_TRUE(conns[2]);
}

TEST(ImpiDance, TooManyPendingConnections) {
    Listener l = listener();
    std::vector<DancePeer> peers = {{l.addr, l.port, ""}, {"127.0.0.1", 1, ""}};
    std::vector<base::Fd> conns;
    Status st;
    std::thread th([&] { st = dance(l.fd.get(), 0, peers, dance_cfg(20000, 20000, 2), &conns); });
    base::Fd a(connect_local(l.port)), b(connect_local(l.port));
    // Two silent connections fill the slots; a third evicts the oldest.
    base::Fd c(connect_local(l.port));
    EXPECT_TRUE(sees_eof(a.get(), 5000));
    base::Fd real(connect_local(l.port));
    send_u32(real.get(), 1);
    th.join();
    ASSERT_TRUE(st.ok()) << st.message();
    send_u32(conns[1].get(), 5);
    uint8_t buf[4];
    ASSERT_EQ(base::read_full(real.get(), buf, 4), 4);
    EXPECT_EQ(base::get_be32(buf), 5u);
}

TEST(ImpiDance, FailureNamesMissingHosts) {
    std::string err;
    int fd = base::tcp_listen("127.0.0.1", 0, 1, &err);
    uint16_t dead = base::local_port(fd);
    close(fd);
    Listener l = listener();
    std::vector<DancePeer> peers = {{"127.0.0.1", dead, "host 0 (client 0)"},
                                    {l.addr, l.port, "host 1 (client 1)"},
                                    {"127.0.0.1", 1, "host 2 (client 1)"}};
    std::vector<base::Fd> conns;
    int64_t t0 = now_ms();
    Status s = dance(l.fd.get(), 1, peers, dance_cfg(500, 700, 64), &conns);
    ASSERT_FALSE(s.ok());
    EXPECT_LT(now_ms() - t0, 5000);
    EXPECT_NE(s.message().find("cannot connect to host 0 (client 0) at 127.0.0.1:" +
                               std::to_string(dead) + ": Connection refused"),
              std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("host 2 (client 1) at 127.0.0.1:1 did not connect"),
              std::string::npos)
        << s.message();
    // A lower host without an IPv4 address fails at once.
    peers[0].addr = "";
    s = dance(l.fd.get(), 1, peers, dance_cfg(500, 700, 64), &conns);
    EXPECT_NE(s.message().find("advertises no IPv4 address"), std::string::npos) << s.message();
    EXPECT_FALSE(dance(l.fd.get(), 3, peers, DanceConfig{}, &conns).ok());
}

TEST(ImpiDance, ListenerOptions) {
    Listener l;
    EXPECT_NE(open_listener({"9:8", "", ""}, &l).message().find("IMPI_PORT_RANGE='9:8'"),
              std::string::npos);
    EXPECT_FALSE(open_listener({"0:10", "", ""}, &l).ok());
    EXPECT_FALSE(open_listener({"abc", "", ""}, &l).ok());
    Status s = open_listener({"", "203.0.113.0/24", ""}, &l);
    EXPECT_NE(s.message().find("IMPI_NETWORK='203.0.113.0/24' matches no interface"),
              std::string::npos)
        << s.message();
    ASSERT_TRUE(open_listener({"", "127.0.0.0/8", ""}, &l).ok());
    EXPECT_EQ(l.addr, "127.0.0.1");
    ASSERT_TRUE(open_listener({"", "", "192.0.2.7:6000"}, &l).ok());
    EXPECT_EQ(l.addr, "192.0.2.7");
    EXPECT_EQ(l.port, 6000);
    EXPECT_NE(l.local_port, 0);
    ASSERT_TRUE(open_listener({"", "", "192.0.2.8"}, &l).ok());
    EXPECT_EQ(l.addr, "192.0.2.8");
    EXPECT_EQ(l.port, l.local_port);
    EXPECT_FALSE(open_listener({"", "", "192.0.2.8:0"}, &l).ok());
    EXPECT_FALSE(open_listener({"", "", "no such host.invalid"}, &l).ok());
    // A range: the first free port in it.
    Listener a = listener();
    uint16_t p = a.local_port;
    a.fd.reset();
    std::string range = std::to_string(p) + ":" + std::to_string(p);
    ASSERT_TRUE(open_listener({range, "lo", ""}, &l).ok());
    EXPECT_EQ(l.local_port, p);
    Listener busy;
    EXPECT_NE(open_listener({range, "lo", ""}, &busy).message().find("no free port"),
              std::string::npos);
}

// ================================================================================================
// The whole MPI_Init sequence over an in-process KVS: 2 clusters (2 ranks + 1 rank)
// ================================================================================================

namespace {
struct SharedKvs {
    explicit SharedKvs(int n) : size(n), bar(n) {}
    int size;
    std::mutex m;
    std::map<std::string, std::string> kv;
    std::barrier<> bar;
};
class ThreadKvs : public base::Kvs {
public:
    ThreadKvs(SharedKvs* s, int r) : s_(s), r_(r) {}
    int rank() const override { return r_; }
    int size() const override { return s_->size; }
    Status put(const std::string& k, const std::string& v) override {
        std::lock_guard<std::mutex> g(s_->m);
        s_->kv[k] = v;
        return Status::OK();
    }
    Status fence() override {
        s_->bar.arrive_and_wait();
        return Status::OK();
    }
    std::optional<std::string> get(const std::string& k) override {
        std::lock_guard<std::mutex> g(s_->m);
        auto it = s_->kv.find(k);
        if (it == s_->kv.end()) return std::nullopt;
        return it->second;
    }

private:
    SharedKvs* s_;
    int r_;
};

StartupOptions startup_opts(int client, const std::string& server) {
    StartupOptions o;
    o.agent = agent_cfg(client, server);
    o.listen = ListenConfig{"", "lo", ""};
    o.dance = dance_cfg(5000, 10000, 64);
    return o;
}
}  // namespace

TEST(ImpiStartup, TwoClustersOverKvs) {
    ServerProc srv(2);
    SharedKvs a(2), b(1);
    struct Rank {
        SharedKvs* kvs;
        int pmi_rank;
        int client;
    };
    std::vector<Rank> ranks = {{&a, 0, 0}, {&a, 1, 0}, {&b, 0, 1}};
    std::vector<Startup> res(ranks.size());
    std::vector<Status> st(ranks.size());
    std::vector<std::thread> th;
    for (size_t i = 0; i < ranks.size(); ++i)
        th.emplace_back([&, i] {
            ThreadKvs kvs(ranks[i].kvs, ranks[i].pmi_rank);
            st[i] = startup(kvs, startup_opts(ranks[i].client, srv.addr()), &res[i]);
        });
    for (auto& t : th) t.join();
    for (auto& s : st) ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(res[0].rank, 0);
    EXPECT_EQ(res[1].rank, 1);
    EXPECT_EQ(res[2].rank, 2);
    EXPECT_EQ(res[2].host, 2);
    EXPECT_TRUE(res[0].agent && !res[1].agent && res[2].agent);
    EXPECT_EQ(encode_job(res[0].job), encode_job(res[2].job));
    EXPECT_EQ(res[1].job.procs[1].id.pid & 0xffffffff, getpid());  // unix pid in the low half
    std::vector<std::vector<base::Fd>> conns;
    for (auto& r : res) conns.push_back(std::move(r.conns));
    EXPECT_FALSE(conns[0][1]);  // the same cluster: no IMPI connection
    EXPECT_TRUE(conns[0][2] && conns[1][2]);
    check_mesh(conns);
    EXPECT_TRUE(res[0].agent->fini().ok());
    EXPECT_TRUE(res[2].agent->fini().ok());
    EXPECT_EQ(srv.wait(), 0) << srv.log();
}

TEST(ImpiStartup, OneRankFailsTheWholeCluster) {
    SharedKvs a(2);
    std::vector<Status> st(2);
    std::vector<std::thread> th;
    for (int r = 0; r < 2; ++r)
        th.emplace_back([&, r] {
            ThreadKvs kvs(&a, r);
            StartupOptions o = startup_opts(0, "127.0.0.1:1");
            if (r == 1) o.listen.port_range = "70000:70001";
            Startup res;
            st[size_t(r)] = startup(kvs, o, &res);
        });
    for (auto& t : th) t.join();
    for (auto& s : st) {
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.message().find("rank 1: IMPI_PORT_RANGE='70000:70001'"), std::string::npos)
            << s.message();
    }
}

TEST(ImpiStartup, AdvertsToTables) {
    ClusterTables t;
    ASSERT_TRUE(tables_from_adverts({"10.0.0.1:5000:42", "10.0.0.2:5001:43"}, ClusterTables(), &t)
                    .ok());
    ASSERT_EQ(t.hosts.size(), 2u);
    EXPECT_EQ(t.hosts[1].port, 5001);
    EXPECT_EQ(t.procs[1].pid, (int64_t(5001) << 32) | 43);
    EXPECT_TRUE(validate(t).ok());
    for (const char* bad : {"", "10.0.0.1", "10.0.0.1:5000", "x.y:1:2", "10.0.0.1:0:1",
                            "10.0.0.1:5000:-1", "10.0.0.1:70000:1"})
        EXPECT_NE(tables_from_adverts({"10.0.0.1:1:1", bad}, ClusterTables(), &t)
                      .message()
                      .find("rank 1's IMPI host advert"),
                  std::string::npos)
            << bad;
}

// ================================================================================================
// mpirun -client ID ADDR:PORT
// ================================================================================================

TEST(MpirunClient, Parses) {
    runtime::LaunchOptions o;
    ASSERT_TRUE(runtime::parse_launch_options({"-client", "3", "10.1.2.3:7000", "-np", "2", "prog",
                                               "-client"},
                                              &o)
                    .ok());
    EXPECT_EQ(o.impi_client, 3);
    EXPECT_EQ(o.impi_server, "10.1.2.3:7000");
    EXPECT_EQ(o.np, 2);
    EXPECT_EQ(o.program, (std::vector<std::string>{"prog", "-client"}));
    EXPECT_NE(std::find(o.env_set.begin(), o.env_set.end(), "WANMPI_IMPI_CLIENT=3"),
              o.env_set.end());
    EXPECT_NE(std::find(o.env_set.begin(), o.env_set.end(), "WANMPI_IMPI_SERVER=10.1.2.3:7000"),
              o.env_set.end());
    runtime::LaunchOptions o2;
    ASSERT_TRUE(
        runtime::parse_launch_options({"--client", "0", "server.example:1", "p"}, &o2).ok());
    EXPECT_EQ(o2.impi_client, 0);
}

TEST(MpirunClient, UsageErrors) {
    auto err = [](std::vector<std::string> a) {
        runtime::LaunchOptions o;
        Status s = runtime::parse_launch_options(a, &o);
        EXPECT_FALSE(s.ok());
        return s.message();
    };
    EXPECT_NE(err({"-client"}).find("needs two arguments"), std::string::npos);
    EXPECT_NE(err({"-client", "1", "p"}).find("ADDR:PORT"), std::string::npos);
    EXPECT_NE(err({"-client", "32", "a:1", "p"}).find("0..31"), std::string::npos);
    EXPECT_NE(err({"-client", "-1", "a:1", "p"}).find("needs two arguments"), std::string::npos);
    EXPECT_NE(err({"-client", "1", "-n", "2", "p"}).find("needs two arguments"), std::string::npos);
    EXPECT_NE(err({"-client", "x", "a:1", "p"}).find("0..31"), std::string::npos);
    EXPECT_NE(err({"-client", "1", "nohostport", "p"}).find("ADDR:PORT"), std::string::npos);
    EXPECT_NE(err({"-client", "1", "a:0", "p"}).find("ADDR:PORT"), std::string::npos);
    EXPECT_NE(err({"-client", "1", "a:1", "-client", "2", "a:1", "p"}).find("twice"),
              std::string::npos);
    EXPECT_NE(err({"--client=1", "a:1", "p"}).find("two separate arguments"), std::string::npos);
}
