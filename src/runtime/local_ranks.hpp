// Starting and watching the ranks of this host: used by mpirun for local ranks and by
// wanmpi-proxy for the ranks of its host.
//
// Each rank is fork/exec'ed into its own session and process group (so a whole rank, shell
// wrappers and their children included, can be signalled at once, and a terminal's ^C reaches
// only mpirun, which forwards it), with PR_SET_PDEATHSIG=SIGKILL (if mpirun or the proxy is
// SIGKILLed, the rank dies with it), a PMI_FD socketpair, stdout/stderr pipes and stdin from a
// pipe (rank 0) or /dev/null. The signal mask and the dispositions the launcher changed are reset
// before exec.
//
// Output and PMI lines are delivered through callbacks as they arrive. When the owner reports the
// rank's exit (on_child_exit, from its SIGCHLD handling), the PMI socket and the output pipes are
// drained first, so that an abort message or the last lines are never lost, and then `exited`
// runs.
//
// Single-threaded: all calls and callbacks on the EventLoop's thread. The owner must block
// SIGCHLD (signalfd) and reap with waitpid(); this class never calls waitpid(-1).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include "base/status.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/pmi_wire.hpp"

namespace wanmpi::runtime {

struct RankSpawn {
    int rank = 0;
    int size = 1;
    int local_rank = 0;
    int local_size = 1;
    std::vector<std::string> argv;
    std::vector<std::string> env;  // the complete environment, "NAME=value"
    std::string cwd;               // "" = the launcher's
    bool stdin_pipe = false;       // true: fed by stdin_write(); false: /dev/null
};

// env with `set` applied ("NAME=value" entries replace or add) and `unset` names removed.
std::vector<std::string> merge_env(const std::vector<std::string>& env,
                                   const std::vector<std::string>& set,
                                   const std::vector<std::string>& unset = {});
std::vector<std::string> current_environment();

class LocalRanks {
public:
    struct Callbacks {
        std::function<void(int rank, std::string line)> pmi_line;
        // stream: 1 stdout, 2 stderr
        std::function<void(int rank, int stream, const char* data, size_t n)> output;
        // The rank's PMI connection sent a line longer than the limit.
        std::function<void(int rank)> pmi_overflow;
        // After the last output and PMI line of the rank. wstatus as from waitpid().
        std::function<void(int rank, int wstatus)> exited;
    };

    LocalRanks(EventLoop& loop, Callbacks cb, size_t max_pmi_line = 65536);
    ~LocalRanks();

    // Fork and exec. Fails (with the exec errno in the message, e.g. "cannot execute './a.out':
    // No such file or directory") if the program could not be started; the child is then reaped.
    base::Status spawn(const RankSpawn& s, pid_t* pid);
    // Called by the owner for every reaped child; false if pid is not one of our ranks.
    bool on_child_exit(pid_t pid, int wstatus);

    // Queue a PMI line (with '\n') for the rank; dropped if the rank is gone.
    void send_pmi(int rank, std::string_view line);
    void stdin_write(int rank, std::string_view data);
    void stdin_close(int rank);  // after the queued bytes
    size_t stdin_pending(int rank) const;
    bool stdin_open(int rank) const;

    // Signal the process group of every rank that has not been reaped yet.
    void signal_alive(int sig);
    // Signal the process group of every rank ever started (catches leftovers of exited ranks).
    void signal_all_groups(int sig);
    int alive() const { return alive_; }
    bool is_alive(int rank) const;
    pid_t pid_of(int rank) const;
    // Stop / resume reading stdout and stderr (back-pressure when the consumer is slow).
    void set_output_paused(bool paused);

private:
    struct Proc;
    void on_pmi(Proc& p, uint32_t events);
    void on_out(Proc& p, int stream, uint32_t events);
    void on_stdin(Proc& p, uint32_t events);
    void flush_pmi(Proc& p);
    void flush_stdin(Proc& p);
    bool read_pmi(Proc& p);           // false on EOF/error (fd closed)
    bool read_out(Proc& p, int stream, size_t budget);  // false on EOF/error
    void close_fd(int* fd);
    Proc* find(int rank) const;

    EventLoop& loop_;
    Callbacks cb_;
    size_t max_pmi_line_;
    std::map<int, std::unique_ptr<Proc>> procs_;  // by rank
    std::map<pid_t, int> by_pid_;
    int alive_ = 0;
    bool paused_ = false;
};

}  // namespace wanmpi::runtime
