// Per-connection statistics of the inter-cluster link: what wanmpi counted (bytes and messages
// each way) and what the kernel knows (TCP_INFO: retransmissions, timeouts, RTT, window,
// delivery and pacing rate). TCP_INFO is one getsockopt, read when asked (at MPI_Finalize for
// WANMPI_WAN_STATS), never per message; the counters are plain adds on the send/receive path.
// MPI_T reads the same records, summed per rank, as the wan_link_* performance variables
// (core/mpi_t_pvar.cpp).
//
// Threading: read_tcp_info is thread-safe; a LinkCounters belongs to its connection's owner.
#pragma once

#include <cstdint>
#include <string>

namespace wanmpi::wanlink {

struct LinkCounters {
    uint64_t bytes_sent = 0, bytes_recv = 0;  // everything written/read on the socket
    uint64_t msgs_sent = 0, msgs_recv = 0;    // packets (IMPI: one per header)
    // Compression (compress.hpp): payload bytes that went compressed, before and after, each
    // way (bytes_sent/_recv count the compressed ones).
    uint64_t z_raw_sent = 0, z_sent = 0, z_raw_recv = 0, z_recv = 0;
    // Small messages on two lanes (core/wan.cpp twice_lane): copies queued on this lane, and
    // copies that arrived second on it and were dropped.
    uint64_t twice_sent = 0, twice_dropped = 0;
    // Connections of this lane replaced after a break or a stall (core/wan_link.cpp), and the
    // bytes resent on the new ones from the send log: what TCP_INFO of the current socket no
    // longer counts.
    uint64_t reconnects = 0, resent_bytes = 0;
};

struct TcpInfo {
    bool ok = false;           // false: the socket is closed or TCP_INFO failed
    uint32_t retrans = 0;      // tcpi_total_retrans: segments retransmitted, whole life
    uint32_t dsack_dups = 0;   // tcpi_dsack_dups: segments the peer reported received twice
    uint32_t rtos = 0;         // tcpi_total_rto (Linux >= 6.7): timeouts, whole life
    bool has_rtos = false;     // the kernel reported tcpi_total_rto
    uint32_t rtt_us = 0, rttvar_us = 0, min_rtt_us = 0;
    uint32_t cwnd = 0, mss = 0;
    uint64_t delivery_Bps = 0; // tcpi_delivery_rate, bytes/s (last sample)
    uint64_t pacing_Bps = 0;   // tcpi_pacing_rate
    uint64_t max_pacing_Bps = 0;  // tcpi_max_pacing_rate (SO_MAX_PACING_RATE; ~0 unlimited)
    uint64_t bytes_retrans = 0;
    uint32_t rto_us = 0;       // current RTO
    // The connection's state now (the stall watch, core/wan_link.cpp): segments sent and not
    // yet acknowledged, and ms since the last ACK came and since new data last went out.
    uint32_t unacked = 0;
    uint32_t last_ack_ms = 0, last_send_ms = 0;
};

TcpInfo read_tcp_info(int fd);

// Whether a link lost segments, from its connections' TCP_INFO counters summed (core/wan.cpp
// Wan::lossy, which turns WANMPI_WAN_TWICE=auto on). A retransmission is not always a loss: on a
// short link a burst's tail waits for the receiver's delayed ACK longer than the sender's
// tail-loss probe timeout (2 RTT), so TCP resends a segment that arrived, and the receiver then
// reports it twice-received with a D-SACK (tcpi_dsack_dups) about one RTT later. Every job on a
// lossless emulated link had such probes. So the losses are the retransmissions counted at the
// previous check minus every D-SACK counted by now: a rule that lags one check (at least 100 ms,
// more than the round trip of the links wanmpi is for) and sees a spurious retransmission as
// none. A segment lost and then retransmitted has no D-SACK and counts. When either sum drops (a
// connection replaced or down: its successor's counters start at 0) the baseline starts again,
// with no loss reported for that check.
// Threading: a LossWatch belongs to its link's owner.
class LossWatch {
public:
    // The sums now; true when the losses grew since the last call.
    bool update(uint64_t retrans, uint64_t dsack_dups);
    uint64_t losses() const { return lost_; }

private:
    uint64_t prev_retrans_ = 0, prev_dsack_ = 0, lost_ = 0;
};

// One CSV/table row's worth of a connection end, as WANMPI_WAN_STATS prints it.
struct LinkStat {
    int rank = -1, peer_rank = -1, peer_cluster = -1;
    int lane = 0;  // the connection's lane in its link (issue 14): one row per lane
    std::string host, peer_host, cc;
    LinkCounters c;
    TcpInfo tcp;
};
// The CSV header and one row, in the order of the header (bench/compare-pacing.sh reads them):
// rank,host,peer_rank,peer_host,peer_cluster,cc,bytes_sent,bytes_recv,msgs_sent,msgs_recv,
// retrans,rtos,rtt_us,delivery_bps,pacing_bps,z_raw_sent,z_sent,z_raw_recv,z_recv,lane,
// twice_sent,twice_dropped,reconnects,resent_bytes
// (rates in bits/s; rtos empty when unknown)
std::string csv_header();
std::string csv_row(const LinkStat& s);
// Parses csv_row's output back (rank 0 gathers rows as text). False on malformed input.
bool parse_csv_row(const std::string& line, LinkStat* out);

}  // namespace wanmpi::wanlink
