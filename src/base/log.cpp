#include "base/log.hpp"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <unistd.h>

#include "base/tunables.hpp"

namespace wanmpi::base {

static Tunable<int64_t> t_log_level("LOG", "LEVEL", 1,
    "Verbosity of wanmpi's own messages on stderr: 0 errors, 1 warnings, 2 info, 3 debug, 4 trace.");

namespace {
std::mutex& id_mutex() { static std::mutex m; return m; }
std::string& identity() { static std::string s = "wanmpi"; return s; }
}  // namespace

void log_set_identity(const std::string& who) {
    std::lock_guard<std::mutex> g(id_mutex());
    identity() = who;
}

LogLevel log_level() { return static_cast<LogLevel>(t_log_level.get()); }
bool log_enabled(LogLevel l) { return static_cast<int64_t>(l) <= t_log_level.get(); }

void log_vwrite(LogLevel l, const char* fmt, va_list ap) {
    static const char* names[] = {"error", "warning", "info", "debug", "trace"};
    char buf[2048];
    int n;
    {
        std::lock_guard<std::mutex> g(id_mutex());
        n = std::snprintf(buf, sizeof buf, "[%s] %s: ", identity().c_str(),
                          names[static_cast<int>(l)]);
    }
    if (n < 0) return;
    if (n < static_cast<int>(sizeof buf)) {
        int m = std::vsnprintf(buf + n, sizeof buf - n, fmt, ap);
        if (m > 0) n += m;
    }
    if (n > static_cast<int>(sizeof buf) - 2) n = sizeof buf - 2;
    if (buf[n - 1] != '\n') buf[n++] = '\n';
    ssize_t w = ::write(2, buf, n);
    (void)w;
}

void log_write(LogLevel l, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(l, fmt, ap);
    va_end(ap);
}

std::string errno_text(int err) {
    char b[256];
    // GNU strerror_r returns a char*.
    const char* s = strerror_r(err, b, sizeof b);
    return s;
}

}  // namespace wanmpi::base
