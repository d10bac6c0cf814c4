// Virtual topologies (topo.hpp): constructors, queries, MPI_Dims_create, MPI_Topo_test.
// Constructors are communicator constructors (comm_ops.hpp) plus a Topo; Cart_sub is a split.
#include "core/topo.hpp"

#include <algorithm>
#include <memory>

#include "bindings/impl.hpp"
#include "core/comm_ops.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

std::vector<int> cart_coords(const Topo& t, int rank) {
    std::vector<int> c(t.dims.size());
    for (size_t i = t.dims.size(); i-- > 0;) {
        c[i] = rank % t.dims[i];
        rank /= t.dims[i];
    }
    return c;
}

static int cart_rank_of(const Topo& t, const std::vector<int>& coords) {
    int r = 0;
    for (size_t i = 0; i < t.dims.size(); ++i) r = r * t.dims[i] + coords[i];
    return r;
}

// The rank `disp` steps along `dim` from `rank`, or MPI_PROC_NULL off a non-periodic edge.
static int cart_step(const Topo& t, int rank, int dim, int disp) {
    std::vector<int> c = cart_coords(t, rank);
    const int64_t n = t.dims[size_t(dim)];
    int64_t x = int64_t(c[size_t(dim)]) + disp;
    if (t.periods[size_t(dim)]) {
        x = ((x % n) + n) % n;
    } else if (x < 0 || x >= n) {
        return MPI_PROC_NULL;
    }
    c[size_t(dim)] = int(x);
    return cart_rank_of(t, c);
}

static void graph_neighbors_of(const Topo& t, int rank, std::vector<int>& out) {
    const int lo = rank == 0 ? 0 : t.index[size_t(rank - 1)];
    const int hi = t.index[size_t(rank)];
    out.assign(t.edges.begin() + lo, t.edges.begin() + hi);
}

void topo_neighbors(const Comm& c, std::vector<int>& in, std::vector<int>& out) {
    in.clear();
    out.clear();
    const Topo& t = *c.topo;
    switch (t.kind) {
    case MPI_CART:
        for (int d = 0; d < int(t.dims.size()); ++d) {
            in.push_back(cart_step(t, c.rank, d, -1));
            in.push_back(cart_step(t, c.rank, d, +1));
        }
        out = in;
        break;
    case MPI_GRAPH:
        graph_neighbors_of(t, c.rank, in);
        out = in;
        break;
    case MPI_DIST_GRAPH:
        in = t.sources;
        out = t.destinations;
        break;
    default:
        break;
    }
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;


#define CHECK_PTR(c, p, what)                                                                 \
    if (!(p)) return raise(c, make_error(MPI_ERR_ARG, "null pointer passed as " what))

#define NEED_INTRA(c, fname)                                                                   \
    if ((c)->inter)                                                                            \
    return raise(c, make_error(MPI_ERR_COMM, fname " needs an intracommunicator"))

// The communicator's topology if it is of `kind`, else raises MPI_ERR_TOPOLOGY.
#define GET_TOPO(t, c, K, fname)                                                               \
    if (!(c)->topo || (c)->topo->kind != (K))                                                  \
        return raise(c, make_error(MPI_ERR_TOPOLOGY, fname ": %s has no %s topology",          \
                                   (c)->name.empty() ? "the communicator" : (c)->name.c_str(), \
                                   (K) == MPI_CART ? "Cartesian"                               \
                                   : (K) == MPI_GRAPH ? "graph" : "distributed graph"));       \
    const Topo& t = *(c)->topo

// A communicator over the first `n` ranks of c with topology `t` (the others get
// MPI_COMM_NULL).
static int topo_create(Comm* c, int n, std::shared_ptr<Topo> t, MPI_Comm* newcomm) {
    std::vector<int> world(c->world.begin(), c->world.begin() + n);
    Comm* nc = nullptr;
    int rc = job_run_blocking(create_task(parent_of(c), c->rank < n, std::move(world), &nc));
    if (rc == MPI_SUCCESS && nc) nc->topo = std::move(t);
    return comm_finish(c, rc, nc, newcomm);
}

// Checks dims[0..ndims) > 0 and returns their product (-1 on error, *rc set).
static int64_t dims_product(Comm* c, int ndims, const int dims[], const char* fname, int* rc) {
    *rc = MPI_SUCCESS;
    if (ndims < 0) {
        *rc = raise(c, make_error(MPI_ERR_DIMS, "%s: negative ndims %d", fname, ndims));
        return -1;
    }
    if (ndims > 0 && !dims) {
        *rc = raise(c, make_error(MPI_ERR_ARG, "%s: null dims array", fname));
        return -1;
    }
    int64_t n = 1;
    for (int i = 0; i < ndims; ++i) {
        if (dims[i] <= 0) {
            *rc = raise(c, make_error(MPI_ERR_DIMS, "%s: dims[%d] = %d (must be > 0)", fname, i,
                                      dims[i]));
            return -1;
        }
        n *= dims[i];
        if (n > (int64_t(1) << 31)) n = int64_t(1) << 31;
    }
    return n;
}

// ---- Cartesian --------------------------------------------------------------------------------
int Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
                MPI_Comm* comm_cart) {
    (void)reorder;
    WANMPI_GET_COMM(c, comm_old);
    CHECK_PTR(c, comm_cart, "comm_cart");
    NEED_INTRA(c, "MPI_Cart_create");
    int rc;
    int64_t n = dims_product(c, ndims, dims, "MPI_Cart_create", &rc);
    if (n < 0) return rc;
    if (ndims > 0 && !periods) return raise(c, make_error(MPI_ERR_ARG, "null periods array"));
    if (n > c->size)
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Cart_create: the grid has %lld processes, "
                                                "the communicator only %d", (long long)n,
                                   c->size));
    auto t = std::make_shared<Topo>();
    t->kind = MPI_CART;
    t->dims.assign(dims, dims + ndims);
    t->periods.resize(size_t(ndims));
    for (int i = 0; i < ndims; ++i) t->periods[size_t(i)] = periods[i] ? 1 : 0;
    return topo_create(c, int(n), std::move(t), comm_cart);
}

int Cartdim_get(MPI_Comm comm, int* ndims) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, ndims, "ndims");
    GET_TOPO(t, c, MPI_CART, "MPI_Cartdim_get");
    *ndims = int(t.dims.size());
    return MPI_SUCCESS;
}

int Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
    WANMPI_GET_COMM(c, comm);
    GET_TOPO(t, c, MPI_CART, "MPI_Cart_get");
    const int nd = int(t.dims.size());
    if (maxdims < nd)
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Cart_get: maxdims %d < ndims %d", maxdims,
                                   nd));
    if (nd > 0 && (!dims || !periods || !coords))
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Cart_get: null array"));
    std::vector<int> co = cart_coords(t, c->rank);
    for (int i = 0; i < nd; ++i) {
        dims[i] = t.dims[size_t(i)];
        periods[i] = t.periods[size_t(i)];
        coords[i] = co[size_t(i)];
    }
    return MPI_SUCCESS;
}

int Cart_rank(MPI_Comm comm, const int coords[], int* rank) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, rank, "rank");
    GET_TOPO(t, c, MPI_CART, "MPI_Cart_rank");
    const int nd = int(t.dims.size());
    if (nd > 0 && !coords) return raise(c, make_error(MPI_ERR_ARG, "null coords array"));
    std::vector<int> co(static_cast<size_t>(nd));
    for (int i = 0; i < nd; ++i) {
        int64_t x = coords[i];
        const int64_t n = t.dims[size_t(i)];
        if (t.periods[size_t(i)]) {
            x = ((x % n) + n) % n;
        } else if (x < 0 || x >= n) {
            return raise(c, make_error(MPI_ERR_ARG, "MPI_Cart_rank: coords[%d] = %d is outside "
                                                    "the non-periodic dimension of size %d", i,
                                       coords[i], int(n)));
        }
        co[size_t(i)] = int(x);
    }
    *rank = cart_rank_of(t, co);
    return MPI_SUCCESS;
}

int Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) {
    WANMPI_GET_COMM(c, comm);
    GET_TOPO(t, c, MPI_CART, "MPI_Cart_coords");
    const int nd = int(t.dims.size());
    if (rank < 0 || rank >= c->size)
        return raise(c, make_error(MPI_ERR_RANK, "MPI_Cart_coords: invalid rank %d (size %d)",
                                   rank, c->size));
    if (maxdims < nd)
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Cart_coords: maxdims %d < ndims %d",
                                   maxdims, nd));
    if (nd > 0 && !coords) return raise(c, make_error(MPI_ERR_ARG, "null coords array"));
    std::vector<int> co = cart_coords(t, rank);
    std::copy(co.begin(), co.end(), coords);
    return MPI_SUCCESS;
}

int Cart_shift(MPI_Comm comm, int direction, int disp, int* rank_source, int* rank_dest) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, rank_source, "rank_source");
    CHECK_PTR(c, rank_dest, "rank_dest");
    GET_TOPO(t, c, MPI_CART, "MPI_Cart_shift");
    if (direction < 0 || direction >= int(t.dims.size()))
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Cart_shift: direction %d is not a "
                                                "dimension (ndims %d)", direction,
                                   int(t.dims.size())));
    *rank_source = cart_step(t, c->rank, direction, -disp);
    *rank_dest = cart_step(t, c->rank, direction, disp);
    return MPI_SUCCESS;
}

int Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, newcomm, "newcomm");
    GET_TOPO(t, c, MPI_CART, "MPI_Cart_sub");
    const int nd = int(t.dims.size());
    if (nd > 0 && !remain_dims) return raise(c, make_error(MPI_ERR_ARG, "null remain_dims"));
    std::vector<int> co = cart_coords(t, c->rank);
    auto sub = std::make_shared<Topo>();
    sub->kind = MPI_CART;
    int color = 0;
    for (int i = 0; i < nd; ++i) {
        if (remain_dims[i]) {
            sub->dims.push_back(t.dims[size_t(i)]);
            sub->periods.push_back(t.periods[size_t(i)]);
        } else {
            color = color * t.dims[size_t(i)] + co[size_t(i)];
        }
    }
    Comm* nc = nullptr;
    int rc = job_run_blocking(split_task(parent_of(c), color, c->rank, &nc));
    if (rc == MPI_SUCCESS && nc) nc->topo = std::move(sub);
    return comm_finish(c, rc, nc, newcomm);
}

int Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int* newrank) {
    (void)periods;
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, newrank, "newrank");
    NEED_INTRA(c, "MPI_Cart_map");
    int rc;
    int64_t n = dims_product(c, ndims, dims, "MPI_Cart_map", &rc);
    if (n < 0) return rc;
    if (n > c->size)
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Cart_map: the grid has %lld processes, the "
                                                "communicator only %d", (long long)n, c->size));
    *newrank = c->rank < n ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

// MPI_Dims_create: the free dimensions get the most balanced factorization of what the fixed
// ones leave, in non-increasing order. "Most balanced" is the smallest max - min; among equally
// balanced ones, the larger smallest factor, then the larger second smallest, and so on (the
// choice of MPICH's algorithm, after Traeff and Luebbe, EuroMPI'15; MPICH's test suite checks
// 75000 cases of it). Exhaustive search over non-increasing factor lists, started from a greedy
// solution so that the bound below prunes from the start: every factor must stay within the best
// spread of the largest.
namespace {
struct DimsSearch {
    std::vector<int64_t> cur, best;
    static bool better(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
        const int64_t sa = a.front() - a.back(), sb = b.front() - b.back();
        if (sa != sb) return sa < sb;
        for (size_t i = a.size(); i-- > 0;)
            if (a[i] != b[i]) return a[i] > b[i];
        return false;
    }
    // Split m into k factors, each <= maxf, in non-increasing order; divs: m's divisors, ascending.
    void run(int64_t m, int k, int64_t maxf, const std::vector<int64_t>& divs) {
        if (k == 1) {
            if (m <= maxf) {
                cur.push_back(m);
                if (better(cur, best)) best = cur;
                cur.pop_back();
            }
            return;
        }
        std::vector<int64_t> sub;
        for (auto it = divs.rbegin(); it != divs.rend(); ++it) {
            const int64_t f = *it;
            if (f > maxf) continue;
            int64_t p = 1;  // f^k must reach m, or the other factors would have to exceed f
            for (int i = 0; i < k && p < m; ++i) p *= f;
            if (p < m) break;
            const int64_t top = cur.empty() ? f : cur.front();
            const int64_t q = m / f;
            const int64_t lo = top - (best.front() - best.back());  // least useful factor
            if (f < lo) break;
            if (lo > 1) {
                int64_t p2 = 1;
                for (int i = 0; i < k - 1 && p2 <= q; ++i) p2 *= lo;
                if (p2 > q) continue;
            }
            sub.clear();
            for (int64_t d : divs) {
                if (d > f || d > q) break;
                if (d >= lo && q % d == 0) sub.push_back(d);
            }
            cur.push_back(f);
            run(q, k - 1, f, sub);
            cur.pop_back();
        }
    }
    void solve(int64_t m, int k) {
        // greedy start: the prime factors, largest first, each onto the smallest factor so far
        std::vector<int64_t> primes;
        int64_t x = m;
        for (int64_t p = 2; p * p <= x; ++p)
            while (x % p == 0) {
                primes.push_back(p);
                x /= p;
            }
        if (x > 1) primes.push_back(x);
        best.assign(size_t(k), 1);
        for (size_t i = primes.size(); i-- > 0;)
            *std::min_element(best.begin(), best.end()) *= primes[i];
        std::sort(best.rbegin(), best.rend());
        std::vector<int64_t> divs;
        for (int64_t d = 1; d * d <= m; ++d)
            if (m % d == 0) {
                divs.push_back(d);
                if (d != m / d) divs.push_back(m / d);
            }
        std::sort(divs.begin(), divs.end());
        run(m, k, m, divs);
    }
};
}  // namespace

int Dims_create(int nnodes, int ndims, int dims[]) {
    if (nnodes < 0)
        return raise(nullptr, make_error(MPI_ERR_ARG, "MPI_Dims_create: negative nnodes %d",
                                         nnodes));
    if (ndims < 0)
        return raise(nullptr, make_error(MPI_ERR_DIMS, "MPI_Dims_create: negative ndims %d",
                                         ndims));
    if (ndims > 0 && !dims)
        return raise(nullptr, make_error(MPI_ERR_ARG, "MPI_Dims_create: null dims array"));
    int64_t fixed = 1;
    int nfree = 0;
    for (int i = 0; i < ndims; ++i) {
        if (dims[i] < 0)
            return raise(nullptr, make_error(MPI_ERR_DIMS, "MPI_Dims_create: dims[%d] = %d is "
                                                           "negative", i, dims[i]));
        if (dims[i] == 0) ++nfree;
        else fixed *= dims[i];
    }
    if (nnodes == 0) {
        // Only possible with nothing to fill (a zero-size grid is not a grid).
        for (int i = 0; i < ndims; ++i)
            if (dims[i] == 0) dims[i] = 1;
        return MPI_SUCCESS;
    }
    if (fixed == 0 || nnodes % fixed != 0)
        return raise(nullptr, make_error(MPI_ERR_DIMS, "MPI_Dims_create: %d processes cannot be "
                                                       "spread over the fixed dimensions "
                                                       "(product %lld)", nnodes,
                                         (long long)fixed));
    const int64_t m = nnodes / fixed;
    if (nfree == 0) {
        if (m != 1)
            return raise(nullptr, make_error(MPI_ERR_DIMS, "MPI_Dims_create: the fixed dimensions "
                                                           "give %lld processes, not %d",
                                             (long long)fixed, nnodes));
        return MPI_SUCCESS;
    }
    DimsSearch s;
    s.solve(m, nfree);
    for (int i = 0, j = 0; i < ndims; ++i)
        if (dims[i] == 0) dims[i] = int(s.best[size_t(j++)]);
    return MPI_SUCCESS;
}

// ---- graphs -------------------------------------------------------------------------------------
static int check_graph(Comm* c, int nnodes, const int index[], const int edges[],
                       const char* fname) {
    if (nnodes < 0)
        return raise(c, make_error(MPI_ERR_ARG, "%s: negative nnodes %d", fname, nnodes));
    if (nnodes > c->size)
        return raise(c, make_error(MPI_ERR_ARG, "%s: the graph has %d nodes, the communicator "
                                                "only %d", fname, nnodes, c->size));
    if (nnodes > 0 && !index) return raise(c, make_error(MPI_ERR_ARG, "%s: null index", fname));
    int prev = 0;
    for (int i = 0; i < nnodes; ++i) {
        if (index[i] < prev)
            return raise(c, make_error(MPI_ERR_ARG, "%s: index[%d] = %d decreases", fname, i,
                                       index[i]));
        prev = index[i];
    }
    if (prev > 0 && !edges) return raise(c, make_error(MPI_ERR_ARG, "%s: null edges", fname));
    for (int j = 0; j < prev; ++j)
        if (edges[j] < 0 || edges[j] >= nnodes)
            return raise(c, make_error(MPI_ERR_ARG, "%s: edges[%d] = %d is not a node (nnodes "
                                                    "%d)", fname, j, edges[j], nnodes));
    return MPI_SUCCESS;
}

int Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
                 int reorder, MPI_Comm* comm_graph) {
    (void)reorder;
    WANMPI_GET_COMM(c, comm_old);
    CHECK_PTR(c, comm_graph, "comm_graph");
    NEED_INTRA(c, "MPI_Graph_create");
    if (int rc = check_graph(c, nnodes, index, edges, "MPI_Graph_create")) return rc;
    auto t = std::make_shared<Topo>();
    t->kind = MPI_GRAPH;
    t->index.assign(index, index + nnodes);
    if (nnodes > 0) t->edges.assign(edges, edges + index[nnodes - 1]);
    return topo_create(c, nnodes, std::move(t), comm_graph);
}

int Graphdims_get(MPI_Comm comm, int* nnodes, int* nedges) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, nnodes, "nnodes");
    CHECK_PTR(c, nedges, "nedges");
    GET_TOPO(t, c, MPI_GRAPH, "MPI_Graphdims_get");
    *nnodes = int(t.index.size());
    *nedges = int(t.edges.size());
    return MPI_SUCCESS;
}

int Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]) {
    WANMPI_GET_COMM(c, comm);
    GET_TOPO(t, c, MPI_GRAPH, "MPI_Graph_get");
    if (maxindex < 0 || maxedges < 0)
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Graph_get: negative maxindex or maxedges"));
    const size_t ni = std::min(size_t(maxindex), t.index.size());
    const size_t ne = std::min(size_t(maxedges), t.edges.size());
    if ((ni && !index) || (ne && !edges))
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Graph_get: null array"));
    std::copy(t.index.begin(), t.index.begin() + long(ni), index);
    std::copy(t.edges.begin(), t.edges.begin() + long(ne), edges);
    return MPI_SUCCESS;
}

int Graph_neighbors_count(MPI_Comm comm, int rank, int* nneighbors) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, nneighbors, "nneighbors");
    GET_TOPO(t, c, MPI_GRAPH, "MPI_Graph_neighbors_count");
    if (rank < 0 || rank >= int(t.index.size()))
        return raise(c, make_error(MPI_ERR_RANK, "MPI_Graph_neighbors_count: invalid rank %d "
                                                 "(nnodes %d)", rank, int(t.index.size())));
    std::vector<int> nb;
    graph_neighbors_of(t, rank, nb);
    *nneighbors = int(nb.size());
    return MPI_SUCCESS;
}

int Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]) {
    WANMPI_GET_COMM(c, comm);
    GET_TOPO(t, c, MPI_GRAPH, "MPI_Graph_neighbors");
    if (rank < 0 || rank >= int(t.index.size()))
        return raise(c, make_error(MPI_ERR_RANK, "MPI_Graph_neighbors: invalid rank %d (nnodes "
                                                 "%d)", rank, int(t.index.size())));
    std::vector<int> nb;
    graph_neighbors_of(t, rank, nb);
    const size_t n = std::min(nb.size(), size_t(std::max(maxneighbors, 0)));
    if (n && !neighbors) return raise(c, make_error(MPI_ERR_ARG, "null neighbors array"));
    std::copy(nb.begin(), nb.begin() + long(n), neighbors);
    return MPI_SUCCESS;
}

int Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[], int* newrank) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, newrank, "newrank");
    NEED_INTRA(c, "MPI_Graph_map");
    if (int rc = check_graph(c, nnodes, index, edges, "MPI_Graph_map")) return rc;
    *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

// ---- distributed graphs -------------------------------------------------------------------------
static bool unweighted(const int* w) { return w == MPI_UNWEIGHTED; }

static int check_weights(Comm* c, int n, const int* w, const char* what) {
    if (unweighted(w) || n == 0) return MPI_SUCCESS;
    if (!w || w == MPI_WEIGHTS_EMPTY)
        return raise(c, make_error(MPI_ERR_ARG, "null %s array", what));
    for (int i = 0; i < n; ++i)
        if (w[i] < 0)
            return raise(c, make_error(MPI_ERR_ARG, "%s[%d] = %d is negative", what, i, w[i]));
    return MPI_SUCCESS;
}

static int check_ranks(Comm* c, int n, const int* r, const char* what) {
    if (n > 0 && !r) return raise(c, make_error(MPI_ERR_ARG, "null %s array", what));
    for (int i = 0; i < n; ++i)
        if (r[i] < 0 || r[i] >= c->size)
            return raise(c, make_error(MPI_ERR_RANK, "%s[%d] = %d is not a rank (size %d)", what,
                                       i, r[i], c->size));
    return MPI_SUCCESS;
}

int Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                               const int sourceweights[], int outdegree,
                               const int destinations[], const int destweights[], MPI_Info info,
                               int reorder, MPI_Comm* comm_dist_graph) {
    (void)reorder;
    WANMPI_GET_COMM(c, comm_old);
    CHECK_PTR(c, comm_dist_graph, "comm_dist_graph");
    NEED_INTRA(c, "MPI_Dist_graph_create_adjacent");
    if (indegree < 0 || outdegree < 0)
        return raise(c, make_error(MPI_ERR_ARG, "negative degree (in %d, out %d)", indegree,
                                   outdegree));
    if (int rc = check_ranks(c, indegree, sources, "sources")) return rc;
    if (int rc = check_ranks(c, outdegree, destinations, "destinations")) return rc;
    if (int rc = check_weights(c, indegree, sourceweights, "sourceweights")) return rc;
    if (int rc = check_weights(c, outdegree, destweights, "destweights")) return rc;
    auto t = std::make_shared<Topo>();
    t->kind = MPI_DIST_GRAPH;
    t->weighted = !unweighted(sourceweights) || !unweighted(destweights);
    t->sources.assign(sources, sources + indegree);
    t->destinations.assign(destinations, destinations + outdegree);
    if (!unweighted(sourceweights) && indegree > 0)
        t->sourceweights.assign(sourceweights, sourceweights + indegree);
    else
        t->sourceweights.assign(size_t(indegree), 1);
    if (!unweighted(destweights) && outdegree > 0)
        t->destweights.assign(destweights, destweights + outdegree);
    else
        t->destweights.assign(size_t(outdegree), 1);
    Comm* nc = nullptr;
    int rc = job_run_blocking(create_task(parent_of(c), true, c->world, &nc));
    if (rc == MPI_SUCCESS && nc) {
        nc->topo = std::move(t);
        nc->info = info_dup_or_null(info);
    }
    return comm_finish(c, rc, nc, comm_dist_graph);
}

// Every process sends each other process the edges it specified that touch it: records
// (0 = an out-edge of the receiver, 1 = an in-edge; the other end; the weight). The receiver
// appends them in the order of the specifying process's rank, then the order given, so the two
// ends of every edge list it at corresponding positions (which neighbor collectives need when
// a pair has several edges).
static Task dist_graph_task(Parent p, std::vector<std::vector<int64_t>> outgoing,
                            std::shared_ptr<Topo> t, Comm** out) {
    const int n = p.m.n, me = p.m.me;
    std::vector<int64_t> counts(size_t(n), 0), mycounts(size_t(n), 0);
    std::vector<std::vector<int64_t>> incoming(static_cast<size_t>(n));
    std::vector<Request*> reqs;
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; ++i)
        if (i != me)
            rc = post_recv(&counts[size_t(i)], 8, p.m.peer(i), p.m.tag + 50, p.m.via, reqs);
    for (int i = 0; i < n && rc == MPI_SUCCESS; ++i) {
        if (i == me) continue;
        mycounts[size_t(i)] = int64_t(outgoing[size_t(i)].size());
        rc = post_send(&mycounts[size_t(i)], 8, p.m.peer(i), p.m.tag + 50, p.m.via, reqs);
    }
    if (rc == MPI_SUCCESS) rc = co_await WaitReqs{reqs};
    for (int i = 0; i < n && rc == MPI_SUCCESS; ++i) {
        if (i == me || counts[size_t(i)] == 0) continue;
        incoming[size_t(i)].resize(size_t(counts[size_t(i)]));
        rc = post_recv(incoming[size_t(i)].data(), counts[size_t(i)] * 8, p.m.peer(i),
                       p.m.tag + 51, p.m.via, reqs);
    }
    for (int i = 0; i < n && rc == MPI_SUCCESS; ++i) {
        if (i == me || outgoing[size_t(i)].empty()) continue;
        rc = post_send(outgoing[size_t(i)].data(), int64_t(outgoing[size_t(i)].size()) * 8,
                       p.m.peer(i), p.m.tag + 51, p.m.via, reqs);
    }
    if (rc == MPI_SUCCESS) rc = co_await WaitReqs{reqs};
    if (rc != MPI_SUCCESS) co_return rc;
    incoming[size_t(me)] = std::move(outgoing[size_t(me)]);
    for (auto& v : incoming)
        for (size_t k = 0; k + 3 <= v.size(); k += 3) {
            if (v[k] == 0) {
                t->destinations.push_back(int(v[k + 1]));
                t->destweights.push_back(int(v[k + 2]));
            } else {
                t->sources.push_back(int(v[k + 1]));
                t->sourceweights.push_back(int(v[k + 2]));
            }
        }
    Comm* nc = nullptr;
    rc = co_await create_task(p, true, p.c->world, &nc);
    if (rc != MPI_SUCCESS) co_return rc;
    nc->topo = std::move(t);
    *out = nc;
    co_return MPI_SUCCESS;
}

int Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                      const int destinations[], const int weights[], MPI_Info info, int reorder,
                      MPI_Comm* comm_dist_graph) {
    (void)reorder;
    WANMPI_GET_COMM(c, comm_old);
    CHECK_PTR(c, comm_dist_graph, "comm_dist_graph");
    NEED_INTRA(c, "MPI_Dist_graph_create");
    if (n < 0) return raise(c, make_error(MPI_ERR_ARG, "negative n %d", n));
    if (int rc = check_ranks(c, n, sources, "sources")) return rc;
    if (n > 0 && !degrees) return raise(c, make_error(MPI_ERR_ARG, "null degrees array"));
    int64_t nedges = 0;
    for (int i = 0; i < n; ++i) {
        if (degrees[i] < 0)
            return raise(c, make_error(MPI_ERR_ARG, "degrees[%d] = %d is negative", i,
                                       degrees[i]));
        nedges += degrees[i];
    }
    if (nedges > 0x7fffffff) return raise(c, make_error(MPI_ERR_ARG, "too many edges"));
    if (int rc = check_ranks(c, int(nedges), destinations, "destinations")) return rc;
    if (int rc = check_weights(c, int(nedges), weights, "weights")) return rc;
    std::vector<std::vector<int64_t>> outgoing(size_t(c->size));
    for (int i = 0, e = 0; i < n; ++i)
        for (int j = 0; j < degrees[i]; ++j, ++e) {
            const int s = sources[i], d = destinations[e];
            const int64_t w = unweighted(weights) ? 1 : weights[e];
            auto& to_s = outgoing[size_t(s)];
            to_s.insert(to_s.end(), {0, d, w});
            auto& to_d = outgoing[size_t(d)];
            to_d.insert(to_d.end(), {1, s, w});
        }
    auto t = std::make_shared<Topo>();
    t->kind = MPI_DIST_GRAPH;
    t->weighted = !unweighted(weights);
    Comm* nc = nullptr;
    int rc = job_run_blocking(dist_graph_task(parent_of(c), std::move(outgoing), t, &nc));
    if (rc == MPI_SUCCESS && nc) nc->info = info_dup_or_null(info);
    return comm_finish(c, rc, nc, comm_dist_graph);
}

int Dist_graph_neighbors_count(MPI_Comm comm, int* indegree, int* outdegree, int* weighted) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, indegree, "indegree");
    CHECK_PTR(c, outdegree, "outdegree");
    CHECK_PTR(c, weighted, "weighted");
    GET_TOPO(t, c, MPI_DIST_GRAPH, "MPI_Dist_graph_neighbors_count");
    *indegree = int(t.sources.size());
    *outdegree = int(t.destinations.size());
    *weighted = t.weighted;
    return MPI_SUCCESS;
}

int Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                         int maxoutdegree, int destinations[], int destweights[]) {
    WANMPI_GET_COMM(c, comm);
    GET_TOPO(t, c, MPI_DIST_GRAPH, "MPI_Dist_graph_neighbors");
    if (maxindegree < int(t.sources.size()) || maxoutdegree < int(t.destinations.size()))
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Dist_graph_neighbors: arrays too small "
                                                "(in %d < %d or out %d < %d)", maxindegree,
                                   int(t.sources.size()), maxoutdegree,
                                   int(t.destinations.size())));
    const size_t ni = t.sources.size(), no = t.destinations.size();
    if ((ni && !sources) || (no && !destinations))
        return raise(c, make_error(MPI_ERR_ARG, "MPI_Dist_graph_neighbors: null array"));
    std::copy(t.sources.begin(), t.sources.end(), sources);
    std::copy(t.destinations.begin(), t.destinations.end(), destinations);
    if (ni && sourceweights && !unweighted(sourceweights) && sourceweights != MPI_WEIGHTS_EMPTY)
        std::copy(t.sourceweights.begin(), t.sourceweights.end(), sourceweights);
    if (no && destweights && !unweighted(destweights) && destweights != MPI_WEIGHTS_EMPTY)
        std::copy(t.destweights.begin(), t.destweights.end(), destweights);
    return MPI_SUCCESS;
}

int Topo_test(MPI_Comm comm, int* status) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, status, "status");
    *status = c->topo ? c->topo->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
