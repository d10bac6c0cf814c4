// Reduction algorithms: reduce, allreduce, reduce_scatter(_block), scan, exscan.
//
// Operand order: Bld::reduce(in, inout) computes inout = in (op) inout, MPI's order, so the
// left operand must always hold the lower ranks' data. Algorithms valid for non-commutative ops
// keep that invariant exactly (swapping which buffer accumulates instead of copying); the others
// are marked commutative-only in the table and never chosen for such ops.
//
// Copies avoided: the first partial result is formed by receiving a peer's data straight into
// the accumulator and reducing the (const) user input into it, instead of first copying the
// input into the accumulator.
#include <algorithm>
#include <utility>
#include <vector>

#include "coll/algos.hpp"

namespace wanmpi::coll {

// ---- reduce ------------------------------------------------------------------------------------
void reduce_binomial(Bld& b, const void* in, void* out, int64_t count, const Ty& t, int root,
                     bool commutative) {
    const int n = b.n, r = b.rank;
    const int troot = commutative ? root : 0;  // tree root
    const int rr = (r - troot + n) % n;
    auto actual = [&](int rel) { return (rel + troot) % n; };
    const int low = rr ? (rr & -rr) : pof2_ceil(n);
    SmallVec<int> kids;
    for (int mask = 1; mask < low; mask <<= 1) {
        if (rr + mask >= n) break;
        kids.push_back(actual(rr + mask));
    }
    const bool result_here = rr == 0;           // this rank computes the full result
    const bool final_here = r == root && result_here;  // ... and it is the root
    const void* acc = in;                       // my partial so far
    if (kids.empty()) {
        // leaf (or n == 1: the copy to `out` below)
    } else if (commutative) {
        void* A = final_here ? out : b.tmp_typed(t, count);
        SmallVec<void*> bufs;
        bool first_direct = A != in;  // receive the first child into A, reduce `in` into it
        for (size_t k = 0; k < kids.size(); ++k) {
            void* dst = (k == 0 && first_direct) ? A : b.tmp_typed(t, count);
            bufs.push_back(dst);
            b.recv(kids[k], dst, count, t.h);
        }
        b.next();
        if (first_direct) b.reduce(in, A, count, t.h);
        for (size_t k = first_direct ? 1 : 0; k < kids.size(); ++k)
            b.reduce(bufs[k], A, count, t.h);
        acc = A;
    } else {
        // Rank order: in (op) c1 (op) c2 ...: child k covers ranks [r+2^k, r+2^(k+1)). The
        // running result moves into each child's buffer: X_k = X_{k-1} (op) C_k.
        SmallVec<void*> bufs;
        for (size_t k = 0; k < kids.size(); ++k) {
            bool last = k + 1 == kids.size();
            void* dst = (last && final_here && out != in) ? out : b.tmp_typed(t, count);
            bufs.push_back(dst);
            b.recv(kids[k], dst, count, t.h);
        }
        b.next();
        const void* x = in;
        for (void* c : bufs) {
            b.reduce(x, c, count, t.h);
            x = c;
        }
        acc = x;
    }
    if (!result_here) {
        b.send(actual(rr - low), acc, count, t.h);
        b.next();
    } else if (final_here) {
        if (acc != out) b.copy(acc, count, t.h, out, count, t.h);
    }
    if (troot != root) {  // non-commutative, root != 0: rank 0 hands the result over
        if (r == 0) {
            b.send(root, acc, count, t.h);
            b.next();
        } else if (r == root) {
            b.recv(0, out, count, t.h);
            b.next();
        }
    }
}

namespace {
// Block partition of `count` elements into k blocks (first count%k get one more).
void split(int64_t count, int k, SmallVec<int64_t>& cnt, SmallVec<int64_t>& disp) {
    cnt.assign(size_t(k), count / k);
    for (int i = 0; i < count % k; ++i) cnt[size_t(i)]++;
    disp.assign(size_t(k) + 1, 0);
    for (int i = 0; i < k; ++i) disp[size_t(i) + 1] = disp[size_t(i)] + cnt[size_t(i)];
}

// Recursive-halving reduce-scatter over the power-of-two group (MPICH's scheme): ranks below
// 2*rem fold pairwise first (the even one sends all its input to the odd one and drops out).
// Afterwards new rank i (i < rem: old rank 2i+1, else i+rem) holds block i of the reduction,
// blocks given by disp[0..pof2]. W is the full-length accumulator; `in` the rank's input
// (== W when W already holds it). Returns the new rank, -1 for ranks that dropped out.
// Commutative ops only (partners' operands are combined in whatever order they meet).
int rs_halving(Bld& b, const void* in, void* W, int64_t count, const Ty& t,
               const SmallVec<int64_t>& disp, int pof2) {
    const int r = b.rank, rem = b.n - pof2;
    bool w_valid = in == W;  // W holds my own (partial) data
    void* T = nullptr;
    int newrank;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            b.send(r + 1, in, count, t.h);
            b.next();
            return -1;
        }
        if (w_valid) {
            T = b.tmp_typed(t, count);
            b.recv(r - 1, T, count, t.h);
            b.next();
            b.reduce(T, W, count, t.h);
        } else {
            b.recv(r - 1, W, count, t.h);
            b.next();
            b.reduce(in, W, count, t.h);
            w_valid = true;
        }
        newrank = r / 2;
    } else {
        newrank = r - rem;
    }
    int send_idx = 0, recv_idx = 0, last_idx = pof2;
    for (int mask = pof2 >> 1; mask > 0; mask >>= 1) {
        int newdst = newrank ^ mask;
        int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
        int s0, s1, r0, r1;
        if (newrank < newdst) {
            send_idx = recv_idx + mask;
            s0 = send_idx, s1 = last_idx, r0 = recv_idx, r1 = send_idx;
        } else {
            recv_idx = send_idx + mask;
            s0 = send_idx, s1 = recv_idx, r0 = recv_idx, r1 = last_idx;
        }
        int64_t sa = disp[size_t(s0)], sn = disp[size_t(s1)] - sa;
        int64_t ra = disp[size_t(r0)], rn = disp[size_t(r1)] - ra;
        if (w_valid) {
            if (!T && rn) T = b.tmp_typed(t, count);
            if (rn) b.recv(dst, T, rn, t.h);
            if (sn) b.send(dst, at(W, sa, t), sn, t.h);
            b.next();
            b.reduce(T, at(W, ra, t), rn, t.h);
        } else {
            if (rn) b.recv(dst, at(W, ra, t), rn, t.h);
            if (sn) b.send(dst, at(in, sa, t), sn, t.h);
            b.next();
            b.reduce(at(in, ra, t), at(W, ra, t), rn, t.h);
            w_valid = true;  // from here on only sub-ranges of [ra, ra+rn) are touched
        }
        send_idx = recv_idx;
        last_idx = recv_idx + mask;
    }
    if (!w_valid && W != in) b.copy(in, count, t.h, W, count, t.h);  // pof2 == 1
    return newrank;
}
}  // namespace

void reduce_rsg(Bld& b, const void* in, void* out, int64_t count, const Ty& t, int root) {
    const int n = b.n, r = b.rank, pof2 = pof2_floor(n), rem = n - pof2;
    SmallVec<int64_t> cnt, disp;
    split(count, pof2, cnt, disp);
    void* W = r == root ? out : b.tmp_typed(t, count);
    int newrank = rs_halving(b, in, W, count, t, disp, pof2);
    // Gather: new rank i sends block i straight to its place at the root.
    if (r == root) {
        for (int i = 0; i < pof2; ++i) {
            int src = i < rem ? 2 * i + 1 : i + rem;
            if (i == newrank || cnt[size_t(i)] == 0) continue;
            b.recv(src, at(out, disp[size_t(i)], t), cnt[size_t(i)], t.h);
        }
        b.next();
    } else if (newrank >= 0 && cnt[size_t(newrank)]) {
        b.send(root, at(W, disp[size_t(newrank)], t), cnt[size_t(newrank)], t.h);
        b.next();
    }
}

// ---- allreduce ---------------------------------------------------------------------------------
void allreduce_rdb(Bld& b, const void* in, void* out, int64_t count, const Ty& t,
                   bool commutative) {
    const int n = b.n, r = b.rank, pof2 = pof2_floor(n), rem = n - pof2;
    void* W = out;
    bool w_valid = in == out;
    if (!w_valid && !commutative) {
        b.copy(in, count, t.h, W, count, t.h);
        w_valid = true;
    }
    void* T = b.tmp_typed(t, count);
    int newrank;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            b.send(r + 1, w_valid ? W : in, count, t.h);
            b.next();
            b.recv(r + 1, out, count, t.h);
            b.next();
            return;
        }
        if (w_valid) {
            b.recv(r - 1, T, count, t.h);
            b.next();
            b.reduce(T, W, count, t.h);  // lower rank's data on the left
        } else {
            b.recv(r - 1, W, count, t.h);
            b.next();
            b.reduce(in, W, count, t.h);  // commutative
            w_valid = true;
        }
        newrank = r / 2;
    } else {
        newrank = r - rem;
    }
    for (int mask = 1; mask < pof2; mask <<= 1) {
        int newdst = newrank ^ mask;
        int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
        if (!w_valid) {  // commutative, first exchange: straight from the user's input
            b.recv(dst, W, count, t.h);
            b.send(dst, in, count, t.h);
            b.next();
            b.reduce(in, W, count, t.h);
            w_valid = true;
            continue;
        }
        b.recv(dst, T, count, t.h);
        b.send(dst, W, count, t.h);
        b.next();
        if (commutative || dst < r) {
            b.reduce(T, W, count, t.h);
        } else {
            b.reduce(W, T, count, t.h);  // mine is the lower half
            std::swap(W, T);
        }
    }
    if (!w_valid) b.copy(in, count, t.h, W, count, t.h);  // n == 1
    if (r < 2 * rem) {  // odd: give the result to the even partner that dropped out
        b.send(r - 1, W, count, t.h);
        b.next();
    }
    if (W != out) b.copy(W, count, t.h, out, count, t.h);
}

void allreduce_rsag(Bld& b, const void* in, void* out, int64_t count, const Ty& t) {
    const int n = b.n, r = b.rank, pof2 = pof2_floor(n), rem = n - pof2;
    SmallVec<int64_t> cnt, disp;
    split(count, pof2, cnt, disp);
    int newrank = rs_halving(b, in, out, count, t, disp, pof2);
    if (newrank >= 0) {
        for (int mask = 1; mask < pof2; mask <<= 1) {
            int newdst = newrank ^ mask;
            int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
            int g = newrank & ~(mask - 1), pg = g ^ mask;
            int64_t sa = disp[size_t(g)], sn = disp[size_t(g + mask)] - sa;
            int64_t ra = disp[size_t(pg)], rn = disp[size_t(pg + mask)] - ra;
            if (rn) b.recv(dst, at(out, ra, t), rn, t.h);
            if (sn) b.send(dst, at(out, sa, t), sn, t.h);
            b.next();
        }
    }
    if (r < 2 * rem) {
        if (r % 2) b.send(r - 1, out, count, t.h);
        else b.recv(r + 1, out, count, t.h);
        b.next();
    }
}

void allreduce_ring(Bld& b, const void* in, void* out, int64_t count, const Ty& t) {
    const int n = b.n, r = b.rank;
    if (n == 1) {
        if (in != out) b.copy(in, count, t.h, out, count, t.h);
        return;
    }
    SmallVec<int64_t> cnt, disp;
    split(count, n, cnt, disp);
    const bool in_place = in == out;
    void* T = in_place ? b.tmp_typed(t, cnt[0]) : nullptr;
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    // Reduce-scatter: block rb arrives once, is combined with my input, and is forwarded.
    for (int i = 0; i < n - 1; ++i) {
        size_t sb = size_t((r - i + n) % n), rb = size_t((r - i - 1 + n) % n);
        const void* src = (i == 0 && !in_place) ? at(in, disp[sb], t) : at(out, disp[sb], t);
        if (cnt[rb]) b.recv(left, in_place ? T : at(out, disp[rb], t), cnt[rb], t.h);
        if (cnt[sb]) b.send(right, src, cnt[sb], t.h);
        b.next();
        if (in_place) b.reduce(T, at(out, disp[rb], t), cnt[rb], t.h);
        else b.reduce(at(in, disp[rb], t), at(out, disp[rb], t), cnt[rb], t.h);
    }
    // Allgather: I own block r+1.
    for (int i = 0; i < n - 1; ++i) {
        size_t sb = size_t((r + 1 - i + n) % n), rb = size_t((r - i + n) % n);
        if (cnt[rb]) b.recv(left, at(out, disp[rb], t), cnt[rb], t.h);
        if (cnt[sb]) b.send(right, at(out, disp[sb], t), cnt[sb], t.h);
        b.next();
    }
}

void allreduce_reduce_bcast(Bld& b, const void* in, void* out, int64_t count, const Ty& t,
                            bool commutative) {
    reduce_binomial(b, in, out, count, t, 0, commutative);
    b.next();
    bcast_binomial(b, out, count, t, 0);
}

// ---- reduce_scatter ----------------------------------------------------------------------------
void reduce_scatter_halving(Bld& b, const void* in, void* out, const int64_t* rcounts,
                            const Ty& t) {
    const int n = b.n, r = b.rank, pof2 = pof2_floor(n), rem = n - pof2;
    SmallVec<int64_t> odisp(size_t(n) + 1, 0);
    for (int i = 0; i < n; ++i) odisp[size_t(i) + 1] = odisp[size_t(i)] + rcounts[i];
    const int64_t total = odisp[size_t(n)];
    // New rank i stands for old ranks 2i, 2i+1 (i < rem) or i+rem: its block is their union.
    SmallVec<int64_t> disp(size_t(pof2) + 1, 0);
    for (int i = 0; i < pof2; ++i)
        disp[size_t(i) + 1] = odisp[size_t(i < rem ? 2 * i + 2 : i + rem + 1)];
    void* W = b.tmp_typed(t, total);
    int newrank = rs_halving(b, in, W, total, t, disp, pof2);
    if (newrank < 0) {  // even rank that dropped out: the odd partner sends my block
        if (rcounts[r]) b.recv(r + 1, out, rcounts[r], t.h);
        b.next();
        return;
    }
    if (r < 2 * rem && rcounts[r - 1])
        b.send(r - 1, at(W, odisp[size_t(r - 1)], t), rcounts[r - 1], t.h);
    b.copy(at(W, odisp[size_t(r)], t), rcounts[r], t.h, out, rcounts[r], t.h);
    b.next();
}

void reduce_scatter_pairwise(Bld& b, const void* in, void* out, const int64_t* rcounts,
                             const Ty& t) {
    const int n = b.n, r = b.rank;
    SmallVec<int64_t> disp(size_t(n) + 1, 0);
    for (int i = 0; i < n; ++i) disp[size_t(i) + 1] = disp[size_t(i)] + rcounts[i];
    const int64_t mine = rcounts[r];
    const bool in_place = in == out;
    void* acc = in_place ? b.tmp_typed(t, mine) : out;
    void* T = n > 2 || in_place ? b.tmp_typed(t, mine) : nullptr;
    bool acc_valid = false;
    for (int i = 1; i < n; ++i) {
        int to = (r + i) % n, from = (r - i + n) % n;
        bool direct = !acc_valid && !in_place;
        if (mine) b.recv(from, direct ? acc : T, mine, t.h);
        if (rcounts[to]) b.send(to, at(in, disp[size_t(to)], t), rcounts[to], t.h);
        b.next();
        if (direct) b.reduce(at(in, disp[size_t(r)], t), acc, mine, t.h);
        else if (!acc_valid) {  // in place: acc = my input block (op) received
            b.copy(at(in, disp[size_t(r)], t), mine, t.h, acc, mine, t.h);
            b.reduce(T, acc, mine, t.h);
        } else {
            b.reduce(T, acc, mine, t.h);
        }
        acc_valid = true;
    }
    if (!acc_valid) b.copy(at(in, disp[size_t(r)], t), mine, t.h, out, mine, t.h);  // n == 1
    else if (acc != out) b.copy(acc, mine, t.h, out, mine, t.h);
}

void reduce_scatter_reduce_scatterv(Bld& b, const void* in, void* out, const int64_t* rcounts,
                                    const Ty& t, bool commutative) {
    const int n = b.n, r = b.rank;
    SmallVec<int64_t> disp(size_t(n) + 1, 0);
    for (int i = 0; i < n; ++i) disp[size_t(i) + 1] = disp[size_t(i)] + rcounts[i];
    const int64_t total = disp[size_t(n)];
    void* W = r == 0 ? b.tmp_typed(t, total) : nullptr;
    reduce_binomial(b, in, W, total, t, 0, commutative);
    b.next();
    if (r == 0) {
        for (int i = 1; i < n; ++i)
            if (rcounts[i]) b.send(i, at(W, disp[size_t(i)], t), rcounts[i], t.h);
        b.copy(W, rcounts[0], t.h, out, rcounts[0], t.h);
    } else if (rcounts[r]) {
        b.recv(0, out, rcounts[r], t.h);
    }
    b.next();
}

// ---- scan / exscan -----------------------------------------------------------------------------
void scan_rdb(Bld& b, const void* in, void* out, int64_t count, const Ty& t, bool commutative) {
    const int n = b.n, r = b.rank;
    void* P = b.tmp_typed(t, count);  // partial over my hypercube group
    void* T = b.tmp_typed(t, count);
    b.copy(in, count, t.h, P, count, t.h);
    if (in != out) b.copy(in, count, t.h, out, count, t.h);
    for (int mask = 1; mask < n; mask <<= 1) {
        int dst = r ^ mask;
        if (dst >= n) continue;
        b.recv(dst, T, count, t.h);
        b.send(dst, P, count, t.h);
        b.next();
        if (dst < r) {
            b.reduce(T, P, count, t.h);
            b.reduce(T, out, count, t.h);
        } else if (commutative) {
            b.reduce(T, P, count, t.h);
        } else {
            b.reduce(P, T, count, t.h);
            std::swap(P, T);
        }
    }
}

void scan_linear(Bld& b, const void* in, void* out, int64_t count, const Ty& t) {
    const int n = b.n, r = b.rank;
    if (in != out) b.copy(in, count, t.h, out, count, t.h);
    if (r > 0) {
        void* T = b.tmp_typed(t, count);
        b.recv(r - 1, T, count, t.h);
        b.next();
        b.reduce(T, out, count, t.h);
    }
    if (r < n - 1) {
        b.send(r + 1, out, count, t.h);
        b.next();
    }
}

void exscan_rdb(Bld& b, const void* in, void* out, int64_t count, const Ty& t,
                bool commutative) {
    const int n = b.n, r = b.rank;
    void* P = b.tmp_typed(t, count);
    void* T = b.tmp_typed(t, count);
    b.copy(in, count, t.h, P, count, t.h);  // before `out` (maybe == in) is overwritten
    bool out_valid = false;
    for (int mask = 1; mask < n; mask <<= 1) {
        int dst = r ^ mask;
        if (dst >= n) continue;
        if (dst < r && !out_valid) {
            b.recv(dst, out, count, t.h);
            b.send(dst, P, count, t.h);
            b.next();
            b.reduce(out, P, count, t.h);
            out_valid = true;
            continue;
        }
        b.recv(dst, T, count, t.h);
        b.send(dst, P, count, t.h);
        b.next();
        if (dst < r) {
            b.reduce(T, P, count, t.h);
            b.reduce(T, out, count, t.h);
        } else if (commutative) {
            b.reduce(T, P, count, t.h);
        } else {
            b.reduce(P, T, count, t.h);
            std::swap(P, T);
        }
    }
}

void exscan_linear(Bld& b, const void* in, void* out, int64_t count, const Ty& t) {
    const int n = b.n, r = b.rank;
    if (n == 1) return;
    if (r == 0) {
        b.send(1, in, count, t.h);
        b.next();
        return;
    }
    void* T = nullptr;
    if (r < n - 1) {
        T = b.tmp_typed(t, count);
        b.copy(in, count, t.h, T, count, t.h);  // before `out` (maybe == in) is overwritten
    }
    b.recv(r - 1, out, count, t.h);
    b.next();
    if (r < n - 1) {
        b.reduce(out, T, count, t.h);
        b.send(r + 1, T, count, t.h);
        b.next();
    }
}

}  // namespace wanmpi::coll
