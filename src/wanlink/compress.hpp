// Compression of inter-cluster payloads (issue 14, point 2; docs/tuning.md "Compression"):
// zstd, one independent frame per packet payload, as PACX-MPI compressed its inter-site
// traffic with zlib. This layer knows bytes, not IMPI or MPI: the wan route (core/wan.cpp)
// decides which payloads are candidates, marks a compressed packet in its header
// (impi_wire.hpp, compressed_mark) and calls these.
//
//   CompressPolicy  what WANMPI_WAN_COMPRESS / _COMPRESS_MIN ask for (off, auto, zstd:LEVEL).
//   Compressor      a compression context, the cheap sample that `auto` judges data by, and the
//                   compressor's measured speed.
//   Decompressor    the decoder of payloads from the network: exactly `raw` bytes or an error,
//                   whatever the bytes (fuzzed: tests/unit/wanlink_test.cpp, CompressFuzz).
//   worth_compressing  `auto`'s rule: sample ratio x link rate x compressor speed.
//
// Negotiation is the link handshake's kFlagZstd (handshake.hpp): a host sets it when its
// policy is not off; a pair compresses only when both set it (each side then still decides per
// packet what it sends), so a cluster with compression off neither sends nor receives
// compressed payloads, and a plain IMPI peer (no handshake) never sees one.
//
// Threading: a Compressor / Decompressor belongs to one owner (the wan route, under the engine
// lock); the free functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.hpp"

namespace wanmpi::wanlink {

struct CompressPolicy {
    enum Mode : uint8_t { off, automatic, fixed };
    Mode mode = automatic;
    int level = 1;               // zstd level (fixed: the user's; automatic: 1)
    uint64_t min_bytes = 8192;   // payloads below this are never compressed
};
// Parses a WANMPI_WAN_COMPRESS value: off | auto | zstd | zstd:LEVEL (LEVEL in zstd's range,
// negative levels being the fast ones). Errors name the variable and the accepted forms.
base::Status parse_compress(const std::string& text, CompressPolicy* out);
// The policy the environment sets (parsed once; the error again on every call).
base::Status compress_policy(CompressPolicy* out);

class Compressor {
public:
    Compressor();
    ~Compressor();
    Compressor(const Compressor&) = delete;
    Compressor& operator=(const Compressor&) = delete;

    // Compresses src[0, n) at `level` into dst[0, cap). Returns the compressed size, or 0 when
    // it does not fit in cap (callers pass cap < n: then 0 means "not worth sending
    // compressed") or zstd failed. Times itself into speed_Bps().
    size_t compress(const void* src, size_t n, void* dst, size_t cap, int level);
    // Ratio (compressed / raw, about 0..1.01) of a sample of src: kSampleChunks chunks of
    // kSampleChunk bytes spread evenly over it, compressed as one frame at `level`. Costs about
    // kSampleChunks * kSampleChunk bytes of compression (1/64 of a 1 MiB packet).
    double sample_ratio(const void* src, size_t n, int level);
    // Input bytes per second the compressor achieved on compressible data (a moving average of
    // the calls above); 0 before the first measurement.
    double speed_Bps() const { return speed_Bps_; }
    uint64_t busy_ns() const { return busy_ns_; }  // time spent compressing (statistics)

    static constexpr size_t kSampleChunk = 4096, kSampleChunks = 4;

private:
    void note(size_t in, size_t out, int64_t ns);
    void* cctx_ = nullptr;  // ZSTD_CCtx
    char* sample_ = nullptr;  // kSampleChunk * kSampleChunks, and room for its frame
    double speed_Bps_ = 0;
    uint64_t busy_ns_ = 0;
};

class Decompressor {
public:
    Decompressor();
    ~Decompressor();
    Decompressor(const Decompressor&) = delete;
    Decompressor& operator=(const Decompressor&) = delete;
    // Decodes the zstd frame src[0, n) into dst, which must come out exactly `raw` bytes long
    // (the length the packet header announced). "" on success, else what is wrong; never
    // writes past dst[raw), whatever src holds.
    std::string run(const void* src, size_t n, void* dst, size_t raw);

private:
    void* dctx_ = nullptr;  // ZSTD_DCtx
};

// `auto`'s rule for one payload whose sample compresses to `ratio` (< 0.9: it must save 10 %):
// compress when sending ratio x the bytes plus compressing them takes 5 % less time than
// sending them as they are. link_Bps: the rate this rank gets on the link (bytes/s; 0 = not known yet: then
// only a ratio below 0.75 compresses); speed_Bps: the compressor's measured speed (0 = not measured yet: 300 MB/s, zstd
// level 1 on one core of a modest machine). The model charges compression in full, although
// the kernel meanwhile sends what was queued before: it errs towards sending as is.
bool worth_compressing(double ratio, double link_Bps, double speed_Bps);

}  // namespace wanmpi::wanlink
