// mpirun / mpiexec: starts the ranks of a job (locally by fork/exec, on other hosts through a
// remote-exec agent and one wanmpi-proxy per host), serves them the PMI-1 key-value space,
// forwards stdio and signals, and takes the whole job down when a rank fails.
//
// Structure: one thread, one epoll loop (event_loop.hpp); signals arrive through a signalfd.
// Local ranks: local_ranks.hpp. Remote ranks: a ProxyConn per host speaking proxy_wire.hpp over
// the agent's stdin/stdout. Both feed the same PmiServer and OutputMux, so a rank behaves the same
// wherever it runs.
//
// Teardown invariant: once kill_job() has run, every rank gets SIGTERM (or the signal mpirun
// received) at once and SIGKILL after WANMPI_MPIRUN_KILL_GRACE_MS; a proxy that does not finish
// within a further 2 s has its agent killed. mpirun exits only after every local child has been
// reaped, so nothing it started is left behind.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "base/log.hpp"
#include "base/socket.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/launch_options.hpp"
#include "runtime/launcher_tunables.hpp"
#include "runtime/launcher_util.hpp"
#include "runtime/local_ranks.hpp"
#include "runtime/output_mux.hpp"
#include "runtime/pmi_server.hpp"
#include "runtime/proxy_wire.hpp"

#ifndef WANMPI_VERSION
#define WANMPI_VERSION "unknown"
#endif

using namespace wanmpi;
using namespace wanmpi::runtime;

namespace {

std::string g_prog = "mpirun";

void say(const std::string& msg) {
    std::string line = g_prog + ": " + msg + "\n";
    base::write_full(2, line.data(), line.size());
}

void print_help() {
    std::string h = "Usage: " + g_prog + R"( [options] program [args...]

Start an MPI job of wanmpi (or any PMI-1 program, e.g. one built with MPICH).

Options (MPICH and Open MPI spellings; single or double dash):
  -n, -np N                 number of processes (default: the slots given by --host/--hostfile,
                            or the number of CPUs of this host)
  --host h1[:slots],h2...   hosts to use (also -host, -hosts, -H); a host without :slots has 1
  --hostfile F              hosts from a file (also -machinefile, -f): lines "host",
                            "host:N" or "host slots=N"; '#' starts a comment
                            Ranks fill host 1's slots, then host 2's...; with more ranks than
                            slots, every host gets extra ranks in turn (oversubscription is fine).
  --launcher-exec CMD       remote-exec agent for hosts other than this one, run as
                            "CMD HOST wanmpi-proxy" (default: ssh; CMD may hold arguments,
                            e.g. "wanemu exec"). wanmpi-proxy must be at the same path there.
  -x VAR, -x VAR=value      pass VAR (mpirun's value, or the value given) to the ranks
  -genv VAR value           same as -x VAR=value
                            (WANMPI_* and IMPI_* variables are always passed on.)
  --wdir DIR                working directory of the ranks (default: mpirun's)
  -client ID ADDR:PORT      run these ranks as IMPI client ID (0..31) of one job across
                            clusters; ADDR:PORT is what impi-server printed (docs/impi.md).
                            The ranks get WANMPI_IMPI_CLIENT and WANMPI_IMPI_SERVER.
  --timeout SECONDS         kill the job if it runs longer (exit code 124); default from
                            MPIEXEC_TIMEOUT or WANMPI_MPIRUN_TIMEOUT
  --tag-output              prefix every output line with "[rank] " (also -l, -prepend-rank)
  --disable-auto-cleanup    when a rank fails, let the others run on (MPI_Abort still ends
                            the job)
  -h, --help                this help
  --version                 print the version

stdin goes to rank 0; stdout and stderr of every rank come out line by line.
Exit status: 0 if every rank exits 0; otherwise that of the first failure: the rank's exit code,
128+signal if it was killed, the MPI_Abort error code, 124 on --timeout, 128+signal if mpirun
itself was interrupted, 2 for usage errors, 127 if the program cannot be executed.
)";
    base::write_full(1, h.data(), h.size());
}

struct RankRec {
    int host = 0;  // index into placements
    pid_t pid = -1;
    enum State { not_started, running, exited } state = not_started;
    std::string aborted;  // "called MPI_Abort with error code N" once it did
};

struct ProxyConn {
    int host = 0;
    pid_t agent = -1;
    bool agent_reaped = false;
    int agent_status = 0;
    int to = -1;    // proxy's stdin
    int from = -1;  // proxy's stdout
    enum Phase { magic, running, closed } phase = magic;
    std::string junk;
    FrameDecoder dec;
    std::string out;
};

class Mpirun {
public:
    explicit Mpirun(LaunchOptions o) : opt_(std::move(o)), out_(opt_.tag_output) {}
    int run();

private:
    // set-up
    bool start_local(const Placement& pl);
    bool start_proxy(int host_index);
    // events
    void on_signal();
    void reap();
    void on_pmi_line(int rank, const std::string& line);
    void on_rank_exit(int rank, int wstatus);
    void on_proxy_readable(ProxyConn& p);
    void on_proxy_frame(ProxyConn& p, Frame& f);
    void proxy_closed(ProxyConn& p, const std::string& why);
    std::string agent_failure_text(ProxyConn& p);
    void proxy_send(ProxyConn& p, FrameType t, uint32_t rank, std::string_view payload);
    void proxy_flush(ProxyConn& p);
    void stdin_pump();
    void stdin_stop();
    size_t stdin_backlog() const;
    void on_stdin_readable();
    // failure and teardown
    void fail(const std::string& msg, int code);
    void kill_job(int first_sig, bool announce = true);
    void kill_hard();
    bool finished() const;
    std::string who(int rank) const;
    std::string barrier_text(int culprit, const std::string& how, int waiting) const;
    void pmi_send(int rank, const std::string& line);

    LaunchOptions opt_;
    EventLoop loop_;
    OutputMux out_;
    std::unique_ptr<PmiServer> pmi_;
    std::unique_ptr<LocalRanks> local_;
    std::vector<Placement> places_;
    std::vector<RankRec> ranks_;
    std::vector<std::unique_ptr<ProxyConn>> proxies_;  // by host index (null for local hosts)
    std::string local_host_;
    std::vector<std::string> proxy_env_;
    std::string cwd_;
    int np_ = 0;
    int sigfd_ = -1;

    bool failed_ = false;
    int exit_code_ = 0;
    bool killing_ = false;
    int signals_seen_ = 0;
    int64_t grace_ms_ = 1000;

    // stdin forwarding to rank 0
    enum class StdinMode { off, poll, pump } stdin_mode_ = StdinMode::off;
    bool stdin_paused_ = false;
    bool stdin_done_ = false;
};

std::string Mpirun::barrier_text(int culprit, const std::string& how, int waiting) const {
    return who(culprit) + " " + how + " without joining the PMI barrier that " +
           std::to_string(waiting) + (waiting == 1 ? " other rank waits" : " other ranks wait") +
           " in (does it not call MPI_Init/MPI_Finalize like the others?)";
}

std::string Mpirun::who(int rank) const {
    const RankRec& r = ranks_[rank];
    const Placement& pl = places_[r.host];
    std::string host = pl.local ? local_host_ : pl.host;
    // In an IMPI job our ranks are the cluster's; their MPI_COMM_WORLD ranks depend on the other
    // clusters, so name the cluster too.
    std::string name = "rank " + std::to_string(rank);
    if (opt_.impi_client >= 0) name += " of IMPI client " + std::to_string(opt_.impi_client);
    if (r.pid > 0)
        return name + " (pid " + std::to_string(r.pid) + " on host " + host + ")";
    return name + " (on host " + host + ")";
}

void Mpirun::fail(const std::string& msg, int code) {
    if (!failed_) {
        failed_ = true;
        exit_code_ = code;
        say(msg);
    } else if (!opt_.auto_cleanup || base::log_enabled(base::LogLevel::info)) {
        say(msg);  // later failures are news too when the job is not being taken down
    }
}

void Mpirun::pmi_send(int rank, const std::string& line) {
    WANMPI_LOG(trace, "PMI rank %d <- %s", rank, printable_excerpt(line, 200).c_str());
    const RankRec& r = ranks_[rank];
    if (places_[r.host].local) {
        local_->send_pmi(rank, line);
    } else if (auto& p = proxies_[r.host]; p && p->phase == ProxyConn::running) {
        proxy_send(*p, FrameType::pmi, static_cast<uint32_t>(rank), line);
    }
}

void Mpirun::kill_job(int first_sig, bool announce) {
    if (killing_) return;
    killing_ = true;
    int running = 0;
    for (const auto& r : ranks_)
        if (r.state == RankRec::running) ++running;
    if (running > 0 && announce)
        say("terminating the job (" + std::to_string(running) + " rank" +
            (running == 1 ? "" : "s") + " still running)");
    local_->signal_alive(first_sig);
    for (auto& p : proxies_) {
        if (!p || p->phase != ProxyConn::running) continue;
        if (first_sig != SIGTERM)
            proxy_send(*p, FrameType::signal, kNoRank,
                       be32_payload(static_cast<uint32_t>(first_sig)));
        proxy_send(*p, FrameType::kill, kNoRank, be32_payload(static_cast<uint32_t>(grace_ms_)));
    }
    // Proxies that have not said hello yet cannot be asked: their agent goes.
    for (auto& p : proxies_)
        if (p && p->phase == ProxyConn::magic && !p->agent_reaped) ::kill(-p->agent, SIGTERM);
    loop_.after(grace_ms_, [this] { kill_hard(); });
    loop_.after(grace_ms_ + 2000, [this] {
        for (auto& p : proxies_) {
            if (!p || p->agent_reaped) continue;
            if (p->phase != ProxyConn::closed)
                say("the proxy on host " + places_[p->host].host +
                    " did not finish; killing its launcher agent");
            ::kill(-p->agent, SIGKILL);
            ::kill(p->agent, SIGKILL);
            if (p->phase != ProxyConn::closed) proxy_closed(*p, "");
        }
    });
}

void Mpirun::kill_hard() {
    local_->signal_all_groups(SIGKILL);
    for (auto& p : proxies_) {
        if (!p) continue;
        if (p->phase == ProxyConn::running)
            proxy_send(*p, FrameType::kill, kNoRank, be32_payload(0));
        else if (p->phase == ProxyConn::magic && !p->agent_reaped)
            ::kill(-p->agent, SIGKILL);
    }
}

bool Mpirun::finished() const {
    for (const auto& r : ranks_)
        if (r.state != RankRec::exited) return false;
    for (const auto& p : proxies_)
        if (p && (p->phase != ProxyConn::closed || !p->agent_reaped)) return false;
    return local_->alive() == 0;
}

void Mpirun::on_rank_exit(int rank, int wstatus) {
    RankRec& r = ranks_[rank];
    if (r.state == RankRec::exited) return;
    r.state = RankRec::exited;
    out_.flush_rank(rank);
    // A rank that called MPI_Abort is usually killed by the teardown it asked for (SIGTERM
    // before its own _exit): ranks still in a PMI barrier, which may outlive SIGTERM (a handler
    // of their own), are told it aborted, not that it was killed by signal 15.
    std::string how = r.aborted.empty() ? describe_wait_status(wstatus) : r.aborted;
    bool ok = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
    bool unfinalized = pmi_->initialized(rank) && !pmi_->finalized(rank);
    int waiting = pmi_->on_rank_gone(rank, how);
    if (rank == 0) stdin_stop();
    if (killing_) return;  // deaths we caused are not news
    if (!ok) {
        fail(who(rank) + " " + how, exit_code_of(wstatus));
        if (opt_.auto_cleanup) kill_job(SIGTERM);
        return;
    }
    if (unfinalized) {
        fail(who(rank) + " exited with code 0 without calling MPI_Finalize (it initialized PMI "
                         "but never finalized it)",
             1);
        if (opt_.auto_cleanup) kill_job(SIGTERM);
        return;
    }
    if (waiting > 0) {
        fail(barrier_text(rank, how, waiting), 1);
        if (opt_.auto_cleanup) kill_job(SIGTERM);
    }
}

void Mpirun::on_pmi_line(int rank, const std::string& line) {
    if (ranks_[rank].state == RankRec::exited && killing_) return;
    WANMPI_LOG(trace, "PMI rank %d -> %s", rank, printable_excerpt(line, 200).c_str());
    PmiServer::Event ev = pmi_->on_line(rank, line);
    switch (ev.kind) {
    case PmiServer::Event::none: break;
    case PmiServer::Event::abort: {
        int code = ev.code & 0xff;
        if (code == 0) code = 1;
        ranks_[rank].aborted = "called MPI_Abort with error code " + std::to_string(ev.code);
        std::string msg = who(rank) + " " + ranks_[rank].aborted;
        if (!ev.message.empty()) msg += ": " + ev.message;
        if (!killing_) fail(msg, code);
        kill_job(SIGTERM);
        break;
    }
    case PmiServer::Event::protocol_error:
        if (!killing_) fail(who(rank) + " " + ev.message, 1);
        kill_job(SIGTERM);
        break;
    case PmiServer::Event::barrier_failed:
        if (!killing_ && opt_.auto_cleanup) {
            fail(barrier_text(ev.culprit, ev.message, ev.code), 1);
            kill_job(SIGTERM);
        }
        break;
    }
}

void Mpirun::reap() {
    for (;;) {
        int st = 0;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0) break;
        if (local_->on_child_exit(pid, st)) continue;
        for (auto& p : proxies_) {
            if (!p || p->agent != pid) continue;
            p->agent_reaped = true;
            p->agent_status = st;
            if (p->phase == ProxyConn::magic) {
                // Died before the proxy spoke: ssh could not connect, wanmpi-proxy not found...
                // Read what it printed on stdout (this reports the failure at EOF).
                on_proxy_readable(*p);
                if (p->phase == ProxyConn::magic) proxy_closed(*p, agent_failure_text(*p));
            }
        }
    }
}

void Mpirun::on_signal() {
    signalfd_siginfo si;
    while (::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) {
            reap();
            continue;
        }
        if (sig == SIGUSR1 || sig == SIGUSR2) {
            local_->signal_alive(sig);
            for (auto& p : proxies_)
                if (p && p->phase == ProxyConn::running)
                    proxy_send(*p, FrameType::signal, kNoRank,
                               be32_payload(static_cast<uint32_t>(sig)));
            continue;
        }
        ++signals_seen_;
        if (signals_seen_ == 1) {
            say("received signal " + signal_text(sig) +
                "; forwarding it to the ranks and terminating the job");
            if (!failed_) {
                failed_ = true;
                exit_code_ = 128 + sig;
            }
            kill_job(sig, false);
        } else {
            kill_hard();
        }
    }
}

bool Mpirun::start_local(const Placement& pl) {
    std::vector<std::string> env = merge_env(current_environment(), opt_.env_set);
    for (int i = 0; i < pl.count; ++i) {
        int rank = pl.first_rank + i;
        RankSpawn s;
        s.rank = rank;
        s.size = np_;
        s.local_rank = i;
        s.local_size = pl.count;
        s.argv = opt_.program;
        s.env = env;
        s.cwd = opt_.wdir;
        s.stdin_pipe = rank == 0;
        pid_t pid = -1;
        base::Status st = local_->spawn(s, &pid);
        if (!st.ok()) {
            fail(st.message(), st.sys_errno() == ENOENT ? 127 : 126);
            return false;
        }
        ranks_[rank].pid = pid;
        ranks_[rank].state = RankRec::running;
    }
    return true;
}

bool Mpirun::start_proxy(int h) {
    const Placement& pl = places_[h];
    std::vector<std::string> argv;
    base::Status s = split_command(opt_.launcher, &argv);
    if (!s.ok() || argv.empty()) {
        fail("bad --launcher-exec command '" + opt_.launcher + "'", 2);
        return false;
    }
    std::string proxy = t_proxy_path.get();
    if (proxy.empty()) proxy = self_exe_dir() + "/wanmpi-proxy";
    argv.push_back(pl.host);
    argv.push_back(shell_quote(proxy));

    int to[2], from[2], ep[2];
    if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0 || pipe2(ep, O_CLOEXEC) != 0) {
        fail("pipe: " + base::errno_text(errno), 1);
        return false;
    }
    std::vector<char*> av;
    for (auto& a : argv) av.push_back(a.data());
    av.push_back(nullptr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fail("fork: " + base::errno_text(errno), 1);
        return false;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig : {SIGPIPE, SIGTTIN, SIGTTOU}) signal(sig, SIG_DFL);
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(126);
        dup2(to[0], 0);
        dup2(from[1], 1);
        execvp(av[0], av.data());
        int e = errno;
        (void)!write(ep[1], &e, sizeof e);
        _exit(127);
    }
    setpgid(pid, pid);
    ::close(to[0]);
    ::close(from[1]);
    ::close(ep[1]);
    int e = 0;
    ssize_t n = base::read_full(ep[0], &e, sizeof e);
    ::close(ep[0]);
    if (n > 0) {
        int st;
        waitpid(pid, &st, 0);
        ::close(to[1]);
        ::close(from[0]);
        fail("cannot execute the launcher agent '" + argv[0] + "' for host " + pl.host + ": " +
                 base::errno_text(e),
             e == ENOENT ? 127 : 126);
        return false;
    }
    auto p = std::make_unique<ProxyConn>();
    p->host = h;
    p->agent = pid;
    p->to = to[1];
    p->from = from[0];
    base::set_nonblock(p->to, true);
    base::set_nonblock(p->from, true);
    ProxyConn* raw = p.get();
    loop_.add(p->from, EPOLLIN, [this, raw](uint32_t) { on_proxy_readable(*raw); });
    proxies_[h] = std::move(p);
    return true;
}

void Mpirun::proxy_send(ProxyConn& p, FrameType t, uint32_t rank, std::string_view payload) {
    if (p.phase == ProxyConn::closed || p.to < 0) return;
    append_frame(&p.out, t, rank, payload);
    proxy_flush(p);
}

void Mpirun::proxy_flush(ProxyConn& p) {
    while (!p.out.empty() && p.to >= 0) {
        ssize_t n = ::write(p.to, p.out.data(), p.out.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n < 0) {  // EPIPE: the proxy is gone; its EOF on the other pipe reports it
            p.out.clear();
            break;
        }
        p.out.erase(0, static_cast<size_t>(n));
    }
    if (p.to < 0) return;
    if (p.out.empty()) {
        loop_.remove(p.to);
    } else if (!loop_.watched(p.to)) {
        ProxyConn* raw = &p;
        loop_.add(p.to, EPOLLOUT, [this, raw](uint32_t) { proxy_flush(*raw); });
    }
}

// The agent closed its stdout before the proxy said hello. It is most likely exiting right now:
// give it a moment so the report can say how (a 127 from the remote shell means "not found").
std::string Mpirun::agent_failure_text(ProxyConn& p) {
    for (int i = 0; i < 100 && !p.agent_reaped; ++i) {
        int st = 0;
        if (waitpid(p.agent, &st, WNOHANG) == p.agent) {
            p.agent_reaped = true;
            p.agent_status = st;
            break;
        }
        usleep(10000);
    }
    const Placement& pl = places_[p.host];
    std::string r = "the launcher agent for host " + pl.host + " ('" + opt_.launcher + " " +
                    pl.host + " ...') ";
    if (!p.agent_reaped) return r + "closed its output before wanmpi-proxy started";
    r += describe_wait_status(p.agent_status) + " before wanmpi-proxy started";
    if (WIFEXITED(p.agent_status) && WEXITSTATUS(p.agent_status) == 127)
        r += " (is wanmpi-proxy installed at the same path there? set WANMPI_MPIRUN_PROXY "
             "otherwise)";
    return r;
}

void Mpirun::proxy_closed(ProxyConn& p, const std::string& why) {
    if (p.phase == ProxyConn::closed) return;
    p.phase = ProxyConn::closed;
    if (p.from >= 0) {
        loop_.remove(p.from);
        ::close(p.from);
        p.from = -1;
    }
    if (p.to >= 0) {
        loop_.remove(p.to);
        ::close(p.to);
        p.to = -1;
    }
    const Placement& pl = places_[p.host];
    std::vector<int> lost;
    for (int r = pl.first_rank; r < pl.first_rank + pl.count; ++r)
        if (ranks_[r].state != RankRec::exited) lost.push_back(r);
    if (!lost.empty() && !killing_) {
        fail(why.empty() ? "lost the connection to wanmpi-proxy on host " + pl.host + " with " +
                               std::to_string(lost.size()) + " rank(s) still running"
                         : why,
             1);
    }
    for (int r : lost) {
        ranks_[r].state = RankRec::exited;
        out_.flush_rank(r);
        pmi_->on_rank_gone(r, "was lost with its host's proxy");
    }
    if (!lost.empty()) kill_job(SIGTERM);
    // The agent should exit now that its proxy did; if it lingers, it is killed.
    if (!p.agent_reaped) {
        ProxyConn* raw = &p;
        loop_.after(2000, [raw] {
            if (!raw->agent_reaped) {
                ::kill(-raw->agent, SIGKILL);
                ::kill(raw->agent, SIGKILL);
            }
        });
    }
}

void Mpirun::on_proxy_readable(ProxyConn& p) {
    char buf[65536];
    for (int rounds = 0; rounds < 16 && p.from >= 0; ++rounds) {
        ssize_t n = ::read(p.from, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            if (p.phase == ProxyConn::magic) {
                if (!p.junk.empty()) base::write_full(2, p.junk.data(), p.junk.size());
                proxy_closed(p, agent_failure_text(p));
            } else {
                proxy_closed(p, "");
            }
            return;
        }
        const char* data = buf;
        size_t len = static_cast<size_t>(n);
        if (p.phase == ProxyConn::magic) {
            // Whatever a login script or the agent prints before the proxy's magic line is
            // passed to our stderr, not parsed.
            p.junk.append(data, len);
            size_t m = p.junk.find(kProxyMagic);
            if (m == std::string::npos) {
                // Pass on complete lines; keep a tail that may be the start of the magic (which
                // itself starts with a newline).
                size_t cut = p.junk.rfind('\n');
                while (cut != std::string::npos) {
                    std::string_view tail = std::string_view(p.junk).substr(cut);
                    if (tail.size() >= kProxyMagic.size() ||
                        kProxyMagic.substr(0, tail.size()) != tail)
                        break;
                    cut = cut == 0 ? std::string::npos : p.junk.rfind('\n', cut - 1);
                }
                if (cut != std::string::npos) {
                    base::write_full(2, p.junk.data(), cut + 1);
                    p.junk.erase(0, cut + 1);
                } else if (p.junk.size() > 65536) {
                    base::write_full(2, p.junk.data(), p.junk.size());
                    p.junk.clear();
                }
                continue;
            }
            if (m > 0) base::write_full(2, p.junk.data(), m);
            std::string rest = p.junk.substr(m + kProxyMagic.size());
            p.junk.clear();
            p.phase = ProxyConn::running;
            base::Status s = p.dec.feed(rest.data(), rest.size());
            if (!s.ok()) {
                proxy_closed(p, "garbage from wanmpi-proxy on host " + places_[p.host].host +
                                    ": " + s.message());
                return;
            }
        } else {
            base::Status s = p.dec.feed(data, len);
            if (!s.ok()) {
                proxy_closed(p, "garbage from wanmpi-proxy on host " + places_[p.host].host +
                                    ": " + s.message());
                return;
            }
        }
        Frame f;
        while (p.phase == ProxyConn::running && p.dec.next(&f)) on_proxy_frame(p, f);
    }
}

void Mpirun::on_proxy_frame(ProxyConn& p, Frame& f) {
    const Placement& pl = places_[p.host];
    auto bad = [&](const std::string& what) {
        proxy_closed(p, "protocol error from wanmpi-proxy on host " + pl.host + ": " + what);
    };
    int rank = static_cast<int>(f.rank);
    bool rank_ok = f.rank != kNoRank && rank >= pl.first_rank && rank < pl.first_rank + pl.count;
    switch (f.type) {
    case FrameType::hello: {
        std::vector<std::string> v;
        if (!get_strings(f.payload, &v) || v.size() < 2) return bad("bad hello");
        if (killing_) {  // too late: the job is already being taken down
            proxy_send(p, FrameType::kill, kNoRank, be32_payload(0));
            return;
        }
        ProxyJob j;
        j.first_rank = static_cast<uint32_t>(pl.first_rank);
        j.count = static_cast<uint32_t>(pl.count);
        j.size = static_cast<uint32_t>(np_);
        j.host_index = static_cast<uint32_t>(p.host);
        j.cwd = cwd_;
        j.argv = opt_.program;
        j.env = proxy_env_;
        proxy_send(p, FrameType::job, kNoRank, encode_job(j));
        if (pl.first_rank == 0) stdin_pump();  // rank 0 lives here: forward stdin now
        return;
    }
    case FrameType::started: {
        auto pid = be32_from(f.payload);
        if (!rank_ok || !pid) return bad("bad started frame");
        ranks_[rank].pid = static_cast<pid_t>(*pid);
        if (ranks_[rank].state == RankRec::not_started) ranks_[rank].state = RankRec::running;
        return;
    }
    case FrameType::failed: {
        if (!rank_ok) return bad("bad failed frame");
        if (!killing_) fail("host " + pl.host + ": " + f.payload, 127);
        for (int r = pl.first_rank; r < pl.first_rank + pl.count; ++r) {
            if (ranks_[r].state == RankRec::not_started) {
                ranks_[r].state = RankRec::exited;
                pmi_->on_rank_gone(r, "could not be started");
            }
        }
        kill_job(SIGTERM);
        return;
    }
    case FrameType::pmi:
        if (!rank_ok) return bad("PMI line for a foreign rank");
        on_pmi_line(rank, f.payload);
        return;
    case FrameType::out:
    case FrameType::err:
        if (!rank_ok) return bad("output of a foreign rank");
        out_.data(rank, f.type == FrameType::out ? 1 : 2, f.payload.data(), f.payload.size(),
                  EventLoop::now_ms());
        return;
    case FrameType::exit: {
        auto st = be32_from(f.payload);
        if (!rank_ok || !st) return bad("bad exit frame");
        on_rank_exit(rank, static_cast<int>(*st));
        return;
    }
    default:
        return bad("unexpected frame type " + std::to_string(static_cast<int>(f.type)));
    }
}

// stdin -> rank 0. Pipes and terminals are watched by epoll; regular files and /dev/null cannot
// be, so they are read ("pumped") whenever rank 0's queue is short. At most ~1 MiB is queued for
// a rank 0 that does not read.
size_t Mpirun::stdin_backlog() const {
    if (places_[0].local) return local_->stdin_pending(0);
    const auto& p = proxies_[0];
    return p ? p->out.size() : 0;
}

void Mpirun::stdin_pump() {
    if (stdin_done_) return;
    if (killing_) {
        stdin_stop();
        return;
    }
    if (stdin_mode_ == StdinMode::off) {
        if (loop_.add(0, EPOLLIN, [this](uint32_t) { on_stdin_readable(); }))
            stdin_mode_ = StdinMode::poll;
        else
            stdin_mode_ = StdinMode::pump;
    }
    bool full = stdin_backlog() >= (1u << 20);
    if (stdin_mode_ == StdinMode::pump) {
        if (!full) on_stdin_readable();
    } else if (full != stdin_paused_) {
        loop_.modify(0, full ? 0u : static_cast<uint32_t>(EPOLLIN));
        stdin_paused_ = full;
    }
}

void Mpirun::stdin_stop() {
    if (stdin_mode_ == StdinMode::poll) loop_.remove(0);
    stdin_mode_ = StdinMode::off;
    stdin_done_ = true;
}

void Mpirun::on_stdin_readable() {
    char buf[65536];
    ssize_t n;
    do n = ::read(0, buf, sizeof buf);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN) return;
    bool local0 = places_[0].local;
    if (n <= 0) {  // EOF, or EIO when we are a background job of a terminal
        stdin_stop();
        if (local0) {
            local_->stdin_close(0);
        } else if (auto& p = proxies_[0]; p && p->phase == ProxyConn::running) {
            proxy_send(*p, FrameType::in_eof, 0, "");
        }
        return;
    }
    if (local0) {
        local_->stdin_write(0, std::string_view(buf, static_cast<size_t>(n)));
    } else if (auto& p = proxies_[0]; p && p->phase == ProxyConn::running) {
        proxy_send(*p, FrameType::in, 0, std::string_view(buf, static_cast<size_t>(n)));
    }
}

int Mpirun::run() {
    ensure_std_fds();
    base::log_set_identity(g_prog);
    sigfd_ = setup_signalfd();
    if (sigfd_ < 0) {
        say("cannot set up signal handling: " + base::errno_text(errno));
        return 1;
    }
    grace_ms_ = t_kill_grace_ms.get();
    if (grace_ms_ < 0) grace_ms_ = 0;
    local_host_ = host_name();

    np_ = opt_.np;
    if (np_ <= 0) {
        if (!opt_.hosts.empty()) {
            np_ = 0;
            for (const auto& h : opt_.hosts) np_ += h.slots;
        } else {
            long c = sysconf(_SC_NPROCESSORS_ONLN);
            np_ = c > 0 ? static_cast<int>(c) : 1;
        }
    }
    places_ = place_ranks(opt_.hosts, np_);
    ranks_.assign(static_cast<size_t>(np_), RankRec{});
    std::vector<int> per_node;
    for (size_t h = 0; h < places_.size(); ++h) {
        per_node.push_back(places_[h].count);
        for (int r = places_[h].first_rank; r < places_[h].first_rank + places_[h].count; ++r)
            ranks_[r].host = static_cast<int>(h);
    }
    if (!opt_.wdir.empty()) {
        cwd_ = opt_.wdir;
    } else {
        char b[4096];
        if (getcwd(b, sizeof b)) cwd_ = b;
    }

    // The job id: unique per job (the library names shared-memory objects after it).
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd)
        rnd = static_cast<uint32_t>(EventLoop::now_ms()) ^ static_cast<uint32_t>(getpid() << 16);
    char kvs[64];
    std::snprintf(kvs, sizeof kvs, "kvs_%d_%08x", static_cast<int>(getpid()), rnd);

    PmiJobInfo info;
    info.size = np_;
    info.kvsname = kvs;
    info.appnum = 0;
    int slots = 0;
    for (const auto& h : opt_.hosts) slots += h.slots;
    info.universe_size = std::max(np_, slots);
    info.process_mapping = pmi_process_mapping(per_node);
    pmi_ = std::make_unique<PmiServer>(info, [this](int rank, const std::string& line) {
        pmi_send(rank, line);
    });

    LocalRanks::Callbacks cb;
    cb.pmi_line = [this](int rank, std::string line) { on_pmi_line(rank, line); };
    cb.output = [this](int rank, int stream, const char* d, size_t n) {
        out_.data(rank, stream, d, n, EventLoop::now_ms());
    };
    cb.pmi_overflow = [this](int rank) {
        if (!killing_) fail(who(rank) + " sent a PMI line longer than 65536 bytes", 1);
        kill_job(SIGTERM);
    };
    cb.exited = [this](int rank, int st) { on_rank_exit(rank, st); };
    local_ = std::make_unique<LocalRanks>(loop_, cb);
    loop_.add(sigfd_, EPOLLIN, [this](uint32_t) { on_signal(); });

    // Environment for remote ranks: WANMPI_*, IMPI_*, and what -x / -genv name.
    for (const auto& kv : current_environment()) {
        if (kv.rfind("WANMPI_", 0) == 0 || kv.rfind("IMPI_", 0) == 0) proxy_env_.push_back(kv);
    }
    for (const auto& n : opt_.env_names) {
        const char* v = std::getenv(n.c_str());
        if (!v) {
            say("warning: -x " + n + ": not set in mpirun's environment, not passed on");
            continue;
        }
        proxy_env_.push_back(n + "=" + v);
    }
    for (const auto& kv : opt_.env_set) proxy_env_.push_back(kv);
    proxy_env_ = merge_env({}, proxy_env_);

    proxies_.resize(places_.size());
    bool started = true;
    // Remote hosts first: their agents (ssh) take longest to come up.
    for (size_t h = 0; h < places_.size() && started; ++h)
        if (!places_[h].local) started = start_proxy(static_cast<int>(h));
    for (size_t h = 0; h < places_.size() && started; ++h)
        if (places_[h].local) started = start_local(places_[h]);
    if (!started) {
        for (auto& r : ranks_)
            if (r.state == RankRec::not_started) r.state = RankRec::exited;
        kill_job(SIGTERM);
    } else if (places_[0].local) {
        stdin_pump();
    }
    if (opt_.timeout_s > 0) {
        loop_.after(static_cast<int64_t>(opt_.timeout_s * 1000), [this] {
            if (killing_) return;
            char t[32];
            std::snprintf(t, sizeof t, "%g", opt_.timeout_s);
            int running = 0;
            for (const auto& r : ranks_)
                if (r.state != RankRec::exited) ++running;
            failed_ = false;  // the timeout is the reason, whatever failed before
            fail(std::string("timeout: the job did not finish within ") + t + " s; killing " +
                     std::to_string(running) + " rank" + (running == 1 ? "" : "s"),
                 124);
            kill_job(SIGTERM, false);
        });
    }

    while (!finished()) {
        int64_t now = EventLoop::now_ms();
        int64_t next = out_.flush_due(now);
        int64_t wait = next < 0 ? -1 : std::max<int64_t>(0, next - now);
        if (stdin_mode_ == StdinMode::pump && stdin_backlog() < (1u << 20)) wait = 0;
        loop_.run_once(wait);
        if (stdin_mode_ != StdinMode::off) stdin_pump();
    }
    out_.flush_all();
    // Children of ranks left in their process groups go too (ESRCH for empty groups).
    local_->signal_all_groups(SIGKILL);
    return failed_ ? (exit_code_ == 0 ? 1 : exit_code_) : 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 0) {
        std::string a0 = argv[0];
        size_t s = a0.rfind('/');
        g_prog = s == std::string::npos ? a0 : a0.substr(s + 1);
        if (g_prog.empty()) g_prog = "mpirun";
    }
    LaunchOptions o;
    o.launcher = t_launcher.get();
    o.timeout_s = t_timeout.get() > 0 ? t_timeout.get() : 0;
    std::vector<std::string> args(argv + 1, argv + argc);
    base::Status s = parse_launch_options(args, &o);
    if (o.help) {
        print_help();
        return 0;
    }
    if (o.version) {
        std::string v = g_prog + " (wanmpi) " WANMPI_VERSION "\n";
        base::write_full(1, v.data(), v.size());
        return 0;
    }
    if (!s.ok()) {
        say("error: " + s.message());
        say("try '" + g_prog + " --help' for the options");
        return 2;
    }
    Mpirun m(std::move(o));
    return m.run();
}
