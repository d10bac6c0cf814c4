! The WAN rate attributes from Fortran (issue 12 item 1): a GridMPI program's calls through
! `use mpi`, with the values themselves (Fortran gets attribute values, not pointers):
! YAMPI_PSP_MAXRATE / YAMPI_PSP_MATB read, MATB = MAXRATE / 4 put with MPI_COMM_SET_ATTR and
! with MPI_ATTR_PUT (INTEGER), read back under both names; a negative put fails with
! MPI_ERR_ARG. Run with WANMPI_WAN_RATE=100mbit (MAXRATE 12500 Kbytes/s).
program wanrate
  use mpi
  implicit none
  integer :: ierr, rank, errs, toterrs, cls, ival
  integer(kind=MPI_ADDRESS_KIND) :: rate, matb, v
  logical :: flag

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, YAMPI_PSP_MAXRATE, rate, flag, ierr)
  if (.not. flag .or. rate /= 12500) then
    print *, 'MAXRATE', flag, rate
    errs = errs + 1
  end if
  call MPI_Comm_get_attr(MPI_COMM_WORLD, YAMPI_PSP_MATB, matb, flag, ierr)
  if (.not. flag .or. matb <= 0 .or. matb > rate) then
    print *, 'default MATB', flag, matb
    errs = errs + 1
  end if
  matb = rate / 4
  call MPI_Comm_set_attr(MPI_COMM_WORLD, YAMPI_PSP_MATB, matb, ierr)
  if (ierr /= MPI_SUCCESS) errs = errs + 1
  call MPI_Comm_get_attr(MPI_COMM_WORLD, WANMPI_MATB, v, flag, ierr)
  if (.not. flag .or. v /= rate / 4) then
    print *, 'MATB after set_attr', flag, v
    errs = errs + 1
  end if
  ival = 1000
  call MPI_Attr_put(MPI_COMM_WORLD, WANMPI_MATB, ival, ierr)
  call MPI_Attr_get(MPI_COMM_WORLD, YAMPI_PSP_MATB, ival, flag, ierr)
  if (.not. flag .or. ival /= 1000) then
    print *, 'MATB after attr_put', flag, ival
    errs = errs + 1
  end if
  v = -3
  call MPI_Comm_set_attr(MPI_COMM_WORLD, WANMPI_MATB, v, ierr)
  call MPI_Error_class(ierr, cls, ierr)
  if (cls /= MPI_ERR_ARG) then
    print *, 'negative MATB: class', cls
    errs = errs + 1
  end if
  call MPI_Allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (toterrs == 0) then
      print *, 'No Errors'
    else
      print *, 'Found', toterrs, 'errors'
    end if
  end if
  call MPI_Finalize(ierr)
end program wanrate
