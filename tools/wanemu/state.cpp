#include "state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "common.hpp"

namespace wanmpi::wanemu {

std::string state_root() {
    const char* e = std::getenv("WANEMU_STATE_DIR");
    return (e && *e) ? e : "/run/wanemu";
}

std::string run_dir(const std::string& name) { return state_root() + "/" + name; }

std::string netns_prefix(const std::string& run) { return "wn." + run + "."; }

std::string host_netns(const std::string& run, const std::string& host) {
    return netns_prefix(run) + host;
}

std::string router_netns(const std::string& run, const std::string& cluster) {
    return netns_prefix(run) + cluster + ".rt";
}

bool valid_run_name(const std::string& s) {
    if (s.empty() || s.size() > 24) {
        return false;
    }
    for (char c : s) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
            return false;
        }
    }
    return s[0] != '-';
}

bool run_owner::alive() const {
    return process_alive(pid, start_time);
}

std::optional<run_owner> read_run_owner(const std::string& name) {
    if (!valid_run_name(name)) {
        return std::nullopt;
    }
    auto text = try_read_file(run_dir(name) + "/state");
    if (!text) {
        return std::nullopt;
    }
    run_owner o;
    for (const auto& line : split(*text, '\n')) {
        if (line == "---") {
            break;
        }
        if (starts_with(line, "pid ")) {
            o.pid = std::atoi(line.c_str() + 4);
        } else if (starts_with(line, "start_time ")) {
            o.start_time = std::strtoull(line.c_str() + 11, nullptr, 10);
        }
    }
    if (o.pid <= 0) {
        return std::nullopt;
    }
    return o;
}

void stop_controller(const run_owner& o, int timeout_ms) {
    if (!o.alive()) {
        return;
    }
    ::kill(o.pid, SIGTERM);
    int64_t deadline = now_ns() + int64_t(timeout_ms) * k_ms;
    while (o.alive() && now_ns() < deadline) {
        ::usleep(10000);
    }
    if (o.alive()) {
        std::fprintf(stderr, "wanemu: controller %d did not stop in %d ms; killing it\n", o.pid,
                     timeout_ms);
        ::kill(o.pid, SIGKILL);
        for (int i = 0; i < 500 && o.alive(); ++i) {
            ::usleep(10000);
        }
    }
}

bool run_state::controller_alive() const { return process_alive(pid, start_time); }

// State file: "key value" header lines, a "---" line, then the topology in the file format.
std::string run_state::serialize() const {
    std::string s = "wanemu-state 1\n";
    s += "name " + name + "\n";
    s += "index " + std::to_string(index) + "\n";
    s += "pid " + std::to_string(pid) + "\n";
    s += "start_time " + std::to_string(start_time) + "\n";
    s += "status " + status + "\n";
    s += "csv " + (csv.empty() ? std::string("-") : csv) + "\n";
    s += "---\n";
    s += topo.serialize();
    return s;
}

std::optional<run_state> load_run(const std::string& name) {
    if (!valid_run_name(name)) {
        return std::nullopt;
    }
    auto text = try_read_file(run_dir(name) + "/state");
    if (!text) {
        return std::nullopt;
    }
    run_state s;
    size_t sep = text->find("\n---\n");
    if (sep == std::string::npos || !starts_with(*text, "wanemu-state 1\n")) {
        throw error("corrupt state file " + run_dir(name) + "/state");
    }
    for (const auto& line : split(std::string_view(*text).substr(0, sep), '\n')) {
        size_t sp = line.find(' ');
        if (sp == std::string::npos) {
            continue;
        }
        std::string k = line.substr(0, sp), v = line.substr(sp + 1);
        if (k == "name") {
            s.name = v;
        } else if (k == "index") {
            s.index = std::atoi(v.c_str());
        } else if (k == "pid") {
            s.pid = std::atoi(v.c_str());
        } else if (k == "start_time") {
            s.start_time = std::strtoull(v.c_str(), nullptr, 10);
        } else if (k == "status") {
            s.status = v;
        } else if (k == "csv") {
            s.csv = v == "-" ? "" : v;
        }
    }
    s.topo = parse_topology(text->substr(sep + 5), run_dir(name) + "/state");
    return s;
}

void save_run(const run_state& s) { write_file_atomic(run_dir(s.name) + "/state", s.serialize()); }

std::vector<std::string> list_runs() {
    std::vector<std::string> out;
    DIR* d = ::opendir(state_root().c_str());
    if (!d) {
        return out;
    }
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == ".." || n[0] == '.' || !valid_run_name(n)) {
            continue;
        }
        struct stat st;
        if (::stat((state_root() + "/" + n).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            out.push_back(n);
        }
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

run_state resolve_run(const std::string& name_opt) {
    std::string name = name_opt;
    if (name.empty()) {
        const char* e = std::getenv("WANEMU_RUN");
        if (e && *e) {
            name = e;
        }
    }
    if (!name.empty()) {
        auto s = load_run(name);
        if (!s) {
            throw error("no run named '" + name + "' (see `wanemu list`)");
        }
        return *s;
    }
    std::vector<run_state> live;
    for (const auto& n : list_runs()) {
        try {
            auto s = load_run(n);
            if (s && s->controller_alive()) {
                live.push_back(*s);
            }
        } catch (const error&) {
        }
    }
    if (live.empty()) {
        throw error("no wanemu run is up (start one with `wanemu up`)");
    }
    if (live.size() > 1) {
        std::string names;
        for (const auto& s : live) {
            names += " " + s.name;
        }
        throw error("several runs are up (" + std::string(trim(names)) +
                    "): choose one with --name or WANEMU_RUN");
    }
    return live[0];
}

run_lock::run_lock() {
    std::string root = state_root();
    if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
        throw_errno("cannot create " + root);
    }
    fd_ = ::open((root + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        throw_errno("cannot open " + root + "/.lock");
    }
    while (::flock(fd_, LOCK_EX) != 0) {
        if (errno != EINTR) {
            throw_errno("flock " + root + "/.lock");
        }
    }
}

run_lock::~run_lock() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

}  // namespace wanmpi::wanemu
