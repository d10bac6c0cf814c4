C     Nonblocking point-to-point through mpif.h: Isend/Irecv with Waitall (statuses and
C     MPI_STATUSES_IGNORE), Waitany/Testany (1-based indexes), Waitsome/Testsome, Test/Testall
C     (LOGICAL flags), persistent requests with Startall, Cancel + Test_cancelled,
C     Request_free, MPI_REQUEST_NULL handling. Any number of ranks.
C     The buffers are VOLATILE: MPI writes them in calls that do not name them (a nonblocking
C     receive completes in MPI_WAIT), which the optimizer must not ignore (MPI 4.0 §19.1.17).
      program nonblocking
      implicit none
      include 'mpif.h'
      integer maxp
      parameter (maxp = 16)
      integer ierr, rank, nprocs, errs, toterrs, i, j, k, idx, outcnt
      integer reqs(2*maxp), statuses(MPI_STATUS_SIZE, 2*maxp)
      integer status(MPI_STATUS_SIZE), indices(2*maxp)
      integer sbuf(maxp), rbuf(maxp), seen(maxp), preq(2)
      volatile sbuf, rbuf
      logical flag

      errs = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
      if (nprocs .gt. maxp) call mpi_abort(MPI_COMM_WORLD, 1, ierr)

C     all-to-all with Irecv/Isend, Waitall with statuses
      do i = 1, nprocs
         sbuf(i) = rank * 100 + i
         rbuf(i) = -1
         call mpi_irecv(rbuf(i), 1, MPI_INTEGER, i - 1, 1,
     &        MPI_COMM_WORLD, reqs(i), ierr)
      enddo
      do i = 1, nprocs
         call mpi_isend(sbuf(i), 1, MPI_INTEGER, i - 1, 1,
     &        MPI_COMM_WORLD, reqs(nprocs + i), ierr)
      enddo
      call mpi_waitall(2 * nprocs, reqs, statuses, ierr)
      if (ierr .ne. MPI_SUCCESS) errs = errs + 1
      do i = 1, nprocs
         if (rbuf(i) .ne. (i - 1) * 100 + rank + 1) errs = errs + 1
         if (statuses(MPI_SOURCE, i) .ne. i - 1) errs = errs + 1
         if (statuses(MPI_TAG, i) .ne. 1) errs = errs + 1
         if (reqs(i) .ne. MPI_REQUEST_NULL) errs = errs + 1
      enddo

C     Waitany: every index 1..n comes back exactly once
      do i = 1, nprocs
         seen(i) = 0
         call mpi_irecv(rbuf(i), 1, MPI_INTEGER, i - 1, 2,
     &        MPI_COMM_WORLD, reqs(i), ierr)
      enddo
      do i = 1, nprocs
         call mpi_send(sbuf(i), 1, MPI_INTEGER, i - 1, 2,
     &        MPI_COMM_WORLD, ierr)
      enddo
      do i = 1, nprocs
         call mpi_waitany(nprocs, reqs, idx, status, ierr)
         if (idx .lt. 1 .or. idx .gt. nprocs) then
            errs = errs + 1
            print *, 'waitany index out of range:', idx
         else
            seen(idx) = seen(idx) + 1
            if (status(MPI_SOURCE) .ne. idx - 1) errs = errs + 1
            if (reqs(idx) .ne. MPI_REQUEST_NULL) errs = errs + 1
         endif
      enddo
      do i = 1, nprocs
         if (seen(i) .ne. 1) errs = errs + 1
      enddo
C     all requests null: MPI_UNDEFINED (MPICH 4.0.2 returns MPI_UNDEFINED+1 here)
      call mpi_waitany(nprocs, reqs, idx, status, ierr)
      if (idx .ne. MPI_UNDEFINED) then
         errs = errs + 1
         print *, 'waitany on null requests gave', idx
      endif

C     Waitsome / Testsome
      do i = 1, nprocs
         seen(i) = 0
         call mpi_irecv(rbuf(i), 1, MPI_INTEGER, i - 1, 3,
     &        MPI_COMM_WORLD, reqs(i), ierr)
      enddo
      do i = 1, nprocs
         call mpi_send(sbuf(i), 1, MPI_INTEGER, i - 1, 3,
     &        MPI_COMM_WORLD, ierr)
      enddo
      k = 0
      do while (k .lt. nprocs)
         if (mod(k, 2) .eq. 0) then
            call mpi_waitsome(nprocs, reqs, outcnt, indices, statuses,
     &           ierr)
         else
            call mpi_testsome(nprocs, reqs, outcnt, indices, statuses,
     &           ierr)
         endif
         if (outcnt .eq. MPI_UNDEFINED) then
            errs = errs + 1
            k = nprocs
         endif
         do j = 1, outcnt
            idx = indices(j)
            if (idx .lt. 1 .or. idx .gt. nprocs) then
               errs = errs + 1
            else
               seen(idx) = seen(idx) + 1
               if (statuses(MPI_SOURCE, j) .ne. idx - 1) errs = errs + 1
            endif
         enddo
         k = k + outcnt
      enddo
      do i = 1, nprocs
         if (seen(i) .ne. 1) errs = errs + 1
         if (rbuf(i) .ne. (i - 1) * 100 + rank + 1) errs = errs + 1
      enddo

C     Test / Testall / Testany with LOGICAL flags; STATUSES_IGNORE
      call mpi_irecv(rbuf(1), 1, MPI_INTEGER, rank, 4, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      call mpi_test(reqs(1), flag, status, ierr)
      if (flag) errs = errs + 1
      call mpi_testany(1, reqs, idx, flag, status, ierr)
      if (flag .or. idx .ne. MPI_UNDEFINED) errs = errs + 1
      call mpi_send(sbuf(1), 1, MPI_INTEGER, rank, 4, MPI_COMM_WORLD,
     &     ierr)
      flag = .false.
      do while (.not. flag)
         call mpi_testany(1, reqs, idx, flag, status, ierr)
      enddo
      if (idx .ne. 1) errs = errs + 1
      call mpi_irecv(rbuf(1), 1, MPI_INTEGER, rank, 5, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      call mpi_isend(sbuf(1), 1, MPI_INTEGER, rank, 5, MPI_COMM_WORLD,
     &     reqs(2), ierr)
      flag = .false.
      do while (.not. flag)
         call mpi_testall(2, reqs, flag, MPI_STATUSES_IGNORE, ierr)
      enddo
      if (reqs(1) .ne. MPI_REQUEST_NULL) errs = errs + 1
      call mpi_test(reqs(1), flag, status, ierr)
      if (.not. flag) errs = errs + 1

C     persistent requests, three rounds around the ring
      call mpi_recv_init(rbuf(1), 1, MPI_INTEGER,
     &     mod(rank + nprocs - 1, nprocs), 6, MPI_COMM_WORLD, preq(1),
     &     ierr)
      call mpi_send_init(sbuf(2), 1, MPI_INTEGER, mod(rank + 1, nprocs),
     &     6, MPI_COMM_WORLD, preq(2), ierr)
      do i = 1, 3
         sbuf(2) = rank * 10 + i
         call mpi_startall(2, preq, ierr)
         call mpi_waitall(2, preq, MPI_STATUSES_IGNORE, ierr)
         if (rbuf(1) .ne. mod(rank + nprocs - 1, nprocs) * 10 + i)
     &        errs = errs + 1
      enddo
      call mpi_request_free(preq(1), ierr)
      call mpi_request_free(preq(2), ierr)
      if (preq(1) .ne. MPI_REQUEST_NULL) errs = errs + 1

C     cancel a receive nobody matches
      call mpi_irecv(rbuf(1), 1, MPI_INTEGER, rank, 99, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      call mpi_cancel(reqs(1), ierr)
      call mpi_wait(reqs(1), status, ierr)
      call mpi_test_cancelled(status, flag, ierr)
      if (.not. flag) then
         errs = errs + 1
         print *, 'test_cancelled: not cancelled'
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
