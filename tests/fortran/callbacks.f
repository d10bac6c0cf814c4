C     Fortran callbacks and the EXTRA_STATE they get, through mpif.h.
C     Generalized requests: query_fn, cancel_fn and free_fn get the
C     program's own EXTRA_STATE variable (same address, MPI_GET_ADDRESS),
C     so what free_fn and cancel_fn store in it is what the program reads
C     after MPI_WAIT (MPICH's greqf test; MPICH and Open MPI alike).
C     Keyvals (communicator, datatype, MPI-1 MPI_KEYVAL_CREATE): copy and
C     delete callbacks get the extra state given at creation (MPI 4.0
C     §19.3.8: they must not modify it). Any number of ranks.
      subroutine query_fn(extra, status, ierr)
      implicit none
      include 'mpif.h'
      integer(kind=MPI_ADDRESS_KIND) extra, a
      integer status(MPI_STATUS_SIZE), ierr
      integer(kind=MPI_ADDRESS_KIND) expaddr
      integer nquery, ncancel, nfree, nbad
      common /greq/ expaddr, nquery, ncancel, nfree, nbad
      call mpi_get_address(extra, a, ierr)
      if (a .ne. expaddr) nbad = nbad + 1
      nquery = nquery + 1
      call mpi_status_set_elements(status, MPI_BYTE, 0, ierr)
      call mpi_status_set_cancelled(status, .false., ierr)
      status(MPI_SOURCE) = MPI_UNDEFINED
      status(MPI_TAG) = MPI_UNDEFINED
      ierr = MPI_SUCCESS
      end

      subroutine cancel_fn(extra, complete, ierr)
      implicit none
      include 'mpif.h'
      integer(kind=MPI_ADDRESS_KIND) extra, a
      logical complete
      integer ierr
      integer(kind=MPI_ADDRESS_KIND) expaddr
      integer nquery, ncancel, nfree, nbad
      common /greq/ expaddr, nquery, ncancel, nfree, nbad
      call mpi_get_address(extra, a, ierr)
      if (a .ne. expaddr) nbad = nbad + 1
      ncancel = ncancel + 1
      if (complete) then
         extra = extra + 100
      else
         extra = extra + 1000
      endif
      ierr = MPI_SUCCESS
      end

      subroutine free_fn(extra, ierr)
      implicit none
      include 'mpif.h'
      integer(kind=MPI_ADDRESS_KIND) extra, a
      integer ierr
      integer(kind=MPI_ADDRESS_KIND) expaddr
      integer nquery, ncancel, nfree, nbad
      common /greq/ expaddr, nquery, ncancel, nfree, nbad
      call mpi_get_address(extra, a, ierr)
      if (a .ne. expaddr) nbad = nbad + 1
      nfree = nfree + 1
      extra = extra - 1
      ierr = MPI_SUCCESS
      end

C     Keyval callbacks: the extra state is 1001 (communicator), 1002
C     (datatype) or 1004 (MPI-1); a copy adds it to the value.
      subroutine kcopy(old, key, extra, valin, valout, flag, ierr)
      implicit none
      include 'mpif.h'
      integer old, key, ierr
      integer(kind=MPI_ADDRESS_KIND) extra, valin, valout
      logical flag
      integer ncopy, ndel, nkbad
      common /kv/ ncopy, ndel, nkbad
      if (extra .ne. 1001 .and. extra .ne. 1002) nkbad = nkbad + 1
      ncopy = ncopy + 1
      valout = valin + extra
      flag = .true.
      ierr = MPI_SUCCESS
      end

      subroutine kdel(obj, key, val, extra, ierr)
      implicit none
      include 'mpif.h'
      integer obj, key, ierr
      integer(kind=MPI_ADDRESS_KIND) val, extra
      integer ncopy, ndel, nkbad
      common /kv/ ncopy, ndel, nkbad
      if (extra .ne. 1001 .and. extra .ne. 1002) nkbad = nkbad + 1
      ndel = ndel + 1
      ierr = MPI_SUCCESS
      end

      subroutine kcopy1(old, key, extra, valin, valout, flag, ierr)
      implicit none
      include 'mpif.h'
      integer old, key, extra, valin, valout, ierr
      logical flag
      integer ncopy, ndel, nkbad
      common /kv/ ncopy, ndel, nkbad
      if (extra .ne. 1004) nkbad = nkbad + 1
      ncopy = ncopy + 1
      valout = valin + extra
      flag = .true.
      ierr = MPI_SUCCESS
      end

      subroutine kdel1(comm, key, val, extra, ierr)
      implicit none
      include 'mpif.h'
      integer comm, key, val, extra, ierr
      integer ncopy, ndel, nkbad
      common /kv/ ncopy, ndel, nkbad
      if (extra .ne. 1004) nkbad = nkbad + 1
      ndel = ndel + 1
      ierr = MPI_SUCCESS
      end

      program callbacks
      implicit none
      include 'mpif.h'
      integer ierr, rank, errs, toterrs, req, key, dup, dup2, t, t2
      integer status(MPI_STATUS_SIZE), key1, val1, iextra
      logical flag
C     MPI keeps the address of EXTRA and its callbacks write there
C     while the program is in MPI_WAIT: VOLATILE keeps the compiler
C     from reusing a value it read before.
      integer(kind=MPI_ADDRESS_KIND) extra, kextra1, kextra2, val
      volatile extra
      integer(kind=MPI_ADDRESS_KIND) expaddr
      integer nquery, ncancel, nfree, nbad
      common /greq/ expaddr, nquery, ncancel, nfree, nbad
      integer ncopy, ndel, nkbad
      common /kv/ ncopy, ndel, nkbad
      external query_fn, cancel_fn, free_fn
      external kcopy, kdel, kcopy1, kdel1

      errs = 0
      nquery = 0
      ncancel = 0
      nfree = 0
      nbad = 0
      ncopy = 0
      ndel = 0
      nkbad = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)

C     ---- generalized requests: completed, then waited on (free_fn
C     decrements the program's variable, as in MPICH's greqf)
      call mpi_get_address(extra, expaddr, ierr)
      extra = 1
      call mpi_grequest_start(query_fn, free_fn, cancel_fn, extra,
     &                        req, ierr)
      call mpi_test(req, flag, status, ierr)
      if (flag) then
         errs = errs + 1
         print *, 'incomplete generalized request tested complete'
      endif
      call mpi_grequest_complete(req, ierr)
      call mpi_wait(req, MPI_STATUS_IGNORE, ierr)
      if (extra .ne. 0 .or. nfree .ne. 1) then
         errs = errs + 1
         print *, 'free_fn: extra_state', extra, ' calls', nfree
      endif
C     cancelled after completion: cancel_fn adds 100 (complete), then
C     free_fn takes 1 off
      extra = 0
      call mpi_grequest_start(query_fn, free_fn, cancel_fn, extra,
     &                        req, ierr)
      call mpi_grequest_complete(req, ierr)
      call mpi_cancel(req, ierr)
      call mpi_wait(req, status, ierr)
      if (extra .ne. 99 .or. ncancel .ne. 1 .or. nfree .ne. 2) then
         errs = errs + 1
         print *, 'cancel_fn/free_fn: extra_state', extra, ' calls',
     &            ncancel, nfree
      endif
      if (nquery .lt. 1 .or. nbad .ne. 0) then
         errs = errs + 1
         print *, 'query_fn calls', nquery, ', callbacks given ',
     &            'another variable', nbad
      endif

C     ---- keyvals: the callbacks see the extra state of the creation
C     (one variable each, left alone: MPICH passes its address)
      kextra1 = 1001
      call mpi_comm_create_keyval(kcopy, kdel, key, kextra1, ierr)
      call mpi_comm_dup(MPI_COMM_WORLD, dup, ierr)
      val = 5
      call mpi_comm_set_attr(dup, key, val, ierr)
      call mpi_comm_dup(dup, dup2, ierr)
      call mpi_comm_get_attr(dup2, key, val, flag, ierr)
      if (.not. flag .or. val .ne. 1006) then
         errs = errs + 1
         print *, 'communicator attribute copied as', flag, val
      endif
      call mpi_comm_free(dup2, ierr)
      call mpi_comm_free(dup, ierr)
      call mpi_comm_free_keyval(key, ierr)

      kextra2 = 1002
      call mpi_type_create_keyval(kcopy, kdel, key, kextra2, ierr)
      call mpi_type_contiguous(2, MPI_INTEGER, t, ierr)
      val = 7
      call mpi_type_set_attr(t, key, val, ierr)
      call mpi_type_dup(t, t2, ierr)
      call mpi_type_get_attr(t2, key, val, flag, ierr)
      if (.not. flag .or. val .ne. 1009) then
         errs = errs + 1
         print *, 'datatype attribute copied as', flag, val
      endif
      call mpi_type_free(t2, ierr)
      call mpi_type_free(t, ierr)
      call mpi_type_free_keyval(key, ierr)

      iextra = 1004
      call mpi_keyval_create(kcopy1, kdel1, key1, iextra, ierr)
      call mpi_comm_dup(MPI_COMM_WORLD, dup, ierr)
      call mpi_attr_put(dup, key1, 3, ierr)
      call mpi_comm_dup(dup, dup2, ierr)
      call mpi_attr_get(dup2, key1, val1, flag, ierr)
      if (.not. flag .or. val1 .ne. 1007) then
         errs = errs + 1
         print *, 'MPI-1 attribute copied as', flag, val1
      endif
      call mpi_comm_free(dup2, ierr)
      call mpi_comm_free(dup, ierr)
      call mpi_keyval_free(key1, ierr)
      if (ncopy .ne. 3 .or. ndel .ne. 6 .or. nkbad .ne. 0) then
         errs = errs + 1
         print *, 'keyval callbacks: copies', ncopy, ' deletes', ndel,
     &            ' wrong extra state', nkbad
      endif

      call mpi_allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         if (toterrs .eq. 0) then
            print *, ' No Errors'
         else
            print *, ' Found ', toterrs, ' errors'
         endif
      endif
      call mpi_finalize(ierr)
      end
