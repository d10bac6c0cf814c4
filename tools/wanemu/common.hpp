// wanemu common helpers: unit parsing/formatting, small string and file utilities, running
// external commands (`ip`, `gnuplot`) and clocks.
//
// Lifecycle/ownership: free functions and value types only; nothing here owns global state.
// Threading: all functions are thread-safe (no shared mutable state), except that
// run_command() forks and must not be called while another thread holds locks the child needs
// (the child only calls async-signal-safe functions before execvp, so this is not an issue).
// Errors: user-facing failures are reported by throwing wanemu::error with a complete message;
// the CLI catches it at the top and prints "wanemu: <message>". Nothing here is on a hot path.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace wanmpi::wanemu {

struct error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws error(prefix + ": " + strerror(errno)).
[[noreturn]] void throw_errno(const std::string& what);

inline int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

constexpr int64_t k_ms = 1000000;
constexpr int64_t k_us = 1000;

// --- units ------------------------------------------------------------------------------------
// Durations: "10ms", "1.5ms", "250us", "2s", "0" (bare number = milliseconds, as in tc/netem).
std::optional<int64_t> parse_duration_ns(std::string_view s);
// Rates in bits per second: "200mbit", "1gbit", "1.5Gbit", "500kbit", "2g", "0" or "unlimited".
// "mbps"/"MB/s" style byte rates are rejected on purpose: tc reads "mbps" as megaBYTES.
std::optional<double> parse_rate_bps(std::string_view s);
// Sizes in bytes: "64KB" = "64K" = "64KiB" = 65536, "1MB", "1500", "1500B".
std::optional<int64_t> parse_size_bytes(std::string_view s);
// Fractions: "0.5%" = 0.005, "0.01" = 0.01; must be within [0, 1].
std::optional<double> parse_fraction(std::string_view s);

// printf into a string (at most 1023 characters), and a time-stamped line on stderr (the
// controller's log).
std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
void logf(const char* f, ...) __attribute__((format(printf, 1, 2)));

std::string format_duration(int64_t ns);
std::string format_rate(double bps);
std::string format_size(int64_t bytes);
std::string format_fraction(double f);

// --- strings ----------------------------------------------------------------------------------
std::vector<std::string> split(std::string_view s, char sep, bool skip_empty = true);
std::vector<std::string> split_ws(std::string_view s);
std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view p);
std::string join(const std::vector<std::string>& v, std::string_view sep);
std::string lower(std::string_view s);
// Names of clusters and hosts: hostname labels ([A-Za-z0-9-], not starting/ending with '-').
bool valid_label(std::string_view s, size_t max_len = 32);

// --- files ------------------------------------------------------------------------------------
std::string read_file(const std::string& path);  // throws error
std::optional<std::string> try_read_file(const std::string& path);
// Writes to path.tmp then renames, so readers never see a half-written file.
void write_file_atomic(const std::string& path, const std::string& content, int mode = 0644);

// --- processes --------------------------------------------------------------------------------
struct command_result {
    int status = -1;  // exit code, or 128+signal
    std::string out;  // stdout+stderr
};
// Runs argv[0] (searched in PATH) with the given stdin text; collects its output.
command_result run_command(const std::vector<std::string>& argv, const std::string& input = {});
// Like run_command but throws error("<what>: <output>") on a non-zero exit.
void run_checked(const std::vector<std::string>& argv, const std::string& what,
                 const std::string& input = {});
// Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat); 0 if gone.
// Together with the pid it names a process instance, immune to pid reuse.
uint64_t process_start_time(int pid);
bool process_alive(int pid, uint64_t start_time);

}  // namespace wanmpi::wanemu
