// PMI-1 server logic of mpirun: the job's key-value space, the barrier and the per-rank protocol
// state. Transport-free: mpirun feeds it the lines that arrive from each rank (over the rank's
// PMI_FD socket, or relayed by a wanmpi-proxy) and it answers through a send callback, so it can be
// unit-tested without processes.
//
// Replies follow Hydra (MPICH 4.0) byte for byte where it matters to clients, so MPICH's own PMI
// client works against it too:  "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
// "cmd=get_result rc=0 msg=success value=V" / "cmd=get_result rc=-1 msg=key_K_not_found
// value=unknown", "cmd=barrier_out", ...
// Extension: when a rank has exited, a barrier can never complete, so the ranks waiting in it get
// "cmd=barrier_out rc=-1 msg=..." (wanmpi's client turns that into an error; others ignore rc).
//
// One instance per job, used from mpirun's single event-loop thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace wanmpi::runtime {

struct PmiJobInfo {
    int size = 1;
    std::string kvsname;
    int appnum = 0;
    int universe_size = -1;
    // Value of the predefined key PMI_process_mapping, MPICH's node map:
    // "(vector,(first_node,node_count,ranks_per_node),...)"; empty: not provided.
    std::string process_mapping;
    // Buffer sizes including the NUL, as in MPICH (Hydra: 256, 64, 1024). The value limit is
    // larger than Hydra's so the library can put more per key when it runs under mpirun; MPICH's
    // own client clamps it to its line buffer.
    int kvsname_max = 256;
    int keylen_max = 64;
    int vallen_max = 16384;
};

// "(vector,(0,2,4),(2,1,3))" for ranks laid out in contiguous blocks of the given sizes per node.
std::string pmi_process_mapping(const std::vector<int>& ranks_per_node);

class PmiServer {
public:
    // Sends one complete line (ending in '\n') to the given rank.
    using SendFn = std::function<void(int rank, const std::string& line)>;

    struct Event {
        enum Kind {
            none,
            abort,           // the rank called PMI abort: code + message
            protocol_error,  // the rank broke the protocol: message says how; kill the job
            barrier_failed,  // a barrier was answered rc=-1 because a rank is gone
        };
        Kind kind = none;
        int code = 0;         // abort: the exit code; barrier_failed: the number of ranks waiting
        int culprit = -1;     // barrier_failed: the first rank that is gone
        std::string message;  // abort: the rank's message; barrier_failed: how the culprit went
    };

    PmiServer(PmiJobInfo info, SendFn send);

    // One line from `rank` (with or without the '\n').
    Event on_line(int rank, std::string_view line);
    // The rank's process is gone ("how": "exited with code 0", ...). Ranks waiting in a barrier,
    // now or later, get barrier_out rc=-1; returns how many were waiting now.
    int on_rank_gone(int rank, const std::string& how);

    bool initialized(int rank) const { return ranks_[rank].initialized; }
    bool finalized(int rank) const { return ranks_[rank].finalized; }
    bool in_barrier(int rank) const { return ranks_[rank].in_barrier; }
    int barrier_waiting() const { return waiting_; }
    const PmiJobInfo& info() const { return info_; }
    size_t kvs_size() const { return kvs_.size(); }

private:
    struct RankState {
        bool initialized = false;
        bool finalized = false;
        bool in_barrier = false;
        bool gone = false;
        bool in_mcmd = false;  // swallowing a multi-line "mcmd=spawn ... endcmd"
        std::string gone_how;
    };
    void reply(int rank, const std::string& line) { send_(rank, line); }
    void fail_barrier();

    PmiJobInfo info_;
    SendFn send_;
    std::vector<RankState> ranks_;
    std::map<std::string, std::string> kvs_;
    int waiting_ = 0;
    int first_gone_ = -1;  // barriers can no longer complete once a rank is gone
};

}  // namespace wanmpi::runtime
