// The wanemu link emulator: one thread per emulated link moves IP packets between the link's
// two TUN devices (one in each cluster's router namespace) and, per direction, applies
//   random loss (at entry) -> drop-tail queue (bytes and/or packets) -> serialization at the
//   link rate -> one-way delay (+ optional jitter, never reordering) -> delivery.
// It also bins what happened into traffic-monitor records (per direction, every `interval`),
// and measures its own lateness (delivery time minus scheduled time) so that an emulator that
// falls behind is reported instead of silently becoming the thing under test.
//
// Lifecycle/ownership: the controller creates a link_engine with the two TUN fds (the engine
// owns and closes them), calls start() once, and stop() (idempotent; also done by the
// destructor) at teardown, which joins the thread and emits the last partial bins.
// Threading: the engine thread owns all packet state. Other threads use only the methods
// marked thread-safe: they post commands (set_params, flush) through a mutex-protected queue
// and an eventfd, read the totals (relaxed atomics written only by the engine thread) and take
// monitor records (mutex-protected vector).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "topology.hpp"

namespace wanmpi::wanemu {

// One monitor bin of one direction (dir 0 = a->b, 1 = b->a). Packets are counted in wire
// packets: a GSO super-packet counts as the segments it stands for.
struct bin_record {
    int64_t bin = 0;  // bin index: time = t0 + bin * interval
    int dir = 0;
    uint64_t bytes = 0, packets = 0, drop_queue = 0, drop_random = 0;
    uint64_t queue_bytes_max = 0, queue_pkts_max = 0;
    uint64_t late_max_us = 0;
};

// Totals of one direction since the start (plain copy of the engine's counters).
struct dir_totals {
    uint64_t arrivals = 0, arrival_bytes = 0;
    uint64_t delivered = 0, delivered_bytes = 0;
    uint64_t drop_queue = 0, drop_random = 0, write_errors = 0;
    uint64_t queue_bytes_max = 0;
    uint64_t late_over = 0;  // deliveries later than the warning threshold
    uint64_t late_max_ns = 0;
    uint64_t late_sum_ns = 0;
    uint64_t late_p50_ns = 0, late_p99_ns = 0;  // from a histogram (1 us resolution to 1 ms)
};

struct engine_config {
    bool gso = false;
    int max_packet = 1600;          // largest packet a TUN read can return (incl. vnet header)
    int64_t t0_ns = 0;              // monitor time origin (CLOCK_MONOTONIC)
    int64_t interval_ns = 1000000;  // 0 = no monitor records
    int rt_priority = 50;           // SCHED_FIFO priority; 0 = normal scheduling
    int64_t spin_ns = 0;            // busy-wait the last spin_ns before a deadline
    int64_t late_warn_ns = 1000000;
    uint64_t seed = 1;
};

class link_engine {
public:
    link_engine(std::string name, int fd_a, int fd_b, const link_params& ab, const link_params& ba,
                const engine_config& cfg);
    ~link_engine();
    link_engine(const link_engine&) = delete;
    link_engine& operator=(const link_engine&) = delete;

    void start();
    void stop();  // thread-safe, idempotent

    // Thread-safe. Replaces the parameters of the directions in dir_mask (bit 0 = a->b,
    // bit 1 = b->a); with revert_after_ns > 0 the previous parameters come back after that long.
    void set_params(int dir_mask, const link_params& ab, const link_params& ba,
                    int64_t revert_after_ns);
    // Thread-safe. Current parameters of both directions.
    std::array<link_params, 2> params() const;
    // Thread-safe. Makes the engine emit its partial bins now and returns the totals as of that
    // same moment, so monitor records taken afterwards sum exactly to them. Waits at most
    // timeout_ms for the engine; returns false if it did not answer.
    bool flush(std::array<dir_totals, 2>& out, int timeout_ms);
    // Thread-safe. Current totals (each counter exact, not a consistent snapshot).
    std::array<dir_totals, 2> totals() const;
    // Thread-safe. Worst lateness of direction `dir` since the previous call (for per-second
    // health checks; a value racing with the reset may be lost, which only delays a warning).
    uint64_t take_window_late_max(int dir);
    // Thread-safe. Moves out the monitor records emitted so far (in time order per direction,
    // except that after a flush a late delivery can add a row for a bin already emitted).
    std::vector<bin_record> take_records();

    const std::string& name() const { return name_; }
    int tid() const { return tid_.load(); }  // kernel thread id, for CPU accounting
    bool rt_active() const { return rt_active_.load(); }
    // errno of a TUN failure that stopped (part of) the link, 0 if none.
    int failed_errno() const { return failed_errno_.load(); }

private:
    struct packet {
        uint8_t* buf;
        uint32_t len;   // bytes as read from the TUN (incl. vnet header)
        uint32_t wire;  // IP bytes the link carries (GSO: all segments' headers counted)
        uint32_t segs;  // wire packets it stands for
        uint8_t cls;    // buffer size class
        int64_t deliver_at;
    };
    struct counters;  // atomics, defined in the .cpp
    struct direction;

    void run();
    void handle_commands();
    void read_side(int side, int64_t now);
    void fail_side(int side, int err);
    void arrive(direction& d, packet p, int64_t now);
    void deliver_due(direction& d);
    void roll_bins(int64_t now);
    void emit_all(direction& d);
    void close_bins(direction& d, int64_t now);
    void advance_clock(direction& d, int64_t now);
    bin_record& bin_at(direction& d, int64_t b);
    int64_t bin_of(int64_t t) const;
    void update_queue(direction& d, int64_t now);
    int64_t next_deadline(int64_t now);
    uint8_t* alloc(int cls);
    void release(uint8_t* buf, int cls);

    std::string name_;
    int fd_[2];
    engine_config cfg_;
    std::unique_ptr<direction> dir_[2];
    int event_fd_ = -1;
    int epoll_fd_ = -1;
    std::thread thread_;
    std::atomic<bool> stopping_{false};
    std::atomic<int> tid_{0};
    std::atomic<bool> rt_active_{false};
    std::atomic<int> failed_errno_{0};

    struct command {
        enum kind_t { set, flush } kind;
        int mask = 0;
        link_params p[2];
        int64_t revert_after = 0;
        uint64_t serial = 0;
    };
    mutable std::mutex cmd_mu_;
    std::condition_variable cmd_cv_;
    std::vector<command> cmds_;
    uint64_t cmd_serial_ = 0;
    uint64_t cmd_done_ = 0;
    std::array<dir_totals, 2> flush_result_;
    std::array<link_params, 2> params_copy_;

    std::mutex rec_mu_;
    std::vector<bin_record> records_;
    std::vector<bin_record> pending_;  // engine-thread local, handed over in batches

    std::vector<std::vector<uint8_t*>> free_;  // per size class
    std::vector<int> class_size_;
    std::vector<uint8_t> scratch_;
};

}  // namespace wanmpi::wanemu
