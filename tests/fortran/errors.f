C     Error handling through mpif.h: MPI_ERRORS_RETURN gives IERROR back, error classes and
C     blank-padded error strings, a user error handler written in Fortran (called with the
C     communicator and the code by reference), MPI_Comm_call_errhandler, user error classes,
C     codes and strings, MPI_Errhandler_free. Any number of ranks.
      subroutine myhandler(comm, code)
      implicit none
      include 'mpif.h'
      integer comm, code
      integer ncalls, lastcode, lastcomm
      common /hcount/ ncalls, lastcode, lastcomm
      ncalls = ncalls + 1
      lastcode = code
      lastcomm = comm
      end

      program errors
      implicit none
      include 'mpif.h'
      integer ierr, rank, nprocs, errs, toterrs, cls, eh, eh2, dup
      integer ncalls, lastcode, lastcomm, newcls, newcode, resultlen
      integer buf(4)
      character*(MPI_MAX_ERROR_STRING) msg
      character*20 short
      common /hcount/ ncalls, lastcode, lastcomm
      external myhandler

      errs = 0
      ncalls = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
      call mpi_comm_dup(MPI_COMM_WORLD, dup, ierr)

C     MPI_ERRORS_RETURN: an invalid rank comes back as MPI_ERR_RANK
      call mpi_comm_set_errhandler(dup, MPI_ERRORS_RETURN, ierr)
      call mpi_comm_get_errhandler(dup, eh, ierr)
      if (eh .ne. MPI_ERRORS_RETURN) errs = errs + 1
      call mpi_send(buf, 1, MPI_INTEGER, nprocs + 5, 0, dup, ierr)
      if (ierr .eq. MPI_SUCCESS) then
         errs = errs + 1
         print *, 'send to an invalid rank succeeded'
      endif
      call mpi_error_class(ierr, cls, ierr)
      if (cls .ne. MPI_ERR_RANK) then
         errs = errs + 1
         print *, 'class', cls, 'not MPI_ERR_RANK'
      endif
      call mpi_send(buf, -1, MPI_INTEGER, 0, 0, dup, ierr)
      call mpi_error_class(ierr, cls, ierr)
      if (cls .ne. MPI_ERR_COUNT) errs = errs + 1
      call mpi_send(buf, 1, MPI_DATATYPE_NULL, 0, 0, dup, ierr)
      call mpi_error_class(ierr, cls, ierr)
      if (cls .ne. MPI_ERR_TYPE) errs = errs + 1

C     error strings: non-empty, blank-padded; truncated into a short CHARACTER
      msg = 'x'
      call mpi_error_string(MPI_ERR_RANK, msg, resultlen, ierr)
      if (resultlen .le. 0 .or. resultlen .gt. MPI_MAX_ERROR_STRING)
     &     errs = errs + 1
      if (msg(resultlen + 1:) .ne. ' ') errs = errs + 1
      if (index(msg(1:resultlen), char(0)) .ne. 0) errs = errs + 1
      short = 'yyyyyyyyyyyyyyyyyyyy'
      call mpi_error_string(MPI_ERR_RANK, short, resultlen, ierr)
      if (short .ne. msg(1:20)) errs = errs + 1

C     a user handler in Fortran
      call mpi_comm_create_errhandler(myhandler, eh, ierr)
      call mpi_comm_set_errhandler(dup, eh, ierr)
      call mpi_send(buf, 1, MPI_INTEGER, nprocs + 5, 0, dup, ierr)
      if (ncalls .ne. 1) then
         errs = errs + 1
         print *, 'handler called', ncalls, 'times'
      endif
      if (lastcomm .ne. dup) errs = errs + 1
      call mpi_error_class(lastcode, cls, ierr)
      if (cls .ne. MPI_ERR_RANK) errs = errs + 1
      call mpi_comm_call_errhandler(dup, MPI_ERR_OTHER, ierr)
      if (ncalls .ne. 2 .or. lastcode .ne. MPI_ERR_OTHER)
     &     errs = errs + 1
      call mpi_comm_get_errhandler(dup, eh2, ierr)
      if (eh2 .ne. eh) errs = errs + 1
      call mpi_errhandler_free(eh2, ierr)
      call mpi_errhandler_free(eh, ierr)
      if (eh .ne. MPI_ERRHANDLER_NULL) errs = errs + 1

C     user classes, codes and strings
      call mpi_add_error_class(newcls, ierr)
      call mpi_add_error_code(newcls, newcode, ierr)
      call mpi_add_error_string(newcode, 'my error   ', ierr)
      call mpi_error_string(newcode, msg, resultlen, ierr)
      if (msg .ne. 'my error' .or. resultlen .ne. 8) then
         errs = errs + 1
         print *, 'user string "', msg(1:30), '"', resultlen
      endif
      call mpi_error_class(newcode, cls, ierr)
      if (cls .ne. newcls) errs = errs + 1
      call mpi_comm_call_errhandler(dup, newcode, ierr)
      if (ncalls .ne. 3 .or. lastcode .ne. newcode) errs = errs + 1

      call mpi_comm_free(dup, ierr)
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
