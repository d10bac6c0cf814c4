! Sample Fortran 90 MPI program (use mpi).
program hellof90
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, errs
  double precision :: x, total
  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  x = rank + 0.5d0
  call MPI_Allreduce(x, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (total /= nprocs * (nprocs - 1) / 2 + 0.5d0 * nprocs) errs = errs + 1
  call MPI_Allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. errs == 0) print *, ' No Errors (F90)'
  if (rank == 0 .and. errs /= 0) print *, ' Found errors (F90)'
  call MPI_Finalize(ierr)
end program hellof90
