! Communicators, groups, topologies and attributes through `use mpi`: Comm_dup/split/compare/
! create, names (CHARACTER results blank-padded), group calls, intercommunicators and
! Intercomm_merge (LOGICAL high), Cartesian topologies (LOGICAL periods/remain_dims), graph
! topologies, keyvals with Fortran copy/delete callbacks and the predefined MPI_COMM_DUP_FN,
! predefined attributes returned by value (MPI_TAG_UB). Any number of ranks.
module comm_cb
  implicit none
  integer :: ncopies = 0, ndeletes = 0
contains
  subroutine copy_fn(oldcomm, keyval, extra_state, attr_in, attr_out, flag, ierr)
    use mpi
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attr_in, attr_out
    logical :: flag
    ncopies = ncopies + 1
    attr_out = attr_in + extra_state   ! extra_state is 1000: the copy is distinguishable
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine copy_fn
  subroutine delete_fn(comm, keyval, attr, extra_state, ierr)
    use mpi
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: attr, extra_state
    ndeletes = ndeletes + 1
    ierr = MPI_SUCCESS
  end subroutine delete_fn
end module comm_cb

program comm
  use mpi
  use comm_cb
  implicit none
  integer :: ierr, rank, nprocs, errs, toterrs, i
  integer :: dup, half, result, grp, wgrp, sub, subcomm, inter, merged, rsize
  integer :: ranks(64), ranks2(64), ranges(3, 1), keyval, keyval2, cart, sub1
  integer :: dims(2), coords(2), src, dst, ndims, status, cdims(2), newrank
  logical :: periods(2), rperiods(2), remain(2), flag
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  character(len=MPI_MAX_OBJECT_NAME) :: name
  integer :: namelen
  integer :: index(64), edges(128), nneighbors, neighbors(4), graph

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! ---- names: predefined and user-set, blank padding
  name = 'garbage garbage garbage'
  call MPI_Comm_get_name(MPI_COMM_WORLD, name, namelen, ierr)
  if (name /= 'MPI_COMM_WORLD' .or. namelen /= 14) then
    errs = errs + 1; print *, 'world name "', trim(name), '"', namelen
  end if
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_set_name(dup, 'my dup    ', ierr)     ! trailing blanks are not part of it
  call MPI_Comm_get_name(dup, name, namelen, ierr)
  if (name /= 'my dup' .or. namelen /= 6 .or. name(7:) /= ' ') then
    errs = errs + 1; print *, 'dup name "', name(1:10), '"', namelen
  end if
  call MPI_Comm_compare(MPI_COMM_WORLD, dup, result, ierr)
  if (result /= MPI_CONGRUENT) errs = errs + 1
  call MPI_Comm_compare(dup, dup, result, ierr)
  if (result /= MPI_IDENT) errs = errs + 1

  ! ---- split into even/odd, reversed key
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, half, ierr)
  call MPI_Comm_size(half, rsize, ierr)
  if (rsize /= (nprocs + 1 - mod(rank, 2)) / 2) errs = errs + 1
  call MPI_Comm_rank(half, i, ierr)
  if (i /= (nprocs - 1 - rank) / 2) errs = errs + 1   ! same-parity ranks above me come first
  call MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, sub, ierr)
  if (sub /= MPI_COMM_NULL) errs = errs + 1

  ! ---- groups: incl / excl / range_incl / translate_ranks / compare; Comm_create
  call MPI_Comm_group(MPI_COMM_WORLD, wgrp, ierr)
  do i = 1, nprocs
    ranks(i) = nprocs - i          ! reversed
  end do
  call MPI_Group_incl(wgrp, nprocs, ranks, grp, ierr)
  call MPI_Group_translate_ranks(grp, nprocs, [(i, i = 0, nprocs - 1)], wgrp, ranks2, ierr)
  do i = 1, nprocs
    if (ranks2(i) /= nprocs - i) errs = errs + 1
  end do
  call MPI_Group_compare(grp, wgrp, result, ierr)
  if (nprocs > 1 .and. result /= MPI_SIMILAR) errs = errs + 1
  call MPI_Group_free(grp, ierr)
  if (grp /= MPI_GROUP_NULL) errs = errs + 1
  ranges(:, 1) = [0, nprocs - 1, 2]              ! even ranks
  call MPI_Group_range_incl(wgrp, 1, ranges, grp, ierr)
  call MPI_Group_size(grp, rsize, ierr)
  if (rsize /= (nprocs + 1) / 2) errs = errs + 1
  call MPI_Comm_create(MPI_COMM_WORLD, grp, sub, ierr)
  if ((mod(rank, 2) == 0) .neqv. (sub /= MPI_COMM_NULL)) errs = errs + 1
  if (sub /= MPI_COMM_NULL) call MPI_Comm_free(sub, ierr)
  call MPI_Group_excl(wgrp, 1, [0], sub1, ierr)
  call MPI_Group_rank(sub1, i, ierr)
  if ((rank == 0 .and. i /= MPI_UNDEFINED) .or. (rank > 0 .and. i /= rank - 1)) errs = errs + 1
  call MPI_Group_free(sub1, ierr)
  call MPI_Group_free(grp, ierr)
  call MPI_Group_free(wgrp, ierr)

  ! ---- intercommunicator between the halves (needs 2 ranks), then merge (LOGICAL high)
  if (nprocs >= 2) then
    ! each half's leader (rank 0 in half) is its highest world rank
    if (mod(rank, 2) == 0) then
      i = nprocs - 1 - mod(nprocs, 2)        ! highest odd rank
    else
      i = nprocs - 1 - mod(nprocs - 1, 2)    ! highest even rank
    end if
    call MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, i, 7, inter, ierr)
    call MPI_Comm_test_inter(inter, flag, ierr)
    if (.not. flag) errs = errs + 1
    call MPI_Comm_remote_size(inter, rsize, ierr)
    if (rsize /= nprocs / 2 + mod(nprocs, 2) * mod(rank, 2)) errs = errs + 1
    call MPI_Intercomm_merge(inter, mod(rank, 2) == 1, merged, ierr)
    call MPI_Comm_rank(merged, i, ierr)
    ! the low group (even ranks) comes first
    if (mod(rank, 2) == 0 .and. i >= (nprocs + 1) / 2) errs = errs + 1
    if (mod(rank, 2) == 1 .and. i < (nprocs + 1) / 2) errs = errs + 1
    call MPI_Comm_test_inter(merged, flag, ierr)
    if (flag) errs = errs + 1
    call MPI_Comm_free(merged, ierr)
    call MPI_Comm_free(inter, ierr)
  end if
  call MPI_Comm_free(half, ierr)

  ! ---- Cartesian topology: periodic in dim 1 only
  dims = 0
  call MPI_Dims_create(nprocs, 2, dims, ierr)
  if (dims(1) * dims(2) /= nprocs .or. dims(1) < dims(2)) errs = errs + 1
  periods = [.true., .false.]
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call MPI_Topo_test(cart, status, ierr)
  if (status /= MPI_CART) errs = errs + 1
  call MPI_Cartdim_get(cart, ndims, ierr)
  if (ndims /= 2) errs = errs + 1
  rperiods = [.false., .true.]
  call MPI_Cart_get(cart, 2, cdims, rperiods, coords, ierr)
  if (any(cdims /= dims) .or. .not. rperiods(1) .or. rperiods(2)) then
    errs = errs + 1; print *, 'cart_get', cdims, rperiods
  end if
  call MPI_Cart_rank(cart, coords, i, ierr)
  if (i /= rank) errs = errs + 1
  call MPI_Cart_coords(cart, rank, 2, coords, ierr)
  if (coords(1) /= rank / dims(2) .or. coords(2) /= mod(rank, dims(2))) errs = errs + 1
  call MPI_Cart_shift(cart, 0, 1, src, dst, ierr)
  if (dst /= mod(coords(1) + 1, dims(1)) * dims(2) + coords(2)) errs = errs + 1
  call MPI_Cart_shift(cart, 1, 1, src, dst, ierr)
  if (coords(2) == dims(2) - 1 .and. dst /= MPI_PROC_NULL) errs = errs + 1
  remain = [.false., .true.]
  call MPI_Cart_sub(cart, remain, sub, ierr)
  call MPI_Comm_size(sub, rsize, ierr)
  if (rsize /= dims(2)) errs = errs + 1
  call MPI_Comm_free(sub, ierr)
  call MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, newrank, ierr)
  if (newrank < 0 .or. newrank >= nprocs) errs = errs + 1
  call MPI_Comm_free(cart, ierr)

  ! ---- graph topology: a ring
  do i = 1, nprocs
    index(i) = 2 * i
    edges(2 * i - 1) = mod(i - 2 + nprocs, nprocs)
    edges(2 * i) = mod(i, nprocs)
  end do
  call MPI_Graph_create(MPI_COMM_WORLD, nprocs, index, edges, .false., graph, ierr)
  call MPI_Graph_neighbors_count(graph, rank, nneighbors, ierr)
  if (nneighbors /= 2) errs = errs + 1
  call MPI_Graph_neighbors(graph, rank, 2, neighbors, ierr)
  if (neighbors(1) /= mod(rank - 1 + nprocs, nprocs) .or. neighbors(2) /= mod(rank + 1, nprocs)) &
    errs = errs + 1
  call MPI_Comm_free(graph, ierr)

  ! ---- attributes: predefined by value, Fortran callbacks on dup and free
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767) then
    errs = errs + 1; print *, 'MPI_TAG_UB', flag, val
  end if
  extra = 1000
  call MPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, keyval2, extra, ierr)
  val = 42
  call MPI_Comm_set_attr(dup, keyval, val, ierr)
  val = 43
  call MPI_Comm_set_attr(dup, keyval2, val, ierr)
  call MPI_Comm_get_attr(dup, keyval, val, flag, ierr)
  if (.not. flag .or. val /= 42) errs = errs + 1
  call MPI_Comm_dup(dup, sub, ierr)
  if (ncopies /= 1) errs = errs + 1
  call MPI_Comm_get_attr(sub, keyval, val, flag, ierr)
  if (.not. flag .or. val /= 1042) then
    errs = errs + 1; print *, 'copied attribute', flag, val
  end if
  call MPI_Comm_get_attr(sub, keyval2, val, flag, ierr)
  if (.not. flag .or. val /= 43) errs = errs + 1
  call MPI_Comm_free(sub, ierr)
  if (ndeletes /= 1) errs = errs + 1
  call MPI_Comm_delete_attr(dup, keyval, ierr)
  if (ndeletes /= 2) errs = errs + 1
  call MPI_Comm_get_attr(dup, keyval, val, flag, ierr)
  if (flag) errs = errs + 1
  call MPI_Comm_free_keyval(keyval, ierr)
  if (keyval /= MPI_KEYVAL_INVALID) errs = errs + 1
  call MPI_Comm_free_keyval(keyval2, ierr)
  call MPI_Comm_free(dup, ierr)
  if (dup /= MPI_COMM_NULL) errs = errs + 1

  call MPI_Allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (toterrs == 0) then
      print *, ' No Errors'
    else
      print *, ' Found ', toterrs, ' errors'
    end if
  end if
  call MPI_Finalize(ierr)
end program comm
