#include "harness.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/clock.hpp"
#include "base/socket.hpp"

namespace wanmpi::testing {

// Wire between child and parent: lines "P key value", "F", answered after every rank fenced by
// lines "K key value" and "E".
static bool send_line(int fd, const std::string& s) {
    std::string l = s + "\n";
    return base::write_full(fd, l.data(), l.size()) == ssize_t(l.size());
}

static bool read_line(int fd, std::string& out) {
    out.clear();
    char c;
    for (;;) {
        ssize_t r = ::read(fd, &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        if (c == '\n') return true;
        out += c;
    }
}

base::Status PipeKvs::put(const std::string& key, const std::string& value) {
    mine_[key] = value;
    return base::Status::OK();
}

base::Status PipeKvs::fence() {
    for (auto& [k, v] : mine_)
        if (!send_line(fd_, "P " + k + " " + v))
            return base::Status(base::Errc::io_error, "kvs: parent gone");
    mine_.clear();
    if (!send_line(fd_, "F")) return base::Status(base::Errc::io_error, "kvs: parent gone");
    std::string l;
    while (read_line(fd_, l)) {
        if (l == "E") return base::Status::OK();
        auto a = l.find(' ', 2);
        if (l.size() > 2 && l[0] == 'K' && a != std::string::npos)
            all_[l.substr(2, a - 2)] = l.substr(a + 1);
    }
    return base::Status(base::Errc::io_error, "kvs: parent gone during fence");
}

std::optional<std::string> PipeKvs::get(const std::string& key) {
    auto it = all_.find(key);
    if (it == all_.end()) return std::nullopt;
    return it->second;
}

bool RankResult::exited_ok() const {
    return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string RankResult::describe() const {
    if (status < 0) return "killed at the test deadline";
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
}

std::vector<RankResult> run_ranks(int n, const std::function<int(int, PipeKvs&)>& fn,
                                  int timeout_s) {
    std::vector<pid_t> pids(n, -1);
    std::vector<int> fds(n, -1);
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t parent = getpid();
    for (int r = 0; r < n; ++r) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(99);
            ::close(sv[0]);
            for (int i = 0; i < r; ++i)
                ::close(fds[i]);
            PipeKvs kvs(sv[1], r, n);
            int rc = fn(r, kvs);
            std::fflush(stdout);
            std::fflush(stderr);
            _exit(rc);
        }
        ::close(sv[1]);
        pids[r] = pid;
        fds[r] = sv[0];
    }
    // Serve the KVS until every child closed its end (exited).
    std::map<std::string, std::string> table;
    std::vector<std::string> buf(n);
    std::vector<bool> fenced(n, false), open(n, true);
    int64_t deadline = base::now_ns() + int64_t(timeout_s) * 1000000000LL;
    int nopen = n;
    while (nopen > 0) {
        std::vector<pollfd> pf;
        std::vector<int> who;
        for (int r = 0; r < n; ++r)
            if (open[r]) {
                pf.push_back({fds[r], POLLIN, 0});
                who.push_back(r);
            }
        int left = int((deadline - base::now_ns()) / 1000000);
        if (left <= 0) break;
        int k = ::poll(pf.data(), pf.size(), left);
        if (k < 0 && errno == EINTR) continue;
        for (size_t i = 0; i < pf.size(); ++i) {
            if (!pf[i].revents) continue;
            int r = who[i];
            char tmp[4096];
            ssize_t got = ::read(fds[r], tmp, sizeof tmp);
            if (got <= 0) {
                open[r] = false;
                --nopen;
                continue;
            }
            buf[r].append(tmp, size_t(got));
            size_t nl;
            while ((nl = buf[r].find('\n')) != std::string::npos) {
                std::string l = buf[r].substr(0, nl);
                buf[r].erase(0, nl + 1);
                if (l == "F") {
                    fenced[r] = true;
                } else if (l.size() > 2 && l[0] == 'P') {
                    auto a = l.find(' ', 2);
                    if (a != std::string::npos) table[l.substr(2, a - 2)] = l.substr(a + 1);
                }
            }
        }
        // A fence completes when every rank still running has entered it.
        bool all = true, any = false;
        for (int r = 0; r < n; ++r) {
            if (open[r] && !fenced[r]) all = false;
            if (fenced[r]) any = true;
        }
        if (all && any) {
            for (int r = 0; r < n; ++r) {
                if (!fenced[r]) continue;
                fenced[r] = false;
                std::string out;
                for (auto& [k, v] : table)
                    out += "K " + k + " " + v + "\n";
                out += "E\n";
                base::write_full(fds[r], out.data(), out.size());
            }
        }
    }
    std::vector<RankResult> res(n);
    for (int r = 0; r < n; ++r) {
        int st = 0;
        pid_t w = waitpid(pids[r], &st, WNOHANG);
        if (w == 0) {
            // It closed its KVS end, so it is exiting; wait for it on a pidfd, bounded.
            int pfd = int(syscall(SYS_pidfd_open, pids[r], 0));
            int left = int((deadline - base::now_ns()) / 1000000);
            if (pfd >= 0 && left > 0) {
                pollfd p{pfd, POLLIN, 0};
                ::poll(&p, 1, left);
            }
            if (pfd >= 0) ::close(pfd);
            w = waitpid(pids[r], &st, WNOHANG);
        }
        if (w == pids[r]) {
            res[r].status = st;
        } else {
            kill(pids[r], SIGKILL);
            waitpid(pids[r], &st, 0);
            res[r].status = -1;
        }
        ::close(fds[r]);
    }
    return res;
}

std::string fresh_job_id() {
    static std::atomic<int> n{0};
    return "t" + std::to_string(getpid()) + "-" + std::to_string(n++) + "-" +
           std::to_string(base::now_ns() % 1000000);
}

void child_fail(const char* file, int line, const std::string& what) {
    std::fprintf(stderr, "[pid %d] %s:%d: check failed: %s\n", int(getpid()), file, line,
                 what.c_str());
    std::fflush(stderr);
    _exit(1);
}

void* RecordingSink::on_header(int peer, const uint8_t* hdr, uint64_t len) {
    bool use = buffer_for && buffer_for(hdr, len);
    pending_used_[peer] = use;
    if (!use) return nullptr;
    auto& b = pending_[peer];
    b.assign(len, 0);
    b.reserve(1);  // a real (non-null) buffer even for an empty payload
    return b.data();
}

void RecordingSink::on_frame(int peer, const uint8_t* hdr, const void* data, uint64_t len) {
    Frame f;
    f.peer = peer;
    std::memcpy(f.hdr, hdr, sizeof f.hdr);
    f.via_buffer = pending_used_[peer];
    if (f.via_buffer) {
        if (data != pending_[peer].data())
            child_fail(__FILE__, __LINE__, "on_frame data != buffer");
        f.data.swap(pending_[peer]);
    } else {
        auto* p = static_cast<const uint8_t*>(data);
        f.data.assign(p, p + len);
    }
    pending_used_[peer] = false;
    frames.push_back(std::move(f));
    if (on_frame_cb) on_frame_cb(frames.back());
}

void RecordingSink::on_peer_failed(int peer, const std::string& why) {
    failures.emplace_back(peer, why);
}

bool drive(const std::vector<transport::Transport*>& ts, transport::RecvSink& sink,
           const std::function<bool()>& pred, int timeout_ms, int spin) {
    int64_t deadline = base::now_ns() + int64_t(timeout_ms) * 1000000;
    int idle = 0;
    auto progress_all = [&] {
        int n = 0;
        for (auto* t : ts)
            n += t->progress(sink);
        return n;
    };
    while (!pred()) {
        if (progress_all()) {
            idle = 0;
            continue;
        }
        if (++idle < spin) continue;
        idle = 0;
        for (auto* t : ts)
            t->prepare_sleep();
        if (progress_all() == 0 && !pred()) {
            std::vector<pollfd> pf;
            for (auto* t : ts)
                if (t->wait_fd() >= 0) pf.push_back({t->wait_fd(), POLLIN, 0});
            int left = int((deadline - base::now_ns()) / 1000000);
            if (left <= 0) {
                for (auto* t : ts)
                    t->finish_sleep();
                return false;
            }
            ::poll(pf.data(), pf.size(), left);
        }
        for (auto* t : ts)
            t->finish_sleep();
        if (base::now_ns() > deadline && !pred()) return false;
    }
    return true;
}

transport::JobInfo job_info(int rank, int size, const std::string& job_id,
                            std::vector<int> host_of) {
    transport::JobInfo j;
    j.rank = rank;
    j.size = size;
    j.job_id = job_id;
    j.host_of = host_of.empty() ? std::vector<int>(size, 0) : std::move(host_of);
    j.local_ranks = size;
    j.cores = int(sysconf(_SC_NPROCESSORS_ONLN));
    return j;
}

}  // namespace wanmpi::testing
