// MPI_Pack/Unpack/Pack_size (native representation: the packed bytes are the type's data bytes
// in typemap order, no header) and the "external32" representation (MPI 4.0 §5.2.5) for
// MPI_Pack_external/Unpack_external/Pack_external_size, which IMPI also puts on the wire.
//
// external32: big-endian, IEEE floating point, fixed sizes: MPI_LONG/MPI_UNSIGNED_LONG take 4
// bytes (a value that does not fit is an MPI_ERR_CONVERSION error, never silently truncated),
// MPI_WCHAR 2, MPI_LONG_DOUBLE 16 (IEEE binary128: x87 80-bit values convert exactly, the reverse
// rounds), complex types are two of their parts, pair types their two members without padding.
#include <climits>
#include <cstring>
#include <strings.h>

#include "bindings/impl.hpp"
#include "core/comm.hpp"
#include "core/datatype.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

namespace {

enum class Conv : uint8_t { swap, sint, uint, ldbl };
struct Comp {
    uint8_t off;    // native offset in the element
    uint8_t nsize;  // native bytes
    uint8_t esize;  // external32 bytes
    Conv conv;
};

// clang-format off
// The components of builtin `idx` in external32; returns how many (0: no representation).
int ext32_comps(int idx, Comp out[2]) {
    const Datatype* b = builtin_by_index(idx);
    if (!b || b->size == 0) return 0;
    switch (b->handle) {
    case MPI_LONG: out[0] = {0, 8, 4, Conv::sint}; return 1;
    case MPI_UNSIGNED_LONG: out[0] = {0, 8, 4, Conv::uint}; return 1;
    case MPI_WCHAR: out[0] = {0, 4, 2, Conv::uint}; return 1;
    case MPI_LONG_DOUBLE: out[0] = {0, 16, 16, Conv::ldbl}; return 1;
    case MPI_C_LONG_DOUBLE_COMPLEX: case MPI_CXX_LONG_DOUBLE_COMPLEX:
        out[0] = {0, 16, 16, Conv::ldbl};
        out[1] = {16, 16, 16, Conv::ldbl};
        return 2;
    case MPI_C_FLOAT_COMPLEX: case MPI_CXX_FLOAT_COMPLEX: case MPI_COMPLEX: case MPI_COMPLEX8:
        out[0] = {0, 4, 4, Conv::swap};
        out[1] = {4, 4, 4, Conv::swap};
        return 2;
    case MPI_C_DOUBLE_COMPLEX: case MPI_CXX_DOUBLE_COMPLEX: case MPI_DOUBLE_COMPLEX:
    case MPI_COMPLEX16:
        out[0] = {0, 8, 8, Conv::swap};
        out[1] = {8, 8, 8, Conv::swap};
        return 2;
    case MPI_COMPLEX32:
        out[0] = {0, 16, 16, Conv::swap};
        out[1] = {16, 16, 16, Conv::swap};
        return 2;
    case MPI_FLOAT_INT: case MPI_2INT: case MPI_2INTEGER: case MPI_2REAL:
        out[0] = {0, 4, 4, Conv::swap};
        out[1] = {4, 4, 4, Conv::swap};
        return 2;
    case MPI_DOUBLE_INT:
        out[0] = {0, 8, 8, Conv::swap};
        out[1] = {8, 4, 4, Conv::swap};
        return 2;
    case MPI_LONG_INT:
        out[0] = {0, 8, 4, Conv::sint};
        out[1] = {8, 4, 4, Conv::swap};
        return 2;
    case MPI_SHORT_INT:
        out[0] = {0, 2, 2, Conv::swap};
        out[1] = {4, 4, 4, Conv::swap};
        return 2;
    case MPI_LONG_DOUBLE_INT:
        out[0] = {0, 16, 16, Conv::ldbl};
        out[1] = {16, 4, 4, Conv::swap};
        return 2;
    case MPI_2DOUBLE_PRECISION:
        out[0] = {0, 8, 8, Conv::swap};
        out[1] = {8, 8, 8, Conv::swap};
        return 2;
    default:
        out[0] = {0, uint8_t(b->size), uint8_t(b->size), Conv::swap};
        return 1;
    }
}
// clang-format on

inline void rev_copy(uint8_t* d, const uint8_t* s, int n) {
    for (int i = 0; i < n; ++i) d[i] = s[n - 1 - i];
}

struct Ext32Ctx {
    char* buf;     // user memory (pack: source, unpack: destination)
    uint8_t* ext;  // packed external32 bytes, advancing
    bool to_ext;
    int err = MPI_SUCCESS;

    static bool run(void* c, int64_t off, int64_t n, int basic) {
        auto* x = static_cast<Ext32Ctx*>(c);
        Comp comps[2];
        int nc = ext32_comps(basic, comps);
        const int64_t ext = builtin_by_index(basic)->extent;
        char* base = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(x->buf) + uint64_t(off));
        if (nc == 1 && comps[0].conv == Conv::swap && comps[0].nsize == 1) {
            // Bytes: no conversion at all.
            if (x->to_ext)
                std::memcpy(x->ext, base, size_t(n));
            else
                std::memcpy(base, x->ext, size_t(n));
            x->ext += n;
            return true;
        }
        for (int64_t k = 0; k < n; ++k) {
            uint8_t* e = reinterpret_cast<uint8_t*>(base + k * ext);
            for (int i = 0; i < nc; ++i) {
                const Comp& cp = comps[i];
                uint8_t* p = e + cp.off;
                if (x->to_ext) {
                    if (!x->put(cp, p)) return false;
                } else {
                    x->get(cp, p);
                }
                x->ext += cp.esize;
            }
        }
        return true;
    }

    bool put(const Comp& cp, const uint8_t* p) {
        switch (cp.conv) {
        case Conv::swap: rev_copy(ext, p, cp.nsize); return true;
        case Conv::sint:
        case Conv::uint: {
            uint64_t v = 0;
            std::memcpy(&v, p, cp.nsize);  // little-endian host
            bool ok;
            if (cp.conv == Conv::sint) {
                int64_t s = cp.nsize == 8 ? int64_t(v) : int64_t(int32_t(uint32_t(v)));
                int64_t lim = int64_t(1) << (cp.esize * 8 - 1);
                ok = s >= -lim && s < lim;
            } else {
                ok = cp.esize >= 8 || v < (uint64_t(1) << (cp.esize * 8));
            }
            if (!ok) {
                err = make_error(MPI_ERR_CONVERSION,
                                 "value %lld does not fit the %d bytes external32 gives this type",
                                 (long long)v, cp.esize);
                return false;
            }
            uint8_t tmp[8];
            std::memcpy(tmp, &v, 8);
            rev_copy(ext, tmp, cp.esize);
            return true;
        }
        case Conv::ldbl: {
            long double v;
            std::memcpy(&v, p, sizeof v);
            __float128 q = v;
            rev_copy(ext, reinterpret_cast<const uint8_t*>(&q), 16);
            return true;
        }
        }
        return true;
    }

    void get(const Comp& cp, uint8_t* p) {
        switch (cp.conv) {
        case Conv::swap: rev_copy(p, ext, cp.nsize); return;
        case Conv::sint:
        case Conv::uint: {
            uint8_t tmp[8] = {};
            rev_copy(tmp, ext, cp.esize);
            uint64_t v;
            std::memcpy(&v, tmp, 8);
            if (cp.conv == Conv::sint && (tmp[cp.esize - 1] & 0x80))
                v |= ~uint64_t(0) << (cp.esize * 8);  // sign-extend
            std::memcpy(p, &v, cp.nsize);
            return;
        }
        case Conv::ldbl: {
            __float128 q;
            rev_copy(reinterpret_cast<uint8_t*>(&q), ext, 16);
            long double v = static_cast<long double>(q);
            uint8_t out[16] = {};
            std::memcpy(out, &v, 10);  // x87: 10 significant bytes, the rest zero
            std::memcpy(p, out, 16);
            return;
        }
        }
    }
};

}  // namespace

// Converts `count` elements between user memory and external32 bytes; error code or success.
int ext32_convert(const Datatype& dt, void* user, int64_t count, void* ext, bool to_ext) {
    Ext32Ctx c{static_cast<char*>(user), static_cast<uint8_t*>(ext), to_ext};
    datatype_walk(dt, 0, count, Ext32Ctx::run, &c);
    return c.err;
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

#define CHECK(cond, cls, ...) \
    if (!(cond)) return raise(c, make_error(cls, __VA_ARGS__))

static int comm_arg(MPI_Comm comm, Comm** out) {
    *out = comm_lookup(comm);
    if (!*out) return make_error(MPI_ERR_COMM, "invalid communicator 0x%x", unsigned(comm));
    return MPI_SUCCESS;
}

static int type_arg(MPI_Datatype h, const Datatype** out) {
    *out = datatype_lookup(h);
    return *out ? MPI_SUCCESS : datatype_error(h);
}

// ---- native pack --------------------------------------------------------------------------------
static int pack_impl(const void* inbuf, int64_t incount, MPI_Datatype dt, void* outbuf,
                     int64_t outsize, int64_t* position, MPI_Comm comm) {
    Comm* c = nullptr;
    if (int rc = comm_arg(comm, &c)) return raise(nullptr, rc);
    CHECK(incount >= 0, MPI_ERR_COUNT, "negative incount %lld", (long long)incount);
    CHECK(position, MPI_ERR_ARG, "position is NULL");
    const Datatype* d;
    if (int rc = type_arg(dt, &d)) return raise(c, rc);
    int64_t need = incount * d->size;
    CHECK(*position >= 0 && *position <= outsize && need <= outsize - *position, MPI_ERR_TRUNCATE,
          "packing %lld bytes at position %lld overflows the %lld-byte output buffer",
          (long long)need, (long long)*position, (long long)outsize);
    CHECK(need == 0 || outbuf, MPI_ERR_BUFFER, "outbuf is NULL");
    pack(*d, inbuf, incount, static_cast<char*>(outbuf) + *position);
    *position += need;
    return MPI_SUCCESS;
}
int Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize,
         int* position, MPI_Comm comm) {
    if (!position) return pack_impl(inbuf, incount, datatype, outbuf, outsize, nullptr, comm);
    int64_t pos = *position;
    int rc = pack_impl(inbuf, incount, datatype, outbuf, outsize, &pos, comm);
    if (rc == MPI_SUCCESS) *position = int(pos);
    return rc;
}
int Pack_c(const void* inbuf, MPI_Count incount, MPI_Datatype datatype, void* outbuf,
           MPI_Count outsize, MPI_Count* position, MPI_Comm comm) {
    return pack_impl(inbuf, incount, datatype, outbuf, outsize, position, comm);
}

static int unpack_impl(const void* inbuf, int64_t insize, int64_t* position, void* outbuf,
                       int64_t outcount, MPI_Datatype dt, MPI_Comm comm) {
    Comm* c = nullptr;
    if (int rc = comm_arg(comm, &c)) return raise(nullptr, rc);
    CHECK(outcount >= 0, MPI_ERR_COUNT, "negative outcount %lld", (long long)outcount);
    CHECK(position, MPI_ERR_ARG, "position is NULL");
    const Datatype* d;
    if (int rc = type_arg(dt, &d)) return raise(c, rc);
    int64_t need = outcount * d->size;
    CHECK(*position >= 0 && *position <= insize && need <= insize - *position, MPI_ERR_TRUNCATE,
          "unpacking %lld bytes at position %lld reads past the %lld-byte input buffer",
          (long long)need, (long long)*position, (long long)insize);
    CHECK(need == 0 || inbuf, MPI_ERR_BUFFER, "inbuf is NULL");
    unpack(*d, static_cast<const char*>(inbuf) + *position, need, outbuf);
    *position += need;
    return MPI_SUCCESS;
}
int Unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
           MPI_Datatype datatype, MPI_Comm comm) {
    if (!position) return unpack_impl(inbuf, insize, nullptr, outbuf, outcount, datatype, comm);
    int64_t pos = *position;
    int rc = unpack_impl(inbuf, insize, &pos, outbuf, outcount, datatype, comm);
    if (rc == MPI_SUCCESS) *position = int(pos);
    return rc;
}
int Unpack_c(const void* inbuf, MPI_Count insize, MPI_Count* position, void* outbuf,
             MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm) {
    return unpack_impl(inbuf, insize, position, outbuf, outcount, datatype, comm);
}

static int pack_size_impl(int64_t incount, MPI_Datatype dt, MPI_Comm comm, int64_t* size) {
    Comm* c = nullptr;
    if (int rc = comm_arg(comm, &c)) return raise(nullptr, rc);
    CHECK(incount >= 0, MPI_ERR_COUNT, "negative incount %lld", (long long)incount);
    CHECK(size, MPI_ERR_ARG, "size is NULL");
    Datatype* d = datatype_get(dt);
    if (!d || dt == MPI_LB || dt == MPI_UB) return raise(c, datatype_error(dt));
    *size = incount * d->size;
    return MPI_SUCCESS;
}
int Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
    int64_t s = 0;
    Comm* c = comm_lookup(comm);
    int rc = pack_size_impl(incount, datatype, comm, &s);
    if (rc != MPI_SUCCESS) return rc;
    CHECK(s <= INT_MAX, MPI_ERR_VALUE_TOO_LARGE,
          "the packed size %lld does not fit an int: use MPI_Pack_size_c", (long long)s);
    *size = int(s);
    return MPI_SUCCESS;
}
int Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count* size) {
    return pack_size_impl(incount, datatype, comm, size);
}

// ---- external32 ---------------------------------------------------------------------------------
static int datarep_arg(const char* datarep) {
    if (!datarep) return make_error(MPI_ERR_ARG, "datarep is NULL");
    if (std::strcmp(datarep, "external32") != 0)
        return make_error(MPI_ERR_ARG,
                          "data representation \"%s\" is not supported (only \"external32\")",
                          datarep);
    return MPI_SUCCESS;
}

static int pack_external_impl(const char* datarep, const void* inbuf, int64_t incount,
                              MPI_Datatype dt, void* outbuf, int64_t outsize, int64_t* position) {
    Comm* c = nullptr;
    if (int rc = datarep_arg(datarep)) return raise(nullptr, rc);
    CHECK(incount >= 0, MPI_ERR_COUNT, "negative incount %lld", (long long)incount);
    CHECK(position, MPI_ERR_ARG, "position is NULL");
    const Datatype* d;
    if (int rc = type_arg(dt, &d)) return raise(nullptr, rc);
    int64_t need = incount * d->ext32_size;
    CHECK(*position >= 0 && *position <= outsize && need <= outsize - *position, MPI_ERR_TRUNCATE,
          "packing %lld external32 bytes at position %lld overflows the %lld-byte buffer",
          (long long)need, (long long)*position, (long long)outsize);
    CHECK(need == 0 || outbuf, MPI_ERR_BUFFER, "outbuf is NULL");
    int rc = ext32_convert(*d, const_cast<void*>(inbuf), incount,
                           static_cast<char*>(outbuf) + *position, true);
    if (rc != MPI_SUCCESS) return raise(nullptr, rc);
    *position += need;
    return MPI_SUCCESS;
}
int Pack_external(const char datarep[], const void* inbuf, int incount, MPI_Datatype datatype,
                  void* outbuf, MPI_Aint outsize, MPI_Aint* position) {
    return pack_external_impl(datarep, inbuf, incount, datatype, outbuf, outsize, position);
}
int Pack_external_c(const char datarep[], const void* inbuf, MPI_Count incount,
                    MPI_Datatype datatype, void* outbuf, MPI_Count outsize, MPI_Count* position) {
    return pack_external_impl(datarep, inbuf, incount, datatype, outbuf, outsize, position);
}

static int unpack_external_impl(const char* datarep, const void* inbuf, int64_t insize,
                                int64_t* position, void* outbuf, int64_t outcount,
                                MPI_Datatype dt) {
    Comm* c = nullptr;
    if (int rc = datarep_arg(datarep)) return raise(nullptr, rc);
    CHECK(outcount >= 0, MPI_ERR_COUNT, "negative outcount %lld", (long long)outcount);
    CHECK(position, MPI_ERR_ARG, "position is NULL");
    const Datatype* d;
    if (int rc = type_arg(dt, &d)) return raise(nullptr, rc);
    int64_t need = outcount * d->ext32_size;
    CHECK(*position >= 0 && *position <= insize && need <= insize - *position, MPI_ERR_TRUNCATE,
          "unpacking %lld external32 bytes at position %lld reads past the %lld-byte buffer",
          (long long)need, (long long)*position, (long long)insize);
    CHECK(need == 0 || inbuf, MPI_ERR_BUFFER, "inbuf is NULL");
    int rc = ext32_convert(*d, outbuf, outcount,
                           const_cast<char*>(static_cast<const char*>(inbuf)) + *position, false);
    if (rc != MPI_SUCCESS) return raise(nullptr, rc);
    *position += need;
    return MPI_SUCCESS;
}
int Unpack_external(const char datarep[], const void* inbuf, MPI_Aint insize, MPI_Aint* position,
                    void* outbuf, int outcount, MPI_Datatype datatype) {
    return unpack_external_impl(datarep, inbuf, insize, position, outbuf, outcount, datatype);
}
int Unpack_external_c(const char datarep[], const void* inbuf, MPI_Count insize,
                      MPI_Count* position, void* outbuf, MPI_Count outcount,
                      MPI_Datatype datatype) {
    return unpack_external_impl(datarep, inbuf, insize, position, outbuf, outcount, datatype);
}

static int pack_external_size_impl(const char* datarep, int64_t incount, MPI_Datatype dt,
                                   int64_t* size) {
    Comm* c = nullptr;
    if (int rc = datarep_arg(datarep)) return raise(nullptr, rc);
    CHECK(incount >= 0, MPI_ERR_COUNT, "negative incount %lld", (long long)incount);
    CHECK(size, MPI_ERR_ARG, "size is NULL");
    Datatype* d = datatype_get(dt);
    if (!d || dt == MPI_LB || dt == MPI_UB) return raise(nullptr, datatype_error(dt));
    *size = incount * d->ext32_size;
    return MPI_SUCCESS;
}
int Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype, MPI_Aint* size) {
    return pack_external_size_impl(datarep, incount, datatype, size);
}
int Pack_external_size_c(const char datarep[], MPI_Count incount, MPI_Datatype datatype,
                         MPI_Count* size) {
    return pack_external_size_impl(datarep, incount, datatype, size);
}

}  // namespace wanmpi::impl
