// wanemu topology: clusters of hosts joined by emulated links, the address plan of a run, and
// the topology file format (documented in docs/wanemu.md, examples in tools/wanemu/examples/).
//
// Lifecycle/ownership: plain value types. A topology is parsed once (file, quick form, or the
// run's state file, which stores the topology in the same text format), validated, and then
// read-only, except link parameters that `wanemu set` changes in the controller.
// Threading: no internal synchronisation; the controller copies link_params into each link
// engine, which owns its copy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wanmpi::wanemu {

// Parameters of one direction of an emulated link.
struct link_params {
    int64_t delay_ns = 10 * 1000000;  // one-way propagation delay
    int64_t jitter_ns = 0;     // each packet's delay is uniform in delay +- jitter (FIFO kept)
    double rate_bps = 200e6;   // serialization rate of IP bytes; 0 = unlimited
    // Drop-tail limit in bytes: -1 = auto (one BDP, >= 64 KB); 0 = none, which only a packet
    // limit may replace (`queue=20p` means 20 packets, not 20 packets within the auto bytes).
    int64_t queue_bytes = -1;
    int64_t queue_pkts = 0;  // drop-tail limit in packets; 0 = none
    double loss = 0;         // random loss probability per packet, at the link's entry

    // The byte limit in force: auto = max(64 KB, rate * 2 * delay) (one round trip's worth);
    // 0 = no byte limit.
    int64_t effective_queue_bytes() const;
    // The queue spec in the syntax of `queue=`: "auto", "65536", "20p", "65536+20p", "auto+20p".
    std::string queue_spec() const;
    // Throws error unless the queue holds at least one packet of `mtu` bytes (a smaller limit
    // would only ever hold the packet being sent, which is not what anyone means by it).
    void validate(int mtu) const;
    // "delay=10ms rate=200mbit queue=244KB loss=0% jitter=0ms"
    std::string describe() const;
    // Serialised form for the state file; parse back with apply_param().
    std::string serialize() const;
};

// Sets one parameter from "key", "value" (delay, jitter, rate, queue, queue_pkts, loss);
// queue accepts a size ("64KB"), a packet count ("100p"), both ("64KB+100p"), "auto" or
// "auto+100p", and replaces the whole queue limit; queue_pkts sets only the packet limit, next
// to the byte limit in force. Throws error. Call link_params::validate() once all are set.
void apply_param(link_params& p, const std::string& key, const std::string& value);

enum class host_role { frontend, compute };

struct host_info {
    std::string name;  // also its hostname (UTS) and the key for `wanemu exec`
    int cluster = 0;   // index into topology::clusters
    int index = 0;     // index within the cluster; the first cluster_info::frontends are front-ends
    host_role role = host_role::compute;
    std::string pub_addr;   // empty for compute hosts of a private cluster
    std::string priv_addr;  // only in private clusters (front-ends there have both)
    // The address a peer in `from_cluster` uses for this host (private inside its own private
    // cluster, public otherwise; may be unreachable, as in the real thing).
    std::string addr_seen_from(int from_cluster) const;
};

struct cluster_info {
    std::string name;
    bool is_private = false;
    std::vector<std::string> host_names;
    double nic_bps = 0;  // per-host NIC limit with tbf (on each interface); 0 = none
    // The first `frontends` hosts are front-ends (1..hosts). In a private cluster they are the
    // dual-homed hosts (public and private address); several of them let a job spread its
    // wide-area traffic over several front-end NICs (relay trunking).
    int frontends = 1;
};

struct link_info {
    std::string name;  // "<a>-<b>"
    int a = 0, b = 0;  // cluster indices
    link_params ab, ba;
};

struct topology {
    std::vector<cluster_info> clusters;
    std::vector<link_info> links;
    int mtu = 1500;
    bool gso = false;               // TUN vnet mode: 64 KB GSO super-packets (for >= 1 Gbit/s)
    int64_t interval_ns = 1000000;  // traffic monitor bin; 0 = monitor off

    void validate() const;                             // throws error
    int cluster_index(const std::string& name) const;  // -1 if absent
    int link_index(const std::string& name) const;     // accepts "a-b" and "b-a"; -1 if absent
    // Serialised in the topology file format, with every host and direction spelled out.
    std::string serialize() const;
};

// Addresses of a run: run index r (0..99) gives 10.(100+r).C.0/24 for cluster C's public side
// and 10.(100+r).(128+C).0/24 for its private side; the cluster router is .1, host j is .(10+j).
// Everything lives inside the run's namespaces, so ranges only need to differ between runs.
struct address_plan {
    int run_index = 0;
    std::string public_subnet(int c) const;  // "10.100.0.0/24"
    std::string private_subnet(int c) const;
    std::string public_gateway(int c) const;  // "10.100.0.1"
    std::string public_host(int c, int j) const;
    std::string private_host(int c, int j) const;
};

std::vector<host_info> make_hosts(const topology& t, const address_plan& plan);

// Parses the topology file format. `origin` names the source in error messages.
topology parse_topology(const std::string& text, const std::string& origin);

// The quick form: --clusters N --hosts H [--delay ..] [--rate ..] [--loss ..] [--queue ..]
// [--jitter ..] [--private K|names] [--mtu M] [--gso] [--nic RATE] [--frontends F]: a full
// mesh.
struct quick_form {
    int clusters = 0;
    int hosts = 1;
    int frontends = 1;  // front-ends per cluster (1..hosts)
    link_params params;
    std::string private_spec;  // count of last clusters, or comma-separated names
    int mtu = 1500;
    bool gso = false;
    double nic_bps = 0;
};
topology make_quick_topology(const quick_form& q);

}  // namespace wanmpi::wanemu
