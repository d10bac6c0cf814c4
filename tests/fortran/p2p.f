C     Point-to-point through mpif.h (fixed form): blocking modes, statuses, probe, wildcards,
C     MPI_PROC_NULL, MPI_STATUS_IGNORE, buffered sends. Works on any number of ranks >= 1.
      program p2p
      implicit none
      include 'mpif.h'
      integer ierr, rank, nprocs, errs, toterrs, i, n, right, left
      integer status(MPI_STATUS_SIZE), count
      integer ibuf(100), jbuf(100)
      double precision dbuf(50)
      logical flag
      integer bsize
      character*1 bbuf(2000)

      errs = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
      right = mod(rank + 1, nprocs)
      left = mod(rank + nprocs - 1, nprocs)

C     ring exchange with sendrecv, checking the status fields
      do i = 1, 100
         ibuf(i) = rank * 1000 + i
         jbuf(i) = -1
      enddo
      call mpi_sendrecv(ibuf, 100, MPI_INTEGER, right, 11,
     &     jbuf, 100, MPI_INTEGER, left, 11, MPI_COMM_WORLD, status,
     &     ierr)
      if (ierr .ne. MPI_SUCCESS) errs = errs + 1
      do i = 1, 100
         if (jbuf(i) .ne. left * 1000 + i) errs = errs + 1
      enddo
      if (status(MPI_SOURCE) .ne. left) then
         errs = errs + 1
         print *, 'sendrecv: source', status(MPI_SOURCE), 'not', left
      endif
      if (status(MPI_TAG) .ne. 11) errs = errs + 1
      call mpi_get_count(status, MPI_INTEGER, count, ierr)
      if (count .ne. 100) then
         errs = errs + 1
         print *, 'get_count gave', count
      endif
      call mpi_get_count(status, MPI_DOUBLE_PRECISION, count, ierr)
      if (count .ne. 50) errs = errs + 1

C     each mode, rank 0 <-> rank 1 (or self with one rank: ssend/rsend
C     would deadlock alone, so they need two)
      if (nprocs .ge. 2 .and. rank .le. 1) then
         n = 1 - rank
         do i = 1, 50
            dbuf(i) = rank + i * 0.5d0
         enddo
         if (rank .eq. 0) then
            call mpi_ssend(dbuf, 50, MPI_DOUBLE_PRECISION, n, 1,
     &           MPI_COMM_WORLD, ierr)
            call mpi_recv(dbuf, 50, MPI_DOUBLE_PRECISION, n, 2,
     &           MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
            do i = 1, 50
               if (dbuf(i) .ne. 1 + i * 0.5d0) errs = errs + 1
            enddo
C           rsend: the receiver posts first and then says so
            call mpi_recv(i, 1, MPI_INTEGER, n, 3, MPI_COMM_WORLD,
     &           status, ierr)
            call mpi_rsend(ibuf, 100, MPI_INTEGER, n, 4,
     &           MPI_COMM_WORLD, ierr)
         else
            call mpi_recv(dbuf, 50, MPI_DOUBLE_PRECISION, n, 1,
     &           MPI_COMM_WORLD, status, ierr)
            call mpi_get_count(status, MPI_DOUBLE_PRECISION, count,
     &           ierr)
            if (count .ne. 50) errs = errs + 1
            do i = 1, 50
               if (dbuf(i) .ne. i * 0.5d0) errs = errs + 1
               dbuf(i) = 1 + i * 0.5d0
            enddo
            call mpi_send(dbuf, 50, MPI_DOUBLE_PRECISION, n, 2,
     &           MPI_COMM_WORLD, ierr)
            call mpi_irecv(jbuf, 100, MPI_INTEGER, n, 4,
     &           MPI_COMM_WORLD, i, ierr)
            call mpi_send(0, 1, MPI_INTEGER, n, 3, MPI_COMM_WORLD,
     &           ierr)
            call mpi_wait(i, status, ierr)
            do i = 1, 100
               if (jbuf(i) .ne. i) errs = errs + 1
            enddo
         endif
      endif

C     buffered send to self, probe it, receive with wildcards
      bsize = 2000
      call mpi_buffer_attach(bbuf, bsize, ierr)
      if (ierr .ne. MPI_SUCCESS) errs = errs + 1
      call mpi_bsend(ibuf, 10, MPI_INTEGER, rank, 21, MPI_COMM_WORLD,
     &     ierr)
      call mpi_iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
     &     flag, status, ierr)
      do while (.not. flag)
         call mpi_iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
     &        flag, status, ierr)
      enddo
      if (status(MPI_TAG) .ne. 21 .or. status(MPI_SOURCE) .ne. rank)
     &     errs = errs + 1
      call mpi_probe(rank, 21, MPI_COMM_WORLD, status, ierr)
      call mpi_get_count(status, MPI_INTEGER, count, ierr)
      if (count .ne. 10) errs = errs + 1
      call mpi_recv(jbuf, 100, MPI_INTEGER, MPI_ANY_SOURCE,
     &     MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
      if (status(MPI_TAG) .ne. 21) errs = errs + 1
      if (jbuf(10) .ne. ibuf(10)) errs = errs + 1
      call mpi_buffer_detach(bbuf, bsize, ierr)
      if (bsize .ne. 2000) then
         errs = errs + 1
         print *, 'buffer_detach size', bsize
      endif

C     MPI_PROC_NULL: completes at once with source MPI_PROC_NULL
      call mpi_recv(jbuf, 100, MPI_INTEGER, MPI_PROC_NULL, 5,
     &     MPI_COMM_WORLD, status, ierr)
      if (status(MPI_SOURCE) .ne. MPI_PROC_NULL) errs = errs + 1
      if (status(MPI_TAG) .ne. MPI_ANY_TAG) errs = errs + 1
      call mpi_get_count(status, MPI_INTEGER, count, ierr)
      if (count .ne. 0) errs = errs + 1

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
