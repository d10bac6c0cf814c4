// Tunables of mpirun and wanmpi-proxy (declared once here so wanmpi-info can list them by
// linking the launcher objects).
#pragma once

#include <cstdint>
#include <string>

#include "base/tunables.hpp"

namespace wanmpi::runtime {

extern base::Tunable<int64_t> t_kill_grace_ms;   // WANMPI_MPIRUN_KILL_GRACE_MS
extern base::Tunable<std::string> t_launcher;    // WANMPI_MPIRUN_LAUNCHER
extern base::Tunable<std::string> t_proxy_path;  // WANMPI_MPIRUN_PROXY
extern base::Tunable<bool> t_rank_sessions;   // WANMPI_MPIRUN_RANK_SESSIONS
extern base::Tunable<double> t_timeout;          // WANMPI_MPIRUN_TIMEOUT (alias MPIEXEC_TIMEOUT)

}  // namespace wanmpi::runtime
