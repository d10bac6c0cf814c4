// IMPI start-up tables (../shared/IMPI.md §3.6): what one client (cluster) contributes to the
// 14 COLL labels, the collation of the server's replies into the global job, and a compact
// printable form of that job for a cluster's bootstrap key-value space.
//
//   ClusterTables  this client's hosts, procs and client values (input of the agent)
//   contribution() the bytes this client sends for one label
//   collate()      the server's collated replies -> Job (global hosts, procs, negotiated values)
//   encode_job() / decode_job()  Job <-> text without spaces or '=' (PMI-safe); the text carries
//                  the raw replies, and decode_job() collates them again, so a rank that decodes
//                  a job has run exactly the checks the agent ran.
//   kvs_put_long() / kvs_get_long()  a long value split over several keys (Hydra keeps at most
//                  1023 bytes per value).
//
// Everything here is pure (no I/O, no globals but the tunables read by client_values()) and
// thread-safe. Errors are Status(Errc::proto_error or Errc::invalid) whose message names the
// client and the label, e.g. "clients disagree on IMPI_C_COLL_XSIZE: client 0 uses 1024, client 1
// uses 4096 (set IMPI_COLL_XSIZE to the same value for every cluster)".
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/kvs.hpp"
#include "base/status.hpp"
#include "runtime/impi_wire.hpp"

namespace wanmpi::impi {

// An IMPI protocol version (IMPI_C_VERSION element: Uint4 major, Uint4 minor).
struct Version {
    uint32_t major = 0;
    uint32_t minor = 0;
    auto operator<=>(const Version&) const = default;
};
// Plain IMPI: every client lists it first.
inline constexpr Version kVersionPlain{0, 0};
// wanmpi's own pair, listed after 0.0: major 0x7761 ("wa"), minor 2. Two clients whose highest
// common version is this pair may use wanmpi's extensions between them (the link handshake
// after the dance's host rank, TLS, the resumable stream's PK_WAN_ACK; pacing); with a client
// that lists only 0.0 the pair speaks plain IMPI. "Highest" compares (major, minor)
// numerically, so the pair sorts above any real IMPI version. Minor 1 (before issue 13) had no
// link handshake: it is not listed, so a wanmpi.1 cluster and this one meet at plain 0.0
// instead of one of them waiting for a handshake the other never sends.
inline constexpr Version kVersionWanmpi{0x7761, 2};
// "0.0", "wanmpi.2", "2.1".
std::string version_text(Version v);

// What -1 in IMPI_C_COLL_XSIZE / IMPI_C_COLL_MAXLINEAR stands for (IMPI.md §3.6).
inline constexpr int32_t kDefaultXsize = 1024;
inline constexpr int32_t kDefaultMaxlinear = 4;
// Used only if no client sent the label at all (LAM's values).
inline constexpr uint32_t kFallbackDatalen = 65536;
inline constexpr uint32_t kFallbackAckmark = 10;
inline constexpr uint32_t kFallbackHiwater = 20;
// IMPI.md §3.6: 32767 <= tag_ub <= 2^31-1.
inline constexpr int32_t kMinTagUb = 32767;

// One IMPI host of this client: the address and port it listens on for the dance, and how many
// procs it carries.
struct LocalHost {
    HostId id{};        // host_id_from_ipv4(advertised address)
    uint16_t port = 0;  // advertised port
    uint32_t nprocs = 0;
};

// Everything one client sends to the server.
struct ClusterTables {
    std::vector<Version> versions{kVersionPlain, kVersionWanmpi};  // ascending, 0.0 first
    uint32_t datalen = 1u << 20;   // IMPI_C_DATALEN: largest packet payload we use
    int32_t tag_ub = 2147483647;   // IMPI_C_TAGUB: the engine's MPI_TAG_UB
    int32_t coll_xsize = -1;       // IMPI_C_COLL_XSIZE (-1: the default 1024)
    int32_t coll_maxlinear = -1;   // IMPI_C_COLL_MAXLINEAR (-1: the default 4)
    uint32_t ackmark = 16;         // IMPI_H_ACKMARK, sent for every host
    uint32_t hiwater = 64;         // IMPI_H_HIWATER, sent for every host
    std::vector<LocalHost> hosts;
    // Grouped by host in host order: hosts[0].nprocs procs of host 0 first, then host 1's, ...
    // This order is the order of the client's procs in MPI_COMM_WORLD.
    std::vector<Proc> procs;
};

// The client values from the tunables: WANMPI_IMPI_C_DATALEN (IMPI_C_DATALEN), _H_HIWATER,
// _H_ACKMARK, _COLL_XSIZE, _COLL_MAXLINEAR, and _PLAIN (offer only 0.0). hosts/procs stay empty;
// tag_ub keeps its default (the engine sets its own).
ClusterTables client_values();
// Checks what the standard mandates before anything is sent (ranges, versions ascending from
// 0.0, sum of host nprocs == procs.size(), <= 2^20 hosts and procs).
base::Status validate(const ClusterTables& t);
// This client's data for `label`: the bytes that follow the label in its COLL command.
std::vector<uint8_t> contribution(const ClusterTables& t, uint32_t label);

// One collated reply: the client mask and the contributions concatenated in client order.
struct CollReply {
    uint32_t mask = 0;
    std::vector<uint8_t> data;
};

// The global job every client computes after DONE. Identical on every client and every rank.
struct Job {
    struct Client {
        std::vector<Version> versions;  // as the client listed them
        int first_host = 0;             // global host rank of its first host
        int nhosts = 0;
        int first_rank = 0;             // MPI_COMM_WORLD rank of its first proc
        int nprocs = 0;
    };
    struct Host {
        HostId id{};
        uint16_t port = 0;
        int nprocs = 0;
        int client = 0;
        int first_rank = 0;  // MPI_COMM_WORLD rank of its first proc
        // Dotted IPv4 address for the dance; "" if the id is not an IPv4 address (then this
        // host cannot be reached by wanmpi, which speaks IPv4 only).
        std::string addr() const;
    };
    struct ProcEntry {
        Proc id;
        int client = 0;
        int host = 0;  // global host rank
    };

    std::vector<Client> clients;
    std::vector<Host> hosts;      // by global host rank: client 0's hosts first
    std::vector<ProcEntry> procs; // by MPI_COMM_WORLD rank: client 0's procs first

    // Negotiated values (IMPI.md §3.6 and the errata rule).
    uint32_t maxlen = 0;     // min IMPI_C_DATALEN
    int32_t tag_ub = 0;      // min IMPI_C_TAGUB
    int32_t xsize = 0;       // agreed IMPI_C_COLL_XSIZE, -1 resolved to 1024
    int32_t maxlinear = 0;   // agreed IMPI_C_COLL_MAXLINEAR, -1 resolved to 4
    uint32_t ackmark = 0;    // min IMPI_H_ACKMARK over all hosts (clamped to <= hiwater)
    uint32_t hiwater = 0;    // min IMPI_H_HIWATER over all hosts

    // version_matrix[a * nclients + b]: the highest version clients a and b both list.
    std::vector<Version> version_matrix;
    // The replies the job was collated from, by label. encode_job() carries these.
    std::map<uint32_t, CollReply> replies;

    int nclients() const { return int(clients.size()); }
    int size() const { return int(procs.size()); }
    Version version(int a, int b) const { return version_matrix[size_t(a * nclients() + b)]; }
    // Both clients speak wanmpi's extensions (their highest common version is kVersionWanmpi).
    bool wanmpi_pair(int a, int b) const { return version(a, b) == kVersionWanmpi; }
    // MPI_COMM_WORLD rank of an IMPI_Proc (what a packet's pk_src names); -1 if unknown.
    int rank_of(const Proc& p) const;

    std::map<std::pair<HostId, int64_t>, int> proc_index;  // filled by collate()
};

// Builds the job from the replies to the 14 labels (missing optional labels count as sent by
// nobody). Validates every length against NHOSTS/NPROCS, the version lists, the mandated ranges,
// the agreement of XSIZE and MAXLINEAR, and that no IMPI_Proc appears twice.
base::Status collate(int nclients, std::map<uint32_t, CollReply> replies, Job* out);

// Job <-> printable text (base64url of a versioned binary form; no spaces, no '=').
std::string encode_job(const Job& job);
base::Status decode_job(std::string_view text, Job* out);

// base64url without padding (RFC 4648 §5): values for the KVS.
std::string base64url_encode(const uint8_t* p, size_t n);
bool base64url_decode(std::string_view s, std::vector<uint8_t>* out);

// A long value over several KVS keys: "<key>-n" holds the number of pieces, "<key>-<i>" the
// pieces of at most max_piece bytes (1000 stays below Hydra's 1023). The caller fences.
base::Status kvs_put_long(base::Kvs& kvs, const std::string& key, const std::string& value,
                          size_t max_piece = 1000);
// found=false (and ok) if "<key>-n" does not exist.
base::Status kvs_get_long(base::Kvs& kvs, const std::string& key, std::string* value,
                          bool* found);

// The IMPI_Proc wanmpi uses for a rank that is its own host (GridMPI style): the advertised
// address as host id, and pid = port << 32 | unix pid. IMPI only needs the pair to be unique in
// the job; the port makes it so even for two machines behind one NAT address.
Proc make_proc_id(const HostId& host, uint16_t port, int64_t pid);

// impi-relay gives the procs it presents ids of its own: its address as host id, and pid =
// "RLY" << 40 | index. No wanmpi rank uses such a pid (theirs are port << 32 | pid, the port
// below 2^16), so a rank can tell that a peer sits behind a relay, and name the relay when the
// connection fails (the relay's address on this side).
inline constexpr uint64_t kRelayPidTag = 0x524C59;
inline uint64_t relay_proc_pid(uint64_t index) { return (kRelayPidTag << 40) | index; }
// The relay's address if `p` is a proc presented by impi-relay, else "".
std::string relay_of(const Proc& p);

}  // namespace wanmpi::impi
