#include "wanlink/compress.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/clock.hpp"
#include "base/tunables.hpp"

namespace wanmpi::wanlink {

using base::Errc;
using base::Status;

// auto by default: the sample costs about 1/64 of compressing a packet, so data that does not
// compress, and links faster than the compressor, pay almost nothing; a slow WAN carrying
// compressible data (what PACX-MPI compressed for) gains without the user knowing the knob.
static base::Tunable<std::string> t_compress(
    "WAN", "COMPRESS", "auto",
    "Compression of message payloads between two wanmpi clusters (zstd; never inside a "
    "cluster, never with a plain IMPI peer): off, auto, or zstd:LEVEL (zstd alone = zstd:1; "
    "levels -7..19, negative = faster). auto compresses a packet when a small sample of it "
    "compresses and the link (WANMPI_WAN_RATE, else the connection's measured delivery rate) "
    "is slow enough against the compressor's measured speed that it pays; zstd:LEVEL "
    "compresses every payload of at least WANMPI_WAN_COMPRESS_MIN bytes (sent as is when it "
    "does not shrink). A pair of clusters compresses only if neither side is off; each side "
    "decides for what it sends. docs/tuning.md says when it helps.",
    base::Level::user);
static base::Tunable<int64_t> t_compress_min(
    "WAN", "COMPRESS_MIN", 8192,
    "Smallest packet payload (bytes) that WANMPI_WAN_COMPRESS may compress; smaller ones go as "
    "they are (their latency is the link's, and they save little).",
    base::Level::tuner);

Status parse_compress(const std::string& text, CompressPolicy* out) {
    CompressPolicy p;
    p.min_bytes = uint64_t(std::max<int64_t>(1, t_compress_min.get()));
    auto bad = [&] {
        return Status(Errc::invalid, "WANMPI_WAN_COMPRESS='" + text +
                                         "' is not off, auto, zstd or zstd:LEVEL (LEVEL " +
                                         std::to_string(std::max(ZSTD_minCLevel(), -7)) + ".." +
                                         std::to_string(ZSTD_maxCLevel()) + ")");
    };
    if (text == "off" || text == "0" || text == "none") {
        p.mode = CompressPolicy::off;
    } else if (text == "auto" || text.empty()) {
        p.mode = CompressPolicy::automatic;
        p.level = 1;
    } else if (text == "zstd") {
        p.mode = CompressPolicy::fixed;
        p.level = 1;
    } else if (text.rfind("zstd:", 0) == 0 && text.size() > 5) {
        const char* s = text.c_str() + 5;
        char* e = nullptr;
        long v = std::strtol(s, &e, 10);
        // Levels below -7 trade so much ratio for speed that they rarely pay on a WAN, and 0
        // is zstd's "default" (3), which would read as "none" to a user: both refused.
        if (*e || e == s || v == 0 || v < std::max(ZSTD_minCLevel(), -7) || v > ZSTD_maxCLevel())
            return bad();
        p.mode = CompressPolicy::fixed;
        p.level = int(v);
    } else {
        return bad();
    }
    *out = p;
    return Status::OK();
}

Status compress_policy(CompressPolicy* out) { return parse_compress(t_compress.get(), out); }

Compressor::Compressor() {
    cctx_ = ZSTD_createCCtx();
    sample_ = new char[kSampleChunk * kSampleChunks + ZSTD_compressBound(kSampleChunk * kSampleChunks)];
}

Compressor::~Compressor() {
    ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_));
    delete[] sample_;
}

void Compressor::note(size_t in, size_t out, int64_t ns) {
    busy_ns_ += uint64_t(std::max<int64_t>(ns, 0));
    // Only compressible input says how fast compressing is when it matters: zstd skips through
    // incompressible bytes several times faster.
    if (in < 1024 || out == 0 || out * 10 > in * 9 || ns <= 0) return;
    const double s = double(in) * 1e9 / double(ns);
    speed_Bps_ = speed_Bps_ == 0 ? s : 0.8 * speed_Bps_ + 0.2 * s;
}

size_t Compressor::compress(const void* src, size_t n, void* dst, size_t cap, int level) {
    auto* c = static_cast<ZSTD_CCtx*>(cctx_);
    if (!c || n == 0) return 0;
    const int64_t t0 = base::now_ns();
    ZSTD_CCtx_reset(c, ZSTD_reset_session_only);
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    // The header announces the raw length itself; no checksum: TCP (and TLS) protect the
    // bytes, and the decoder checks the decoded length.
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0);
    size_t r = ZSTD_compress2(c, dst, cap, src, n);
    const size_t out = ZSTD_isError(r) ? 0 : r;
    note(n, out ? out : n, base::now_ns() - t0);
    return out;
}

double Compressor::sample_ratio(const void* src, size_t n, int level) {
    const size_t want = kSampleChunk * kSampleChunks;
    const char* s = static_cast<const char*>(src);
    size_t len;
    if (n <= want) {
        std::memcpy(sample_, s, n);
        len = n;
    } else {
        // Chunks at evenly spaced offsets: a buffer that is zero at the start and random later
        // (or the reverse) is judged by both parts.
        const size_t step = (n - kSampleChunk) / (kSampleChunks - 1);
        for (size_t i = 0; i < kSampleChunks; ++i)
            std::memcpy(sample_ + i * kSampleChunk, s + i * step, kSampleChunk);
        len = want;
    }
    if (len == 0) return 1.0;
    char* out = sample_ + want;
    const size_t r = compress(sample_, len, out, ZSTD_compressBound(want), level);
    return r ? double(r) / double(len) : 1.01;
}

Decompressor::Decompressor() { dctx_ = ZSTD_createDCtx(); }
Decompressor::~Decompressor() { ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(dctx_)); }

std::string Decompressor::run(const void* src, size_t n, void* dst, size_t raw) {
    auto* d = static_cast<ZSTD_DCtx*>(dctx_);
    if (!d) return "no zstd decompression context (out of memory)";
    // The frame's own content size, when it names one, must be the header's.
    const unsigned long long fs = ZSTD_getFrameContentSize(src, n);
    if (fs == ZSTD_CONTENTSIZE_ERROR) return "not a zstd frame";
    if (fs != ZSTD_CONTENTSIZE_UNKNOWN && fs != raw)
        return "zstd frame of " + std::to_string(fs) + " bytes where the header announced " +
               std::to_string(raw);
    ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
    // Single-pass decoding allocates nothing the frame asks for (its window lives in dst) and
    // stops at `raw` bytes of output (dstSize_tooSmall), so nothing the frame says can make it
    // write more or take more memory; it also checks the frame's checksum if there is one.
    size_t r = ZSTD_decompressDCtx(d, dst, raw, src, n);
    if (ZSTD_isError(r)) return std::string("zstd: ") + ZSTD_getErrorName(r);
    if (r != raw)
        return "zstd frame decodes to " + std::to_string(r) + " bytes where the header announced " +
               std::to_string(raw);
    return "";
}

bool worth_compressing(double ratio, double link_Bps, double speed_Bps) {
    if (!(ratio < 0.9)) return false;  // saves less than 10 %: never worth the CPU
    if (speed_Bps <= 0) speed_Bps = 300e6;
    // Rate not known yet (a connection's first round trips): a WAN, so compress what clearly
    // shrinks; the next packets are judged with the measured rate.
    if (link_Bps <= 0) return ratio < 0.75;
    // Per input byte: ratio/link on the wire plus 1/speed compressing, against 1/link. The
    // kernel sends the previous packet while the rank compresses the next one, so the real
    // gain exceeds this estimate (measured: a predicted 9 % was 26 % at 200 Mbit/s); 5 % of
    // predicted gain is a real one, and where compressing is the bottleneck (1 Gbit/s against
    // a few hundred MB/s of zstd on a loaded 2-core host: 0.66x forced) it predicts a loss.
    return ratio / link_Bps + 1.0 / speed_Bps < 0.95 / link_Bps;
}

}  // namespace wanmpi::wanlink
