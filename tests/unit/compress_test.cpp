// src/wanlink/compress: the WANMPI_WAN_COMPRESS parser, the zstd codec round trip, the payload
// decoder against hostile input (a deterministic mutation fuzzer with guard bytes around the
// output), the sample, and auto's rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "wanlink/compress.hpp"

using namespace wanmpi;
using wanlink::CompressPolicy;

namespace {
std::vector<char> smooth_doubles(size_t n) {
    std::vector<char> v(n * 8);
    for (size_t i = 0; i < n; ++i) {
        double d = 300.0 + std::round(20 * std::sin(double(i) * 1e-3) * 64) / 64;
        std::memcpy(&v[i * 8], &d, 8);
    }
    return v;
}
std::vector<char> random_bytes(size_t n, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::vector<char> v(n);
    for (auto& c : v) c = char(rng());
    return v;
}
std::vector<char> pack(const std::vector<char>& raw, int level = 1) {
    wanlink::Compressor c;
    std::vector<char> out(raw.size() + 1024);
    size_t n = c.compress(raw.data(), raw.size(), out.data(), out.size(), level);
    out.resize(n);
    return out;
}
}  // namespace

TEST(WanlinkCompress, PolicyParsing) {
    CompressPolicy p;
    ASSERT_TRUE(wanlink::parse_compress("off", &p).ok());
    EXPECT_EQ(p.mode, CompressPolicy::off);
    ASSERT_TRUE(wanlink::parse_compress("auto", &p).ok());
    EXPECT_EQ(p.mode, CompressPolicy::automatic);
    EXPECT_EQ(p.level, 1);
    ASSERT_TRUE(wanlink::parse_compress("zstd", &p).ok());
    EXPECT_EQ(p.mode, CompressPolicy::fixed);
    EXPECT_EQ(p.level, 1);
    ASSERT_TRUE(wanlink::parse_compress("zstd:7", &p).ok());
    EXPECT_EQ(p.level, 7);
    ASSERT_TRUE(wanlink::parse_compress("zstd:-3", &p).ok());
    EXPECT_EQ(p.level, -3);
    EXPECT_EQ(p.min_bytes, 8192u);  // WANMPI_WAN_COMPRESS_MIN's default
    for (const char* bad : {"zstd:", "zstd:0", "zstd:99", "zstd:-100", "zstd:1x", "gzip", "on",
                            "ZSTD:1", "zstd:1:2"}) {
        base::Status s = wanlink::parse_compress(bad, &p);
        EXPECT_FALSE(s.ok()) << bad;
        EXPECT_NE(s.message().find("WANMPI_WAN_COMPRESS='" + std::string(bad) + "'"),
                  std::string::npos)
            << s.message();
    }
}

TEST(WanlinkCompress, RoundTripAndIncompressibleIsRefused) {
    wanlink::Compressor c;
    wanlink::Decompressor d;
    for (const auto& raw : {smooth_doubles(32768), std::vector<char>(1 << 20, 0),
                            std::vector<char>(8192, 'x')}) {
        std::vector<char> z(raw.size() - 1);
        size_t n = c.compress(raw.data(), raw.size(), z.data(), z.size(), 1);
        ASSERT_GT(n, 0u);
        ASSERT_LT(n, raw.size());
        std::vector<char> back(raw.size());
        EXPECT_EQ(d.run(z.data(), n, back.data(), back.size()), "");
        EXPECT_EQ(back, raw);
    }
    // Random bytes do not fit in fewer bytes than they are: 0, the caller sends them as is.
    auto r = random_bytes(65536, 1);
    std::vector<char> z(r.size() - 1);
    EXPECT_EQ(c.compress(r.data(), r.size(), z.data(), z.size(), 1), 0u);
    EXPECT_GT(c.busy_ns(), 0u);
    EXPECT_GT(c.speed_Bps(), 0.0);  // measured on the compressible inputs
}

TEST(WanlinkCompress, DecoderRejectsWhatTheHeaderDoesNotAnnounce) {
    wanlink::Decompressor d;
    auto raw = smooth_doubles(4096);
    auto z = pack(raw);
    ASSERT_FALSE(z.empty());
    std::vector<char> out(raw.size() + 64, 'G');
    // Announced longer or shorter than the frame's content.
    EXPECT_NE(d.run(z.data(), z.size(), out.data(), raw.size() + 1), "");
    EXPECT_NE(d.run(z.data(), z.size(), out.data(), raw.size() - 1), "");
    // Truncated, garbage, empty, a skippable frame, two frames where one was announced.
    EXPECT_NE(d.run(z.data(), z.size() - 1, out.data(), raw.size()), "");
    EXPECT_NE(d.run("garbage!", 8, out.data(), raw.size()), "");
    EXPECT_NE(d.run(z.data(), 0, out.data(), raw.size()), "");
    const unsigned char skippable[] = {0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4};
    EXPECT_NE(d.run(skippable, sizeof skippable, out.data(), raw.size()), "");
    std::vector<char> two = z;
    two.insert(two.end(), z.begin(), z.end());
    EXPECT_NE(d.run(two.data(), two.size(), out.data(), raw.size()), "");
    // None of that wrote past the announced length; the frame itself decodes.
    for (size_t i = raw.size(); i < out.size(); ++i) EXPECT_EQ(out[i], 'G');
    EXPECT_EQ(d.run(z.data(), z.size(), out.data(), raw.size()), "");
    EXPECT_EQ(std::memcmp(out.data(), raw.data(), raw.size()), 0);
}

// Mutated frames (bit flips, random bytes, truncation, insertion, other announced lengths) and
// random bytes: the decoder answers "" with exactly the announced bytes, or an error; it never
// writes outside them (guard bytes), never crashes. Seeds: compressible data of several kinds
// and levels.
TEST(WanlinkCompress, FuzzDecoder) {
    std::mt19937_64 rng(20261126);
    std::vector<std::vector<char>> raws = {smooth_doubles(2048), std::vector<char>(20000, 0),
                                           random_bytes(3000, 2)};
    std::string text;
    while (text.size() < 30000) text += "MPI_Send across the WAN, compressed; ";
    raws.emplace_back(text.begin(), text.end());
    std::vector<std::vector<char>> seeds;
    for (const auto& r : raws)
        for (int level : {-3, 1, 9}) seeds.push_back(pack(r, level));
    wanlink::Decompressor d;
    int decoded = 0, refused = 0;
    constexpr size_t kGuard = 64;
    for (int it = 0; it < 20000; ++it) {
        const size_t si = rng() % seeds.size();
        std::vector<char> in = seeds[si];
        size_t raw = raws[si / 3].size();
        if (it % 10 == 9) {
            in = random_bytes(rng() % 200, unsigned(it));
        } else if (it % 10 != 0) {
            const int ops = 1 + int(rng() % 4);
            for (int k = 0; k < ops && !in.empty(); ++k) {
                switch (rng() % 5) {
                case 0: in[rng() % in.size()] ^= char(1u << (rng() % 8)); break;
                case 1: in[rng() % in.size()] = char(rng()); break;
                case 2: in.resize(rng() % (in.size() + 1)); break;
                case 3: in.insert(in.begin() + long(rng() % in.size()), char(rng())); break;
                default: raw = rng() % 3 ? raw + rng() % 9 - 4 : rng() % 70000; break;
                }
            }
        }
        std::vector<char> out(raw + 2 * kGuard, char(0xA5));
        std::string err = d.run(in.data(), in.size(), out.data() + kGuard, raw);
        for (size_t i = 0; i < kGuard; ++i) {
            ASSERT_EQ(out[i], char(0xA5)) << "iteration " << it << " wrote before the buffer";
            ASSERT_EQ(out[kGuard + raw + i], char(0xA5)) << "iteration " << it << " wrote past it";
        }
        (err.empty() ? decoded : refused)++;
    }
    EXPECT_GT(decoded, 1500);  // the unmutated seeds (and harmless mutations) decode
    EXPECT_GT(refused, 10000);
}

TEST(WanlinkCompress, SampleJudgesTheWholeBuffer) {
    wanlink::Compressor c;
    auto zeros = std::vector<char>(1 << 20, 0);
    auto rnd = random_bytes(1 << 20, 3);
    EXPECT_LT(c.sample_ratio(zeros.data(), zeros.size(), 1), 0.05);
    EXPECT_GT(c.sample_ratio(rnd.data(), rnd.size(), 1), 0.99);
    // Zero at the start, random after: a sample of the start alone would call it compressible.
    std::vector<char> mixed = rnd;
    std::memset(mixed.data(), 0, mixed.size() / 4);
    const double r = c.sample_ratio(mixed.data(), mixed.size(), 1);
    EXPECT_GT(r, 0.6);
    EXPECT_LT(r, 0.9);
    EXPECT_LT(c.sample_ratio(zeros.data(), 100, 1), 1.0);  // shorter than the sample: all of it
    EXPECT_GE(c.sample_ratio(zeros.data(), 0, 1), 1.0);
}

TEST(WanlinkCompress, AutoRule) {
    const double mbit = 1e6 / 8;
    // Incompressible (or barely): never, whatever the link.
    EXPECT_FALSE(wanlink::worth_compressing(1.0, 10 * mbit, 300e6));
    EXPECT_FALSE(wanlink::worth_compressing(0.92, 1 * mbit, 300e6));
    // A slow link and data that halves: yes; a link faster than the compressor: no.
    EXPECT_TRUE(wanlink::worth_compressing(0.5, 200 * mbit, 300e6));
    EXPECT_FALSE(wanlink::worth_compressing(0.5, 10000 * mbit, 300e6));
    EXPECT_FALSE(wanlink::worth_compressing(0.05, 10000 * mbit, 300e6));
    // 1 Gbit/s: mostly zeros (tiny ratio, fast compressor) yes; a modest ratio no.
    EXPECT_TRUE(wanlink::worth_compressing(0.01, 1000 * mbit, 1500e6));
    EXPECT_FALSE(wanlink::worth_compressing(0.7, 1000 * mbit, 300e6));
    // Rate not known yet: what clearly shrinks goes compressed; speed not known: 300 MB/s.
    EXPECT_TRUE(wanlink::worth_compressing(0.5, 0, 300e6));
    EXPECT_FALSE(wanlink::worth_compressing(0.85, 0, 300e6));
    EXPECT_EQ(wanlink::worth_compressing(0.5, 200 * mbit, 0),
              wanlink::worth_compressing(0.5, 200 * mbit, 300e6));
}

// Filters (wanlink::Filter): lossless for every length and content, odd tails included, and
// never touching bytes outside [0, n) (guard bytes around the output).
TEST(WanlinkCompress, FiltersRoundTripAnyBytes) {
    for (int f = 0; f < wanlink::kFilters; ++f) {
        for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(9), size_t(63),
                         size_t(8 * 13 + 3), size_t(4096), size_t(65536 + 5),
                         size_t(1 << 20)}) {
            std::vector<char> raw = random_bytes(n, unsigned(n * 7 + size_t(f)));
            if (n > 100 && (n & 1)) {  // words that predict well, and an odd tail
                raw = smooth_doubles(n / 8);
                raw.resize(n, 'x');
            }
            std::vector<char> enc(n + 16, 'G'), dec(n + 16, 'G');
            wanlink::filter_encode(wanlink::Filter(f), raw.data(), n, enc.data() + 8);
            wanlink::filter_decode(wanlink::Filter(f), enc.data() + 8, n, dec.data() + 8);
            EXPECT_EQ(std::memcmp(dec.data() + 8, raw.data(), n), 0) << f << " " << n;
            for (int g = 0; g < 8; ++g) {
                EXPECT_EQ(enc[size_t(g)], 'G');
                EXPECT_EQ(enc[n + 8 + size_t(g)], 'G');
                EXPECT_EQ(dec[size_t(g)], 'G');
                EXPECT_EQ(dec[n + 8 + size_t(g)], 'G');
            }
        }
    }
    // Decoding bytes that no encoder produced (the random inputs above, read as residuals):
    // some output, always in bounds (the guards).
}

// Through zstd: a filtered payload comes back exactly; the Compressor applies the filter.
TEST(WanlinkCompress, FilteredCompressionRoundTrip) {
    wanlink::Compressor c;
    wanlink::Decompressor d;
    auto raw = smooth_doubles(1 << 17);
    raw.resize(raw.size() + 3, 'q');  // a tail that is not a whole word
    for (int f = 0; f < wanlink::kFilters; ++f) {
        std::vector<char> z(raw.size()), mid(raw.size()), back(raw.size());
        const size_t n = c.compress(raw.data(), raw.size(), z.data(), z.size(), 1, wanlink::Filter(f));
        ASSERT_GT(n, 0u) << f;
        ASSERT_EQ(d.run(z.data(), n, mid.data(), raw.size()), "");
        wanlink::filter_decode(wanlink::Filter(f), mid.data(), raw.size(), back.data());
        EXPECT_EQ(back, raw) << f;
    }
}

// The sample picks the filter that suits the data: linear prediction for a smooth
// full-precision double field (which zstd alone barely shrinks), one that keeps mostly-zero
// buffers tiny, and it never claims random bytes compress.
TEST(WanlinkCompress, BestFilterFollowsTheData) {
    wanlink::Compressor c;
    const size_t nd = 1 << 17;
    std::vector<char> field(nd * 8);
    for (size_t i = 0; i < nd; ++i) {
        const double x = 6.283185307179586 * double(i) / double(nd);
        const double v = 300.0 + 20.0 * std::sin(x) + 5.0 * std::cos(3.7 * x);
        std::memcpy(&field[i * 8], &v, 8);
    }
    double r0 = c.sample_ratio(field.data(), field.size(), 1);
    double r = 0;
    const unsigned all = (1u << wanlink::kFilters) - 1;
    EXPECT_EQ(c.best_filter(field.data(), field.size(), 1, all, &r), wanlink::Filter::linear);
    EXPECT_GT(r0, 0.7);       // zstd alone: little
    EXPECT_LT(r, r0 / 3);     // predicted: at least 3x better
    std::vector<char> sparse(nd * 8, 0);
    for (size_t i = 0; i < nd; i += 64) {
        const double v = 1.0 + double(i % 1000);
        std::memcpy(&sparse[i * 8], &v, 8);
    }
    c.best_filter(sparse.data(), sparse.size(), 1, all, &r);  // none or shuffle: both tiny
    EXPECT_LT(r, 0.05);
    auto rnd = random_bytes(1 << 20, 5);
    c.best_filter(rnd.data(), rnd.size(), 1, all, &r);
    EXPECT_GT(r, 0.99);
    // Only the allowed ones are tried.
    EXPECT_EQ(c.best_filter(field.data(), field.size(), 1, 1u, &r), wanlink::Filter::none);
    EXPECT_GT(r, 0.7);
}

TEST(WanlinkCompress, FilterPolicyParsing) {
    bool a = false;
    wanlink::Filter f = wanlink::Filter::linear;
    ASSERT_TRUE(wanlink::parse_filter("auto", &a, &f).ok());
    EXPECT_TRUE(a);
    ASSERT_TRUE(wanlink::parse_filter("delta", &a, &f).ok());
    EXPECT_FALSE(a);
    EXPECT_EQ(f, wanlink::Filter::delta);
    ASSERT_TRUE(wanlink::parse_filter("none", &a, &f).ok());
    EXPECT_EQ(f, wanlink::Filter::none);
    base::Status s = wanlink::parse_filter("bitshuffle", &a, &f);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("WANMPI_WAN_COMPRESS_FILTER"), std::string::npos);
}
