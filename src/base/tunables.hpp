// Tunables registry: every knob of wanmpi is declared once, next to the code that uses it,
// typed, with a default, a one-line doc, a level and whether all ranks must agree.
//
// A tunable is read from the environment as WANMPI_<COMPONENT>_<NAME> (upper case), or from an
// alias (e.g. the IMPI_* names GridMPI users know). `wanmpi-info` prints the registry, and
// docs/tunables.md is generated from it.
//
// Lifetime/threading: declare tunables as namespace-scope statics (`static base::Tunable<...>`).
// Registration happens during static initialisation into a function-local registry (so order
// between translation units does not matter). `get()` parses the environment on first call and
// caches; it is safe to call from any thread after static initialisation.
//
// Changing a value after start: only tunables declared `runtime` (the code rereads them at each
// use, so a new value takes effect at the next call; their doc says when) may be assigned, by
// MPI_T_cvar_write (core/mpi_t.cpp), which holds the API lock while it assigns. Every other
// tunable is read once and kept (often in a function-local static), so assigning it later would
// change what wanmpi-info and MPI_T show without changing what the library does.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace wanmpi::base {

enum class Level { user, tuner, developer };
const char* level_name(Level l);

struct TunableInfo {
    std::string component;  // e.g. "P2P"
    std::string name;       // e.g. "EAGER_CREDIT"
    std::string env;        // WANMPI_P2P_EAGER_CREDIT
    std::string alias;      // optional other env name, e.g. IMPI_C_DATALEN ("" if none)
    std::string type;       // bool, int, size, double, string
    std::string def;        // default, printed form
    std::string doc;
    Level level;
    bool agree;             // every rank of a job must use the same value
    bool runtime;           // may be assigned while the job runs (MPI_T control variable write)
    // For a string tunable that takes one of a fixed set of names: the names (MPI_T shows it as
    // an enumeration). Empty for free text. Set during static initialisation only.
    std::vector<std::string> choices;
    // Current value as text (what the environment sets, or the default).
    std::string (*current)(const void* self);
    const void* self;
    // Parses `text` as this tunable's type and makes it the value; false (nothing changed) on
    // malformed text. Only for `runtime` tunables; the caller serialises against get().
    bool (*assign)(const void* self, const std::string& text);
};

// All registered tunables, sorted by env name.
std::vector<const TunableInfo*> all_tunables();
void register_tunable(const TunableInfo* info);

// Parsers shared by the typed tunables. They return nullopt on malformed text.
std::optional<bool> parse_bool(const std::string& s);
std::optional<int64_t> parse_int(const std::string& s);   // decimal, 0x.., with k/m/g (x1024) suffix
std::optional<double> parse_double(const std::string& s);
std::optional<int64_t> parse_duration_us(const std::string& s);  // "10ms", "5us", "2s", bare = us
// A link rate in bits/s, tc's units (decimal): "200mbit", "1gbit", "1.5Gbit/s", "800kbit", bare =
// bit/s; "25MBps"/"25mbyte" = bytes/s x 8. 0 is refused (callers use "" for "not set").
std::optional<double> parse_rate_bps(const std::string& s);

// Raw lookup: the env var, else the alias, else nullptr.
const char* tunable_env(const TunableInfo& info);

namespace detail {
template <class T> struct TypeName;
template <> struct TypeName<bool> { static constexpr const char* v = "bool"; };
template <> struct TypeName<int64_t> { static constexpr const char* v = "int"; };
template <> struct TypeName<double> { static constexpr const char* v = "double"; };
template <> struct TypeName<std::string> { static constexpr const char* v = "string"; };
std::string to_text(bool v);
std::string to_text(int64_t v);
std::string to_text(double v);
std::string to_text(const std::string& v);
bool from_text(const std::string& s, bool& out);
bool from_text(const std::string& s, int64_t& out);
bool from_text(const std::string& s, double& out);
bool from_text(const std::string& s, std::string& out);
void warn_malformed(const TunableInfo& info, const char* text);
}  // namespace detail

template <class T>
class Tunable {
public:
    Tunable(const char* component, const char* name, T def, const char* doc,
            Level level = Level::user, const char* alias = nullptr, bool agree = false,
            bool runtime = false)
        : def_(def) {
        info_.component = component;
        info_.name = name;
        info_.env = std::string("WANMPI_") + component + (*name ? std::string("_") + name : "");
        info_.alias = alias ? alias : "";
        info_.type = detail::TypeName<T>::v;
        info_.def = detail::to_text(def);
        info_.doc = doc;
        info_.level = level;
        info_.agree = agree;
        info_.runtime = runtime;
        info_.current = [](const void* p) {
            return detail::to_text(static_cast<const Tunable<T>*>(p)->get());
        };
        info_.self = this;
        // const_cast: only reached for `runtime` tunables, which are never declared const.
        info_.assign = [](const void* p, const std::string& text) {
            T v{};
            if (!detail::from_text(text, v)) return false;
            const_cast<Tunable<T>*>(static_cast<const Tunable<T>*>(p))->set(v);
            return true;
        };
        register_tunable(&info_);
    }
    Tunable(const Tunable&) = delete;
    Tunable& operator=(const Tunable&) = delete;

    // The value in force: environment (parsed once), else the default.
    const T& get() const {
        std::call_once(once_, [this] {
            value_ = def_;
            if (const char* s = tunable_env(info_)) {
                T v{};
                if (detail::from_text(s, v)) value_ = v;
                else detail::warn_malformed(info_, s);
            }
        });
        return value_;
    }
    // Tests and tools may override the value after start (not thread-safe against get()).
    void set(const T& v) { get(); value_ = v; }
    const TunableInfo& info() const { return info_; }
    // The names a string tunable takes (TunableInfo::choices); during static initialisation.
    void set_choices(std::vector<std::string> names) { info_.choices = std::move(names); }
    const T& default_value() const { return def_; }

private:
    TunableInfo info_;
    T def_;
    mutable std::once_flag once_;
    mutable T value_{};
};

}  // namespace wanmpi::base
