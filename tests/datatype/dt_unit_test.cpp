// Unit tests of the datatype engine (flattening, merging, the pack engine, elements, external32,
// reductions on derived types) against a naive reference: random nested types are expanded
// entry by entry into their typemap, and everything the engine does is compared with the same
// operation done one basic element at a time. The engine's sources are compiled in with stubs for
// the error and communicator layers (below), so this runs without MPI_Init.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "bindings/impl.hpp"
#include "core/comm.hpp"
#include "core/datatype.hpp"
#include "core/op.hpp"

// ---- stubs ----------------------------------------------------------------------------------
namespace wanmpi::core {
int make_error(int cls, const char*, ...) { return cls; }
int raise(Comm*, int code) { return code; }
static Comm g_world;
Comm* comm_lookup(MPI_Comm h) { return h == MPI_COMM_WORLD ? &g_world : nullptr; }
int attr_type_copy(MPI_Datatype, MPI_Datatype) { return MPI_SUCCESS; }
int attr_type_delete_all(MPI_Datatype) { return MPI_SUCCESS; }
}  // namespace wanmpi::core

using namespace wanmpi;
using core::Datatype;

namespace {

struct Entry {
    int64_t off;
    MPI_Datatype basic;
};

// The data blocks of a builtin (pair types with padding have two).
std::vector<core::Block> builtin_blocks(MPI_Datatype b) { return core::datatype_get(b)->blocks; }

int64_t extent_of(MPI_Datatype t) {
    MPI_Aint lb, ext;
    impl::Type_get_extent(t, &lb, &ext);
    return ext;
}

// Typemap of one element of `t` at `base`, from the type's contents (independent of the
// engine's parts/runs; only extents come from the library).
void expand(MPI_Datatype t, int64_t base, std::vector<Entry>& out) {
    int ni, na, nd, comb;
    impl::Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED) {
        if (core::datatype_get(t)->size > 0) out.push_back({base, t});
        return;
    }
    std::vector<int> I(size_t(ni) + 1);
    std::vector<MPI_Aint> A(size_t(na) + 1);
    std::vector<MPI_Datatype> D(size_t(nd) + 1);
    impl::Type_get_contents(t, ni, na, nd, I.data(), A.data(), D.data());
    auto block = [&](MPI_Datatype c, int64_t disp, int64_t n) {
        int64_t e = extent_of(c);
        for (int64_t k = 0; k < n; ++k) expand(c, base + disp + k * e, out);
    };
    switch (comb) {
    case MPI_COMBINER_CONTIGUOUS: block(D[0], 0, I[0]); break;
    case MPI_COMBINER_VECTOR:
        for (int i = 0; i < I[0]; ++i) block(D[0], int64_t(i) * I[2] * extent_of(D[0]), I[1]);
        break;
    case MPI_COMBINER_HVECTOR:
        for (int i = 0; i < I[0]; ++i) block(D[0], i * A[0], I[1]);
        break;
    case MPI_COMBINER_INDEXED:
        for (int i = 0; i < I[0]; ++i)
            block(D[0], int64_t(I[1 + I[0] + i]) * extent_of(D[0]), I[1 + i]);
        break;
    case MPI_COMBINER_HINDEXED:
        for (int i = 0; i < I[0]; ++i) block(D[0], A[i], I[1 + i]);
        break;
    case MPI_COMBINER_STRUCT:
        for (int i = 0; i < I[0]; ++i) block(D[i], A[i], I[1 + i]);
        break;
    case MPI_COMBINER_RESIZED:
    case MPI_COMBINER_DUP: block(D[0], 0, 1); break;
    case MPI_COMBINER_SUBARRAY: {
        // 2D C order only (what the generator makes)
        int64_t e = extent_of(D[0]);
        for (int r = 0; r < I[3]; ++r)
            for (int c = 0; c < I[4]; ++c)
                expand(D[0], base + ((I[5] + r) * int64_t(I[2]) + I[6] + c) * e, out);
        break;
    }
    default: ADD_FAILURE() << "unexpected combiner " << comb;
    }
    for (int i = 0; i < nd; ++i)
        if (!core::datatype_get(D[size_t(i)])->builtin) impl::Type_free(&D[size_t(i)]);
}

std::vector<Entry> typemap(MPI_Datatype t, int64_t count) {
    std::vector<Entry> out;
    int64_t e = extent_of(t);
    for (int64_t i = 0; i < count; ++i) expand(t, i * e, out);
    return out;
}

struct Gen {
    std::mt19937 rng;
    explicit Gen(unsigned seed) : rng(seed) {}
    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

    MPI_Datatype basic() {
        static const MPI_Datatype b[] = {MPI_CHAR,       MPI_SHORT,     MPI_INT,      MPI_DOUBLE,
                                         MPI_DOUBLE_INT, MPI_SHORT_INT, MPI_FLOAT_INT};
        return b[pick(0, 6)];
    }
    // A random type (the caller frees it if derived).
    MPI_Datatype make(int depth) {
        if (depth == 0 || pick(0, 5) == 0) return basic();
        MPI_Datatype c = make(depth - 1), t = MPI_DATATYPE_NULL;
        switch (pick(0, 7)) {
        case 0: impl::Type_contiguous(pick(0, 4), c, &t); break;
        case 1: impl::Type_vector(pick(1, 4), pick(0, 3), pick(-4, 6), c, &t); break;
        case 2: impl::Type_create_hvector(pick(1, 3), pick(1, 3), pick(-40, 60), c, &t); break;
        case 3: {
            int n = pick(1, 3), bl[3], dp[3];
            for (int i = 0; i < n; ++i) bl[i] = pick(0, 3), dp[i] = pick(-5, 10);
            impl::Type_indexed(n, bl, dp, c, &t);
            break;
        }
        case 4: {
            int n = pick(1, 3), bl[3];
            MPI_Aint dp[3];
            MPI_Datatype ty[3];
            for (int i = 0; i < n; ++i) {
                bl[i] = pick(0, 2);
                dp[i] = pick(-64, 64);
                ty[i] = i == 0 ? c : make(depth - 1);
            }
            impl::Type_create_struct(n, bl, dp, ty, &t);
            for (int i = 1; i < n; ++i)
                if (!core::datatype_get(ty[i])->builtin) impl::Type_free(&ty[i]);
            break;
        }
        case 5: {
            MPI_Aint tlb, text;
            impl::Type_get_true_extent(c, &tlb, &text);
            impl::Type_create_resized(c, tlb - pick(0, 8), text + pick(8, 24), &t);
            break;
        }
        case 6: {
            int sz[2] = {pick(1, 5), pick(1, 5)}, sub[2], st[2];
            for (int i = 0; i < 2; ++i) sub[i] = pick(0, sz[i]), st[i] = pick(0, sz[i] - sub[i]);
            impl::Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, c, &t);
            break;
        }
        default: impl::Type_dup(c, &t); break;
        }
        if (!core::datatype_get(c)->builtin) impl::Type_free(&c);
        return t;
    }
};

// Naive pack of the typemap from `src` (offsets relative to it).
std::vector<uint8_t> naive_pack(const std::vector<Entry>& map, const uint8_t* src) {
    std::vector<uint8_t> out;
    for (const Entry& e : map)
        for (const core::Block& b : builtin_blocks(e.basic))
            out.insert(out.end(), src + e.off + b.off, src + e.off + b.off + b.len);
    return out;
}
void naive_unpack(const std::vector<Entry>& map, const uint8_t* packed, int64_t bytes,
                  uint8_t* dst) {
    for (const Entry& e : map)
        for (const core::Block& b : builtin_blocks(e.basic)) {
            int64_t n = std::min<int64_t>(b.len, bytes);
            if (n <= 0) return;
            std::memcpy(dst + e.off + b.off, packed, size_t(n));
            packed += n;
            bytes -= n;
        }
}

void bounds(const std::vector<Entry>& map, int64_t* lo, int64_t* hi) {
    *lo = 0, *hi = 0;
    for (const Entry& e : map) {
        const Datatype* b = core::datatype_get(e.basic);
        *lo = std::min(*lo, e.off);
        *hi = std::max(*hi, e.off + b->extent);
    }
}

// Checks pack, unpack (full and truncated), size, true bounds and elements of `count` x `t`.
void check_type(MPI_Datatype t, int64_t count, std::mt19937& rng) {
    const Datatype* d = core::datatype_lookup(t);
    ASSERT_NE(d, nullptr);
    std::vector<Entry> map = typemap(t, count);
    int64_t lo, hi;
    bounds(map, &lo, &hi);
    std::vector<uint8_t> src(size_t(hi - lo) + 16), a(src.size()), b(src.size());
    for (auto& x : src) x = uint8_t(rng());
    const uint8_t* sbase = src.data() - lo;

    std::vector<uint8_t> expect = naive_pack(map, sbase);
    ASSERT_EQ(int64_t(expect.size()), d->size * count) << "size";
    std::vector<uint8_t> got(expect.size() + 1, 0xcd);
    core::pack(*d, sbase, count, got.data());
    ASSERT_EQ(0, std::memcmp(got.data(), expect.data(), expect.size())) << "pack";
    EXPECT_EQ(got[expect.size()], 0xcd) << "pack wrote past the end";

    // unpack, whole and truncated at a random byte
    for (int round = 0; round < 2; ++round) {
        int64_t bytes = round == 0 ? int64_t(expect.size()) : int64_t(rng() % (expect.size() + 1));
        std::fill(a.begin(), a.end(), 0);
        std::fill(b.begin(), b.end(), 0);
        naive_unpack(map, expect.data(), bytes, a.data() - lo);
        core::unpack(*d, expect.data(), bytes, b.data() - lo);
        ASSERT_EQ(a, b) << "unpack of " << bytes << " bytes";
        // elements in a prefix: the naive count of whole basic elements (pairs count 2, their
        // value part alone 1; anything else partial is undefined)
        int64_t n = 0, left = bytes;
        bool undefined = false;
        for (const Entry& e : map) {
            const Datatype* bt = core::datatype_get(e.basic);
            if (left == 0) break;
            if (left >= bt->size) {
                n += bt->nelems;
                left -= bt->size;
                continue;
            }
            bool pair = core::builtin_is_pair(e.basic & 0xff);
            int64_t first = bt->size - 4;  // value part of the pair types used here
            if (e.basic == MPI_SHORT_INT) first = 2;
            if (pair && left == first)
                n += 1;
            else
                undefined = true;
            left = 0;
        }
        EXPECT_EQ(core::datatype_elements(*d, bytes), undefined ? -1 : n) << bytes << " bytes";
    }
    // true bounds: the data's own bounds
    if (!map.empty() && count == 1) {
        int64_t tlo = INT64_MAX, thi = INT64_MIN;
        for (const Entry& e : map)
            for (const core::Block& bl : builtin_blocks(e.basic)) {
                tlo = std::min(tlo, e.off + bl.off);
                thi = std::max(thi, e.off + bl.off + bl.len);
            }
        EXPECT_EQ(d->true_lb, tlo);
        EXPECT_EQ(d->true_ub, thi);
    }
    // external32 round trip (these basic types convert exactly)
    MPI_Aint esize = 0, pos = 0;
    impl::Pack_external_size("external32", int(count), t, &esize);
    std::vector<uint8_t> ext(size_t(esize) + 1);
    ASSERT_EQ(impl::Pack_external("external32", sbase, int(count), t, ext.data(), esize, &pos),
              MPI_SUCCESS);
    ASSERT_EQ(pos, esize);
    std::fill(b.begin(), b.end(), 0);
    std::fill(a.begin(), a.end(), 0);
    naive_unpack(map, expect.data(), int64_t(expect.size()), a.data() - lo);
    pos = 0;
    ASSERT_EQ(
        impl::Unpack_external("external32", ext.data(), esize, &pos, b.data() - lo, int(count), t),
        MPI_SUCCESS);
    ASSERT_EQ(a, b) << "external32 round trip";
}

}  // namespace

TEST(Datatype, RandomTypesMatchNaiveTypemap) {
    Gen g(12345);
    std::mt19937 rng(99);
    for (int i = 0; i < 400; ++i) {
        MPI_Datatype t = g.make(3);
        if (core::datatype_get(t)->builtin) continue;
        ASSERT_EQ(impl::Type_commit(&t), MPI_SUCCESS);
        int64_t ext = extent_of(t);
        SCOPED_TRACE(testing::Message() << "type #" << i);
        check_type(t, 1, rng);
        if (ext > 0) check_type(t, 3, rng);
        impl::Type_free(&t);
    }
}

TEST(Datatype, MergesAdjacentBlocks) {
    // struct {int; int; double} without holes flattens to one block and is contiguous
    int bl[3] = {1, 1, 1};
    MPI_Aint dp[3] = {0, 4, 8};
    MPI_Datatype ty[3] = {MPI_INT, MPI_INT, MPI_DOUBLE}, t;
    impl::Type_create_struct(3, bl, dp, ty, &t);
    impl::Type_commit(&t);
    const Datatype* d = core::datatype_lookup(t);
    ASSERT_TRUE(d->flat_blocks);
    EXPECT_EQ(d->blocks.size(), 1u);
    EXPECT_TRUE(d->contig);
    EXPECT_EQ(d->runs.size(), 2u);  // int x2, double x1
    EXPECT_EQ(d->basic, core::kMixedBasic);
    impl::Type_free(&t);
    // vector with stride == blocklength is contiguous; with a hole it is not
    impl::Type_vector(5, 3, 3, MPI_DOUBLE, &t);
    impl::Type_commit(&t);
    EXPECT_TRUE(core::datatype_lookup(t)->contig);
    impl::Type_free(&t);
    impl::Type_vector(5, 3, 4, MPI_DOUBLE, &t);
    impl::Type_commit(&t);
    EXPECT_FALSE(core::datatype_lookup(t)->contig);
    EXPECT_EQ(core::datatype_lookup(t)->blocks.size(), 5u);
    impl::Type_free(&t);
    // data at an offset is not "contig" (the engine would send from buf, not buf+off)
    MPI_Aint d8 = 8;
    int one = 4;
    impl::Type_create_hindexed(1, &one, &d8, MPI_INT, &t);
    impl::Type_commit(&t);
    EXPECT_FALSE(core::datatype_lookup(t)->contig);
    impl::Type_free(&t);
    // resized so that extent != size: not contig even though one block
    impl::Type_create_resized(MPI_INT, 0, 8, &t);
    impl::Type_commit(&t);
    EXPECT_FALSE(core::datatype_lookup(t)->contig);
    impl::Type_free(&t);
    // pair type with padding is not contig; MPI_2INT is
    EXPECT_FALSE(core::datatype_lookup(MPI_DOUBLE_INT)->contig);
    EXPECT_TRUE(core::datatype_lookup(MPI_2INT)->contig);
}

TEST(Datatype, HugeTypesStayCompactAndPackCorrectly) {
    // 200000 strided ints: more blocks than the flat cap; the engine walks the parts.
    MPI_Datatype v, big;
    impl::Type_vector(2, 1, 2, MPI_INT, &v);
    impl::Type_contiguous(100000, v, &big);
    impl::Type_commit(&big);
    const Datatype* d = core::datatype_lookup(big);
    EXPECT_FALSE(d->flat_blocks);
    std::mt19937 rng(7);
    check_type(big, 1, rng);
    impl::Type_free(&big);
    impl::Type_free(&v);
    // a contiguous of 2^31 bytes flattens to a single block without iterating
    MPI_Datatype huge;
    impl::Type_contiguous_c(MPI_Count(1) << 31, MPI_BYTE, &huge);
    impl::Type_commit(&huge);
    d = core::datatype_lookup(huge);
    EXPECT_TRUE(d->contig);
    EXPECT_EQ(d->size, int64_t(1) << 31);
    MPI_Count sz;
    impl::Type_size_c(huge, &sz);
    EXPECT_EQ(sz, MPI_Count(1) << 31);
    int isz = 0;
    impl::Type_size(huge, &isz);
    EXPECT_EQ(isz, MPI_UNDEFINED);
    impl::Type_free(&huge);
}

TEST(Datatype, FreedTypeLivesWhileReferenced) {
    MPI_Datatype t;
    impl::Type_vector(3, 1, 2, MPI_INT, &t);
    impl::Type_commit(&t);
    const Datatype* d = core::datatype_lookup(t);
    core::datatype_retain(d);  // what the engine does for a pending request
    MPI_Datatype h = t;
    impl::Type_free(&t);
    EXPECT_EQ(t, MPI_DATATYPE_NULL);
    int src[6] = {1, 2, 3, 4, 5, 6}, out[3];
    core::pack(*d, src, 1, out);
    EXPECT_EQ(out[0], 1);
    EXPECT_EQ(out[2], 5);
    core::datatype_release(d);
    EXPECT_EQ(core::datatype_get(h), nullptr);
}

TEST(Datatype, OpsOnDerivedTypesFollowTheTypemap) {
    // MPI_SUM over a subarray of doubles touches exactly the sub-box
    int sz[2] = {4, 6}, sub[2] = {2, 3}, st[2] = {1, 2};
    MPI_Datatype t;
    impl::Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t);
    impl::Type_commit(&t);
    double in[24], io[24];
    for (int i = 0; i < 24; ++i) in[i] = i, io[i] = 100 * i;
    ASSERT_EQ(core::op_apply(core::op_lookup(MPI_SUM), in, io, 1, t), MPI_SUCCESS);
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 6; ++c) {
            bool inside = r >= 1 && r < 3 && c >= 2 && c < 5;
            int i = r * 6 + c;
            EXPECT_EQ(io[i], inside ? 101.0 * i : 100.0 * i) << r << "," << c;
        }
    EXPECT_EQ(core::op_apply(core::op_lookup(MPI_BAND), in, io, 1, t), MPI_ERR_OP);
    impl::Type_free(&t);
    // MAXLOC through a vector of MPI_SHORT_INT (pair with padding) at unaligned strides
    MPI_Datatype v;
    impl::Type_create_hvector(3, 1, 12, MPI_SHORT_INT, &v);
    impl::Type_commit(&v);
    alignas(8) unsigned char a[40] = {}, b[40] = {};
    auto put = [](unsigned char* p, short s, int i) {
        std::memcpy(p, &s, 2);
        std::memcpy(p + 4, &i, 4);
    };
    put(a, 5, 1), put(a + 12, 2, 2), put(a + 24, 7, 3);
    put(b, 4, 9), put(b + 12, 2, 0), put(b + 24, 9, 9);
    ASSERT_EQ(core::op_apply(core::op_lookup(MPI_MAXLOC), a, b, 1, v), MPI_SUCCESS);
    short s;
    int i;
    std::memcpy(&s, b, 2), std::memcpy(&i, b + 4, 4);
    EXPECT_EQ(s, 5);
    EXPECT_EQ(i, 1);
    std::memcpy(&s, b + 12, 2), std::memcpy(&i, b + 16, 4);
    EXPECT_EQ(s, 2);
    EXPECT_EQ(i, 0);
    std::memcpy(&s, b + 24, 2), std::memcpy(&i, b + 28, 4);
    EXPECT_EQ(s, 9);
    EXPECT_EQ(i, 9);
    impl::Type_free(&v);
}

TEST(Datatype, External32OfLongChecksRange) {
    long big = long(1) << 40, small = -7, back = 0;
    unsigned char buf[8];
    MPI_Aint pos = 0;
    EXPECT_EQ(impl::Pack_external("external32", &big, 1, MPI_LONG, buf, 8, &pos),
              MPI_ERR_CONVERSION);
    pos = 0;
    ASSERT_EQ(impl::Pack_external("external32", &small, 1, MPI_LONG, buf, 8, &pos), MPI_SUCCESS);
    EXPECT_EQ(pos, 4);
    pos = 0;
    ASSERT_EQ(impl::Unpack_external("external32", buf, 4, &pos, &back, 1, MPI_LONG), MPI_SUCCESS);
    EXPECT_EQ(back, -7);
}

TEST(Datatype, DenseRangesAtAnOffset) {
    int64_t off = -1;
    MPI_Datatype t;
    // one row of a 2D subarray: a single block at an offset
    int sz[2] = {4, 8}, sub[2] = {1, 5}, st[2] = {2, 3};
    impl::Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t);
    impl::Type_commit(&t);
    const Datatype* d = core::datatype_lookup(t);
    EXPECT_FALSE(d->contig);
    EXPECT_TRUE(core::datatype_dense(*d, 1, &off));
    EXPECT_EQ(off, (2 * 8 + 3) * 4);
    EXPECT_FALSE(core::datatype_dense(*d, 2, &off));  // extent is the whole array
    impl::Type_free(&t);
    // hindexed single block at 16, extent == size after resizing: dense for any count
    MPI_Aint d16 = 16;
    int four = 4;
    MPI_Datatype h;
    impl::Type_create_hindexed(1, &four, &d16, MPI_INT, &h);
    impl::Type_create_resized(h, 16, 16, &t);
    impl::Type_commit(&t);
    EXPECT_TRUE(core::datatype_dense(*core::datatype_lookup(t), 10, &off));
    EXPECT_EQ(off, 16);
    impl::Type_free(&t);
    impl::Type_free(&h);
    EXPECT_TRUE(core::datatype_dense(*core::datatype_lookup(MPI_DOUBLE), 3, &off));
    EXPECT_EQ(off, 0);
    EXPECT_FALSE(core::datatype_dense(*core::datatype_lookup(MPI_SHORT_INT), 1, &off));
}
