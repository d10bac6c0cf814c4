#include "runtime/local_ranks.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.hpp"
#include "base/socket.hpp"
#include "runtime/launcher_tunables.hpp"

extern char** environ;

namespace wanmpi::runtime {

using base::Errc;
using base::Status;

struct LocalRanks::Proc {
    int rank = 0;
    pid_t pid = -1;
    bool alive = false;
    int pmi = -1;
    int out = -1;
    int err = -1;
    int in = -1;
    bool in_close_pending = false;
    std::string pmi_out;  // queued replies
    std::string in_buf;   // queued stdin bytes
    LineBuffer pmi_in;
    explicit Proc(size_t max_line) : pmi_in(max_line) {}
};

std::vector<std::string> current_environment() {
    std::vector<std::string> v;
    for (char** e = environ; e && *e; ++e) v.emplace_back(*e);
    return v;
}

static std::string env_name(const std::string& kv) { return kv.substr(0, kv.find('=')); }

std::vector<std::string> merge_env(const std::vector<std::string>& env,
                                   const std::vector<std::string>& set,
                                   const std::vector<std::string>& unset) {
    std::map<std::string, size_t> pos;
    std::vector<std::string> out;
    auto is_unset = [&](const std::string& n) {
        for (const auto& u : unset)
            if (u == n) return true;
        return false;
    };
    for (const auto& kv : env) {
        std::string n = env_name(kv);
        if (is_unset(n)) continue;
        auto it = pos.find(n);
        if (it != pos.end()) {
            out[it->second] = kv;
        } else {
            pos[n] = out.size();
            out.push_back(kv);
        }
    }
    for (const auto& kv : set) {
        std::string n = env_name(kv);
        auto it = pos.find(n);
        if (it != pos.end()) {
            out[it->second] = kv;
        } else {
            pos[n] = out.size();
            out.push_back(kv);
        }
    }
    return out;
}

LocalRanks::LocalRanks(EventLoop& loop, Callbacks cb, size_t max_pmi_line)
    : loop_(loop), cb_(std::move(cb)), max_pmi_line_(max_pmi_line) {}

LocalRanks::~LocalRanks() {
    for (auto& [r, p] : procs_) {
        close_fd(&p->pmi);
        close_fd(&p->out);
        close_fd(&p->err);
        close_fd(&p->in);
    }
}

void LocalRanks::close_fd(int* fd) {
    if (*fd < 0) return;
    loop_.remove(*fd);
    ::close(*fd);
    *fd = -1;
}

LocalRanks::Proc* LocalRanks::find(int rank) const {
    auto it = procs_.find(rank);
    return it == procs_.end() ? nullptr : it->second.get();
}

bool LocalRanks::is_alive(int rank) const {
    Proc* p = find(rank);
    return p && p->alive;
}

pid_t LocalRanks::pid_of(int rank) const {
    Proc* p = find(rank);
    return p ? p->pid : -1;
}

Status LocalRanks::spawn(const RankSpawn& s, pid_t* pid_out) {
    if (s.argv.empty()) return Status(Errc::invalid, "no program to run");
    int sp[2], po[2], pe[2], pi[2] = {-1, -1}, ep[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
        return Status(Errc::fatal, "socketpair: " + base::errno_text(errno), errno);
    auto close_all = [&] {
        for (int f : {sp[0], sp[1], po[0], po[1], pe[0], pe[1], pi[0], pi[1], ep[0], ep[1]})
            if (f >= 0) ::close(f);
    };
    po[0] = po[1] = pe[0] = pe[1] = ep[0] = ep[1] = -1;
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0 ||
        (s.stdin_pipe && pipe2(pi, O_CLOEXEC) != 0) || pipe2(ep, O_CLOEXEC) != 0) {
        int e = errno;
        close_all();
        return Status(Errc::fatal, "pipe: " + base::errno_text(e), e);
    }
    std::vector<std::string> env = merge_env(
        s.env,
        {"PMI_FD=" + std::to_string(sp[1]), "PMI_RANK=" + std::to_string(s.rank),
         "PMI_SIZE=" + std::to_string(s.size), "WANMPI_LOCAL_RANK=" + std::to_string(s.local_rank),
         "WANMPI_LOCAL_SIZE=" + std::to_string(s.local_size),
         "MPI_LOCALRANKID=" + std::to_string(s.local_rank),
         "MPI_LOCALNRANKS=" + std::to_string(s.local_size)},
        {"PMI_PORT", "PMI_ID", "PMI_SPAWNED"});
    std::vector<char*> argv, envp;
    for (const auto& a : s.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    pid_t parent = getpid();
    // WANMPI_MPIRUN_RANK_SESSIONS from the rank's environment (mpirun -x sets it there), else
    // from the launcher's own.
    bool own_session = t_rank_sessions.get();
    for (const auto& e : s.env) {
        static const std::string k = "WANMPI_MPIRUN_RANK_SESSIONS=";
        if (e.compare(0, k.size(), k) != 0) continue;
        bool v = false;
        if (base::detail::from_text(e.substr(k.size()), v)) own_session = v;  // as the tunable reads it
    }

    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close_all();
        return Status(Errc::fatal, "fork: " + base::errno_text(e), e);
    }
    if (pid == 0) {
        // Child: only async-signal-safe calls from here on.
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig : {SIGPIPE, SIGTTIN, SIGTTOU, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD,
                        SIGUSR1, SIGUSR2})
            signal(sig, SIG_DFL);
        // A process group of its own, so the whole rank (and what it forks) can be signalled at
        // once. Not a session of its own (Hydra's choice) unless WANMPI_MPIRUN_RANK_SESSIONS
        // asks for it: with the kernel's scheduler autogroups every session is a separate
        // scheduling group, and sched_yield() in a waiting rank can then only hand the core to
        // tasks of its own session - never to the peer it waits for. Measured with 4 ranks on 2
        // cores: Alltoall 8 B took 150-8000 us with a session per rank and 9-11 us with the
        // ranks in mpirun's session (Open MPI 5-10 us). But on a host busy with other users'
        // work, one session for the job means one share of the CPU for all its ranks (NPB
        // BT-like exchanges: 0.7x the time with a session per rank). setsid() also makes a new
        // process group (pgid = pid), so kill(-pid) works either way.
        if (own_session) setsid();
        else setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int e = 0;
        if (getppid() != parent) _exit(126);  // the launcher died before prctl
        int in_fd = s.stdin_pipe ? pi[0] : open("/dev/null", O_RDONLY);
        if (in_fd < 0 || dup2(in_fd, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0) {
            e = errno;
            (void)!write(ep[1], &e, sizeof e);
            _exit(127);
        }
        int fl = fcntl(sp[1], F_GETFD);
        fcntl(sp[1], F_SETFD, fl & ~FD_CLOEXEC);
        if (!s.cwd.empty() && chdir(s.cwd.c_str()) != 0) {
            e = errno;
            int tag = -1;  // chdir failure is told apart from exec failure
            (void)!write(ep[1], &tag, sizeof tag);
            (void)!write(ep[1], &e, sizeof e);
            _exit(127);
        }
        execvpe(argv[0], argv.data(), envp.data());
        e = errno;
        (void)!write(ep[1], &e, sizeof e);
        _exit(127);
    }
    // The child's setpgid() has run by the time exec succeeded (reported below), so kill(-pid)
    // reaches its group from here on.
    ::close(sp[1]);
    ::close(po[1]);
    ::close(pe[1]);
    if (pi[0] >= 0) ::close(pi[0]);
    ::close(ep[1]);
    // The exec-status pipe is close-on-exec: EOF means exec succeeded, an errno means it failed.
    int code[2] = {0, 0};
    ssize_t n;
    do n = base::read_full(ep[0], code, sizeof code);
    while (n < 0 && errno == EINTR);
    ::close(ep[0]);
    if (n > 0) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        ::close(sp[0]);
        ::close(po[0]);
        ::close(pe[0]);
        if (pi[1] >= 0) ::close(pi[1]);
        if (code[0] == -1)
            return Status(Errc::fatal, "cannot change to directory '" + s.cwd +
                                           "': " + base::errno_text(code[1]),
                          code[1]);
        return Status(Errc::fatal,
                      "cannot execute '" + s.argv[0] + "': " + base::errno_text(code[0]), code[0]);
    }

    auto p = std::make_unique<Proc>(max_pmi_line_);
    p->rank = s.rank;
    p->pid = pid;
    p->alive = true;
    p->pmi = sp[0];
    p->out = po[0];
    p->err = pe[0];
    p->in = pi[1];
    for (int f : {p->pmi, p->out, p->err, p->in})
        if (f >= 0) base::set_nonblock(f, true);
    Proc* raw = p.get();
    loop_.add(raw->pmi, EPOLLIN, [this, raw](uint32_t ev) { on_pmi(*raw, ev); });
    if (!paused_) {
        loop_.add(raw->out, EPOLLIN, [this, raw](uint32_t ev) { on_out(*raw, 1, ev); });
        loop_.add(raw->err, EPOLLIN, [this, raw](uint32_t ev) { on_out(*raw, 2, ev); });
    }
    by_pid_[pid] = s.rank;
    procs_[s.rank] = std::move(p);
    ++alive_;
    *pid_out = pid;
    return Status::OK();
}

bool LocalRanks::read_pmi(Proc& p) {
    char buf[8192];
    for (;;) {
        if (p.pmi < 0) return false;
        ssize_t n = ::read(p.pmi, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        if (n <= 0) {
            // EOF (the rank closed PMI, e.g. after finalize) or a reset connection.
            close_fd(&p.pmi);
            return false;
        }
        p.pmi_in.append(buf, static_cast<size_t>(n));
        while (auto line = p.pmi_in.next_line()) cb_.pmi_line(p.rank, std::move(*line));
        if (p.pmi_in.overflow()) {
            close_fd(&p.pmi);
            cb_.pmi_overflow(p.rank);
            return false;
        }
    }
}

void LocalRanks::on_pmi(Proc& p, uint32_t events) {
    if (events & EPOLLOUT) flush_pmi(p);
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_pmi(p);
}

bool LocalRanks::read_out(Proc& p, int stream, size_t budget) {
    int* fd = stream == 1 ? &p.out : &p.err;
    char buf[65536];
    size_t got = 0;
    while (*fd >= 0) {
        ssize_t n = ::read(*fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        if (n <= 0) {
            close_fd(fd);
            return false;
        }
        cb_.output(p.rank, stream, buf, static_cast<size_t>(n));
        got += static_cast<size_t>(n);
        if (got >= budget) return true;  // let other fds have their turn
    }
    return false;
}

void LocalRanks::on_out(Proc& p, int stream, uint32_t) { read_out(p, stream, 256 * 1024); }

void LocalRanks::flush_pmi(Proc& p) {
    while (!p.pmi_out.empty() && p.pmi >= 0) {
        ssize_t n = ::send(p.pmi, p.pmi_out.data(), p.pmi_out.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) {  // the rank is gone; its exit will be reported through SIGCHLD
            p.pmi_out.clear();
            break;
        }
        p.pmi_out.erase(0, static_cast<size_t>(n));
    }
    if (p.pmi >= 0) loop_.modify(p.pmi, p.pmi_out.empty() ? EPOLLIN : EPOLLIN | EPOLLOUT);
}

void LocalRanks::send_pmi(int rank, std::string_view line) {
    Proc* p = find(rank);
    if (!p || p->pmi < 0) return;
    p->pmi_out.append(line);
    flush_pmi(*p);
}

void LocalRanks::flush_stdin(Proc& p) {
    while (!p.in_buf.empty() && p.in >= 0) {
        ssize_t n = ::write(p.in, p.in_buf.data(), p.in_buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) {  // EPIPE: the rank closed its stdin; discard the rest
            p.in_buf.clear();
            close_fd(&p.in);
            return;
        }
        p.in_buf.erase(0, static_cast<size_t>(n));
    }
    if (p.in < 0) return;
    if (p.in_buf.empty() && p.in_close_pending) {
        close_fd(&p.in);
        return;
    }
    if (p.in_buf.empty()) {
        loop_.remove(p.in);
    } else if (!loop_.watched(p.in)) {
        Proc* raw = &p;
        loop_.add(p.in, EPOLLOUT, [this, raw](uint32_t ev) { on_stdin(*raw, ev); });
    }
}

void LocalRanks::on_stdin(Proc& p, uint32_t) { flush_stdin(p); }

void LocalRanks::stdin_write(int rank, std::string_view data) {
    Proc* p = find(rank);
    if (!p || p->in < 0 || p->in_close_pending) return;
    p->in_buf.append(data);
    flush_stdin(*p);
}

void LocalRanks::stdin_close(int rank) {
    Proc* p = find(rank);
    if (!p || p->in < 0) return;
    p->in_close_pending = true;
    flush_stdin(*p);
}

size_t LocalRanks::stdin_pending(int rank) const {
    Proc* p = find(rank);
    return p ? p->in_buf.size() : 0;
}

bool LocalRanks::stdin_open(int rank) const {
    Proc* p = find(rank);
    return p && p->in >= 0 && !p->in_close_pending;
}

bool LocalRanks::on_child_exit(pid_t pid, int wstatus) {
    auto it = by_pid_.find(pid);
    if (it == by_pid_.end()) return false;
    Proc* p = find(it->second);
    by_pid_.erase(it);
    if (!p || !p->alive) return true;
    p->alive = false;
    --alive_;
    // Everything the rank wrote before exiting is already in the socket and the pipes: drain it
    // so that an abort message or the last lines come before the exit report. A leftover child
    // of the rank may still hold the pipes; it gets a bounded amount, not an unbounded wait.
    read_pmi(*p);
    read_out(*p, 1, 16 << 20);
    read_out(*p, 2, 16 << 20);
    close_fd(&p->pmi);
    close_fd(&p->out);
    close_fd(&p->err);
    p->in_buf.clear();
    close_fd(&p->in);
    cb_.exited(p->rank, wstatus);
    return true;
}

void LocalRanks::signal_alive(int sig) {
    for (auto& [r, p] : procs_)
        if (p->alive) ::kill(-p->pid, sig);
}

void LocalRanks::signal_all_groups(int sig) {
    for (auto& [r, p] : procs_) ::kill(-p->pid, sig);
}

void LocalRanks::set_output_paused(bool paused) {
    if (paused == paused_) return;
    paused_ = paused;
    for (auto& [r, p] : procs_) {
        Proc* raw = p.get();
        for (int stream : {1, 2}) {
            int fd = stream == 1 ? raw->out : raw->err;
            if (fd < 0) continue;
            if (paused) {
                loop_.remove(fd);
            } else {
                loop_.add(fd, EPOLLIN,
                          [this, raw, stream](uint32_t ev) { on_out(*raw, stream, ev); });
            }
        }
    }
}

}  // namespace wanmpi::runtime
