// wanmpi-proxy: mpirun's hands on a remote host (like Hydra's pmi_proxy). Started by the launcher
// agent ("ssh HOST /path/wanmpi-proxy"), it talks to mpirun over its stdin/stdout (proxy_wire.hpp),
// starts the ranks of its host (local_ranks.hpp), relays their PMI lines, stdio and exit
// statuses, and applies mpirun's signals and kill orders.
//
// It never outlives its link: EOF or an error on stdin/stdout (mpirun or the agent died), or
// SIGTERM/SIGINT/SIGHUP to the proxy, means SIGTERM to every rank, SIGKILL after the grace
// period, and exit once all are reaped. Its ranks have PR_SET_PDEATHSIG=SIGKILL, so even a
// SIGKILLed proxy leaves nothing behind.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.hpp"
#include "base/socket.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/launcher_tunables.hpp"
#include "runtime/launcher_util.hpp"
#include "runtime/local_ranks.hpp"
#include "runtime/proxy_wire.hpp"

using namespace wanmpi;
using namespace wanmpi::runtime;

namespace {

class Proxy {
public:
    int run();

private:
    void on_link_readable();
    void on_frame(Frame& f);
    void start_job(const ProxyJob& j);
    void send(FrameType t, uint32_t rank, std::string_view payload);
    void flush();
    void link_lost(const std::string& why);
    void terminate(int first_sig, int64_t grace_ms);
    void on_signal();
    bool done() const;

    EventLoop loop_;
    std::unique_ptr<LocalRanks> ranks_;
    int in_ = -1;   // link from mpirun
    int out_ = -1;  // link to mpirun
    int sigfd_ = -1;
    FrameDecoder dec_;
    std::string outbuf_;
    bool link_ok_ = true;
    bool job_started_ = false;
    bool terminating_ = false;
    uint64_t kill_timer_ = 0;
    bool output_paused_ = false;
    std::string host_;
    ProxyJob job_;
    int reported_ = 0;  // ranks whose exit (or failure to start) has been reported
    int to_report_ = 0;
};

void Proxy::send(FrameType t, uint32_t rank, std::string_view payload) {
    if (!link_ok_) return;
    append_frame(&outbuf_, t, rank, payload);
    flush();
}

void Proxy::flush() {
    while (link_ok_ && !outbuf_.empty()) {
        ssize_t n = ::write(out_, outbuf_.data(), outbuf_.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n < 0) {
            link_lost("write to mpirun: " + base::errno_text(errno));
            return;
        }
        outbuf_.erase(0, static_cast<size_t>(n));
    }
    if (!link_ok_) return;
    if (outbuf_.empty()) loop_.remove(out_);
    else if (!loop_.watched(out_)) loop_.add(out_, EPOLLOUT, [this](uint32_t) { flush(); });
    // Back-pressure: a rank that prints faster than the link carries waits in its write().
    bool want_pause = outbuf_.size() > (8u << 20);
    bool want_resume = outbuf_.size() < (1u << 20);
    if (ranks_ && want_pause && !output_paused_) {
        ranks_->set_output_paused(true);
        output_paused_ = true;
    } else if (ranks_ && want_resume && output_paused_) {
        ranks_->set_output_paused(false);
        output_paused_ = false;
    }
}

void Proxy::terminate(int first_sig, int64_t grace_ms) {
    if (!ranks_) return;
    ranks_->signal_alive(first_sig);
    if (grace_ms <= 0) {
        ranks_->signal_all_groups(SIGKILL);
        return;
    }
    if (terminating_) return;  // the earlier SIGKILL deadline stands
    terminating_ = true;
    kill_timer_ = loop_.after(grace_ms, [this] { ranks_->signal_all_groups(SIGKILL); });
}

void Proxy::link_lost(const std::string& why) {
    if (!link_ok_) return;
    link_ok_ = false;
    outbuf_.clear();
    loop_.remove(in_);
    loop_.remove(out_);
    if (ranks_ && ranks_->alive() > 0)
        WANMPI_LOG(warn, "lost the link to mpirun (%s); killing %d rank(s)", why.c_str(),
                   ranks_->alive());
    terminate(SIGTERM, t_kill_grace_ms.get());
    if (ranks_) ranks_->set_output_paused(false);  // keep draining pipes so ranks never block
}

void Proxy::start_job(const ProxyJob& j) {
    job_ = j;
    job_started_ = true;
    to_report_ = static_cast<int>(j.count);
    std::vector<std::string> env = merge_env(current_environment(), j.env);
    for (uint32_t i = 0; i < j.count; ++i) {
        RankSpawn s;
        s.rank = static_cast<int>(j.first_rank + i);
        s.size = static_cast<int>(j.size);
        s.local_rank = static_cast<int>(i);
        s.local_size = static_cast<int>(j.count);
        s.argv = j.argv;
        s.env = env;
        s.cwd = j.cwd;
        s.stdin_pipe = s.rank == 0;
        pid_t pid = -1;
        base::Status st = ranks_->spawn(s, &pid);
        if (!st.ok()) {
            send(FrameType::failed, static_cast<uint32_t>(s.rank),
                 st.message() + " (on " + host_ + ")");
            // The rest are not started; mpirun takes the job down.
            reported_ += static_cast<int>(j.count - i);
            break;
        }
        send(FrameType::started, static_cast<uint32_t>(s.rank),
             be32_payload(static_cast<uint32_t>(pid)));
    }
}

void Proxy::on_frame(Frame& f) {
    switch (f.type) {
    case FrameType::job: {
        if (job_started_) return link_lost("second job frame");
        ProxyJob j;
        base::Status s = decode_job(f.payload, &j);
        if (!s.ok()) return link_lost(s.message());
        start_job(j);
        return;
    }
    case FrameType::pmi:
        if (ranks_) ranks_->send_pmi(static_cast<int>(f.rank), f.payload);
        return;
    case FrameType::in:
        if (ranks_) ranks_->stdin_write(static_cast<int>(f.rank), f.payload);
        return;
    case FrameType::in_eof:
        if (ranks_) ranks_->stdin_close(static_cast<int>(f.rank));
        return;
    case FrameType::signal: {
        auto sig = be32_from(f.payload);
        if (sig && *sig > 0 && *sig < 65 && ranks_) ranks_->signal_alive(static_cast<int>(*sig));
        return;
    }
    case FrameType::kill: {
        auto grace = be32_from(f.payload);
        terminate(SIGTERM, grace ? static_cast<int64_t>(*grace) : 0);
        if (!job_started_) link_lost("killed before the job started");
        return;
    }
    default:
        return link_lost("unexpected frame type " + std::to_string(static_cast<int>(f.type)));
    }
}

void Proxy::on_link_readable() {
    char buf[65536];
    for (int rounds = 0; rounds < 16 && link_ok_; ++rounds) {
        ssize_t n = ::read(in_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) return link_lost(n == 0 ? "EOF" : base::errno_text(errno));
        base::Status s = dec_.feed(buf, static_cast<size_t>(n));
        if (!s.ok()) return link_lost("garbage from mpirun: " + s.message());
        Frame f;
        while (link_ok_ && dec_.next(&f)) on_frame(f);
    }
}

void Proxy::on_signal() {
    signalfd_siginfo si;
    while (::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) {
            for (;;) {
                int st = 0;
                pid_t pid = waitpid(-1, &st, WNOHANG);
                if (pid <= 0) break;
                if (ranks_) ranks_->on_child_exit(pid, st);
            }
        } else if (sig == SIGUSR1 || sig == SIGUSR2) {
            if (ranks_) ranks_->signal_alive(sig);
        } else {
            // SIGTERM/SIGINT/SIGHUP/SIGQUIT to the proxy itself (e.g. the ssh session hung up).
            terminate(sig, t_kill_grace_ms.get());
            if (!job_started_) link_lost("signal " + signal_text(sig));
        }
    }
}

bool Proxy::done() const {
    if (!job_started_) return !link_ok_;
    return reported_ >= to_report_ && ranks_->alive() == 0;
}

int Proxy::run() {
    ensure_std_fds();
    host_ = host_name();
    base::log_set_identity("wanmpi-proxy@" + host_);
    // The link is our stdin/stdout. Move it to private descriptors and point 0/1 elsewhere, so
    // nothing (a library printing to stdout) can corrupt the frame stream.
    in_ = fcntl(0, F_DUPFD_CLOEXEC, 3);
    out_ = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (in_ < 0 || out_ < 0) {
        std::fprintf(stderr, "wanmpi-proxy: cannot duplicate stdin/stdout: %s\n",
                     std::strerror(errno));
        return 1;
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) {
        dup2(devnull, 0);
        ::close(devnull);
    }
    dup2(2, 1);
    base::set_nonblock(in_, true);
    base::set_nonblock(out_, true);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigfd_ = setup_signalfd();
    if (sigfd_ < 0) {
        std::fprintf(stderr, "wanmpi-proxy: signalfd: %s\n", std::strerror(errno));
        return 1;
    }

    LocalRanks::Callbacks cb;
    cb.pmi_line = [this](int rank, std::string line) {
        send(FrameType::pmi, static_cast<uint32_t>(rank), line);
    };
    cb.output = [this](int rank, int stream, const char* d, size_t n) {
        send(stream == 1 ? FrameType::out : FrameType::err, static_cast<uint32_t>(rank),
             std::string_view(d, n));
    };
    cb.pmi_overflow = [this](int rank) {
        // mpirun learns it from the protocol error it would otherwise see: send a line that
        // cannot parse, so the report names the rank.
        send(FrameType::pmi, static_cast<uint32_t>(rank), "PMI line longer than 65536 bytes");
    };
    cb.exited = [this](int rank, int st) {
        ++reported_;
        send(FrameType::exit, static_cast<uint32_t>(rank), be32_payload(static_cast<uint32_t>(st)));
    };
    ranks_ = std::make_unique<LocalRanks>(loop_, cb);
    loop_.add(sigfd_, EPOLLIN, [this](uint32_t) { on_signal(); });
    loop_.add(in_, EPOLLIN, [this](uint32_t) { on_link_readable(); });

    std::string hello(kProxyMagic);
    std::string names;
    put_strings(&names, {host_, std::to_string(getpid())});
    append_frame(&hello, FrameType::hello, kNoRank, names);
    outbuf_ = hello;
    flush();

    while (!done()) loop_.run_once(-1);
    // Last frames (exit statuses) must reach mpirun before we go.
    if (link_ok_ && !outbuf_.empty()) {
        base::set_nonblock(out_, false);
        base::write_full(out_, outbuf_.data(), outbuf_.size());
    }
    ranks_->signal_all_groups(SIGKILL);
    return link_ok_ ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
        std::printf("wanmpi-proxy: started by mpirun on remote hosts through the launcher agent;\n"
                    "it speaks mpirun's proxy protocol on stdin/stdout. Not for direct use.\n");
        return 0;
    }
    Proxy p;
    return p.run();
}
