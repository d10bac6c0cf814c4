// The WAN rate model (issue 12; DESIGN.md "Traffic control and TCP"): what this rank may send
// across the WAN, and the GridMPI-compatible attributes that read and set it.
//
//   MAXRATE  the bandwidth of this cluster's link to the others (WANMPI_WAN_RATE), shared by
//            the cluster's sending hosts; unknown when the variable is not set.
//   MATB     this rank's limit (GridMPI's "maximum allowed transmission bandwidth"). Default:
//            MAXRATE divided among the ranks of this host (the host's share, split so the
//            aggregate stays within it); unlimited when MAXRATE is unknown. A put of the
//            WANMPI_MATB attribute sets it (GridMPI semantics: a put that acts); 0 restores
//            the default. Rate-managed collectives set MAXRATE / senders for the duration of
//            the call and restore the previous value after it.
// Attribute values are ints in Kbytes/s (1 Kbyte = 1000 bytes, GridMPI's unit), on the wire
// (TCP/IP headers included), like the rate.
//
// WANMPI_WAN_ADAPT=off: no default MATB and no collective pacing; an application's own put
// still acts (it is the program's request, not a tuning).
//
// Threading: under the API lock (attribute calls, collectives, MPI_Finalize).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace wanmpi::core {

// After the wan route exists (engine_init): applies the default MATB.
void wan_rate_init();
// Kbytes/s, or -1 when unknown (the attribute is then absent).
int wan_maxrate_kBps();
// This rank's current MATB in Kbytes/s, or -1 when unlimited and never set (absent).
int wan_matb_kBps();
// Sets MATB (Kbytes/s; 0 = back to the default). MPI_SUCCESS or an error code (not raised).
int wan_set_matb_kBps(long v);

// How a rate-managed collective shares the cluster's link (coll/impi.cpp decides):
//   senders  ranks of the caller's cluster sending across the WAN at once (0: not managed);
//   flows    the remote ranks the caller sends to at once (its budget is split among them);
//   index    the caller's place among its cluster's senders (0..senders-1), which staggers the
//            first packets of the call's flows (WanTransport::stagger);
//   share    the caller's fraction of the link, in (0, 1]: work-conserving shares, its WAN
//            bytes over its cluster's for the call, so that every sender of the cluster
//            finishes at the same time; 0: equal shares, 1 / senders;
//   peer_bytes  (world rank, bytes the call sends it across the WAN): the rank's budget is split
//            among its sockets in proportion (WanTransport::set_weights); empty: equal parts.
struct WanShare {
    int senders = 0;
    int flows = 1;
    int index = 0;
    double share = 0;
    std::vector<std::pair<int, uint64_t>> peer_bytes;
};

// A rate-managed collective: for its duration this rank's limit is MAXRATE x its share (see
// WanShare), spread over `flows` sockets. A no-op when MAXRATE is unknown, adaptation is off,
// senders <= 0, or the job has one cluster.
class WanPhase {
public:
    explicit WanPhase(const WanShare& s);
    ~WanPhase();
    WanPhase(const WanPhase&) = delete;
    WanPhase& operator=(const WanPhase&) = delete;

private:
    bool active_ = false;
    bool weighted_ = false;
    unsigned long long saved_ = 0;
    int saved_flows_ = 1;
};

// WANMPI_WAN_STATS: collective over MPI_COMM_WORLD, at the start of MPI_Finalize (MPI still
// works). Every rank sends its connections' rows to rank 0, which prints the table (=1) or
// writes the CSV (=FILE). Returns MPI_SUCCESS; problems are logged, never fatal.
int wan_stats_report();

}  // namespace wanmpi::core
