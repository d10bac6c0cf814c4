#include "runtime/launcher_tunables.hpp"

namespace wanmpi::runtime {

base::Tunable<int64_t> t_kill_grace_ms(
    "MPIRUN", "KILL_GRACE_MS", 1000,
    "When mpirun takes a job down, milliseconds between SIGTERM and SIGKILL to the ranks.");
base::Tunable<std::string> t_launcher(
    "MPIRUN", "LAUNCHER", "ssh",
    "Remote-exec agent for hosts other than this one, called as AGENT HOST COMMAND... "
    "(default of --launcher-exec).");
base::Tunable<std::string> t_proxy_path(
    "MPIRUN", "PROXY", "",
    "Path of wanmpi-proxy on remote hosts; empty: the wanmpi-proxy next to mpirun.",
    base::Level::tuner);
base::Tunable<bool> t_rank_sessions(
    "MPIRUN", "RANK_SESSIONS", false,
    "Start every rank in a session of its own (setsid), as MPICH's Hydra does, instead of in "
    "mpirun's session. With the kernel's scheduler autogroups (Debian's default) the CPU is "
    "shared fairly between sessions first: on a host busy with other users' work a job in one "
    "session gets one share, a job with a session per rank one share per rank (NPB BT-like "
    "exchanges at 4 ranks: 0.7x the time, docs/benchmarks.md). The cost: a waiting rank's "
    "sched_yield() then no longer hands its core to a peer, so on a host with more ranks than "
    "cores small messages wait for the scheduler (8 B Alltoall at 4 ranks on 2 cores: 10 us -> "
    "2 ms). Off: one session for the job.",
    base::Level::user);
base::Tunable<double> t_timeout(
    "MPIRUN", "TIMEOUT", 0.0,
    "Default for mpirun --timeout, in seconds (0: no limit).", base::Level::user,
    "MPIEXEC_TIMEOUT");

}  // namespace wanmpi::runtime
