C     Sample Fortran 77 MPI program (include 'mpif.h').
      program hellof
      implicit none
      include 'mpif.h'
      integer ierr, rank, nprocs, token, sum, errs
      integer status(MPI_STATUS_SIZE)
      errs = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
      call mpi_sendrecv(rank, 1, MPI_INTEGER, mod(rank + 1, nprocs), 0,
     &     token, 1, MPI_INTEGER, mod(rank + nprocs - 1, nprocs), 0,
     &     MPI_COMM_WORLD, status, ierr)
      if (token .ne. mod(rank + nprocs - 1, nprocs)) errs = errs + 1
      call mpi_allreduce(rank, sum, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (sum .ne. nprocs * (nprocs - 1) / 2) errs = errs + 1
      call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (rank .eq. 0 .and. errs .eq. 0) print *, ' No Errors (F77)'
      if (rank .eq. 0 .and. errs .ne. 0) print *, ' Found errors (F77)'
      call mpi_finalize(ierr)
      end
