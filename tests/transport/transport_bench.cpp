// transport_bench: 8-byte ping-pong latency (half round trip) and 4 MiB bandwidth measured on the
// transports directly (no MPI layer), between two forked processes, plus a plain TCP ping-pong
// of the same size as the baseline the tcp transport is held to.
//
//   transport_bench [shm|tcp|all] [iterations]
//
// Bandwidth: "stream" posts 4 MiB frames back to back (shm: through the rings in chunks),
// "rndv" is what core's rendezvous does on shm: a small RTS frame carrying the address, a
// single-copy get() by the receiver, a small FIN back; one message at a time.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/socket.hpp"
#include "harness.hpp"
#include "transport/registry.hpp"

using namespace wanmpi;
using namespace wanmpi::testing;
using transport::kHeaderSize;
using transport::SendOp;
using transport::SendResult;
using transport::Transport;

namespace {

constexpr uint64_t kBwLen = 4ull << 20;

struct Sink final : transport::RecvSink {
    uint64_t frames = 0;
    uint64_t last_word = 0;
    std::vector<uint8_t> buf;
    void* on_header(int, const uint8_t*, uint64_t len) override {
        if (len <= 4096) return nullptr;
        if (buf.size() < len) buf.resize(len);
        return buf.data();
    }
    void on_frame(int, const uint8_t* hdr, const void*, uint64_t) override {
        last_word = base::get_be64(hdr);
        ++frames;
    }
    void on_peer_failed(int peer, const std::string& why) override {
        std::fprintf(stderr, "peer %d failed: %s\n", peer, why.c_str());
        _exit(3);
    }
};

void spin_until(Transport& t, Sink& s, uint64_t frames) {
    while (s.frames < frames)
        t.progress(s);
}

void send_small(Transport& t, Sink& s, int peer, uint64_t word, uint64_t len = 8) {
    uint8_t hdr[kHeaderSize] = {};
    base::put_be64(hdr, word);
    uint64_t payload = word;
    while (t.try_send(peer, hdr, &payload, len) != SendResult::done)
        t.progress(s);
}

// Prints one result line (rank 0 only).
void report(const char* what, const char* name, double v, const char* unit) {
    std::printf("%-8s %-26s %10.3f %s\n", name, what, v, unit);
    std::fflush(stdout);
}

void run_transport(const std::string& name, int iters) {
    std::string job = fresh_job_id();
    auto res = run_ranks(
        2,
        [&](int rank, PipeKvs& kvs) {
            auto t = transport::make_transport(name);
            auto st = t->init(job_info(rank, 2, job), kvs, {1 - rank});
            if (!st.ok() || !kvs.fence().ok() || !(st = t->connect(kvs)).ok()) {
                std::fprintf(stderr, "%s: %s\n", name.c_str(), st.message().c_str());
                return 2;
            }
            Sink s;
            int peer = 1 - rank;
            // --- cost of an idle progress() call (nothing arrives meanwhile) ---
            kvs.fence();
            if (rank == 0) {
                const int kCalls = 2000000;
                int64_t t0 = base::now_ns();
                for (int i = 0; i < kCalls; ++i)
                    t->progress(s);
                report("idle progress() call", name.c_str(), double(base::now_ns() - t0) / kCalls,
                       "ns");
            }
            kvs.fence();
            // --- latency: many short windows (min and median filter out preemption on a busy
            // machine); for tcp, windows alternate with a plain TCP ping-pong between the same two
            // processes, so both see the same load.
            int raw = -1;
            if (name == "tcp") {
                std::string err;
                if (rank == 0) {
                    int l = base::tcp_listen("", 0, 4, &err);
                    kvs.put("raw",
                            base::primary_ipv4() + ":" + std::to_string(base::local_port(l)));
                    kvs.fence();
                    raw = ::accept(l, nullptr, nullptr);
                    ::close(l);
                } else {
                    kvs.fence();
                    auto hp = base::parse_host_port(*kvs.get("raw"));
                    raw = base::tcp_connect(hp->host, hp->port, 5000, &err);
                }
                base::set_nodelay(raw);
            }
            const int kWindows = 40;
            int per = std::max(100, iters / kWindows);
            std::vector<double> lat, lat_raw;
            for (int w = 0; w < kWindows + 2; ++w) {
                int64_t t0 = base::now_ns();
                for (int i = 0; i < per; ++i) {
                    if (rank == 0) {
                        send_small(*t, s, peer, i);
                        spin_until(*t, s, s.frames + 1);
                    } else {
                        spin_until(*t, s, s.frames + 1);
                        send_small(*t, s, peer, i);
                    }
                }
                if (w >= 2) lat.push_back(double(base::now_ns() - t0) / per / 2 / 1000.0);
                if (raw < 0) continue;
                char b[8] = {};
                auto rd = [&] {
                    size_t got = 0;
                    while (got < 8) {
                        ssize_t r = ::recv(raw, b + got, 8 - got, MSG_DONTWAIT);
                        if (r > 0)
                            got += size_t(r);
                        else if (r == 0)
                            _exit(3);
                    }
                };
                t0 = base::now_ns();
                for (int i = 0; i < per; ++i) {
                    if (rank == 0) {
                        ::send(raw, b, 8, 0);
                        rd();
                    } else {
                        rd();
                        ::send(raw, b, 8, 0);
                    }
                }
                if (w >= 2) lat_raw.push_back(double(base::now_ns() - t0) / per / 2 / 1000.0);
            }
            if (rank == 0) {
                auto show = [](const char* who, std::vector<double>& v) {
                    std::sort(v.begin(), v.end());
                    report("8 B latency min window", who, v.front(), "us");
                    report("8 B latency median window", who, v[v.size() / 2], "us");
                };
                show(name.c_str(), lat);
                if (raw >= 0) {
                    show("rawtcp", lat_raw);
                    std::vector<double> ratio;
                    for (size_t i = 0; i < lat.size(); ++i)
                        ratio.push_back(lat[i] / lat_raw[i]);
                    std::sort(ratio.begin(), ratio.end());
                    std::printf("tcp/rawtcp latency ratio: median of paired windows %.3f\n",
                                ratio[ratio.size() / 2]);
                }
            }
            if (raw >= 0) ::close(raw);
            // --- streaming bandwidth, 4 MiB frames, 8 in flight ---
            const int kMsgs = 64, kWindow = 8;
            std::vector<uint8_t> src(kBwLen, 0x5a);
            std::deque<SendOp> ops(kWindow);
            int done_ops = 0;
            auto on_done = [](SendOp* op, bool) { ++*static_cast<int*>(op->user); };
            for (int rep = 0; rep < 3; ++rep) {
                uint64_t base_frames = s.frames;
                int64_t t0 = base::now_ns();
                if (rank == 0) {
                    int posted = 0;
                    done_ops = 0;
                    while (posted < kMsgs) {
                        if (posted - done_ops < kWindow) {
                            SendOp& op = ops[posted % kWindow];
                            op = SendOp{};
                            base::put_be64(op.hdr, posted);
                            op.payload = src.data();
                            op.len = kBwLen;
                            op.on_complete = on_done;
                            op.user = &done_ops;
                            t->post_send(peer, &op);
                            ++posted;
                        }
                        t->progress(s);
                    }
                    while (done_ops < kMsgs)
                        t->progress(s);
                    spin_until(*t, s, base_frames + 1);  // the receiver's ack
                    double secs = double(base::now_ns() - t0) * 1e-9;
                    report("4 MiB stream bandwidth", name.c_str(),
                           double(kMsgs) * kBwLen / secs / 1e6, "MB/s");
                } else {
                    spin_until(*t, s, base_frames + kMsgs);
                    send_small(*t, s, peer, 0);
                }
            }
            // --- rendezvous-style bandwidth with get() (shm) ---
            if (t->supports_get()) {
                for (int rep = 0; rep < 3; ++rep) {
                    uint64_t base_frames = s.frames;
                    int64_t t0 = base::now_ns();
                    for (int m = 0; m < kMsgs; ++m) {
                        if (rank == 0) {
                            send_small(*t, s, peer, reinterpret_cast<uint64_t>(src.data()), 0);
                            spin_until(*t, s, base_frames + m + 1);  // FIN
                        } else {
                            spin_until(*t, s, base_frames + m + 1);  // RTS
                            if (s.buf.size() < kBwLen) s.buf.resize(kBwLen);
                            auto st = t->get(peer, s.last_word, s.buf.data(), kBwLen);
                            if (!st.ok()) {
                                std::fprintf(stderr, "get: %s\n", st.message().c_str());
                                return 4;
                            }
                            send_small(*t, s, peer, m, 0);
                        }
                    }
                    if (rank == 0)
                        report("4 MiB rndv+get bandwidth", name.c_str(),
                               double(kMsgs) * kBwLen / (double(base::now_ns() - t0) * 1e-9) / 1e6,
                               "MB/s");
                }
            }
            kvs.fence();
            t->finalize();
            return 0;
        },
        600);
    for (auto& r : res)
        if (!r.exited_ok())
            std::fprintf(stderr, "%s: a rank ended with %s\n", name.c_str(), r.describe().c_str());
}

}  // namespace

int main(int argc, char** argv) {
    std::string which = argc > 1 ? argv[1] : "all";
    int iters = argc > 2 ? std::atoi(argv[2]) : 0;
    if (which == "shm" || which == "all") run_transport("shm", iters ? iters : 200000);
    if (which == "tcp" || which == "all") run_transport("tcp", iters ? iters : 20000);
    return 0;
}
