// Reduction operations: the predefined ops' kernels for every type the standard allows (and the
// MPICH extensions real codes rely on: MPI_CHAR and MPI_WCHAR as integers), user-defined ops,
// and MPI_Op_create/Op_free/Op_commutative/Reduce_local.
//
// Type classes (MPI 4.0 §6.9.2), as applied here:
//   integer  C integers, fixed-width, MPI_AINT/OFFSET/COUNT, Fortran INTEGER*, MPI_CHAR, MPI_WCHAR
//   float    float, double, long double, Fortran REAL*, REAL16 (IEEE quad, gfortran's real(16))
//   complex  C/C++ complex types, Fortran COMPLEX*, COMPLEX32 (quad)
//   logical  MPI_C_BOOL, MPI_CXX_BOOL, MPI_LOGICAL (0 = false; results are 0/1)
//   byte     MPI_BYTE
//   pair     MPI_FLOAT_INT ... MPI_2DOUBLE_PRECISION (MAXLOC/MINLOC)
// MAX/MIN: integer, float. SUM/PROD: integer, float, complex. LAND/LOR/LXOR: integer, logical.
// BAND/BOR/BXOR: integer, byte. MAXLOC/MINLOC: pair. REPLACE/NO_OP: any type.
// A predefined op on a derived type applies to its basic elements and needs one basic type.
//
// Kernels load and store through memcpy, so elements at unaligned displacements of a derived
// type are handled; the compiler turns that into plain (vectorised) loads.
//
// User-op objects are never deleted: MPI_Op_free invalidates the handle, but a nonblocking
// collective started before still holds the Op* (a few dozen bytes per op ever created).
#include "core/op.hpp"

#include <climits>
#include <cstring>
#include <vector>

#include "bindings/impl.hpp"
#include "core/datatype.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

struct Op {
    MPI_Op handle = MPI_OP_NULL;
    int code = 0;  // 1..14 for the predefined ops (handle & 0xff), 0 for user ops
    bool commute = true;
    bool freed = false;
    MPI_User_function* fn = nullptr;
    MPI_User_function_c* fn_c = nullptr;
    const char* name = "";
};

namespace {

// clang-format off
enum CT : uint8_t {
    ct_none, ct_i8, ct_i16, ct_i32, ct_i64, ct_i128, ct_u8, ct_u16, ct_u32, ct_u64,
    ct_f32, ct_f64, ct_f80, ct_f128, ct_c32, ct_c64, ct_c80, ct_c128,
    ct_bool, ct_logical, ct_byte,
    ct_p_float_int, ct_p_double_int, ct_p_long_int, ct_p_2int, ct_p_short_int,
    ct_p_ldouble_int, ct_p_2real, ct_p_2double,
};

CT ctype_of(int idx) {
    const Datatype* b = builtin_by_index(idx);
    if (!b) return ct_none;
    switch (b->handle) {
    case MPI_CHAR: case MPI_SIGNED_CHAR: case MPI_INT8_T: case MPI_INTEGER1: return ct_i8;
    case MPI_UNSIGNED_CHAR: case MPI_UINT8_T: return ct_u8;
    case MPI_SHORT: case MPI_INT16_T: case MPI_INTEGER2: return ct_i16;
    case MPI_UNSIGNED_SHORT: case MPI_UINT16_T: return ct_u16;
    case MPI_INT: case MPI_INT32_T: case MPI_INTEGER: case MPI_INTEGER4: case MPI_WCHAR:
        return ct_i32;
    case MPI_UNSIGNED: case MPI_UINT32_T: return ct_u32;
    case MPI_LONG: case MPI_LONG_LONG_INT: case MPI_INT64_T: case MPI_INTEGER8: case MPI_AINT:
    case MPI_OFFSET: case MPI_COUNT:
        return ct_i64;
    case MPI_UNSIGNED_LONG: case MPI_UNSIGNED_LONG_LONG: case MPI_UINT64_T: return ct_u64;
    case MPI_INTEGER16: return ct_i128;
    case MPI_FLOAT: case MPI_REAL: case MPI_REAL4: return ct_f32;
    case MPI_DOUBLE: case MPI_DOUBLE_PRECISION: case MPI_REAL8: return ct_f64;
    case MPI_LONG_DOUBLE: return ct_f80;
    case MPI_REAL16: return ct_f128;
    case MPI_C_FLOAT_COMPLEX: case MPI_CXX_FLOAT_COMPLEX: case MPI_COMPLEX: case MPI_COMPLEX8:
        return ct_c32;
    case MPI_C_DOUBLE_COMPLEX: case MPI_CXX_DOUBLE_COMPLEX: case MPI_DOUBLE_COMPLEX:
    case MPI_COMPLEX16:
        return ct_c64;
    case MPI_C_LONG_DOUBLE_COMPLEX: case MPI_CXX_LONG_DOUBLE_COMPLEX: return ct_c80;
    case MPI_COMPLEX32: return ct_c128;
    case MPI_C_BOOL: case MPI_CXX_BOOL: return ct_bool;
    case MPI_LOGICAL: return ct_logical;
    case MPI_BYTE: return ct_byte;
    case MPI_FLOAT_INT: return ct_p_float_int;
    case MPI_DOUBLE_INT: return ct_p_double_int;
    case MPI_LONG_INT: return ct_p_long_int;
    case MPI_2INT: case MPI_2INTEGER: return ct_p_2int;
    case MPI_SHORT_INT: return ct_p_short_int;
    case MPI_LONG_DOUBLE_INT: return ct_p_ldouble_int;
    case MPI_2REAL: return ct_p_2real;
    case MPI_2DOUBLE_PRECISION: return ct_p_2double;
    default: return ct_none;
    }
}
// clang-format on

bool is_int(CT t) { return t >= ct_i8 && t <= ct_u64; }
bool is_float(CT t) { return t >= ct_f32 && t <= ct_f128; }
bool is_complex(CT t) { return t >= ct_c32 && t <= ct_c128; }
bool is_pair(CT t) { return t >= ct_p_float_int; }

template <class T>
inline T ld(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <class T>
inline void st(char* p, T v) {
    std::memcpy(p, &v, sizeof v);
}

// inout[i] = f(in[i], inout[i]); W is the type arithmetic happens in (unsigned for integers, so
// overflow wraps instead of being undefined).
template <class T, class W, class F>
inline void map2(const void* in, void* io, int64_t n, F f) {
    const char* a = static_cast<const char*>(in);
    char* b = static_cast<char*>(io);
    for (int64_t i = 0; i < n; ++i, a += sizeof(T), b += sizeof(T))
        st<T>(b, T(f(W(ld<T>(a)), W(ld<T>(b)))));
}

template <class T, class W>
bool int_kernel(int code, const void* in, void* io, int64_t n) {
    switch (code) {
    case 1: map2<T, T>(in, io, n, [](T a, T b) { return a > b ? a : b; }); return true;
    case 2: map2<T, T>(in, io, n, [](T a, T b) { return a < b ? a : b; }); return true;
    case 3: map2<T, W>(in, io, n, [](W a, W b) { return W(a + b); }); return true;
    case 4: map2<T, W>(in, io, n, [](W a, W b) { return W(a * b); }); return true;
    case 5: map2<T, T>(in, io, n, [](T a, T b) { return T((a != 0) && (b != 0)); }); return true;
    case 6: map2<T, T>(in, io, n, [](T a, T b) { return T(a & b); }); return true;
    case 7: map2<T, T>(in, io, n, [](T a, T b) { return T((a != 0) || (b != 0)); }); return true;
    case 8: map2<T, T>(in, io, n, [](T a, T b) { return T(a | b); }); return true;
    case 9: map2<T, T>(in, io, n, [](T a, T b) { return T((a != 0) != (b != 0)); }); return true;
    case 10: map2<T, T>(in, io, n, [](T a, T b) { return T(a ^ b); }); return true;
    default: return false;
    }
}

template <class T>
bool float_kernel(int code, const void* in, void* io, int64_t n) {
    switch (code) {
    case 1: map2<T, T>(in, io, n, [](T a, T b) { return a > b ? a : b; }); return true;
    case 2: map2<T, T>(in, io, n, [](T a, T b) { return a < b ? a : b; }); return true;
    case 3: map2<T, T>(in, io, n, [](T a, T b) { return T(a + b); }); return true;
    case 4: map2<T, T>(in, io, n, [](T a, T b) { return T(a * b); }); return true;
    default: return false;
    }
}

template <class T>
struct Cx {
    T re, im;
};
template <class T>
bool complex_kernel(int code, const void* in, void* io, int64_t n) {
    using C = Cx<T>;
    switch (code) {
    case 3:
        map2<C, C>(in, io, n, [](C a, C b) { return C{a.re + b.re, a.im + b.im}; });
        return true;
    case 4:
        map2<C, C>(in, io, n, [](C a, C b) {
            return C{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
        });
        return true;
    default: return false;
    }
}

// C bool (1 byte) and Fortran LOGICAL (4 bytes, gfortran: .true. = 1).
template <class T>
bool logical_kernel(int code, const void* in, void* io, int64_t n) {
    switch (code) {
    case 5: map2<T, T>(in, io, n, [](T a, T b) { return T((a != 0) && (b != 0)); }); return true;
    case 7: map2<T, T>(in, io, n, [](T a, T b) { return T((a != 0) || (b != 0)); }); return true;
    case 9: map2<T, T>(in, io, n, [](T a, T b) { return T((a != 0) != (b != 0)); }); return true;
    default: return false;
    }
}

bool byte_kernel(int code, const void* in, void* io, int64_t n) {
    switch (code) {
    case 6:
        map2<uint8_t, uint8_t>(in, io, n, [](uint8_t a, uint8_t b) { return uint8_t(a & b); });
        return true;
    case 8:
        map2<uint8_t, uint8_t>(in, io, n, [](uint8_t a, uint8_t b) { return uint8_t(a | b); });
        return true;
    case 10:
        map2<uint8_t, uint8_t>(in, io, n, [](uint8_t a, uint8_t b) { return uint8_t(a ^ b); });
        return true;
    default: return false;
    }
}

// MAXLOC (12) / MINLOC (11) on a C struct {V value; I index} (the pair types' layout).
template <class V, class I>
bool pair_kernel(int code, const void* in, void* io, int64_t n) {
    struct P {
        V v;
        I i;
    };
    if (code != 11 && code != 12) return false;
    const bool max = code == 12;
    const char* a = static_cast<const char*>(in);
    char* b = static_cast<char*>(io);
    for (int64_t k = 0; k < n; ++k, a += sizeof(P), b += sizeof(P)) {
        V av = ld<V>(a + offsetof(P, v)), bv = ld<V>(b + offsetof(P, v));
        I ai = ld<I>(a + offsetof(P, i)), bi = ld<I>(b + offsetof(P, i));
        if (max ? av > bv : av < bv) {
            st<V>(b + offsetof(P, v), av);
            st<I>(b + offsetof(P, i), ai);
        } else if (av == bv && ai < bi) {
            st<I>(b + offsetof(P, i), ai);
        }
    }
    return true;
}

// Applies predefined op `code` to n elements of builtin index `idx`; false if not defined.
bool kernel(int code, int idx, const void* in, void* io, int64_t n) {
    const Datatype* b = builtin_by_index(idx);
    if (!b || b->size == 0) return false;
    if (code == 14) return true;  // MPI_NO_OP
    if (code == 13) {             // MPI_REPLACE
        if (n > 0) {
            const char* a = static_cast<const char*>(in);
            char* o = static_cast<char*>(io);
            if (b->contig)
                std::memmove(o, a, size_t(n * b->size));
            else
                for (int64_t k = 0; k < n; ++k)
                    for (const Block& bl : b->blocks)
                        std::memmove(o + k * b->extent + bl.off, a + k * b->extent + bl.off,
                                     size_t(bl.len));
        }
        return true;
    }
    switch (ctype_of(idx)) {
    case ct_i8: return int_kernel<int8_t, uint8_t>(code, in, io, n);
    case ct_i16: return int_kernel<int16_t, uint16_t>(code, in, io, n);
    case ct_i32: return int_kernel<int32_t, uint32_t>(code, in, io, n);
    case ct_i64: return int_kernel<int64_t, uint64_t>(code, in, io, n);
    case ct_i128: return int_kernel<__int128, unsigned __int128>(code, in, io, n);
    case ct_u8: return int_kernel<uint8_t, uint8_t>(code, in, io, n);
    case ct_u16: return int_kernel<uint16_t, uint16_t>(code, in, io, n);
    case ct_u32: return int_kernel<uint32_t, uint32_t>(code, in, io, n);
    case ct_u64: return int_kernel<uint64_t, uint64_t>(code, in, io, n);
    case ct_f32: return float_kernel<float>(code, in, io, n);
    case ct_f64: return float_kernel<double>(code, in, io, n);
    case ct_f80: return float_kernel<long double>(code, in, io, n);
    case ct_f128: return float_kernel<__float128>(code, in, io, n);
    case ct_c32: return complex_kernel<float>(code, in, io, n);
    case ct_c64: return complex_kernel<double>(code, in, io, n);
    case ct_c80: return complex_kernel<long double>(code, in, io, n);
    case ct_c128: return complex_kernel<__float128>(code, in, io, n);
    case ct_bool: return logical_kernel<uint8_t>(code, in, io, n);
    case ct_logical: return logical_kernel<int32_t>(code, in, io, n);
    case ct_byte: return byte_kernel(code, in, io, n);
    case ct_p_float_int: return pair_kernel<float, int>(code, in, io, n);
    case ct_p_double_int: return pair_kernel<double, int>(code, in, io, n);
    case ct_p_long_int: return pair_kernel<long, int>(code, in, io, n);
    case ct_p_2int: return pair_kernel<int, int>(code, in, io, n);
    case ct_p_short_int: return pair_kernel<short, int>(code, in, io, n);
    case ct_p_ldouble_int: return pair_kernel<long double, int>(code, in, io, n);
    case ct_p_2real: return pair_kernel<float, float>(code, in, io, n);
    case ct_p_2double: return pair_kernel<double, double>(code, in, io, n);
    default: return false;
    }
}

// Whether predefined op `code` is defined on builtin `idx` (without running it).
bool op_allowed(int code, int idx) {
    const Datatype* b = builtin_by_index(idx);
    if (!b || b->size == 0) return false;
    if (code == 13 || code == 14) return true;
    CT t = ctype_of(idx);
    switch (code) {
    case 1:
    case 2: return is_int(t) || is_float(t);
    case 3:
    case 4: return is_int(t) || is_float(t) || is_complex(t);
    case 5:
    case 7:
    case 9: return is_int(t) || t == ct_bool || t == ct_logical;
    case 6:
    case 8:
    case 10: return is_int(t) || t == ct_byte;
    case 11:
    case 12: return is_pair(t);
    default: return false;
    }
}

Op g_builtin_ops[15];
const char* const kOpNames[15] = {"",           "MPI_MAX",     "MPI_MIN",  "MPI_SUM",
                                  "MPI_PROD",   "MPI_LAND",    "MPI_BAND", "MPI_LOR",
                                  "MPI_BOR",    "MPI_LXOR",    "MPI_BXOR", "MPI_MINLOC",
                                  "MPI_MAXLOC", "MPI_REPLACE", "MPI_NO_OP"};
struct BuiltinOpsInit {
    BuiltinOpsInit() {
        for (int i = 1; i <= 14; ++i) {
            g_builtin_ops[i].handle = MPI_Op(0x58000000 | i);
            g_builtin_ops[i].code = i;
            g_builtin_ops[i].commute = true;
            g_builtin_ops[i].name = kOpNames[i];
        }
    }
} g_builtin_ops_init;

std::vector<Op*> g_user_ops{nullptr};  // index = handle & 0xffffff (0 unused)

struct ApplyCtx {
    int code;
    const char* in;
    char* io;
    bool ok = true;
    static bool run(void* c, int64_t off, int64_t n, int basic) {
        auto* a = static_cast<ApplyCtx*>(c);
        if (!kernel(a->code, basic, a->in + off, a->io + off, n)) {
            a->ok = false;
            return false;
        }
        return true;
    }
};

}  // namespace

const Op* op_lookup(MPI_Op h) {
    uint32_t u = uint32_t(h);
    if ((u & 0xffffff00u) == 0x58000000u) {
        uint32_t i = u & 0xff;
        return (i >= 1 && i <= 14) ? &g_builtin_ops[i] : nullptr;
    }
    if ((u >> 24) == 0x98u) {
        uint32_t i = u & 0xffffff;
        if (i == 0 || i >= g_user_ops.size()) return nullptr;
        Op* op = g_user_ops[i];
        return (op && !op->freed) ? op : nullptr;
    }
    return nullptr;
}

bool op_commutative(const Op* op) { return op->commute; }

int op_apply(const Op* op, const void* in, void* inout, int64_t count, MPI_Datatype dth) {
    const Datatype* dt = datatype_lookup(dth);
    if (!dt) return datatype_error(dth);
    if (count <= 0) return MPI_SUCCESS;
    if (op->code == 0) {
        // User op: the user's datatype handle, in chunks an int count can express.
        MPI_Datatype h = dth;
        const char* a = static_cast<const char*>(in);
        char* b = static_cast<char*>(inout);
        if (op->fn_c) {
            MPI_Count n = count;
            op->fn_c(const_cast<char*>(a), b, &n, &h);
            return MPI_SUCCESS;
        }
        while (count > 0) {
            int n = count > INT_MAX ? INT_MAX : int(count);
            op->fn(const_cast<char*>(a), b, &n, &h);
            a += int64_t(n) * dt->extent;
            b += int64_t(n) * dt->extent;
            count -= n;
        }
        return MPI_SUCCESS;
    }
    if (dt->builtin) {
        if (!kernel(op->code, dt->basic, in, inout, count))
            return make_error(MPI_ERR_OP, "%s is not defined for %s", op->name, dt->name);
        return MPI_SUCCESS;
    }
    if (dt->basic == 0) return MPI_SUCCESS;  // no data
    if (dt->basic == kMixedBasic)
        return make_error(MPI_ERR_OP,
                          "%s needs a datatype made of one basic type; datatype 0x%x mixes several",
                          op->name, unsigned(dth));
    if (!op_allowed(op->code, dt->basic))
        return make_error(MPI_ERR_OP, "%s is not defined for %s (the basic type of datatype 0x%x)",
                          op->name, builtin_by_index(dt->basic)->name, unsigned(dth));
    if (op->code == 14) return MPI_SUCCESS;
    ApplyCtx c{op->code, static_cast<const char*>(in), static_cast<char*>(inout)};
    datatype_walk(*dt, 0, count, ApplyCtx::run, &c);
    return c.ok ? MPI_SUCCESS
                : make_error(MPI_ERR_OP, "%s failed on datatype 0x%x", op->name, unsigned(dth));
}

bool op_integer_type(MPI_Datatype dth) {
    const Datatype* dt = datatype_lookup(dth);
    return dt && dt->builtin && is_int(ctype_of(dt->basic));
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

static int op_create(MPI_User_function* fn, MPI_User_function_c* fn_c, int commute, MPI_Op* op) {
    if (!fn && !fn_c) return raise(nullptr, make_error(MPI_ERR_ARG, "the user function is NULL"));
    if (!op) return raise(nullptr, make_error(MPI_ERR_ARG, "op (the output argument) is NULL"));
    if (g_user_ops.size() > 0xffffff)
        return raise(nullptr, make_error(MPI_ERR_INTERN, "out of op handles"));
    auto* o = new Op();
    o->code = 0;
    o->commute = commute != 0;
    o->fn = fn;
    o->fn_c = fn_c;
    o->name = "user-defined op";
    o->handle = MPI_Op(0x98000000u | uint32_t(g_user_ops.size()));
    g_user_ops.push_back(o);
    *op = o->handle;
    return MPI_SUCCESS;
}

int Op_create(MPI_User_function* user_fn, int commute, MPI_Op* op) {
    return op_create(user_fn, nullptr, commute, op);
}
int Op_create_c(MPI_User_function_c* user_fn, int commute, MPI_Op* op) {
    return op_create(nullptr, user_fn, commute, op);
}

int Op_free(MPI_Op* op) {
    if (!op) return raise(nullptr, make_error(MPI_ERR_ARG, "op is NULL"));
    const Op* o = op_lookup(*op);
    if (!o) return raise(nullptr, make_error(MPI_ERR_OP, "invalid op 0x%x", unsigned(*op)));
    if (o->code != 0)
        return raise(nullptr,
                     make_error(MPI_ERR_OP, "%s is predefined and cannot be freed", o->name));
    const_cast<Op*>(o)->freed = true;
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

int Op_commutative(MPI_Op op, int* commute) {
    const Op* o = op_lookup(op);
    if (!o) return raise(nullptr, make_error(MPI_ERR_OP, "invalid op 0x%x", unsigned(op)));
    if (!commute) return raise(nullptr, make_error(MPI_ERR_ARG, "commute is NULL"));
    *commute = o->commute ? 1 : 0;
    return MPI_SUCCESS;
}

int Reduce_local_c(const void* inbuf, void* inoutbuf, MPI_Count count, MPI_Datatype datatype,
                   MPI_Op op) {
    const Op* o = op_lookup(op);
    if (!o) return raise(nullptr, make_error(MPI_ERR_OP, "invalid op 0x%x", unsigned(op)));
    if (!datatype_lookup(datatype)) return raise(nullptr, datatype_error(datatype));
    if (count < 0)
        return raise(nullptr, make_error(MPI_ERR_COUNT, "negative count %lld", (long long)count));
    if (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE)
        return raise(nullptr,
                     make_error(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed in MPI_Reduce_local"));
    if (count > 0 && (!inbuf || !inoutbuf))
        return raise(nullptr,
                     make_error(MPI_ERR_BUFFER, "NULL buffer with count %lld", (long long)count));
    int rc = op_apply(o, inbuf, inoutbuf, count, datatype);
    return rc == MPI_SUCCESS ? rc : raise(nullptr, rc);
}

int Reduce_local(const void* inbuf, void* inoutbuf, int count, MPI_Datatype datatype, MPI_Op op) {
    return Reduce_local_c(inbuf, inoutbuf, count, datatype, op);
}

}  // namespace wanmpi::impl
