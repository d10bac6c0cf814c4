// `wanemu exec HOST [--] CMD...`: run a command on an emulated host, usable wherever an ssh
// command is expected (mpirun's remote-exec agent).
//
// The command runs in a child that joins the host's network namespace and gets its own UTS
// namespace (hostname = host name) and mount namespace (the run's /etc/hosts for its cluster,
// an nsswitch.conf that resolves host names from files only, and a /sys that shows the host's
// interfaces, as `ip netns exec` does). The parent stays in
// the caller's namespaces and behaves like the remote command:
// - stdin/stdout/stderr are the child's own (inherited), environment and cwd pass through;
// - SIGTERM/SIGHUP/SIGINT/SIGQUIT/SIGUSR1/SIGUSR2/SIGALRM sent to the parent are forwarded to
//   the child's process group (without a terminal) or to the child (with one, where the
//   terminal already signals the whole foreground group);
// - the exit status is the child's; a child killed by a signal kills the parent with the same
//   signal (a waiting shell then sees 128+N, exactly as if it had run the command itself);
// - if the parent is SIGKILLed, the child gets SIGKILL too (PR_SET_PDEATHSIG).
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.hpp"
#include "netns.hpp"
#include "state.hpp"

namespace wanmpi::wanemu {

namespace {

const int k_forwarded[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};

[[noreturn]] void child_fail(const char* what, int code) {
    std::fprintf(stderr, "wanemu exec: %s: %s\n", what, std::strerror(errno));
    ::_exit(code);
}

// Runs in the forked child; never returns.
[[noreturn]] void child_main(const std::string& host, const std::string& ns,
                             const std::string& hosts_file, const std::string& run,
                             const std::string& cluster, std::vector<std::string>& argv,
                             bool own_group, bool null_stdin, pid_t parent,
                             const sigset_t& orig_mask) {
    if (own_group) {
        ::setpgid(0, 0);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
        ::_exit(255);  // the parent died before PDEATHSIG was armed
    }
    int fd = ::open(netns_path(ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        child_fail(("cannot open namespace " + ns).c_str(), 255);
    }
    if (::setns(fd, CLONE_NEWNET) != 0) {
        child_fail(("cannot enter namespace " + ns).c_str(), 255);
    }
    ::close(fd);
    if (::unshare(CLONE_NEWUTS | CLONE_NEWNS) != 0) {
        child_fail("unshare", 255);
    }
    if (::sethostname(host.data(), host.size()) != 0) {
        child_fail("sethostname", 255);
    }
    // Keep mount changes private to this process tree (as ip netns exec does).
    if (::mount("", "/", nullptr, MS_SLAVE | MS_REC, nullptr) != 0) {
        child_fail("mount --make-rslave /", 255);
    }
    struct stat st;
    if (::stat(hosts_file.c_str(), &st) == 0 && ::stat("/etc/hosts", &st) == 0) {
        if (::mount(hosts_file.c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
            child_fail("bind-mount /etc/hosts", 255);
        }
    }
    std::string nss = run_dir(run) + "/nsswitch.conf";
    if (::stat(nss.c_str(), &st) == 0 && ::stat("/etc/nsswitch.conf", &st) == 0) {
        if (::mount(nss.c_str(), "/etc/nsswitch.conf", nullptr, MS_BIND, nullptr) != 0) {
            child_fail("bind-mount /etc/nsswitch.conf", 255);
        }
    }
    if (::umount2("/sys", MNT_DETACH) == 0) {
        ::mount(ns.c_str(), "/sys", "sysfs", 0, nullptr);  // best effort
    }
    ::setenv("WANEMU_RUN", run.c_str(), 1);
    ::setenv("WANEMU_HOST", host.c_str(), 1);
    ::setenv("WANEMU_CLUSTER", cluster.c_str(), 1);
    if (null_stdin) {
        int dn = ::open("/dev/null", O_RDONLY);
        if (dn >= 0) {
            ::dup2(dn, 0);
            ::close(dn);
        }
    }
    // Signal dispositions stay as the caller left them (e.g. SIGINT ignored for a background
    // job); only the mask the parent uses for sigwaitinfo() is undone.
    ::sigprocmask(SIG_SETMASK, &orig_mask, nullptr);
    std::vector<char*> args;
    for (auto& a : argv) {
        args.push_back(a.data());
    }
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    int e = errno;
    std::fprintf(stderr, "wanemu exec: %s: %s\n", argv[0].c_str(), std::strerror(e));
    ::_exit(e == ENOENT ? 127 : 126);
}

}  // namespace

bool print_command_usage(const std::string& cmd);  // main.cpp

// args: everything after "exec". Returns the exit code (or does not return: re-raised signal).
int cmd_exec(const std::string& name_opt, std::vector<std::string> args) {
    bool null_stdin = false;
    size_t i = 0;
    std::string name = name_opt;
    // Options before HOST: ours, plus ssh options that launchers add (ignored).
    for (; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--name" && i + 1 < args.size()) {
            name = args[++i];
        } else if (starts_with(a, "--name=")) {
            name = a.substr(7);
        } else if (a == "-n") {
            null_stdin = true;
        } else if (a == "--help" || a == "-h") {  // before HOST: ours (ssh has no -h)
            print_command_usage("exec");
            return 0;
        } else if (a == "-o" || a == "-l" || a == "-p" || a == "-i" || a == "-F" || a == "-E" ||
                   a == "-J") {
            ++i;
        } else if (a.size() >= 2 && a[0] == '-' && a != "--" &&
                   a.find_first_not_of("xXTtqvAaCfNkKsY46-") == std::string::npos) {
            // ssh flags such as -x -T -q: meaningless here
        } else {
            break;
        }
    }
    if (i >= args.size()) {
        throw error("usage: wanemu exec [--name RUN] [-n] HOST [--] [COMMAND [ARG...]]");
    }
    std::string host = args[i++];
    if (size_t at = host.find('@'); at != std::string::npos) {
        host = host.substr(at + 1);  // user@host from ssh-style launchers
    }
    run_state st = resolve_run(name);
    auto hosts = st.hosts();
    const host_info* h = nullptr;
    for (const auto& x : hosts) {
        if (x.name == host || x.pub_addr == host || x.priv_addr == host) {
            h = &x;
            break;
        }
    }
    if (!h) {
        std::vector<std::string> names;
        for (const auto& x : hosts) {
            names.push_back(x.name);
        }
        throw error("run " + st.name + " has no host '" + host + "' (hosts: " + join(names, " ") +
                    ")");
    }
    std::vector<std::string> argv;
    if (i < args.size() && args[i] == "--") {
        argv.assign(args.begin() + long(i) + 1, args.end());
        if (argv.empty()) {
            throw error("no command after --");
        }
    } else if (i < args.size()) {
        // ssh semantics: the words are joined with spaces and run by the shell.
        std::vector<std::string> words(args.begin() + long(i), args.end());
        argv = {"/bin/sh", "-c", join(words, " ")};
    } else {
        const char* sh = std::getenv("SHELL");
        argv = {sh && *sh ? sh : "/bin/sh"};
    }
    if (::geteuid() != 0) {
        throw error("wanemu exec needs root (it enters a network namespace)");
    }
    std::string ns = host_netns(st.name, h->name);
    if (!netns_exists(ns)) {
        throw error("namespace " + ns + " of host " + h->name + " does not exist (run " + st.name +
                    " is " + (st.controller_alive() ? "shutting down" : "stale") + ")");
    }
    const std::string& cluster = st.topo.clusters[size_t(h->cluster)].name;
    std::string hosts_file = run_dir(st.name) + "/hosts." + cluster;

    // A caller that ignores SIGCHLD would make the kernel reap the child behind our back.
    ::signal(SIGCHLD, SIG_DFL);
    bool tty = ::isatty(0) && ::tcgetpgrp(0) == ::getpgrp();
    sigset_t block, orig;
    sigemptyset(&block);
    for (int s : k_forwarded) {
        sigaddset(&block, s);
    }
    sigaddset(&block, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &block, &orig);
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t parent = ::getpid();
    pid_t child = ::fork();
    if (child < 0) {
        throw_errno("fork");
    }
    if (child == 0) {
        child_main(h->name, ns, hosts_file, st.name, cluster, argv, !tty, null_stdin, parent, orig);
    }
    if (!tty) {
        ::setpgid(child, child);  // also set by the child; whichever runs first wins the race
    }
    while (true) {
        siginfo_t si;
        int s = ::sigwaitinfo(&block, &si);
        if (s < 0) {
            continue;
        }
        if (s == SIGCHLD) {
            int status;
            pid_t r = ::waitpid(child, &status, WNOHANG);
            if (r != child) {
                continue;
            }
            if (WIFEXITED(status)) {
                return WEXITSTATUS(status);
            }
            if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                std::fflush(stdout);
                rlimit rl{0, 0};
                ::setrlimit(RLIMIT_CORE, &rl);  // the child already dumped if it was to
                ::signal(sig, SIG_DFL);
                sigset_t one;
                sigemptyset(&one);
                sigaddset(&one, sig);
                ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
                ::raise(sig);
                return 128 + sig;  // signals that do not terminate (none expected)
            }
            continue;
        }
        if (tty && (s == SIGINT || s == SIGQUIT)) {
            continue;  // the terminal delivered it to the child as well
        }
        ::kill(tty ? child : -child, s);
    }
}

}  // namespace wanmpi::wanemu
