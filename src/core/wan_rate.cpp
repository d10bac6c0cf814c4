#include "core/wan_rate.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mpi.h>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "base/tunables.hpp"
#include "core/engine_impl.hpp"
#include "core/errors.hpp"
#include "core/wan.hpp"
#include "wanlink/tcp_tune.hpp"

// The collectives' entry points, for the statistics gather at MPI_Finalize: core sits below
// src/coll, so they are referenced weakly (tools that link core alone, like wanmpi-info, have
// none and never report). Asm labels keep them apart from mpi.h's declarations.
extern "C" {
int wanmpi_gather(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, int, MPI_Comm)
    __asm__("PMPI_Gather") __attribute__((weak));
int wanmpi_gatherv(const void*, int, MPI_Datatype, void*, const int*, const int*, MPI_Datatype,
                   int, MPI_Comm) __asm__("PMPI_Gatherv") __attribute__((weak));
}

namespace wanmpi::core {

namespace {

base::Tunable<std::string> t_stats(
    "WAN", "STATS", "",
    "Statistics of every connection between clusters at MPI_Finalize (rank 0 gathers them): "
    "1 prints a table on rank 0's stderr (bytes, messages, retransmissions, RTOs, RTT, "
    "delivery and pacing rate, congestion control); a path writes them as CSV to that file "
    "instead. Empty or 0: none.",
    base::Level::user);

uint64_t g_default = 0;  // bytes/s: the default MATB (0 = unlimited)
uint64_t g_matb = 0;     // bytes/s in force outside phases
bool g_put = false;      // the application set MATB

uint64_t rate_Bps() { return wanlink::wan_rate_Bps(); }
bool multi_cluster() { return g && g->wan && g->nclusters > 1; }
void apply(uint64_t v) {
    if (g && g->wan) g->wan->set_rate(v, 1);
}
int to_kBps(uint64_t Bps) {
    return int(std::min<uint64_t>((Bps + 500) / 1000, uint64_t(INT32_MAX)));
}

}  // namespace

void wan_rate_init() {
    // The attributes read the same in a one-cluster job; only a job with a WAN applies them.
    const uint64_t rate = rate_Bps();
    if (rate && wanlink::adapt_enabled()) {
        // Ranks of this host (host ids are per cluster and host, engine.cpp).
        const int local = std::max<int>(
            1, int(std::count(g->host_of.begin(), g->host_of.end(), g->host_of[size_t(g->rank)])));
        g_default = rate / uint64_t(local);
    }
    g_matb = g_default;
    if (!multi_cluster()) return;
    apply(g_matb);
    if (g_default)
        WANMPI_LOG(debug, "WAN pacing: MAXRATE %llu B/s, this rank's MATB %llu B/s",
                   (unsigned long long)rate, (unsigned long long)g_matb);
}

int wan_maxrate_kBps() {
    uint64_t r = rate_Bps();
    return r ? to_kBps(r) : -1;
}

int wan_matb_kBps() {
    if (g_matb) return to_kBps(g_matb);
    return rate_Bps() || g_put ? 0 : -1;  // 0: unlimited although a rate is known or was put
}

int wan_set_matb_kBps(long v) {
    if (v < 0)
        return make_error(MPI_ERR_ARG, "WANMPI_MATB: %ld Kbytes/s is negative (0 restores the "
                                       "default)", v);
    g_put = v > 0;
    g_matb = v > 0 ? uint64_t(v) * 1000 : g_default;
    if (multi_cluster()) apply(g_matb);
    return MPI_SUCCESS;
}

WanPhase::WanPhase(const WanShare& s) {
    const int senders = s.senders, flows = s.flows, index = s.index;
    if (senders <= 0 || !multi_cluster() || !wanlink::adapt_enabled()) return;
    const uint64_t rate = rate_Bps();
    if (!rate) return;
    active_ = true;
    saved_ = g->wan->rate();
    saved_flows_ = g->wan->flows();
    const uint64_t budget = s.share > 0 && s.share <= 1
                                ? std::max<uint64_t>(1, uint64_t(double(rate) * s.share))
                                : rate / uint64_t(senders);
    if (!s.peer_bytes.empty()) {
        weighted_ = true;
        g->wan->set_weights(s.peer_bytes);
    }
    g->wan->set_rate(budget, flows);
    // Every flow's first packets leave unpaced (TCP sends at least two segments at once, and
    // nothing is paced before a connection's tenth), so S senders x F flows starting together
    // put 2SF packets into the bottleneck queue at once: 32 into a 20-packet queue at 4 x 4.
    // Slots of two full packets at the link rate, one per flow, in cluster-wide order: at most
    // S x F x 24 us at 1 Gbit/s before the last flow may start.
    if (flows > 1 || senders > 1) {
        const int64_t slot = int64_t(2 * 1500 * 1e9 / double(rate));
        g->wan->stagger(int64_t(index) * slot, int64_t(senders) * slot);
    }
}

WanPhase::~WanPhase() {
    if (!active_ || !g || !g->wan) return;
    if (weighted_) g->wan->set_weights({});
    g->wan->set_rate(saved_, saved_flows_);
}

namespace {

std::string mb(uint64_t bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", double(bytes) / 1e6);
    return b;
}
std::string mbit(uint64_t bps) {
    char b[32];
    if (!bps) return "-";
    std::snprintf(b, sizeof b, "%.1f", double(bps) / 1e6);
    return b;
}

void print_table(FILE* f, const std::vector<wanlink::LinkStat>& rows) {
    std::fprintf(f, "[wanmpi] WAN statistics (%zu connection ends; rates in Mbit/s, RTT in ms)\n",
                 rows.size());
    std::fprintf(f, "%5s %-16s %5s %-16s %3s %-6s %10s %10s %8s %8s %7s %5s %7s %8s %8s\n", "rank",
                 "host", "peer", "peer host", "cl", "cc", "sent MB", "recv MB", "msgs out",
                 "msgs in", "retrans", "rtos", "rtt", "deliv", "pacing");
    uint64_t retr = 0, rtos = 0, sent = 0, zraw = 0, zsent = 0, twice = 0, dropped = 0;
    uint64_t replaced = 0, resent = 0;
    std::vector<std::string> ccs;
    for (const auto& r : rows) {
        char rtt[16];
        std::snprintf(rtt, sizeof rtt, "%.2f", r.tcp.rtt_us / 1000.0);
        std::fprintf(f, "%5d %-16s %5d %-16s %3d %-6s %10s %10s %8llu %8llu %7u %5s %7s %8s %8s\n",
                     r.rank, r.host.c_str(), r.peer_rank, r.peer_host.c_str(), r.peer_cluster,
                     r.cc.c_str(), mb(r.c.bytes_sent).c_str(), mb(r.c.bytes_recv).c_str(),
                     (unsigned long long)r.c.msgs_sent, (unsigned long long)r.c.msgs_recv,
                     r.tcp.retrans, r.tcp.has_rtos ? std::to_string(r.tcp.rtos).c_str() : "?",
                     rtt, mbit(r.tcp.delivery_Bps * 8).c_str(),
                     r.tcp.max_pacing_Bps ? mbit(r.tcp.max_pacing_Bps * 8).c_str() : "-");
        retr += r.tcp.retrans;
        rtos += r.tcp.rtos;
        sent += r.c.bytes_sent;
        zraw += r.c.z_raw_sent;
        zsent += r.c.z_sent;
        twice += r.c.twice_sent;
        dropped += r.c.twice_dropped;
        replaced += r.c.reconnects;
        resent += r.c.resent_bytes;
        if (std::find(ccs.begin(), ccs.end(), r.cc) == ccs.end()) ccs.push_back(r.cc);
    }
    std::string cc;
    for (const auto& c : ccs) cc += (cc.empty() ? "" : ",") + c;
    std::fprintf(f, "[wanmpi] WAN total: %s MB sent, %llu retransmissions, %llu RTOs; congestion "
                    "control %s; WANMPI_WAN_RATE=%s, adaptation %s\n",
                 mb(sent).c_str(), (unsigned long long)retr, (unsigned long long)rtos,
                 cc.empty() ? "?" : cc.c_str(),
                 rate_Bps() ? (mbit(rate_Bps() * 8) + "mbit").c_str() : "unset",
                 wanlink::adapt_enabled() ? "on" : "off");
    if (zraw > 0)
        std::fprintf(f, "[wanmpi] WAN compression: %s MB of payload sent as %s MB (ratio %.2f)\n",
                     mb(zraw).c_str(), mb(zsent).c_str(), double(zsent) / double(zraw));
    if (twice > 0)
        std::fprintf(f, "[wanmpi] WAN small messages sent twice (WANMPI_WAN_TWICE): %llu, the "
                        "copy that came second dropped: %llu\n",
                     (unsigned long long)(twice / 2), (unsigned long long)dropped);
    if (replaced > 0)
        std::fprintf(f, "[wanmpi] WAN connections replaced after a break or a stall: %llu, "
                        "%s MB resent from the send logs (not in the retransmissions above)\n",
                     (unsigned long long)replaced, mb(resent).c_str());
}

}  // namespace

int wan_stats_report() {
    const std::string& mode = t_stats.get();
    if (mode.empty() || mode == "0" || !g || g->nclusters <= 1 || !g->impi) return MPI_SUCCESS;
    if (!wanmpi_gather || !wanmpi_gatherv) return MPI_SUCCESS;
    std::string mine;
    if (g->wan) {
        const auto& job = g->impi->job;
        const std::string me_host = job.hosts[size_t(job.procs[size_t(g->rank)].host)].addr();
        for (auto s : g->wan->link_stats()) {
            s.host = me_host;
            mine += wanlink::csv_row(s) + "\n";
        }
    }
    int len = int(mine.size());
    std::vector<int> lens(g->rank == 0 ? size_t(g->size) : 0);
    if (wanmpi_gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD) !=
        MPI_SUCCESS) {
        WANMPI_LOG(warn, "WANMPI_WAN_STATS: gathering the statistics failed");
        return MPI_SUCCESS;
    }
    std::vector<int> displs(lens.size());
    int total = 0;
    for (size_t i = 0; i < lens.size(); ++i) {
        displs[i] = total;
        total += lens[i];
    }
    std::string all(size_t(total), '\0');
    if (wanmpi_gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(),
                       MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
        WANMPI_LOG(warn, "WANMPI_WAN_STATS: gathering the statistics failed");
        return MPI_SUCCESS;
    }
    if (g->rank != 0) return MPI_SUCCESS;
    std::vector<wanlink::LinkStat> rows;
    size_t pos = 0;
    while (pos < all.size()) {
        size_t nl = all.find('\n', pos);
        if (nl == std::string::npos) nl = all.size();
        wanlink::LinkStat s;
        if (wanlink::parse_csv_row(all.substr(pos, nl - pos), &s)) rows.push_back(std::move(s));
        pos = nl + 1;
    }
    if (mode == "1") {
        print_table(stderr, rows);
        return MPI_SUCCESS;
    }
    FILE* f = std::fopen(mode.c_str(), "w");
    if (!f) {
        WANMPI_LOG(warn, "WANMPI_WAN_STATS: cannot write %s: %s", mode.c_str(),
                   std::strerror(errno));
        return MPI_SUCCESS;
    }
    std::fprintf(f, "%s\n%s", wanlink::csv_header().c_str(), all.c_str());
    std::fclose(f);
    return MPI_SUCCESS;
}

}  // namespace wanmpi::core
