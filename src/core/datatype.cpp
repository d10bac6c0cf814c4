#include "core/datatype.hpp"

#include <complex.h>
#include <cstring>

namespace wanmpi::core {

namespace {
#define DT(h, n) {h, (h >> 8) & 0xff, (h >> 8) & 0xff, true, n, 1, {{0, (h >> 8) & 0xff}, {0, 0}}}
const Datatype kBuiltin[] = {
    DT(MPI_CHAR, "MPI_CHAR"), DT(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR"),
    DT(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR"), DT(MPI_BYTE, "MPI_BYTE"),
    DT(MPI_WCHAR, "MPI_WCHAR"), DT(MPI_SHORT, "MPI_SHORT"),
    DT(MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT"), DT(MPI_INT, "MPI_INT"),
    DT(MPI_UNSIGNED, "MPI_UNSIGNED"), DT(MPI_LONG, "MPI_LONG"),
    DT(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"), DT(MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT"),
    DT(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG"), DT(MPI_FLOAT, "MPI_FLOAT"),
    DT(MPI_DOUBLE, "MPI_DOUBLE"), DT(MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE"),
    DT(MPI_PACKED, "MPI_PACKED"), DT(MPI_INT8_T, "MPI_INT8_T"), DT(MPI_INT16_T, "MPI_INT16_T"),
    DT(MPI_INT32_T, "MPI_INT32_T"), DT(MPI_INT64_T, "MPI_INT64_T"), DT(MPI_UINT8_T, "MPI_UINT8_T"),
    DT(MPI_UINT16_T, "MPI_UINT16_T"), DT(MPI_UINT32_T, "MPI_UINT32_T"),
    DT(MPI_UINT64_T, "MPI_UINT64_T"), DT(MPI_C_BOOL, "MPI_C_BOOL"),
    DT(MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX"), DT(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX"),
    DT(MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX"), DT(MPI_AINT, "MPI_AINT"),
    DT(MPI_OFFSET, "MPI_OFFSET"), DT(MPI_COUNT, "MPI_COUNT"),
    // Pair types: size = data bytes, extent = sizeof the C struct (padding included).
    {MPI_FLOAT_INT, 8, 8, true, "MPI_FLOAT_INT", 1, {{0, 8}, {0, 0}}},
    {MPI_DOUBLE_INT, 12, 16, false, "MPI_DOUBLE_INT", 1, {{0, 12}, {0, 0}}},
    {MPI_LONG_INT, 12, 16, false, "MPI_LONG_INT", 1, {{0, 12}, {0, 0}}},
    {MPI_2INT, 8, 8, true, "MPI_2INT", 1, {{0, 8}, {0, 0}}},
    {MPI_SHORT_INT, 6, 8, false, "MPI_SHORT_INT", 2, {{0, 2}, {4, 4}}},
    {MPI_LONG_DOUBLE_INT, 20, 32, false, "MPI_LONG_DOUBLE_INT", 1, {{0, 20}, {0, 0}}},
    DT(MPI_CXX_BOOL, "MPI_CXX_BOOL"), DT(MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX"),
    DT(MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX"),
    DT(MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX"),
    DT(MPI_CHARACTER, "MPI_CHARACTER"), DT(MPI_INTEGER, "MPI_INTEGER"), DT(MPI_REAL, "MPI_REAL"),
    DT(MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION"), DT(MPI_COMPLEX, "MPI_COMPLEX"),
    DT(MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX"), DT(MPI_LOGICAL, "MPI_LOGICAL"),
    DT(MPI_2INTEGER, "MPI_2INTEGER"), DT(MPI_2REAL, "MPI_2REAL"),
    DT(MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION"), DT(MPI_INTEGER1, "MPI_INTEGER1"),
    DT(MPI_INTEGER2, "MPI_INTEGER2"), DT(MPI_INTEGER4, "MPI_INTEGER4"),
    DT(MPI_INTEGER8, "MPI_INTEGER8"), DT(MPI_REAL4, "MPI_REAL4"), DT(MPI_REAL8, "MPI_REAL8"),
    DT(MPI_REAL16, "MPI_REAL16"), DT(MPI_COMPLEX8, "MPI_COMPLEX8"),
    DT(MPI_COMPLEX16, "MPI_COMPLEX16"), DT(MPI_COMPLEX32, "MPI_COMPLEX32"),
    DT(MPI_INTEGER16, "MPI_INTEGER16"),
};
#undef DT

struct Table {
    const Datatype* by_index[256] = {};
    Table() {
        for (const auto& d : kBuiltin) by_index[d.handle & 0xff] = &d;
    }
};
const Table& table() {
    static const Table t;
    return t;
}

// The sizes in mpi.h must match the C types of this platform.
static_assert(sizeof(long) == 8 && sizeof(long double) == 16 && sizeof(wchar_t) == 4);
struct DI { double d; int i; };
struct LDI { long double d; int i; };
static_assert(sizeof(DI) == 16 && sizeof(LDI) == 32);
}  // namespace

void pack(const Datatype& dt, const void* src, int64_t count, void* dst) {
    auto* s = static_cast<const char*>(src);
    auto* d = static_cast<char*>(dst);
    if (dt.contig) {
        std::memcpy(d, s, static_cast<size_t>(dt.size * count));
        return;
    }
    for (int64_t i = 0; i < count; ++i, s += dt.extent)
        for (int b = 0; b < dt.nblocks; ++b) {
            std::memcpy(d, s + dt.blocks[b].off, static_cast<size_t>(dt.blocks[b].len));
            d += dt.blocks[b].len;
        }
}

void unpack(const Datatype& dt, const void* src, int64_t bytes, void* dst) {
    auto* s = static_cast<const char*>(src);
    auto* d = static_cast<char*>(dst);
    if (dt.contig) {
        std::memcpy(d, s, static_cast<size_t>(bytes));
        return;
    }
    for (; bytes > 0; d += dt.extent)
        for (int b = 0; b < dt.nblocks && bytes > 0; ++b) {
            int64_t n = dt.blocks[b].len < bytes ? dt.blocks[b].len : bytes;
            std::memcpy(d + dt.blocks[b].off, s, static_cast<size_t>(n));
            s += n;
            bytes -= n;
        }
}

void datatype_retain(const Datatype*) {}
void datatype_release(const Datatype*) {}

const Datatype* datatype_lookup(MPI_Datatype h) {
    if ((static_cast<uint32_t>(h) & 0xffff0000u) != 0x4c000000u) return nullptr;
    const Datatype* d = table().by_index[h & 0xff];
    return (d && d->handle == h) ? d : nullptr;
}

}  // namespace wanmpi::core
