// mpirun's command line, host lists and rank placement. Pure functions (no processes), so the
// parsing rules are unit-tested on their own.
#pragma once

#include <string>
#include <vector>

#include "base/status.hpp"

namespace wanmpi::runtime {

struct HostSpec {
    std::string name;
    int slots = 1;
    bool slots_given = false;
};

struct LaunchOptions {
    int np = -1;                       // -n/-np; -1: not given
    std::vector<HostSpec> hosts;       // --host and --hostfile, merged by name, in first-seen order
    std::string launcher = "ssh";      // --launcher-exec, split into words by split_command()
    std::vector<std::string> env_names;  // -x NAME: forward mpirun's value
    std::vector<std::string> env_set;    // -x NAME=value, -genv NAME value: "NAME=value"
    double timeout_s = 0;              // --timeout; 0: none
    bool tag_output = false;
    bool auto_cleanup = true;          // --disable-auto-cleanup clears it
    bool help = false;
    bool version = false;
    std::string wdir;                  // --wdir; "": mpirun's working directory
    // -client ID ADDR:PORT (IMPI, GridMPI's spelling): this cluster is client ID (0..31) of a job
    // whose impi-server listens at ADDR:PORT. The parser also appends WANMPI_IMPI_CLIENT=ID and
    // WANMPI_IMPI_SERVER=ADDR:PORT to env_set, so every rank (local or remote) gets them.
    int impi_client = -1;
    std::string impi_server;
    std::vector<std::string> program;  // program and its arguments
};

// Parses args (without argv[0]). Defaults that come from the environment (MPIEXEC_TIMEOUT,
// WANMPI_MPIRUN_LAUNCHER) must be set in *o by the caller before. Hostfiles are read here.
// Errors are usage errors with a message for the user.
base::Status parse_launch_options(const std::vector<std::string>& args, LaunchOptions* o);

// "h1:2,h2" (a host without ":N" has one slot).
base::Status parse_host_list(const std::string& s, std::vector<HostSpec>* out);
// Hostfile lines: "host", "host:N", "host slots=N [max_slots=M]"; '#' starts a comment.
base::Status parse_hostfile_text(const std::string& text, const std::string& fname,
                                 std::vector<HostSpec>* out);
// Adds hosts, merging repeated names by adding their slots (Open MPI: "-host a,a,b" = a:2,b:1).
void merge_hosts(std::vector<HostSpec>* into, const std::vector<HostSpec>& add);

struct Placement {
    std::string host;
    bool local = false;
    int first_rank = 0;
    int count = 0;
};
// Ranks are placed in contiguous blocks: host 1's slots first, then host 2's, ... If np exceeds
// the slots, every host gets extra ranks in turn (oversubscription), still contiguous. Hosts that
// get no rank are left out. No hosts: everything on this host.
std::vector<Placement> place_ranks(const std::vector<HostSpec>& hosts, int np);

// localhost, 127.x, ::1, this machine's host name (full or short), or one of its addresses.
bool is_local_host(const std::string& name);

// Split a command like a shell would for simple cases: words separated by blanks, '...' and
// "..." quoting, backslash escapes. Fails on an unterminated quote.
base::Status split_command(const std::string& s, std::vector<std::string>* words);

// Quote a word for a POSIX shell if it needs it (for commands run through ssh).
std::string shell_quote(const std::string& w);

}  // namespace wanmpi::runtime
