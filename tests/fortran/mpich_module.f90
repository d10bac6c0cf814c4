! `use mpi` accepts the programs MPICH's module accepts, since programs written against MPICH are
! what users bring (MPICH 4.0's f90 coll and profile tests): scalars where a routine takes an
! array it does not read or that has one element (MPI_ALLTOALLV/W(MPI_IN_PLACE, 0, 0,
! MPI_DATATYPE_NULL, ...) and their nonblocking forms, MPI_WAITALL on one request and one status,
! a 1-d MPI_CART_CREATE, MPI_GROUP_TRANSLATE_RANKS of one rank), the program's own profiling
! MPI_SEND/MPI_RECV beside `use mpi` calling PMPI_SEND/PMPI_RECV (MPICH's profile1f90), and
! MPI_ALLOC_MEM returning a TYPE(C_PTR). Each of these fails to compile against a module that
! declares those routines with array or INTEGER-only arguments. 2 or more ranks.
module prof_counts
  implicit none
  integer :: scalls = 0, samount = 0, rcalls = 0
end module prof_counts

subroutine mpi_send(buf, count, datatype, dest, tag, comm, ierr)
  use mpi
  use prof_counts
  implicit none
  integer :: count, datatype, dest, tag, comm, ierr
  integer :: buf(count)
  scalls = scalls + 1
  samount = samount + count
  call pmpi_send(buf, count, datatype, dest, tag, comm, ierr)
end subroutine mpi_send

subroutine mpi_recv(buf, count, datatype, src, tag, comm, status, ierr)
  use mpi
  use prof_counts
  implicit none
  integer :: count, datatype, src, tag, comm, status(MPI_STATUS_SIZE), ierr
  integer :: buf(count)
  rcalls = rcalls + 1
  call pmpi_recv(buf, count, datatype, src, tag, comm, status, ierr)
end subroutine mpi_recv

program mpich_module
  use mpi
  use prof_counts
  use, intrinsic :: iso_c_binding, only : c_ptr, c_f_pointer
  implicit none
  integer, parameter :: maxn = 512
  ! written by nonblocking collectives completed by MPI_WAITALL, which does not name it
  integer, asynchronous :: rbuf(maxn)
  integer :: rcounts(64), rdispls(64), rtypes(64), status(MPI_STATUS_SIZE), msg(1)
  integer :: ierr, rank, nprocs, errs, toterrs, i, j, req, intsize, pass, cart, coord, dim
  integer :: wgroup, cgroup, r
  logical :: period
  type(c_ptr) :: mem
  integer, pointer :: ip(:)

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs < 2 .or. 2 * nprocs * nprocs > maxn) then
    if (rank == 0) print *, 'run with 2 to 16 ranks'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Type_size(MPI_INTEGER, intsize, ierr)

  ! ---- in-place all-to-all: the send arguments are scalars (MPICH's vw_inplacef90 and
  ! nonblocking_inpf90); pass 1 blocking, pass 2 nonblocking + MPI_WAITALL of one request
  do pass = 1, 2
    rbuf = -1
    do i = 1, nprocs
      rcounts(i) = (i - 1) + rank
      rdispls(i) = (i - 1) * (2 * nprocs)
      do j = 0, rcounts(i) - 1
        rbuf(rdispls(i) + j + 1) = 100 * rank + 10 * (i - 1) + j
      end do
    end do
    if (pass == 1) then
      call MPI_Alltoallv(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL, rbuf, rcounts, rdispls, &
                         MPI_INTEGER, MPI_COMM_WORLD, ierr)
    else
      call MPI_Ialltoallv(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL, rbuf, rcounts, rdispls, &
                          MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
      call MPI_Waitall(1, req, status, ierr)
    end if
    do i = 1, nprocs
      do j = 0, rcounts(i) - 1
        if (rbuf(rdispls(i) + j + 1) /= 100 * (i - 1) + 10 * rank + j) then
          errs = errs + 1
          print *, rank, 'alltoallv pass', pass, 'block', i - 1, 'element', j, &
                   rbuf(rdispls(i) + j + 1)
        end if
      end do
    end do

    ! Alltoallw: displacements in bytes, and the send types a scalar too
    rbuf = -1
    do i = 1, nprocs
      rcounts(i) = (i - 1) + rank
      rdispls(i) = (i - 1) * (2 * nprocs) * intsize
      rtypes(i) = MPI_INTEGER
      do j = 0, rcounts(i) - 1
        rbuf(rdispls(i) / intsize + j + 1) = 100 * rank + 10 * (i - 1) + j
      end do
    end do
    if (pass == 1) then
      call MPI_Alltoallw(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL, rbuf, rcounts, rdispls, rtypes, &
                         MPI_COMM_WORLD, ierr)
    else
      call MPI_Ialltoallw(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL, rbuf, rcounts, rdispls, rtypes, &
                          MPI_COMM_WORLD, req, ierr)
      call MPI_Waitall(1, req, MPI_STATUSES_IGNORE, ierr)
    end if
    do i = 1, nprocs
      do j = 0, rcounts(i) - 1
        if (rbuf(rdispls(i) / intsize + j + 1) /= 100 * (i - 1) + 10 * rank + j) then
          errs = errs + 1
          print *, rank, 'alltoallw pass', pass, 'block', i - 1, 'element', j
        end if
      end do
    end do
  end do

  ! ---- one-dimensional topology and one-rank translation, with scalars for the arrays
  call MPI_Cart_create(MPI_COMM_WORLD, 1, nprocs, .true., .false., cart, ierr)
  call MPI_Cart_coords(cart, rank, 1, coord, ierr)
  call MPI_Cart_get(cart, 1, dim, period, coord, ierr)
  if (dim /= nprocs .or. .not. period .or. coord /= rank) then
    errs = errs + 1
    print *, 'cart', dim, period, coord
  end if
  call MPI_Comm_group(MPI_COMM_WORLD, wgroup, ierr)
  call MPI_Comm_group(cart, cgroup, ierr)
  call MPI_Group_translate_ranks(wgroup, 1, rank, cgroup, r, ierr)
  if (r /= rank) errs = errs + 1
  call MPI_Group_free(wgroup, ierr)
  call MPI_Group_free(cgroup, ierr)
  call MPI_Comm_free(cart, ierr)

  ! ---- memory from MPI as a C pointer
  call MPI_Alloc_mem(int(10 * intsize, MPI_ADDRESS_KIND), MPI_INFO_NULL, mem, ierr)
  call c_f_pointer(mem, ip, [10])
  ip = 7
  if (sum(ip) /= 70) errs = errs + 1
  call MPI_Free_mem(ip(1), ierr)

  ! ---- the program's own MPI_SEND / MPI_RECV (profiling): rank 0 to rank 1
  if (rank == 0) then
    msg(1) = 3
    call MPI_Send(msg, 1, MPI_INTEGER, 1, 0, MPI_COMM_WORLD, ierr)
    if (scalls /= 1 .or. samount /= 1) then
      errs = errs + 1
      print *, 'profiling MPI_SEND not called:', scalls, samount
    end if
  else if (rank == 1) then
    msg(1) = 0
    call MPI_Recv(msg, 1, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, status, ierr)
    if (msg(1) /= 3 .or. rcalls /= 1) then
      errs = errs + 1
      print *, 'profiling MPI_RECV:', rcalls, ', received', msg(1)
    end if
  end if

  call MPI_Allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (toterrs == 0) then
      print *, ' No Errors'
    else
      print *, ' Found ', toterrs, ' errors'
    end if
  end if
  call MPI_Finalize(ierr)
end program mpich_module
