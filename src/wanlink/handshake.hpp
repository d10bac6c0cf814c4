// Proving membership of the job (issue 13, docs/security.md): the wire formats and MACs of
//   (1) wanmpi's AUTH method with impi-server, an IMPI AUTH method (IMPI.md §3.4) beside NONE
//       and KEY, and
//   (2) the link handshake every inter-cluster connection between two wanmpi hosts runs before
//       its first IMPI packet: at the dance, and again at every reconnect.
// Both are mutual challenge-response over HMAC-SHA-256 with fresh 32-byte nonces from both
// sides, so nothing on the wire can be replayed and the secret never travels.
//
// (1) AUTH method WANMPI_HMAC (bit 16 of the AUTH mask; IMPI defines bits 0 and 1):
//   C -> S  {AUTH,4} mask                                  (IMPI)
//   S -> C  Int4 which = 16, Int4 len = 64, Ns[32] S[32]   (IMPI's server-auth record; LAM
//                                                           ignores len, IMPI meant it for
//                                                           method data: here the challenge)
//   C -> S  Nc[32] MACc[32]   MACc = HMAC(secret, "wanmpi-auth-client" Ns Nc S)
//   S -> C  Uint4 verdict (0 ok, 1 refused) MACs[32]
//                             MACs = HMAC(secret, "wanmpi-auth-server" Ns Nc S)
//   S is the server's session nonce, one per impi-server run; it reaches every rank and binds
//   the link key to this job: K = HMAC(secret, "wanmpi-link" S).
// (2) Link handshake, after the dance's Uint4 host rank (IMPI.md §4), for pairs whose highest
//   common version is wanmpi's (impi_tables.hpp):
//   C -> A  HELLO_c (64 bytes)
//   A -> C  HELLO_a MAC_a      MAC_a = HMAC(K, "A" HELLO_c HELLO_a)
//   C -> A  MAC_c              MAC_c = HMAC(K, "C" HELLO_c HELLO_a)
//   HELLO: "WLNK" | u8 version=3 | u8 flags | u8 kind (0 first, 1 reconnect, 2 lane) | u8 lanes |
//          Uint4 from host | Uint4 to host | Uint8 recv_off | Uint4 epoch | Uint4 pay_left |
//          nonce[32]
//   version: 3 since small eager messages may travel twice on laned links (impi_wire.hpp
//     kSentTwice), which a version-2 receiver would deliver twice; hosts and relays of one job
//     run one release, so a mismatch is refused rather than negotiated.
//   flags: bit0 this side requires auth, bit1 wants TLS, bit2 can resume (replay), bit3 this
//          side holds a job secret, bit4 takes and may send zstd-compressed payloads
//          (wanlink/compress.hpp; both must set it), bit5 this side is an impi-relay on the inner leg of a
//          relayed pair (the connection stays inside the relay's cluster: no TLS on it; the
//          relay encrypts the outer leg), bit6 takes filtered zstd payloads (wanlink::Filter,
//          impi_wire.hpp kZstdFilterMark; both must set it, with bit4). K is the secret's key when both hold one, else the
//          key of the empty secret; a side that requires auth refuses a peer without the secret.
//   lanes (issue 14, docs/design/lanes.md): kind 0: how many TCP connections (lanes) this side
//     offers for the link, 1..16 (0: a release without lanes, same as 1); the link uses the
//     smaller offer, and the connector dials the host socket once more per extra lane. Kind 1
//     and 2: the index of the lane this connection is (0 for the dance's own). Kind 2 opens a
//     lane for the first time (recv_off 0); kind 1 resumes one after a break. The byte is
//     covered by both MACs like every HELLO byte, so nobody on the path can change k.
//          bit7 this side is an impi-relay (both legs): at the dance it sends FAR with the
//          link's end-to-end lane count (below).
//   Lanes through impi-relay (docs/design/lanes.md "Through impi-relay and trunks"): lanes are
//     end to end; the relay joins lane i of one leg to lane i of the other, each lane a relayed
//     pair of its own (kind 2 and 1 connections name their lane; the relay carries it over).
//     The relay answers a kind-0 HELLO before it reached the other host, with its own cap
//     (WANMPI_WAN_LANES of the relay; auto: 16), and offers the other host the smaller of the
//     connector's offer and its cap (auto, when the connector offered 16: what auto_lanes()
//     gives for the slower leg's RTT). When both the connector's offer and the relay's answer
//     exceed 1, the relay sends FAR (kind 0, lanes = the count the other host settled on, from
//     its HELLO or from the next relay's FAR) right after the handshake, and the connector
//     takes that count: so both hosts, and every relay between them, agree on k. A connector
//     on auto offers 16 to a host behind a relay (its own RTT is to the relay, not the path).
//   recv_off: bytes of the peer's stream this side has consumed (reconnect: resend from there).
//     Never inside a packet header: a receiver in the middle of one names the header's start
//     (and drops the partial header when the bytes come again).
//   pay_left: payload bytes still due of the IMPI packet the stream is in at recv_off (0: at a
//     packet boundary). An impi-relay between the two hosts keeps no state of a pair across a
//     reconnect: these two numbers tell it where the next packet header is.
//   A relay (impi_relay_data.cpp) runs the handshake on each of its two legs with the job's key,
//   as acceptor towards the connecting host (answering at once, so the connector proves itself
//   before anything reaches the other host) and as connector towards the other, carrying the
//   connecting host's recv_off, pay_left, epoch and stream flags over. A reconnect (kind 1)
//   through a relay then needs the other host's numbers back: once the relay has them, it sends
//   on the connector's leg, right after the handshake and before TLS,
//     R -> C  FAR (a HELLO: the far host's flags, recv_off, pay_left, epoch) MAC_f
//             MAC_f = HMAC(K, "F" HELLO_c HELLO_a FAR)
//   and the connecting host resumes from FAR's recv_off. Who expects FAR: a host (or relay) that
//   reconnects to a host presented by a relay (impi_tables.hpp relay_of()).
//   With K from the empty secret (security none) the exchange is the same and protects
//   nothing. The TLS 1.3 PSK of the connection is HMAC(K, "tls" HELLO_c HELLO_a).
//
// Threading: pure functions and a per-connection state machine; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "wanlink/secret.hpp"

namespace wanmpi::wanlink {

using Key = std::array<uint8_t, 32>;
constexpr size_t kNonce = 32, kMac = 32;

void random_bytes(uint8_t* p, size_t n);
// HMAC-SHA-256 of the concatenation of up to 4 parts.
Key hmac(const uint8_t* key, size_t keylen,
         std::initializer_list<std::pair<const void*, size_t>> parts);
bool equal_mac(const uint8_t* a, const uint8_t* b);  // constant time

// ---- (1) impi-server AUTH -----------------------------------------------------------------------
constexpr uint32_t kAuthHmac = 16;  // method number (mask bit 16)
constexpr uint32_t kAuthChallengeLen = 2 * kNonce;   // Ns S
constexpr size_t kAuthResponse = kNonce + kMac;      // Nc MACc
constexpr size_t kAuthVerdict = 4 + kMac;            // verdict MACs
Key auth_client_mac(const Secret& s, const uint8_t ns[32], const uint8_t nc[32],
                    const uint8_t sess[32]);
Key auth_server_mac(const Secret& s, const uint8_t ns[32], const uint8_t nc[32],
                    const uint8_t sess[32]);
// K for the link handshakes of a job (sess: the server's session nonce; all zero if the job
// did not use wanmpi's AUTH method).
Key link_key(const Secret& s, const uint8_t sess[32]);

// ---- (2) link handshake -------------------------------------------------------------------------
constexpr size_t kHello = 64;
constexpr unsigned kMaxLanes = 16;
// The lanes of a link from the two kind-0 offers (0 counts as 1).
inline unsigned agreed_lanes(uint8_t a, uint8_t b) {
    const unsigned x = a ? a : 1, y = b ? b : 1;
    return x < y ? x : y;
}
enum HelloFlags : uint8_t {
    kFlagAuth = 1,
    kFlagTls = 2,
    kFlagResume = 4,
    kFlagKeyed = 8,
    kFlagZstd = 16,
    kFlagInner = 32,
    kFlagZfilter = 64,
    kFlagRelay = 128,
};
// The flags that describe the two hosts' streams rather than one connection: a relay carries
// them from one leg to the other.
constexpr uint8_t kEndToEndFlags = kFlagAuth | kFlagTls | kFlagResume | kFlagZstd | kFlagZfilter;
struct Hello {
    uint8_t flags = 0;
    uint8_t kind = 0;  // 0 at the dance, 1 reconnect, 2 opening an extra lane
    uint8_t lanes = 0;  // kind 0: lanes offered (0: no lanes, i.e. 1)
    uint8_t lane = 0;   // kind 1, 2: this connection's lane index
    uint32_t from = 0, to = 0;
    uint64_t recv_off = 0;
    uint32_t epoch = 0;
    uint32_t pay_left = 0;
    std::array<uint8_t, kNonce> nonce{};
};
void encode_hello(const Hello& h, uint8_t out[kHello]);
// "" or what is wrong (never trusts a field).
std::string decode_hello(const uint8_t in[kHello], Hello* h);

// One side of the handshake on a connected socket, driven by nonblocking I/O: step() reads and
// writes what it can and returns done / again (wait for the fd) / failed (reason()). The
// Uint4 host rank that precedes it is the caller's (the dance reads it to pick the peer).
class LinkHandshake {
public:
    // ready: only with defer (an acceptor that must learn its answer first): the peer's HELLO
    // is in (peer()); call answer(), then step() again.
    enum Result { done, again, failed, ready };
    // mine: this side's HELLO (nonce and kFlagKeyed are filled in here). keyed: the link key
    // of the job secret, nullptr without one. sess: the session nonce (for the empty-secret
    // key). expect_from: the host the peer must be (acceptor: the rank it sent; connector:
    // the host we dialled).
    LinkHandshake(bool connector, const Key* keyed, const uint8_t sess[32], Hello mine,
                  uint32_t expect_from, bool defer = false);
    Result step(int fd);
    // Deferred acceptor, after step() returned ready: the flags, recv_off, pay_left and epoch
    // of our HELLO (from, to, kind and the nonce stay).
    void answer(uint8_t flags, uint64_t recv_off, uint32_t pay_left, uint32_t epoch);
    const std::string& reason() const { return why_; }
    // After done: the peer's HELLO, and the stricter of the two sides' demands.
    const Hello& peer() const { return peer_; }
    const Hello& mine() const { return mine_; }
    bool tls() const {
        const uint8_t f = mine_.flags | peer_.flags;
        return (f & kFlagTls) && !(f & kFlagInner);
    }
    bool resume() const { return (mine_.flags & peer_.flags & kFlagResume) != 0; }
    Key tls_psk() const;
    // After done: FAR and its MAC for this connection (relay side), and its check (connector).
    void encode_far(const Hello& far, uint8_t out[kHello + kMac]) const;
    std::string decode_far(const uint8_t in[kHello + kMac], Hello* far) const;
    // True when the failure is the peer lacking the secret or holding another one (a MAC that
    // does not verify), as opposed to malformed bytes or a broken connection.
    bool auth_refused() const { return auth_refused_; }

private:
    Result fail(std::string why, bool auth = false);
    Result choose_key();
    bool connector_;
    bool have_keyed_ = false;
    Key keyed_{}, plain_{}, key_{};
    Hello mine_, peer_;
    uint32_t expect_;
    uint8_t hc_[kHello], ha_[kHello];  // HELLO_c, HELLO_a as sent
    uint8_t out_[kHello + kMac];
    size_t out_len_ = 0, out_off_ = 0;
    uint8_t in_[kHello + kMac];
    size_t in_want_ = 0, in_got_ = 0;
    int phase_ = 0;
    bool defer_ = false;
    std::string why_;
    bool auth_refused_ = false;
};

}  // namespace wanmpi::wanlink
