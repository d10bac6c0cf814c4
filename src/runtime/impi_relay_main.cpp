// impi-relay: lets a private-address cluster join an IMPI job (docs/impi.md, "Private-address
// clusters"; docs/design/relay.md).
//   impi-relay [-trunks T] [-public ADDR] [-private ADDR] [-port P] [-v] SERVER_ADDR:PORT
//   impi-relay -join RELAY_ADDR:PORT [-public ADDR] [-private ADDR] [-state FILE] [-v]
// Prints ADDR:PORT (its private address) on its first line; exits 0 when the job ended normally.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "base/log.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/impi_relay.hpp"
#include "runtime/launch_options.hpp"
#include "runtime/launcher_util.hpp"
#include "wanlink/lanes.hpp"

using namespace wanmpi;

// Trunk members started by this (primary) relay through the remote-exec agent (-join-hosts).
struct Member {
    std::string host;
    pid_t pid = -1;
    bool done = false;
};
static std::vector<Member> g_members;

// state: the primary's -state FILE; each member started here keeps its own, FILE.HOST (on its
// own front-end, or beside the primary's on a shared file system).
static void start_members(const std::string& launcher, bool verbose, const std::string& addr,
                          const std::string& state) {
    std::vector<std::string> base;
    if (!runtime::split_command(launcher, &base).ok() || base.empty()) base = {"ssh"};
    std::string self = runtime::self_exe_dir() + "/impi-relay";
    for (Member& m : g_members) {
        std::vector<std::string> argv = base;
        argv.push_back(m.host);
        argv.push_back(runtime::shell_quote(self));
        argv.push_back("-join");
        argv.push_back(addr);
        if (!state.empty()) {
            argv.push_back("-state");
            argv.push_back(runtime::shell_quote(state + "." + m.host));
        }
        if (verbose) argv.push_back("-v");
        std::vector<char*> av;
        for (auto& a : argv) av.push_back(a.data());
        av.push_back(nullptr);
        pid_t pid = fork();
        if (pid == 0) {
            // The member's first line (its own address) must not follow ours on stdout, where
            // the user (or wanmpi-sites) reads exactly one line: its stdout goes to our stderr.
            int dn = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (dn >= 0) dup2(dn, 0);
            dup2(2, 1);
            execvp(av[0], av.data());
            std::fprintf(stderr, "impi-relay: cannot run %s: %s\n", av[0], std::strerror(errno));
            _exit(127);
        }
        m.pid = pid;
        if (pid < 0) m.done = true;
        WANMPI_LOG(info, "started trunk relay on %s (pid %d): %s ... %s -join %s", m.host.c_str(),
                   int(pid), base[0].c_str(), self.c_str(), addr.c_str());
    }
}

// A member that ended before the job did is a failure (a member only exits after the primary
// told it the job is over).
static std::string poll_members() {
    for (Member& m : g_members) {
        if (m.done || m.pid <= 0) continue;
        int st = 0;
        pid_t r = waitpid(m.pid, &st, WNOHANG);
        if (r != m.pid) continue;
        m.done = true;
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            return "the trunk relay on " + m.host + " (pid " + std::to_string(m.pid) + ") " +
                   runtime::describe_wait_status(st);
    }
    return "";
}

static void end_members(int64_t grace_ms) {
    int64_t until = runtime::EventLoop::now_ms() + grace_ms;
    for (;;) {
        poll_members();
        bool all = true;
        for (const Member& m : g_members) all = all && m.done;
        if (all) return;
        if (runtime::EventLoop::now_ms() >= until) break;
        usleep(20000);
    }
    for (Member& m : g_members)
        if (!m.done && m.pid > 0) {
            WANMPI_LOG(warn, "trunk relay on %s did not end; terminating it", m.host.c_str());
            kill(m.pid, SIGTERM);
            waitpid(m.pid, nullptr, 0);
            m.done = true;
        }
}

static int usage(const char* msg) {
    if (msg) std::fprintf(stderr, "impi-relay: %s\n", msg);
    std::fprintf(msg ? stderr : stdout,
        "usage: impi-relay [-trunks T] [-public ADDR] [-private ADDR] [-port P] [-state FILE] [-v]\n"
        "                  SERVER_ADDR:PORT\n"
        "       impi-relay -join RELAY_ADDR:PORT [-public ADDR] [-private ADDR] [-state FILE] [-v]\n"
        "  Runs on a front-end of a private-address cluster that has a private and a public\n"
        "  address. Prints ADDR:PORT (its private side) on its first line: give it to the\n"
        "  cluster's `mpirun -client ID ADDR:PORT` in place of impi-server's address.\n"
        "  -trunks T     the cluster uses T relays (this one and T-1 started with -join on other\n"
        "                front-ends); each host pair goes through one of them\n"
        "  -join A:P     a further trunk relay, joining the primary relay that printed A:P\n"
        "  -public ADDR  the address the other clusters reach (default: the one that routes to\n"
        "                the server; for -join: this host's other address)\n"
        "  -private ADDR the address the cluster's hosts reach (default: this host's other address;\n"
        "                for -join: the one that routes to the primary)\n"
        "  -port P       the private port (default: any free port)\n"
        "  -state FILE   keep what a restarted relay needs in FILE (mode 0600, written once the\n"
        "                start-up is over, removed at the end of the job). Started again with\n"
        "                the same FILE (and SERVER_ADDR:PORT, job secret) while the job runs,\n"
        "                the relay takes over on the same addresses and ports and the job goes\n"
        "                on (docs/impi.md). Needs a job secret (WANMPI_JOB_SECRET_FILE). With\n"
        "                trunks every relay has its own: a member started with -join -state\n"
        "                FILE is restarted with the same command; -join-hosts gives the members\n"
        "                FILE.HOST\n"
        "  -join-hosts H1,H2,...  start the other trunk relays (impi-relay -join) on these\n"
        "                front-ends through the remote-exec agent; -trunks defaults to 1 + their\n"
        "                number. The job fails if one of them fails.\n"
        "  -launcher-exec CMD  the remote-exec agent for -join-hosts (default ssh; run as\n"
        "                CMD HOST COMMAND...), as mpirun's --launcher-exec\n"
        "  environment: WANMPI_IMPI_RELAY_SPLICE_MIN, WANMPI_IMPI_RELAY_STARTUP_TIMEOUT,\n"
        "               WANMPI_IMPI_JOIN_TIMEOUT, WANMPI_WAN_RECONNECT_S, WANMPI_WAN_LANES,\n"
        "               WANMPI_LOG_LEVEL\n");
    return msg ? 2 : 0;
}

int main(int argc, char** argv) {
    base::log_set_identity("impi-relay");
    impi::RelayConfig cfg = impi::relay_config_from_env();
    bool verbose = false;
    bool trunks_given = false;
    std::string launcher = "ssh";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&](const char* what) -> const char* {
            if (i + 1 >= argc) return nullptr;
            (void)what;
            return argv[++i];
        };
        const char* v = nullptr;
        if (a == "-h" || a == "--help") return usage(nullptr);
        else if (a == "-v" || a == "--verbose") verbose = true;
        else if (a == "-trunks" || a == "--trunks") {
            if (!(v = val("T"))) return usage("-trunks needs a number");
            char* e = nullptr;
            long t = std::strtol(v, &e, 10);
            if (*e || t < 1 || t > 64) return usage("-trunks takes 1..64");
            cfg.trunks = int(t);
            trunks_given = true;
        } else if (a == "-join" || a == "--join") {
            if (!(v = val("A:P"))) return usage("-join needs ADDR:PORT");
            cfg.join = v;
        } else if (a == "-public" || a == "--public") {
            if (!(v = val("ADDR"))) return usage("-public needs an address");
            cfg.public_addr = v;
        } else if (a == "-private" || a == "--private") {
            if (!(v = val("ADDR"))) return usage("-private needs an address");
            cfg.private_addr = v;
        } else if (a == "-port" || a == "--port") {
            if (!(v = val("P"))) return usage("-port needs a number");
            char* e = nullptr;
            long p = std::strtol(v, &e, 10);
            if (*e || p < 0 || p > 65535) return usage("-port takes 0..65535");
            cfg.port = int(p);
        } else if (a == "-state" || a == "--state") {
            if (!(v = val("FILE")) || !*v) return usage("-state needs a file name");
            cfg.state_file = v;
        } else if (a == "-join-hosts" || a == "--join-hosts") {
            if (!(v = val("H1,H2"))) return usage("-join-hosts needs host names");
            std::string h;
            for (const char* c = v;; ++c) {
                if (*c == ',' || *c == 0) {
                    if (h.empty()) return usage("-join-hosts: an empty host name");
                    g_members.push_back(Member{h});
                    h.clear();
                    if (!*c) break;
                } else {
                    h += *c;
                }
            }
        } else if (a == "-launcher-exec" || a == "--launcher-exec") {
            if (!(v = val("CMD"))) return usage("-launcher-exec needs a command");
            launcher = v;
        } else if (!a.empty() && a[0] != '-' && cfg.server.empty()) {
            cfg.server = a;
        } else {
            return usage(("unknown argument '" + a + "'").c_str());
        }
    }
    if (cfg.join.empty() == cfg.server.empty())
        return usage("give either SERVER_ADDR:PORT (the primary relay) or -join RELAY_ADDR:PORT");
    if (!cfg.join.empty() && (cfg.trunks != 1 || !g_members.empty()))
        return usage("-trunks and -join-hosts are given to the primary relay only");
    if (!g_members.empty()) {
        int t = 1 + int(g_members.size());
        if (trunks_given && cfg.trunks != t)
            return usage("-trunks must be 1 + the number of -join-hosts");
        if (t > 64) return usage("at most 63 -join-hosts");
        cfg.trunks = t;
        cfg.on_listening = [launcher, verbose, state = cfg.state_file](const std::string& addr) {
            start_members(launcher, verbose, addr, state);
        };
        cfg.poll_children = poll_members;
        cfg.end_children = end_members;
    }
    // The most lanes a relayed link may have (docs/design/lanes.md); a malformed value is refused.
    if (base::Status st = wanlink::lanes_setting(&cfg.lanes); !st.ok())
        return usage(st.message().c_str());
    if (verbose && !std::getenv("WANMPI_LOG_LEVEL")) setenv("WANMPI_LOG_LEVEL", "2", 1);
    std::signal(SIGPIPE, SIG_IGN);
    return impi::run_relay(cfg);
}
