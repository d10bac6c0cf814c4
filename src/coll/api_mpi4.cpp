// MPI 4.0 collectives (functions/coll_mpi4.txt): the large-count forms
// (MPI_X_c, MPI_IX_c), which take MPI_Count counts and MPI_Aint displacements,
// and the persistent forms (MPI_X_init, MPI_X_init_c), which check their
// arguments and build the collective's schedule once, then run it at every
// MPI_Start (core/persist.hpp, coll/sched.hpp start_persistent). Both go to the
// same checks and algorithms as the classic forms (api_impl.hpp).
//
// Counts are 64-bit all the way down (Args), so MPI_Bcast_c & co. move more
// than INT_MAX elements. The v/w families keep int arrays in Args: their
// MPI_Count / MPI_Aint arrays are narrowed here, and a per-peer count or
// displacement beyond INT_MAX is refused with MPI_ERR_COUNT rather than cut
// (the total over all peers may exceed INT_MAX).
#include <climits>
#include <vector>

#include "bindings/impl.hpp"
#include "coll/api_impl.hpp"
#include "core/api.hpp"
#include "core/errors.hpp"
#include "core/info.hpp"

namespace wanmpi::coll {
namespace {

// Narrows the MPI_Count / MPI_Aint arrays of one call to int; the copies live
// as long as the Narrow (the call builds its schedule before returning, so that
// is long enough). An invalid communicator is left for the collective to
// report; a NULL array is passed on as NULL.
struct Narrow {
    core::Comm* c;
    int n;
    int rc = MPI_SUCCESS;
    std::vector<std::vector<int>> keep;
    explicit Narrow(MPI_Comm comm) : c(core::comm_lookup(comm)), n(c ? c->remote_size() : 0) {}
    // Whether this rank is the root of a rooted collective (MPI_ROOT on an intercommunicator).
    bool is_root(int root) const { return c && (c->inter ? root == MPI_ROOT : c->rank == root); }
    // `significant`: whether this rank's arrays are read at all (a v-collective's root-side
    // arrays elsewhere than at the root, the send arrays with MPI_IN_PLACE, are not, and
    // programs leave them uninitialized); those are passed on as NULL unread.
    template <class T>
    const int* operator()(const T* a, const char* what, bool significant = true) {
        if (!a || !c || rc != MPI_SUCCESS || !significant) return nullptr;
        std::vector<int>& v = keep.emplace_back(size_t(n));
        for (int i = 0; i < n; ++i) {
            if (a[i] > INT_MAX || a[i] < INT_MIN) {
                rc = core::raise(
                    c, core::make_error(MPI_ERR_COUNT,
                                        "%s: %s[%d] = %lld: wanmpi takes per-process counts and "
                                        "displacements up to INT_MAX in v/w collectives",
                                        core::t_api_name, what, i, (long long)a[i]));
                return nullptr;
            }
            v[size_t(i)] = int(a[i]);
        }
        return v.data();
    }
};

// The info argument of a persistent collective: MPI_INFO_NULL or a valid info
// (its hints are accepted and ignored).
int chk_info(MPI_Comm comm, MPI_Info info) {
    if (int rc = core::info_arg_check(info, core::t_api_name))
        return core::raise(core::comm_lookup(comm), rc);
    return MPI_SUCCESS;
}

// Gatherv_c, Igatherv_c and Gatherv_init_c: the narrowing, then the collective.
int gatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
              const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
              int root, MPI_Comm comm, MPI_Request* request, Call call) {
    Narrow nw(comm);
    const int* recvcounts_ = nw(recvcounts, "recvcounts", nw.is_root(root));
    const int* displs_ = nw(displs, "displs", nw.is_root(root));
    if (nw.rc != MPI_SUCCESS) return nw.rc;
    return gather(Kind::gatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts_, displs_,
                  recvtype, root, comm, request, call);
}

// Scatterv_c, Iscatterv_c and Scatterv_init_c: the narrowing, then the collective.
int scatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
               MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
               int root, MPI_Comm comm, MPI_Request* request, Call call) {
    Narrow nw(comm);
    const int* sendcounts_ = nw(sendcounts, "sendcounts", nw.is_root(root));
    const int* displs_ = nw(displs, "displs", nw.is_root(root));
    if (nw.rc != MPI_SUCCESS) return nw.rc;
    return scatter(Kind::scatterv, sendbuf, 0, sendcounts_, displs_, sendtype, recvbuf, recvcount,
                   recvtype, root, comm, request, call);
}

// Allgatherv_c, Iallgatherv_c and Allgatherv_init_c: the narrowing, then the collective.
int allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                 const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                 MPI_Comm comm, MPI_Request* request, Call call) {
    Narrow nw(comm);
    const int* recvcounts_ = nw(recvcounts, "recvcounts");
    const int* displs_ = nw(displs, "displs");
    if (nw.rc != MPI_SUCCESS) return nw.rc;
    return allgather(Kind::allgatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts_,
                     displs_, recvtype, comm, request, call);
}

// The four arrays of an alltoallv/w-style call, narrowed (the send ones only without
// MPI_IN_PLACE, where they are not significant).
struct NarrowV {
    const int *sendcounts, *sdispls, *recvcounts, *rdispls;
    NarrowV(Narrow& nw, const void* sendbuf, const MPI_Count sc[], const MPI_Aint sd[],
            const MPI_Count rc[], const MPI_Aint rd[])
        : sendcounts(nw(sc, "sendcounts", sendbuf != MPI_IN_PLACE)),
          sdispls(nw(sd, "sdispls", sendbuf != MPI_IN_PLACE)),
          recvcounts(nw(rc, "recvcounts")),
          rdispls(nw(rd, "rdispls")) {}
};

// Alltoallv_c, Ialltoallv_c and Alltoallv_init_c: the narrowing, then the collective.
int alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                MPI_Request* request, Call call) {
    Narrow nw(comm);
    const NarrowV v(nw, sendbuf, sendcounts, sdispls, recvcounts, rdispls);
    if (nw.rc != MPI_SUCCESS) return nw.rc;
    return alltoall(Kind::alltoallv, sendbuf, 0, v.sendcounts, v.sdispls, sendtype, nullptr, recvbuf,
                    0, v.recvcounts, v.rdispls, recvtype, nullptr, comm, request, call);
}

// Alltoallw_c, Ialltoallw_c and Alltoallw_init_c: the narrowing, then the collective.
int alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
                const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                MPI_Request* request, Call call) {
    Narrow nw(comm);
    const NarrowV v(nw, sendbuf, sendcounts, sdispls, recvcounts, rdispls);
    if (nw.rc != MPI_SUCCESS) return nw.rc;
    return alltoall(Kind::alltoallw, sendbuf, 0, v.sendcounts, v.sdispls, MPI_DATATYPE_NULL,
                    sendtypes, recvbuf, 0, v.recvcounts, v.rdispls, MPI_DATATYPE_NULL, recvtypes,
                    comm, request, call);
}

// Reduce_scatter_c, Ireduce_scatter_c and Reduce_scatter_init_c: the narrowing, then the
// collective.
int reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request,
                     Call call) {
    Narrow nw(comm);
    const int* recvcounts_ = nw(recvcounts, "recvcounts");
    if (nw.rc != MPI_SUCCESS) return nw.rc;
    return reduction(Kind::reduce_scatter, sendbuf, recvbuf, 0, recvcounts_, datatype, op, 0, comm,
                     request, call);
}

}  // namespace
}  // namespace wanmpi::coll

namespace wanmpi::impl {
using namespace wanmpi::coll;

int Bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    return bcast(buffer, count, datatype, root, comm, nullptr, Call::blocking);
}

int Gather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
             MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
    return gather(Kind::gather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr,
                  recvtype, root, comm, nullptr, Call::blocking);
}

int Gatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
              const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
              int root, MPI_Comm comm) {
    return gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                     comm, nullptr, Call::blocking);
}

int Scatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
              MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
    return scatter(Kind::scatter, sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf,
                   recvcount, recvtype, root, comm, nullptr, Call::blocking);
}

int Scatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
               MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
               int root, MPI_Comm comm) {
    return scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                      comm, nullptr, Call::blocking);
}

int Allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return allgather(Kind::allgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr,
                     nullptr, recvtype, comm, nullptr, Call::blocking);
}

int Allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                 const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                 MPI_Comm comm) {
    return allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                        nullptr, Call::blocking);
}

int Alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
               MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return alltoall(Kind::alltoall, sendbuf, sendcount, nullptr, nullptr, sendtype, nullptr,
                    recvbuf, recvcount, nullptr, nullptr, recvtype, nullptr, comm, nullptr,
                    Call::blocking);
}

int Alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
    return alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                       recvtype, comm, nullptr, Call::blocking);
}

int Alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
                const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
    return alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                       recvtypes, comm, nullptr, Call::blocking);
}

int Reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
             int root, MPI_Comm comm) {
    return reduction(Kind::reduce, sendbuf, recvbuf, count, nullptr, datatype, op, root, comm,
                     nullptr, Call::blocking);
}

int Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                MPI_Op op, MPI_Comm comm) {
    return reduction(Kind::allreduce, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm,
                     nullptr, Call::blocking);
}

int Reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    return reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, nullptr,
                            Call::blocking);
}

int Reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    return reduction(Kind::reduce_scatter_block, sendbuf, recvbuf, recvcount, nullptr, datatype, op,
                     0, comm, nullptr, Call::blocking);
}

int Scan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
           MPI_Comm comm) {
    return reduction(Kind::scan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm, nullptr,
                     Call::blocking);
}

int Exscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm) {
    return reduction(Kind::exscan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm, nullptr,
                     Call::blocking);
}

int Ibcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
             MPI_Request* request) {
    return bcast(buffer, count, datatype, root, comm, request, Call::nonblocking);
}

int Igather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
              MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
              MPI_Request* request) {
    return gather(Kind::gather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr,
                  recvtype, root, comm, request, Call::nonblocking);
}

int Igatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
               const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
               int root, MPI_Comm comm, MPI_Request* request) {
    return gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                     comm, request, Call::nonblocking);
}

int Iscatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
               MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
               MPI_Request* request) {
    return scatter(Kind::scatter, sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf,
                   recvcount, recvtype, root, comm, request, Call::nonblocking);
}

int Iscatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                int root, MPI_Comm comm, MPI_Request* request) {
    return scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                      comm, request, Call::nonblocking);
}

int Iallgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    return allgather(Kind::allgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr,
                     nullptr, recvtype, comm, request, Call::nonblocking);
}

int Iallgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                  MPI_Comm comm, MPI_Request* request) {
    return allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                        request, Call::nonblocking);
}

int Ialltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    return alltoall(Kind::alltoall, sendbuf, sendcount, nullptr, nullptr, sendtype, nullptr,
                    recvbuf, recvcount, nullptr, nullptr, recvtype, nullptr, comm, request,
                    Call::nonblocking);
}

int Ialltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                 MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                 const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                 MPI_Request* request) {
    return alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                       recvtype, comm, request, Call::nonblocking);
}

int Ialltoallw_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                 const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
                 const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                 MPI_Request* request) {
    return alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                       recvtypes, comm, request, Call::nonblocking);
}

int Ireduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
              int root, MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::reduce, sendbuf, recvbuf, count, nullptr, datatype, op, root, comm,
                     request, Call::nonblocking);
}

int Iallreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::allreduce, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm,
                     request, Call::nonblocking);
}

int Ireduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
    return reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, request,
                            Call::nonblocking);
}

int Ireduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::reduce_scatter_block, sendbuf, recvbuf, recvcount, nullptr, datatype, op,
                     0, comm, request, Call::nonblocking);
}

int Iscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
            MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::scan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm, request,
                     Call::nonblocking);
}

int Iexscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Request* request) {
    return reduction(Kind::exscan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm, request,
                     Call::nonblocking);
}

int Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return barrier(comm, request, Call::persistent);
}

int Bcast_init(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Info info, MPI_Request* request) {
    return Bcast_init_c(buffer, count, datatype, root, comm, info, request);
}

int Gather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                MPI_Request* request) {
    return Gather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                         info, request);
}

int Gatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return gather(Kind::gatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                  recvtype, root, comm, request, Call::persistent);
}

int Scatter_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                 MPI_Request* request) {
    return Scatter_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                          info, request);
}

int Scatterv_init(const void* sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return scatter(Kind::scatterv, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                   recvtype, root, comm, request, Call::persistent);
}

int Allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                   MPI_Request* request) {
    return Allgather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                            request);
}

int Allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return allgather(Kind::allgatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                     recvtype, comm, request, Call::persistent);
}

int Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                  MPI_Request* request) {
    return Alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                           request);
}

int Alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                   MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return alltoall(Kind::alltoallv, sendbuf, 0, sendcounts, sdispls, sendtype, nullptr, recvbuf, 0,
                    recvcounts, rdispls, recvtype, nullptr, comm, request, Call::persistent);
}

int Alltoallw_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                   MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return alltoall(Kind::alltoallw, sendbuf, 0, sendcounts, sdispls, MPI_DATATYPE_NULL, sendtypes,
                    recvbuf, 0, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes, comm, request,
                    Call::persistent);
}

int Reduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    return Reduce_init_c(sendbuf, recvbuf, count, datatype, op, root, comm, info, request);
}

int Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    return Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}

int Reduce_scatter_init(const void* sendbuf, void* recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                        MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return reduction(Kind::reduce_scatter, sendbuf, recvbuf, 0, recvcounts, datatype, op, 0, comm,
                     request, Call::persistent);
}

int Reduce_scatter_block_init(const void* sendbuf, void* recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                              MPI_Request* request) {
    return Reduce_scatter_block_init_c(sendbuf, recvbuf, recvcount, datatype, op, comm, info,
                                       request);
}

int Scan_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    return Scan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}

int Exscan_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    return Exscan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}

int Bcast_init_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                 MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return bcast(buffer, count, datatype, root, comm, request, Call::persistent);
}

int Gather_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return gather(Kind::gather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr,
                  recvtype, root, comm, request, Call::persistent);
}

int Gatherv_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                   int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                     comm, request, Call::persistent);
}

int Scatter_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                   MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return scatter(Kind::scatter, sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf,
                   recvcount, recvtype, root, comm, request, Call::persistent);
}

int Scatterv_init_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                    MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                      comm, request, Call::persistent);
}

int Allgather_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return allgather(Kind::allgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr,
                     nullptr, recvtype, comm, request, Call::persistent);
}

int Allgatherv_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                        request, Call::persistent);
}

int Alltoall_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                    MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return alltoall(Kind::alltoall, sendbuf, sendcount, nullptr, nullptr, sendtype, nullptr,
                    recvbuf, recvcount, nullptr, nullptr, recvtype, nullptr, comm, request,
                    Call::persistent);
}

int Alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                       recvtype, comm, request, Call::persistent);
}

int Alltoallw_init_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                     MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                       recvtypes, comm, request, Call::persistent);
}

int Reduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return reduction(Kind::reduce, sendbuf, recvbuf, count, nullptr, datatype, op, root, comm,
                     request, Call::persistent);
}

int Allreduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return reduction(Kind::allreduce, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm,
                     request, Call::persistent);
}

int Reduce_scatter_init_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                          MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, request,
                            Call::persistent);
}

int Reduce_scatter_block_init_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return reduction(Kind::reduce_scatter_block, sendbuf, recvbuf, recvcount, nullptr, datatype, op,
                     0, comm, request, Call::persistent);
}

int Scan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return reduction(Kind::scan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm, request,
                     Call::persistent);
}

int Exscan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    if (int rc = chk_info(comm, info)) return rc;
    return reduction(Kind::exscan, sendbuf, recvbuf, count, nullptr, datatype, op, 0, comm, request,
                     Call::persistent);
}

}  // namespace wanmpi::impl
