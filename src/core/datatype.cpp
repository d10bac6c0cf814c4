// Datatype objects: the builtin table, the handle table of derived types, reference counts,
// flattening and the pack engine (see datatype.hpp for the representation).
#include "core/datatype.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "core/errors.hpp"

namespace wanmpi::core {

namespace {

// ---- builtin types ------------------------------------------------------------------------------
struct BuiltinRow {
    MPI_Datatype h;
    const char* name;
    int size;    // bytes of data
    int extent;  // sizeof the C type (pair types: the C struct, padding included)
    int align;
    int ext32;       // bytes in external32
    int pair_first;  // pair types: bytes of the value part (packed layout); 0 otherwise
    Block blk[2];    // data blocks of one element (pair types with padding have two)
    int nblk;
};

// clang-format off
#define ROW(h, n, sz, al, e32) {h, n, sz, sz, al, e32, 0, {{0, sz}, {0, 0}}, (sz) ? 1 : 0}
const BuiltinRow kRows[] = {
    ROW(MPI_CHAR, "MPI_CHAR", 1, 1, 1),
    ROW(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, 1, 1),
    ROW(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, 1, 1),
    ROW(MPI_BYTE, "MPI_BYTE", 1, 1, 1),
    ROW(MPI_WCHAR, "MPI_WCHAR", 4, 4, 2),
    ROW(MPI_SHORT, "MPI_SHORT", 2, 2, 2),
    ROW(MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", 2, 2, 2),
    ROW(MPI_INT, "MPI_INT", 4, 4, 4),
    ROW(MPI_UNSIGNED, "MPI_UNSIGNED", 4, 4, 4),
    ROW(MPI_LONG, "MPI_LONG", 8, 8, 4),
    ROW(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", 8, 8, 4),
    ROW(MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", 8, 8, 8),
    ROW(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", 8, 8, 8),
    ROW(MPI_FLOAT, "MPI_FLOAT", 4, 4, 4),
    ROW(MPI_DOUBLE, "MPI_DOUBLE", 8, 8, 8),
    ROW(MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", 16, 16, 16),
    ROW(MPI_PACKED, "MPI_PACKED", 1, 1, 1),
    ROW(MPI_INT8_T, "MPI_INT8_T", 1, 1, 1),
    ROW(MPI_INT16_T, "MPI_INT16_T", 2, 2, 2),
    ROW(MPI_INT32_T, "MPI_INT32_T", 4, 4, 4),
    ROW(MPI_INT64_T, "MPI_INT64_T", 8, 8, 8),
    ROW(MPI_UINT8_T, "MPI_UINT8_T", 1, 1, 1),
    ROW(MPI_UINT16_T, "MPI_UINT16_T", 2, 2, 2),
    ROW(MPI_UINT32_T, "MPI_UINT32_T", 4, 4, 4),
    ROW(MPI_UINT64_T, "MPI_UINT64_T", 8, 8, 8),
    ROW(MPI_C_BOOL, "MPI_C_BOOL", 1, 1, 1),
    ROW(MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX", 8, 4, 8),
    ROW(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 16, 8, 16),
    ROW(MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", 32, 16, 32),
    ROW(MPI_AINT, "MPI_AINT", 8, 8, 8),
    ROW(MPI_OFFSET, "MPI_OFFSET", 8, 8, 8),
    ROW(MPI_COUNT, "MPI_COUNT", 8, 8, 8),
    // Pair types: data size, C struct extent, value part size.
    {MPI_FLOAT_INT, "MPI_FLOAT_INT", 8, 8, 4, 8, 4, {{0, 8}, {0, 0}}, 1},
    {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", 12, 16, 8, 12, 8, {{0, 12}, {0, 0}}, 1},
    {MPI_LONG_INT, "MPI_LONG_INT", 12, 16, 8, 8, 8, {{0, 12}, {0, 0}}, 1},
    {MPI_2INT, "MPI_2INT", 8, 8, 4, 8, 4, {{0, 8}, {0, 0}}, 1},
    {MPI_SHORT_INT, "MPI_SHORT_INT", 6, 8, 4, 6, 2, {{0, 2}, {4, 4}}, 2},
    {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", 20, 32, 16, 20, 16, {{0, 20}, {0, 0}}, 1},
    ROW(MPI_CXX_BOOL, "MPI_CXX_BOOL", 1, 1, 1),
    ROW(MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", 8, 4, 8),
    ROW(MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", 16, 8, 16),
    ROW(MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", 32, 16, 32),
    ROW(MPI_CHARACTER, "MPI_CHARACTER", 1, 1, 1),
    ROW(MPI_INTEGER, "MPI_INTEGER", 4, 4, 4),
    ROW(MPI_REAL, "MPI_REAL", 4, 4, 4),
    ROW(MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8, 8, 8),
    ROW(MPI_COMPLEX, "MPI_COMPLEX", 8, 4, 8),
    ROW(MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", 16, 8, 16),
    ROW(MPI_LOGICAL, "MPI_LOGICAL", 4, 4, 4),
    {MPI_2INTEGER, "MPI_2INTEGER", 8, 8, 4, 8, 4, {{0, 8}, {0, 0}}, 1},
    {MPI_2REAL, "MPI_2REAL", 8, 8, 4, 8, 4, {{0, 8}, {0, 0}}, 1},
    {MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", 16, 16, 8, 16, 8, {{0, 16}, {0, 0}}, 1},
    ROW(MPI_INTEGER1, "MPI_INTEGER1", 1, 1, 1),
    ROW(MPI_INTEGER2, "MPI_INTEGER2", 2, 2, 2),
    ROW(MPI_INTEGER4, "MPI_INTEGER4", 4, 4, 4),
    ROW(MPI_INTEGER8, "MPI_INTEGER8", 8, 8, 8),
    ROW(MPI_REAL4, "MPI_REAL4", 4, 4, 4),
    ROW(MPI_REAL8, "MPI_REAL8", 8, 8, 8),
    ROW(MPI_REAL16, "MPI_REAL16", 16, 16, 16),
    ROW(MPI_COMPLEX8, "MPI_COMPLEX8", 8, 4, 8),
    ROW(MPI_COMPLEX16, "MPI_COMPLEX16", 16, 8, 16),
    ROW(MPI_COMPLEX32, "MPI_COMPLEX32", 32, 16, 32),
    ROW(MPI_INTEGER16, "MPI_INTEGER16", 16, 16, 16),
    ROW(MPI_LB, "MPI_LB", 0, 1, 0),
    ROW(MPI_UB, "MPI_UB", 0, 1, 0),
};
#undef ROW
// clang-format on

// The sizes in mpi.h and the table must match the C types of this platform.
static_assert(sizeof(long) == 8 && sizeof(long double) == 16 && sizeof(wchar_t) == 4);
struct DI {
    double d;
    int i;
};
struct LI {
    long l;
    int i;
};
struct SI {
    short s;
    int i;
};
struct LDI {
    long double d;
    int i;
};
static_assert(sizeof(DI) == 16 && sizeof(LI) == 16 && sizeof(SI) == 8 && sizeof(LDI) == 32);
static_assert(alignof(DI) == 8 && alignof(LDI) == 16 && offsetof(SI, i) == 4);

struct Builtins {
    Datatype by_index[256];
    const BuiltinRow* row[256] = {};
    Builtins() {
        for (const auto& r : kRows) {
            int idx = r.h & 0xff;
            row[idx] = &r;
            Datatype& d = by_index[idx];
            d.handle = r.h;
            d.size = r.size;
            d.extent = r.extent;
            d.lb = 0;
            d.ub = r.extent;
            d.true_lb = 0;
            d.true_ub = r.size ? r.blk[r.nblk - 1].off + r.blk[r.nblk - 1].len : 0;
            d.builtin = true;
            d.committed = true;
            d.align = r.align;
            d.basic = r.size ? idx : 0;
            d.nelems = r.size == 0 ? 0 : r.pair_first ? 2 : 1;
            d.ext32_size = r.ext32;
            d.contig = r.size == r.extent && r.nblk == 1;
            std::snprintf(d.name, sizeof d.name, "%s", r.name);
            d.flat_tried = d.flat_runs = d.flat_blocks = true;
            if (r.size) d.runs.push_back({0, 1, idx});
            for (int b = 0; b < r.nblk; ++b) d.blocks.push_back(r.blk[b]);
            d.refs = 1 << 30;  // never freed
        }
        // Markers have no data and no extent.
        for (MPI_Datatype m : {MPI_LB, MPI_UB}) {
            Datatype& d = by_index[m & 0xff];
            d.extent = d.ub = 0;
            d.contig = true;
        }
    }
};
Builtins& builtins() {
    static Builtins b;
    return b;
}

// ---- derived type handles -----------------------------------------------------------------------
// Slots in chunks that never move, so lookups need no lock. Slot 0 is never used.
constexpr uint32_t kChunk = 4096, kChunks = 4096;  // 16M handles (24 bits)
struct Slots {
    std::atomic<Datatype*>* chunk[kChunks] = {};
    uint32_t next = 1;
    std::vector<uint32_t> free_list;
};
Slots g_slots;
std::mutex g_slot_lock;  // creation/destruction may run in MPI_THREAD_MULTIPLE without the API lock

Datatype* slot_get(uint32_t idx) {
    uint32_t c = idx / kChunk;
    if (c >= kChunks) return nullptr;
    std::atomic<Datatype*>* ch = __atomic_load_n(&g_slots.chunk[c], __ATOMIC_ACQUIRE);
    if (!ch) return nullptr;
    return ch[idx % kChunk].load(std::memory_order_acquire);
}

inline const char* at(const void* p, int64_t off) {
    return reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + uint64_t(off));
}
inline char* at(void* p, int64_t off) {
    return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(p) + uint64_t(off));
}

// ---- walking a typemap --------------------------------------------------------------------------
// Two levels: kRuns visits typed runs (off, count, basic) using the types' `runs`; kBlocks visits
// byte ranges (off, len, -) using `blocks`. Both take a child's flat map when it has one, and a
// block of `n` children whose single run/block fills the child's extent is visited as one piece.
enum Level { kRuns, kBlocks };

template <Level L>
bool walk_elem(const Datatype& t, int64_t base, RunFn fn, void* ctx);

template <Level L>
bool walk_n(const Datatype& t, int64_t base, int64_t n, RunFn fn, void* ctx) {
    if (n <= 0 || t.size == 0) return true;
    if constexpr (L == kRuns) {
        if (t.flat_runs && t.runs.size() == 1) {
            const Run& r = t.runs[0];
            const Datatype& b = builtins().by_index[r.basic];
            if (r.count * b.extent == t.extent) return fn(ctx, base + r.off, n * r.count, r.basic);
        }
    } else {
        if (t.flat_blocks && t.blocks.size() == 1 && t.blocks[0].len == t.extent)
            return fn(ctx, base + t.blocks[0].off, n * t.extent, -1);
    }
    for (int64_t k = 0; k < n; ++k)
        if (!walk_elem<L>(t, base + k * t.extent, fn, ctx)) return false;
    return true;
}

template <Level L>
bool walk_elem(const Datatype& t, int64_t base, RunFn fn, void* ctx) {
    if constexpr (L == kRuns) {
        if (t.flat_runs) {
            for (const Run& r : t.runs)
                if (!fn(ctx, base + r.off, r.count, r.basic)) return false;
            return true;
        }
    } else {
        if (t.flat_blocks) {
            for (const Block& b : t.blocks)
                if (!fn(ctx, base + b.off, b.len, -1)) return false;
            return true;
        }
    }
    for (int64_t rep = 0; rep < t.reps; ++rep) {
        int64_t b = base + rep * t.rep_stride;
        for (const Part& p : t.parts)
            if (!walk_n<L>(*p.type, b + p.disp, p.blen, fn, ctx)) return false;
    }
    return true;
}

// Appends runs/blocks, merging adjacent ones, up to kMaxFlat entries.
struct RunCollector {
    std::vector<Run> out;
    bool overflow = false;
    static bool add(void* c, int64_t off, int64_t n, int basic) {
        auto* self = static_cast<RunCollector*>(c);
        if (!self->out.empty()) {
            Run& l = self->out.back();
            if (l.basic == basic && l.off + l.count * builtins().by_index[basic].extent == off) {
                l.count += n;
                return true;
            }
        }
        if (self->out.size() >= kMaxFlat) {
            self->overflow = true;
            return false;
        }
        self->out.push_back({off, n, int32_t(basic)});
        return true;
    }
};
struct BlockCollector {
    std::vector<Block> out;
    bool overflow = false;
    static bool add(void* c, int64_t off, int64_t len, int) {
        auto* self = static_cast<BlockCollector*>(c);
        if (len == 0) return true;
        if (!self->out.empty()) {
            Block& l = self->out.back();
            if (l.off + l.len == off) {
                l.len += len;
                return true;
            }
        }
        if (self->out.size() >= kMaxFlat) {
            self->overflow = true;
            return false;
        }
        self->out.push_back({off, len});
        return true;
    }
};

// Moves the bytes of a typemap between user memory and the packed stream (Pack: user -> packed,
// else packed -> user), for types too big to flatten. It recurses over `parts` like the walk,
// but moves data itself, with strided loops for the common shapes (a vector of builtins or of
// one-block children), so a vector of a million doubles costs a tight loop, not a callback per
// element. `left` is the packed bytes still allowed (a truncated receive); every call returns
// false once it is used up.
template <bool Pack>
struct Mover {
    char* pk;
    int64_t left;

    bool bytes(uintptr_t u, int64_t len) {
        int64_t n = len < left ? len : left;
        if (Pack)
            std::memcpy(pk, reinterpret_cast<const char*>(u), size_t(n));
        else
            std::memcpy(reinterpret_cast<char*>(u), pk, size_t(n));
        pk += n;
        left -= n;
        return left > 0;
    }
    template <int L>
    void fixed(uintptr_t u, int64_t n, int64_t stride) {
        for (int64_t i = 0; i < n; ++i, u += uint64_t(stride), pk += L) {
            if (Pack)
                std::memcpy(pk, reinterpret_cast<const char*>(u), L);
            else
                std::memcpy(reinterpret_cast<char*>(u), pk, L);
        }
    }
    // n blocks of len bytes, stride bytes apart.
    bool strided(uintptr_t u, int64_t n, int64_t stride, int64_t len) {
        if (len == stride) return bytes(u, n * len);
        int64_t whole = std::min(n, left / len);
        switch (len) {
        case 4: fixed<4>(u, whole, stride); break;
        case 8: fixed<8>(u, whole, stride); break;
        case 16: fixed<16>(u, whole, stride); break;
        default:
            for (int64_t i = 0; i < whole; ++i, pk += len) {
                uintptr_t a = u + uint64_t(i * stride);
                if (Pack)
                    std::memcpy(pk, reinterpret_cast<const char*>(a), size_t(len));
                else
                    std::memcpy(reinterpret_cast<char*>(a), pk, size_t(len));
            }
        }
        left -= whole * len;
        if (whole < n && left > 0) bytes(u + uint64_t(whole * stride), len);
        return left > 0;
    }
    bool elem(const Datatype& t, uintptr_t u) {
        if (t.flat_blocks) {
            for (const Block& b : t.blocks)
                if (!bytes(u + uint64_t(b.off), b.len)) return false;
            return true;
        }
        if (t.parts.size() == 1) {
            const Part& p = t.parts[0];
            const Datatype& c = *p.type;
            if (c.flat_blocks && c.blocks.size() == 1) {
                const Block& b = c.blocks[0];
                uintptr_t first = u + uint64_t(p.disp + b.off);
                if (b.len == c.extent)  // each repetition is one block
                    return strided(first, t.reps, t.rep_stride, p.blen * b.len);
                if (p.blen == 1) return strided(first, t.reps, t.rep_stride, b.len);
            }
        }
        for (int64_t rep = 0; rep < t.reps; ++rep)
            for (const Part& p : t.parts)
                if (!n_of(*p.type, u + uint64_t(rep * t.rep_stride + p.disp), p.blen)) return false;
        return true;
    }
    // n consecutive elements of c.
    bool n_of(const Datatype& c, uintptr_t u, int64_t n) {
        if (n <= 0 || c.size == 0) return true;
        if (c.flat_blocks && c.blocks.size() == 1)
            return strided(u + uint64_t(c.blocks[0].off), n, c.extent, c.blocks[0].len);
        for (int64_t k = 0; k < n; ++k)
            if (!elem(c, u + uint64_t(k * c.extent))) return false;
        return true;
    }
};

inline void copy_small(char* d, const char* s, int64_t len) {
    switch (len) {
    case 4: std::memcpy(d, s, 4); break;
    case 8: std::memcpy(d, s, 8); break;
    case 16: std::memcpy(d, s, 16); break;
    default: std::memcpy(d, s, size_t(len));
    }
}

}  // namespace

// ---- lookup -------------------------------------------------------------------------------------
const Datatype* builtin_by_index(int idx) {
    if (idx <= 0 || idx > 255) return nullptr;
    return builtins().row[idx] ? &builtins().by_index[idx] : nullptr;
}

bool builtin_is_pair(int idx) {
    const BuiltinRow* r = (idx > 0 && idx < 256) ? builtins().row[idx] : nullptr;
    return r && r->pair_first;
}

int64_t builtin_ext32_size(int idx) {
    const BuiltinRow* r = (idx > 0 && idx < 256) ? builtins().row[idx] : nullptr;
    return r ? r->ext32 : 0;
}

// The builtin table, once builtins() has built it: every message looks its datatype up (about
// five lookups per message in a small collective), and going through builtins()' guarded static
// each time cost ~50 instructions per lookup (callgrind).
static std::atomic<Builtins*> g_builtin_table{nullptr};

Datatype* datatype_get(MPI_Datatype h) {
    uint32_t u = uint32_t(h);
    if ((u & 0xffff0000u) == 0x4c000000u) {
        Builtins* b = g_builtin_table.load(std::memory_order_acquire);
        if (__builtin_expect(b == nullptr, 0)) {
            b = &builtins();
            g_builtin_table.store(b, std::memory_order_release);
        }
        int idx = int(u & 0xff);
        return (b->row[idx] && b->row[idx]->h == h) ? &b->by_index[idx] : nullptr;
    }
    if ((u >> 24) == 0x8cu) return slot_get(u & 0xffffffu);
    return nullptr;
}

const Datatype* datatype_lookup(MPI_Datatype h) {
    const Datatype* d = datatype_get(h);
    if (!d || !d->committed || h == MPI_LB || h == MPI_UB) return nullptr;
    return d;
}

int datatype_error(MPI_Datatype h) {
    if (h == MPI_DATATYPE_NULL)
        return make_error(MPI_ERR_TYPE, "the datatype is MPI_DATATYPE_NULL");
    const Datatype* d = datatype_get(h);
    if (!d) return make_error(MPI_ERR_TYPE, "invalid datatype handle 0x%x", unsigned(h));
    if (h == MPI_LB || h == MPI_UB)
        return make_error(MPI_ERR_TYPE, "%s is a bounds marker, not a datatype for data", d->name);
    if (!d->committed)
        return make_error(MPI_ERR_TYPE,
                          "datatype 0x%x%s%s has not been committed (MPI_Type_commit)", unsigned(h),
                          d->name[0] ? " " : "", d->name);
    return make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(h));
}

Datatype* datatype_new() {
    std::lock_guard<std::mutex> lk(g_slot_lock);
    uint32_t idx;
    if (!g_slots.free_list.empty()) {
        idx = g_slots.free_list.back();
        g_slots.free_list.pop_back();
    } else {
        if (g_slots.next >= kChunk * kChunks) return nullptr;
        idx = g_slots.next++;
    }
    uint32_t c = idx / kChunk;
    if (!g_slots.chunk[c]) {
        auto* ch = new std::atomic<Datatype*>[kChunk];
        for (uint32_t i = 0; i < kChunk; ++i) ch[i].store(nullptr, std::memory_order_relaxed);
        __atomic_store_n(&g_slots.chunk[c], ch, __ATOMIC_RELEASE);
    }
    auto* d = new Datatype();
    d->handle = MPI_Datatype(0x8c000000u | idx);
    g_slots.chunk[c][idx % kChunk].store(d, std::memory_order_release);
    return d;
}

// ---- reference counts ---------------------------------------------------------------------------
void datatype_retain(const Datatype* dt) {
    if (!dt || dt->builtin) return;
    ++const_cast<Datatype*>(dt)->refs;
}

void datatype_release(const Datatype* cdt) {
    if (!cdt || cdt->builtin) return;
    auto* dt = const_cast<Datatype*>(cdt);
    if (--dt->refs > 0) return;
    // Children are released after the slot is gone; a deep chain unwinds one level per call.
    std::vector<Datatype*> kids;
    for (const Part& p : dt->parts) kids.push_back(p.type);
    for (MPI_Datatype h : dt->types) kids.push_back(datatype_get(h));
    {
        std::lock_guard<std::mutex> lk(g_slot_lock);
        uint32_t idx = uint32_t(dt->handle) & 0xffffffu;
        g_slots.chunk[idx / kChunk][idx % kChunk].store(nullptr, std::memory_order_release);
        g_slots.free_list.push_back(idx);
    }
    delete dt;
    for (Datatype* k : kids) datatype_release(k);
}

// ---- flattening ---------------------------------------------------------------------------------
void datatype_flatten(Datatype* t) {
    if (t->flat_tried) return;
    t->flat_tried = true;
    for (const Part& p : t->parts) datatype_flatten(p.type);
    RunCollector rc;
    if (t->size > 0 && walk_elem<kRuns>(*t, 0, RunCollector::add, &rc) && !rc.overflow) {
        t->runs = std::move(rc.out);
        t->flat_runs = true;
    } else if (t->size == 0) {
        t->flat_runs = true;
    }
    BlockCollector bc;
    if (t->size > 0 && walk_elem<kBlocks>(*t, 0, BlockCollector::add, &bc) && !bc.overflow) {
        t->blocks = std::move(bc.out);
        t->flat_blocks = true;
    } else if (t->size == 0) {
        t->flat_blocks = true;
    }
    t->contig = t->size == 0 || (t->flat_blocks && t->blocks.size() == 1 && t->blocks[0].off == 0 &&
                                 t->blocks[0].len == t->size && t->extent == t->size);
}

bool datatype_walk(const Datatype& dt, int64_t base, int64_t count, RunFn fn, void* ctx) {
    for (int64_t i = 0; i < count; ++i)
        if (!walk_elem<kRuns>(dt, base + i * dt.extent, fn, ctx)) return false;
    return true;
}

namespace {
// Prefix walks for MPI_Get_elements and MPI_Status_set_elements. They skip whole repetitions and
// whole child blocks arithmetically and descend only into the one child the prefix ends in, so
// they cost O(depth x parts) even for types of billions of elements.

// The traversal both walks share: consumes `left` units of one element of `t` (packed bytes
// when BytesIn, else basic elements) and adds the other unit to `out`. Whole repetitions and
// whole child blocks are skipped arithmetically; `basic(index, count)` handles a run of builtin
// elements of a flat type (false: the prefix ended inside it); `inner(child)` descends into the
// child the prefix ends in.
template <bool BytesIn, class Basic, class Inner>
void prefix_walk(const Datatype& t, int64_t& left, int64_t& out, Basic basic, Inner inner) {
    auto in = [](const Datatype& d) { return BytesIn ? d.size : d.nelems; };
    auto add = [](const Datatype& d) { return BytesIn ? d.nelems : d.size; };
    if (t.flat_runs) {
        for (const Run& r : t.runs)
            if (!basic(r.basic, r.count) || left == 0) return;
        return;
    }
    const int64_t rep_in = in(t) / t.reps, rep_add = add(t) / t.reps;
    int64_t k = std::min(t.reps, left / rep_in);
    out += k * rep_add;
    left -= k * rep_in;
    if (k == t.reps || left == 0) return;
    for (const Part& p : t.parts) {
        const Datatype& c = *p.type;
        if (in(c) == 0) continue;
        int64_t whole = std::min(p.blen, left / in(c));
        out += whole * add(c);
        left -= whole * in(c);
        if (whole < p.blen) {
            inner(c);
            left = 0;
            return;
        }
        if (left == 0) return;
    }
}

// Packed bytes -> basic elements: adds to `n` the basic elements wholly inside the first `left`
// bytes of one element of `t`; sets `partial` if the bytes end inside a basic element (a pair's
// value part alone counts as one element).
void elems_in_bytes(const Datatype& t, int64_t& left, int64_t& n, bool& partial) {
    if (left <= 0 || t.size == 0) return;
    auto basic_prefix = [&](int basic, int64_t count) -> bool {  // false: stopped inside
        const Datatype& b = builtins().by_index[basic];
        int per = builtin_is_pair(basic) ? 2 : 1;
        int64_t whole = std::min(count, left / b.size);
        n += whole * per;
        left -= whole * b.size;
        if (whole == count) return true;
        if (left > 0) {
            int first = builtins().row[basic]->pair_first;
            if (first && left == first)
                n += 1;
            else
                partial = true;
        }
        left = 0;
        return false;
    };
    prefix_walk<true>(t, left, n, basic_prefix,
                      [&](const Datatype& c) { elems_in_bytes(c, left, n, partial); });
}

// Basic elements -> packed bytes: adds to `bytes` the size of the first `left` basic elements of
// one element of `t` (left < t.nelems).
void bytes_of_elems(const Datatype& t, int64_t& left, int64_t& bytes) {
    if (left <= 0 || t.nelems == 0) return;
    auto basic_prefix = [&](int basic, int64_t count) -> bool {
        const Datatype& b = builtins().by_index[basic];
        int per = builtin_is_pair(basic) ? 2 : 1;
        int64_t whole = std::min(count, left / per);
        bytes += whole * b.size;
        left -= whole * per;
        if (whole == count) return true;
        if (left > 0) bytes += builtins().row[basic]->pair_first;  // one element of a pair
        left = 0;
        return false;
    };
    prefix_walk<false>(t, left, bytes, basic_prefix,
                       [&](const Datatype& c) { bytes_of_elems(c, left, bytes); });
}
}  // namespace

int64_t datatype_elements(const Datatype& dt, int64_t bytes) {
    if (dt.size == 0 || bytes <= 0) return 0;
    int64_t full = bytes / dt.size, rem = bytes % dt.size;
    int64_t n = full * dt.nelems;
    bool partial = false;
    elems_in_bytes(dt, rem, n, partial);
    return partial ? -1 : n;
}

int64_t datatype_bytes_of_elements(const Datatype& dt, int64_t elements) {
    if (dt.nelems == 0 || elements <= 0) return 0;
    int64_t full = elements / dt.nelems, rem = elements % dt.nelems;
    int64_t bytes = full * dt.size;
    bytes_of_elems(dt, rem, bytes);
    return bytes;
}

bool datatype_dense(const Datatype& dt, int64_t count, int64_t* off) {
    if (dt.contig) {
        *off = 0;
        return true;
    }
    if (!dt.flat_blocks || dt.blocks.size() != 1) return false;
    if (count > 1 && dt.extent != dt.size) return false;
    *off = dt.blocks[0].off;
    return true;
}

// ---- pack engine --------------------------------------------------------------------------------
void pack(const Datatype& dt, const void* src, int64_t count, void* dst) {
    if (count <= 0 || dt.size == 0) return;
    char* d = static_cast<char*>(dst);
    if (dt.contig) {
        std::memcpy(d, src, size_t(dt.size * count));
        return;
    }
    const int64_t ext = dt.extent;
    if (dt.flat_blocks) {
        if (dt.blocks.size() == 1) {
            const int64_t off = dt.blocks[0].off, len = dt.blocks[0].len;
            const char* s = at(src, off);
            for (int64_t i = 0; i < count; ++i, s += ext, d += len) copy_small(d, s, len);
            return;
        }
        for (int64_t i = 0; i < count; ++i) {
            const char* s = at(src, i * ext);
            for (const Block& b : dt.blocks) {
                copy_small(d, s + b.off, b.len);
                d += b.len;
            }
        }
        return;
    }
    Mover<true> m{d, INT64_MAX};
    m.n_of(dt, reinterpret_cast<uintptr_t>(src), count);
}

void unpack(const Datatype& dt, const void* src, int64_t bytes, void* dst) {
    if (bytes <= 0 || dt.size == 0) return;
    const char* s = static_cast<const char*>(src);
    if (dt.contig) {
        std::memcpy(dst, s, size_t(bytes));
        return;
    }
    const int64_t ext = dt.extent;
    int64_t full = bytes / dt.size, rem = bytes % dt.size;
    if (dt.flat_blocks) {
        if (dt.blocks.size() == 1) {
            const int64_t off = dt.blocks[0].off, len = dt.blocks[0].len;
            char* d = at(dst, off);
            for (int64_t i = 0; i < full; ++i, d += ext, s += len) copy_small(d, s, len);
            if (rem) std::memcpy(d, s, size_t(rem));
            return;
        }
        for (int64_t i = 0; i < full; ++i) {
            char* d = at(dst, i * ext);
            for (const Block& b : dt.blocks) {
                copy_small(d + b.off, s, b.len);
                s += b.len;
            }
        }
        if (rem) {
            char* d = at(dst, full * ext);
            for (const Block& b : dt.blocks) {
                int64_t n = b.len < rem ? b.len : rem;
                std::memcpy(d + b.off, s, size_t(n));
                s += n;
                rem -= n;
                if (rem == 0) break;
            }
        }
        return;
    }
    Mover<false> m{const_cast<char*>(s), bytes};
    m.n_of(dt, reinterpret_cast<uintptr_t>(dst), full + (rem ? 1 : 0));
}

}  // namespace wanmpi::core
