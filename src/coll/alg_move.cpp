// Data-movement algorithms: barrier, bcast, gather(v), scatter(v), allgather(v), alltoall(v,w).
// Contiguous user data is sent and received in place; packed temporaries appear only where an
// algorithm stores other ranks' data in an order the user's buffer cannot hold (tree interior
// nodes, Bruck), or when a byte-range split needs a contiguous image of a derived type.
#include <algorithm>
#include <vector>

#include "coll/algos.hpp"

namespace wanmpi::coll {

// ---- barrier -----------------------------------------------------------------------------------
void barrier_dissemination(Bld& b) {
    const int n = b.n, r = b.rank;
    for (int k = 1; k < n; k <<= 1) {
        b.recv((r - k + n) % n, nullptr, 0, MPI_BYTE);
        b.send((r + k) % n, nullptr, 0, MPI_BYTE);
        b.next();
    }
}

// ---- bcast -------------------------------------------------------------------------------------
void bcast_binomial(Bld& b, void* buf, int64_t count, const Ty& t, int root) {
    const int n = b.n, r = b.rank, rr = (r - root + n) % n;
    int mask = 1;
    while (mask < n) {
        if (rr & mask) {
            b.recv((r - mask + n) % n, buf, count, t.h);
            b.next();
            break;
        }
        mask <<= 1;
    }
    // Largest subtree first: it has the longest way to go.
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (rr + mask < n) b.send((r + mask) % n, buf, count, t.h);
    b.next();
}

namespace {
// A contiguous byte image of a typed buffer: the buffer itself when the type is contiguous,
// else a temporary (filled from the buffer at the root by a copy step).
char* byte_image(Bld& b, void* buf, int64_t count, const Ty& t, bool fill) {
    if (t.contig) return static_cast<char*>(buf);
    char* p = b.tmp(count * t.size);
    if (fill) b.copy(buf, count, t.h, p, count * t.size, MPI_BYTE);
    return p;
}
}  // namespace

void bcast_scatter_allgather(Bld& b, void* buf, int64_t count, const Ty& t, int root, bool rdb) {
    const int n = b.n, r = b.rank, rr = (r - root + n) % n;
    const int64_t nb = count * t.size;
    char* data = byte_image(b, buf, count, t, r == root);
    const int64_t chunk = (nb + n - 1) / n;
    auto lo = [&](int64_t rel) { return std::min<int64_t>(rel * chunk, nb); };
    auto actual = [&](int rel) { return (rel + root) % n; };

    // Scatter: rank rr receives the chunks of its subtree [rr, rr + lowbit).
    const int low = rr ? (rr & -rr) : pof2_ceil(n);
    if (rr) {
        int64_t a = lo(rr), e = lo(std::min(rr + low, n));
        if (e > a) b.recv(actual(rr - low), data + a, e - a, MPI_BYTE);
        b.next();
    }
    for (int mask = low >> 1; mask > 0; mask >>= 1) {
        int c = rr + mask;
        if (c >= n) continue;
        int64_t a = lo(c), e = lo(std::min(c + mask, n));
        if (e > a) b.send(actual(c), data + a, e - a, MPI_BYTE);
    }
    b.next();

    // Allgather of chunk k (relative rank k's), all sizes known to everyone: zero-size
    // transfers are skipped on both sides.
    if (rdb && is_pof2(n)) {
        for (int mask = 1; mask < n; mask <<= 1) {
            int g = rr & ~(mask - 1), pg = g ^ mask;
            int64_t sa = lo(g), se = lo(g + mask), ra = lo(pg), re = lo(pg + mask);
            int p = actual(rr ^ mask);
            if (re > ra) b.recv(p, data + ra, re - ra, MPI_BYTE);
            if (se > sa) b.send(p, data + sa, se - sa, MPI_BYTE);
            b.next();
        }
    } else {
        const int right = actual((rr + 1) % n), left = actual((rr - 1 + n) % n);
        for (int i = 0; i < n - 1; ++i) {
            int sb = (rr - i + n) % n, rb = (rr - i - 1 + n) % n;
            if (lo(rb + 1) > lo(rb)) b.recv(left, data + lo(rb), lo(rb + 1) - lo(rb), MPI_BYTE);
            if (lo(sb + 1) > lo(sb)) b.send(right, data + lo(sb), lo(sb + 1) - lo(sb), MPI_BYTE);
            b.next();
        }
    }
    if (!t.contig && r != root) b.copy(data, nb, MPI_BYTE, buf, count, t.h);
}

void bcast_pipeline(Bld& b, void* buf, int64_t count, const Ty& t, int root, int64_t seg) {
    const int n = b.n, r = b.rank, rr = (r - root + n) % n;
    const int64_t nb = count * t.size;
    if (seg <= 0) seg = 1;
    char* data = byte_image(b, buf, count, t, r == root);
    const int64_t nseg = (nb + seg - 1) / seg;
    auto len = [&](int64_t k) { return std::min(seg, nb - k * seg); };
    const int prev = (r - 1 + n) % n, next = (r + 1) % n;
    const bool last = rr == n - 1;
    if (rr == 0) {
        for (int64_t k = 0; k < nseg; ++k) b.send(next, data + k * seg, len(k), MPI_BYTE);
        b.next();
    } else {
        // Round k: receive segment k while forwarding segment k-1.
        for (int64_t k = 0; k <= nseg; ++k) {
            if (k < nseg) b.recv(prev, data + k * seg, len(k), MPI_BYTE);
            if (k > 0 && !last) b.send(next, data + (k - 1) * seg, len(k - 1), MPI_BYTE);
            b.next();
        }
        if (!t.contig) b.copy(data, nb, MPI_BYTE, buf, count, t.h);
    }
}

// ---- gather / scatter --------------------------------------------------------------------------
void gather_linear(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                   int64_t rcount, const Ty& rt, int root) {
    const int n = b.n, r = b.rank;
    if (r != root) {
        b.send(root, sbuf, scount, st.h);
        b.next();
        return;
    }
    if (sbuf != MPI_IN_PLACE) b.copy(sbuf, scount, st.h, at(rbuf, r * rcount, rt), rcount, rt.h);
    for (int i = 1; i < n; ++i) {
        int p = (r + i) % n;
        b.recv(p, at(rbuf, p * rcount, rt), rcount, rt.h);
    }
    b.next();
}

void gatherv_linear(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    const int* rcounts, const int* rdispls, const Ty& rt, int root) {
    const int n = b.n, r = b.rank;
    if (r != root) {
        b.send(root, sbuf, scount, st.h);
        b.next();
        return;
    }
    if (sbuf != MPI_IN_PLACE)
        b.copy(sbuf, scount, st.h, at(rbuf, rdispls[r], rt), rcounts[r], rt.h);
    for (int i = 1; i < n; ++i) {
        int p = (r + i) % n;
        b.recv(p, at(rbuf, rdispls[p], rt), rcounts[p], rt.h);
    }
    b.next();
}

void gather_binomial(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                     int64_t rcount, const Ty& rt, int root) {
    const int n = b.n, r = b.rank, rr = (r - root + n) % n;
    auto actual = [&](int rel) { return (rel + root) % n; };
    const int low = rr ? (rr & -rr) : pof2_ceil(n);
    const int sub = std::min(rr + low, n) - rr;  // ranks in my subtree
    if (rr != 0) {
        const int parent = actual(rr - low);
        if (sub == 1) {  // leaf: straight from the user's buffer
            b.send(parent, sbuf, scount, st.h);
            b.next();
            return;
        }
        const int64_t blk = scount * st.size;
        char* tmp = b.tmp(sub * blk);
        b.copy(sbuf, scount, st.h, tmp, blk, MPI_BYTE);
        for (int mask = 1; mask < low; mask <<= 1) {
            int c = rr + mask;
            if (c >= n) break;
            int cnt = std::min(c + mask, n) - c;
            b.recv(actual(c), tmp + mask * blk, cnt * blk, MPI_BYTE);
        }
        b.next();
        b.send(parent, tmp, sub * blk, MPI_BYTE);
        b.next();
        return;
    }
    // Root: each child's subtree is a run of relative ranks; received straight into rbuf
    // unless the run wraps around the end of the rank range.
    const int64_t blk = rcount * rt.size;
    if (sbuf != MPI_IN_PLACE) b.copy(sbuf, scount, st.h, at(rbuf, r * rcount, rt), rcount, rt.h);
    struct Wrap {
        char* tmp;
        int first, cnt;
    };
    SmallVec<Wrap> wraps;
    for (int mask = 1; mask < low; mask <<= 1) {
        int c = rr + mask;
        if (c >= n) break;
        int cnt = std::min(c + mask, n) - c, a = actual(c);
        if (a + cnt <= n) {
            b.recv(a, at(rbuf, int64_t(a) * rcount, rt), cnt * rcount, rt.h);
        } else {
            char* tmp = b.tmp(cnt * blk);
            b.recv(a, tmp, cnt * blk, MPI_BYTE);
            wraps.push_back({tmp, a, cnt});
        }
    }
    b.next();
    for (auto& w : wraps) {
        int k1 = n - w.first;
        b.copy(w.tmp, k1 * blk, MPI_BYTE, at(rbuf, int64_t(w.first) * rcount, rt), k1 * rcount,
               rt.h);
        b.copy(w.tmp + k1 * blk, (w.cnt - k1) * blk, MPI_BYTE, rbuf, (w.cnt - k1) * rcount, rt.h);
    }
}

void scatter_linear(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    int64_t rcount, const Ty& rt, int root) {
    const int n = b.n, r = b.rank;
    if (r != root) {
        b.recv(root, rbuf, rcount, rt.h);
        b.next();
        return;
    }
    for (int i = 1; i < n; ++i) {
        int p = (r + i) % n;
        b.send(p, at(sbuf, p * scount, st), scount, st.h);
    }
    if (rbuf != MPI_IN_PLACE) b.copy(at(sbuf, r * scount, st), scount, st.h, rbuf, rcount, rt.h);
    b.next();
}

void scatterv_linear(Bld& b, const void* sbuf, const int* scounts, const int* sdispls,
                     const Ty& st, void* rbuf, int64_t rcount, const Ty& rt, int root) {
    const int n = b.n, r = b.rank;
    if (r != root) {
        b.recv(root, rbuf, rcount, rt.h);
        b.next();
        return;
    }
    for (int i = 1; i < n; ++i) {
        int p = (r + i) % n;
        b.send(p, at(sbuf, sdispls[p], st), scounts[p], st.h);
    }
    if (rbuf != MPI_IN_PLACE)
        b.copy(at(sbuf, sdispls[r], st), scounts[r], st.h, rbuf, rcount, rt.h);
    b.next();
}

void scatter_binomial(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                      int64_t rcount, const Ty& rt, int root) {
    const int n = b.n, r = b.rank, rr = (r - root + n) % n;
    auto actual = [&](int rel) { return (rel + root) % n; };
    const int low = rr ? (rr & -rr) : pof2_ceil(n);
    const int sub = std::min(rr + low, n) - rr;
    if (rr == 0) {
        const int64_t blk = scount * st.size;
        for (int mask = low >> 1; mask > 0; mask >>= 1) {
            int c = rr + mask;
            if (c >= n) continue;
            int cnt = std::min(c + mask, n) - c, a = actual(c);
            if (a + cnt <= n) {
                b.send(a, at(sbuf, int64_t(a) * scount, st), cnt * scount, st.h);
            } else {
                int k1 = n - a;
                char* tmp = b.tmp(cnt * blk);
                b.copy(at(sbuf, int64_t(a) * scount, st), k1 * scount, st.h, tmp, k1 * blk,
                       MPI_BYTE);
                b.copy(sbuf, (cnt - k1) * scount, st.h, tmp + k1 * blk, (cnt - k1) * blk,
                       MPI_BYTE);
                b.send(a, tmp, cnt * blk, MPI_BYTE);
            }
        }
        if (rbuf != MPI_IN_PLACE)
            b.copy(at(sbuf, r * scount, st), scount, st.h, rbuf, rcount, rt.h);
        b.next();
        return;
    }
    const int parent = actual(rr - low);
    if (sub == 1) {
        b.recv(parent, rbuf, rcount, rt.h);
        b.next();
        return;
    }
    const int64_t blk = rcount * rt.size;
    char* tmp = b.tmp(sub * blk);
    b.recv(parent, tmp, sub * blk, MPI_BYTE);
    b.next();
    for (int mask = low >> 1; mask > 0; mask >>= 1) {
        int c = rr + mask;
        if (c >= n) continue;
        int cnt = std::min(c + mask, n) - c;
        b.send(actual(c), tmp + mask * blk, cnt * blk, MPI_BYTE);
    }
    b.copy(tmp, blk, MPI_BYTE, rbuf, rcount, rt.h);
    b.next();
}

// ---- allgather ---------------------------------------------------------------------------------
void allgather_ring(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    int64_t rcount, const Ty& rt) {
    const int n = b.n, r = b.rank;
    if (sbuf != MPI_IN_PLACE) b.copy(sbuf, scount, st.h, at(rbuf, r * rcount, rt), rcount, rt.h);
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    for (int i = 0; i < n - 1; ++i) {
        int sb = (r - i + n) % n, rb = (r - i - 1 + n) % n;
        b.recv(left, at(rbuf, rb * rcount, rt), rcount, rt.h);
        b.send(right, at(rbuf, sb * rcount, rt), rcount, rt.h);
        b.next();
    }
    b.next();
}

void allgather_rdb(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                   int64_t rcount, const Ty& rt) {
    const int n = b.n, r = b.rank;
    if (sbuf != MPI_IN_PLACE) b.copy(sbuf, scount, st.h, at(rbuf, r * rcount, rt), rcount, rt.h);
    for (int mask = 1; mask < n; mask <<= 1) {
        int g = r & ~(mask - 1), pg = g ^ mask, p = r ^ mask;
        b.recv(p, at(rbuf, pg * rcount, rt), mask * rcount, rt.h);
        b.send(p, at(rbuf, g * rcount, rt), mask * rcount, rt.h);
        b.next();
    }
    b.next();
}

void allgather_bruck(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                     int64_t rcount, const Ty& rt) {
    const int n = b.n, r = b.rank;
    const int64_t blk = rcount * rt.size;
    char* tmp = b.tmp(n * blk);
    if (sbuf != MPI_IN_PLACE) b.copy(sbuf, scount, st.h, tmp, blk, MPI_BYTE);
    else b.copy(at(rbuf, r * rcount, rt), rcount, rt.h, tmp, blk, MPI_BYTE);
    for (int pof = 1; pof < n; pof <<= 1) {
        int cnt = std::min(pof, n - pof);
        b.recv((r + pof) % n, tmp + pof * blk, cnt * blk, MPI_BYTE);
        b.send((r - pof + n) % n, tmp, cnt * blk, MPI_BYTE);
        b.next();
    }
    // tmp[i] is rank (r+i)%n's block: two runs.
    b.copy(tmp, (n - r) * blk, MPI_BYTE, at(rbuf, r * rcount, rt), (n - r) * rcount, rt.h);
    if (r) b.copy(tmp + (n - r) * blk, r * blk, MPI_BYTE, rbuf, r * rcount, rt.h);
}

void allgatherv_ring(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                     const int* rcounts, const int* rdispls, const Ty& rt) {
    const int n = b.n, r = b.rank;
    if (sbuf != MPI_IN_PLACE)
        b.copy(sbuf, scount, st.h, at(rbuf, rdispls[r], rt), rcounts[r], rt.h);
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    for (int i = 0; i < n - 1; ++i) {
        int sb = (r - i + n) % n, rb = (r - i - 1 + n) % n;
        if (rcounts[rb]) b.recv(left, at(rbuf, rdispls[rb], rt), rcounts[rb], rt.h);
        if (rcounts[sb]) b.send(right, at(rbuf, rdispls[sb], rt), rcounts[sb], rt.h);
        b.next();
    }
    b.next();
}

void allgatherv_rdb(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    const int* rcounts, const int* rdispls, const Ty& rt) {
    const int n = b.n, r = b.rank;
    // Packed image in rank order: block i at off[i].
    SmallVec<int64_t> off(size_t(n) + 1, 0);
    for (int i = 0; i < n; ++i) off[size_t(i) + 1] = off[size_t(i)] + rcounts[i] * rt.size;
    char* tmp = b.tmp(off[size_t(n)]);
    const int64_t mine = off[size_t(r) + 1] - off[size_t(r)];
    if (sbuf != MPI_IN_PLACE) b.copy(sbuf, scount, st.h, tmp + off[size_t(r)], mine, MPI_BYTE);
    else b.copy(at(rbuf, rdispls[r], rt), rcounts[r], rt.h, tmp + off[size_t(r)], mine, MPI_BYTE);
    for (int mask = 1; mask < n; mask <<= 1) {
        int g = r & ~(mask - 1), pg = g ^ mask, p = r ^ mask;
        int64_t sa = off[size_t(g)], se = off[size_t(g + mask)];
        int64_t ra = off[size_t(pg)], re = off[size_t(pg + mask)];
        if (re > ra) b.recv(p, tmp + ra, re - ra, MPI_BYTE);
        if (se > sa) b.send(p, tmp + sa, se - sa, MPI_BYTE);
        b.next();
    }
    for (int i = 0; i < n; ++i)
        if (i != r || sbuf != MPI_IN_PLACE)
            b.copy(tmp + off[size_t(i)], off[size_t(i) + 1] - off[size_t(i)], MPI_BYTE,
                   at(rbuf, rdispls[i], rt), rcounts[i], rt.h);
}

// ---- alltoall ----------------------------------------------------------------------------------
void exchange_linear(Bld& b, const Blk* send, const Blk* recv) {
    const int n = b.n, r = b.rank;
    b.copy(send[r].p, send[r].count, send[r].dt, const_cast<void*>(recv[r].p), recv[r].count,
           recv[r].dt);
    for (int i = 1; i < n; ++i) {
        int p = (r - i + n) % n;
        b.recv(p, const_cast<void*>(recv[p].p), recv[p].count, recv[p].dt);
    }
    for (int i = 1; i < n; ++i) {
        int p = (r + i) % n;
        b.send(p, send[p].p, send[p].count, send[p].dt);
    }
    b.next();
}

void exchange_pairwise(Bld& b, const Blk* send, const Blk* recv) {
    const int n = b.n, r = b.rank;
    const bool pof2 = is_pof2(n);
    b.copy(send[r].p, send[r].count, send[r].dt, const_cast<void*>(recv[r].p), recv[r].count,
           recv[r].dt);
    for (int i = 1; i < n; ++i) {
        int to = pof2 ? (r ^ i) : (r + i) % n, from = pof2 ? (r ^ i) : (r - i + n) % n;
        b.recv(from, const_cast<void*>(recv[from].p), recv[from].count, recv[from].dt);
        b.send(to, send[to].p, send[to].count, send[to].dt);
        b.next();
    }
    b.next();
}

void alltoall_bruck(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    int64_t rcount, const Ty& rt) {
    const int n = b.n, r = b.rank;
    const int64_t blk = rcount * rt.size;
    // MPI_IN_PLACE: the send data is rbuf, described by the receive type.
    const void* src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    const Ty& sty = sbuf == MPI_IN_PLACE ? rt : st;
    const int64_t sc = sbuf == MPI_IN_PLACE ? rcount : scount;
    // A[i] = the block for rank (r+i)%n.
    char* A = b.tmp(n * blk);
    b.copy(at(src, r * sc, sty), (n - r) * sc, sty.h, A, (n - r) * blk, MPI_BYTE);
    if (r) b.copy(src, r * sc, sty.h, A + (n - r) * blk, r * blk, MPI_BYTE);
    const int half = (n + 1) / 2;
    char* S = b.tmp(half * blk);
    char* R = b.tmp(half * blk);
    for (int pof = 1; pof < n; pof <<= 1) {
        // Blocks whose index has bit `pof` set come in runs of length pof.
        int64_t k = 0;
        for (int i = pof; i < n; i += 2 * pof) {
            int len = std::min(pof, n - i);
            b.copy(A + i * blk, len * blk, MPI_BYTE, S + k * blk, len * blk, MPI_BYTE);
            k += len;
        }
        b.recv((r - pof + n) % n, R, k * blk, MPI_BYTE);
        b.send((r + pof) % n, S, k * blk, MPI_BYTE);
        b.next();
        k = 0;
        for (int i = pof; i < n; i += 2 * pof) {
            int len = std::min(pof, n - i);
            b.copy(R + k * blk, len * blk, MPI_BYTE, A + i * blk, len * blk, MPI_BYTE);
            k += len;
        }
    }
    // A[i] now came from rank (r-i): it belongs at rbuf block (r-i)%n.
    for (int i = 0; i < n; ++i)
        b.copy(A + i * blk, blk, MPI_BYTE, at(rbuf, int64_t((r - i + n) % n) * rcount, rt), rcount,
               rt.h);
}

}  // namespace wanmpi::coll
