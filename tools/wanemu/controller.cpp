#include "controller.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>

#include "common.hpp"
#include "emulator.hpp"
#include "netns.hpp"

namespace wanmpi::wanemu {

namespace {

std::string tun_name(size_t link) { return "wan" + std::to_string(link); }

std::string rate_arg(double bps) { return fmt("%.0fbit", bps); }

// tc's tbf needs a bucket of at least one (GSO) packet; ~2 ms at the rate keeps it accurate
// at the kernel's timer resolution without letting long bursts through.
std::string tbf_args(double bps, int mtu, bool gso) {
    double burst = std::max<double>(bps / 8.0 * 0.002, gso ? 65536.0 + 4096 : 2.0 * mtu + 64);
    return "root tbf rate " + rate_arg(bps) + fmt(" burst %.0f latency 20ms", burst);
}

struct link_health {
    uint64_t last_cpu_ns = 0;
    uint64_t start_cpu_ns = 0;
    int64_t last_t = 0;
    double cpu_pct_last = 0;
    std::array<uint64_t, 2> last_late_over{0, 0};
    std::array<uint64_t, 2> last_delivered{0, 0};
    std::array<uint64_t, 2> last_write_errors{0, 0};
    bool failure_reported = false;
    std::array<uint64_t, 2> tun_drops{0, 0};
    std::array<uint64_t, 2> tun_drops_base{0, 0};
};

uint64_t thread_cpu_ns(int tid) {
    if (tid <= 0) {
        return 0;
    }
    auto s = try_read_file("/proc/self/task/" + std::to_string(tid) + "/schedstat");
    return s ? std::strtoull(s->c_str(), nullptr, 10) : 0;
}

class controller {
public:
    controller(run_state st, up_options o, int ready_fd)
        : st_(std::move(st)), opt_(std::move(o)), ready_fd_(ready_fd) {}
    int run();

private:
    void setup();
    void loop();
    void teardown();
    void notify(bool ok, const std::string& text);
    void drain_records();
    void tick_health(int64_t now);
    void serve_client(int fd, bool& shutdown);
    std::string handle_request(const std::string& line, bool& shutdown);
    std::string stats_text(bool kv);
    std::string do_set(const std::vector<std::string>& args);
    uint64_t tun_tx_dropped(int cluster, const std::string& ifname);
    void warn(const std::string& msg);
    void save_params_to_state();

    run_state st_;
    up_options opt_;
    int ready_fd_;
    std::vector<std::string> all_ns_;
    std::vector<std::unique_ptr<link_engine>> engines_;
    std::vector<link_health> health_;
    std::vector<int> netdev_fd_;  // per cluster: /proc/net/dev of its router namespace
    FILE* csv_ = nullptr;
    int listen_fd_ = -1;
    int signal_fd_ = -1;
    int watch_fd_ = -1;
    int64_t t0_ = 0;
    int64_t t0_wall_ = 0;
    std::deque<std::string> warnings_;
    uint64_t warning_count_ = 0;
    int64_t last_health_ = 0;
    bool any_rt_ = false;
};

void controller::notify(bool ok, const std::string& text) {
    std::string msg = (ok ? "ok\n" : "error\n") + text;
    if (ready_fd_ >= 0) {
        size_t off = 0;
        while (off < msg.size()) {
            ssize_t n = ::write(ready_fd_, msg.data() + off, msg.size() - off);
            if (n <= 0) {
                break;
            }
            off += size_t(n);
        }
        ::close(ready_fd_);
        ready_fd_ = -1;
    } else if (ok) {
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
    } else {
        std::fprintf(stderr, "wanemu: %s\n", text.c_str());
    }
}

void controller::warn(const std::string& msg) {
    logf("warning: %s", msg.c_str());
    ++warning_count_;
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tm t;
    localtime_r(&ts.tv_sec, &t);
    warnings_.push_back(fmt("%02d:%02d:%02d ", t.tm_hour, t.tm_min, t.tm_sec) + msg);
    if (warnings_.size() > 20) {
        warnings_.pop_front();
    }
}

void controller::setup() {
    const topology& t = st_.topo;
    const address_plan plan = st_.plan();
    const auto hosts = st_.hosts();
    const std::string& run = st_.name;
    const int mtu = t.mtu;

    // Signals first: a SIGTERM during setup is then handled (by teardown) once setup ends.
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    ::sigprocmask(SIG_BLOCK, &mask, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    signal_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) {
        throw_errno("signalfd");
    }
    if (opt_.watch_pid > 0) {
        watch_fd_ = int(::syscall(SYS_pidfd_open, opt_.watch_pid, 0));
        if (watch_fd_ < 0) {
            throw_errno("--watch-pid " + std::to_string(opt_.watch_pid));
        }
    }

    std::vector<std::string> routers;
    for (const auto& c : t.clusters) {
        routers.push_back(router_netns(run, c.name));
    }
    all_ns_ = routers;
    for (const auto& h : hosts) {
        all_ns_.push_back(host_netns(run, h.name));
    }
    for (const auto& n : all_ns_) {
        if (netns_exists(n)) {
            throw error("network namespace " + n + " already exists (try `wanemu down --all`)");
        }
    }
    logf("creating %zu namespaces", all_ns_.size());
    netns_create(all_ns_);

    netdev_fd_.assign(t.clusters.size(), -1);
    for (size_t c = 0; c < t.clusters.size(); ++c) {
        run_in_netns(routers[c], [&] {
            write_sysctl("net/ipv4/ip_forward", "1");
            write_sysctl("net/ipv4/conf/all/rp_filter", "0");
            write_sysctl("net/ipv4/conf/default/rp_filter", "0");
            // Unreachable destinations (private subnets, the outside world) must fail at once,
            // every time: ICMP errors are not rate-limited by the emulated routers.
            write_sysctl("net/ipv4/icmp_ratelimit", "0");
            // Routers carry IPv4 only; this keeps IPv6 chatter off the emulated links.
            write_sysctl("net/ipv6/conf/all/disable_ipv6", "1");
            write_sysctl("net/ipv6/conf/default/disable_ipv6", "1");
            netdev_fd_[c] = ::open("/proc/thread-self/net/dev", O_RDONLY | O_CLOEXEC);
        });
    }

    // Cluster LANs: a bridge per cluster side in the router namespace, a veth per host NIC.
    for (size_t c = 0; c < t.clusters.size(); ++c) {
        const auto& cl = t.clusters[c];
        std::string b;
        std::string tcb;
        b += "link add br0 type bridge\n";
        b += "addr add " + plan.public_gateway(int(c)) + "/24 dev br0\n";
        if (cl.is_private) {
            b += "link add br1 type bridge\n";
        }
        for (const auto& h : hosts) {
            if (h.cluster != int(c)) {
                continue;
            }
            std::string hns = host_netns(run, h.name);
            std::string j = std::to_string(h.index);
            std::string m = std::to_string(mtu);
            if (!h.pub_addr.empty()) {
                std::string peer = cl.is_private ? "eth1" : "eth0";
                b += "link add v" + j + " mtu " + m + " type veth peer name " + peer + " mtu " + m +
                     " netns " + hns + "\n";
                b += "link set v" + j + " master br0 up\n";
                if (cl.nic_bps > 0) {
                    tcb += "qdisc add dev v" + j + " " + tbf_args(cl.nic_bps, mtu, t.gso) + "\n";
                }
            }
            if (!h.priv_addr.empty()) {
                b += "link add p" + j + " mtu " + m + " type veth peer name eth0 mtu " + m +
                     " netns " + hns + "\n";
                b += "link set p" + j + " master br1 up\n";
                if (cl.nic_bps > 0) {
                    tcb += "qdisc add dev p" + j + " " + tbf_args(cl.nic_bps, mtu, t.gso) + "\n";
                }
            }
        }
        b += "link set br0 mtu " + std::to_string(mtu) + " up\n";
        if (cl.is_private) {
            b += "link set br1 mtu " + std::to_string(mtu) + " up\n";
        }
        run_checked({"ip", "-n", routers[c], "-batch", "-"}, "setting up cluster " + cl.name, b);
        if (!tcb.empty()) {
            run_checked({"tc", "-n", routers[c], "-batch", "-"},
                        "setting NIC rates in cluster " + cl.name, tcb);
        }
    }

    for (const auto& h : hosts) {
        const auto& cl = t.clusters[size_t(h.cluster)];
        std::string hns = host_netns(run, h.name);
        std::string b = "link set lo up\n";
        std::string tcb;
        if (!h.priv_addr.empty()) {
            b += "addr add " + h.priv_addr + "/24 dev eth0\nlink set eth0 up\n";
        }
        if (!h.pub_addr.empty()) {
            std::string dev = cl.is_private ? "eth1" : "eth0";
            b += "addr add " + h.pub_addr + "/24 dev " + dev + "\nlink set " + dev + " up\n";
            b += "route add default via " + plan.public_gateway(h.cluster) + " dev " + dev + "\n";
            if (cl.nic_bps > 0) {
                tcb += "qdisc add dev " + dev + " " + tbf_args(cl.nic_bps, mtu, t.gso) + "\n";
            }
        }
        if (!h.priv_addr.empty() && cl.nic_bps > 0) {
            tcb += "qdisc add dev eth0 " + tbf_args(cl.nic_bps, mtu, t.gso) + "\n";
        }
        run_checked({"ip", "-n", hns, "-batch", "-"}, "setting up host " + h.name, b);
        if (!tcb.empty()) {
            run_checked({"tc", "-n", hns, "-batch", "-"}, "setting NIC rate of " + h.name, tcb);
        }
    }

    // Emulated links: a TUN device at each end, both held by this process.
    std::vector<std::array<int, 2>> tun_fds;
    for (size_t k = 0; k < t.links.size(); ++k) {
        const auto& l = t.links[k];
        std::array<int, 2> fds{-1, -1};
        for (int side = 0; side < 2; ++side) {
            int c = side == 0 ? l.a : l.b;
            run_in_netns(routers[size_t(c)],
                         [&] { fds[size_t(side)] = create_tun(tun_name(k), t.gso, mtu, 10000); });
        }
        tun_fds.push_back(fds);
    }

    // Routes: each router sends a destination cluster's public subnet into the first link of
    // a shortest path (by hops) towards it. Private subnets are routed nowhere.
    for (size_t c = 0; c < t.clusters.size(); ++c) {
        std::vector<int> first(t.clusters.size(), -1);
        std::vector<int> seen(t.clusters.size(), 0);
        std::deque<int> q{int(c)};
        seen[c] = 1;
        while (!q.empty()) {
            int u = q.front();
            q.pop_front();
            for (size_t k = 0; k < t.links.size(); ++k) {
                const auto& l = t.links[k];
                int v = l.a == u ? l.b : (l.b == u ? l.a : -1);
                if (v < 0 || seen[size_t(v)]) {
                    continue;
                }
                seen[size_t(v)] = 1;
                first[size_t(v)] = u == int(c) ? int(k) : first[size_t(u)];
                q.push_back(v);
            }
        }
        std::string b;
        for (size_t d = 0; d < t.clusters.size(); ++d) {
            if (first[d] >= 0) {
                b += "route add " + plan.public_subnet(int(d)) + " dev " +
                     tun_name(size_t(first[d])) + "\n";
            }
        }
        if (!b.empty()) {
            run_checked({"ip", "-n", routers[c], "-batch", "-"},
                        "routing in cluster " + t.clusters[c].name, b);
        }
    }

    // Hosts files: a cluster sees its own hosts by their cluster-side address and the others
    // by their public address (private hosts of other clusters resolve but are unreachable).
    for (size_t c = 0; c < t.clusters.size(); ++c) {
        std::string hf = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
        for (const auto& h : hosts) {
            std::string a = h.addr_seen_from(int(c));
            if (!a.empty()) {
                hf += a + "\t" + h.name + "\n";
            }
        }
        write_file_atomic(run_dir(run) + "/hosts." + t.clusters[c].name, hf);
    }

    // Name service inside the hosts: files only. No DNS server is reachable from an emulated
    // site, so a DNS fallback (e.g. an AAAA lookup of a name /etc/hosts has as IPv4 only) could
    // only wait for its 5 s timeout.
    {
        std::string ns_conf = try_read_file("/etc/nsswitch.conf").value_or("");
        std::string out;
        bool have_hosts = false;
        for (const auto& line : split(ns_conf, '\n', false)) {
            if (starts_with(trim(line), "hosts:")) {
                out += "hosts:          files\n";
                have_hosts = true;
            } else {
                out += line + "\n";
            }
        }
        if (!have_hosts) {
            out += "hosts:          files\n";
        }
        write_file_atomic(run_dir(run) + "/nsswitch.conf", out);
    }

    if (t.interval_ns > 0) {
        csv_ = std::fopen(st_.csv.c_str(), "w");
        if (!csv_) {
            throw_errno("cannot open monitor file " + st_.csv);
        }
        std::setvbuf(csv_, nullptr, _IOFBF, 1 << 16);
        std::fputs(
            "time_s,link,from,to,bytes,packets,drop_queue,drop_random,queue_bytes,"
            "queue_packets,late_max_us\n",
            csv_);
        std::fflush(csv_);
    }

    // Control socket.
    std::string sock_path = run_dir(run) + "/ctl";
    ::unlink(sock_path.c_str());
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (sock_path.size() >= sizeof sa.sun_path) {
        throw error("state directory path too long for a unix socket: " + sock_path);
    }
    std::strcpy(sa.sun_path, sock_path.c_str());
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        ::listen(listen_fd_, 16) != 0) {
        throw_errno("control socket " + sock_path);
    }

    t0_ = now_ns();
    timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    t0_wall_ = int64_t(wall.tv_sec) * 1000000000 + wall.tv_nsec;
    for (size_t k = 0; k < t.links.size(); ++k) {
        const auto& l = t.links[k];
        engine_config cfg;
        cfg.gso = t.gso;
        cfg.max_packet = t.gso ? 65536 + 512 : mtu + 64;
        cfg.t0_ns = t0_;
        cfg.interval_ns = t.interval_ns;
        cfg.rt_priority = opt_.rt_priority;
        cfg.spin_ns = opt_.spin_ns;
        cfg.late_warn_ns = opt_.late_warn_ns;
        cfg.seed = uint64_t(t0_) ^ (uint64_t(k + 1) << 32);
        engines_.push_back(
            std::make_unique<link_engine>(l.name, tun_fds[k][0], tun_fds[k][1], l.ab, l.ba, cfg));
        tun_fds[k] = {-1, -1};
        engines_.back()->start();
    }
    health_.assign(engines_.size(), link_health{});
    for (size_t k = 0; k < engines_.size(); ++k) {
        for (int side = 0; side < 2; ++side) {
            int c = side == 0 ? t.links[k].a : t.links[k].b;
            health_[k].tun_drops_base[size_t(side)] = tun_tx_dropped(c, tun_name(k));
        }
    }
    // Wait until the engine threads report their scheduling class (for stats and the log).
    for (auto& e : engines_) {
        for (int i = 0; i < 200 && e->tid() == 0; ++i) {
            ::usleep(1000);
        }
        ::usleep(1000);
        any_rt_ |= e->rt_active();
    }
    if (opt_.rt_priority > 0 && !engines_.empty() && !any_rt_) {
        warn(
            "could not get SCHED_FIFO priority for the link threads; timing may be less "
            "faithful under load");
    }
    st_.status = "running";
    save_run(st_);
    logf("run %s is up: %zu cluster(s), %zu host(s), %zu link(s)", run.c_str(), t.clusters.size(),
         hosts.size(), t.links.size());
}

uint64_t controller::tun_tx_dropped(int cluster, const std::string& ifname) {
    int fd = netdev_fd_[size_t(cluster)];
    if (fd < 0) {
        return 0;
    }
    char buf[65536];
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    for (const auto& line : split(std::string_view(buf, size_t(n)), '\n')) {
        auto sv = trim(line);
        if (starts_with(sv, ifname + ":")) {
            auto f = split_ws(sv.substr(ifname.size() + 1));
            if (f.size() >= 12) {
                return std::strtoull(f[11].c_str(), nullptr, 10);
            }
        }
    }
    return 0;
}

void controller::drain_records() {
    if (!csv_) {
        for (auto& e : engines_) {
            e->take_records();
        }
        return;
    }
    struct row {
        bin_record r;
        size_t link;
    };
    std::vector<row> rows;
    for (size_t k = 0; k < engines_.size(); ++k) {
        for (const auto& r : engines_[k]->take_records()) {
            rows.push_back({r, k});
        }
    }
    std::stable_sort(rows.begin(), rows.end(), [](const row& x, const row& y) {
        if (x.r.bin != y.r.bin) {
            return x.r.bin < y.r.bin;
        }
        return x.link != y.link ? x.link < y.link : x.r.dir < y.r.dir;
    });
    const auto& t = st_.topo;
    bool whole_ms = t.interval_ns % 1000000 == 0;
    for (const auto& w : rows) {
        const auto& l = t.links[w.link];
        const std::string& from = t.clusters[size_t(w.r.dir == 0 ? l.a : l.b)].name;
        const std::string& to = t.clusters[size_t(w.r.dir == 0 ? l.b : l.a)].name;
        double ts = double(w.r.bin) * double(t.interval_ns) / 1e9;
        std::fprintf(csv_,
                     "%.*f,%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                     ",%" PRIu64 ",%" PRIu64 "\n",
                     whole_ms ? 3 : 6, ts, l.name.c_str(), from.c_str(), to.c_str(), w.r.bytes,
                     w.r.packets, w.r.drop_queue, w.r.drop_random, w.r.queue_bytes_max,
                     w.r.queue_pkts_max, w.r.late_max_us);
    }
    std::fflush(csv_);
}

void controller::tick_health(int64_t now) {
    const auto& t = st_.topo;
    for (size_t k = 0; k < engines_.size(); ++k) {
        auto& h = health_[k];
        auto& e = *engines_[k];
        uint64_t cpu = thread_cpu_ns(e.tid());
        if (h.last_t == 0) {
            h.start_cpu_ns = cpu;
        } else if (now > h.last_t) {
            h.cpu_pct_last = 100.0 * double(cpu - h.last_cpu_ns) / double(now - h.last_t);
            if (h.cpu_pct_last > 90.0) {
                warn(
                    fmt("link %s: emulator thread used %.0f%% of a core in the last second; "
                        "it may be falling behind (see lateness in `wanemu stats`)",
                        e.name().c_str(), h.cpu_pct_last));
            }
        }
        h.last_cpu_ns = cpu;
        h.last_t = now;
        if (int err = e.failed_errno(); err != 0 && !h.failure_reported) {
            h.failure_reported = true;
            warn(fmt("link %s: a TUN device failed (%s); the link no longer carries traffic",
                     e.name().c_str(), std::strerror(err)));
        }
        auto tot = e.totals();
        for (int d = 0; d < 2; ++d) {
            const auto& l = t.links[k];
            std::string dir = t.clusters[size_t(d == 0 ? l.a : l.b)].name + ">" +
                              t.clusters[size_t(d == 0 ? l.b : l.a)].name;
            // Single late packets happen (timer and VM noise, a long write into the receiving
            // stack); warn when lateness is frequent or large enough to distort what is measured.
            uint64_t late = tot[size_t(d)].late_over - h.last_late_over[size_t(d)];
            uint64_t delivered = tot[size_t(d)].delivered - h.last_delivered[size_t(d)];
            uint64_t worst = e.take_window_late_max(d);
            if ((late > 10 && late * 100 > delivered) || worst > 10 * k_ms) {
                warn(fmt("link %s: emulator behind: %" PRIu64 " of %" PRIu64
                         " packets delivered more than %.1f ms late in the last second "
                         "(worst %.1f ms)",
                         dir.c_str(), late, delivered, double(opt_.late_warn_ns) / 1e6,
                         double(worst) / 1e6));
            }
            h.last_delivered[size_t(d)] = tot[size_t(d)].delivered;
            if (tot[size_t(d)].write_errors > h.last_write_errors[size_t(d)]) {
                warn(fmt("link %s: %" PRIu64
                         " packets could not be written into the receiving side's TUN device "
                         "(is it down?)",
                         dir.c_str(),
                         tot[size_t(d)].write_errors - h.last_write_errors[size_t(d)]));
            }
            h.last_write_errors[size_t(d)] = tot[size_t(d)].write_errors;
            h.last_late_over[size_t(d)] = tot[size_t(d)].late_over;
            int c = d == 0 ? l.a : l.b;
            uint64_t dr = tun_tx_dropped(c, tun_name(k)) - h.tun_drops_base[size_t(d)];
            if (dr > h.tun_drops[size_t(d)]) {
                warn(fmt("link %s: %" PRIu64
                         " packets dropped by the TUN queue before the emulator read them",
                         dir.c_str(), dr - h.tun_drops[size_t(d)]));
            }
            h.tun_drops[size_t(d)] = dr;
        }
    }
}

void controller::save_params_to_state() {
    bool changed = false;
    for (size_t k = 0; k < engines_.size(); ++k) {
        auto p = engines_[k]->params();
        auto& l = st_.topo.links[k];
        if (p[0].serialize() != l.ab.serialize() || p[1].serialize() != l.ba.serialize()) {
            l.ab = p[0];
            l.ba = p[1];
            changed = true;
        }
    }
    if (changed) {
        try {
            save_run(st_);
        } catch (const error& e) {
            logf("%s", e.what());
        }
    }
}

std::string controller::do_set(const std::vector<std::string>& args) {
    if (args.size() < 2) {
        throw error(
            "usage: wanemu set LINK|all key=value[,key=value...] "
            "(delay, rate, loss, queue, queue_pkts, jitter; for=DURATION; from=CLUSTER)");
    }
    const auto& t = st_.topo;
    std::vector<size_t> targets;
    if (args[0] == "all") {
        for (size_t k = 0; k < engines_.size(); ++k) {
            targets.push_back(k);
        }
    } else {
        int k = t.link_index(args[0]);
        if (k < 0) {
            std::vector<std::string> names;
            for (const auto& l : t.links) {
                names.push_back(l.name);
            }
            throw error("no link '" + args[0] + "' (links: " +
                        (names.empty() ? std::string("none") : join(names, ", ")) + ")");
        }
        targets.push_back(size_t(k));
    }
    std::vector<std::pair<std::string, std::string>> kvs;
    int64_t revert = 0;
    std::string from;
    for (size_t i = 1; i < args.size(); ++i) {
        for (const auto& kv : split(args[i], ',')) {
            size_t eq = kv.find('=');
            if (eq == std::string::npos) {
                throw error("expected key=value, got '" + kv + "'");
            }
            std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
            if (k == "for") {
                auto d = parse_duration_ns(v);
                if (!d || *d <= 0) {
                    throw error("bad for='" + v + "': expected a duration such as 5s");
                }
                revert = *d;
            } else if (k == "from") {
                if (t.cluster_index(v) < 0) {
                    throw error("from=" + v + ": no such cluster");
                }
                from = v;
            } else {
                link_params probe;
                apply_param(probe, k, v);  // validate now, before touching any link
                kvs.emplace_back(k, v);
            }
        }
    }
    if (kvs.empty()) {
        throw error("nothing to set");
    }
    // Compute and check every target's new parameters before changing any link, so that a
    // refused value (e.g. a queue smaller than one packet) leaves all links as they were.
    struct change {
        size_t k;
        int mask;
        std::array<link_params, 2> p;
    };
    std::vector<change> changes;
    for (size_t k : targets) {
        const auto& l = t.links[k];
        int mask = 3;
        if (!from.empty()) {
            int c = t.cluster_index(from);
            if (c == l.a) {
                mask = 1;
            } else if (c == l.b) {
                mask = 2;
            } else if (targets.size() == 1) {
                throw error("from=" + from + ": link " + l.name + " does not touch that cluster");
            } else {
                continue;
            }
        }
        auto p = engines_[k]->params();
        for (int d = 0; d < 2; ++d) {
            if (mask & (1 << d)) {
                for (const auto& [key, v] : kvs) {
                    apply_param(p[size_t(d)], key, v);
                }
                try {
                    p[size_t(d)].validate(t.mtu);
                } catch (const error& e) {
                    throw error("link " + l.name + ": " + e.what());
                }
            }
        }
        changes.push_back({k, mask, p});
    }
    std::string out;
    for (const auto& [k, mask, p] : changes) {
        const auto& l = t.links[k];
        engines_[k]->set_params(mask, p[0], p[1], revert);
        std::string an = t.clusters[size_t(l.a)].name, bn = t.clusters[size_t(l.b)].name;
        if (mask & 1) {
            out += l.name + " " + an + ">" + bn + ": " + p[0].describe() + "\n";
        }
        if (mask & 2) {
            out += l.name + " " + bn + ">" + an + ": " + p[1].describe() + "\n";
        }
        logf("set %s: %s%s", l.name.c_str(),
             join(std::vector<std::string>(args.begin() + 1, args.end()), " ").c_str(),
             revert ? (" for " + format_duration(revert)).c_str() : "");
    }
    if (revert > 0) {
        out += "(reverting after " + format_duration(revert) + ")\n";
    }
    // Wait for the engines to apply the change so the state file and a following `stats`
    // show it.
    for (size_t k : targets) {
        std::array<dir_totals, 2> dummy;
        engines_[k]->flush(dummy, 2000);
    }
    drain_records();
    save_params_to_state();
    return out;
}

std::string controller::stats_text(bool kv) {
    const auto& t = st_.topo;
    std::vector<std::array<dir_totals, 2>> tot(engines_.size());
    for (size_t k = 0; k < engines_.size(); ++k) {
        if (!engines_[k]->flush(tot[k], 2000)) {
            tot[k] = engines_[k]->totals();
        }
    }
    drain_records();
    int64_t now = now_ns();
    double up_s = double(now - t0_) / 1e9;
    std::string out;
    if (!kv) {
        out += fmt("run %s: controller pid %d, up %.1f s, link threads %s\n", st_.name.c_str(),
                   int(::getpid()), up_s,
                   any_rt_ ? fmt("SCHED_FIFO %d", opt_.rt_priority).c_str() : "normal priority");
        out += "monitor: " +
               (csv_ ? st_.csv + " (every " + format_duration(t.interval_ns) + ")" : "off") + "\n";
    } else {
        out += fmt("run=%s pid=%d up_s=%.3f rt=%d csv=%s interval_ns=%" PRId64 " warnings=%" PRIu64
                   "\n",
                   st_.name.c_str(), int(::getpid()), up_s, any_rt_ ? 1 : 0,
                   csv_ ? st_.csv.c_str() : "-", t.interval_ns, warning_count_);
    }
    for (size_t k = 0; k < engines_.size(); ++k) {
        const auto& l = t.links[k];
        auto& e = *engines_[k];
        auto p = e.params();
        auto& h = health_[k];
        uint64_t cpu = thread_cpu_ns(e.tid());
        double cpu_s = double(cpu - h.start_cpu_ns) / 1e9;
        double cpu_avg = up_s > 0 ? 100.0 * cpu_s / up_s : 0;
        if (!kv) {
            out += fmt("link %s: emulator thread cpu %.1f%% (last second), %.2f s in total\n",
                       l.name.c_str(), h.cpu_pct_last, cpu_s);
        }
        for (int d = 0; d < 2; ++d) {
            const auto& x = tot[k][size_t(d)];
            const std::string& from = t.clusters[size_t(d == 0 ? l.a : l.b)].name;
            const std::string& to = t.clusters[size_t(d == 0 ? l.b : l.a)].name;
            double late_mean_us = x.delivered ? double(x.late_sum_ns) / 1e3 /
                                                    double(std::max<uint64_t>(1, x.delivered))
                                              : 0;
            if (kv) {
                const auto& pp = p[size_t(d)];
                out += fmt("link=%s from=%s to=%s delay_ns=%" PRId64
                           " rate_bps=%.0f "
                           "queue_bytes=%" PRId64 " queue_pkts=%" PRId64
                           " loss=%.9g "
                           "jitter_ns=%" PRId64,
                           l.name.c_str(), from.c_str(), to.c_str(), pp.delay_ns, pp.rate_bps,
                           pp.effective_queue_bytes(), pp.queue_pkts, pp.loss, pp.jitter_ns);
                out +=
                    fmt(" arrivals=%" PRIu64 " arrival_bytes=%" PRIu64 " delivered=%" PRIu64
                        " delivered_bytes=%" PRIu64 " drop_queue=%" PRIu64 " drop_random=%" PRIu64
                        " write_errors=%" PRIu64 " queue_bytes_max=%" PRIu64,
                        x.arrivals, x.arrival_bytes, x.delivered, x.delivered_bytes, x.drop_queue,
                        x.drop_random, x.write_errors, x.queue_bytes_max);
                out +=
                    fmt(" late_p50_us=%.1f late_p99_us=%.1f late_max_us=%.1f "
                        "late_mean_us=%.1f late_over=%" PRIu64 " tun_drops=%" PRIu64
                        " cpu_s=%.3f cpu_pct=%.2f\n",
                        double(x.late_p50_ns) / 1e3, double(x.late_p99_ns) / 1e3,
                        double(x.late_max_ns) / 1e3, late_mean_us, x.late_over,
                        h.tun_drops[size_t(d)], cpu_s, cpu_avg);
            } else {
                out += "  " + from + ">" + to + ": " + p[size_t(d)].describe() + "\n";
                out += fmt("    delivered %" PRIu64 " packets, %s; dropped %" PRIu64
                           " (queue) + %" PRIu64 " (random) of %" PRIu64 " arrived",
                           x.delivered, format_size(int64_t(x.delivered_bytes)).c_str(),
                           x.drop_queue, x.drop_random, x.arrivals);
                if (x.write_errors) {
                    out += fmt(", %" PRIu64 " write errors", x.write_errors);
                }
                out += "; queue max " + format_size(int64_t(x.queue_bytes_max)) + "\n";
                out +=
                    fmt("    emulator lateness: median %.0f us, p99 %.0f us, max %.2f ms; "
                        "%" PRIu64 " > %.1f ms; TUN queue drops %" PRIu64 "\n",
                        double(x.late_p50_ns) / 1e3, double(x.late_p99_ns) / 1e3,
                        double(x.late_max_ns) / 1e6, x.late_over, double(opt_.late_warn_ns) / 1e6,
                        h.tun_drops[size_t(d)]);
            }
        }
    }
    if (!kv) {
        if (warnings_.empty()) {
            out += "warnings: none\n";
        } else {
            out += fmt("warnings (%" PRIu64 ", latest last):\n", warning_count_);
            for (const auto& w : warnings_) {
                out += "  " + w + "\n";
            }
        }
    }
    return out;
}

std::string controller::handle_request(const std::string& line, bool& shutdown) {
    auto args = split_ws(line);
    if (args.empty()) {
        throw error("empty request");
    }
    if (args[0] == "ping") {
        return "";
    }
    if (args[0] == "stats") {
        return stats_text(args.size() > 1 && args[1] == "kv");
    }
    if (args[0] == "set") {
        return do_set(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    if (args[0] == "down") {
        shutdown = true;
        return "";
    }
    throw error("unknown request '" + args[0] + "'");
}

void controller::serve_client(int fd, bool& shutdown) {
    std::string line;
    int64_t deadline = now_ns() + 2000 * k_ms;
    char buf[4096];
    while (line.find('\n') == std::string::npos && line.size() < 65536) {
        int64_t left = (deadline - now_ns()) / k_ms;
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, int(left)) <= 0) {
            break;
        }
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) {
            break;
        }
        line.append(buf, size_t(n));
    }
    line = std::string(trim(line.substr(0, line.find('\n'))));
    std::string reply;
    try {
        reply = "ok\n" + handle_request(line, shutdown);
    } catch (const std::exception& e) {
        reply = std::string("error: ") + e.what() + "\n";
    }
    int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    size_t off = 0;
    while (off < reply.size()) {
        ssize_t n = ::send(fd, reply.data() + off, reply.size() - off, MSG_NOSIGNAL);
        if (n <= 0) {
            break;
        }
        off += size_t(n);
    }
}

void controller::loop() {
    int64_t next_tick = now_ns() + 100 * k_ms;
    last_health_ = now_ns();
    tick_health(last_health_);
    while (true) {
        pollfd p[3] = {{signal_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}, {watch_fd_, POLLIN, 0}};
        int64_t wait = std::max<int64_t>(0, (next_tick - now_ns()) / k_ms);
        int n = ::poll(p, watch_fd_ >= 0 ? 3 : 2, int(wait));
        if (n < 0 && errno != EINTR) {
            throw_errno("poll");
        }
        if (p[0].revents & POLLIN) {
            signalfd_siginfo si;
            if (::read(signal_fd_, &si, sizeof si) == ssize_t(sizeof si)) {
                logf("received signal %u (%s): taking the run down", si.ssi_signo,
                     strsignal(int(si.ssi_signo)));
                return;
            }
        }
        if (watch_fd_ >= 0 && (p[2].revents & POLLIN)) {
            logf("watched process %d exited: taking the run down", opt_.watch_pid);
            return;
        }
        if (p[1].revents & POLLIN) {
            int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (c >= 0) {
                bool shutdown = false;
                serve_client(c, shutdown);
                ::close(c);
                if (shutdown) {
                    logf("down requested: taking the run down");
                    return;
                }
            }
        }
        int64_t now = now_ns();
        if (now >= next_tick) {
            drain_records();
            next_tick = now + 100 * k_ms;
            if (now - last_health_ >= 1000 * k_ms) {
                tick_health(now);
                save_params_to_state();
                last_health_ = now;
            }
        }
    }
}

void controller::teardown() {
    logf("tearing down run %s", st_.name.c_str());
    try {
        st_.status = "stopping";
        save_run(st_);
    } catch (const std::exception&) {
    }
    for (auto& e : engines_) {
        e->stop();
    }
    if (!engines_.empty()) {
        drain_records();
    }
    engines_.clear();  // closes the TUN fds
    if (csv_) {
        std::fclose(csv_);
        csv_ = nullptr;
    }
    for (int& fd : netdev_fd_) {
        if (fd >= 0) {
            ::close(fd);
            fd = -1;
        }
    }
    if (listen_fd_ >= 0) {
        ::close(listen_fd_);
        listen_fd_ = -1;
    }
    std::string what = cleanup_run(st_.name);
    if (!what.empty()) {
        logf("%s", what.c_str());
    }
}

int controller::run() {
    try {
        setup();
    } catch (const std::exception& e) {
        std::string msg = e.what();
        logf("setup failed: %s", msg.c_str());
        teardown();
        notify(false, msg);
        return 1;
    }
    notify(true, opt_.quiet ? std::string() : format_hosts_table(st_));
    int rc = 0;
    try {
        loop();
    } catch (const std::exception& e) {
        logf("controller failed: %s", e.what());
        rc = 1;
    }
    teardown();
    return rc;
}

}  // namespace

int run_controller(const run_state& st, const up_options& o, int ready_fd) {
    controller c(st, o, ready_fd);
    return c.run();
}

}  // namespace wanmpi::wanemu
