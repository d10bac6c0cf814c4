// The collectives behind the MPI entry points (src/coll/api.cpp): argument checks, then the
// module chain. One function per family, shared by the blocking, nonblocking, persistent and
// large-count entry points (api.cpp, api_mpi4.cpp). Counts are int64_t; the v/w arrays are
// read only while the call builds its schedule (see coll.hpp, Args).
// Threading: under the API lock. Errors are raised through the communicator's handler.
#pragma once

#include <cstdint>
#include <mpi.h>

#include "coll/coll.hpp"

namespace wanmpi::coll {

// How the collective runs: to completion now; under a new request (`req`, MPI_I*); or
// prepared now and run at each MPI_Start of a new persistent request (`req`, MPI_*_init).
enum class Call : uint8_t { blocking, nonblocking, persistent };

int barrier(MPI_Comm comm, MPI_Request* req, Call call);
int bcast(void* buf, int64_t count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request* req,
          Call call);
int gather(Kind kind, const void* sbuf, int64_t scount, MPI_Datatype stype, void* rbuf,
           int64_t rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, int root,
           MPI_Comm comm, MPI_Request* req, Call call);
int scatter(Kind kind, const void* sbuf, int64_t scount, const int* scounts, const int* displs,
            MPI_Datatype stype, void* rbuf, int64_t rcount, MPI_Datatype rtype, int root,
            MPI_Comm comm, MPI_Request* req, Call call);
int allgather(Kind kind, const void* sbuf, int64_t scount, MPI_Datatype stype, void* rbuf,
              int64_t rcount, const int* rcounts, const int* displs, MPI_Datatype rtype,
              MPI_Comm comm, MPI_Request* req, Call call);
int alltoall(Kind kind, const void* sbuf, int64_t scount, const int* scounts, const int* sdispls,
             MPI_Datatype stype, const MPI_Datatype* stypes, void* rbuf, int64_t rcount,
             const int* rcounts, const int* rdispls, MPI_Datatype rtype, const MPI_Datatype* rtypes,
             MPI_Comm comm, MPI_Request* req, Call call);
// reduce, allreduce, scan, exscan, reduce_scatter(_block)
int reduction(Kind kind, const void* sbuf, void* rbuf, int64_t count, const int* rcounts,
              MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, MPI_Request* req, Call call);

}  // namespace wanmpi::coll
