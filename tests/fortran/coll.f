C     Collectives through mpif.h with every root: Bcast, Gather(v), Scatter(v), Allgather(v),
C     Alltoall(v,w), Reduce_scatter(_block), Scan, Exscan, Barrier, MPI_IN_PLACE forms, and the
C     nonblocking versions (Ibcast, Iallreduce, Igather, Ialltoall, Ibarrier). CHARACTER data
C     for Bcast/Allgather. Any number of ranks up to 16.
      program coll
      implicit none
      include 'mpif.h'
      integer maxp, m
      parameter (maxp = 16, m = 3)
      integer ierr, rank, np, errs, toterrs, i, j, r, root, k
      integer sbuf(m * maxp), rbuf(m * maxp), cnts(maxp), displs(maxp)
      integer rcnts(maxp), rdispls(maxp), types(maxp), req, reqs(4)
      double precision dbuf(maxp), dres(maxp)
      character*4 cbuf, cgath(maxp)
      character*4 cexp
C     written by MPI in calls that do not name them (nonblocking collectives)
      volatile sbuf, rbuf, j, rdispls

      errs = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_size(MPI_COMM_WORLD, np, ierr)
      if (np .gt. maxp) call mpi_abort(MPI_COMM_WORLD, 1, ierr)
      call mpi_barrier(MPI_COMM_WORLD, ierr)

      do root = 0, np - 1
C        Bcast
         do i = 1, m
            sbuf(i) = -1
            if (rank .eq. root) sbuf(i) = root * 10 + i
         enddo
         call mpi_bcast(sbuf, m, MPI_INTEGER, root, MPI_COMM_WORLD,
     &        ierr)
         do i = 1, m
            if (sbuf(i) .ne. root * 10 + i) errs = errs + 1
         enddo
C        Bcast of CHARACTER
         cbuf = '????'
         if (rank .eq. root) write (cbuf, '(A1,I3.3)') 'r', root
         call mpi_bcast(cbuf, 4, MPI_CHARACTER, root, MPI_COMM_WORLD,
     &        ierr)
         write (cexp, '(A1,I3.3)') 'r', root
         if (cbuf .ne. cexp) errs = errs + 1
C        Gather, then Gather with IN_PLACE at the root
         do i = 1, m
            sbuf(i) = rank * 10 + i
         enddo
         call mpi_gather(sbuf, m, MPI_INTEGER, rbuf, m, MPI_INTEGER,
     &        root, MPI_COMM_WORLD, ierr)
         if (rank .eq. root) then
            do r = 0, np - 1
               do i = 1, m
                  if (rbuf(r * m + i) .ne. r * 10 + i) errs = errs + 1
               enddo
            enddo
            do i = 1, m * np
               rbuf(i) = -1
            enddo
            do i = 1, m
               rbuf(root * m + i) = root * 10 + i
            enddo
            call mpi_gather(MPI_IN_PLACE, m, MPI_INTEGER, rbuf, m,
     &           MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
            do r = 0, np - 1
               do i = 1, m
                  if (rbuf(r * m + i) .ne. r * 10 + i) errs = errs + 1
               enddo
            enddo
         else
            call mpi_gather(sbuf, m, MPI_INTEGER, rbuf, m,
     &           MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
         endif
C        Gatherv: rank r sends r+1 elements (at most m)
         do r = 1, np
            cnts(r) = min(r, m)
            if (r .eq. 1) then
               displs(r) = 0
            else
               displs(r) = displs(r - 1) + cnts(r - 1)
            endif
         enddo
         call mpi_gatherv(sbuf, cnts(rank + 1), MPI_INTEGER, rbuf,
     &        cnts, displs, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
         if (rank .eq. root) then
            do r = 0, np - 1
               do i = 1, cnts(r + 1)
                  if (rbuf(displs(r + 1) + i) .ne. r * 10 + i)
     &                 errs = errs + 1
               enddo
            enddo
         endif
C        Scatter and Scatterv
         if (rank .eq. root) then
            do i = 1, m * np
               sbuf(i) = root * 1000 + i
            enddo
         endif
         call mpi_scatter(sbuf, m, MPI_INTEGER, rbuf, m, MPI_INTEGER,
     &        root, MPI_COMM_WORLD, ierr)
         do i = 1, m
            if (rbuf(i) .ne. root * 1000 + rank * m + i) errs = errs + 1
         enddo
         call mpi_scatterv(sbuf, cnts, displs, MPI_INTEGER, rbuf,
     &        cnts(rank + 1), MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
         do i = 1, cnts(rank + 1)
            if (rbuf(i) .ne. root * 1000 + displs(rank + 1) + i)
     &           errs = errs + 1
         enddo
C        Reduce with DOUBLE PRECISION
         do i = 1, np
            dbuf(i) = rank + i
         enddo
         call mpi_reduce(dbuf, dres, np, MPI_DOUBLE_PRECISION, MPI_SUM,
     &        root, MPI_COMM_WORLD, ierr)
         if (rank .eq. root) then
            do i = 1, np
               if (dres(i) .ne. np * (np - 1) / 2 + np * i)
     &              errs = errs + 1
            enddo
         endif
      enddo

C     Allgather, in place, and of CHARACTER
      do i = 1, m
         sbuf(i) = rank * 10 + i
      enddo
      call mpi_allgather(sbuf, m, MPI_INTEGER, rbuf, m, MPI_INTEGER,
     &     MPI_COMM_WORLD, ierr)
      do r = 0, np - 1
         do i = 1, m
            if (rbuf(r * m + i) .ne. r * 10 + i) errs = errs + 1
         enddo
      enddo
      do i = 1, m * np
         rbuf(i) = -1
      enddo
      do i = 1, m
         rbuf(rank * m + i) = rank * 10 + i
      enddo
      call mpi_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, m,
     &     MPI_INTEGER, MPI_COMM_WORLD, ierr)
      do r = 0, np - 1
         do i = 1, m
            if (rbuf(r * m + i) .ne. r * 10 + i) errs = errs + 1
         enddo
      enddo
      write (cbuf, '(A1,I3.3)') 'c', rank
      call mpi_allgather(cbuf, 4, MPI_CHARACTER, cgath, 4,
     &     MPI_CHARACTER, MPI_COMM_WORLD, ierr)
      do r = 0, np - 1
         write (cexp, '(A1,I3.3)') 'c', r
         if (cgath(r + 1) .ne. cexp) errs = errs + 1
      enddo
C     Allgatherv
      call mpi_allgatherv(sbuf, cnts(rank + 1), MPI_INTEGER, rbuf,
     &     cnts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
      do r = 0, np - 1
         do i = 1, cnts(r + 1)
            if (rbuf(displs(r + 1) + i) .ne. r * 10 + i) errs = errs + 1
         enddo
      enddo

C     Alltoall: element j of rank r goes to rank j-1
      do j = 1, np
         sbuf(j) = rank * 100 + j
      enddo
      call mpi_alltoall(sbuf, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER,
     &     MPI_COMM_WORLD, ierr)
      do r = 0, np - 1
         if (rbuf(r + 1) .ne. r * 100 + rank + 1) errs = errs + 1
      enddo
C     Alltoallv / Alltoallw with one element per peer at stride 2
      do j = 1, np
         cnts(j) = 1
         displs(j) = 2 * (j - 1)
         rcnts(j) = 1
         rdispls(j) = (j - 1)
         sbuf(2 * j - 1) = rank * 100 + j
      enddo
      call mpi_alltoallv(sbuf, cnts, displs, MPI_INTEGER, rbuf, rcnts,
     &     rdispls, MPI_INTEGER, MPI_COMM_WORLD, ierr)
      do r = 0, np - 1
         if (rbuf(r + 1) .ne. r * 100 + rank + 1) errs = errs + 1
      enddo
      do j = 1, np
         displs(j) = displs(j) * 4
         rdispls(j) = rdispls(j) * 4
         types(j) = MPI_INTEGER
         rbuf(j) = -1
      enddo
      call mpi_alltoallw(sbuf, cnts, displs, types, rbuf, rcnts,
     &     rdispls, types, MPI_COMM_WORLD, ierr)
      do r = 0, np - 1
         if (rbuf(r + 1) .ne. r * 100 + rank + 1) errs = errs + 1
      enddo

C     Reduce_scatter_block and Reduce_scatter (2 elements each)
      do j = 1, 2 * np
         sbuf(j) = rank + j
      enddo
      call mpi_reduce_scatter_block(sbuf, rbuf, 2, MPI_INTEGER,
     &     MPI_SUM, MPI_COMM_WORLD, ierr)
      do i = 1, 2
         j = 2 * rank + i
         if (rbuf(i) .ne. np * (np - 1) / 2 + np * j) errs = errs + 1
      enddo
      do j = 1, np
         rcnts(j) = 2
      enddo
      call mpi_reduce_scatter(sbuf, rbuf, rcnts, MPI_INTEGER, MPI_MAX,
     &     MPI_COMM_WORLD, ierr)
      do i = 1, 2
         if (rbuf(i) .ne. np - 1 + 2 * rank + i) errs = errs + 1
      enddo

C     Scan and Exscan
      k = rank + 1
      call mpi_scan(k, j, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
      if (j .ne. (rank + 1) * (rank + 2) / 2) errs = errs + 1
      call mpi_exscan(k, j, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD,
     &     ierr)
      if (rank .gt. 0 .and. j .ne. rank * (rank + 1) / 2)
     &     errs = errs + 1

C     Nonblocking collectives
      do i = 1, m
         sbuf(i) = 0
         if (rank .eq. 0) sbuf(i) = 7 * i
      enddo
      call mpi_ibcast(sbuf, m, MPI_INTEGER, 0, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      k = rank
      call mpi_iallreduce(k, j, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, reqs(2), ierr)
      do i = 1, np
         rcnts(i) = rank * np + i
      enddo
      call mpi_ialltoall(rcnts, 1, MPI_INTEGER, rdispls, 1,
     &     MPI_INTEGER, MPI_COMM_WORLD, reqs(3), ierr)
      call mpi_ibarrier(MPI_COMM_WORLD, reqs(4), ierr)
      call mpi_waitall(4, reqs, MPI_STATUSES_IGNORE, ierr)
      do i = 1, m
         if (sbuf(i) .ne. 7 * i) errs = errs + 1
      enddo
      if (j .ne. np * (np - 1) / 2) errs = errs + 1
      do r = 0, np - 1
         if (rdispls(r + 1) .ne. r * np + rank + 1) errs = errs + 1
      enddo
      call mpi_igather(rank, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER,
     &     np - 1, MPI_COMM_WORLD, req, ierr)
      call mpi_wait(req, MPI_STATUS_IGNORE, ierr)
      if (rank .eq. np - 1) then
         do r = 0, np - 1
            if (rbuf(r + 1) .ne. r) errs = errs + 1
         enddo
      endif

      call mpi_allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         if (toterrs .eq. 0) then
            print *, ' No Errors'
         else
            print *, ' Found ', toterrs, ' errors'
         endif
      endif
      call mpi_finalize(ierr)
      end
