! CHARACTER and LOGICAL arguments through `use mpi`: info keys and values (leading and trailing
! blanks dropped, results blank-padded and truncated, Info_get_string lengths), the
! processor name, library version, MPI_Get_version, Initialized/Finalized flags, MPI_Wtime/Wtick,
! thread level, Comm_set_info/get_info. Any number of ranks.
program strings
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, errs, toterrs, info, info2, nkeys, vlen, buflen, i
  integer :: provided, major, minor, resultlen
  logical :: flag
  character(len=MPI_MAX_INFO_KEY) :: key
  character(len=MPI_MAX_INFO_VAL) :: val
  character(len=4) :: shortval
  character(len=MPI_MAX_PROCESSOR_NAME) :: pname
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
  double precision :: t0, t1

  errs = 0
  call MPI_Initialized(flag, ierr)
  if (flag) errs = errs + 1
  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  if (provided < MPI_THREAD_SINGLE .or. provided > MPI_THREAD_MULTIPLE) errs = errs + 1
  call MPI_Initialized(flag, ierr)
  if (.not. flag) errs = errs + 1
  call MPI_Finalized(flag, ierr)
  if (flag) errs = errs + 1
  call MPI_Is_thread_main(flag, ierr)
  if (.not. flag) errs = errs + 1
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! ---- info
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, '  colour ', ' dark blue   ', ierr)
  call MPI_Info_set(info, 'size', '12345678', ierr)
  call MPI_Info_get_nkeys(info, nkeys, ierr)
  if (nkeys /= 2) errs = errs + 1
  call MPI_Info_get_nthkey(info, 0, key, ierr)
  if (key /= 'colour') then
    errs = errs + 1; print *, 'nthkey "', trim(key), '"'
  end if
  val = 'zzz'
  call MPI_Info_get(info, 'colour', MPI_MAX_INFO_VAL, val, flag, ierr)
  if (.not. flag .or. val /= 'dark blue') then
    errs = errs + 1; print *, 'info_get "', trim(val), '"', flag
  end if
  call MPI_Info_get_valuelen(info, 'colour', vlen, flag, ierr)
  if (.not. flag .or. vlen /= 9) errs = errs + 1
  val = 'zzz'
  call MPI_Info_get(info, 'size', 8, val, flag, ierr)    ! VALUELEN just fits
  if (.not. flag .or. val /= '12345678') then
    errs = errs + 1; print *, 'info_get valuelen 8 "', trim(val), '"'
  end if
  shortval = 'zzzz'
  call MPI_Info_get(info, 'size', MPI_MAX_INFO_VAL, shortval, flag, ierr)  ! CHARACTER*4
  if (shortval /= '1234') errs = errs + 1
  call MPI_Info_get(info, 'nokey', MPI_MAX_INFO_VAL, val, flag, ierr)
  if (flag) errs = errs + 1
  buflen = 0
  call MPI_Info_get_string(info, 'size', buflen, val, flag, ierr)
  if (.not. flag .or. buflen /= 8) then
    errs = errs + 1; print *, 'get_string length', buflen
  end if
  buflen = 5
  val = 'zzz'
  call MPI_Info_get_string(info, 'size', buflen, val, flag, ierr)
  if (val /= '12345' .or. buflen /= 8) errs = errs + 1
  call MPI_Info_dup(info, info2, ierr)
  call MPI_Info_delete(info2, 'colour', ierr)
  call MPI_Info_get_nkeys(info2, nkeys, ierr)
  if (nkeys /= 1) errs = errs + 1
  call MPI_Info_free(info2, ierr)
  if (info2 /= MPI_INFO_NULL) errs = errs + 1
  call MPI_Info_free(info, ierr)
  call MPI_Info_create_env(info, ierr)
  if (info == MPI_INFO_NULL) errs = errs + 1
  call MPI_Info_free(info, ierr)

  ! ---- processor name, versions
  pname = repeat('#', len(pname))
  call MPI_Get_processor_name(pname, resultlen, ierr)
  if (resultlen <= 0 .or. resultlen >= MPI_MAX_PROCESSOR_NAME) errs = errs + 1
  if (pname(resultlen + 1:) /= ' ' .or. index(pname, '#') /= 0) errs = errs + 1
  call MPI_Get_library_version(lib, resultlen, ierr)
  if (index(lib(1:resultlen), 'wanmpi') == 0 .and. index(lib(1:resultlen), 'MPI') == 0) &
    errs = errs + 1
  if (lib(resultlen + 1:) /= ' ') errs = errs + 1
  call MPI_Get_version(major, minor, ierr)
  if (major /= MPI_VERSION .or. minor /= MPI_SUBVERSION) errs = errs + 1

  ! ---- timers
  t0 = MPI_Wtime()
  do i = 1, 1000
    t1 = MPI_Wtime()
  end do
  if (t1 < t0 .or. MPI_Wtick() <= 0d0 .or. MPI_Wtick() > 1d0) errs = errs + 1

  ! ---- communicator info hints
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'mpi_assert_no_any_tag', 'true', ierr)
  call MPI_Comm_set_info(MPI_COMM_WORLD, info, ierr)
  call MPI_Info_free(info, ierr)
  call MPI_Comm_get_info(MPI_COMM_WORLD, info, ierr)
  if (info == MPI_INFO_NULL) errs = errs + 1
  call MPI_Info_free(info, ierr)

  call MPI_Allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (toterrs == 0) then
      print *, ' No Errors'
    else
      print *, ' Found ', toterrs, ' errors'
    end if
  end if
  call MPI_Finalize(ierr)
  call MPI_Finalized(flag, ierr)
  if (.not. flag) print *, 'MPI_Finalized is false after MPI_Finalize'
end program strings
