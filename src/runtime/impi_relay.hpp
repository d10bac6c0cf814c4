// impi-relay: lets a private-address cluster take part in an IMPI job (docs/design/relay.md).
//
// It runs on a front-end with a private and a public address and stands between the cluster's
// agent and impi-server, and between every host of the cluster and every host outside it:
//
//   - Start-up: towards the server it is the cluster's agent, towards the agent it is the server.
//     It forwards every command and rewrites four labels: H_IPV6/H_PORT (the cluster's hosts are
//     presented outside as ports on a relay's public address, the outside hosts inside as ports
//     on a relay's private address) and P_IPV6/P_PID (the cluster's procs get ids on the relay's
//     public address, the outside procs ids on its private address: two private clusters with
//     the same private addresses never collide, and a rank can name the relay a peer is behind,
//     impi_tables.hpp relay_of()).
//     Host counts, proc counts and every other label pass unchanged, so host ranks and world
//     ranks are the same on both sides.
//   - The dance: a host that connects to one of the relay's ports sends its host rank (IMPI.md
//     §4); the port says which host it meant, so the relay connects on to that host (its real
//     address) and sends the same rank. Every pair of hosts therefore gets a pair of TCP
//     connections joined at one relay, and that relay is chosen by the host that accepts
//     (GridMPI relay scheme 1: by destination host).
//   - Data: each packet header is checked (the source proc must belong to the host on the sending
//     side, the destination proc to the host on the other side) and its proc ids are rewritten
//     for the other side; payloads pass unchanged, large ones by splice(2). IMPI flow control
//     (PROTOACK) is end to end: the relay never acknowledges or buffers beyond its per-direction
//     buffer, and stops reading a connection whose peer does not take its bytes.
//   - Trunking: a cluster may have T relays on T front-ends. The first (primary) talks to the
//     agent and the server; the others join it over a small control protocol (below) and get the
//     hosts they represent (host h of the cluster, and the h-th outside host, go to relay h % T).
//
// Trunk control protocol (primary <-> members, on the primary's private port, inside the
// cluster; every message is an IMPI command header {cmd, len} and big-endian fields):
//   TRNK member -> primary  Uint4 version (2), 16-byte public host id, 16-byte private host id
//   TPRT primary -> member  Uint4 n_pub, Uint4 n_priv: open that many ports on each side
//   TPRT member -> primary  Uint4 n_pub, Uint4 n_priv, then n_pub + n_priv Uint4 ports
//   TJOB primary -> member  Uint4 trunks, Uint4 index, Uint4 client, Uint4 n + n bytes of
//                           encode_job(outside view), Uint4 m + m bytes of encode_job(inside view),
//                           Uint4 link flags (bit 8: keyed; low byte: the HELLO flags the relays
//                           demand), 32-byte link key (zero unless keyed), 32-byte session nonce
//   TEND primary -> member  Int4 status: the job is over (0) or failed
//   KEEP either way, after TJOB, no payload: this relay has a state file (-state) and may be
//        restarted; if the link drops, wait WANMPI_WAN_RECONNECT_S for it (impi_wire.hpp)
//   TBCK member -> primary  on a new connection after wanmpi's AUTH: a member (or the primary)
//        was restarted, the member takes its place again (impi_resume.hpp, relay-restart.md)
//
// Threading: single-threaded (one epoll loop per relay process). The pure functions below are
// thread-safe and are what the unit tests and fuzz targets call.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "runtime/impi_tables.hpp"
#include "runtime/impi_wire.hpp"
#include "wanlink/handshake.hpp"

namespace wanmpi::impi {

// Trunk control commands (see above).
enum RelayCmd : uint32_t {
    CMD_TRNK = 0x54524E4B,  // "TRNK"
    CMD_TPRT = 0x54505254,  // "TPRT"
    CMD_TJOB = 0x544A4F42,  // "TJOB"
    CMD_TEND = 0x54454E44,  // "TEND"
};

// What every relay of a cluster knows once the start-up is over.
struct RelayMap {
    int client = 0;   // the private cluster's client rank
    int trunks = 1;   // T
    int index = 0;    // this relay's trunk index, 0 = primary
    Job out;          // the job as the other clusters see it (the server's replies)
    Job in;           // the job as the cluster's own hosts see it

    bool own(int host) const { return out.hosts[size_t(host)].client == client; }
    // Which relay represents `host`: own hosts by their index in the cluster, outside hosts by
    // their index among the outside hosts.
    int trunk_of(int host) const;
};

// The relay's part in the link handshakes of relayed pairs (docs/design/relay.md, "Security"):
// the job's link key and what this relay demands. The primary derives the key from its own job
// secret (WANMPI_JOB_SECRET_FILE) and the session nonce it saw in impi-server's AUTH answer;
// members get both from the primary in TJOB (inside the cluster, over the trunk control link).
struct RelayLinkKeys {
    bool keyed = false;                 // the relay holds the job secret's link key ...
    wanlink::Key key{};                 // ... K = link_key(secret, session)
    std::array<uint8_t, 32> session{};  // impi-server's session nonce (zero without HMAC AUTH)
    uint8_t flags = 0;                  // kFlagAuth / kFlagTls / kFlagResume this relay demands
};

// Builds the map from the two views and checks they describe the same job (same clients,
// hosts, procs and host of every proc).
base::Status make_relay_map(int client, int trunks, int index, Job out, Job in, RelayMap* m);

// One packet header travelling through the relay between inside host `h` and outside host `j`,
// `outward` = from h to j. Checks the header (decode_packet with the job's maxlen) and that its
// procs belong to the two hosts, then rewrites its proc ids for the other side, in place.
// *payload = the bytes that follow the header. `resumable`: the two hosts agreed in their link
// handshakes to resume the stream, so its acknowledgements (PK_WAN_ACK) may pass. Returns "" or
// what is wrong.
std::string relay_rewrite(const RelayMap& m, int h, int j, bool outward, uint8_t hdr[kPacketHeader],
                          uint64_t* payload, bool resumable = false);

// The dance rank a connection sent to a relay port that represents host `rep`: whether the relay
// may connect it on. `rep_own`: the port represents a host of the cluster (accepted from
// outside). Returns "" or why not (out of range, same side, not higher than rep).
std::string relay_check_dance(const RelayMap& m, int rep, bool rep_own, uint32_t rank);

// Rewrites a client's contribution for `label` from the inside view to the outside view
// (pub_ids/pub_ports: where each of the cluster's hosts is presented; proc_ids: the procs'
// outside ids). Labels other than H_IPV6, H_PORT, P_IPV6, P_PID are returned unchanged.
struct RelayFaces {
    std::vector<HostId> own_host_ids;     // per own host: the relay public address
    std::vector<uint32_t> own_host_ports;  // per own host: the relay public port
    std::vector<HostId> out_host_ids;     // per outside host (in order): relay private address
    std::vector<uint32_t> out_host_ports;  // per outside host: relay private port
    HostId proc_host{};      // own procs' outside ids: this (public) address, relay_proc_pid(i)
    HostId out_proc_host{};  // outside procs' inside ids: this (private) address, and pid
                             // relay_proc_pid(k) for the k-th outside proc
};
base::Status relay_outward_contribution(const RelayFaces& f, uint32_t label,
                                        const std::vector<uint8_t>& in,
                                        uint32_t own_nhosts, uint32_t own_nprocs,
                                        std::vector<uint8_t>* out);
// Rewrites the server's collated reply for `label` for the inside: the cluster's own part is
// replaced by what the agent sent (`agent`), the outside hosts' H_IPV6/H_PORT and the outside
// procs' P_IPV6/P_PID by the relay faces (so the cluster's hosts see every outside proc behind
// the relay, and two relays in a row never expose one side's ids to the other). `nhosts`/`nprocs` per client (from the NHOSTS/NPROCS replies) delimit the parts.
base::Status relay_inward_reply(const RelayFaces& f, int client, uint32_t label,
                                const CollReply& reply, const std::vector<uint8_t>& agent,
                                const std::vector<uint32_t>& nhosts,
                                const std::vector<uint32_t>& nprocs, CollReply* out);

// Trunk control payloads (decoders validate every length; "" = good).
struct TrunkHello {
    HostId pub{}, priv{};
};
std::vector<uint8_t> encode_trunk_hello(const TrunkHello& h);
std::string decode_trunk_hello(const uint8_t* p, size_t n, TrunkHello* h);
struct TrunkPorts {
    uint32_t n_pub = 0, n_priv = 0;
    std::vector<uint32_t> ports;  // empty in the primary's request
};
std::vector<uint8_t> encode_trunk_ports(const TrunkPorts& t);
std::string decode_trunk_ports(const uint8_t* p, size_t n, bool with_ports, TrunkPorts* t);
struct TrunkJob {
    uint32_t trunks = 0, index = 0, client = 0;
    std::string out, in;  // encode_job() texts
    RelayLinkKeys keys;
};
std::vector<uint8_t> encode_trunk_job(const TrunkJob& t);
std::string decode_trunk_job(const uint8_t* p, size_t n, TrunkJob* t);

// The daemon.
struct RelayConfig {
    std::string server;        // SADDR:SPORT (primary); empty for a member
    std::string join;          // RADDR:RPORT of the primary (member); empty for the primary
    int trunks = 1;            // primary: relays in all
    std::string public_addr;   // "" = guessed (the address that routes to the server)
    std::string private_addr;  // "" = guessed (another interface's address)
    int port = 0;              // primary's private port (0 = ephemeral)
    int64_t join_timeout_ms = 30000;
    int64_t startup_timeout_ms = 300000;
    bool splice = true;        // payloads of >= splice_min bytes by splice(2)
    uint64_t splice_min = 65536;
    int64_t spin_us = 0;       // after traffic, poll this long before sleeping in epoll
    // WANMPI_WAN_LANES (0: auto): the most lanes a relayed link may have (impi_relay_data.cpp).
    unsigned lanes = 0;
    // -state FILE (impi_resume.hpp): written after the start-up; if it exists at start, this
    // relay takes over from the one that wrote it. reconnect_ms: WANMPI_WAN_RECONNECT_S, how
    // long the server, the agent (and this relay) wait for one another to come back.
    std::string state_file;
    int64_t reconnect_ms = 60000;
    // Primary only, for the trunk members it starts itself (impi_relay_main.cpp -join-hosts):
    // called once the private address is known; then every 200 ms (a non-empty text: a member
    // failed, the job fails with it); and at the end, to reap them (grace in ms).
    std::function<void(const std::string& addr)> on_listening;
    std::function<std::string()> poll_children;
    std::function<void(int64_t grace_ms)> end_children;
};
// The defaults from the tunables: WANMPI_IMPI_RELAY_SPLICE_MIN, _SPIN_US, _STARTUP_TIMEOUT,
// WANMPI_IMPI_JOIN_TIMEOUT.
RelayConfig relay_config_from_env();
// Prints the first line (RADDR:RPORT), serves the job, returns the exit status (0: the job
// ended normally).
int run_relay(const RelayConfig& cfg);

}  // namespace wanmpi::impi
