#include "emulator.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>

#include "common.hpp"

namespace wanmpi::wanemu {

namespace {

// struct virtio_net_hdr (10 bytes, host byte order) from <linux/virtio_net.h>, which does not
// compile as C++ (a field is named `class`).
struct vnet_hdr {
    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;
    uint16_t gso_size;
    uint16_t csum_start;
    uint16_t csum_offset;
};
static_assert(sizeof(vnet_hdr) == 10);
constexpr uint8_t k_gso_none = 0;
constexpr uint8_t k_gso_ecn = 0x80;

constexpr size_t k_hist_linear = 1024;  // 1 us buckets up to 1 ms
constexpr size_t k_hist_log = 24;       // then powers of two
constexpr int k_read_batch = 64;
constexpr int k_deliver_batch = 256;
constexpr size_t k_max_in_flight = 1 << 20;

// Counters are written only by the engine thread; a relaxed load+store is enough and avoids a
// locked instruction per packet.
inline void bump(std::atomic<uint64_t>& a, uint64_t v) {
    a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}
inline void raise_to(std::atomic<uint64_t>& a, uint64_t v) {
    if (v > a.load(std::memory_order_relaxed)) {
        a.store(v, std::memory_order_relaxed);
    }
}

size_t hist_index(uint64_t late_ns) {
    uint64_t us = late_ns / 1000;
    if (us < k_hist_linear) {
        return size_t(us);
    }
    size_t k = 0;
    us /= k_hist_linear;
    while (us > 1 && k + 1 < k_hist_log) {
        us >>= 1;
        ++k;
    }
    return k_hist_linear + k;
}

uint64_t hist_value_ns(size_t i) {
    if (i < k_hist_linear) {
        return uint64_t(i) * 1000 + 500;
    }
    return (uint64_t(k_hist_linear) << (i - k_hist_linear)) * 1000;
}

// Header lengths (IP + TCP/UDP) of a GSO packet, to count the headers of every segment it
// stands for. Returns 0 if the packet cannot be parsed (then it counts as one packet).
uint32_t l4_header_len(const uint8_t* ip, uint32_t len) {
    if (len < 20) {
        return 0;
    }
    uint32_t l3;
    uint8_t proto;
    if ((ip[0] >> 4) == 4) {
        l3 = uint32_t(ip[0] & 0xf) * 4;
        proto = ip[9];
    } else if ((ip[0] >> 4) == 6) {
        l3 = 40;
        proto = ip[6];
    } else {
        return 0;
    }
    if (proto == 6 && len >= l3 + 20) {
        return l3 + uint32_t(ip[l3 + 12] >> 4) * 4;
    }
    if (proto == 17) {
        return l3 + 8;
    }
    return 0;
}

}  // namespace

struct link_engine::counters {
    std::atomic<uint64_t> arrivals{0}, arrival_bytes{0}, delivered{0}, delivered_bytes{0};
    std::atomic<uint64_t> drop_queue{0}, drop_random{0}, write_errors{0}, queue_bytes_max{0};
    std::atomic<uint64_t> late_over{0}, late_max_ns{0}, late_sum_ns{0}, late_window_max{0};
    std::array<std::atomic<uint64_t>, k_hist_linear + k_hist_log> hist{};
};

struct link_engine::direction {
    int in = 0, out = 1;  // indices into fd_
    int index = 0;
    link_params p;
    int64_t qlimit = 0;  // byte limit in force; 0 = none (a packet limit applies)
    std::deque<packet> flight;  // accepted packets not yet delivered, in delivery order
    struct queued {
        int64_t ser_end;
        uint32_t wire, segs;
    };
    std::deque<queued> inq;  // packets whose serialization has not finished (the queue)
    int64_t q_bytes = 0, q_pkts = 0;
    int64_t link_free_at = 0, last_deliver = 0;
    uint64_t rng = 0;
    // Monitor bins still open, by bin index. Deliveries are binned by their scheduled time,
    // drops and the queue by arrival time; a bin is emitted once both clocks have passed it
    // (the current time is beyond it and no delivery scheduled inside it is still pending), so
    // a delivery the emulator made late still counts in the bin it was due in, and a bin never
    // shows more than the link's rate allows (plus one packet at the bin's edge). A map, not a
    // ring: bins are sparse when traffic is, and a late emulator keeps only a few open.
    std::map<int64_t, bin_record> open;
    int64_t floor_bin = 0;  // every bin below it has been emitted (closed for good)
    int64_t qbin = -1;      // the arrival clock's bin: queue maxima are recorded up to it
    bool revert_pending = false;
    int64_t revert_at = 0;
    link_params revert_to;
    counters c;

    double uniform() {
        // xorshift64*: fast, and good enough for Bernoulli loss and jitter.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return double((rng * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
    }
    void set(const link_params& np) {
        p = np;
        qlimit = np.effective_queue_bytes();
    }
};

link_engine::link_engine(std::string name, int fd_a, int fd_b, const link_params& ab,
                         const link_params& ba, const engine_config& cfg)
    : name_(std::move(name)), fd_{fd_a, fd_b}, cfg_(cfg) {
    for (int i = 0; i < 2; ++i) {
        dir_[i] = std::make_unique<direction>();
        dir_[i]->index = i;
        dir_[i]->in = i;
        dir_[i]->out = 1 - i;
        dir_[i]->set(i == 0 ? ab : ba);
        dir_[i]->rng = (cfg.seed + 0x9e3779b97f4a7c15ULL * uint64_t(i + 1)) | 1;
    }
    params_copy_ = {ab, ba};
    class_size_.push_back(cfg.max_packet);
    if (cfg.max_packet > 4096) {
        class_size_.insert(class_size_.begin(), 2048);
    }
    free_.resize(class_size_.size());
    event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (event_fd_ < 0 || epoll_fd_ < 0) {
        throw_errno("eventfd/epoll");
    }
    epoll_event ev{};
    for (uint32_t i = 0; i < 3; ++i) {
        ev.events = EPOLLIN;
        ev.data.u32 = i;
        int fd = i < 2 ? fd_[i] : event_fd_;
        if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
            throw_errno("epoll_ctl");
        }
    }
}

link_engine::~link_engine() {
    stop();
    for (auto& d : dir_) {
        for (auto& p : d->flight) {
            release(p.buf, p.cls);
        }
        d->flight.clear();
    }
    for (auto& fl : free_) {
        for (uint8_t* b : fl) {
            delete[] b;
        }
    }
    for (int fd : {fd_[0], fd_[1], event_fd_, epoll_fd_}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

void link_engine::start() {
    thread_ = std::thread([this] { run(); });
}

void link_engine::stop() {
    if (stopping_.exchange(true)) {
        if (thread_.joinable()) {
            thread_.join();
        }
        return;
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof one);
    if (thread_.joinable()) {
        thread_.join();
    }
    cmd_cv_.notify_all();
}

uint8_t* link_engine::alloc(int cls) {
    auto& fl = free_[size_t(cls)];
    if (!fl.empty()) {
        uint8_t* b = fl.back();
        fl.pop_back();
        return b;
    }
    return new uint8_t[size_t(class_size_[size_t(cls)])];
}

void link_engine::release(uint8_t* buf, int cls) {
    auto& fl = free_[size_t(cls)];
    if (fl.size() < 4096) {
        fl.push_back(buf);
    } else {
        delete[] buf;
    }
}

void link_engine::set_params(int dir_mask, const link_params& ab, const link_params& ba,
                             int64_t revert_after_ns) {
    {
        std::lock_guard<std::mutex> g(cmd_mu_);
        command c;
        c.kind = command::set;
        c.mask = dir_mask;
        c.p[0] = ab;
        c.p[1] = ba;
        c.revert_after = revert_after_ns;
        c.serial = ++cmd_serial_;
        cmds_.push_back(c);
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof one);
}

std::array<link_params, 2> link_engine::params() const {
    std::lock_guard<std::mutex> g(cmd_mu_);
    return params_copy_;
}

bool link_engine::flush(std::array<dir_totals, 2>& out, int timeout_ms) {
    if (stopping_.load()) {
        out = totals();
        return true;
    }
    std::unique_lock<std::mutex> g(cmd_mu_);
    command c;
    c.kind = command::flush;
    c.serial = ++cmd_serial_;
    uint64_t serial = c.serial;
    cmds_.push_back(c);
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof one);
    bool ok = cmd_cv_.wait_for(g, std::chrono::milliseconds(timeout_ms),
                               [&] { return cmd_done_ >= serial || stopping_.load(); });
    if (ok && cmd_done_ >= serial) {
        out = flush_result_;
        return true;
    }
    return false;
}

std::array<dir_totals, 2> link_engine::totals() const {
    std::array<dir_totals, 2> out;
    for (int i = 0; i < 2; ++i) {
        const counters& c = dir_[i]->c;
        auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
        dir_totals& t = out[size_t(i)];
        t.arrivals = ld(c.arrivals);
        t.arrival_bytes = ld(c.arrival_bytes);
        t.delivered = ld(c.delivered);
        t.delivered_bytes = ld(c.delivered_bytes);
        t.drop_queue = ld(c.drop_queue);
        t.drop_random = ld(c.drop_random);
        t.write_errors = ld(c.write_errors);
        t.queue_bytes_max = ld(c.queue_bytes_max);
        t.late_over = ld(c.late_over);
        t.late_max_ns = ld(c.late_max_ns);
        t.late_sum_ns = ld(c.late_sum_ns);
        uint64_t total = 0;
        for (const auto& h : c.hist) {
            total += ld(h);
        }
        uint64_t acc = 0;
        bool have50 = false;
        for (size_t k = 0; k < c.hist.size() && total > 0; ++k) {
            acc += ld(c.hist[k]);
            if (!have50 && acc * 2 >= total) {
                t.late_p50_ns = hist_value_ns(k);
                have50 = true;
            }
            if (acc * 100 >= total * 99) {
                t.late_p99_ns = hist_value_ns(k);
                break;
            }
        }
    }
    return out;
}

uint64_t link_engine::take_window_late_max(int dir) {
    return dir_[size_t(dir)]->c.late_window_max.exchange(0, std::memory_order_relaxed);
}

std::vector<bin_record> link_engine::take_records() {
    std::vector<bin_record> out;
    std::lock_guard<std::mutex> g(rec_mu_);
    out.swap(records_);
    return out;
}

int64_t link_engine::bin_of(int64_t t) const {
    return t > cfg_.t0_ns ? (t - cfg_.t0_ns) / cfg_.interval_ns : 0;
}

// The record of bin b, created on first use. A bin already emitted (only possible after a
// flush emitted partial bins) is not reopened: its events go to the oldest bin still open.
bin_record& link_engine::bin_at(direction& d, int64_t b) {
    b = std::max(b, d.floor_bin);
    auto [it, fresh] = d.open.try_emplace(b);
    if (fresh) {
        it->second.bin = b;
        it->second.dir = d.index;
    }
    return it->second;
}

// Emits every open bin (at a flush or at the end); rows emitted later may repeat a bin.
void link_engine::emit_all(direction& d) {
    if (d.open.empty()) {
        return;
    }
    std::lock_guard<std::mutex> g(rec_mu_);
    for (auto& [b, r] : d.open) {
        records_.push_back(r);
    }
    d.open.clear();
}

// Emits the bins that can no longer change: those before the current time's bin and before
// the bin of the next pending delivery (deliver_at never decreases, and a packet arriving
// from now on is delivered at or after now).
void link_engine::close_bins(direction& d, int64_t now) {
    int64_t limit = bin_of(now);
    if (!d.flight.empty()) {
        limit = std::min(limit, bin_of(d.flight.front().deliver_at));
    }
    if (limit <= d.floor_bin) {
        return;
    }
    d.floor_bin = limit;
    auto end = d.open.lower_bound(limit);
    if (end == d.open.begin()) {
        return;
    }
    std::lock_guard<std::mutex> g(rec_mu_);
    for (auto it = d.open.begin(); it != end; ++it) {
        records_.push_back(it->second);
    }
    d.open.erase(d.open.begin(), end);
}

void link_engine::update_queue(direction& d, int64_t now) {
    while (!d.inq.empty() && d.inq.front().ser_end <= now) {
        d.q_bytes -= d.inq.front().wire;
        d.q_pkts -= d.inq.front().segs;
        d.inq.pop_front();
    }
}

// Moves the arrival clock to the bin containing `now`. Each bin entered while the queue is not
// empty starts its queue maximum at the queue length at the bin's start (the queue only shrinks
// between arrivals, so that plus the length after each arrival gives the bin's maximum).
void link_engine::advance_clock(direction& d, int64_t now) {
    int64_t b = bin_of(now);
    while (d.qbin < b) {
        if (d.q_pkts == 0) {
            d.qbin = b;  // it stays empty until the next arrival, which comes after now
            break;
        }
        ++d.qbin;
        update_queue(d, cfg_.t0_ns + d.qbin * cfg_.interval_ns);
        if (d.q_pkts > 0) {
            bin_record& r = bin_at(d, d.qbin);
            r.queue_bytes_max = std::max(r.queue_bytes_max, uint64_t(d.q_bytes));
            r.queue_pkts_max = std::max(r.queue_pkts_max, uint64_t(d.q_pkts));
        }
    }
}

void link_engine::roll_bins(int64_t now) {
    if (cfg_.interval_ns <= 0) {
        return;
    }
    for (auto& dp : dir_) {
        advance_clock(*dp, now);
        close_bins(*dp, now);
    }
}

int64_t link_engine::next_deadline(int64_t now) {
    int64_t dl = INT64_MAX;
    for (auto& dp : dir_) {
        direction& d = *dp;
        if (!d.flight.empty()) {
            dl = std::min(dl, d.flight.front().deliver_at);
        }
        if (cfg_.interval_ns > 0) {
            if (d.q_pkts > 0) {  // record the queue at the next bin's start
                dl = std::min(dl, cfg_.t0_ns + (d.qbin + 1) * cfg_.interval_ns);
            }
            if (!d.open.empty()) {  // the oldest open bin can close at its end
                dl = std::min(dl, cfg_.t0_ns + (d.open.begin()->first + 1) * cfg_.interval_ns);
            }
        }
        if (d.revert_pending) {
            dl = std::min(dl, d.revert_at);
        }
    }
    (void)now;
    return dl;
}

void link_engine::arrive(direction& d, packet p, int64_t now) {
    const bool mon = cfg_.interval_ns > 0;
    if (mon) {
        advance_clock(d, now);
    }
    update_queue(d, now);
    bump(d.c.arrivals, p.segs);
    bump(d.c.arrival_bytes, p.wire);
    if (d.p.loss > 0) {
        // A GSO super-packet is dropped whole; with probability 1-(1-p)^segs the expected
        // fraction of lost segments stays p (loss is burstier than per segment, see docs).
        double pe = p.segs > 1 ? 1.0 - std::pow(1.0 - d.p.loss, double(p.segs)) : d.p.loss;
        if (d.p.loss >= 1.0 || d.uniform() < pe) {
            bump(d.c.drop_random, p.segs);
            if (mon) {
                bin_at(d, d.qbin).drop_random += p.segs;
            }
            release(p.buf, p.cls);
            return;
        }
    }
    if (d.q_pkts > 0 && ((d.qlimit > 0 && d.q_bytes + int64_t(p.wire) > d.qlimit) ||
                         (d.p.queue_pkts > 0 && d.q_pkts + int64_t(p.segs) > d.p.queue_pkts))) {
        bump(d.c.drop_queue, p.segs);
        if (mon) {
            bin_at(d, d.qbin).drop_queue += p.segs;
        }
        release(p.buf, p.cls);
        return;
    }
    if (d.flight.size() >= k_max_in_flight) {
        bump(d.c.drop_queue, p.segs);
        if (mon) {
            bin_at(d, d.qbin).drop_queue += p.segs;
        }
        release(p.buf, p.cls);
        return;
    }
    int64_t start = std::max(now, d.link_free_at);
    int64_t ser = d.p.rate_bps > 0 ? std::llround(double(p.wire) * 8e9 / d.p.rate_bps) : 0;
    int64_t ser_end = start + ser;
    d.link_free_at = ser_end;
    if (ser_end > now) {
        d.inq.push_back({ser_end, p.wire, p.segs});
        d.q_bytes += p.wire;
        d.q_pkts += p.segs;
        if (mon) {
            bin_record& r = bin_at(d, d.qbin);
            r.queue_bytes_max = std::max(r.queue_bytes_max, uint64_t(d.q_bytes));
            r.queue_pkts_max = std::max(r.queue_pkts_max, uint64_t(d.q_pkts));
        }
        raise_to(d.c.queue_bytes_max, uint64_t(d.q_bytes));
    }
    int64_t delay = d.p.delay_ns;
    if (d.p.jitter_ns > 0) {
        delay += std::llround((2.0 * d.uniform() - 1.0) * double(d.p.jitter_ns));
        delay = std::max<int64_t>(delay, 0);
    }
    p.deliver_at = std::max(d.last_deliver, ser_end + delay);
    d.last_deliver = p.deliver_at;
    d.flight.push_back(p);
}

void link_engine::deliver_due(direction& d) {
    for (int i = 0; i < k_deliver_batch && !d.flight.empty(); ++i) {
        packet& p = d.flight.front();
        int64_t now = now_ns();
        if (p.deliver_at > now) {
            break;
        }
        uint64_t late = uint64_t(now - p.deliver_at);
        ssize_t w = ::write(fd_[d.out], p.buf, p.len);
        // Binned by the scheduled time, not by when the write happened: a late emulator then
        // writes a burst, but the link did not carry one (late_max_us says it was late).
        bin_record* r = cfg_.interval_ns > 0 ? &bin_at(d, bin_of(p.deliver_at)) : nullptr;
        if (w < 0) {
            bump(d.c.write_errors, 1);
        } else {
            bump(d.c.delivered, p.segs);
            bump(d.c.delivered_bytes, p.wire);
            if (r) {
                r->packets += p.segs;
                r->bytes += p.wire;
            }
        }
        bump(d.c.hist[hist_index(late)], 1);
        bump(d.c.late_sum_ns, late);
        raise_to(d.c.late_max_ns, late);
        raise_to(d.c.late_window_max, late);
        if (int64_t(late) > cfg_.late_warn_ns) {
            bump(d.c.late_over, 1);
        }
        if (r) {
            r->late_max_us = std::max<uint64_t>(r->late_max_us, late / 1000);
        }
        release(p.buf, p.cls);
        d.flight.pop_front();
    }
}

void link_engine::read_side(int side, int64_t now) {
    direction& d = *dir_[side];
    const int big = int(class_size_.size()) - 1;
    const uint32_t hdr = cfg_.gso ? uint32_t(sizeof(vnet_hdr)) : 0;
    for (int i = 0; i < k_read_batch; ++i) {
        uint8_t* buf = alloc(big);
        ssize_t n = ::read(fd_[side], buf, size_t(class_size_[size_t(big)]));
        if (n <= 0) {
            release(buf, big);
            if (n < 0 && errno != EAGAIN && errno != EINTR) {
                fail_side(side, errno);
            }
            break;
        }
        packet p{};
        p.buf = buf;
        p.cls = uint8_t(big);
        p.len = uint32_t(n);
        p.wire = p.len > hdr ? p.len - hdr : 0;
        p.segs = 1;
        if (cfg_.gso && p.len > hdr) {
            vnet_hdr vh;
            std::memcpy(&vh, buf, sizeof vh);
            uint8_t type = vh.gso_type & uint8_t(~k_gso_ecn);
            uint32_t l4 = l4_header_len(buf + hdr, p.wire);
            if (type != k_gso_none && vh.gso_size > 0 && l4 > 0 && p.wire > l4) {
                uint32_t payload = p.wire - l4;
                p.segs = (payload + vh.gso_size - 1) / vh.gso_size;
                p.wire += (p.segs - 1) * l4;
            }
        }
        if (big > 0 && n <= class_size_[0]) {
            uint8_t* small = alloc(0);
            std::memcpy(small, buf, size_t(n));
            release(buf, big);
            p.buf = small;
            p.cls = 0;
        }
        arrive(d, p, now);
    }
}

// A TUN fd that keeps failing would make a level-triggered epoll loop spin at real-time
// priority: take it out of the loop and let the controller report it.
void link_engine::fail_side(int side, int err) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_[side], nullptr);
    failed_errno_.store(err);
}

void link_engine::handle_commands() {
    std::vector<command> cmds;
    {
        std::lock_guard<std::mutex> g(cmd_mu_);
        cmds.swap(cmds_);
    }
    int64_t now = now_ns();
    for (auto& c : cmds) {
        if (c.kind == command::set) {
            for (int i = 0; i < 2; ++i) {
                if (!(c.mask & (1 << i))) {
                    continue;
                }
                direction& d = *dir_[i];
                if (c.revert_after > 0) {
                    // Keep the oldest saved parameters if a revert is already pending, so that
                    // nested timed changes return to the configuration before all of them.
                    if (!d.revert_pending) {
                        d.revert_to = d.p;
                    }
                    d.revert_pending = true;
                    d.revert_at = now + c.revert_after;
                } else {
                    d.revert_pending = false;
                }
                d.set(c.p[i]);
            }
        } else {
            for (auto& dp : dir_) {
                emit_all(*dp);
            }
        }
        std::lock_guard<std::mutex> g(cmd_mu_);
        params_copy_ = {dir_[0]->p, dir_[1]->p};
        if (c.kind == command::flush) {
            flush_result_ = totals();
        }
        cmd_done_ = c.serial;
    }
    cmd_cv_.notify_all();
}

void link_engine::run() {
    tid_.store(int(::gettid()));
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (cfg_.rt_priority > 0) {
        sched_param sp{};
        sp.sched_priority = cfg_.rt_priority;
        rt_active_.store(::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &sp) == 0);
    }
    epoll_event evs[3];
    while (!stopping_.load(std::memory_order_relaxed)) {
        for (auto& dp : dir_) {
            deliver_due(*dp);
        }
        int64_t now = now_ns();
        for (auto& dp : dir_) {
            direction& d = *dp;
            if (d.revert_pending && now >= d.revert_at) {
                d.revert_pending = false;
                d.set(d.revert_to);
                std::lock_guard<std::mutex> g(cmd_mu_);
                params_copy_ = {dir_[0]->p, dir_[1]->p};
            }
        }
        roll_bins(now);
        int64_t dl = next_deadline(now);
        timespec ts{};
        timespec* tsp = nullptr;
        if (dl != INT64_MAX) {
            int64_t wait = dl - now;
            if (wait <= cfg_.spin_ns) {
                wait = 0;  // busy-poll until the deadline
            }
            wait = std::max<int64_t>(wait, 0);
            ts.tv_sec = wait / 1000000000;
            ts.tv_nsec = wait % 1000000000;
            tsp = &ts;
        }
        int n = ::epoll_pwait2(epoll_fd_, evs, 3, tsp, nullptr);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            failed_errno_.store(errno);
            break;  // cannot happen with valid fds; never spin at real-time priority
        }
        now = now_ns();
        for (int i = 0; i < n; ++i) {
            uint32_t id = evs[i].data.u32;
            if (id < 2 && (evs[i].events & (EPOLLERR | EPOLLHUP)) && !(evs[i].events & EPOLLIN)) {
                fail_side(int(id), EIO);
            } else if (id == 2) {
                uint64_t v;
                [[maybe_unused]] ssize_t r = ::read(event_fd_, &v, sizeof v);
                handle_commands();
            } else {
                read_side(int(id), now);
            }
        }
    }
    handle_commands();  // answer pending flushes
    for (auto& dp : dir_) {
        emit_all(*dp);
    }
    std::lock_guard<std::mutex> g(cmd_mu_);
    cmd_done_ = cmd_serial_;
    cmd_cv_.notify_all();
}

}  // namespace wanmpi::wanemu
