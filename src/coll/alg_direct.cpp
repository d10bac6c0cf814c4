// Direct (one-hop) algorithms for small communicators: every rank talks to every other rank in
// one round, so a collective costs one wait instead of log2(n) or n-1 dependent ones. On a
// host with more ranks than cores each wait is a sleep and a wake-up, which costs far more
// than the extra messages (n-1 per rank); from a dozen ranks on, the message count wins and
// the logarithmic algorithms are chosen instead (see choose() in flat.cpp).
//
// Reductions evaluate x0 (op) x1 (op) ... in exact rank order, right to left into the output
// (out = x_{n-1}; out = x_r (op) out for r = n-2..0), so they are valid for non-commutative
// ops and every rank computes bitwise the same result.
#include <algorithm>
#include <vector>

#include "coll/algos.hpp"

namespace wanmpi::coll {

namespace {
// out = src[0] (op) src[1] (op) ... (op) src[k-1]. `out` may alias src[k-1] only.
void ordered_reduce(Bld& b, const SmallVec<const void*>& src, void* out, int64_t count,
                    const Ty& t) {
    const size_t k = src.size();
    if (src[k - 1] != out) b.copy(src[k - 1], count, t.h, out, count, t.h);
    for (size_t r = k - 1; r-- > 0;) b.reduce(src[r], out, count, t.h);
}

void split(int64_t count, int k, SmallVec<int64_t>& cnt, SmallVec<int64_t>& disp) {
    cnt.assign(size_t(k), count / k);
    for (int i = 0; i < count % k; ++i) cnt[size_t(i)]++;
    disp.assign(size_t(k) + 1, 0);
    for (int i = 0; i < k; ++i) disp[size_t(i) + 1] = disp[size_t(i)] + cnt[size_t(i)];
}
}  // namespace

void barrier_linear(Bld& b) {
    for (int i = 1; i < b.n; ++i) b.recv((b.rank - i + b.n) % b.n, nullptr, 0, MPI_BYTE);
    for (int i = 1; i < b.n; ++i) b.send((b.rank + i) % b.n, nullptr, 0, MPI_BYTE);
    b.next();
}

void bcast_linear(Bld& b, void* buf, int64_t count, const Ty& t, int root) {
    if (b.rank == root) {
        for (int i = 1; i < b.n; ++i) b.send((root + i) % b.n, buf, count, t.h);
    } else {
        b.recv(root, buf, count, t.h);
    }
    b.next();
}

void allgather_linear(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                      int64_t rcount, const Ty& rt) {
    const int n = b.n, r = b.rank;
    void* mine = at(rbuf, r * rcount, rt);
    if (sbuf != MPI_IN_PLACE) b.copy(sbuf, scount, st.h, mine, rcount, rt.h);
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        b.recv(p, at(rbuf, p * rcount, rt), rcount, rt.h);
    }
    // Send from the user's send buffer when there is one: no dependency on the copy above.
    for (int i = 1; i < n; ++i) {
        if (sbuf != MPI_IN_PLACE) b.send((r + i) % n, sbuf, scount, st.h);
        else b.send((r + i) % n, mine, rcount, rt.h);
    }
    b.next();
}

void reduce_linear(Bld& b, const void* in, void* out, int64_t count, const Ty& t, int root) {
    const int n = b.n, r = b.rank;
    if (r != root) {
        b.send(root, in, count, t.h);
        b.next();
        return;
    }
    SmallVec<const void*> src(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) {
        if (p == r) continue;
        void* buf = b.tmp_typed(t, count);
        src[size_t(p)] = buf;
        b.recv(p, buf, count, t.h);
    }
    if (in == out && r != n - 1) {  // my input would be overwritten first: keep a copy
        void* mine = b.tmp_typed(t, count);
        b.copy(in, count, t.h, mine, count, t.h);
        src[size_t(r)] = mine;
    } else {
        src[size_t(r)] = in;
    }
    b.next();
    ordered_reduce(b, src, out, count, t);
}

void allreduce_linear(Bld& b, const void* in, void* out, int64_t count, const Ty& t) {
    const int n = b.n, r = b.rank;
    SmallVec<const void*> src(static_cast<size_t>(n));
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        void* buf = b.tmp_typed(t, count);
        src[size_t(p)] = buf;
        b.recv(p, buf, count, t.h);
    }
    for (int i = 1; i < n; ++i) b.send((r + i) % n, in, count, t.h);
    if (in == out && r != n - 1) {
        void* mine = b.tmp_typed(t, count);
        b.copy(in, count, t.h, mine, count, t.h);
        src[size_t(r)] = mine;
    } else {
        src[size_t(r)] = in;
    }
    b.next();
    ordered_reduce(b, src, out, count, t);
}

void allreduce_direct(Bld& b, const void* in, void* out, int64_t count, const Ty& t) {
    const int n = b.n, r = b.rank;
    SmallVec<int64_t> cnt, disp;
    split(count, n, cnt, disp);
    const size_t me = size_t(r);
    const int64_t mc = cnt[me];
    // Reduce-scatter: block p of my input goes to rank p; I collect everyone's block r.
    SmallVec<const void*> src(static_cast<size_t>(n));
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        if (mc) {
            void* buf = b.tmp_typed(t, mc);
            src[size_t(p)] = buf;
            b.recv(p, buf, mc, t.h);
        }
    }
    for (int i = 1; i < n; ++i) {
        int p = (r + i) % n;
        if (cnt[size_t(p)]) b.send(p, at(in, disp[size_t(p)], t), cnt[size_t(p)], t.h);
    }
    void* myblk = at(out, disp[me], t);
    if (in == out && r != n - 1 && mc) {
        void* mine = b.tmp_typed(t, mc);
        b.copy(myblk, mc, t.h, mine, mc, t.h);
        src[me] = mine;
    } else {
        src[me] = at(in, disp[me], t);
    }
    b.next();
    if (mc) ordered_reduce(b, src, myblk, mc, t);
    // Allgather of the reduced blocks.
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        if (cnt[size_t(p)]) b.recv(p, at(out, disp[size_t(p)], t), cnt[size_t(p)], t.h);
    }
    for (int i = 1; i < n; ++i)
        if (mc) b.send((r + i) % n, myblk, mc, t.h);
    b.next();
}

void reduce_scatter_direct(Bld& b, const void* in, void* out, const int64_t* rcounts,
                           const Ty& t) {
    const int n = b.n, r = b.rank;
    SmallVec<int64_t> disp(size_t(n) + 1, 0);
    for (int i = 0; i < n; ++i) disp[size_t(i) + 1] = disp[size_t(i)] + rcounts[i];
    const int64_t mc = rcounts[r];
    SmallVec<const void*> src(static_cast<size_t>(n));
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        if (mc) {
            void* buf = b.tmp_typed(t, mc);
            src[size_t(p)] = buf;
            b.recv(p, buf, mc, t.h);
        }
    }
    for (int i = 1; i < n; ++i) {
        int p = (r + i) % n;
        if (rcounts[p]) b.send(p, at(in, disp[size_t(p)], t), rcounts[p], t.h);
    }
    if (in == out && mc) {  // my block of the input may overlap where the result goes
        void* mine = b.tmp_typed(t, mc);
        b.copy(at(in, disp[size_t(r)], t), mc, t.h, mine, mc, t.h);
        src[size_t(r)] = mine;
    } else {
        src[size_t(r)] = at(in, disp[size_t(r)], t);
    }
    b.next();
    if (mc) ordered_reduce(b, src, out, mc, t);
}

void scan_direct(Bld& b, const void* in, void* out, int64_t count, const Ty& t, bool exclusive) {
    const int n = b.n, r = b.rank;
    SmallVec<const void*> src;
    for (int p = 0; p < r; ++p) {
        void* buf = b.tmp_typed(t, count);
        src.push_back(buf);
        b.recv(p, buf, count, t.h);
    }
    for (int p = r + 1; p < n; ++p) b.send(p, in, count, t.h);
    if (!exclusive) src.push_back(in);  // last operand: may be `out` itself (in place)
    b.next();
    if (!src.empty()) ordered_reduce(b, src, out, count, t);
}

}  // namespace wanmpi::coll
