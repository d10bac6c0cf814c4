#include "runtime/launcher_util.hpp"

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace wanmpi::runtime {

void ensure_std_fds() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (fcntl(fd, F_GETFD) >= 0) continue;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
}

int setup_signalfd() {
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);
    signal(SIGTTOU, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
        // "nohup mpirun ...": an ignored SIGHUP stays ignored.
        struct sigaction old {};
        if (s == SIGHUP && sigaction(s, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaddset(&set, s);
    }
    if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return -1;
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

std::string signal_text(int sig) {
    const char* d = strsignal(sig);
    return std::to_string(sig) + " (" + (d ? d : "unknown signal") + ")";
}

std::string describe_wait_status(int st) {
    if (WIFEXITED(st)) return "exited with code " + std::to_string(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) {
        std::string r = "killed by signal " + signal_text(WTERMSIG(st));
        if (WCOREDUMP(st)) r += ", core dumped";
        return r;
    }
    return "ended with wait status " + std::to_string(st);
}

int exit_code_of(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

std::string self_exe_dir() {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    std::string p(buf, static_cast<size_t>(n));
    size_t s = p.rfind('/');
    return s == std::string::npos ? "" : p.substr(0, s);
}

std::string host_name() {
    char hn[256] = {0};
    if (gethostname(hn, sizeof hn - 1) != 0) return "localhost";
    return hn;
}

}  // namespace wanmpi::runtime
