// Logging: one line per event, prefixed with who we are, written with a single write(2) so lines
// from several processes sharing a terminal do not interleave. Log once, where an error is first
// found, with errno. Thread-safe.
#pragma once

#include <cstdarg>
#include <string>

namespace wanmpi::base {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

// Identity printed in every line, e.g. "rank 3" or "mpirun". Set once at start-up.
void log_set_identity(const std::string& who);
LogLevel log_level();
bool log_enabled(LogLevel l);
void log_write(LogLevel l, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vwrite(LogLevel l, const char* fmt, va_list ap);

// "strerror" that is thread-safe.
std::string errno_text(int err);

}  // namespace wanmpi::base

#define WANMPI_LOG(lvl, ...)                                                         \
    do {                                                                             \
        if (::wanmpi::base::log_enabled(::wanmpi::base::LogLevel::lvl))              \
            ::wanmpi::base::log_write(::wanmpi::base::LogLevel::lvl, __VA_ARGS__);   \
    } while (0)
