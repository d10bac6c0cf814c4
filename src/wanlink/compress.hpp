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
//   Filter      a reversible transform applied before zstd (byte shuffle, delta or linear
//               prediction of 64-bit words, as HDF5/Blosc's shuffle and FPC/fpzip's predictors
//               do): a smooth double field that zstd alone shrinks to 0.82 shrinks to about
//               0.1 once its words are predicted from their neighbours. Negotiated apart from
//               zstd (kFlagZfilter), chosen by sampling (WANMPI_WAN_COMPRESS_FILTER).
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
#include <memory>
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

// Filters, applied to a payload before zstd and undone after it. The payload is read as
// little-endian 64-bit words w[0..n/8) (whatever the data: the filter is only a transform, and
// the best one is found by sampling); the n % 8 bytes after the last word go unchanged at the
// end. shuffle: the words' bytes regrouped into 8 planes (byte 0 of every word, then byte 1,
// ...), so the slowly varying high bytes of neighbouring numbers sit together. delta: each word
// minus the one before; linear: each word minus the prediction 2 w[i-1] - w[i-2]; both then
// zigzag-coded (small negative residuals become small numbers) and shuffled. Wire value: the
// enum's value (impi_wire.hpp puts it in the packet's compression mark).
enum class Filter : uint8_t { none = 0, shuffle = 1, delta = 2, linear = 3 };
constexpr int kFilters = 4;
const char* filter_name(Filter f);
// src and dst hold n bytes each and must not overlap.
void filter_encode(Filter f, const void* src, size_t n, void* dst);
void filter_decode(Filter f, const void* src, size_t n, void* dst);
// What WANMPI_WAN_COMPRESS_FILTER asks for: *fixed = false for auto (chosen by sampling), else
// the one filter to use. Errors name the variable and the accepted values.
base::Status filter_policy(bool* automatic, Filter* fixed);
base::Status parse_filter(const std::string& text, bool* automatic, Filter* fixed);

class Compressor {
public:
    Compressor();
    ~Compressor();
    Compressor(const Compressor&) = delete;
    Compressor& operator=(const Compressor&) = delete;

    // Compresses src[0, n) at `level` into dst[0, cap). Returns the compressed size, or 0 when
    // it does not fit in cap (callers pass cap < n: then 0 means "not worth sending
    // compressed") or zstd failed. Times itself into speed_Bps().
    size_t compress(const void* src, size_t n, void* dst, size_t cap, int level,
                    Filter f = Filter::none);
    // Ratio (compressed / raw, about 0..1.01) of a sample of src: kSampleChunks chunks of
    // kSampleChunk bytes spread evenly over it, compressed as one frame at `level`. Costs about
    // kSampleChunks * kSampleChunk bytes of compression (1/64 of a 1 MiB packet).
    // With a filter: the ratio of the sample filtered first (chunks start on 8-byte offsets of
    // src, so words keep their alignment).
    double sample_ratio(const void* src, size_t n, int level, Filter f = Filter::none);
    // The filter whose sample compresses best, among those in `allowed` (bit 1 << filter), and
    // its sample ratio. Costs one sample per allowed filter.
    Filter best_filter(const void* src, size_t n, int level, unsigned allowed, double* ratio);
    // Input bytes per second the compressor achieved on compressible data (a moving average of
    // the calls above); 0 before the first measurement.
    double speed_Bps() const { return speed_Bps_; }
    uint64_t busy_ns() const { return busy_ns_; }  // time spent compressing (statistics)

    static constexpr size_t kSampleChunk = 4096, kSampleChunks = 4;

private:
    void note(size_t in, size_t out, int64_t ns);
    size_t gather(const void* src, size_t n);  // the sample into sample_; its length
    void* cctx_ = nullptr;  // ZSTD_CCtx
    char* sample_ = nullptr;  // kSampleChunk * kSampleChunks, and room for its frame
    std::unique_ptr<char[]> filtered_;  // a filtered payload (or sample) on its way to zstd
    size_t filtered_cap_ = 0;
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
