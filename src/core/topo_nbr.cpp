// Neighbor collectives (MPI_Neighbor_* and MPI_Ineighbor_*): one receive per in-neighbor and one
// send per out-neighbor, all posted at once in the communicator's collective context, then
// waited for together; the nonblocking forms run the same schedule as a request.
//
// Matching between two neighbors that appear several times in each other's lists:
//   - Cartesian: block 2d goes to the negative neighbor of dimension d, which receives it as
//     coming from its positive neighbor (block 2d+1 there), and the other way round. With a
//     periodic dimension of size 1 or 2 both neighbors are the same process, so the tag says
//     which block a message is: receive block k uses step k, send block k uses step k^1.
//   - Graphs and distributed graphs: the k-th edge from i to j pairs with the k-th, which FIFO
//     matching on one tag gives (MPI_Dist_graph_create lists edges in the same order at both
//     ends, topo.cpp).
// Every call takes the next Comm::nbr_seq for its tags: MPI's collective ordering makes the
// sequence the same on every member.
#include <vector>

#include "bindings/impl.hpp"
#include "core/comm_task.hpp"
#include "core/datatype.hpp"
#include "core/errors.hpp"
#include "core/info.hpp"
#include "core/persist.hpp"
#include "core/topo.hpp"

namespace wanmpi::core {
namespace {

struct NbrOp {
    ReqKind kind;
    char* buf;
    int64_t count;
    MPI_Datatype dt;
    int peer;
    int tag;
};

Task nbr_task(Comm* c, std::vector<NbrOp> ops) {
    std::vector<Request*> reqs;
    for (const NbrOp& o : ops) {
        int rc = post_typed(o.kind, o.buf, o.count, o.dt, o.peer, o.tag, c, reqs);
        if (rc != MPI_SUCCESS) co_return rc;
    }
    co_return co_await WaitReqs{reqs};
}

// The neighbors and the tags of one neighbor collective on c.
struct Plan {
    Comm* c = nullptr;
    std::vector<int> in, out;
    bool cart = false;
    uint32_t seq = 0;
    int recv_tag(size_t k) const { return mgmt_tag(TagKind::neighbor, seq, cart ? int(k) : 0); }
    int send_tag(size_t k) const {
        return mgmt_tag(TagKind::neighbor, seq, cart ? int(k ^ 1) : 0);
    }
    std::vector<NbrOp> ops;
    void recv(size_t k, void* buf, int64_t count, MPI_Datatype dt) {
        ops.push_back(NbrOp{ReqKind::recv, static_cast<char*>(buf), count, dt, in[k],
                            recv_tag(k)});
    }
    void send(size_t k, const void* buf, int64_t count, MPI_Datatype dt) {
        ops.push_back(NbrOp{ReqKind::send, static_cast<char*>(const_cast<void*>(buf)), count, dt,
                            out[k], send_tag(k)});
    }
};

// Looks up the communicator and its neighbors; raises and returns non-zero on error.
int plan_start(MPI_Comm comm, Plan& p, const char* fname) {
    Comm* c = comm_lookup(comm);
    if (!c)
        return raise(nullptr, make_error(MPI_ERR_COMM, "%s: invalid communicator 0x%x", fname,
                                         unsigned(comm)));
    if (!c->topo)
        return raise(c, make_error(MPI_ERR_TOPOLOGY, "%s: the communicator has no topology",
                                   fname));
    p.c = c;
    topo_neighbors(*c, p.in, p.out);
    p.cart = c->topo->kind == MPI_CART;
    p.seq = c->nbr_seq++;
    return MPI_SUCCESS;
}

// Extent of a usable datatype, or raises (returns false).
bool type_extent(Comm* c, MPI_Datatype dt, int64_t* ext, int* rc) {
    const Datatype* d = datatype_lookup(dt);
    if (!d) {
        *rc = raise(c, datatype_error(dt));
        return false;
    }
    *ext = d->extent;
    return true;
}

bool check_count(Comm* c, int64_t n, const char* what, int* rc) {
    if (n >= 0) return true;
    *rc = raise(c, make_error(MPI_ERR_COUNT, "negative %s %lld", what, (long long)n));
    return false;
}

bool check_array(Comm* c, size_t n, const void* a, const char* what, int* rc) {
    if (n == 0 || a) return true;
    *rc = raise(c, make_error(MPI_ERR_ARG, "null %s array", what));
    return false;
}

// Persistent neighbor collectives keep the plan's operations (their tags were taken at init,
// see persist.hpp) and run them as a new task at every MPI_Start.
class PersistentNbr final : public PersistentOp {
public:
    // The datatypes stay alive for every start, even if the user frees them after init.
    PersistentNbr(Comm* c, std::vector<NbrOp> ops) : c_(c), ops_(std::move(ops)) {
        for (const NbrOp& o : ops_)
            if (const Datatype* d = datatype_lookup(o.dt)) datatype_retain(d);
    }
    ~PersistentNbr() override {
        for (const NbrOp& o : ops_)
            if (const Datatype* d = datatype_lookup(o.dt)) datatype_release(d);
    }
    int start(Request** inner) override { return job_request(nbr_task(c_, ops_), c_, inner); }

private:
    Comm* c_;  // held by the persistent request
    std::vector<NbrOp> ops_;
};

int run(Plan& p, MPI_Request* request, bool persistent) {
    if (persistent) {
        int rc = persistent_new(p.c, std::make_unique<PersistentNbr>(p.c, std::move(p.ops)),
                                request);
        return rc == MPI_SUCCESS ? rc : raise(p.c, rc);
    }
    if (!request) return raise(p.c, job_run_blocking(nbr_task(p.c, std::move(p.ops))));
    Request* r = nullptr;
    int rc = job_request(nbr_task(p.c, std::move(p.ops)), p.c, &r);
    if (rc != MPI_SUCCESS) return raise(p.c, rc);
    *request = request_handle(r);
    return MPI_SUCCESS;
}

int nbr_allgather(const void* sendbuf, int64_t sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int64_t recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request,
                  const char* fname, bool persistent = false) {
    Plan p;
    if (int rc = plan_start(comm, p, fname)) return rc;
    int rc;
    int64_t sext, rext;
    if (!type_extent(p.c, sendtype, &sext, &rc) || !type_extent(p.c, recvtype, &rext, &rc) ||
        !check_count(p.c, sendcount, "sendcount", &rc) ||
        !check_count(p.c, recvcount, "recvcount", &rc))
        return rc;
    for (size_t k = 0; k < p.in.size(); ++k)
        p.recv(k, static_cast<char*>(recvbuf) + int64_t(k) * recvcount * rext, recvcount,
               recvtype);
    for (size_t k = 0; k < p.out.size(); ++k) p.send(k, sendbuf, sendcount, sendtype);
    return run(p, request, persistent);
}

template <class CountT, class DispT>
int nbr_allgatherv(const void* sendbuf, int64_t sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const CountT recvcounts[], const DispT displs[], MPI_Datatype recvtype,
                   MPI_Comm comm, MPI_Request* request, const char* fname,
                   bool persistent = false) {
    Plan p;
    if (int rc = plan_start(comm, p, fname)) return rc;
    int rc;
    int64_t sext, rext;
    if (!type_extent(p.c, sendtype, &sext, &rc) || !type_extent(p.c, recvtype, &rext, &rc) ||
        !check_count(p.c, sendcount, "sendcount", &rc) ||
        !check_array(p.c, p.in.size(), recvcounts, "recvcounts", &rc) ||
        !check_array(p.c, p.in.size(), displs, "displs", &rc))
        return rc;
    for (size_t k = 0; k < p.in.size(); ++k) {
        if (!check_count(p.c, recvcounts[k], "recvcount", &rc)) return rc;
        p.recv(k, static_cast<char*>(recvbuf) + int64_t(displs[k]) * rext, recvcounts[k],
               recvtype);
    }
    for (size_t k = 0; k < p.out.size(); ++k) p.send(k, sendbuf, sendcount, sendtype);
    return run(p, request, persistent);
}

int nbr_alltoall(const void* sendbuf, int64_t sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int64_t recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request,
                 const char* fname, bool persistent = false) {
    Plan p;
    if (int rc = plan_start(comm, p, fname)) return rc;
    int rc;
    int64_t sext, rext;
    if (!type_extent(p.c, sendtype, &sext, &rc) || !type_extent(p.c, recvtype, &rext, &rc) ||
        !check_count(p.c, sendcount, "sendcount", &rc) ||
        !check_count(p.c, recvcount, "recvcount", &rc))
        return rc;
    for (size_t k = 0; k < p.in.size(); ++k)
        p.recv(k, static_cast<char*>(recvbuf) + int64_t(k) * recvcount * rext, recvcount,
               recvtype);
    for (size_t k = 0; k < p.out.size(); ++k)
        p.send(k, static_cast<const char*>(sendbuf) + int64_t(k) * sendcount * sext, sendcount,
               sendtype);
    return run(p, request, persistent);
}

template <class CountT, class DispT>
int nbr_alltoallv(const void* sendbuf, const CountT sendcounts[], const DispT sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const CountT recvcounts[],
                  const DispT rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                  MPI_Request* request, const char* fname, bool persistent = false) {
    Plan p;
    if (int rc = plan_start(comm, p, fname)) return rc;
    int rc;
    int64_t sext, rext;
    if (!type_extent(p.c, sendtype, &sext, &rc) || !type_extent(p.c, recvtype, &rext, &rc) ||
        !check_array(p.c, p.out.size(), sendcounts, "sendcounts", &rc) ||
        !check_array(p.c, p.out.size(), sdispls, "sdispls", &rc) ||
        !check_array(p.c, p.in.size(), recvcounts, "recvcounts", &rc) ||
        !check_array(p.c, p.in.size(), rdispls, "rdispls", &rc))
        return rc;
    for (size_t k = 0; k < p.in.size(); ++k) {
        if (!check_count(p.c, recvcounts[k], "recvcount", &rc)) return rc;
        p.recv(k, static_cast<char*>(recvbuf) + int64_t(rdispls[k]) * rext, recvcounts[k],
               recvtype);
    }
    for (size_t k = 0; k < p.out.size(); ++k) {
        if (!check_count(p.c, sendcounts[k], "sendcount", &rc)) return rc;
        p.send(k, static_cast<const char*>(sendbuf) + int64_t(sdispls[k]) * sext, sendcounts[k],
               sendtype);
    }
    return run(p, request, persistent);
}

template <class CountT>
int nbr_alltoallw(const void* sendbuf, const CountT sendcounts[], const MPI_Aint sdispls[],
                  const MPI_Datatype sendtypes[], void* recvbuf, const CountT recvcounts[],
                  const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                  MPI_Request* request, const char* fname, bool persistent = false) {
    Plan p;
    if (int rc = plan_start(comm, p, fname)) return rc;
    int rc;
    if (!check_array(p.c, p.out.size(), sendcounts, "sendcounts", &rc) ||
        !check_array(p.c, p.out.size(), sdispls, "sdispls", &rc) ||
        !check_array(p.c, p.out.size(), sendtypes, "sendtypes", &rc) ||
        !check_array(p.c, p.in.size(), recvcounts, "recvcounts", &rc) ||
        !check_array(p.c, p.in.size(), rdispls, "rdispls", &rc) ||
        !check_array(p.c, p.in.size(), recvtypes, "recvtypes", &rc))
        return rc;
    int64_t ext;
    for (size_t k = 0; k < p.in.size(); ++k) {
        if (!check_count(p.c, recvcounts[k], "recvcount", &rc) ||
            !type_extent(p.c, recvtypes[k], &ext, &rc))
            return rc;
        p.recv(k, static_cast<char*>(recvbuf) + rdispls[k], recvcounts[k], recvtypes[k]);
    }
    for (size_t k = 0; k < p.out.size(); ++k) {
        if (!check_count(p.c, sendcounts[k], "sendcount", &rc) ||
            !type_extent(p.c, sendtypes[k], &ext, &rc))
            return rc;
        p.send(k, static_cast<const char*>(sendbuf) + sdispls[k], sendcounts[k], sendtypes[k]);
    }
    return run(p, request, persistent);
}

}  // namespace
}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

int Neighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return core::nbr_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               nullptr, "MPI_Neighbor_allgather");
}
int Neighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm) {
    return core::nbr_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                comm, nullptr, "MPI_Neighbor_allgatherv");
}
int Neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return core::nbr_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              nullptr, "MPI_Neighbor_alltoall");
}
int Neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
    return core::nbr_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, nullptr, "MPI_Neighbor_alltoallv");
}
int Neighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                       const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
    return core::nbr_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                               rdispls, recvtypes, comm, nullptr, "MPI_Neighbor_alltoallw");
}

static int need_request(MPI_Comm comm, MPI_Request* request) {
    if (request) return MPI_SUCCESS;
    return raise(comm_lookup(comm), make_error(MPI_ERR_ARG, "null request pointer"));
}

int Ineighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               request, "MPI_Ineighbor_allgather");
}
int Ineighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         MPI_Comm comm, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                comm, request, "MPI_Ineighbor_allgatherv");
}
int Ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              request, "MPI_Ineighbor_alltoall");
}
int Ineighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, request, "MPI_Ineighbor_alltoallv");
}
int Ineighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                        const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                        MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                               rdispls, recvtypes, comm, request, "MPI_Ineighbor_alltoallw");
}

// ---- MPI 4.0: large counts (MPI_Count counts, MPI_Aint displacements) and persistent forms ----
static int need_info(MPI_Comm comm, MPI_Info info) {
    if (int rc = info_arg_check(info)) return raise(comm_lookup(comm), rc);
    return MPI_SUCCESS;
}

int Neighbor_allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return core::nbr_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               nullptr, "MPI_Neighbor_allgather_c");
}

int Neighbor_allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                          MPI_Datatype recvtype, MPI_Comm comm) {
    return core::nbr_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                comm, nullptr, "MPI_Neighbor_allgatherv_c");
}

int Neighbor_alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return core::nbr_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              nullptr, "MPI_Neighbor_alltoall_c");
}

int Neighbor_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm) {
    return core::nbr_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, nullptr, "MPI_Neighbor_alltoallv_c");
}

int Neighbor_alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void* recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         const MPI_Datatype recvtypes[], MPI_Comm comm) {
    return core::nbr_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                               rdispls, recvtypes, comm, nullptr, "MPI_Neighbor_alltoallw_c");
}

int Ineighbor_allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                          MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               request, "MPI_Ineighbor_allgather_c");
}

int Ineighbor_allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                comm, request, "MPI_Ineighbor_allgatherv_c");
}

int Ineighbor_alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              request, "MPI_Ineighbor_alltoall_c");
}

int Ineighbor_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                          const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                          const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, request, "MPI_Ineighbor_alltoallv_c");
}

int Ineighbor_alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[],
                          const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void* recvbuf,
                          const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                          const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    return core::nbr_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                               rdispls, recvtypes, comm, request, "MPI_Ineighbor_alltoallw_c");
}

int Neighbor_allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Info info, MPI_Request* request) {
    return Neighbor_allgather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                     comm, info, request);
}

int Neighbor_allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                             MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    if (int rc = need_info(comm, info)) return rc;
    return core::nbr_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                comm, request, "MPI_Neighbor_allgatherv_init", true);
}

int Neighbor_alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                           MPI_Request* request) {
    return Neighbor_alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, info, request);
}

int Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Info info, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    if (int rc = need_info(comm, info)) return rc;
    return core::nbr_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, request, "MPI_Neighbor_alltoallv_init", true);
}

int Neighbor_alltoallw_init(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Info info, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    if (int rc = need_info(comm, info)) return rc;
    return core::nbr_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                               rdispls, recvtypes, comm, request, "MPI_Neighbor_alltoallw_init",
                               true);
}

int Neighbor_allgather_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    if (int rc = need_info(comm, info)) return rc;
    return core::nbr_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               request, "MPI_Neighbor_allgather_init_c", true);
}

int Neighbor_allgatherv_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                               MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    if (int rc = need_info(comm, info)) return rc;
    return core::nbr_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                comm, request, "MPI_Neighbor_allgatherv_init_c", true);
}

int Neighbor_alltoall_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    if (int rc = need_info(comm, info)) return rc;
    return core::nbr_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              request, "MPI_Neighbor_alltoall_init_c", true);
}

int Neighbor_alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                              MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    if (int rc = need_info(comm, info)) return rc;
    return core::nbr_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, request, "MPI_Neighbor_alltoallv_init_c", true);
}

int Neighbor_alltoallw_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                              void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                              MPI_Request* request) {
    if (int rc = need_request(comm, request)) return rc;
    if (int rc = need_info(comm, info)) return rc;
    return core::nbr_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                               rdispls, recvtypes, comm, request, "MPI_Neighbor_alltoallw_init_c",
                               true);
}

}  // namespace wanmpi::impl
