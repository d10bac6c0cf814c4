// The IMPI part of MPI_Init for one rank, over the cluster's bootstrap key-value space
// (docs/design/impi.md "Start-up"): every rank is its own IMPI host (GridMPI style).
//
//   1. every rank opens its host socket (open_listener) and puts "<p>-host-<rank>" =
//      "addr:port:pid" (or "!<base64 error>" if it could not), then fence;
//   2. KVS rank 0, the cluster's agent, reads all of them, builds the ClusterTables (one host
//      per rank, proc ids from make_proc_id), runs the Agent with impi-server, and puts the job
//      (encode_job, split by kvs_put_long under "<p>-job") or "<p>-error" = base64 message;
//      then fence;
//   3. every rank decodes the job (decode_job re-runs every check), derives its world rank and
//      host rank, and dances with every other host; the listener is closed afterwards. The
//      agent watches its impi-server connection meanwhile: a LOST notice or a close (another
//      cluster died) fails its dance at once, naming the lost client.
// A failure anywhere becomes the same error on every rank of the cluster (no rank waits on a
// fence that will not come). Two fences in total.
//
// Threading: call from the thread that runs MPI_Init, collectively on every rank of the cluster.
// Ownership: the result owns the host connections and, on KVS rank 0, the Agent, whose
// server_fd() the progress engine watches and whose fini() it calls at the end of MPI_Finalize
// (after this cluster's ranks have all finished with the other clusters).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/kvs.hpp"
#include "base/socket.hpp"
#include "base/status.hpp"
#include "runtime/impi_agent.hpp"
#include "runtime/impi_dance.hpp"
#include "runtime/impi_tables.hpp"
#include "wanlink/secret.hpp"
#include "wanlink/tls.hpp"

namespace wanmpi::impi {

struct StartupOptions {
    AgentConfig agent;      // client rank, server, auth, timeouts
    ClusterTables values;   // client values (versions, datalen, ...); hosts/procs are filled in
    ListenConfig listen;
    DanceConfig dance;
    std::string key_prefix = "impi";
};
// Everything from the environment: agent_config_from_env, client_values, listen_config_from_env,
// dance_config_from_env. *enabled is false (status ok) when the job is not an IMPI job
// (WANMPI_IMPI_SERVER unset). The caller then sets values.tag_ub to the engine's MPI_TAG_UB.
base::Status startup_options_from_env(StartupOptions* out, bool* enabled);

struct Startup {
    Job job;
    // Security between clusters (wanlink/secret.hpp, docs/security.md) and what each
    // connection settled in its link handshake (by global host; ext=false: plain IMPI).
    wanlink::Security security = wanlink::Security::none;
    LinkSetup link;
    std::vector<LinkResult> links;
    std::vector<std::unique_ptr<wanlink::Tls>> tls;  // by global host, for links with tls
    // The host socket stays open after the dance for reconnects (WANMPI_WAN_RECONNECT_S).
    base::Fd listener;
    int client = 0;               // this cluster's client rank
    int rank = 0;                 // MPI_COMM_WORLD rank = job.clients[client].first_rank + PMI rank
    int host = 0;                 // global host rank (job.hosts[host])
    std::vector<base::Fd> conns;  // connected socket per global host; empty at `host`
    std::unique_ptr<Agent> agent; // KVS rank 0 only
};

base::Status startup(base::Kvs& kvs, const StartupOptions& opt, Startup* out);

// The pieces startup() is made of, for a caller that wants to merge the fences with its own.
// "addr:port:pid" of one rank's host.
std::string host_advert(const Listener& l, int64_t pid);
// Builds the cluster's tables from every rank's advert (in PMI rank order); `values` gives the
// client values. Fails on a malformed advert, naming the rank.
base::Status tables_from_adverts(const std::vector<std::string>& adverts,
                                 const ClusterTables& values, ClusterTables* out);

}  // namespace wanmpi::impi
