// The flat (single-cluster) collective algorithms, as schedule builders. Each appends the rounds
// of one algorithm for the calling rank to a schedule through `Bld` (communicator, tag, op), with
// explicit buffers, so algorithms compose: reduce + bcast, reduce + scatterv, and later the
// hierarchical (IMPI) modules that run them on sub-communicators.
//
// Conventions: counts are elements of the given datatype; `in == out` means MPI_IN_PLACE (the
// API layer resolved it); all ranks of the communicator call the same builder with arguments
// that agree where MPI says they must. Which algorithm runs when, and their restrictions, is in
// ONE table: kAlgos in table.cpp (and docs/collectives.md).
// Threading: under the API lock.
#pragma once

#include <cstdint>
#include <vector>
#include <mpi.h>

#include "coll/sched.hpp"

namespace wanmpi::coll {

// A vector with inline room for N elements: the per-call bookkeeping of the algorithms (block
// counts, peer lists) without a malloc for the communicator sizes that matter for latency.
// Trivially copyable element types only; not copyable itself.
template <class T, size_t N = 16>
class SmallVec {
public:
    SmallVec() = default;
    explicit SmallVec(size_t n, const T& v = T()) { assign(n, v); }
    SmallVec(const SmallVec&) = delete;
    SmallVec& operator=(const SmallVec&) = delete;
    void assign(size_t n, const T& v) {
        reserve(n);
        n_ = n;
        for (size_t i = 0; i < n; ++i) p_[i] = v;
    }
    void resize(size_t n) {
        reserve(n);
        n_ = n;
    }
    void push_back(const T& v) {
        if (n_ == cap_) reserve(cap_ * 2);
        p_[n_++] = v;
    }
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    T* data() { return p_; }
    const T* data() const { return p_; }
    T* begin() { return p_; }
    T* end() { return p_ + n_; }
    const T* begin() const { return p_; }
    const T* end() const { return p_ + n_; }

private:
    void reserve(size_t n) {
        if (n <= cap_) return;
        std::vector<T> h(n);
        for (size_t i = 0; i < n_; ++i) h[i] = p_[i];
        heap_.swap(h);
        p_ = heap_.data();
        cap_ = n;
    }
    T buf_[N];
    std::vector<T> heap_;
    T* p_ = buf_;
    size_t n_ = 0, cap_ = N;
};

inline int pof2_floor(int n) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}
inline int pof2_ceil(int n) {
    int p = 1;
    while (p < n) p *= 2;
    return p;
}
inline bool is_pof2(int n) { return n > 0 && (n & (n - 1)) == 0; }
inline char* at(const void* base, int64_t elems, const Ty& t) {
    return const_cast<char*>(static_cast<const char*>(base)) + elems * t.extent;
}

// ---- barrier ----
void barrier_dissemination(Bld& b);

// ---- bcast ----
void bcast_binomial(Bld& b, void* buf, int64_t count, const Ty& t, int root);
// van de Geijn: binomial scatter of n chunks, then allgather of the chunks (ring, or recursive
// doubling when `rdb` and n is a power of two).
void bcast_scatter_allgather(Bld& b, void* buf, int64_t count, const Ty& t, int root, bool rdb);
// Segmented chain root -> root+1 -> ...: each rank forwards segment k while receiving k+1.
void bcast_pipeline(Bld& b, void* buf, int64_t count, const Ty& t, int root, int64_t seg_bytes);

// ---- gather / scatter (sbuf == MPI_IN_PLACE at the root: its block is already in rbuf;
//      rbuf == MPI_IN_PLACE at the root of scatter likewise) ----
void gather_linear(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                   int64_t rcount, const Ty& rt, int root);
void gather_binomial(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                     int64_t rcount, const Ty& rt, int root);
void gatherv_linear(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    const int* rcounts, const int* rdispls, const Ty& rt, int root);
void scatter_linear(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    int64_t rcount, const Ty& rt, int root);
void scatter_binomial(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                      int64_t rcount, const Ty& rt, int root);
void scatterv_linear(Bld& b, const void* sbuf, const int* scounts, const int* sdispls,
                     const Ty& st, void* rbuf, int64_t rcount, const Ty& rt, int root);

// ---- allgather (sbuf == MPI_IN_PLACE: own block already in rbuf) ----
void allgather_ring(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    int64_t rcount, const Ty& rt);
void allgather_rdb(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                   int64_t rcount, const Ty& rt);  // power-of-two n
void allgather_bruck(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                     int64_t rcount, const Ty& rt);
void allgatherv_ring(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                     const int* rcounts, const int* rdispls, const Ty& rt);
void allgatherv_rdb(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    const int* rcounts, const int* rdispls, const Ty& rt);  // power-of-two n

// ---- alltoall family: one block per peer ----
struct Blk {
    const void* p;
    int64_t count;
    MPI_Datatype dt;
};
// Post every receive and send at once (ordered so that peers pair up), plus the self copy.
void exchange_linear(Bld& b, const Blk* send, const Blk* recv);
// n-1 rounds, one partner per round (rank XOR i for power-of-two n, else +i / -i).
void exchange_pairwise(Bld& b, const Blk* send, const Blk* recv);
// Bruck's log(n) algorithm for equal blocks of `blk` bytes, through packed temporaries.
void alltoall_bruck(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                    int64_t rcount, const Ty& rt);

// ---- reductions (Bld::op set; `in == out` = MPI_IN_PLACE) ----
// Binomial tree. Commutative: rooted at `root`. Otherwise rooted at rank 0 with operands
// combined in rank order, and the result sent on to `root`.
void reduce_binomial(Bld& b, const void* in, void* out, int64_t count, const Ty& t, int root,
                     bool commutative);
// Rabenseifner: recursive-halving reduce-scatter, then the blocks to the root (commutative).
void reduce_rsg(Bld& b, const void* in, void* out, int64_t count, const Ty& t, int root);
// Recursive doubling; exact rank order for non-commutative ops.
void allreduce_rdb(Bld& b, const void* in, void* out, int64_t count, const Ty& t,
                   bool commutative);
// Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather (commutative).
void allreduce_rsag(Bld& b, const void* in, void* out, int64_t count, const Ty& t);
// Ring reduce-scatter + ring allgather (commutative).
void allreduce_ring(Bld& b, const void* in, void* out, int64_t count, const Ty& t);
void allreduce_reduce_bcast(Bld& b, const void* in, void* out, int64_t count, const Ty& t,
                            bool commutative);
// Reduce_scatter with per-rank counts (block variant: all equal). `in` holds sum(rcounts)
// elements; `out` receives rcounts[rank] (in == out: MPI_IN_PLACE).
void reduce_scatter_halving(Bld& b, const void* in, void* out, const int64_t* rcounts,
                            const Ty& t);  // commutative
void reduce_scatter_pairwise(Bld& b, const void* in, void* out, const int64_t* rcounts,
                             const Ty& t);  // commutative
void reduce_scatter_reduce_scatterv(Bld& b, const void* in, void* out, const int64_t* rcounts,
                                    const Ty& t, bool commutative);
void scan_rdb(Bld& b, const void* in, void* out, int64_t count, const Ty& t, bool commutative);
void scan_linear(Bld& b, const void* in, void* out, int64_t count, const Ty& t);
void exscan_rdb(Bld& b, const void* in, void* out, int64_t count, const Ty& t, bool commutative);
void exscan_linear(Bld& b, const void* in, void* out, int64_t count, const Ty& t);

// ---- direct (one-hop) algorithms for small communicators: alg_direct.cpp ----
void barrier_linear(Bld& b);
void bcast_linear(Bld& b, void* buf, int64_t count, const Ty& t, int root);
void allgather_linear(Bld& b, const void* sbuf, int64_t scount, const Ty& st, void* rbuf,
                      int64_t rcount, const Ty& rt);
void reduce_linear(Bld& b, const void* in, void* out, int64_t count, const Ty& t, int root);
// Everyone's whole vector to everyone, then a local reduction in rank order.
void allreduce_linear(Bld& b, const void* in, void* out, int64_t count, const Ty& t);
// Direct reduce-scatter (block p to rank p) + direct allgather: two rounds, any op.
void allreduce_direct(Bld& b, const void* in, void* out, int64_t count, const Ty& t);
void reduce_scatter_direct(Bld& b, const void* in, void* out, const int64_t* rcounts,
                           const Ty& t);
void scan_direct(Bld& b, const void* in, void* out, int64_t count, const Ty& t, bool exclusive);

}  // namespace wanmpi::coll
