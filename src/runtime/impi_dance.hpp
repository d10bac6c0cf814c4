// Host-to-host connection set-up, "Shall we dance?" (../shared/IMPI.md §4): after the start-up
// every IMPI host connects to every lower-ranked host and sends its own global host rank as a
// big-endian Uint4; it accepts a connection from every higher-ranked host. The result is one TCP
// connection per pair of hosts.
//
// The acceptor identifies a peer BY THE RANK IT SENDS, never by its source address, so hosts
// behind NAT or a relay work. The dance is not authenticated (neither is IMPI's); what it does
// guard against: connections that send an out-of-range rank, a rank that is not higher than ours,
// a rank already taken (the first connection to claim a rank keeps it), nothing at all for
// WANMPI_IMPI_JOIN_TIMEOUT seconds, or too many of those at once. Each such connection is logged
// and closed; the others carry on. Connects to lower hosts are retried (a peer may not listen yet:
// ECONNREFUSED, a timeout) until WANMPI_IMPI_CONNECT_TIMEOUT, which also bounds the whole dance.
// A peer address this host cannot route to (ENETUNREACH / EHOSTUNREACH, typically a
// private-address cluster without impi-relay) is not retried: the dance fails at once with a
// message that names the host and says where impi-relay is needed. The agent's rank also watches
// its impi-server connection while dancing (DanceConfig::watch_fd), so a cluster that dies while
// the others wait for its hosts ends the dance everywhere within a second, not after the timeout.
//
// Lifecycle: open_listener() before the start-up (its address and port go into IMPI_H_IPV6 /
// IMPI_H_PORT), dance() after it, then close the listener. Threading: no shared state; each call
// works on its own sockets. dance() blocks (poll), it never spins.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/socket.hpp"
#include "base/status.hpp"
#include "runtime/impi_tables.hpp"
#include "wanlink/handshake.hpp"

namespace wanmpi::impi {

struct ListenConfig {
    std::string port_range;  // "lo:hi" (IMPI_PORT_RANGE); "": an ephemeral port
    std::string network;     // IMPI_NETWORK: interface name or CIDR that picks the address
    std::string advertise;   // WANMPI_IMPI_ADVERTISE: "addr" or "addr:port" to publish instead
                             // (a NAT's public address, a forwarded port)
};
// From WANMPI_IMPI_PORT_RANGE (IMPI_PORT_RANGE), WANMPI_IMPI_NETWORK (IMPI_NETWORK) and
// WANMPI_IMPI_ADVERTISE.
ListenConfig listen_config_from_env();

struct Listener {
    base::Fd fd;            // listening on every IPv4 address of this machine
    std::string addr;       // advertised IPv4 address (dotted)
    uint16_t port = 0;      // advertised port
    uint16_t local_port = 0;
};
// Errors name the variable at fault ("IMPI_PORT_RANGE='9000:8000' is not lo:hi with 1 <= lo <= hi
// <= 65535", "IMPI_NETWORK='10.9.0.0/16' matches no interface of this host", "no free port in
// 9000:9001").
base::Status open_listener(const ListenConfig& cfg, Listener* out);

struct DancePeer {
    std::string addr;  // dotted IPv4; "" when the host has no IPv4 address (connect fails)
    uint16_t port = 0;
    std::string name;  // for messages, e.g. "host 3 (client 1)"
    bool skip = false; // no connection with this host (both sides must agree)
    // Both ends are wanmpi hosts: after the host rank, the connection runs wanmpi's link
    // handshake (wanlink/handshake.hpp) before it counts as made (both sides must agree).
    bool ext = false;
    // The host is presented by impi-relay (impi_tables.hpp relay_of()): lanes on auto are the
    // relay's to resolve (the RTT this host measures is to the relay), and FAR may follow the
    // handshake (wanlink/handshake.hpp "Lanes through impi-relay").
    bool relayed = false;
};

// The link handshake's inputs (DanceConfig::link) and what it settled per host.
struct LinkSetup {
    bool keyed = false;             // this cluster holds the job secret ...
    wanlink::Key key{};             // ... and this is the job's link key from it
    std::array<uint8_t, 32> session{};
    uint8_t flags = 0;              // wanlink::HelloFlags this side asks for
    uint8_t lanes = 1;              // WANMPI_WAN_LANES (0: auto, wanlink/lanes.hpp)
};
struct LinkResult {
    bool ext = false;     // the handshake ran (else a plain IMPI connection)
    bool tls = false;     // TLS 1.3 must follow, with this key
    bool resume = false;  // both can resume the stream after a reconnect
    bool compress = false;  // both take zstd payloads (wanlink/compress.hpp)
    bool zfilter = false;   // ... and filtered ones (kFlagZfilter)
    unsigned lanes = 1;     // TCP connections of the link (the extra ones are dialled later)
    wanlink::Key psk{};
};

struct DanceConfig {
    int64_t join_timeout_ms = 30000;  // an accepted connection must send its rank by then
    int64_t timeout_ms = 30000;       // the whole dance, retries included
    size_t max_pending = 64;          // unidentified incoming connections at once
    // The Job overload connects hosts of the same client only if this is set. IMPI's dance is a
    // full mesh, but wanmpi's ranks of one cluster talk over the cluster's own transports, and
    // pairs inside one wanmpi client involve no other implementation: skipping them saves
    // O(hosts^2) idle connections.
    bool intra_client = false;
    // Optional (the agent's rank: Agent::server_fd / poll_server): a descriptor the dance also
    // polls for readability; whenever it is readable, `watch` is called, and a non-ok status ends
    // the dance at once with that message (a LOST notice or the server closing: another cluster
    // died, so the hosts still missing will never connect).
    int watch_fd = -1;
    std::function<base::Status()> watch;
    // For peers marked ext. An incoming connection counts only once its handshake proved it
    // holds the job's key; one that fails is logged and closed, and the host's slot stays free
    // for the real one (a stranger on the port disturbs nothing). An outgoing one that fails
    // fails the dance: our own peer refused us, or could not prove itself.
    const LinkSetup* link = nullptr;
    std::vector<LinkResult>* link_out = nullptr;  // sized to the hosts by dance()
};
// WANMPI_IMPI_JOIN_TIMEOUT and WANMPI_IMPI_CONNECT_TIMEOUT (seconds).
DanceConfig dance_config_from_env();
// WANMPI_IMPI_CONNECT_TIMEOUT in milliseconds (also used by the agent).
int64_t connect_timeout_ms_from_env();

// Connects me to every other host that is not marked skip. On success conns has hosts.size()
// entries: a connected, blocking, close-on-exec socket per such host, an empty Fd at `me` and at
// skipped hosts. Sets listen_fd nonblocking. On failure the message lists every host that is
// still missing and why: after the timeout (Errc::link_failed), at once when a peer's address is
// unroutable (Errc::link_failed: "cannot reach host 3 (client 1) at ADDR:PORT: Network is
// unreachable; ... run impi-relay on ..."), or when `watch` fails (Errc::peer_failed).
base::Status dance(int listen_fd, int me, const std::vector<DancePeer>& hosts,
                   const DanceConfig& cfg, std::vector<base::Fd>* conns);
// The same over the job's hosts (me = global host rank); hosts of my own client are skipped
// unless cfg.intra_client.
base::Status dance(int listen_fd, int me, const Job& job, const DanceConfig& cfg,
                   std::vector<base::Fd>* conns);

}  // namespace wanmpi::impi
