// Small process helpers shared by mpirun and wanmpi-proxy.
#pragma once

#include <string>

namespace wanmpi::runtime {

// Make sure fds 0, 1 and 2 are open (on /dev/null if not), so pipes and sockets we create never
// take those numbers.
void ensure_std_fds();
// Block the signals the launcher handles through a signalfd (SIGCHLD, SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGUSR1, SIGUSR2), ignore SIGPIPE/SIGTTIN/SIGTTOU, and return the signalfd (-1 on
// error). Children reset all of this before exec (local_ranks.cpp).
int setup_signalfd();
// "exited with code 2", "killed by signal 9 (Killed)", "killed by signal 11 (Segmentation
// fault), core dumped".
std::string describe_wait_status(int wstatus);
// Exit code mirroring a wait status: the code, or 128 + signal.
int exit_code_of(int wstatus);
// "SIGINT"-style name plus description: "2 (Interrupt)".
std::string signal_text(int sig);
// Directory of the running executable (from /proc/self/exe), "" if unknown.
std::string self_exe_dir();
std::string host_name();

}  // namespace wanmpi::runtime
