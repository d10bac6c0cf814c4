// wanmpi-tune: checks whether this Linux host (its current network namespace) is ready to carry
// wanmpi's traffic between clusters, prints one line per finding with the command that fixes
// it, and with --apply (root) makes the changes. The user's page is docs/wanmpi-tune.md; this
// file says why each check and each threshold is what it is.
//
// Where the facts come from: sysctls from /proc/sys; socket options from real setsockopt /
// getsockopt calls on fresh TCP sockets (the headers we compile against say nothing about the
// running kernel; ENOPROTOOPT is the kernel's "I do not know this option"); routes from the
// text of `ip -o route show` (iproute2's output is also its input syntax, which we feed back
// to `ip route change`, and reading it is far shorter than decoding rtnetlink metrics).
//
// Severity: fail = wanmpi cannot use the path well (exit 1); warn = it works but slower than it
// could, or a wanmpi setting falls back to the kernel's default; info = worth knowing, never a
// problem by itself. --help and the docs repeat which finding is which.
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"           // wanemu's units, so --rate/--rtt read as in `wanemu up`
#include "wanlink/sockopt.hpp"  // option numbers newer than Debian 12's headers

namespace {

namespace we = wanmpi::wanemu;
using Strings = std::vector<std::string>;

// Where the struct tcp_info fields wanmpi reads end (include/uapi/linux/tcp.h). The kernel copies
// as much of its struct as the caller asks for and returns that length, so asking with a large
// buffer tells how far the running kernel's struct goes, whatever our headers say (Debian 12's
// stop at tcpi_snd_wnd).
struct TcpInfoField {
    socklen_t end;
    const char *name, *since;
};
constexpr TcpInfoField k_tcp_info_fields[] = {
    {104, "tcpi_total_retrans", "2.6"},  // u32 at 100
    {112, "tcpi_pacing_rate", "3.15"},   // u64 at 104
    {168, "tcpi_delivery_rate", "4.9"},  // u64 at 160
    {242, "tcpi_total_rto", "6.7"},      // u16 at 240
};
static_assert(offsetof(struct tcp_info, tcpi_total_retrans) + 4 == 104);

constexpr double k_mss = 1448;  // payload of a full packet: 1500-byte MTU, TCP timestamps on

enum class Level { ok, info, warn, fail };

struct Finding {
    Level level = Level::ok;
    std::string name, detail;
    std::string fix;         // a command: warn/fail always, info when there is a useful change
    std::string key, value;  // the sysctl --apply writes (warn and fail only)
    Strings route_argv;      // the `ip route change` that --apply-routes runs
};

Finding make(Level l, std::string name, std::string detail, std::string fix = {}) {
    return Finding{l, std::move(name), std::move(detail), std::move(fix), {}, {}, {}};
}

std::string rate(double bps) {  // three significant digits are plenty for a finding
    double scale = std::pow(10, std::floor(std::log10(std::max(bps, 1.0))) - 2);
    return we::format_rate(std::round(bps / scale) * scale);
}

struct Options {
    double rate_bps = 10e9;
    int64_t rtt_ns = 40'000'000;
    bool apply = false, apply_routes = false, quiet = false;
    Strings only;
    double rtt_s() const { return double(rtt_ns) / 1e9; }
    double bdp() const { return rate_bps / 8 * rtt_s(); }  // bytes
    std::string path() const { return rate(rate_bps) + " x " + we::format_duration(rtt_ns); }
};

struct UsageError : std::runtime_error {  // exit 2, pointing at --help
    using std::runtime_error::runtime_error;
};
struct FatalError : std::runtime_error {  // exit 2: the host cannot be read
    using std::runtime_error::runtime_error;
};

struct Kernel {
    std::string release;  // as uname -r
    int version = 0;      // major * 100 + minor
};

Kernel running_kernel() {
    utsname u{};
    int major = 0, minor = 0;
    uname(&u);
    std::sscanf(u.release, "%d.%d", &major, &minor);
    return Kernel{u.release, major * 100 + minor};
}

bool has(const Strings& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

std::optional<long long> to_int(const std::string& s) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || errno != 0 || *end != '\0') {
        return std::nullopt;
    }
    return v;
}

std::string bytes(double b) {
    return std::to_string((long long)b) + " (" + we::format_size((long long)b) + ")";
}

// ---- sysctls --------------------------------------------------------------------------------

std::string sysctl_path(const std::string& key) {
    std::string p = key;
    std::replace(p.begin(), p.end(), '.', '/');
    return "/proc/sys/" + p;
}

// Multi-field values (tcp_rmem) read tab-separated; sysctl(8) shows and takes them with spaces.
std::optional<std::string> read_sysctl(const std::string& key) {
    auto text = we::try_read_file(sysctl_path(key));
    return text ? std::optional(we::join(we::split_ws(*text), " ")) : std::nullopt;
}

// Keys that every Linux with IPv4 has, also in a child network namespace: if one is unreadable,
// /proc/sys is not there to judge and no verdict would be honest.
std::string need_sysctl(const std::string& key) {
    auto v = read_sysctl(key);
    if (!v) {
        throw FatalError("cannot read " + sysctl_path(key) + " (is /proc mounted?)");
    }
    return *v;
}

std::string sysctl_cmd(const std::string& key, const std::string& value) {
    bool quote = value.find(' ') != std::string::npos;
    return "sysctl -w " + key + "=" + (quote ? "\"" + value + "\"" : value);
}

Finding sysctl_finding(Level l, const std::string& key, std::string detail,
                       const std::string& value, const std::string& fix_key = "") {
    const std::string& k = fix_key.empty() ? key : fix_key;
    Finding f = make(l, key, std::move(detail), sysctl_cmd(k, value));
    f.key = k;
    f.value = value;
    return f;
}

// Returns "" or why the write failed.
std::string write_sysctl(const std::string& key, const std::string& value) {
    int fd = ::open(sysctl_path(key).c_str(), O_WRONLY | O_CLOEXEC);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0) {
        e = ::write(fd, value.data(), value.size()) == ssize_t(value.size()) ? 0 : errno;
        ::close(fd);
    }
    if (e == 0) {
        return "";
    }
    // Linux shows some global settings read-only inside a child network namespace (net.core.
    // rmem_max, tcp_allowed_congestion_control): say where they can be changed.
    bool global = e == EACCES || e == EPERM || e == EROFS;
    return std::string(std::strerror(e)) +
           (global ? " (a global setting: change it in the host's initial network namespace)" : "");
}

// ---- the checks -----------------------------------------------------------------------------

// A buffer must hold the BDP in flight and as much again: Linux counts each packet's overhead
// (sk_buff, headers: about half of the memory at a 1500-byte MTU) against it, and a sender keeps
// data until it is acknowledged. 2 x BDP is the usual rule (ESnet's fasterdata, tuned profiles).
// net.ipv4.tcp_rmem/tcp_wmem (third field) bound Linux's buffer autotuning, which wanmpi relies
// on (it never sets SO_SNDBUF/SO_RCVBUF: that would switch autotuning off), so below the BDP a
// connection cannot fill the path: fail. net.core.rmem_max/wmem_max bound only sockets that set
// their buffer size themselves (iperf3 -w; wanmpi only when WANMPI_WAN_SOCKBUF asks): warn.
Finding check_buffer(const std::string& key, bool autotune, const Options& o) {
    auto v = read_sysctl(key);
    if (!v) {
        return make(Level::info, key, "not visible in this network namespace (a global setting)");
    }
    auto fields = we::split_ws(*v);
    auto max = to_int(fields.empty() ? "" : fields.back());
    if (!max || (autotune && fields.size() != 3)) {
        return make(Level::info, key, "unexpected value \"" + *v + "\"");
    }
    double bdp = o.bdp(), need = 2 * bdp;
    std::string what = (autotune ? "max " : "") + bytes(double(*max));
    if (double(*max) >= need) {
        return make(Level::ok, key, what + " >= 2 x BDP " + bytes(need) + " of " + o.path());
    }
    // The fix: 2 x BDP rounded up to whole MiB, at most what the kernel's int holds.
    const double mib = 1024.0 * 1024;
    long long target = (long long)std::min(std::ceil(need / mib) * mib, double(INT_MAX));
    fields.back() = std::to_string(target);
    std::string value = we::join(fields, " ");
    std::string tail =
        target < need ? " (more than one socket can hold: use several connections)" : "";
    if (!autotune) {
        std::string bound = key.find("rmem") != std::string::npos ? "tcp_rmem" : "tcp_wmem";
        return sysctl_finding(Level::warn, key,
                              what + " < 2 x BDP " + bytes(need) + " of " + o.path() +
                                  ": binds sockets that set their own buffer size, wanmpi's "
                                  "only with WANMPI_WAN_SOCKBUF (else autotuning, bounded by "
                                  "net.ipv4." +
                                  bound + ")" + tail,
                              value);
    }
    if (double(*max) < bdp) {
        return sysctl_finding(Level::fail, key,
                              what + " < BDP " + bytes(bdp) + " of " + o.path() +
                                  ": one connection moves at most " +
                                  rate(double(*max) * 8 / o.rtt_s()) + " at this RTT" + tail,
                              value);
    }
    return sysctl_finding(Level::warn, key,
                          what + " holds the BDP " + bytes(bdp) + " of " + o.path() +
                              " but not twice: with packet overhead one connection falls short "
                              "of the rate" +
                              tail,
                          value);
}

// A boolean sysctl whose wrong value costs `level`; `why` says what the wrong value does.
Finding check_bool(const std::string& key, int good, Level level, const std::string& why) {
    std::string v = need_sysctl(key);
    if (to_int(v) == good) {
        return make(Level::ok, key, v);
    }
    return sysctl_finding(level, key, v + ": " + why, std::to_string(good));
}

// With metrics saving on, Linux seeds a new connection from the last one to the same host: its
// RTT (good: a realistic first RTO) and, unless tcp_no_ssthresh_metrics_save=1 (Linux >= 5.6,
// default 1), its slow-start threshold, so one job's losses cap the next job's start.
Finding check_metrics_save() {
    const std::string key = "net.ipv4.tcp_no_metrics_save";
    std::string v = need_sysctl(key);
    if (v == "1") {
        return make(Level::ok, key, "1: new connections start without cached metrics");
    }
    auto ssthresh = read_sysctl("net.ipv4.tcp_no_ssthresh_metrics_save");
    if (ssthresh == "1") {
        return make(Level::ok, key,
                    v + ", and tcp_no_ssthresh_metrics_save=1: new connections "
                        "reuse a host's cached RTT, not its slow-start threshold");
    }
    return sysctl_finding(Level::warn, key,
                          v + ": new connections inherit the slow-start threshold cached from "
                              "the last connection to that host, so a job's losses slow the "
                              "next job's start",
                          "1", ssthresh ? "net.ipv4.tcp_no_ssthresh_metrics_save" : "");
}

Finding check_mtu_probing() {
    const std::string key = "net.ipv4.tcp_mtu_probing";
    std::string v = need_sysctl(key);
    if (v != "0") {
        return make(Level::ok, key, v);
    }
    return make(Level::info, key,
                "0: if a WAN path drops ICMP \"fragmentation needed\" (a PMTU black hole), its "
                "connections stall at their first full-size packet",
                sysctl_cmd(key, "1"));
}

// Since Linux 4.13 TCP paces by itself (a per-socket timer), so SO_MAX_PACING_RATE, wanmpi's cure
// for bursts that overflow the bottleneck queue, works on any qdisc (check_pacing warns before).
Finding check_qdisc() {
    const std::string key = "net.core.default_qdisc";
    auto v = read_sysctl(key);
    std::string why = "fq is not required: wanmpi paces each connection (SO_MAX_PACING_RATE)";
    if (!v) {
        return make(Level::info, key, "not visible in this network namespace (global); " + why);
    }
    return make(Level::ok, key, *v + ": " + why);
}

// bbr keeps its rate through random loss and paces itself (100 Mbit/s with 1 % loss: ~90 Mbit/s
// against ~5 for cubic, shared/PLATFORM.md); cubic is the usual default. A rank without
// CAP_NET_ADMIN may choose per socket only what tcp_allowed_congestion_control lists.
std::vector<Finding> check_congestion() {
    std::vector<Finding> out;
    const std::string akey = "net.ipv4.tcp_allowed_congestion_control";
    std::string avail_s = need_sysctl("net.ipv4.tcp_available_congestion_control");
    std::string allowed_s = need_sysctl(akey), def = need_sysctl("net.ipv4.tcp_congestion_control");
    auto avail = we::split_ws(avail_s), allowed = we::split_ws(allowed_s);
    out.push_back(has(avail, "bbr")
                      ? make(Level::ok, "net.ipv4.tcp_available_congestion_control", avail_s)
                      : make(Level::warn, "net.ipv4.tcp_available_congestion_control",
                             avail_s + ": no bbr, which keeps its rate on lossy WAN paths",
                             "modprobe tcp_bbr (and list it in /etc/modules-load.d/)"));
    Strings missing;  // available, wanted, and not for unprivileged ranks
    for (const char* cc : {"bbr", "cubic"}) {
        if (has(avail, cc) && !has(allowed, cc) && def != cc) {
            missing.push_back(cc);
        }
    }
    if (missing.empty()) {
        out.push_back(make(Level::ok, akey, allowed_s + ": what unprivileged ranks may choose"));
    } else {
        std::string want = allowed_s + " " + we::join(missing, " ");
        std::string detail = allowed_s + ": unprivileged ranks cannot choose " +
                             we::join(missing, " ") + " per socket (WANMPI_WAN_CC=" + missing[0] +
                             " is refused without CAP_NET_ADMIN" +
                             (has(missing, "bbr") ? std::string("; WANMPI_WAN_RESTORE, which "
                                                                "resets the window after a "
                                                                "collective, needs bbr")
                                                  : std::string()) +
                             ")";
        out.push_back(has(missing, "bbr")
                          ? sysctl_finding(Level::warn, akey, detail, want)
                          : make(Level::info, akey, detail, sysctl_cmd(akey, want)));
    }
    const std::string dkey = "net.ipv4.tcp_congestion_control";
    out.push_back(def == "reno" ? sysctl_finding(Level::warn, dkey,
                                                 "reno: grows by one packet per round trip, far "
                                                 "too slowly for a long fat path",
                                                 has(avail, "bbr") ? "bbr" : "cubic")
                                : make(Level::ok, dkey, def + " (for sockets that do not choose)"));
    return out;
}

// ---- socket options, each probed on a fresh TCP socket ----------------------------------------

struct Socket {  // a fresh socket per probe, so that no probe sees another's setting
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    Socket() {
        if (fd < 0) {  // an IPv6-only namespace
            fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        }
    }
    ~Socket() { ::close(fd); }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
};

// A TCP integer option of Linux 6.15/6.16 that wanmpi sets when asked and otherwise does
// without: a kernel that lacks it is a warn, the kernel's default stays.
Finding check_int_option(const char* name, int opt, int probe, const char* unit, const char* since,
                         const std::string& without, const Kernel& k) {
    Socket s;
    int def = 0;
    socklen_t len = sizeof def;
    bool got = ::getsockopt(s.fd, IPPROTO_TCP, opt, &def, &len) == 0;
    if (::setsockopt(s.fd, IPPROTO_TCP, opt, &probe, sizeof probe) == 0) {
        return make(Level::ok, name,
                    "supported" + (got ? " (default " + std::to_string(def) + " " + unit + ")"
                                       : std::string()));
    }
    int e = errno;
    std::string why = e == ENOPROTOOPT
                          ? "not supported by Linux " + k.release + " (needs " + since + ")"
                          : "setsockopt(" + std::to_string(probe) + "): " + strerror(e);
    return make(Level::warn, name, why + ": " + without, std::string("run Linux >= ") + since);
}

// SO_MAX_PACING_RATE is how wanmpi spreads each connection's bursts at its share of the path;
// unpaced, a collective's burst overflows the bottleneck queue and its tail is recovered only by
// a retransmission timeout (pacing cut RTOs 13-36x, shared/PLATFORM.md): missing = fail. Before
// Linux 4.13 only the fq qdisc enforced the rate.
Finding check_pacing(const Kernel& k) {
    const char* name = "SO_MAX_PACING_RATE";
    Socket s;
    uint64_t set = 12'500'000, got = 0;  // 100 Mbit/s in bytes/s (u64 since Linux 4.19)
    socklen_t len = sizeof got;
    if (::setsockopt(s.fd, SOL_SOCKET, SO_MAX_PACING_RATE, &set, sizeof set) != 0) {
        int e = errno;
        std::string why = e == ENOPROTOOPT ? "not supported by Linux " + k.release
                                           : std::string("setsockopt: ") + strerror(e);
        return make(Level::fail, name,
                    why +
                        ": wanmpi cannot pace its connections, so MPI bursts overflow the WAN "
                        "bottleneck and wait for 200 ms retransmission timeouts",
                    "run Linux >= 4.13");
    }
    ::getsockopt(s.fd, SOL_SOCKET, SO_MAX_PACING_RATE, &got, &len);
    std::string detail = "supported (set 100mbit, read back " + rate(double(got) * 8) + ")";
    if (k.version < 413 && read_sysctl("net.core.default_qdisc") != "fq") {
        return make(Level::warn, name, detail + ", but before Linux 4.13 only the fq qdisc paces",
                    "sysctl -w net.core.default_qdisc=fq; tc qdisc replace dev DEV root fq");
    }
    return make(Level::ok, name, detail + "; TCP paces without fq");
}

Finding check_cc_option() {
    auto avail =
        we::split_ws(read_sysctl("net.ipv4.tcp_available_congestion_control").value_or(""));
    Strings ok, refused;
    for (const char* cc : {"cubic", "bbr", "reno"}) {
        // Only loaded ones: for another, a privileged process would make the kernel load its
        // module, and a check must not change the host.
        if (!has(avail, cc)) {
            refused.push_back(std::string(cc) + " (not available)");
            continue;
        }
        Socket s;
        if (::setsockopt(s.fd, IPPROTO_TCP, TCP_CONGESTION, cc, socklen_t(strlen(cc))) == 0) {
            ok.push_back(cc);
        } else {
            refused.push_back(std::string(cc) + " (" + strerror(errno) + ")");
        }
    }
    std::string detail = "per socket: " + (ok.empty() ? "none" : we::join(ok, " ")) +
                         (refused.empty() ? "" : "; refused: " + we::join(refused, ", ")) +
                         (geteuid() == 0 ? " (as root; unprivileged ranks may choose what "
                                           "net.ipv4.tcp_allowed_congestion_control lists)"
                                         : "");
    bool good = has(ok, "bbr") || has(ok, "cubic");
    return make(good ? Level::ok : Level::warn, "TCP_CONGESTION", detail,
                good ? "" : "modprobe tcp_bbr");
}

Finding check_tcp_info(const Kernel& k) {
    Socket s;
    unsigned char buf[512] = {};
    socklen_t len = sizeof buf;
    if (::getsockopt(s.fd, IPPROTO_TCP, TCP_INFO, buf, &len) != 0) {
        return make(Level::warn, "TCP_INFO", std::string("getsockopt: ") + strerror(errno),
                    "run Linux >= 6.7");
    }
    Strings with, without;
    for (const auto& f : k_tcp_info_fields) {
        if (len >= f.end) {
            with.push_back(f.name);
        } else {
            without.push_back(std::string(f.name) + " (" + f.since + ")");
        }
    }
    std::string size = std::to_string(len) + " bytes";
    if (without.empty()) {
        return make(Level::ok, "TCP_INFO", size + ", with " + we::join(with, ", "));
    }
    return make(Level::warn, "TCP_INFO",
                size + " from Linux " + k.release + ", without " + we::join(without, ", ") +
                    ": wanmpi's per-connection statistics lack them",
                "run Linux >= 6.7");
}

// ---- routes -----------------------------------------------------------------------------------

std::string ip_binary() {  // Debian keeps ip in /usr/sbin, which a user's PATH lacks
    for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
        if (::access(p, X_OK) == 0) {
            return p;
        }
    }
    return "ip";
}

std::string value_after(const Strings& t, const std::string& word) {
    auto it = std::find(t.begin(), t.end(), word);
    if (it == t.end() || it + 1 == t.end()) {
        return "";
    }
    return *(it + 1) == "lock" && it + 2 != t.end() ? *(it + 2) : *(it + 1);
}

// The route as `ip route show` printed it, as `ip route change` arguments with new initial
// windows: every other attribute is repeated, or `change` would drop it.
Strings route_change(const Strings& t, bool v6, int iw) {
    static const Strings state = {"linkdown", "dead",       "offload", "offload_failed",
                                  "trap",     "rt_offload", "rt_trap", "rt_offload_failed",
                                  "notify"};
    Strings a = {"ip", v6 ? "-6" : "-4", "route", "change"};
    for (size_t i = 0; i < t.size(); ++i) {
        if (has(state, t[i])) {
            continue;  // what the kernel reports, not input
        }
        if (t[i] == "expires" || t[i] == "initcwnd" || t[i] == "initrwnd") {
            ++i;  // and its value
            continue;
        }
        a.push_back(t[i]);
        if (t[i] == "rto_min" && i + 1 < t.size() && t[i + 1] == "lock") {
            ++i;  // the kernel always locks rto_min, and iproute2 takes no "lock" there
        }
    }
    for (const char* m : {"initcwnd", "initrwnd"}) {
        a.insert(a.end(), {m, std::to_string(iw)});
    }
    return a;
}

// Routes through a gateway are the ones wide-area traffic takes. Their initial congestion window
// (initcwnd) is what a new connection sends in its first round trip (wanmpi's wire-up, each
// pair's first message; with slow start after idle off, only those), and the initial receive
// window that this host advertises (initrwnd, on its route back) must admit the peer's. The
// kernel's default is 10 packets. We suggest the BDP in packets, at most 100: a larger first
// flight is an unpaced burst of the kind wanmpi works to avoid. rto_min is shown, not suggested:
// a low floor for every flow caused spurious timeouts with many flows on small queues
// (src/wanlink/tcp_tune.hpp); wanmpi sets one per socket when asked (WANMPI_WAN_RTO_MIN_US).
std::vector<Finding> check_routes(const Options& o) {
    std::vector<Finding> out;
    double bdp_pkts = std::ceil(o.bdp() / k_mss);
    int iw = int(std::clamp(bdp_pkts, 10.0, 100.0));
    static const Strings not_unicast = {"local",     "broadcast",   "multicast",
                                        "anycast",   "unreachable", "prohibit",
                                        "blackhole", "throw",       "nat"};
    for (bool v6 : {false, true}) {
        we::command_result r;
        try {
            r = we::run_command(
                {ip_binary(), v6 ? "-6" : "-4", "-o", "route", "show", "table", "all"});
        } catch (const we::error& e) {
            r.out = e.what();
        }
        if (r.status != 0) {  // no iproute2, or a kernel without IPv6: the other family stays
            out.push_back(make(Level::info, "route",
                               std::string(v6 ? "IPv6" : "IPv4") +
                                   " routes not checked: " + std::string(we::trim(r.out))));
            continue;
        }
        for (const auto& line : we::split(r.out, '\n')) {
            auto t = we::split_ws(line);
            if (!t.empty() && t[0] == "unicast") {
                t.erase(t.begin());
            }
            std::string table = value_after(t, "table");
            if (t.empty() || has(not_unicast, t[0]) || table == "local" ||
                (!has(t, "via") && !has(t, "nexthop"))) {
                continue;
            }
            std::string in_table = table.empty() ? "" : " table " + table;
            if (has(t, "nexthop")) {
                out.push_back(make(Level::info, "route " + t[0] + in_table,
                                   "multipath route: set initcwnd/initrwnd on it by hand"));
                continue;
            }
            std::string name = "route " + t[0] + " via " + value_after(t, "via") + " dev " +
                               value_after(t, "dev") + in_table;
            std::string cw = value_after(t, "initcwnd"), rw = value_after(t, "initrwnd");
            std::string rto = value_after(t, "rto_min");
            std::string now = "initcwnd " + (cw.empty() ? "10 (default)" : cw) + ", initrwnd " +
                              (rw.empty() ? "default" : rw) +
                              (rto.empty() ? "" : ", rto_min " + rto);
            std::string rto_why = rto.empty() ? "" : "a lost packet waits at least RTT + " + rto;
            if (to_int(cw).value_or(10) >= iw && (iw == 10 || to_int(rw).value_or(0) >= iw)) {
                out.push_back(make(Level::ok, name, now + (rto.empty() ? "" : ": " + rto_why)));
                continue;
            }
            Finding f = make(Level::info, name,
                             now + ": a new connection sends " + (cw.empty() ? "10" : cw) +
                                 " packets in its first round trip, the BDP of " + o.path() +
                                 " is " + std::to_string((long long)bdp_pkts) + " packets" +
                                 (rto.empty() ? "" : "; " + rto_why));
            f.route_argv = route_change(t, v6, iw);
            f.fix = we::join(f.route_argv, " ");
            out.push_back(std::move(f));
        }
    }
    if (out.empty()) {
        out.push_back(make(Level::info, "route",
                           "no route through a gateway in this network namespace: no wide-area "
                           "path to check"));
    }
    return out;
}

// ---- all together -----------------------------------------------------------------------------

std::vector<Finding> check_all(const Options& o) {
    Kernel k = running_kernel();
    std::vector<Finding> f;
    auto add = [&](std::vector<Finding> more) { f.insert(f.end(), more.begin(), more.end()); };
    f.push_back(make(Level::ok, "kernel", "Linux " + k.release));
    f.push_back(check_buffer("net.core.rmem_max", false, o));
    f.push_back(check_buffer("net.core.wmem_max", false, o));
    f.push_back(check_buffer("net.ipv4.tcp_rmem", true, o));
    f.push_back(check_buffer("net.ipv4.tcp_wmem", true, o));
    f.push_back(check_bool("net.ipv4.tcp_window_scaling", 1, Level::fail,
                           "windows cannot exceed 64 KB: " + rate(65535 * 8 / o.rtt_s()) +
                               " per connection at this RTT"));
    f.push_back(check_bool("net.ipv4.tcp_sack", 1, Level::warn,
                           "several losses in one window cost a round trip each"));
    // Idle for one RTO, a connection restarts from 10 packets and doubles per round trip; MPI
    // alternates computing and communicating, so every communication phase pays that again.
    int rounds = int(std::ceil(std::log2(std::max(1.0, o.bdp() / (10 * k_mss)))));
    f.push_back(check_bool("net.ipv4.tcp_slow_start_after_idle", 0, Level::warn,
                           "after every idle period the window restarts from 10 packets: at " +
                               o.path() + " a communication phase after a compute phase needs ~" +
                               std::to_string(rounds) + " round trips to regain it"));
    f.push_back(check_metrics_save());
    f.push_back(check_mtu_probing());
    f.push_back(check_qdisc());
    add(check_congestion());
    if (Socket s; s.fd < 0) {
        f.push_back(make(Level::fail, "TCP",
                         std::string("cannot open a TCP socket: ") + strerror(errno),
                         "check the kernel's TCP support"));
    } else {
        f.push_back(check_pacing(k));
        f.push_back(check_int_option("TCP_RTO_MIN_US", TCP_RTO_MIN_US, 10000, "us", "6.15",
                                     "WANMPI_WAN_RTO_MIN_US has no effect; a lost tail waits for "
                                     "the route's or kernel's floor (200 ms)",
                                     k));
        f.push_back(check_int_option("TCP_DELACK_MAX_US", TCP_DELACK_MAX_US, 40000, "us", "6.15",
                                     "WANMPI_WAN_DELACK_US has no effect; the delayed-ACK timer "
                                     "keeps the kernel's maximum (200 ms)",
                                     k));
        f.push_back(check_int_option("TCP_RTO_MAX_MS", TCP_RTO_MAX_MS, 60000, "ms", "6.16",
                                     "WANMPI_WAN_RTO_MAX_MS has no effect; after a WAN outage "
                                     "retransmissions back off up to 120 s, so a job resumes up "
                                     "to 2 minutes after the link",
                                     k));
        f.push_back(check_cc_option());
        f.push_back(check_tcp_info(k));
    }
    add(check_routes(o));
    return f;
}

bool selected(const Finding& f, const Strings& only) {
    return only.empty() || std::any_of(only.begin(), only.end(), [&](const std::string& n) {
               return f.name == n || we::starts_with(f.name, n + " ");
           });
}

// Writes the sysctls of the warn and fail findings and, with --apply-routes, the routes'
// suggestions; one line per change.
void apply(const std::vector<Finding>& findings, const Options& o) {
    int changes = 0;
    for (const auto& f : findings) {
        std::string cmd = f.fix, err;
        if (!f.key.empty() && f.level >= Level::warn) {
            std::string old = read_sysctl(f.key).value_or("?");
            err = write_sysctl(f.key, f.value);
            cmd = sysctl_cmd(f.key, f.value) + " (was " + old + ")";
        } else if (!f.route_argv.empty() && o.apply_routes) {
            Strings argv = f.route_argv;
            argv[0] = ip_binary();
            try {
                auto r = we::run_command(argv);
                err = r.status == 0 ? "" : std::string(we::trim(r.out));
            } catch (const we::error& e) {
                err = e.what();
            }
            cmd += " (was " + f.detail.substr(0, f.detail.find(':')) + ")";
        } else {
            continue;
        }
        ++changes;
        if (err.empty()) {
            std::printf("applied: %s\n", cmd.c_str());
        } else {
            std::printf("not applied: %s: %s\n", cmd.c_str(), err.c_str());
        }
    }
    if (changes == 0) {
        std::printf("applied: nothing to change\n");
    }
}

const char* k_usage = R"usage(usage: wanmpi-tune [--rate RATE] [--rtt TIME] [--only NAME,...]
                   [--apply | --apply-routes] [--quiet]

Checks whether this Linux host (its current network namespace) is ready to carry wanmpi's
traffic between clusters and prints what to change, one line per finding:
  ok   NAME: DETAIL
  info NAME: DETAIL[; fix: COMMAND]   worth knowing, not a problem (fix: an optional change)
  warn NAME: DETAIL; fix: COMMAND     works, but slower than it could, or a wanmpi setting
                                      falls back to the kernel's default
  fail NAME: DETAIL; fix: COMMAND     wanmpi cannot use the path well: the host is not ready
Exit status: 0 ready (no fail line), 1 not ready, 2 bad usage or /proc/sys unreadable.

The path between the clusters: a connection keeps RATE x RTT bytes in flight (the
bandwidth-delay product, BDP), so its buffers must hold the BDP, and twice that with the
kernel's per-packet overhead.
  --rate RATE      the path's bandwidth: 200mbit, 1.5gbit, 10gbit (default 10gbit)
  --rtt TIME       its round-trip time: 500us, 20ms, 1s; a bare number is ms (default 40ms)

fail: net.ipv4.tcp_rmem or tcp_wmem maximum below the BDP (they bound the buffers of wanmpi's
      connections); window scaling off; no SO_MAX_PACING_RATE.
warn: those maxima below 2 x BDP; net.core.rmem_max or wmem_max below 2 x BDP (they bind only
      sockets that set their own buffer size); slow start after idle on; SACK off; a cached
      slow-start threshold; reno as the default; bbr not available or not allowed; a kernel
      without TCP_RTO_MIN_US or TCP_DELACK_MAX_US (6.15), TCP_RTO_MAX_MS (6.16) or TCP_INFO's
      tcpi_total_rto (6.7): wanmpi then keeps the kernel's defaults.
info: routes through a gateway (initcwnd, initrwnd, rto_min); mtu probing; cubic not allowed.

Changing the host (root; changes last until reboot: keep them in /etc/sysctl.d/90-wanmpi.conf):
  --apply          write the sysctls of the warn and fail lines, in the current network
                   namespace (a global one is refused inside a child namespace, and said so);
                   print each as "applied: sysctl -w KEY=VALUE (was OLD)", check again and
                   print that check: the exit status is the state after the changes
  --apply-routes   --apply, and change the routes as their info lines suggest
  --only NAME,...  check (and apply) only these findings; "route" selects every route
  --quiet          print only warn and fail lines (and what --apply changed)
  -h, --help       this text
Details: docs/wanmpi-tune.md
)usage";

Options parse_args(int argc, char** argv) {
    static const option longopts[] = {
        {"rate", required_argument, nullptr, 'r'},   {"rtt", required_argument, nullptr, 't'},
        {"only", required_argument, nullptr, 'o'},   {"apply", no_argument, nullptr, 'a'},
        {"apply-routes", no_argument, nullptr, 'R'}, {"quiet", no_argument, nullptr, 'q'},
        {"help", no_argument, nullptr, 'h'},         {nullptr, 0, nullptr, 0}};
    Options o;
    opterr = 0;  // our messages, so that every usage error reads alike
    for (int c; (c = getopt_long(argc, argv, ":qh", longopts, nullptr)) != -1;) {
        std::string v = optarg ? optarg : "";
        if (c == 'r') {
            auto r = we::parse_rate_bps(v);
            if (!r || *r <= 0) {
                throw UsageError("--rate " + v + ": not a rate above 0 (200mbit, 10gbit, ...)");
            }
            o.rate_bps = *r;
        } else if (c == 't') {
            auto d = we::parse_duration_ns(v);
            if (!d || *d <= 0) {
                throw UsageError("--rtt " + v + ": not a time above 0 (20ms, 1s, ...)");
            }
            o.rtt_ns = *d;
        } else if (c == 'o') {
            for (const auto& n : we::split(v, ',')) {
                o.only.emplace_back(we::trim(n));
            }
            if (o.only.empty()) {
                throw UsageError("--only needs a name");
            }
        } else if (c == 'a' || c == 'R') {
            o.apply = true;
            o.apply_routes = o.apply_routes || c == 'R';
        } else if (c == 'q') {
            o.quiet = true;
        } else if (c == 'h') {
            std::fputs(k_usage, stdout);
            std::exit(0);
        } else {
            throw UsageError(std::string(c == ':' ? "missing value for " : "unknown option ") +
                             argv[optind - 1]);
        }
    }
    if (optind < argc) {
        throw UsageError(std::string("unexpected argument ") + argv[optind]);
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        Options o = parse_args(argc, argv);
        if (o.apply && geteuid() != 0) {
            throw UsageError(
                "--apply needs root (it writes /proc/sys); without it the check runs "
                "and changes nothing");
        }
        auto all = check_all(o);
        for (const auto& n : o.only) {  // a misspelt name must not pass for a clean host
            if (n != "route" && std::none_of(all.begin(), all.end(),
                                             [&](const Finding& f) { return selected(f, {n}); })) {
                std::string names = "route";
                for (const auto& f : all) {
                    names += we::starts_with(f.name, "route") ? "" : " " + f.name;
                }
                throw UsageError("--only " + n + ": no such finding; names: " + names);
            }
        }
        auto keep = [&](std::vector<Finding> v) {
            std::erase_if(v, [&](const Finding& f) { return !selected(f, o.only); });
            return v;
        };
        auto findings = keep(std::move(all));
        if (o.apply) {
            apply(findings, o);
            findings = keep(check_all(o));  // the verdict is the state after the changes
        }
        static const char* words[] = {"ok  ", "info", "warn", "fail"};
        bool ready = true;
        for (const auto& f : findings) {
            ready = ready && f.level != Level::fail;
            if (!o.quiet || f.level >= Level::warn) {
                std::printf("%s %s: %s%s\n", words[int(f.level)], f.name.c_str(), f.detail.c_str(),
                            f.fix.empty() ? "" : ("; fix: " + f.fix).c_str());
            }
        }
        return ready ? 0 : 1;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "wanmpi-tune: %s\n(wanmpi-tune --help shows the usage)\n", e.what());
        return 2;
    } catch (const FatalError& e) {
        std::fprintf(stderr, "wanmpi-tune: %s\n", e.what());
        return 2;
    }
}
