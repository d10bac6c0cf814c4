// The link between mpirun and a wanmpi-proxy (one proxy per remote host, started through the
// launcher agent, e.g. "ssh HOST /path/wanmpi-proxy"). The link is the agent's stdin/stdout, so it
// works through anything that forwards a byte stream and needs no port reachable from the remote
// host. mpirun owns the proxy: when the link breaks, the proxy kills its ranks and exits.
//
// Wire format (all integers big-endian):
//   proxy -> mpirun first:  the magic line "\nWANMPI-PROXY-1\n" (anything the agent or a login
//                           script prints before it is passed to mpirun's stderr), then frames.
//   frame:  u8 type | u32 rank (0xffffffff: none) | u32 length | length bytes of payload
// Frames and their payloads:
//   mpirun -> proxy
//     job      ProxyJob (encode_job)                    first frame; the proxy spawns the ranks
//     pmi      one PMI-1 line for `rank` (with '\n')   relayed to the rank's PMI_FD socket
//     in       bytes for rank's stdin                    in_eof: close it
//     signal   be32 signal number                        forwarded to every live rank
//     kill     be32 grace ms                             SIGTERM every rank, SIGKILL after grace
//   proxy -> mpirun
//     hello    strings [hostname, pid]
//     started  be32 pid of `rank`
//     failed   text: why `rank` could not be started
//     pmi      one PMI-1 line from `rank` (without '\n')
//     out/err  bytes the rank wrote to stdout/stderr
//     exit     be32 raw wait status of `rank` (after its output and PMI lines)
// The proxy exits when every rank has exited and been reported; mpirun then sees EOF.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"

namespace wanmpi::runtime {

inline constexpr std::string_view kProxyMagic = "\nWANMPI-PROXY-1\n";
inline constexpr uint32_t kNoRank = 0xffffffffu;
inline constexpr uint32_t kMaxFramePayload = 64u << 20;

enum class FrameType : uint8_t {
    job = 1,
    pmi = 2,
    in = 3,
    in_eof = 4,
    signal = 5,
    kill = 6,
    hello = 16,
    started = 17,
    failed = 18,
    out = 19,
    err = 20,
    exit = 21,
};

struct Frame {
    FrameType type{};
    uint32_t rank = kNoRank;
    std::string payload;
};

void append_frame(std::string* out, FrameType t, uint32_t rank, std::string_view payload);
std::string be32_payload(uint32_t v);
std::optional<uint32_t> be32_from(std::string_view payload);

// Incremental decoder. feed() returns an error (Errc::proto_error) for an unknown type or an
// oversized frame; the link is then unusable.
class FrameDecoder {
public:
    base::Status feed(const char* data, size_t n);
    bool next(Frame* f);

private:
    std::string buf_;
    size_t pos_ = 0;
};

// Length-prefixed list of strings: be32 count, then (be32 length, bytes) each.
void put_strings(std::string* out, const std::vector<std::string>& v);
bool get_strings(std::string_view in, std::vector<std::string>* v);

// What a proxy starts: ranks first_rank .. first_rank+count-1 of a job of `size`.
struct ProxyJob {
    uint32_t first_rank = 0;
    uint32_t count = 0;
    uint32_t size = 0;
    uint32_t host_index = 0;
    std::string cwd;
    std::vector<std::string> argv;
    std::vector<std::string> env;  // "NAME=value" set on top of the proxy's own environment
};
std::string encode_job(const ProxyJob& j);
base::Status decode_job(std::string_view payload, ProxyJob* j);

}  // namespace wanmpi::runtime
