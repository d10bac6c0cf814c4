! mpif.h included from a free-form source (MPI 4.0 §19.1.3: mpif.h must be valid in both forms),
! under IMPLICIT NONE, with the sentinels and typed functions it declares.
program freeform
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, errs, toterrs, status(MPI_STATUS_SIZE), x, y
  integer(kind=MPI_ADDRESS_KIND) :: a1, a2
  integer(kind=MPI_OFFSET_KIND) :: off
  double precision :: t

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  t = MPI_Wtime() + PMPI_Wtick()
  x = rank
  call MPI_Sendrecv(x, 1, MPI_INTEGER, rank, 3, y, 1, MPI_INTEGER, rank, 3, MPI_COMM_WORLD, &
                    status, ierr)
  if (y /= rank .or. status(MPI_TAG) /= 3 .or. status(MPI_SOURCE) /= rank) errs = errs + 1
  call MPI_Get_address(x, a1, ierr)
  call MPI_Get_address(y, a2, ierr)
  if (a1 == a2) errs = errs + 1
  off = MPI_DISPLACEMENT_CURRENT
  if (off >= 0) errs = errs + 1
  if (MPI_SOURCE < 1 .or. MPI_TAG < 1 .or. MPI_ERROR < 1 .or. MPI_SOURCE > MPI_STATUS_SIZE .or. &
      MPI_TAG > MPI_STATUS_SIZE .or. MPI_ERROR > MPI_STATUS_SIZE .or. MPI_SOURCE == MPI_TAG) &
    errs = errs + 1
  if (MPI_ADDRESS_KIND < 8 .or. MPI_OFFSET_KIND < 8) errs = errs + 1
  call MPI_Allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (toterrs == 0) then
      print *, ' No Errors'
    else
      print *, ' Found ', toterrs, ' errors'
    end if
  end if
  call MPI_Finalize(ierr)
end program freeform
