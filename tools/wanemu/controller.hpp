// The wanemu controller: `wanemu up` builds a run's namespaces, bridges, veths and TUN links,
// runs one link_engine per emulated link, writes the traffic-monitor CSV, answers control
// requests (`set`, `stats`) on a unix socket, watches its own health, and on SIGINT/SIGTERM/
// SIGHUP (or `--watch-pid` exiting) takes everything down again.
//
// Lifecycle/ownership: cmd_up() creates the run directory under the global lock and (unless
// --foreground) forks a detached controller that owns the run until teardown; the calling
// process returns once the run is ready or has failed (failure cleans up before reporting).
// cleanup_run() is the stateless clean-up used by `down` when no controller is alive
// (SIGKILL) and as the controller's last step: it kills every process in the run's namespaces,
// deletes the namespaces and removes the run directory. cmd_up, cleanup_run, control_request
// and format_hosts_table are in run.cpp; the controller (run_controller) in controller.cpp.
// Threading: the controller's main thread does all setup, the event loop and teardown; only
// the link engines run on their own threads.
#pragma once

#include <cstdint>
#include <string>

#include "state.hpp"
#include "topology.hpp"

namespace wanmpi::wanemu {

struct up_options {
    std::string name;  // run name ("" = $WANEMU_RUN or r<index>)
    bool foreground = false;
    std::string csv;       // monitor CSV path ("" = <run dir>/monitor.csv)
    std::string log;       // controller log ("" = <run dir>/log)
    int rt_priority = 50;  // 0 = no SCHED_FIFO
    int64_t spin_ns = 0;
    int watch_pid = 0;  // tear down when this process exits
    int64_t late_warn_ns = 1000000;
    bool quiet = false;
};

int cmd_up(const topology& t, const up_options& o);

// Runs the controller of run `st` in this process until the run is taken down (controller.cpp);
// ready_fd (-1: none) gets its verdict on the set-up. Called by cmd_up (run.cpp).
int run_controller(const run_state& st, const up_options& o, int ready_fd);

// Sends one request line to the run's controller and returns its reply. Throws error if the
// controller cannot be reached or answers "error: ...".
std::string control_request(const run_state& s, const std::string& request, int timeout_ms);

// Removes everything of run `name` (processes in its namespaces, the namespaces, the run dir).
// Returns a description of what was removed (empty if nothing).
std::string cleanup_run(const std::string& name);

// The host table printed by `up` and `hosts`.
std::string format_hosts_table(const run_state& s);

}  // namespace wanmpi::wanemu
