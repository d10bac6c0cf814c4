// IMPI wire formats (../shared/IMPI.md §2–§5): the client/server command stream and the 128-byte
// host-to-host packet header. One codec per format; every integer big-endian; decoders validate
// and never trust a length from the network (they return an error instead).
// No state, thread-safe. Shared by impi-server, the cluster agent in the library and the wan
// transport.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wanmpi::impi {

// ---- commands (client <-> server), IMPI.md §3 --------------------------------------------
enum Cmd : uint32_t {
    CMD_AUTH = 0x41555448,  // "AUTH"
    CMD_IMPI = 0x494D5049,  // "IMPI"
    CMD_COLL = 0x434F4C4C,  // "COLL"
    CMD_DONE = 0x444F4E45,  // "DONE"
    CMD_FINI = 0x46494E49,  // "FINI"
    // wanmpi extension, server -> client only, after DONE: the job failed. Payload: Int4 rank of
    // the client that was lost (-1: not a client), then a reason in ASCII. Sent just before the
    // server closes every client connection, so agents can say which cluster died; a client that
    // does not know it only sees the close, which means the same. impi-relay also sends it to a
    // wanmpi agent (wanmpi's AUTH) when the relay itself ends the job, during the start-up too.
    CMD_LOST = 0x4C4F5354,  // "LOST"
    // wanmpi extensions for an impi-relay that may be restarted in the middle of a job
    // (docs/design/relay-restart.md, impi_resume.hpp). Only ever sent on a connection whose AUTH
    // was wanmpi's own method (both ends are wanmpi and hold the job secret):
    //   KEEP  relay -> server and relay -> agent, after DONE, no payload: if this connection
    //         drops without an orderly end, wait up to WANMPI_WAN_RECONNECT_S for it to come back.
    //   BACK  a returning relay (or agent) -> server (or relay), instead of IMPI after AUTH:
    //         Uint4 client, Uint4 fini (1: FINI was sent), 32-byte session nonce. The answer is
    //         BACK with Int4 status (0: taken back) and a reason in ASCII.
    //   GONE  relay -> server after KEEP, or during the start-up once IMPI went through: the
    //         cluster failed (its agent is lost, a trunk relay died, or the relay gives up); a
    //         reason in ASCII. End the job at once.
    // With trunk relays (impi_relay.hpp), on the trunk control link inside the cluster: KEEP
    // primary -> member and member -> primary after TJOB (each has its state file), and
    //   TBCK  a returning member -> the primary (either was restarted), after the same AUTH as
    //         BACK: BACK's payload, then Uint4 the member's trunk index; answered by TBCK as
    //         BACK. Never sent to impi-server (cmd_name() does not know it: garbage there).
    CMD_KEEP = 0x4B454550,  // "KEEP"
    CMD_BACK = 0x4241434B,  // "BACK"
    CMD_GONE = 0x474F4E45,  // "GONE"
    CMD_TBCK = 0x5442434B,  // "TBCK"
};
const char* cmd_name(uint32_t cmd);  // "AUTH", ... or nullptr for an unknown code

constexpr size_t kCmdHeader = 8;
struct CmdHeader {
    uint32_t cmd = 0;
    int32_t len = 0;  // payload bytes after the header
};
void encode_cmd(const CmdHeader& h, uint8_t out[kCmdHeader]);
CmdHeader decode_cmd(const uint8_t in[kCmdHeader]);

// Authentication methods (bit i of the AUTH mask offers method i).
enum Auth : uint32_t { AUTH_NONE = 0, AUTH_KEY = 1 };

// COLL labels, IMPI.md §3.6, in the order clients send them.
enum Label : uint32_t {
    C_VERSION = 0x1000,
    C_NHOSTS = 0x1100,
    C_NPROCS = 0x1200,
    C_DATALEN = 0x1300,
    C_TAGUB = 0x1400,
    C_COLL_XSIZE = 0x1500,
    C_COLL_MAXLINEAR = 0x1600,
    H_IPV6 = 0x2000,
    H_PORT = 0x2100,
    H_NPROCS = 0x2200,
    H_ACKMARK = 0x2300,
    H_HIWATER = 0x2400,
    P_IPV6 = 0x3000,
    P_PID = 0x3100,
};
extern const std::array<uint32_t, 14> kLabelOrder;
const char* label_name(uint32_t label);  // nullptr for an unknown label

// Largest command payload a server or client accepts (a COLL reply for 32 clients with
// thousands of procs stays far below this).
constexpr int32_t kMaxCmdPayload = 16 << 20;

// ---- host ids (16 bytes), IMPI.md §2 ----------------------------------------------------------
using HostId = std::array<uint8_t, 16>;
// LAM's IPv4-compatible form: 12 zero bytes then the address.
HostId host_id_from_ipv4(const std::string& dotted);
// Accepts LAM's (::a.b.c.d) and MetaMPICH's (::ffff:a.b.c.d) forms; nullopt otherwise.
std::optional<std::string> ipv4_from_host_id(const HostId& id);

// ---- packets (host <-> host), IMPI.md §5 ------------------------------------------------------
enum PacketType : uint32_t {
    PK_DATA = 0,
    PK_DATASYNC = 1,
    PK_PROTOACK = 2,
    PK_SYNCACK = 3,
    PK_CANCEL = 4,
    PK_CANCELYES = 5,
    PK_CANCELNO = 6,
    PK_FINI = 7,
    // wanmpi extension (only between two wanmpi hosts whose link handshake agreed to resume,
    // wanlink/replay.hpp): "I have consumed `srqid` bytes of your stream", header only, not
    // counted by IMPI's flow control. A plain IMPI peer never sees one.
    PK_WAN_ACK = 0x77610001,
    // wanmpi extension (only on links of several lanes, docs/design/lanes.md "A lane that
    // cannot be opened"): "I gave up opening the lanes of bitmask `srqid` (bit i: lane i); go
    // on without them". Header only, on lane 0, not counted by IMPI's flow control.
    PK_WAN_LANES = 0x77610002,
};
constexpr size_t kPacketHeader = 128;
// wanmpi extension (only on links of several lanes, link handshake version >= 3;
// docs/design/lanes.md "Small messages on two lanes"): an eager PK_DATA (pk_len == pk_msglen)
// whose pk_count is this mark was sent twice, on two lanes of the link, with the same pk_seqnum;
// the receiver keeps the copy that comes first and drops the other. (pk_count is a QoS field
// plain IMPI leaves 0; on laned links it is otherwise used only by granted DATA, pk_drqid != 0.)
constexpr int64_t kSentTwice = 0x5457494345;  // "TWICE"
// ... and a matching packet (DATA/DATASYNC that opens a message) sent once by a host that has
// sent messages twice to that process before: the receiver matches it in number order only
// (core/seq_order.hpp "strict"), since its stream is no longer FIFO on one lane.
constexpr int64_t kStrictOrder = 0x535452494354;  // "STRICT"

struct Proc {
    HostId host{};
    int64_t pid = 0;
    bool operator==(const Proc&) const = default;
};

struct Packet {
    uint32_t type = 0;
    uint32_t len = 0;  // payload bytes following the header (DATA/DATASYNC only)
    Proc src, dest;
    uint64_t srqid = 0, drqid = 0, msglen = 0;
    int32_t lsrank = 0, tag = 0;
    uint64_t cid = 0, seqnum = 0;
    int64_t count = 0;
    uint64_t dtype = 0, reserved = 0;
};
void encode_packet(const Packet& p, uint8_t out[kPacketHeader]);
// Validates what a receiver must not trust: the type, and that non-data packets carry no
// payload (their pk_len is ignored, as LAM sends 128 there) and data payloads are <= maxlen.
// Returns an error text, or "" when `p` is good.
std::string decode_packet(const uint8_t in[kPacketHeader], uint64_t maxlen, Packet* p);
bool packet_has_payload(uint32_t type);

// wanmpi extension (only between two wanmpi hosts whose link handshake set kFlagZstd on both
// sides, wanlink/compress.hpp): a DATA/DATASYNC packet whose payload is one zstd frame.
// pk_reserved (IMPI: "reserved, 0") = "ZSTD" in its high 4 bytes and the payload's length before
// compression in its low 4; pk_len is the compressed length, which is what follows on the wire.
// Every other field keeps its meaning for the uncompressed payload. A compressed payload is
// always shorter than the raw one, so pk_len <= the raw length <= IMPI_C_DATALEN and
// <= pk_msglen still hold: impi-relay, which checks those and forwards the payload untouched,
// passes it on as it is.
// A payload that went through a filter before zstd (wanlink::Filter 1..3; only between hosts
// that both set kFlagZfilter) is marked "ZSF" + the filter's number instead of "ZSTD"; the
// receiver undoes the filter after decoding.
constexpr uint64_t kZstdMark = uint64_t(0x5A535444) << 32;        // "ZSTD"
constexpr uint64_t kZstdFilterMark = uint64_t(0x5A534600) << 32;  // "ZSF" + filter
constexpr uint8_t kZstdFilters = 4;                               // filters 1..3 exist
inline uint64_t compressed_mark(uint32_t raw_len, uint8_t filter = 0) {
    return (filter ? kZstdFilterMark | (uint64_t(filter) << 32) : kZstdMark) | raw_len;
}
// Turns an encoded DATA/DATASYNC header (pk_len = raw_len) into that of its compressed form.
void mark_compressed(uint8_t hdr[kPacketHeader], uint32_t wire_len, uint32_t raw_len,
                     uint8_t filter = 0);
// For a received packet: false if it is not marked compressed (raw_len untouched); else true,
// raw_len = the length before compression, and `err` says what is wrong with the mark ("" if
// nothing: marked on a data packet, 0 < pk_len < raw_len <= maxlen and <= pk_msglen, a known
// filter). *filter (if given) = the filter's number, 0 for plain "ZSTD".
bool compressed_len(const Packet& p, uint64_t maxlen, uint32_t* raw_len, std::string* err,
                    uint8_t* filter = nullptr);

}  // namespace wanmpi::impi
