! Mixed-language handles: a Fortran program passes INTEGER handles (communicator, datatype, user
! op, info, group) and a status to C (mixed_c.c), which converts them with MPI_X_f2c and returns
! C objects (a communicator, a request, a status) converted with MPI_X_c2f / MPI_Status_c2f;
! attributes set in one language and read in the other.
subroutine triple(invec, inoutvec, len, datatype)
  implicit none
  integer :: len, datatype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = invec(i) + 2 * inoutvec(i)
  end do
end subroutine triple

program mixed
  use mpi
  implicit none
  interface
    integer(c_int) function c_side(comm, type, op, status, info, group, newcomm, newreq, &
                                   cstatus) bind(C, name='c_side')
      use, intrinsic :: iso_c_binding, only : c_int
      integer :: comm, type, op, status(*), info, group, newcomm, newreq, cstatus(*)
    end function c_side
    integer(c_int) function c_attrs(comm, keyval, expected, cptr) bind(C, name='c_attrs')
      use, intrinsic :: iso_c_binding, only : c_int
      import :: MPI_ADDRESS_KIND
      integer :: comm, keyval
      integer(kind=MPI_ADDRESS_KIND) :: expected, cptr
    end function c_attrs
  end interface
  external :: triple
  integer :: ierr, rank, nprocs, errs, toterrs, dup, vec, op, info, group, newcomm, newreq
  integer :: status(MPI_STATUS_SIZE), cstatus(MPI_STATUS_SIZE), buf(2), r, val, cnt, rsize
  integer :: keyval
  integer(kind=MPI_ADDRESS_KIND) :: aval, cptr, extra
  logical :: flag

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Type_contiguous(3, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  call MPI_Op_create(triple, .true., op, ierr)
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'from', 'Fortran', ierr)
  call MPI_Comm_group(MPI_COMM_WORLD, group, ierr)
  call MPI_Sendrecv([1, 2], 2, MPI_INTEGER, rank, 5, buf, 2, MPI_INTEGER, rank, 5, dup, &
                    status, ierr)

  errs = errs + c_side(dup, vec, op, status, info, group, newcomm, newreq, cstatus)

  if (cstatus(MPI_TAG) /= 77 .or. cstatus(MPI_SOURCE) /= rank) errs = errs + 1
  call MPI_Get_count(cstatus, MPI_INTEGER, cnt, ierr)
  if (cnt /= 2) errs = errs + 1
  call MPI_Comm_size(newcomm, rsize, ierr)
  if (rsize /= nprocs) errs = errs + 1
  call MPI_Comm_rank(newcomm, r, ierr)
  if (r /= nprocs - 1 - rank) errs = errs + 1
  call MPI_Recv(val, 1, MPI_INTEGER, rank, 9, dup, status, ierr)
  if (val /= 1000 + rank) errs = errs + 1
  call MPI_Wait(newreq, MPI_STATUS_IGNORE, ierr)
  if (newreq /= MPI_REQUEST_NULL) errs = errs + 1

  ! attributes: Fortran sets, C reads a pointer to the value; C sets a pointer, Fortran reads
  ! its address; predefined ones read by value in Fortran
  extra = 0
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, keyval, extra, ierr)
  aval = 5555
  call MPI_Comm_set_attr(dup, keyval, aval, ierr)
  call MPI_Comm_get_attr(dup, keyval, aval, flag, ierr)
  if (.not. flag .or. aval /= 5555) errs = errs + 1
  aval = 5555
  errs = errs + c_attrs(dup, keyval, aval, cptr)
  call MPI_Comm_get_attr(dup, keyval, aval, flag, ierr)
  if (.not. flag .or. aval /= cptr) errs = errs + 1
  call MPI_Comm_free_keyval(keyval, ierr)

  call MPI_Comm_free(newcomm, ierr)
  call MPI_Comm_free(dup, ierr)
  call MPI_Type_free(vec, ierr)
  call MPI_Op_free(op, ierr)
  call MPI_Info_free(info, ierr)
  call MPI_Group_free(group, ierr)
  call MPI_Allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (toterrs == 0) then
      print *, ' No Errors'
    else
      print *, ' Found ', toterrs, ' errors'
    end if
  end if
  call MPI_Finalize(ierr)
end program mixed
