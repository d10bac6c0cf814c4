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

// auto by default: one filter does not fit all data (measured in docs/design/compression.md:
// a smooth double field wants linear prediction, integer ramps delta, mostly-zero buffers
// nothing), and choosing costs a few samples every kFilterProbe packets.
static base::Tunable<std::string> t_filter(
    "WAN", "COMPRESS_FILTER", "auto",
    "Transform applied before zstd on compressed WAN payloads (both clusters must be wanmpi "
    "with filters; else none): auto (the filter whose sample compresses best, re-chosen every "
    "16 packets to a peer), none, shuffle (bytes of 64-bit words regrouped, as HDF5's shuffle), "
    "delta (each 64-bit word minus the previous) or linear (each minus 2 w[i-1] - w[i-2]; smooth "
    "floating-point fields). Lossless whatever the data; only the ratio depends on it.",
    base::Level::tuner);

const char* filter_name(Filter f) {
    switch (f) {
    case Filter::none: return "none";
    case Filter::shuffle: return "shuffle";
    case Filter::delta: return "delta";
    case Filter::linear: return "linear";
    }
    return "?";
}

Status parse_filter(const std::string& text, bool* automatic, Filter* fixed) {
    *automatic = false;
    if (text == "auto" || text.empty()) {
        *automatic = true;
        *fixed = Filter::none;
        return Status::OK();
    }
    for (int i = 0; i < kFilters; ++i)
        if (text == filter_name(Filter(i))) {
            *fixed = Filter(i);
            return Status::OK();
        }
    return Status(Errc::invalid, "WANMPI_WAN_COMPRESS_FILTER='" + text +
                                     "' is not auto, none, shuffle, delta or linear");
}

Status filter_policy(bool* automatic, Filter* fixed) {
    return parse_filter(t_filter.get(), automatic, fixed);
}

// Words are little-endian on the wire whatever the host, so a big-endian receiver undoes what a
// little-endian sender did (the payload bytes themselves are never reinterpreted).
static inline uint64_t load64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}
static inline void store64(unsigned char* p, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    std::memcpy(p, &v, 8);
}
static inline uint64_t zigzag(uint64_t v) { return (v << 1) ^ uint64_t(int64_t(v) >> 63); }
static inline uint64_t unzigzag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

// Transposes an 8x8 byte matrix held as 8 little-endian words (byte k of x[i] <-> byte i of
// x[k]): three rounds of block swaps (4x4, 2x2, 1x1), its own inverse.
static inline void transpose8(uint64_t x[8]) {
    for (int i = 0; i < 4; ++i) {
        const uint64_t t = ((x[i] >> 32) ^ x[i + 4]) & 0x00000000FFFFFFFFull;
        x[i] ^= t << 32;
        x[i + 4] ^= t;
    }
    for (int i : {0, 1, 4, 5}) {
        const uint64_t t = ((x[i] >> 16) ^ x[i + 2]) & 0x0000FFFF0000FFFFull;
        x[i] ^= t << 16;
        x[i + 2] ^= t;
    }
    for (int i : {0, 2, 4, 6}) {
        const uint64_t t = ((x[i] >> 8) ^ x[i + 1]) & 0x00FF00FF00FF00FFull;
        x[i] ^= t << 8;
        x[i + 1] ^= t;
    }
}

// One pass of either direction: encoding predicts each word and puts the residual's byte k in
// plane k (out[k * nw + i]); decoding gathers the planes and rebuilds the words with the same
// predictor state. Groups of 8 words go through an 8x8 byte transpose, so that every plane is
// written (read) 8 bytes at a time; byte-at-a-time strides ran 5-7 times slower than memcpy.
static void filter_run(Filter f, const void* src, size_t n, void* dst, bool decode) {
    const auto* in = static_cast<const unsigned char*>(src);
    auto* out = static_cast<unsigned char*>(dst);
    const size_t nw = n / 8;
    if (f == Filter::none) {
        std::memcpy(out, in, n);
        return;
    }
    uint64_t a = 0, b = 0;  // the previous two words (0 before the first)
    auto residual = [&](uint64_t w) {
        const uint64_t pred = f == Filter::delta ? a : 2 * a - b;
        b = a;
        a = w;
        return f == Filter::shuffle ? w : zigzag(w - pred);
    };
    auto word = [&](uint64_t r) {
        const uint64_t pred = f == Filter::delta ? a : 2 * a - b;
        const uint64_t w = f == Filter::shuffle ? r : unzigzag(r) + pred;
        b = a;
        a = w;
        return w;
    };
    size_t i = 0;
    uint64_t x[8];
    for (; i + 8 <= nw; i += 8) {
        if (!decode) {
            for (int j = 0; j < 8; ++j) x[j] = residual(load64(in + 8 * (i + size_t(j))));
            transpose8(x);
            for (size_t k = 0; k < 8; ++k) store64(out + k * nw + i, x[k]);
        } else {
            for (size_t k = 0; k < 8; ++k) x[k] = load64(in + k * nw + i);
            transpose8(x);
            for (int j = 0; j < 8; ++j) store64(out + 8 * (i + size_t(j)), word(x[j]));
        }
    }
    for (; i < nw; ++i) {  // the last nw % 8 words, byte by byte
        if (!decode) {
            const uint64_t r = residual(load64(in + 8 * i));
            for (size_t k = 0; k < 8; ++k) out[k * nw + i] = uint8_t(r >> (8 * k));
        } else {
            uint64_t r = 0;
            for (size_t k = 0; k < 8; ++k) r |= uint64_t(in[k * nw + i]) << (8 * k);
            store64(out + 8 * i, word(r));
        }
    }
    std::memcpy(out + 8 * nw, in + 8 * nw, n - 8 * nw);
}

void filter_encode(Filter f, const void* src, size_t n, void* dst) {
    filter_run(f, src, n, dst, false);
}
void filter_decode(Filter f, const void* src, size_t n, void* dst) {
    filter_run(f, src, n, dst, true);
}

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

size_t Compressor::compress(const void* src, size_t n, void* dst, size_t cap, int level,
                            Filter f) {
    auto* c = static_cast<ZSTD_CCtx*>(cctx_);
    if (!c || n == 0) return 0;
    const int64_t t0 = base::now_ns();
    if (f != Filter::none) {  // filtering is part of the compressor's cost: timed with it
        if (filtered_cap_ < n) {
            filtered_.reset(new char[n]);
            filtered_cap_ = n;
        }
        filter_encode(f, src, n, filtered_.get());
        src = filtered_.get();
    }
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

size_t Compressor::gather(const void* src, size_t n) {
    const size_t want = kSampleChunk * kSampleChunks;
    const char* s = static_cast<const char*>(src);
    if (n <= want) {
        std::memcpy(sample_, s, n);
        return n;
    }
    // Chunks at evenly spaced offsets: a buffer that is zero at the start and random later (or
    // the reverse) is judged by both parts. Offsets are multiples of 8, so a filter sees the
    // payload's words, not words straddling two of them.
    const size_t step = ((n - kSampleChunk) / (kSampleChunks - 1)) & ~size_t(7);
    for (size_t i = 0; i < kSampleChunks; ++i)
        std::memcpy(sample_ + i * kSampleChunk, s + i * step, kSampleChunk);
    return want;
}

double Compressor::sample_ratio(const void* src, size_t n, int level, Filter f) {
    const size_t len = gather(src, n);
    if (len == 0) return 1.0;
    char* out = sample_ + kSampleChunk * kSampleChunks;
    const size_t r = compress(sample_, len, out, ZSTD_compressBound(kSampleChunk * kSampleChunks),
                              level, f);
    return r ? double(r) / double(len) : 1.01;
}

Filter Compressor::best_filter(const void* src, size_t n, int level, unsigned allowed,
                               double* ratio) {
    const size_t len = gather(src, n);
    Filter best = Filter::none;
    *ratio = 1.01;
    if (len == 0) return best;
    char* out = sample_ + kSampleChunk * kSampleChunks;
    for (int i = 0; i < kFilters; ++i) {
        if (!(allowed & (1u << i))) continue;
        const size_t r = compress(sample_, len, out,
                                  ZSTD_compressBound(kSampleChunk * kSampleChunks), level, Filter(i));
        const double q = r ? double(r) / double(len) : 1.01;
        // A filter must beat no filter clearly: ties go to the cheaper one.
        if (q < *ratio * 0.97 || (i == 0 && q <= *ratio)) {
            *ratio = q;
            best = Filter(i);
        }
    }
    return best;
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
