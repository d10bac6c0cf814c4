// wanemu command line: emulated sites (network namespaces) joined by emulated wide-area links,
// with a per-millisecond traffic monitor. See docs/wanemu.md.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.hpp"
#include "controller.hpp"
#include "netns.hpp"
#include "state.hpp"
#include "topology.hpp"

namespace wanmpi::wanemu {
int cmd_exec(const std::string& name_opt, std::vector<std::string> args);
int cmd_plot(const std::vector<std::string>& args);
bool print_command_usage(const std::string& cmd);
}  // namespace wanmpi::wanemu

using namespace wanmpi::wanemu;

namespace {

const char* k_usage =
    R"(usage: wanemu COMMAND [OPTIONS]

Emulated clusters (network namespaces) joined by emulated wide-area links.

  up [OPTIONS] TOPOLOGY_FILE        build a run from a topology file
  up [OPTIONS] --clusters N --hosts H [--delay 10ms] [--rate 200mbit] [--loss 0.5%]
     [--queue 64KB|100p|64KB+100p|auto] [--jitter 1ms] [--private K|c1,c2] [--frontends F]
     [--mtu 9000] [--gso] [--nic 1gbit]
                                    the quick form: a full mesh of N clusters
     OPTIONS: --name RUN  --foreground  --csv PATH  --log PATH  --interval 1ms|off
              --rt-prio N | --no-rt  --spin DURATION  --watch-pid PID  --late-warn 1ms  --quiet
  check [OPTIONS] TOPOLOGY_FILE|--clusters ...
                                    show what up would build (no root needed)
  hosts [--names|--kv] [--cluster C]  list hosts: cluster, role, namespace, addresses
  exec [-n] HOST -- CMD [ARG...]    run CMD on HOST (argv as given)
  exec [-n] HOST CMD...             ssh style: the words are joined and run by /bin/sh -c
  set LINK|all key=value[,...]      change a link live: delay rate loss queue queue_pkts jitter,
                                    from=CLUSTER (one direction), for=5s (then revert)
  stats [--kv]                      per link direction: traffic, drops, queue, emulator
                                    lateness and CPU, warnings
  down                              take the run down (everything it created)
  down --all [--live]               clean up runs whose controller died (--live: all runs)
  list                              list runs
  plot CSV -o OUT.png|OUT.svg [--title T] [--link L] [--from S] [--to S] [--bin 10ms]
       [--size WxH] [--script OUT.gp]
                                    plot a traffic-monitor CSV

Every command except up/list/plot works on one run: --name RUN, else $WANEMU_RUN, else the
only run that is up. Needs root (except check and plot). `wanemu COMMAND --help` shows one
command's usage; docs/wanemu.md has everything.
)";

// Usage of each command, printed by `wanemu COMMAND --help` (or -h, or `wanemu help COMMAND`).
struct command_help {
    const char* name;
    const char* text;
};
const command_help k_command_help[] = {
    {"up", R"(usage: wanemu up [OPTIONS] TOPOLOGY_FILE
       wanemu up [OPTIONS] --clusters N --hosts H [LINK AND CLUSTER OPTIONS]

Builds a run (namespaces, bridges, emulated links) and returns once it is ready.

quick form (a full mesh of clusters c0..c<N-1>, hosts c<i>h<j>):
  --clusters N          number of clusters (1..64)
  --hosts H             hosts per cluster (1..200)
  --delay 10ms          one-way delay of every link
  --rate 200mbit        link rate ("unlimited" for none)
  --loss 0.5%           random loss per packet
  --queue auto          drop-tail queue: 64KB (bytes), 20p (packets only), 64KB+20p (both),
                        auto (one round trip's worth, at least 64 KB), auto+20p
  --queue-pkts N        packet limit next to the byte limit in force
  --jitter 1ms          delay variation (packets are never reordered)
  --private K|c1,c2     the last K clusters (or the named ones) are private
  --frontends F         the first F hosts of each cluster are front-ends (default 1); in a
                        private cluster they are the hosts with a public address too
  --nic RATE            limit every host NIC (each interface, both directions) with tbf
options (both forms):
  --mtu 9000            MTU of every interface (576..65000)
  --gso                 TUN vnet mode with 64 KB GSO super-packets (for >= 1 Gbit/s)
  --name RUN            run name (default $WANEMU_RUN, else r<index>)
  --foreground, -f      stay in the foreground; Ctrl-C takes the run down
  --csv PATH            traffic monitor output (default /run/wanemu/<run>/monitor.csv)
  --interval 1ms|off    monitor bin (100us..10s)
  --log PATH            controller log
  --rt-prio N, --no-rt  SCHED_FIFO priority of the link threads (default 50)
  --spin DURATION       busy-wait the last part of each wait
  --late-warn 1ms       lateness counted as late in stats and warnings
  --watch-pid PID       take the run down when PID exits
  --quiet, -q           print nothing on success
)"},
    {"check", R"(usage: wanemu check [OPTIONS] TOPOLOGY_FILE
       wanemu check [OPTIONS] --clusters N --hosts H [...]

Same arguments as `wanemu up` (see `wanemu up --help`): prints the hosts and links that up
would build, or the error it would report. Needs no root.
)"},
    {"hosts", R"(usage: wanemu hosts [--name RUN] [--names | --kv] [--cluster C]

Prints the run's hosts (cluster, role, namespace, addresses) and links.
  --names       host names only, one a line
  --kv          host=.. cluster=.. role=frontend|compute netns=.. public=ADDR|- private=ADDR|-
  --cluster C   only the hosts of cluster C
)"},
    {"exec", R"(usage: wanemu exec [--name RUN] [-n] HOST -- CMD [ARG...]   argv exactly as given
       wanemu exec [--name RUN] [-n] HOST CMD [ARG...]      ssh style: run by /bin/sh -c
       wanemu exec [--name RUN] HOST                        an interactive shell

Runs a command on HOST (a host name, one of its addresses, or user@host) like ssh does:
the command's own stdin/stdout/stderr, environment and directory passed through, its exit
status (255 for wanemu exec's own errors), signals forwarded. -n: stdin from /dev/null.
ssh options that launchers add (-x, -T, -o OPT, -l USER, -p PORT, ...) are ignored.
)"},
    {"set", R"(usage: wanemu set [--name RUN] LINK|all key=value[,key=value...] [key=value ...]

Changes a link while the run is up. LINK is a-b (either order) or all.
  delay=10ms rate=200mbit loss=1% jitter=1ms
  queue=64KB|20p|64KB+20p|auto|auto+20p   (the whole queue limit)
  queue_pkts=N                            (the packet limit only; 0 = none)
  from=CLUSTER    change only the direction leaving CLUSTER
  for=5s          revert to the previous parameters after that long
)"},
    {"stats", R"(usage: wanemu stats [--name RUN] [--kv]

Per link: the emulator thread's CPU; per direction: parameters, packets and bytes delivered,
queue and random drops, the largest queue, the emulator's lateness, TUN queue drops, and the
controller's warnings. Flushes the traffic monitor first.
  --kv    one key=value line per direction, for scripts
)"},
    {"down", R"(usage: wanemu down [--name RUN]
       wanemu down --all [--live]

Takes the run down: stops its controller and removes its processes, namespaces and state.
  --all     clean up every run whose controller is dead, and leftover wn.* namespaces
  --live    with --all: also take down runs that are still up
)"},
    {"list", R"(usage: wanemu list

Lists the runs: name, index, state (running or stale), controller pid, clusters, hosts,
monitor file.
)"},
    {"plot", R"(usage: wanemu plot CSV -o OUT.png|OUT.svg [OPTIONS]

Draws a traffic-monitor CSV with gnuplot: throughput per direction with drops marked, and the
queue of each direction below. A direction has the same colour in both panels and in every plot
of runs with the same links. CSV "-" reads standard input.
  --title T         plot title
  --link L          only link L (a-b)
  --from S, --to S  time window in seconds (or a duration such as 500ms)
  --bin 10ms        re-bin to this width (default: at most ~1500 points)
  --size WxH        image size (default 1000x620)
  --script PATH     write the gnuplot script (data included) to PATH instead of running gnuplot
)"},
    {"help", R"(usage: wanemu help [COMMAND]

Prints the list of commands, or one command's usage.
)"},
};

}  // namespace

namespace wanmpi::wanemu {
// Prints the usage of `cmd` to stdout; returns false if there is no such command.
bool print_command_usage(const std::string& cmd) {
    for (const auto& h : k_command_help) {
        if (cmd == h.name) {
            std::fputs(h.text, stdout);
            return true;
        }
    }
    return false;
}
}  // namespace wanmpi::wanemu

namespace {

bool is_help(const std::string& a) { return a == "--help" || a == "-h"; }

bool take_value(const std::vector<std::string>& a, size_t& i, const std::string& opt,
                std::string& out) {
    if (a[i] == opt) {
        if (i + 1 >= a.size()) {
            throw error(opt + " needs a value");
        }
        out = a[++i];
        return true;
    }
    if (starts_with(a[i], opt + "=")) {
        out = a[i].substr(opt.size() + 1);
        return true;
    }
    return false;
}

int parse_int(const std::string& opt, const std::string& v, int lo, int hi) {
    char* end = nullptr;
    long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < lo || x > hi) {
        throw error("bad " + opt + " '" + v + "' (" + std::to_string(lo) + ".." +
                    std::to_string(hi) + ")");
    }
    return int(x);
}

// "--delay" / "--delay=10ms" -> "delay" for the link options of the quick form, else "".
std::string link_option(const std::string& arg) {
    for (const char* k : {"delay", "rate", "loss", "queue", "jitter", "queue-pkts"}) {
        std::string o = std::string("--") + k;
        if (arg == o || starts_with(arg, o + "=")) {
            return k;
        }
    }
    return "";
}

// Parses the options of `up` (and `check`) into a topology and run options.
topology parse_up_args(const std::vector<std::string>& a, up_options& o) {
    quick_form q;
    bool quick = false;
    std::string file, interval;
    bool mtu_set = false, gso_set = false;
    for (size_t i = 0; i < a.size(); ++i) {
        std::string v;
        if (take_value(a, i, "--name", v)) {
            o.name = v;
        } else if (a[i] == "--foreground" || a[i] == "-f") {
            o.foreground = true;
        } else if (take_value(a, i, "--csv", v)) {
            o.csv = v;
        } else if (take_value(a, i, "--log", v)) {
            o.log = v;
        } else if (take_value(a, i, "--interval", v)) {
            interval = v;
        } else if (take_value(a, i, "--rt-prio", v)) {
            o.rt_priority = parse_int("--rt-prio", v, 0, 99);
        } else if (a[i] == "--no-rt") {
            o.rt_priority = 0;
        } else if (take_value(a, i, "--spin", v)) {
            auto d = parse_duration_ns(v);
            if (!d || *d < 0 || *d > 10 * k_ms) {
                throw error("bad --spin '" + v + "' (0..10ms)");
            }
            o.spin_ns = *d;
        } else if (take_value(a, i, "--late-warn", v)) {
            auto d = parse_duration_ns(v);
            if (!d || *d <= 0) {
                throw error("bad --late-warn '" + v + "'");
            }
            o.late_warn_ns = *d;
        } else if (take_value(a, i, "--watch-pid", v)) {
            o.watch_pid = parse_int("--watch-pid", v, 1, 1 << 30);
        } else if (a[i] == "--quiet" || a[i] == "-q") {
            o.quiet = true;
        } else if (take_value(a, i, "--clusters", v)) {
            q.clusters = parse_int("--clusters", v, 1, 64);
            quick = true;
        } else if (take_value(a, i, "--hosts", v)) {
            q.hosts = parse_int("--hosts", v, 1, 200);
            quick = true;
        } else if (std::string key = link_option(a[i]); !key.empty()) {
            take_value(a, i, "--" + key, v);
            if (key == "queue-pkts") {
                key = "queue_pkts";
            }
            apply_param(q.params, key, v);
            quick = true;
        } else if (take_value(a, i, "--private", v)) {
            q.private_spec = v;
            quick = true;
        } else if (take_value(a, i, "--mtu", v)) {
            q.mtu = parse_int("--mtu", v, 576, 65000);
            mtu_set = true;
        } else if (a[i] == "--gso") {
            q.gso = true;
            gso_set = true;
        } else if (take_value(a, i, "--nic", v)) {
            auto r = parse_rate_bps(v);
            if (!r) {
                throw error("bad --nic '" + v + "'");
            }
            q.nic_bps = *r;
            quick = true;
        } else if (take_value(a, i, "--frontends", v)) {
            // Range-checked against --hosts in make_quick_topology (a clear message there).
            q.frontends = parse_int("--frontends", v, -1000, 1000);
            quick = true;
        } else if (!a[i].empty() && a[i][0] == '-') {
            throw error("unknown option '" + a[i] + "' for up (see `wanemu help`)");
        } else if (file.empty()) {
            file = a[i];
        } else {
            throw error("up takes at most one topology file");
        }
    }
    topology t;
    if (!file.empty()) {
        if (quick) {
            throw error("give either a topology file or the quick form (--clusters ...), not both");
        }
        t = parse_topology(read_file(file), file);
        if (mtu_set) {
            t.mtu = q.mtu;
        }
        if (gso_set) {
            t.gso = true;
        }
    } else {
        if (q.clusters == 0) {
            throw error("up needs a topology file or --clusters N (see `wanemu help`)");
        }
        t = make_quick_topology(q);
    }
    if (!interval.empty()) {
        if (interval == "off" || interval == "0") {
            t.interval_ns = 0;
        } else {
            auto d = parse_duration_ns(interval);
            if (!d || *d < 100 * k_us || *d > 10000 * k_ms) {
                throw error("bad --interval '" + interval + "' (100us..10s, or off)");
            }
            t.interval_ns = *d;
        }
    }
    t.validate();
    return t;
}

int do_up(const std::vector<std::string>& a) {
    up_options o;
    topology t = parse_up_args(a, o);
    return cmd_up(t, o);
}

// `wanemu check`: what `up` would build, without root and without building anything.
int do_check(const std::vector<std::string>& a) {
    up_options o;
    run_state st;
    st.topo = parse_up_args(a, o);
    st.name = o.name.empty() ? "check" : o.name;
    std::fputs(format_hosts_table(st).c_str(), stdout);
    std::printf("mtu %d, gso %s, monitor %s; addresses shown for run index 0\n", st.topo.mtu,
                st.topo.gso ? "on" : "off",
                st.topo.interval_ns > 0 ? ("every " + format_duration(st.topo.interval_ns)).c_str()
                                        : "off");
    return 0;
}

int do_hosts(const std::string& name, const std::vector<std::string>& a) {
    bool names = false, kv = false;
    std::string cluster;
    for (size_t i = 0; i < a.size(); ++i) {
        std::string v;
        if (a[i] == "--names") {
            names = true;
        } else if (a[i] == "--kv") {
            kv = true;
        } else if (take_value(a, i, "--cluster", v)) {
            cluster = v;
        } else {
            throw error("unknown option '" + a[i] + "' for hosts");
        }
    }
    run_state st = resolve_run(name);
    if (!cluster.empty() && st.topo.cluster_index(cluster) < 0) {
        throw error("run " + st.name + " has no cluster '" + cluster + "'");
    }
    if (!names && !kv && cluster.empty()) {
        std::fputs(format_hosts_table(st).c_str(), stdout);
        return 0;
    }
    for (const auto& h : st.hosts()) {
        const auto& cl = st.topo.clusters[size_t(h.cluster)];
        if (!cluster.empty() && cl.name != cluster) {
            continue;
        }
        if (kv) {
            std::printf(
                "host=%s cluster=%s role=%s netns=%s public=%s private=%s\n", h.name.c_str(),
                cl.name.c_str(), h.role == host_role::frontend ? "frontend" : "compute",
                host_netns(st.name, h.name).c_str(), h.pub_addr.empty() ? "-" : h.pub_addr.c_str(),
                h.priv_addr.empty() ? "-" : h.priv_addr.c_str());
        } else {
            std::printf("%s\n", h.name.c_str());
        }
    }
    return 0;
}

int do_set(const std::string& name, const std::vector<std::string>& a) {
    if (a.size() < 2) {
        throw error("usage: wanemu set LINK|all key=value[,key=value...]");
    }
    run_state st = resolve_run(name);
    std::fputs(control_request(st, "set " + join(a, " "), 10000).c_str(), stdout);
    return 0;
}

int do_stats(const std::string& name, const std::vector<std::string>& a) {
    bool kv = false;
    for (const auto& x : a) {
        if (x == "--kv") {
            kv = true;
        } else {
            throw error("unknown option '" + x + "' for stats");
        }
    }
    run_state st = resolve_run(name);
    std::fputs(control_request(st, kv ? "stats kv" : "stats", 20000).c_str(), stdout);
    return 0;
}

int do_down(const std::string& name, const std::vector<std::string>& a) {
    bool all = false, live = false;
    for (const auto& x : a) {
        if (x == "--all") {
            all = true;
        } else if (x == "--live") {
            live = true;
        } else {
            throw error("unknown option '" + x + "' for down");
        }
    }
    if (::geteuid() != 0) {
        throw error("wanemu down needs root");
    }
    if (!all) {
        if (live) {
            throw error("--live goes with --all");
        }
        std::string n = name;
        if (n.empty() && std::getenv("WANEMU_RUN")) {
            n = std::getenv("WANEMU_RUN");
        }
        if (n.empty()) {
            n = resolve_run("").name;
        }
        auto owner = read_run_owner(n);
        if (!owner && !load_run(n)) {
            // No state: maybe namespaces only (state removed by hand).
            std::string what = cleanup_run(n);
            if (what.empty()) {
                throw error("no run named '" + n + "'");
            }
            std::printf("run %s: %s\n", n.c_str(), what.c_str());
            return 0;
        }
        bool was_live = owner && owner->alive();
        if (owner) {
            stop_controller(*owner, 30000);
        }
        std::string what = cleanup_run(n);
        std::printf("run %s is down%s%s\n", n.c_str(),
                    was_live ? "" : " (its controller was already dead)",
                    what.empty() ? "" : (": " + what).c_str());
        return 0;
    }
    run_lock lock;
    int n = 0;
    std::vector<std::string> live_runs;
    for (const auto& r : list_runs()) {
        auto owner = read_run_owner(r);
        if (owner && owner->alive()) {
            if (!live) {
                live_runs.push_back(r);
                continue;
            }
            stop_controller(*owner, 30000);
        }
        std::string what = cleanup_run(r);
        std::printf("run %s: removed%s\n", r.c_str(),
                    what.empty() ? "" : (" (" + what + ")").c_str());
        ++n;
    }
    // Namespaces of runs whose state directory is gone.
    std::vector<std::string> orphans;
    for (const auto& ns : list_netns()) {
        if (!starts_with(ns, "wn.")) {
            continue;
        }
        std::string r = ns.substr(
            3, ns.find('.', 3) == std::string::npos ? std::string::npos : ns.find('.', 3) - 3);
        if (std::find(live_runs.begin(), live_runs.end(), r) == live_runs.end() &&
            std::find(orphans.begin(), orphans.end(), r) == orphans.end()) {
            orphans.push_back(r);
        }
    }
    for (const auto& r : orphans) {
        std::string what = cleanup_run(r);
        std::printf("run %s: removed leftover namespaces (%s)\n", r.c_str(), what.c_str());
        ++n;
    }
    if (n == 0) {
        std::printf("nothing to clean up");
        if (!live_runs.empty()) {
            std::printf(" (live runs kept: %s; add --live to take them down)",
                        join(live_runs, " ").c_str());
        }
        std::printf("\n");
    }
    return 0;
}

int do_list() {
    auto runs = list_runs();
    if (runs.empty()) {
        std::printf("no runs\n");
        return 0;
    }
    std::printf("%-24s %-5s %-8s %-8s %-8s %-6s %s\n", "RUN", "INDEX", "STATE", "PID", "CLUSTERS",
                "HOSTS", "MONITOR");
    for (const auto& r : runs) {
        try {
            auto st = load_run(r);
            if (!st) {
                continue;
            }
            bool alive = st->controller_alive();
            std::printf("%-24s %-5d %-8s %-8d %-8zu %-6zu %s\n", r.c_str(), st->index,
                        alive ? st->status.c_str() : "stale", st->pid, st->topo.clusters.size(),
                        st->hosts().size(), st->csv.empty() ? "-" : st->csv.c_str());
        } catch (const error& e) {
            std::printf("%-24s (unreadable: %s)\n", r.c_str(), e.what());
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> a(argv + 1, argv + argc);
    std::string name;
    std::string cmd;
    size_t i = 0;
    try {
        for (; i < a.size(); ++i) {
            std::string v;
            if (take_value(a, i, "--name", v)) {
                name = v;
            } else {
                break;
            }
        }
        if (i >= a.size()) {
            std::fputs(k_usage, stderr);
            return 2;
        }
        cmd = a[i];
        std::vector<std::string> rest(a.begin() + long(i) + 1, a.end());
        if (cmd == "help" || is_help(cmd)) {
            if (cmd == "help" && !rest.empty() && !is_help(rest[0])) {
                if (!print_command_usage(rest[0])) {
                    throw error("no command '" + rest[0] + "' (see `wanemu help`)");
                }
                return 0;
            }
            if (cmd == "help" && !rest.empty()) {
                print_command_usage("help");
                return 0;
            }
            std::fputs(k_usage, stdout);
            return 0;
        }
        // `wanemu COMMAND --help`: exec looks only before HOST (the command's own --help is
        // the command's), the others anywhere.
        if (cmd != "exec" && std::any_of(rest.begin(), rest.end(), is_help) &&
            print_command_usage(cmd)) {
            return 0;
        }
        if (cmd == "exec") {
            return cmd_exec(name, rest);
        }
        // Commands other than exec also accept --name after the command word.
        std::vector<std::string> args;
        for (size_t k = 0; k < rest.size(); ++k) {
            std::string v;
            if (cmd != "up" && cmd != "check" && take_value(rest, k, "--name", v)) {
                name = v;
            } else {
                args.push_back(rest[k]);
            }
        }
        if (cmd == "up") {
            if (!name.empty()) {
                args.insert(args.begin(), {"--name", name});
            }
            return do_up(args);
        }
        if (cmd == "check") {
            if (!name.empty()) {
                args.insert(args.begin(), {"--name", name});
            }
            return do_check(args);
        }
        if (cmd == "hosts") {
            return do_hosts(name, args);
        }
        if (cmd == "set") {
            return do_set(name, args);
        }
        if (cmd == "stats") {
            return do_stats(name, args);
        }
        if (cmd == "down") {
            return do_down(name, args);
        }
        if (cmd == "list") {
            return do_list();
        }
        if (cmd == "plot") {
            return cmd_plot(args);
        }
        std::fprintf(stderr, "wanemu: unknown command '%s'\n\n%s", cmd.c_str(), k_usage);
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "wanemu%s: %s\n", cmd == "exec" ? " exec" : "", e.what());
        // Like ssh, exec reports its own failures as 255 so they differ from the command's.
        return cmd == "exec" ? 255 : 1;
    }
}
