! Derived datatypes through `use mpi`: contiguous, vector, hvector, indexed, indexed_block,
! create_struct with MPI_Get_address and MPI_BOTTOM, subarray (Fortran order), resized, dup;
! extents and sizes (INTEGER(KIND=MPI_ADDRESS_KIND)), Pack/Unpack, names, envelope/contents,
! MPI_Type_create_f90_*, MPI_Type_match_size, MPI_SIZEOF, MPI_Aint_add/diff. Sends go around a
! ring (or to self).
program types
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, errs, toterrs, i, j, right, left
  integer :: tvec, thvec, tind, tblk, tstruct, tsub, tres, tdup, tcont, t
  integer :: a(10, 10), b(10, 10), blens(3), displs(3), types3(3)
  integer(kind=MPI_ADDRESS_KIND) :: lb, extent, addrs(3), base, adispls(3)
  integer :: isz, status(MPI_STATUS_SIZE), count
  double precision :: d(5), d2(5)
  integer :: iv(3), iv2(3)
  character(len=8) :: str, str2
  ! accessed by MPI through MPI_BOTTOM + absolute addresses, i.e. in calls that do not name them:
  ! the optimizer must not keep them in registers (MPI 4.0 §19.1.17)
  volatile :: d, d2, iv, iv2, str, str2
  character(len=MPI_MAX_OBJECT_NAME) :: name
  integer :: namelen, ni, na, nd, combiner, ints(10), dts(10)
  integer(kind=MPI_ADDRESS_KIND) :: aints(10)
  character(len=100) :: packbuf
  integer :: pos, psize
  real(kind=8) :: x8
  integer(kind=2) :: i2
  complex :: cx

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank - 1 + nprocs, nprocs)
  do j = 1, 10
    do i = 1, 10
      a(i, j) = rank * 10000 + i * 100 + j
    end do
  end do

  ! ---- vector: row 3 of a (stride 10 in column-major order)
  call MPI_Type_vector(10, 1, 10, MPI_INTEGER, tvec, ierr)
  call MPI_Type_commit(tvec, ierr)
  call MPI_Type_size(tvec, isz, ierr)
  if (isz /= 40) errs = errs + 1
  call MPI_Type_get_extent(tvec, lb, extent, ierr)
  if (lb /= 0 .or. extent /= 9 * 40 + 4) errs = errs + 1
  b = -1
  call MPI_Sendrecv(a(3, 1), 1, tvec, right, 1, b(5, 1), 1, tvec, left, 1, MPI_COMM_WORLD, &
                    status, ierr)
  do j = 1, 10
    if (b(5, j) /= left * 10000 + 300 + j) errs = errs + 1
  end do
  if (b(4, 1) /= -1) errs = errs + 1
  call MPI_Get_count(status, tvec, count, ierr)
  if (count /= 1) errs = errs + 1
  call MPI_Get_elements(status, tvec, count, ierr)
  if (count /= 10) errs = errs + 1

  ! ---- hvector of the vector (byte stride): rows 1 and 2
  call MPI_Type_create_hvector(2, 1, 4_MPI_ADDRESS_KIND, tvec, thvec, ierr)
  call MPI_Type_commit(thvec, ierr)
  b = -1
  call MPI_Sendrecv(a, 1, thvec, right, 2, b, 1, thvec, left, 2, MPI_COMM_WORLD, status, ierr)
  do j = 1, 10
    if (b(1, j) /= left * 10000 + 100 + j .or. b(2, j) /= left * 10000 + 200 + j) errs = errs + 1
  end do

  ! ---- indexed and indexed_block: diagonal elements
  blens = [1, 2, 3]
  displs = [0, 11, 33]
  call MPI_Type_indexed(3, blens, displs, MPI_INTEGER, tind, ierr)
  call MPI_Type_commit(tind, ierr)
  call MPI_Type_size(tind, isz, ierr)
  if (isz /= 24) errs = errs + 1
  b = -1
  call MPI_Sendrecv(a, 1, tind, right, 3, b, 1, tind, left, 3, MPI_COMM_WORLD, status, ierr)
  if (b(1, 1) /= left * 10000 + 101 .or. b(2, 2) /= left * 10000 + 202 .or. &
      b(3, 2) /= left * 10000 + 302 .or. b(6, 4) /= left * 10000 + 604 .or. b(2, 1) /= -1) &
    errs = errs + 1
  call MPI_Type_create_indexed_block(3, 2, displs, MPI_INTEGER, tblk, ierr)
  call MPI_Type_commit(tblk, ierr)
  call MPI_Type_size(tblk, isz, ierr)
  if (isz /= 24) errs = errs + 1

  ! ---- struct of absolute addresses, sent from MPI_BOTTOM
  d = [(rank + i * 0.25d0, i = 1, 5)]
  iv = [rank, rank + 1, rank + 2]
  str = 'abcdefgh'
  call MPI_Get_address(d, addrs(1), ierr)
  call MPI_Get_address(iv, addrs(2), ierr)
  call MPI_Get_address(str, addrs(3), ierr)
  blens = [5, 3, 8]
  types3 = [MPI_DOUBLE_PRECISION, MPI_INTEGER, MPI_CHARACTER]
  call MPI_Type_create_struct(3, blens, addrs, types3, tstruct, ierr)
  call MPI_Type_commit(tstruct, ierr)
  d2 = 0; iv2 = 0; str2 = ' '
  call MPI_Get_address(d2, adispls(1), ierr)
  call MPI_Get_address(iv2, adispls(2), ierr)
  call MPI_Get_address(str2, adispls(3), ierr)
  call MPI_Type_create_struct(3, blens, adispls, types3, t, ierr)
  call MPI_Type_commit(t, ierr)
  call MPI_Sendrecv(MPI_BOTTOM, 1, tstruct, right, 4, MPI_BOTTOM, 1, t, left, 4, &
                    MPI_COMM_WORLD, status, ierr)
  if (ierr /= MPI_SUCCESS) errs = errs + 1
  do i = 1, 5
    if (d2(i) /= left + i * 0.25d0) errs = errs + 1
  end do
  if (any(iv2 /= [left, left + 1, left + 2]) .or. str2 /= 'abcdefgh') then
    errs = errs + 1; print *, 'struct from MPI_BOTTOM:', iv2, str2
  end if
  call MPI_Type_free(t, ierr)
  ! relative displacements: base address subtracted
  call MPI_Get_address(d, base, ierr)
  adispls = addrs - base
  call MPI_Type_create_struct(3, blens, adispls, types3, t, ierr)
  call MPI_Type_commit(t, ierr)
  call MPI_Type_get_envelope(t, ni, na, nd, combiner, ierr)
  if (combiner /= MPI_COMBINER_STRUCT .or. ni /= 4 .or. na /= 3 .or. nd /= 3) errs = errs + 1
  call MPI_Type_get_contents(t, 10, 10, 10, ints, aints, dts, ierr)
  if (ints(1) /= 3 .or. any(ints(2:4) /= blens) .or. any(aints(1:3) /= adispls) .or. &
      any(dts(1:3) /= types3)) errs = errs + 1
  call MPI_Type_free(t, ierr)

  ! ---- subarray, Fortran order: the 3x4 block at (2..4, 5..8)
  call MPI_Type_create_subarray(2, [10, 10], [3, 4], [1, 4], MPI_ORDER_FORTRAN, MPI_INTEGER, &
                                tsub, ierr)
  call MPI_Type_commit(tsub, ierr)
  b = -1
  call MPI_Sendrecv(a, 1, tsub, right, 5, b, 1, tsub, left, 5, MPI_COMM_WORLD, status, ierr)
  do j = 5, 8
    do i = 2, 4
      if (b(i, j) /= left * 10000 + i * 100 + j) errs = errs + 1
    end do
  end do
  if (b(1, 5) /= -1 .or. b(2, 9) /= -1) errs = errs + 1

  ! ---- resized, contiguous, dup
  call MPI_Type_create_resized(MPI_INTEGER, 0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND, tres, ierr)
  call MPI_Type_commit(tres, ierr)
  call MPI_Type_get_extent(tres, lb, extent, ierr)
  if (extent /= 8) errs = errs + 1
  call MPI_Type_contiguous(5, tres, tcont, ierr)
  call MPI_Type_commit(tcont, ierr)
  call MPI_Type_size(tcont, isz, ierr)
  if (isz /= 20) errs = errs + 1
  call MPI_Type_dup(tcont, tdup, ierr)
  call MPI_Type_get_true_extent(tdup, lb, extent, ierr)
  if (lb /= 0 .or. extent /= 36) errs = errs + 1

  ! ---- names
  name = 'x'
  call MPI_Type_get_name(MPI_INTEGER, name, namelen, ierr)
  if (name /= 'MPI_INTEGER' .or. namelen /= 11) then
    errs = errs + 1; print *, 'type name "', trim(name), '"'
  end if
  call MPI_Type_get_name(MPI_DOUBLE_PRECISION, name, namelen, ierr)
  if (name /= 'MPI_DOUBLE_PRECISION') errs = errs + 1
  call MPI_Type_set_name(tvec, 'row', ierr)
  call MPI_Type_get_name(tvec, name, namelen, ierr)
  if (name /= 'row' .or. namelen /= 3) errs = errs + 1

  ! ---- Pack / Unpack
  call MPI_Pack_size(3, MPI_INTEGER, MPI_COMM_WORLD, psize, ierr)
  if (psize < 12) errs = errs + 1
  pos = 0
  call MPI_Pack(iv, 3, MPI_INTEGER, packbuf, 100, pos, MPI_COMM_WORLD, ierr)
  call MPI_Pack(d, 2, MPI_DOUBLE_PRECISION, packbuf, 100, pos, MPI_COMM_WORLD, ierr)
  if (pos /= 28) errs = errs + 1
  iv2 = 0; d2 = 0
  pos = 0
  call MPI_Unpack(packbuf, 100, pos, iv2, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Unpack(packbuf, 100, pos, d2, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (any(iv2 /= iv) .or. d2(1) /= d(1) .or. d2(2) /= d(2)) errs = errs + 1

  ! ---- Fortran 90 parameterized types, match_size, MPI_SIZEOF
  call MPI_Type_create_f90_integer(4, t, ierr)      ! 4 digits: INTEGER(KIND=2)
  call MPI_Type_size(t, isz, ierr)
  if (ierr /= MPI_SUCCESS .or. isz /= 2) errs = errs + 1
  call MPI_Type_create_f90_real(15, 300, t, ierr)   ! double precision
  call MPI_Type_size(t, isz, ierr)
  if (ierr /= MPI_SUCCESS .or. isz /= 8) errs = errs + 1
  call MPI_Type_create_f90_complex(6, 30, t, ierr)
  call MPI_Type_size(t, isz, ierr)
  if (ierr /= MPI_SUCCESS .or. isz /= 8) errs = errs + 1
  call MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, t, ierr)
  call MPI_Type_size(t, isz, ierr)
  if (isz /= 8) errs = errs + 1
  call MPI_Sizeof(x8, isz, ierr)
  if (isz /= 8) errs = errs + 1
  call MPI_Sizeof(i2, isz, ierr)
  if (isz /= 2) errs = errs + 1
  call MPI_Sizeof(cx, isz, ierr)
  if (isz /= 8) errs = errs + 1
  call MPI_Sizeof(a(1, 1), isz, ierr)
  if (isz /= 4) errs = errs + 1
  ! MPI_Aint_add / MPI_Aint_diff are functions of the module
  call MPI_Get_address(a(1, 1), lb, ierr)
  call MPI_Get_address(a(1, 2), extent, ierr)
  if (MPI_Aint_diff(extent, lb) /= 40 .or. MPI_Aint_add(lb, 40_MPI_ADDRESS_KIND) /= extent) &
    errs = errs + 1

  call MPI_Type_free(tvec, ierr)
  if (tvec /= MPI_DATATYPE_NULL) errs = errs + 1
  call MPI_Type_free(thvec, ierr)
  call MPI_Type_free(tind, ierr)
  call MPI_Type_free(tblk, ierr)
  call MPI_Type_free(tstruct, ierr)
  call MPI_Type_free(tsub, ierr)
  call MPI_Type_free(tres, ierr)
  call MPI_Type_free(tcont, ierr)
  call MPI_Type_free(tdup, ierr)

  call MPI_Allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (toterrs == 0) then
      print *, ' No Errors'
    else
      print *, ' Found ', toterrs, ' errors'
    end if
  end if
  call MPI_Finalize(ierr)
end program types
