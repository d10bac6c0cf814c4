// Accumulate-class operations on window memory (accumulate, get_accumulate, fetch_and_op,
// compare_and_swap), whoever applies them: the origin itself for a target on this host whose
// memory it maps (origin.cpp, `direct`), or the target for operations that came as messages
// (target.cpp), or the lean path of a same-host origin (fast.cpp). All go through acc_apply /
// acc_one / cas_apply, so every process uses the same method on the same location.
//
// Atomicity (MPI 3.1 §11.7.1): concurrent accumulate-class operations on one location with the
// same basic datatype must be atomic per basic element. Every operation holds the segment's
// accumulate lock (rma.hpp), a reader-writer lock, in one of two modes:
//   - small operations — at most kAtomicMax elements, each of a contiguous builtin of 1, 2, 4
//     or 8 bytes at an address aligned to its size (fetch_and_op, compare_and_swap, short
//     accumulates) — hold it shared and update each element with one atomic instruction:
//     MPI_REPLACE an exchange, MPI_NO_OP a load, MPI_SUM and the bitwise ops of integer types
//     fetch-add / and / or / xor, compare_and_swap a compare-exchange, any other op (floating
//     sums, MIN/MAX, PROD, the logical ops, MINLOC/MAXLOC of the 8-byte pair types) a
//     compare-exchange loop around the op's own kernel;
//   - everything else (long accumulates, 16-byte types, types with holes like MPI_SHORT_INT,
//     misaligned elements) holds it exclusive and runs the op's vectorised kernel with plain
//     loads and stores.
// Small operations are atomic with respect to each other by their instructions, and an
// exclusive holder runs alone, so any mix of calls and ops is atomic per element, whoever
// applies it (the target for messages, a same-host origin directly). Shared mode lets fetch-and-ops from several ranks proceed at once, and long
// accumulates keep their vectorised loops (an atomic instruction per element would cost 5-20 ns
// each). Plain puts and gets are never atomic with accumulates (as the standard says).
//
// Threading: under the API lock; the atomics and the segment lock order against the window's
// other processes.
#include <atomic>
#include <cstring>
#include <memory>

#include "core/datatype.hpp"
#include "core/op.hpp"
#include "rma/rma.hpp"

namespace wanmpi::rma {

namespace {

constexpr int64_t kAtomicMax = 8;  // elements of a "small" operation (file comment)
constexpr int kSum = 3, kBand = 6, kBor = 8, kBxor = 10, kReplace = 13, kNoOp = 14;

int op_code(MPI_Op op) { return int(uint32_t(op) & 0xffu); }  // predefined ops (checked at origin)

// core::op_integer_type, remembered per builtin (index = the handle's low byte, datatype.hpp):
// it is a switch over every builtin, a third of an 8-byte fetch-and-op's instructions.
bool integer_type(int32_t basic) {
    static int8_t known[256];  // 0 unknown, 1 integer, 2 not
    int8_t& k = known[uint32_t(basic) & 0xffu];
    if (!k) k = core::op_integer_type(MPI_Datatype(basic)) ? 1 : 2;
    return k == 1;
}

bool atomic_ok(const core::Datatype* b, const char* at) {
    const int64_t s = b->size;
    return b->contig && b->extent == s && (s == 1 || s == 2 || s == 4 || s == 8) &&
           uintptr_t(at) % uintptr_t(s) == 0;
}

// One element at `p` (aligned): *p = in (op) *p atomically; the previous value to `old` if set.
template <class U>
void atomic_elem(char* p, const char* in, char* old, const core::Op* op, int code, bool integer,
                 MPI_Datatype dt) {
    std::atomic_ref<U> a(*reinterpret_cast<U*>(p));
    U prev, v;
    if (code == kNoOp) {  // no input (it may be a null pointer)
        prev = a.load(std::memory_order_acquire);
        if (old) std::memcpy(old, &prev, sizeof prev);
        return;
    }
    std::memcpy(&v, in, sizeof v);  // packed input: may be unaligned
    if (code == kReplace) {
        prev = a.exchange(v, std::memory_order_acq_rel);
    } else if (integer && code == kSum) {
        prev = a.fetch_add(v, std::memory_order_acq_rel);  // unsigned add = two's complement
    } else if (integer && code == kBand) {
        prev = a.fetch_and(v, std::memory_order_acq_rel);
    } else if (integer && code == kBor) {
        prev = a.fetch_or(v, std::memory_order_acq_rel);
    } else if (integer && code == kBxor) {
        prev = a.fetch_xor(v, std::memory_order_acq_rel);
    } else {
        prev = a.load(std::memory_order_relaxed);
        for (;;) {
            U next = prev;
            // An op not defined on the type is an erroneous program: leave the element alone.
            if (core::op_apply(op, &v, &next, 1, dt) != MPI_SUCCESS) break;
            if (a.compare_exchange_weak(prev, next, std::memory_order_acq_rel)) break;
        }
    }
    if (old) std::memcpy(old, &prev, sizeof prev);
}

// (the element size is chosen once per run, not per element: an 8-element accumulate is a
// latency benchmark's call)
template <class U>
void atomic_elems(char* at, int64_t n, const char* in, char* old, const core::Op* op, int code,
                  bool integer, MPI_Datatype dt) {
    constexpr int64_t s = sizeof(U);
    for (int64_t i = 0; i < n; ++i)
        atomic_elem<U>(at + i * s, in ? in + i * s : nullptr, old ? old + i * s : nullptr, op,
                       code, integer, dt);
}

void atomic_run(char* at, const Run& r, int64_t size, const char* in, char* old,
                const core::Op* op, int code, bool integer) {
    const MPI_Datatype dt = MPI_Datatype(r.basic);
    switch (size) {
    case 1: atomic_elems<uint8_t>(at, r.count, in, old, op, code, integer, dt); break;
    case 2: atomic_elems<uint16_t>(at, r.count, in, old, op, code, integer, dt); break;
    case 4: atomic_elems<uint32_t>(at, r.count, in, old, op, code, integer, dt); break;
    default: atomic_elems<uint64_t>(at, r.count, in, old, op, code, integer, dt); break;
    }
}

// Window memory (op)= packed `in` for one run, under the segment lock. Builtins with holes
// (MPI_DOUBLE_INT: size 12, extent 16) are first unpacked to their memory layout, which
// op_apply expects.
void locked_run(char* at, const Run& r, const core::Datatype* b, const char* in,
                const core::Op* op, MPI_Op oph) {
    if (oph == MPI_REPLACE) {
        core::unpack(*b, in, r.count * b->size, at);
    } else if (b->contig) {
        core::op_apply(op, in, at, r.count, r.basic);
    } else {
        std::unique_ptr<char[]> tmp(new char[size_t(r.count * b->extent)]);
        core::unpack(*b, in, r.count * b->size, tmp.get());
        core::op_apply(op, tmp.get(), at, r.count, r.basic);
    }
}

}  // namespace

// One run of a builtin: the same choice as acc_apply for an operation made of this run alone
// (acc_apply hands single-run operations here, so both paths pick the same method for the same
// elements: the invariant of the file comment).
void acc_one(Window* w, char* at, const core::Datatype& b, int64_t count, const char* in,
             MPI_Op oph, char* old) {
    const core::Op* op = core::op_lookup(oph);
    if (!op) return;
    const int code = op_code(oph);
    const Run r{0, count, int32_t(b.handle)};
    if (count <= kAtomicMax && atomic_ok(&b, at)) {
        seg_lock_shared(w);
        atomic_run(at, r, b.size, in, old, op, code,
                   code != kNoOp && code != kReplace && integer_type(r.basic));
        seg_unlock_shared(w);
        return;
    }
    seg_lock(w);
    if (old) core::pack(b, at, count, old);
    if (code != kNoOp) locked_run(at, r, &b, in, op, oph);
    seg_unlock(w);
}

void acc_apply(Window* w, char* addr, const std::vector<Run>& runs, const char* in, MPI_Op oph,
               char* old) {
    if (runs.size() == 1) {
        if (const core::Datatype* b = core::datatype_lookup(runs[0].basic))
            acc_one(w, addr + runs[0].off, *b, runs[0].count, in, oph, old);
        return;
    }
    const core::Op* op = core::op_lookup(oph);
    if (!op) return;
    const int code = op_code(oph);
    int64_t elems = 0;
    bool small = true;
    for (const Run& r : runs) {
        const core::Datatype* b = core::datatype_lookup(r.basic);
        if (!b || !atomic_ok(b, addr + r.off)) small = false;
        elems += r.count;
    }
    if (small && elems <= kAtomicMax) {
        seg_lock_shared(w);
        for (const Run& r : runs) {
            const int64_t size = core::datatype_lookup(r.basic)->size;
            atomic_run(addr + r.off, r, size, in, old, op, code,
                       code != kNoOp && code != kReplace && integer_type(r.basic));
            if (in) in += r.count * size;
            if (old) old += r.count * size;
        }
        seg_unlock_shared(w);
        return;
    }
    seg_lock(w);
    for (const Run& r : runs) {
        const core::Datatype* b = core::datatype_lookup(r.basic);
        if (!b) continue;
        char* at = addr + r.off;
        const int64_t n = r.count * b->size;
        if (old) core::pack(*b, at, r.count, old);
        if (code != kNoOp) locked_run(at, r, b, in, op, oph);
        if (in) in += n;
        if (old) old += n;
    }
    seg_unlock(w);
}

void cas_apply(Window* w, char* addr, int32_t basic, const char* val, const char* cmp,
               char* old) {
    if (const core::Datatype* b = core::datatype_lookup(basic))
        cas_apply(w, addr, *b, val, cmp, old);
}

void cas_apply(Window* w, char* addr, const core::Datatype& dt, const char* val, const char* cmp,
               char* old) {
    const core::Datatype* b = &dt;
    const int64_t s = b->size;
    if (atomic_ok(b, addr)) {
        seg_lock_shared(w);
        // compare_exchange leaves the value it found in `expected`, equal or not.
        auto cas = [&](auto zero) {
            using U = decltype(zero);
            U expected, desired;
            std::memcpy(&expected, cmp, sizeof(U));
            std::memcpy(&desired, val, sizeof(U));
            std::atomic_ref<U>(*reinterpret_cast<U*>(addr))
                .compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
            std::memcpy(old, &expected, sizeof(U));
        };
        switch (s) {
        case 1: cas(uint8_t{}); break;
        case 2: cas(uint16_t{}); break;
        case 4: cas(uint32_t{}); break;
        default: cas(uint64_t{}); break;
        }
        seg_unlock_shared(w);
        return;
    }
    seg_lock(w);
    core::pack(*b, addr, 1, old);
    if (std::memcmp(old, cmp, size_t(s)) == 0) core::unpack(*b, val, s, addr);
    seg_unlock(w);
}

}  // namespace wanmpi::rma
