! Reductions with every Fortran predefined datatype and every op that applies to it (MPI 4.0
! §6.9.2), through `use mpi`: MPI_Allreduce, MPI_Reduce to every root, MPI_IN_PLACE, and a
! user-defined op written in Fortran. Expected values are computed serially; all inputs are small
! integers (or halves) so floating-point results are exact in any reduction order.
module rt_util
  use mpi
  implicit none
  integer, parameter :: n = 7
  integer :: errs = 0, rank, nprocs
contains
  ! v(r, i): the value rank r contributes at position i; PROD inputs are 1 or 2 so that even
  ! INTEGER(KIND=1) products over 8 ranks fit.
  integer function v(r, i)
    integer, intent(in) :: r, i
    v = mod(r * 3 + i, 5) + 1
  end function v
  integer function pv(r, i)
    integer, intent(in) :: r, i
    pv = mod(r + i, 2) + 1
  end function pv
  subroutine fail(what, op, i)
    character(len=*), intent(in) :: what, op
    integer, intent(in) :: i
    errs = errs + 1
    if (errs < 10) print *, 'rank', rank, ': wrong ', what, ' ', op, ' at', i
  end subroutine fail
end module rt_util

subroutine user_sum(invec, inoutvec, len, datatype)
  ! A Fortran user op (MPI_User_function): element-wise inoutvec = invec + 2 * inoutvec.
  implicit none
  integer :: len, datatype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = invec(i) + 2 * inoutvec(i)
  end do
end subroutine user_sum

program reduce_types
  use rt_util
  implicit none
  integer :: ierr, toterrs, i, r, k, root
  integer :: ops_i(7), ops_r(4)
  character(len=5) :: opname_i(7), opname_r(4)
  integer :: ia(n), ib(n), ie(n)
  integer(kind=1) :: i1a(n), i1b(n), i1e(n)
  integer(kind=2) :: i2a(n), i2b(n), i2e(n)
  integer(kind=4) :: i4a(n), i4b(n), i4e(n)
  integer(kind=8) :: i8a(n), i8b(n), i8e(n)
  real :: ra(n), rb(n), re(n)
  real(kind=4) :: r4a(n), r4b(n), r4e(n)
  real(kind=8) :: r8a(n), r8b(n), r8e(n)
  double precision :: da(n), db(n), de(n)
  complex :: ca(n), cb(n), ce(n)
  double complex :: za(n), zb(n), ze(n)
  logical :: la(n), lb(n), le(n)
  integer :: p2i(2, n), p2ie(2, n), p2ir(2, n)
  real :: p2r(2, n), p2re(2, n), p2rr(2, n)
  double precision :: p2d(2, n), p2de(2, n), p2dr(2, n)
  integer :: userop
  external :: user_sum

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  ops_i = [MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR]
  opname_i = ['SUM  ', 'PROD ', 'MAX  ', 'MIN  ', 'BAND ', 'BOR  ', 'BXOR ']
  ops_r = [MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN]
  opname_r = opname_i(1:4)

  ! ---- integers of every kind, every arithmetic and bitwise op
  do k = 1, 7
    do i = 1, n
      if (k == 2) then
        ia(i) = pv(rank, i)
      else
        ia(i) = v(rank, i)
      end if
      ie(i) = expected_int(k, i)
    end do
    call MPI_Allreduce(ia, ib, n, MPI_INTEGER, ops_i(k), MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) call fail('ierr INTEGER', opname_i(k), 0)
    do i = 1, n
      if (ib(i) /= ie(i)) call fail('INTEGER', opname_i(k), i)
    end do
    i1a = int(ia, 1); i2a = int(ia, 2); i4a = int(ia, 4); i8a = int(ia, 8)
    i1e = int(ie, 1); i2e = int(ie, 2); i4e = int(ie, 4); i8e = int(ie, 8)
    call MPI_Allreduce(i1a, i1b, n, MPI_INTEGER1, ops_i(k), MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(i2a, i2b, n, MPI_INTEGER2, ops_i(k), MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(i4a, i4b, n, MPI_INTEGER4, ops_i(k), MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(i8a, i8b, n, MPI_INTEGER8, ops_i(k), MPI_COMM_WORLD, ierr)
    do i = 1, n
      if (i1b(i) /= i1e(i)) call fail('INTEGER1', opname_i(k), i)
      if (i2b(i) /= i2e(i)) call fail('INTEGER2', opname_i(k), i)
      if (i4b(i) /= i4e(i)) call fail('INTEGER4', opname_i(k), i)
      if (i8b(i) /= i8e(i)) call fail('INTEGER8', opname_i(k), i)
    end do
  end do

  ! ---- reals of every kind
  do k = 1, 4
    do i = 1, n
      if (k == 2) then
        ra(i) = pv(rank, i) * 0.5
      else
        ra(i) = v(rank, i) * 0.5
      end if
    end do
    re = 0
    do i = 1, n
      re(i) = expected_real(k, i)
    end do
    r4a = ra; r8a = ra; da = ra; r4e = re; r8e = re; de = re
    call MPI_Allreduce(ra, rb, n, MPI_REAL, ops_r(k), MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(r4a, r4b, n, MPI_REAL4, ops_r(k), MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(r8a, r8b, n, MPI_REAL8, ops_r(k), MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(da, db, n, MPI_DOUBLE_PRECISION, ops_r(k), MPI_COMM_WORLD, ierr)
    do i = 1, n
      if (rb(i) /= re(i)) call fail('REAL', opname_r(k), i)
      if (r4b(i) /= r4e(i)) call fail('REAL4', opname_r(k), i)
      if (r8b(i) /= r8e(i)) call fail('REAL8', opname_r(k), i)
      if (db(i) /= de(i)) call fail('DOUBLE PRECISION', opname_r(k), i)
    end do
  end do

  ! ---- complex: SUM and PROD
  do i = 1, n
    ca(i) = cmplx(v(rank, i), -v(rank, i + 1))
    za(i) = ca(i)
  end do
  ce = 0; ze = 0
  do r = 0, nprocs - 1
    do i = 1, n
      ce(i) = ce(i) + cmplx(v(r, i), -v(r, i + 1))
    end do
  end do
  ze = ce
  call MPI_Allreduce(ca, cb, n, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(za, zb, n, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (cb(i) /= ce(i)) call fail('COMPLEX', 'SUM', i)
    if (zb(i) /= ze(i)) call fail('DOUBLE COMPLEX', 'SUM', i)
  end do
  do i = 1, n
    ca(i) = cmplx(pv(rank, i), mod(rank, 2))
    za(i) = ca(i)
  end do
  ce = 1
  do r = 0, nprocs - 1
    do i = 1, n
      ce(i) = ce(i) * cmplx(pv(r, i), mod(r, 2))
    end do
  end do
  ze = ce
  call MPI_Allreduce(ca, cb, n, MPI_COMPLEX, MPI_PROD, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(za, zb, n, MPI_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (cb(i) /= ce(i)) call fail('COMPLEX', 'PROD', i)
    if (zb(i) /= ze(i)) call fail('DOUBLE COMPLEX', 'PROD', i)
  end do

  ! ---- logical: LAND, LOR, LXOR
  do i = 1, n
    la(i) = mod(rank + i, 3) == 0
  end do
  le = .true.
  do r = 0, nprocs - 1
    do i = 1, n
      le(i) = le(i) .and. (mod(r + i, 3) == 0)
    end do
  end do
  call MPI_Allreduce(la, lb, n, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (lb(i) .neqv. le(i)) call fail('LOGICAL', 'LAND', i)
  end do
  le = .false.
  do r = 0, nprocs - 1
    do i = 1, n
      le(i) = le(i) .or. (mod(r + i, 3) == 0)
    end do
  end do
  call MPI_Allreduce(la, lb, n, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (lb(i) .neqv. le(i)) call fail('LOGICAL', 'LOR', i)
  end do
  le = .false.
  do r = 0, nprocs - 1
    do i = 1, n
      le(i) = le(i) .neqv. (mod(r + i, 3) == 0)
    end do
  end do
  call MPI_Allreduce(la, lb, n, MPI_LOGICAL, MPI_LXOR, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (lb(i) .neqv. le(i)) call fail('LOGICAL', 'LXOR', i)
  end do

  ! ---- pairs: MAXLOC / MINLOC on 2INTEGER, 2REAL, 2DOUBLE_PRECISION (ties: lowest index)
  do i = 1, n
    p2i(1, i) = mod(rank * 7 + i, 4)
    p2i(2, i) = rank
  end do
  p2r = p2i; p2d = p2i
  do k = 1, 2
    do i = 1, n
      p2ie(1, i) = p2i(1, i); p2ie(2, i) = huge(1)
      if (k == 1) p2ie(1, i) = -1
      if (k == 2) p2ie(1, i) = 99
      do r = 0, nprocs - 1
        if ((k == 1 .and. mod(r * 7 + i, 4) > p2ie(1, i)) .or. &
            (k == 2 .and. mod(r * 7 + i, 4) < p2ie(1, i))) then
          p2ie(1, i) = mod(r * 7 + i, 4); p2ie(2, i) = r
        else if (mod(r * 7 + i, 4) == p2ie(1, i)) then
          p2ie(2, i) = min(p2ie(2, i), r)
        end if
      end do
    end do
    p2re = p2ie; p2de = p2ie
    if (k == 1) then
      call MPI_Allreduce(p2i, p2ir, n, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
      call MPI_Allreduce(p2r, p2rr, n, MPI_2REAL, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
      call MPI_Allreduce(p2d, p2dr, n, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
    else
      call MPI_Allreduce(p2i, p2ir, n, MPI_2INTEGER, MPI_MINLOC, MPI_COMM_WORLD, ierr)
      call MPI_Allreduce(p2r, p2rr, n, MPI_2REAL, MPI_MINLOC, MPI_COMM_WORLD, ierr)
      call MPI_Allreduce(p2d, p2dr, n, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
    end if
    do i = 1, n
      if (any(p2ir(:, i) /= p2ie(:, i))) call fail('2INTEGER', merge('MAXLOC', 'MINLOC', k == 1), i)
      if (any(p2rr(:, i) /= p2re(:, i))) call fail('2REAL', merge('MAXLOC', 'MINLOC', k == 1), i)
      if (any(p2dr(:, i) /= p2de(:, i))) call fail('2DOUBLE_PRECISION', &
                                                   merge('MAXLOC', 'MINLOC', k == 1), i)
    end do
  end do

  ! ---- MPI_Reduce to every root, plain and with MPI_IN_PLACE at the root
  do root = 0, nprocs - 1
    do i = 1, n
      ia(i) = v(rank, i)
      ie(i) = expected_int(1, i)
    end do
    ib = -1
    call MPI_Reduce(ia, ib, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    if (rank == root) then
      do i = 1, n
        if (ib(i) /= ie(i)) call fail('Reduce INTEGER', 'SUM', i)
      end do
    end if
    da = ia
    if (rank == root) then
      call MPI_Reduce(MPI_IN_PLACE, da, n, MPI_DOUBLE_PRECISION, MPI_MAX, root, &
                      MPI_COMM_WORLD, ierr)
      do i = 1, n
        if (da(i) /= expected_int(3, i)) call fail('Reduce IN_PLACE DOUBLE', 'MAX', i)
      end do
    else
      call MPI_Reduce(da, db, n, MPI_DOUBLE_PRECISION, MPI_MAX, root, MPI_COMM_WORLD, ierr)
    end if
  end do
  ia = [(v(rank, i), i = 1, n)]
  call MPI_Allreduce(MPI_IN_PLACE, ia, n, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (ia(i) /= expected_int(4, i)) call fail('Allreduce IN_PLACE INTEGER', 'MIN', i)
  end do

  ! ---- user op (commutative) and MPI_Reduce_local
  call MPI_Op_create(user_sum, .true., userop, ierr)
  ia = [(v(rank, i), i = 1, n)]
  ib = [(i, i = 1, n)]
  call MPI_Reduce_local(ia, ib, n, MPI_INTEGER, userop, ierr)
  do i = 1, n
    if (ib(i) /= v(rank, i) + 2 * i) call fail('Reduce_local user op', 'user', i)
  end do
  ia = 1
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, userop, MPI_COMM_WORLD, ierr)
  ! any combination tree of x + 2y over nprocs ones gives an odd number >= nprocs; all ranks agree
  call MPI_Bcast(ia, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (ib(i) < nprocs .or. mod(ib(i), 2) /= 1) call fail('Allreduce user op', 'user', i)
  end do
  call MPI_Op_free(userop, ierr)
  if (userop /= MPI_OP_NULL) call fail('Op_free', 'user', 0)

  call MPI_Allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (toterrs == 0) then
      print *, ' No Errors'
    else
      print *, ' Found ', toterrs, ' errors'
    end if
  end if
  call MPI_Finalize(ierr)

contains

  integer function expected_int(k, i)
    integer, intent(in) :: k, i
    integer :: r, x
    select case (k)
    case (1); x = 0
    case (2); x = 1
    case (3); x = -huge(1)
    case (4); x = huge(1)
    case (5); x = -1
    case default; x = 0
    end select
    do r = 0, nprocs - 1
      select case (k)
      case (1); x = x + v(r, i)
      case (2); x = x * pv(r, i)
      case (3); x = max(x, v(r, i))
      case (4); x = min(x, v(r, i))
      case (5); x = iand(x, v(r, i))
      case (6); x = ior(x, v(r, i))
      case (7); x = ieor(x, v(r, i))
      end select
    end do
    expected_int = x
  end function expected_int

  real function expected_real(k, i)
    integer, intent(in) :: k, i
    integer :: r
    real :: x
    select case (k)
    case (1); x = 0
    case (2); x = 1
    case (3); x = -huge(1.0)
    case default; x = huge(1.0)
    end select
    do r = 0, nprocs - 1
      select case (k)
      case (1); x = x + v(r, i) * 0.5
      case (2); x = x * (pv(r, i) * 0.5)
      case (3); x = max(x, v(r, i) * 0.5)
      case (4); x = min(x, v(r, i) * 0.5)
      end select
    end do
    expected_real = x
  end function expected_real
end program reduce_types
