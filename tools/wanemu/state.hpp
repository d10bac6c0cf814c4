// wanemu run state: each run has a directory /run/wanemu/<name>/ (root overridable with
// WANEMU_STATE_DIR) holding `state` (who controls the run and its topology), the control
// socket `ctl`, per-cluster hosts files, the controller's `log` and, by default, the monitor CSV.
// Every other command (hosts, exec, set, stats, down) finds the run through this directory.
//
// Lifecycle/ownership: `wanemu up` creates the directory under the global lock, the controller
// keeps `state` current, and teardown (`down`, a signal, or `down --all` after SIGKILL) removes
// it last, after the namespaces are gone, so a run is never forgotten while it owns something.
// Threading: functions here are called from the CLI and from the controller's main thread only.
// Concurrency between processes is handled with flock() on <root>/.lock (see run_lock).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology.hpp"

namespace wanmpi::wanemu {

std::string state_root();
std::string run_dir(const std::string& name);
// Network namespace names: hosts "wn.<run>.<host>", cluster routers "wn.<run>.<cluster>.rt".
// The per-run prefix "wn.<run>." lets `down --all` find what a dead controller left behind.
std::string netns_prefix(const std::string& run);
std::string host_netns(const std::string& run, const std::string& host);
std::string router_netns(const std::string& run, const std::string& cluster);

struct run_state {
    std::string name;
    int index = 0;
    int pid = 0;              // controller
    uint64_t start_time = 0;  // controller's start time (pid-reuse guard)
    std::string status;       // starting | running | stopping
    std::string csv;          // monitor output ("" = off)
    topology topo;

    bool controller_alive() const;
    address_plan plan() const { return address_plan{index}; }
    std::vector<host_info> hosts() const { return make_hosts(topo, plan()); }
    std::string serialize() const;
};

std::optional<run_state> load_run(const std::string& name);  // nullopt if no such run

// Who controls a run, read from the state file's header only, so that it is known even when
// the rest of the file cannot be parsed.
struct run_owner {
    int pid = 0;
    uint64_t start_time = 0;
    bool alive() const;
};
std::optional<run_owner> read_run_owner(const std::string& name);
// Stops a controller: SIGTERM, wait up to timeout_ms, then SIGKILL. No-op if it is not alive.
void stop_controller(const run_owner& o, int timeout_ms);
void save_run(const run_state& s);

// All run names with a state directory.
std::vector<std::string> list_runs();

// Picks the run for commands other than `up`: --name, else $WANEMU_RUN, else the only live run.
run_state resolve_run(const std::string& name_opt);

bool valid_run_name(const std::string& s);

// Exclusive flock on <root>/.lock for the life of the object.
class run_lock {
public:
    run_lock();
    ~run_lock();
    run_lock(const run_lock&) = delete;
    run_lock& operator=(const run_lock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace wanmpi::wanemu
