#include "wanlink/tcp_stats.hpp"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

// The kernel's struct tcp_info (glibc's netinet/tcp.h has only the 2.6-era fields); the two
// headers cannot both be included.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace wanmpi::wanlink {

namespace {
// struct tcp_info grew after Debian 12's headers (linux-libc-dev 6.1): 6.7 appended, right after
// tcpi_snd_wnd, __u32 tcpi_rcv_wnd, __u32 tcpi_rehash, __u16 tcpi_total_rto, __u16
// tcpi_total_rto_recoveries, __u32 tcpi_total_rto_time (include/uapi/linux/tcp.h). We read into
// a larger buffer and take those by offset; the kernel says how much it filled.
constexpr size_t kRcvWnd = offsetof(struct tcp_info, tcpi_snd_wnd) + 4;
constexpr size_t kTotalRto = kRcvWnd + 8;
}  // namespace

TcpInfo read_tcp_info(int fd) {
    TcpInfo r;
    alignas(8) unsigned char buf[sizeof(struct tcp_info) + 64] = {};
    socklen_t len = sizeof buf;
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, buf, &len) != 0) return r;
    struct tcp_info ti;
    std::memcpy(&ti, buf, sizeof ti);
    r.ok = true;
    r.retrans = ti.tcpi_total_retrans;
    r.dsack_dups = ti.tcpi_dsack_dups;
    r.rtt_us = ti.tcpi_rtt;
    r.rttvar_us = ti.tcpi_rttvar;
    r.min_rtt_us = ti.tcpi_min_rtt;
    r.cwnd = ti.tcpi_snd_cwnd;
    r.mss = ti.tcpi_snd_mss;
    r.delivery_Bps = ti.tcpi_delivery_rate;
    r.pacing_Bps = ti.tcpi_pacing_rate;
    r.max_pacing_Bps = ti.tcpi_max_pacing_rate;
    r.bytes_retrans = ti.tcpi_bytes_retrans;
    r.rto_us = ti.tcpi_rto;
    r.unacked = ti.tcpi_unacked;
    r.last_ack_ms = ti.tcpi_last_ack_recv;
    r.last_send_ms = ti.tcpi_last_data_sent;
    if (len >= kTotalRto + 2) {
        uint16_t v;
        std::memcpy(&v, buf + kTotalRto, sizeof v);
        r.rtos = v;
        r.has_rtos = true;
    }
    return r;
}

bool LossWatch::update(uint64_t retrans, uint64_t dsack_dups) {
    if (retrans < prev_retrans_ || dsack_dups < prev_dsack_) {
        prev_retrans_ = retrans;
        prev_dsack_ = dsack_dups;
        lost_ = retrans > dsack_dups ? retrans - dsack_dups : 0;
        return false;
    }
    const uint64_t lost = prev_retrans_ > dsack_dups ? prev_retrans_ - dsack_dups : 0;
    const bool grew = lost > lost_;
    if (grew) lost_ = lost;
    prev_retrans_ = retrans;
    prev_dsack_ = dsack_dups;
    return grew;
}

std::string csv_header() {
    return "rank,host,peer_rank,peer_host,peer_cluster,cc,bytes_sent,bytes_recv,msgs_sent,"
           "msgs_recv,retrans,rtos,rtt_us,delivery_bps,pacing_bps,z_raw_sent,z_sent,z_raw_recv,z_recv,lane,"
           "twice_sent,twice_dropped,reconnects,resent_bytes";
}

namespace {
// Host names and cc are ours or the kernel's: no commas, but keep the CSV well-formed anyway.
std::string field(const std::string& s) {
    std::string o = s;
    for (char& c : o)
        if (c == ',' || c == '\n' || c == '"') c = '_';
    return o;
}
}  // namespace

std::string csv_row(const LinkStat& s) {
    char b[512];
    const uint64_t pacing = s.tcp.max_pacing_Bps == ~uint64_t(0) ? 0 : s.tcp.max_pacing_Bps;
    std::snprintf(b, sizeof b,
                  "%d,%s,%d,%s,%d,%s,%llu,%llu,%llu,%llu,%u,%s,%u,%llu,%llu,%llu,%llu,%llu,%llu,%d,%llu,%llu,%llu,%llu",
                  s.rank, field(s.host).c_str(), s.peer_rank, field(s.peer_host).c_str(),
                  s.peer_cluster, field(s.cc).c_str(), (unsigned long long)s.c.bytes_sent,
                  (unsigned long long)s.c.bytes_recv, (unsigned long long)s.c.msgs_sent,
                  (unsigned long long)s.c.msgs_recv, s.tcp.retrans,
                  s.tcp.has_rtos ? std::to_string(s.tcp.rtos).c_str() : "", s.tcp.rtt_us,
                  (unsigned long long)(s.tcp.delivery_Bps * 8), (unsigned long long)(pacing * 8),
                  (unsigned long long)s.c.z_raw_sent, (unsigned long long)s.c.z_sent,
                  (unsigned long long)s.c.z_raw_recv, (unsigned long long)s.c.z_recv, s.lane,
                  (unsigned long long)s.c.twice_sent, (unsigned long long)s.c.twice_dropped,
                  (unsigned long long)s.c.reconnects, (unsigned long long)s.c.resent_bytes);
    return b;
}

bool parse_csv_row(const std::string& line, LinkStat* out) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    if (!line.empty() && line.back() == ',') f.push_back("");
    if (f.size() != 24) return false;
    auto num = [](const std::string& t, unsigned long long* v) {
        if (t.empty()) return false;
        char* e = nullptr;
        *v = std::strtoull(t.c_str(), &e, 10);
        return *e == 0;
    };
    unsigned long long v[24] = {};
    for (int i : {0, 2, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23})
        if (!num(f[size_t(i)], &v[i])) return false;
    LinkStat s;
    s.rank = int(v[0]);
    s.host = f[1];
    s.peer_rank = int(v[2]);
    s.peer_host = f[3];
    s.peer_cluster = int(v[4]);
    s.lane = int(v[19]);
    s.cc = f[5];
    s.c = {v[6], v[7], v[8], v[9], v[15], v[16], v[17], v[18], v[20], v[21], v[22], v[23]};
    s.tcp.ok = true;
    s.tcp.retrans = uint32_t(v[10]);
    s.tcp.has_rtos = num(f[11], &v[11]);
    s.tcp.rtos = uint32_t(v[11]);
    s.tcp.rtt_us = uint32_t(v[12]);
    s.tcp.delivery_Bps = v[13] / 8;
    s.tcp.max_pacing_Bps = v[14] / 8;
    *out = s;
    return true;
}

}  // namespace wanmpi::wanlink
