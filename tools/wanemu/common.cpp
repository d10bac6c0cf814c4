#include "common.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

extern char** environ;

namespace wanmpi::wanemu {

void throw_errno(const std::string& what) { throw error(what + ": " + std::strerror(errno)); }

std::string fmt(const char* f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

void logf(const char* f, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(msg, sizeof msg, f, ap);
    va_end(ap);
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tm t;
    localtime_r(&ts.tv_sec, &t);
    std::fprintf(stderr, "[wanemu %02d:%02d:%02d.%03ld] %s\n", t.tm_hour, t.tm_min, t.tm_sec,
                 ts.tv_nsec / 1000000, msg);
    std::fflush(stderr);
}

namespace {

// Splits "12.5ms" into 12.5 and "ms"; rejects empty numbers, signs and trailing junk in the number.
bool split_number(std::string_view s, double& value, std::string& unit) {
    s = trim(s);
    if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') ||
        s.find_first_of("xX") != std::string_view::npos) {
        return false;
    }
    std::string str(s);
    char* end = nullptr;
    errno = 0;
    value = std::strtod(str.c_str(), &end);
    if (errno != 0 || end == str.c_str() || !std::isfinite(value) || value < 0) {
        return false;
    }
    unit = lower(trim(std::string_view(end)));
    return true;
}

std::string fmt_num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

}  // namespace

std::optional<int64_t> parse_duration_ns(std::string_view s) {
    double v;
    std::string u;
    if (!split_number(s, v, u)) {
        return std::nullopt;
    }
    double mult;
    if (u.empty() || u == "ms") {
        mult = 1e6;
    } else if (u == "us" || u == "µs") {
        mult = 1e3;
    } else if (u == "ns") {
        mult = 1;
    } else if (u == "s" || u == "sec") {
        mult = 1e9;
    } else if (u == "m" || u == "min") {
        mult = 60e9;
    } else {
        return std::nullopt;
    }
    double ns = v * mult;
    if (ns > 1e15) {
        return std::nullopt;
    }
    return static_cast<int64_t>(std::llround(ns));
}

std::optional<double> parse_rate_bps(std::string_view s) {
    std::string l = lower(trim(s));
    if (l == "unlimited" || l == "inf" || l == "none") {
        return 0.0;
    }
    double v;
    std::string u;
    if (!split_number(s, v, u)) {
        return std::nullopt;
    }
    if (!u.empty() && u.back() == 's' && u.find("/s") != std::string::npos) {
        // "Mbit/s" -> "mbit"
        u = u.substr(0, u.find("/s"));
    }
    double mult;
    if (u.empty() || u == "bit" || u == "b") {
        mult = 1;
    } else if (u == "k" || u == "kbit") {
        mult = 1e3;
    } else if (u == "m" || u == "mbit") {
        mult = 1e6;
    } else if (u == "g" || u == "gbit") {
        mult = 1e9;
    } else if (u == "t" || u == "tbit") {
        mult = 1e12;
    } else {
        return std::nullopt;
    }
    return v * mult;
}

std::optional<int64_t> parse_size_bytes(std::string_view s) {
    double v;
    std::string u;
    if (!split_number(s, v, u)) {
        return std::nullopt;
    }
    double mult;
    if (u.empty() || u == "b") {
        mult = 1;
    } else if (u == "k" || u == "kb" || u == "kib") {
        mult = 1024;
    } else if (u == "m" || u == "mb" || u == "mib") {
        mult = 1024.0 * 1024;
    } else if (u == "g" || u == "gb" || u == "gib") {
        mult = 1024.0 * 1024 * 1024;
    } else {
        return std::nullopt;
    }
    double b = v * mult;
    if (b > 1e12) {
        return std::nullopt;
    }
    return static_cast<int64_t>(std::llround(b));
}

std::optional<double> parse_fraction(std::string_view s) {
    s = trim(s);
    bool percent = !s.empty() && s.back() == '%';
    if (percent) {
        s.remove_suffix(1);
    }
    double v;
    std::string u;
    if (!split_number(s, v, u) || !u.empty()) {
        return std::nullopt;
    }
    if (percent) {
        v /= 100.0;
    }
    if (v < 0 || v > 1) {
        return std::nullopt;
    }
    return v;
}

std::string format_duration(int64_t ns) {
    if (ns == 0) {
        return "0ms";
    }
    if (ns % 1000000000 == 0) {
        return std::to_string(ns / 1000000000) + "s";
    }
    if (ns >= 1000000) {
        return fmt_num(double(ns) / 1e6) + "ms";
    }
    return fmt_num(double(ns) / 1e3) + "us";
}

std::string format_rate(double bps) {
    if (bps <= 0) {
        return "unlimited";
    }
    if (bps >= 1e9) {
        return fmt_num(bps / 1e9) + "gbit";
    }
    if (bps >= 1e6) {
        return fmt_num(bps / 1e6) + "mbit";
    }
    if (bps >= 1e3) {
        return fmt_num(bps / 1e3) + "kbit";
    }
    return fmt_num(bps) + "bit";
}

std::string format_size(int64_t b) {
    const double kb = 1024.0, mb = kb * 1024, gb = mb * 1024;
    if (b >= 1024 * 1024 && b % (1024 * 1024) == 0) {
        return std::to_string(b / (1024 * 1024)) + "MB";
    }
    if (b >= 1024 && b % 1024 == 0 && b < 10 * 1024 * 1024) {
        return std::to_string(b / 1024) + "KB";
    }
    char buf[64];
    if (double(b) >= gb) {
        std::snprintf(buf, sizeof buf, "%.2fGB", double(b) / gb);
    } else if (double(b) >= mb) {
        std::snprintf(buf, sizeof buf, "%.2fMB", double(b) / mb);
    } else if (double(b) >= 10 * kb) {
        std::snprintf(buf, sizeof buf, "%.1fKB", double(b) / kb);
    } else {
        std::snprintf(buf, sizeof buf, "%lldB", static_cast<long long>(b));
    }
    return buf;
}

std::string format_fraction(double f) { return fmt_num(f * 100) + "%"; }

std::vector<std::string> split(std::string_view s, char sep, bool skip_empty) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        size_t p = s.find(sep, start);
        std::string_view part = s.substr(start, p == std::string_view::npos ? s.npos : p - start);
        if (!part.empty() || !skip_empty) {
            out.emplace_back(part);
        }
        if (p == std::string_view::npos) {
            break;
        }
        start = p + 1;
    }
    return out;
}

std::vector<std::string> split_ws(std::string_view s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
            ++i;
        }
        size_t j = i;
        while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) {
            ++j;
        }
        if (j > i) {
            out.emplace_back(s.substr(i, j - i));
        }
        i = j;
    }
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
        s.remove_prefix(1);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.remove_suffix(1);
    }
    return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string join(const std::vector<std::string>& v, std::string_view sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) {
            out += sep;
        }
        out += v[i];
    }
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

bool valid_label(std::string_view s, size_t max_len) {
    if (s.empty() || s.size() > max_len || s.front() == '-' || s.back() == '-') {
        return false;
    }
    for (char c : s) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
            return false;
        }
    }
    return true;
}

std::optional<std::string> try_read_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return std::nullopt;
    }
    std::string out;
    char buf[8192];
    while (true) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        out.append(buf, size_t(n));
    }
    ::close(fd);
    return out;
}

std::string read_file(const std::string& path) {
    auto s = try_read_file(path);
    if (!s) {
        throw_errno("cannot read " + path);
    }
    return *s;
}

void write_file_atomic(const std::string& path, const std::string& content, int mode) {
    std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        throw_errno("cannot write " + tmp);
    }
    size_t off = 0;
    while (off < content.size()) {
        ssize_t n = ::write(fd, content.data() + off, content.size() - off);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            int e = errno;
            ::close(fd);
            errno = e;
            throw_errno("cannot write " + tmp);
        }
        off += size_t(n);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        throw_errno("cannot rename " + tmp);
    }
}

command_result run_command(const std::vector<std::string>& argv, const std::string& input) {
    command_result r;
    int out_pipe[2];
    int in_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(in_pipe, O_CLOEXEC) != 0) {
        throw_errno("pipe");
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGTERM);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> args;
    for (const auto& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    pid_t pid;
    int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(out_pipe[1]);
    ::close(in_pipe[0]);
    if (rc != 0) {
        ::close(out_pipe[0]);
        ::close(in_pipe[1]);
        errno = rc;
        throw_errno("cannot run " + argv[0]);
    }
    // Feed stdin and drain stdout together so neither side can block the other.
    size_t in_off = 0;
    int in_fd = in_pipe[1];
    if (input.empty()) {
        ::close(in_fd);
        in_fd = -1;
    } else {
        ::fcntl(in_fd, F_SETFL, O_NONBLOCK);
    }
    char buf[4096];
    while (true) {
        pollfd pfd[2] = {{out_pipe[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
        int n = ::poll(pfd, in_fd >= 0 ? 2 : 1, -1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (in_fd >= 0 && (pfd[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = ::write(in_fd, input.data() + in_off, input.size() - in_off);
            if (w > 0) {
                in_off += size_t(w);
            }
            if (w < 0 && errno != EAGAIN && errno != EINTR) {
                in_off = input.size();
            }
            if (in_off >= input.size()) {
                ::close(in_fd);
                in_fd = -1;
            }
        }
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t m = ::read(out_pipe[0], buf, sizeof buf);
            if (m < 0 && errno == EINTR) {
                continue;
            }
            if (m <= 0) {
                break;
            }
            r.out.append(buf, size_t(m));
        }
    }
    if (in_fd >= 0) {
        ::close(in_fd);
    }
    ::close(out_pipe[0]);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

void run_checked(const std::vector<std::string>& argv, const std::string& what,
                 const std::string& input) {
    auto r = run_command(argv, input);
    if (r.status != 0) {
        std::string out(trim(r.out));
        throw error(what + " failed (" + join(argv, " ") + "): " + out);
    }
}

uint64_t process_start_time(int pid) {
    auto s = try_read_file("/proc/" + std::to_string(pid) + "/stat");
    if (!s) {
        return 0;
    }
    // The command name (field 2) may contain spaces and parentheses: parse after the last ')'.
    size_t p = s->rfind(')');
    if (p == std::string::npos) {
        return 0;
    }
    auto f = split_ws(std::string_view(*s).substr(p + 1));
    // f[0] is field 3 (state); start time is field 22 -> f[19].
    if (f.size() < 20 || f[0] == "Z" || f[0] == "X") {
        return 0;
    }
    return std::strtoull(f[19].c_str(), nullptr, 10);
}

bool process_alive(int pid, uint64_t start_time) {
    if (pid <= 0) {
        return false;
    }
    uint64_t st = process_start_time(pid);
    return st != 0 && (start_time == 0 || st == start_time);
}

}  // namespace wanmpi::wanemu
