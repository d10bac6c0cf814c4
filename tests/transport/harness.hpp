// Multi-process harness for transport tests and the transport bench: forks N "ranks", gives each a
// KVS served by the parent over a socketpair (put locally, fence = all-gather through the parent,
// as PMI-1 does), and collects exit statuses. No sleeps: the parent waits in poll() with a
// deadline and kills (by PID) whatever is still running when it passes.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/kvs.hpp"
#include "transport/transport.hpp"

namespace wanmpi::testing {

class PipeKvs final : public base::Kvs {
public:
    PipeKvs(int fd, int rank, int size) : fd_(fd), rank_(rank), size_(size) {}
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    base::Status put(const std::string& key, const std::string& value) override;
    base::Status fence() override;
    std::optional<std::string> get(const std::string& key) override;

private:
    int fd_;
    int rank_, size_;
    std::map<std::string, std::string> mine_, all_;
};

struct RankResult {
    int status = -1;  // raw wait status; -1 if it had to be killed at the deadline
    bool exited_ok() const;
    std::string describe() const;
};

// Runs fn(rank, kvs) in n forked processes; fn's return value is the exit code. Children get
// SIGKILL if the parent dies. Returns one result per rank.
std::vector<RankResult> run_ranks(int n, const std::function<int(int, PipeKvs&)>& fn,
                                  int timeout_s = 60);

// A unique job id per call (pid + counter), so concurrent tests never share names.
std::string fresh_job_id();

// Per-rank failure reporting inside children: print and exit(1).
[[noreturn]] void child_fail(const char* file, int line, const std::string& what);
#define CHILD_CHECK(cond, msg)                                                                    \
    do {                                                                                          \
        if (!(cond))                                                                              \
            ::wanmpi::testing::child_fail(__FILE__, __LINE__, std::string(#cond) + ": " + (msg)); \
    } while (0)

// Records everything a transport delivers.
class RecordingSink final : public transport::RecvSink {
public:
    struct Frame {
        int peer;
        uint8_t hdr[transport::kHeaderSize];
        std::vector<uint8_t> data;
        bool via_buffer;
    };
    // If buffer_for(hdr, len) is true, on_header returns a buffer (filled by the transport);
    // otherwise the payload comes through on_frame's transient pointer.
    std::function<bool(const uint8_t* hdr, uint64_t len)> buffer_for;
    // Optional: called for every complete frame after it was recorded (may free f.data).
    std::function<void(Frame& f)> on_frame_cb;
    std::vector<Frame> frames;
    std::vector<std::pair<int, std::string>> failures;
    size_t consumed = 0;  // frames the test has looked at

    void* on_header(int peer, const uint8_t* hdr, uint64_t len) override;
    void on_frame(int peer, const uint8_t* hdr, const void* data, uint64_t len) override;
    void on_peer_failed(int peer, const std::string& why) override;

private:
    // Frames from different peers may be in flight at once: one pending buffer per peer.
    std::map<int, std::vector<uint8_t>> pending_;
    std::map<int, bool> pending_used_;
};

// Drives progress until pred() holds: spins `spin` fruitless calls, then sleeps on wait_fd()
// with the prepare_sleep/progress/poll/finish_sleep protocol. False if timeout_ms passes.
bool drive(const std::vector<transport::Transport*>& ts, transport::RecvSink& sink,
           const std::function<bool()>& pred, int timeout_ms = 30000, int spin = 100);

// Builds the JobInfo of a one-host job.
transport::JobInfo job_info(int rank, int size, const std::string& job_id,
                            std::vector<int> host_of = {});

}  // namespace wanmpi::testing
