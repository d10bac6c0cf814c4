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
base::Tunable<double> t_timeout(
    "MPIRUN", "TIMEOUT", 0.0,
    "Default for mpirun --timeout, in seconds (0: no limit).", base::Level::user,
    "MPIEXEC_TIMEOUT");

}  // namespace wanmpi::runtime
