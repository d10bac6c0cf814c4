#include "wanlink/tcp_tune.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <unistd.h>

#include "base/log.hpp"
#include "base/tunables.hpp"
#include "wanlink/sockopt.hpp"

namespace wanmpi::wanlink {

static base::Tunable<bool> t_adapt(
    "WAN", "ADAPT", true,
    "Adapt the connections between clusters to the WAN (issue 12): pace each rank to its share "
    "of WANMPI_WAN_RATE, pace rate-managed collectives, bound the RTO (WANMPI_WAN_RTO_MIN_US, "
    "_RTO_MAX_MS) and the delayed ACK (_DELACK_US). 0: all of these off at once, for "
    "comparisons (an explicit WANMPI_WAN_CC still applies).",
    base::Level::user);
static base::Tunable<std::string> t_rate(
    "WAN", "RATE", "",
    "Bandwidth of this cluster's link to the other clusters, shared by its hosts, e.g. 200mbit, "
    "1gbit, 25MBps (tc units, decimal; on the wire, headers included). Set, it turns pacing "
    "on: each rank sends across the WAN at most at its share (the WANMPI_MATB attribute, "
    "default the rate divided among the ranks of its host), and Alltoall(v/w) and Allgather(v) "
    "pace every rank to its share of the rate for the call (rate / concurrent WAN senders of "
    "its cluster; in Alltoallv/w in proportion to its WAN bytes). Empty: no pacing, and the "
    "WANMPI_MAXRATE attribute is absent.",
    base::Level::user);
static base::Tunable<int64_t> t_rto_min(
    "WAN", "RTO_MIN_US", 0,
    "Floor of the TCP retransmission timeout on connections between clusters (and on both legs "
    "of impi-relay's), in microseconds; 0: the kernel's (route's) default, 200000 on Linux. "
    "Lower, the tail of an MPI burst lost at a full bottleneck queue is resent after about "
    "RTT + this instead of 200 ms; with many flows on a tiny queue it also adds spurious "
    "retransmissions (docs/benchmarks.md, impi-relay trunking and pacing). Needs Linux >= 6.15 "
    "(TCP_RTO_MIN_US); older kernels keep their default. The kernel rounds to its tick.",
    base::Level::tuner);
static base::Tunable<int64_t> t_rto_max(
    "WAN", "RTO_MAX_MS", 1000,
    "Ceiling of the TCP retransmission timeout between clusters, in ms (the kernel takes "
    "1000..120000; 0: the kernel's default, 120 s). After an outage TCP probes at most this "
    "far apart, so traffic resumes within about this long of the link's return instead of "
    "after seconds of exponential backoff. Needs Linux >= 6.16 (TCP_RTO_MAX_MS).",
    base::Level::tuner);
static base::Tunable<int64_t> t_timeout(
    "WAN", "TIMEOUT_S", 900,
    "How long a connection between clusters may leave data unacknowledged before it is "
    "declared dead (TCP_USER_TIMEOUT), in seconds. Linux otherwise gives up after "
    "tcp_retries2 (15) retransmissions: about 15 minutes with its own RTO backoff, but only "
    "about 15 s once WANMPI_WAN_RTO_MAX_MS caps the backoff at 1 s; 900 keeps the kernel's "
    "patience. 0: the kernel's retry count.",
    base::Level::tuner);
static base::Tunable<int64_t> t_delack(
    "WAN", "DELACK_US", 0,
    "Longest delayed ACK on connections between clusters, in microseconds (0: the kernel's, "
    "40-200 ms). Needs Linux >= 6.15 (TCP_DELACK_MAX_US).",
    base::Level::tuner);
static base::Tunable<std::string> t_cc(
    "WAN", "CC", "system",
    "Congestion control of the connections between clusters: system (the host's default, "
    "net.ipv4.tcp_congestion_control), cubic, bbr, reno or any the kernel has. An unprivileged "
    "process may choose only those in net.ipv4.tcp_allowed_congestion_control; a refused "
    "choice is reported and the default stays. WANMPI_WAN_STATS shows what each connection "
    "used.",
    base::Level::user);
static base::Tunable<int64_t> t_sockbuf(
    "WAN", "SOCKBUF", -1,
    "Send and receive buffer of each connection between clusters, in bytes (k/m suffixes). 0: "
    "the kernel's autotuning, up to net.ipv4.tcp_wmem/tcp_rmem's maximum. -1 (auto): "
    "autotuning, unless WANMPI_WAN_RATE is set and twice the path's bandwidth-delay product "
    "(rate x the connection's RTT) exceeds that maximum; then that size (SO_SNDBUFFORCE as "
    "root, else bounded by net.core.wmem_max/rmem_max: wanmpi-tune checks them).",
    base::Level::tuner);

static base::Tunable<std::string> t_lowat(
    "WAN", "NOTSENT_LOWAT", "auto",
    "Most bytes the kernel may hold not yet sent on a connection between clusters "
    "(TCP_NOTSENT_LOWAT; k/m suffixes). A small message queued behind them waits for all of "
    "them: wanmpi keeps the rest of a long message in its own queue, where small messages pass "
    "it (WANMPI_WAN_PRIORITY). auto: about 2 ms at the connection's current rate (cwnd / RTT), "
    "64 KiB to 8 MiB, re-evaluated as data flows. 0: no limit (the kernel's default; the "
    "socket buffer, up to net.ipv4.tcp_wmem's maximum, is the queue). Too low a value costs "
    "throughput on a busy host: the rank must refill the socket before it runs dry.",
    base::Level::tuner);

static base::Tunable<bool> t_restore(
    "WAN", "RESTORE", true,
    "Per-pattern restore: when a rate-managed collective ends and the pacing cap of a "
    "connection between clusters goes back up to the rank's own share, forget the slow-start "
    "threshold a loss during the collective left (cubic, reno; briefly entering bbr does it), so "
    "that point-to-point traffic after the collective fills the link in a few round trips, "
    "paced to the rank's share, instead of growing the window slowly for seconds. Needs bbr "
    "in net.ipv4.tcp_allowed_congestion_control, or root. 0: leave the window alone.",
    base::Level::tuner);

static base::Tunable<int64_t> t_stall(
    "WAN", "STALL_MS", 500,
    "Fast resumption after an outage. A connection between clusters that has had data "
    "unacknowledged for this long, with no ACK and no new data sent meanwhile, is stalled: "
    "the rank then tries a fresh TCP connection to the peer's host every 200 ms, and the "
    "first that the peer's host answers after some did not shows the path is back (an "
    "outage ended) while the stalled connection still waits for its retransmission timer "
    "(up to WANMPI_WAN_RTO_MAX_MS) and may lose another to a spurious-timeout undo. The "
    "stalled connection is then reset and resumed at once on a new one, from the bytes the "
    "peer had received (a path that answers at once is up: the stall is TCP's loss recovery "
    "and is left to it; WANMPI_WAN_RECONNECT_S; "
    "links with a plain IMPI peer cannot resume and are left to TCP). impi-relay watches the "
    "legs of its pairs the same way and resets a stalled pair, which its hosts then resume. "
    "0: off. Off with WANMPI_WAN_ADAPT=0.",
    base::Level::tuner);

bool adapt_enabled() { return t_adapt.get(); }
int64_t stall_ms() { return adapt_enabled() ? std::max<int64_t>(0, t_stall.get()) : 0; }

int64_t notsent_lowat_setting() {
    static std::once_flag once;
    static int64_t v = -1;
    std::call_once(once, [] {
        const std::string& s = t_lowat.get();
        if (s == "auto" || s.empty()) return;
        auto n = base::parse_int(s);
        if (!n || *n < 0) {
            WANMPI_LOG(warn, "WANMPI_WAN_NOTSENT_LOWAT='%s' is not a size (bytes, k/m suffix), "
                             "0 or auto; using auto", s.c_str());
            return;
        }
        v = *n;
    });
    return v;
}

bool socket_window(int fd, uint64_t* bytes, uint32_t* srtt_us) {
    struct tcp_info ti{};
    socklen_t len = sizeof ti;
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 || ti.tcpi_rtt == 0)
        return false;
    *bytes = uint64_t(ti.tcpi_snd_cwnd) * ti.tcpi_snd_mss;
    *srtt_us = ti.tcpi_rtt;
    return true;
}

int64_t auto_notsent_lowat(uint64_t window_bytes, uint32_t srtt_us) {
    constexpr int64_t lo = 64 << 10, hi = 8 << 20;
    if (srtt_us == 0) return lo;
    const double per_us = double(window_bytes) / double(srtt_us);
    return std::clamp<int64_t>(int64_t(per_us * 2000.0), lo, hi);
}

int set_notsent_lowat(int fd, int64_t bytes) {
    const int v = int(std::clamp<int64_t>(bytes, 1, int64_t(1) << 30));
    return setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof v) == 0 ? 0 : errno;
}

uint64_t wan_rate_Bps() {
    static std::once_flag once;
    static uint64_t rate = 0;
    std::call_once(once, [] {
        const std::string& s = t_rate.get();
        if (s.empty()) return;
        auto v = base::parse_rate_bps(s);
        if (!v || *v < 8000) {
            WANMPI_LOG(warn, "WANMPI_WAN_RATE='%s' is not a rate such as 200mbit or 1gbit (at "
                             "least 8kbit); pacing stays off", s.c_str());
            return;
        }
        rate = uint64_t(*v / 8);
    });
    return rate;
}

TcpTuning tcp_tuning_from_env() {
    TcpTuning t;
    if (t_adapt.get()) {
        t.rto_min_us = t_rto_min.get();
        t.rto_max_ms = t_rto_max.get();
        t.delack_us = t_delack.get();
        t.timeout_s = t_timeout.get();
    }
    t.cc = t_cc.get() == "system" ? "" : t_cc.get();
    t.sockbuf = t_sockbuf.get();
    return t;
}

namespace {
// The third field of /proc/sys/net/ipv4/tcp_{w,r}mem: how far autotuning grows a buffer.
int64_t autotune_max(const char* which) {
    std::FILE* f = std::fopen(which, "r");
    if (!f) return 0;
    long long lo = 0, def = 0, hi = 0;
    int n = std::fscanf(f, "%lld %lld %lld", &lo, &def, &hi);
    std::fclose(f);
    return n == 3 ? hi : 0;
}
}  // namespace

int64_t bdp_buffer(int fd) {
    const uint64_t rate = wan_rate_Bps();
    if (!rate || fd < 0) return 0;
    struct tcp_info ti{};
    socklen_t len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 || ti.tcpi_rtt == 0) return 0;
    const int64_t want = int64_t(2.0 * double(rate) * ti.tcpi_rtt * 1e-6);
    const int64_t have = std::min(autotune_max("/proc/sys/net/ipv4/tcp_wmem"),
                                  autotune_max("/proc/sys/net/ipv4/tcp_rmem"));
    if (have <= 0 || want <= have) return 0;  // autotuning reaches it
    static std::once_flag said;
    std::call_once(said, [&] {
        WANMPI_LOG(info, "WAN sockets: 2 x BDP = %lld bytes (WANMPI_WAN_RATE x RTT %u us) is "
                         "above autotuning's maximum %lld (net.ipv4.tcp_wmem/rmem): buffers set "
                         "to it", (long long)want, ti.tcpi_rtt, (long long)have);
    });
    return want;
}

std::string tune_socket(int fd, const TcpTuning& t) {
    std::string err;
    auto opt = [&](int level, int name, const char* what, const void* v, socklen_t len) {
        if (setsockopt(fd, level, name, v, len) == 0) return;
        int e = errno;
        if (!err.empty()) err += "; ";
        err += std::string(what) + ": " + base::errno_text(e);
    };
    auto clamp_int = [](int64_t v, int64_t lo, int64_t hi) {
        return int(v < lo ? lo : v > hi ? hi : v);
    };
    if (!t.cc.empty()) opt(IPPROTO_TCP, TCP_CONGESTION, ("TCP_CONGESTION " + t.cc).c_str(),
                           t.cc.data(), socklen_t(t.cc.size()));
    if (t.rto_min_us > 0) {
        int v = clamp_int(t.rto_min_us, 1, 200000);
        opt(IPPROTO_TCP, TCP_RTO_MIN_US, "TCP_RTO_MIN_US", &v, sizeof v);
    }
    if (t.rto_max_ms > 0) {
        int v = clamp_int(t.rto_max_ms, 1000, 120000);
        opt(IPPROTO_TCP, TCP_RTO_MAX_MS, "TCP_RTO_MAX_MS", &v, sizeof v);
    }
    if (t.timeout_s > 0) {
        unsigned v = unsigned(std::min<int64_t>(t.timeout_s, 86400) * 1000);
        opt(IPPROTO_TCP, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT", &v, sizeof v);
    }
    if (t.delack_us > 0) {
        int v = clamp_int(t.delack_us, 1, 200000);
        opt(IPPROTO_TCP, TCP_DELACK_MAX_US, "TCP_DELACK_MAX_US", &v, sizeof v);
    }
    int64_t buf = t.sockbuf;
    if (buf < 0) buf = bdp_buffer(fd);
    if (buf > 0) {
        int v = clamp_int(buf, 4096, int64_t(1) << 30);
        // Root may exceed net.core.wmem_max/rmem_max; anyone else gets at most those.
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) != 0)
            opt(SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF", &v, sizeof v);
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) != 0)
            opt(SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF", &v, sizeof v);
    }
    if (!err.empty()) {
        static std::once_flag said;  // once per process: every socket would say the same
        std::call_once(said, [&] {
            WANMPI_LOG(info, "WAN socket settings not applied (%s): the kernel's defaults stay "
                             "for those", err.c_str());
        });
    }
    return err;
}

std::string socket_cc(int fd) {
    char name[32] = {};
    socklen_t len = sizeof name - 1;
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
    name[len < sizeof name ? len : sizeof name - 1] = 0;
    return name;
}

namespace {
// Whether this process may set `cc` on a socket: it is in the allowed list, or we are root.
bool may_set_cc(const std::string& cc) {
    if (geteuid() == 0) return true;
    std::FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_allowed_congestion_control", "r");
    if (!f) return false;
    char buf[256] = {};
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    std::string list(buf, n);
    size_t pos = 0;
    while (pos < list.size()) {
        const size_t end = list.find_first_of(" \n", pos);
        if (list.substr(pos, end - pos) == cc) return true;
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    return false;
}
}  // namespace

bool restore_window(int fd) {
    if (fd < 0 || !t_adapt.get() || !t_restore.get()) return false;
    const std::string cc = socket_cc(fd);
    if (cc.empty() || cc == "bbr" || !may_set_cc(cc)) return false;
    struct tcp_info ti{};
    socklen_t len = sizeof ti;
    // Already unbounded (no loss since the connection began): nothing to forget.
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 || ti.tcpi_snd_ssthresh >= 0x7fffffffu)
        return false;
    static const char kBbr[] = "bbr";
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, kBbr, sizeof kBbr - 1) != 0) return false;
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc.data(), socklen_t(cc.size())) != 0) {
        static std::once_flag said;
        std::call_once(said, [&] {
            WANMPI_LOG(warn, "WANMPI_WAN_RESTORE: could not return a socket to %s (%s); it "
                             "stays on bbr", cc.c_str(), std::strerror(errno));
        });
        return false;
    }
    WANMPI_LOG(debug, "WANMPI_WAN_RESTORE: %s socket %d: slow-start threshold %u segments "
                      "forgotten (window %u)", cc.c_str(), fd, ti.tcpi_snd_ssthresh,
               ti.tcpi_snd_cwnd);
    return true;
}

void set_keepalive(int fd, int64_t seconds) {
    if (seconds <= 0 || fd < 0) return;
    const int third = int(std::max<int64_t>(1, seconds / 3));
    const int on = 1, cnt = 2;
    const unsigned ut = unsigned(std::min<int64_t>(seconds, 1 << 20) * 1000);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &third, sizeof third);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &third, sizeof third);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
}

}  // namespace wanmpi::wanlink
