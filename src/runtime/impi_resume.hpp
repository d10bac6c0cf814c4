// Surviving an impi-relay restart (docs/design/relay-restart.md): the pieces that the relay,
// impi-server and the cluster's agent share.
//
//   - The control extension (impi_wire.hpp KEEP / BACK / GONE): after DONE a relay that can come
//     back says KEEP to the server and to its agent; when that connection then drops without an
//     orderly end, the other end waits up to WANMPI_WAN_RECONNECT_S for a BACK (the relay comes
//     back to the server; the agent comes back to the relay) instead of ending the job. BACK
//     follows wanmpi's own AUTH method only (mutual HMAC over fresh nonces with the job secret),
//     so only a holder of the job secret can take a client's place, and a replayed BACK fails
//     against the fresh server nonce.
//   - The relay's state file (impi-relay --state FILE): what a restarted relay needs to take over
//     (its addresses and ports, both views of the job, the session nonce), written once after
//     the start-up, mode 0600, authenticated with a MAC under the job's link key. It holds no key
//     material: the restarted relay derives the link key again from the job secret (which it
//     must be given, as before) and the session nonce.
//
// Threading: every function here is thread-safe (no shared state). resume_client() blocks.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "wanlink/secret.hpp"

namespace wanmpi::impi {

// BACK's payload (impi_wire.hpp).
constexpr size_t kBackLen = 4 + 4 + 32;
struct BackMsg {
    uint32_t client = 0;
    bool fini = false;
    std::array<uint8_t, 32> session{};
};
std::vector<uint8_t> encode_back(const BackMsg& b);
std::string decode_back(const uint8_t* p, size_t n, BackMsg* b);  // "" or what is wrong
// TBCK (impi_relay.hpp, trunk control): a trunk member coming back to its primary relay (either
// of them restarted): BACK's payload (fini always 0) followed by Uint4 the member's trunk index
// (1..63). Answered by TBCK with Int4 status and a reason, as BACK.
constexpr size_t kTrunkBackLen = kBackLen + 4;
std::vector<uint8_t> encode_trunk_back(const BackMsg& b, uint32_t index);
std::string decode_trunk_back(const uint8_t* p, size_t n, BackMsg* b, uint32_t* index);

// The returning side of the control extension, on a connected socket `fd` (blocking or not):
// AUTH offering wanmpi's method only, the mutual challenge-response, then BACK and its answer.
// `peer` names the other end in messages. Fails (without closing fd) if the other end refuses,
// does not prove it holds the secret, or does not answer by deadline_ms (base::now_ns clock).
// trunk_index > 0: a trunk member coming back to its primary relay, TBCK instead of BACK.
base::Status resume_client(int fd, const wanlink::Secret& secret, const BackMsg& back,
                           int64_t deadline_ms, const std::string& peer,
                           uint32_t trunk_index = 0);

// The relay's state file. Text, one "key value" line each, the last line "mac HEX" =
// HMAC(link key, "wanmpi-relay-state" || every byte before that line).
// With trunks, every relay of the cluster has a state file of its own ("trunk T I"); a member's
// (I > 0) names the primary relay's address where the primary's names impi-server, and has no
// control port (0).
struct RelayState {
    std::string server;          // SADDR:SPORT of impi-server (member: the primary relay's)
    int client = -1;             // the cluster's client rank
    std::string pub, priv;       // the relay's public and private addresses
    uint32_t port = 0;           // its private (control) port: the agent's address (member: 0)
    int trunks = 1, index = 0;   // T relays in the cluster, this one's index (0: the primary)
    std::vector<uint32_t> ports; // the data ports, in the order the relay opened them
    uint8_t flags = 0;           // RelayLinkKeys::flags
    std::array<uint8_t, 32> session{};
    std::string out, in;         // encode_job() of both views
};
std::string encode_relay_state(const RelayState& s, const wanlink::Secret& secret);
// "" or what is wrong (format, or a MAC that does not verify with this secret: another job's
// state, another secret, or an edited file).
std::string decode_relay_state(const std::string& text, const wanlink::Secret& secret,
                               RelayState* s);
// Writes `text` to `path` atomically (a temporary file in the same directory, fsync, rename),
// mode 0600.
base::Status write_state_file(const std::string& path, const std::string& text);
// Reads it back; refuses a file that others may read or write (as the secret file) or that is
// larger than 16 MiB. *exists is false (and the status ok) when there is no such file.
base::Status read_state_file(const std::string& path, std::string* text, bool* exists);

}  // namespace wanmpi::impi
