// A wanemu run's lifecycle as the command line sees it (controller.hpp): `wanemu up` creates the
// run directory under the global lock and forks the detached controller, waiting for its verdict;
// the control socket's client; the stateless clean-up of a run; the hosts table `up` and `hosts`
// print. The controller itself (what owns a run while it is up) is in controller.cpp.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.hpp"
#include "controller.hpp"
#include "netns.hpp"

namespace wanmpi::wanemu {

namespace {

// Parent side of the daemon start: forwards SIGINT/SIGTERM to the starting controller (which
// then cleans up), and relays its verdict.
pid_t g_child = 0;
void forward_to_child(int sig) {
    if (g_child > 0) {
        ::kill(g_child, sig == SIGINT ? SIGTERM : sig);
    }
}

}  // namespace

std::string format_hosts_table(const run_state& s) {
    auto hosts = s.hosts();
    const auto& t = s.topo;
    size_t wh = 4, wc = 7, wn = 9;
    for (const auto& h : hosts) {
        wh = std::max(wh, h.name.size());
        wc = std::max(wc, t.clusters[size_t(h.cluster)].name.size());
        wn = std::max(wn, host_netns(s.name, h.name).size());
    }
    std::string out = fmt("%-*s  %-*s  %-8s  %-*s  %s\n", int(wh), "HOST", int(wc), "CLUSTER",
                          "ROLE", int(wn), "NAMESPACE", "ADDRESSES");
    for (const auto& h : hosts) {
        const auto& cl = t.clusters[size_t(h.cluster)];
        std::string addrs;
        if (!h.pub_addr.empty()) {
            addrs += h.pub_addr + (cl.is_private ? " (public)" : "");
        }
        if (!h.priv_addr.empty()) {
            addrs += (addrs.empty() ? "" : ", ") + h.priv_addr + " (private)";
        }
        out += fmt("%-*s  %-*s  %-8s  %-*s  %s\n", int(wh), h.name.c_str(), int(wc),
                   cl.name.c_str(), h.role == host_role::frontend ? "frontend" : "compute", int(wn),
                   host_netns(s.name, h.name).c_str(), addrs.c_str());
    }
    for (const auto& l : t.links) {
        const std::string& a = t.clusters[size_t(l.a)].name;
        const std::string& b = t.clusters[size_t(l.b)].name;
        if (l.ab.serialize() == l.ba.serialize()) {
            out += "link " + l.name + ": " + l.ab.describe() + "\n";
        } else {
            out += "link " + l.name + ": " + a + ">" + b + " " + l.ab.describe() + "; " + b + ">" +
                   a + " " + l.ba.describe() + "\n";
        }
    }
    return out;
}

std::string cleanup_run(const std::string& name) {
    std::string out;
    // Never leave a controller running without its namespaces and state (for example when its
    // state file could not be parsed): stop it first, unless it is the caller.
    if (auto o = read_run_owner(name); o && o->pid != ::getpid() && o->alive()) {
        stop_controller(*o, 10000);
        out += fmt("stopped controller %d; ", o->pid);
    }
    std::string prefix = netns_prefix(name);
    std::vector<std::string> ns;
    for (const auto& n : list_netns()) {
        if (starts_with(n, prefix)) {
            ns.push_back(n);
        }
    }
    int killed = kill_netns_processes(ns, 2000);
    if (killed > 0) {
        out += fmt("killed %d process(es) left in run %s; ", killed, name.c_str());
    }
    auto failed = netns_delete(ns);
    if (!ns.empty()) {
        out += fmt("deleted %zu namespace(s)", ns.size() - failed.size());
    }
    if (!failed.empty()) {
        out += "; could not delete " + join(failed, " ");
    }
    std::string dir = run_dir(name);
    run_command({"rm", "-rf", "--", dir});
    return out;
}

std::string control_request(const run_state& s, const std::string& request, int timeout_ms) {
    std::string path = run_dir(s.name) + "/ctl";
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        int e = errno;
        if (fd >= 0) {
            ::close(fd);
        }
        errno = e;
        throw_errno("cannot reach the controller of run " + s.name + " (" + path + ")");
    }
    std::string req = request + "\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) {
        ::close(fd);
        throw_errno("cannot talk to the controller of run " + s.name);
    }
    std::string reply;
    char buf[8192];
    int64_t deadline = now_ns() + int64_t(timeout_ms) * k_ms;
    while (true) {
        int64_t left = (deadline - now_ns()) / k_ms;
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, int(left)) <= 0) {
            ::close(fd);
            throw error("the controller of run " + s.name + " did not answer in time");
        }
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) {
            break;
        }
        reply.append(buf, size_t(n));
    }
    ::close(fd);
    if (starts_with(reply, "ok\n")) {
        return reply.substr(3);
    }
    if (starts_with(reply, "error: ")) {
        throw error(std::string(trim(reply.substr(7))));
    }
    throw error("unexpected reply from the controller of run " + s.name);
}

int cmd_up(const topology& t, const up_options& o) {
    if (::geteuid() != 0) {
        throw error("wanemu up needs root (it creates network namespaces and TUN devices)");
    }
    if (::access("/dev/net/tun", R_OK | W_OK) != 0) {
        throw_errno("/dev/net/tun is not usable");
    }
    run_state st;
    st.topo = t;
    {
        run_lock lock;
        std::string name = o.name;
        if (name.empty()) {
            const char* e = std::getenv("WANEMU_RUN");
            name = (e && *e) ? e : "";
        }
        if (!name.empty() && !valid_run_name(name)) {
            throw error("bad run name '" + name +
                        "': use letters, digits, '-' and '_' (at most 24 characters)");
        }
        std::vector<int> used;
        for (const auto& n : list_runs()) {
            std::optional<run_state> s;
            try {
                s = load_run(n);
            } catch (const error&) {
            }
            auto owner = read_run_owner(n);
            bool alive = owner && owner->alive();
            if (n == name) {
                if (alive) {
                    throw error("run '" + name + "' is already up (controller pid " +
                                std::to_string(owner->pid) + ")");
                }
                logf("removing stale run %s left by a dead controller", name.c_str());
                cleanup_run(name);
                continue;
            }
            if (s) {
                used.push_back(s->index);
            } else if (starts_with(n, "r")) {
                used.push_back(std::atoi(n.c_str() + 1));
            }
        }
        int index = 0;
        while (std::find(used.begin(), used.end(), index) != used.end()) {
            ++index;
        }
        if (index > 99) {
            throw error("too many runs (100); take some down with `wanemu down`");
        }
        if (name.empty()) {
            name = "r" + std::to_string(index);
            while (load_run(name)) {
                name += "x";
            }
        }
        // Leftover namespaces of an earlier run of this name (state dir already gone).
        cleanup_run(name);
        if (::mkdir(run_dir(name).c_str(), 0755) != 0) {
            throw_errno("cannot create " + run_dir(name));
        }
        st.name = name;
        st.index = index;
        st.pid = ::getpid();
        st.start_time = process_start_time(st.pid);
        st.status = "starting";
        st.csv = t.interval_ns > 0 ? (o.csv.empty() ? run_dir(name) + "/monitor.csv" : o.csv) : "";
        if (!st.csv.empty() && st.csv[0] != '/') {
            char cwd[4096];
            if (::getcwd(cwd, sizeof cwd)) {
                st.csv = std::string(cwd) + "/" + st.csv;
            }
        }
        save_run(st);
    }
    std::string log_path = o.log.empty() ? run_dir(st.name) + "/log" : o.log;

    if (o.foreground) {
        return run_controller(st, o, -1);
    }
    int pfd[2];
    if (::pipe2(pfd, O_CLOEXEC) != 0) {
        throw_errno("pipe");
    }
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = ::fork();
    if (pid < 0) {
        cleanup_run(st.name);
        throw_errno("fork");
    }
    if (pid == 0) {
        ::close(pfd[0]);
        ::setsid();
        int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        int logfd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (devnull >= 0) {
            ::dup2(devnull, 0);
        }
        if (logfd >= 0) {
            ::dup2(logfd, 1);
            ::dup2(logfd, 2);
        }
        if (::chdir("/") != 0) {
            // not fatal
        }
        st.pid = ::getpid();
        st.start_time = process_start_time(st.pid);
        int rc = 1;
        try {
            save_run(st);
            rc = run_controller(st, o, pfd[1]);
        } catch (const std::exception& e) {
            logf("fatal: %s", e.what());
            std::string msg = std::string("error\n") + e.what();
            [[maybe_unused]] ssize_t n = ::write(pfd[1], msg.data(), msg.size());
            // The waiting parent cleans up once this process is gone.
        }
        ::_exit(rc);
    }
    ::close(pfd[1]);
    g_child = pid;
    struct sigaction sa {};
    sa.sa_handler = forward_to_child;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGHUP, &sa, nullptr);
    std::string reply;
    char buf[4096];
    while (true) {
        ssize_t n = ::read(pfd[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        reply.append(buf, size_t(n));
    }
    ::close(pfd[0]);
    if (starts_with(reply, "ok\n")) {
        std::fputs(reply.c_str() + 3, stdout);
        if (!o.quiet) {
            std::printf(
                "run %s is up (controller pid %d, log %s); take it down with "
                "`wanemu down --name %s`\n",
                st.name.c_str(), int(pid), log_path.c_str(), st.name.c_str());
        }
        return 0;
    }
    // The controller failed (and cleaned up after itself) or died: wait for it, then remove
    // whatever a crash may have left.
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string log_text = try_read_file(log_path).value_or("");
    cleanup_run(st.name);
    if (starts_with(reply, "error\n")) {
        throw error(reply.substr(6));
    }
    throw error("the controller exited during setup" +
                (log_text.empty() ? std::string() : ":\n" + log_text));
}

}  // namespace wanmpi::wanemu
