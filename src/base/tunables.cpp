#include "base/tunables.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace wanmpi::base {

const char* level_name(Level l) {
    switch (l) {
    case Level::user: return "user";
    case Level::tuner: return "tuner";
    case Level::developer: return "developer";
    }
    return "?";
}

namespace {
std::mutex& reg_mutex() { static std::mutex m; return m; }
std::vector<const TunableInfo*>& registry() { static std::vector<const TunableInfo*> r; return r; }
}  // namespace

void register_tunable(const TunableInfo* info) {
    std::lock_guard<std::mutex> g(reg_mutex());
    registry().push_back(info);
}

std::vector<const TunableInfo*> all_tunables() {
    std::lock_guard<std::mutex> g(reg_mutex());
    auto v = registry();
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->env < b->env; });
    // Several translation units may declare the same knob (e.g. a shared header): keep one.
    v.erase(std::unique(v.begin(), v.end(), [](auto* a, auto* b) { return a->env == b->env; }),
            v.end());
    return v;
}

const char* tunable_env(const TunableInfo& info) {
    if (const char* s = std::getenv(info.env.c_str())) return s;
    if (!info.alias.empty())
        if (const char* s = std::getenv(info.alias.c_str())) return s;
    return nullptr;
}

static std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::optional<bool> parse_bool(const std::string& s0) {
    std::string s = lower(s0);
    if (s == "1" || s == "yes" || s == "true" || s == "on" || s == "y") return true;
    if (s == "0" || s == "no" || s == "false" || s == "off" || s == "n") return false;
    return std::nullopt;
}

std::optional<int64_t> parse_int(const std::string& s) {
    if (s.empty()) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 0);
    if (errno || end == s.c_str()) return std::nullopt;
    std::string suf = lower(end);
    int64_t mul = 1;
    if (suf == "" ) mul = 1;
    else if (suf == "k" || suf == "kb" || suf == "kib") mul = 1024;
    else if (suf == "m" || suf == "mb" || suf == "mib") mul = 1024LL * 1024;
    else if (suf == "g" || suf == "gb" || suf == "gib") mul = 1024LL * 1024 * 1024;
    else return std::nullopt;
    return static_cast<int64_t>(v) * mul;
}

std::optional<double> parse_double(const std::string& s) {
    if (s.empty()) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (errno || end == s.c_str() || *end) return std::nullopt;
    return v;
}

std::optional<int64_t> parse_duration_us(const std::string& s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str()) return std::nullopt;
    std::string suf = lower(end);
    double mul;
    if (suf == "" || suf == "us") mul = 1;
    else if (suf == "ms") mul = 1e3;
    else if (suf == "s") mul = 1e6;
    else if (suf == "ns") mul = 1e-3;
    else return std::nullopt;
    return static_cast<int64_t>(v * mul);
}

std::optional<double> parse_rate_bps(const std::string& s) {
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || !(v > 0) || v > 1e15) return std::nullopt;
    std::string u = lower(end);
    if (u.size() > 2 && u.compare(u.size() - 2, 2, "/s") == 0) u.resize(u.size() - 2);
    double bits = 1;
    if (u.size() >= 3 && (u.compare(u.size() - 3, 3, "bps") == 0 ||
                          (u.size() >= 4 && u.compare(u.size() - 4, 4, "byte") == 0))) {
        bits = 8;  // "25MBps", "25mbyte"
        u.resize(u.size() - (u.back() == 's' ? 3 : 4));
    } else if (u.size() >= 3 && u.compare(u.size() - 3, 3, "bit") == 0) {
        u.resize(u.size() - 3);
    }
    double mul;
    if (u.empty()) mul = 1;
    else if (u == "k") mul = 1e3;
    else if (u == "m") mul = 1e6;
    else if (u == "g") mul = 1e9;
    else if (u == "t") mul = 1e12;
    else return std::nullopt;
    return v * mul * bits;
}

namespace detail {
std::string to_text(bool v) { return v ? "1" : "0"; }
std::string to_text(int64_t v) { return std::to_string(v); }
std::string to_text(double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
}
std::string to_text(const std::string& v) { return v; }
bool from_text(const std::string& s, bool& out) {
    auto v = parse_bool(s);
    if (!v) return false;
    out = *v;
    return true;
}
bool from_text(const std::string& s, int64_t& out) {
    auto v = parse_int(s);
    if (!v) return false;
    out = *v;
    return true;
}
bool from_text(const std::string& s, double& out) {
    auto v = parse_double(s);
    if (!v) return false;
    out = *v;
    return true;
}
bool from_text(const std::string& s, std::string& out) {
    out = s;
    return true;
}
void warn_malformed(const TunableInfo& info, const char* text) {
    std::fprintf(stderr, "wanmpi: warning: %s='%s' is not a valid %s; using the default %s\n",
                 info.env.c_str(), text, info.type.c_str(), info.def.c_str());
}
}  // namespace detail

}  // namespace wanmpi::base
