! Interface blocks of the hand-written Fortran bindings (fortran_runtime.cpp), pasted into the
! `mpi` module by gen_fortran.py. Each block starts with `! @function MPI_X` and is used only while
! MPI_X is in the C lists; gen_fortran.py adds the PMPI_X copy. `! @function ALWAYS` blocks are
! Fortran-only routines, always present.
! @function MPI_Init
  INTERFACE
    SUBROUTINE MPI_INIT(ierror)
      IMPLICIT NONE
      INTEGER :: ierror
    END SUBROUTINE MPI_INIT
  END INTERFACE
! @function MPI_Init_thread
  INTERFACE
    SUBROUTINE MPI_INIT_THREAD(required, provided, ierror)
      IMPLICIT NONE
      INTEGER :: required, provided
      INTEGER :: ierror
    END SUBROUTINE MPI_INIT_THREAD
  END INTERFACE
! @function MPI_Info_create_env
  INTERFACE
    SUBROUTINE MPI_INFO_CREATE_ENV(info, ierror)
      IMPLICIT NONE
      INTEGER :: info
      INTEGER :: ierror
    END SUBROUTINE MPI_INFO_CREATE_ENV
  END INTERFACE
! @function MPI_Pcontrol
  INTERFACE
    SUBROUTINE MPI_PCONTROL(level, ierror)
      IMPLICIT NONE
      INTEGER :: level
      INTEGER :: ierror
    END SUBROUTINE MPI_PCONTROL
  END INTERFACE
! @function MPI_Buffer_detach
  INTERFACE
    SUBROUTINE MPI_BUFFER_DETACH(buffer_addr, size, ierror)
      IMPLICIT NONE
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buffer_addr
      TYPE(*), DIMENSION(*) :: buffer_addr
      INTEGER :: size
      INTEGER :: ierror
    END SUBROUTINE MPI_BUFFER_DETACH
  END INTERFACE
! @function MPI_Info_get
  INTERFACE
    SUBROUTINE MPI_INFO_GET(info, key, valuelen, value, flag, ierror)
      IMPLICIT NONE
      INTEGER :: info, valuelen
      CHARACTER(LEN=*) :: key, value
      LOGICAL :: flag
      INTEGER :: ierror
    END SUBROUTINE MPI_INFO_GET
  END INTERFACE
! @function MPI_Info_get_string
  INTERFACE
    SUBROUTINE MPI_INFO_GET_STRING(info, key, buflen, value, flag, ierror)
      IMPLICIT NONE
      INTEGER :: info, buflen
      CHARACTER(LEN=*) :: key, value
      LOGICAL :: flag
      INTEGER :: ierror
    END SUBROUTINE MPI_INFO_GET_STRING
  END INTERFACE
! @function MPI_Session_get_nth_pset
  INTERFACE
    SUBROUTINE MPI_SESSION_GET_NTH_PSET(session, info, n, pset_len, pset_name, ierror)
      IMPLICIT NONE
      INTEGER :: session, info, n, pset_len
      CHARACTER(LEN=*) :: pset_name
      INTEGER :: ierror
    END SUBROUTINE MPI_SESSION_GET_NTH_PSET
  END INTERFACE
! @function MPI_Comm_create_keyval
  INTERFACE
    SUBROUTINE MPI_COMM_CREATE_KEYVAL(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, &
        extra_state, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      EXTERNAL :: comm_copy_attr_fn, comm_delete_attr_fn
      INTEGER :: comm_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
      INTEGER :: ierror
    END SUBROUTINE MPI_COMM_CREATE_KEYVAL
  END INTERFACE
! @function MPI_Comm_set_attr
  INTERFACE
    SUBROUTINE MPI_COMM_SET_ATTR(comm, comm_keyval, attribute_val, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      INTEGER :: comm, comm_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val
      INTEGER :: ierror
    END SUBROUTINE MPI_COMM_SET_ATTR
  END INTERFACE
! @function MPI_Comm_get_attr
  INTERFACE
    SUBROUTINE MPI_COMM_GET_ATTR(comm, comm_keyval, attribute_val, flag, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      INTEGER :: comm, comm_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val
      LOGICAL :: flag
      INTEGER :: ierror
    END SUBROUTINE MPI_COMM_GET_ATTR
  END INTERFACE
! @function MPI_Type_create_keyval
  INTERFACE
    SUBROUTINE MPI_TYPE_CREATE_KEYVAL(type_copy_attr_fn, type_delete_attr_fn, type_keyval, &
        extra_state, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      EXTERNAL :: type_copy_attr_fn, type_delete_attr_fn
      INTEGER :: type_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
      INTEGER :: ierror
    END SUBROUTINE MPI_TYPE_CREATE_KEYVAL
  END INTERFACE
! @function MPI_Type_set_attr
  INTERFACE
    SUBROUTINE MPI_TYPE_SET_ATTR(datatype, type_keyval, attribute_val, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      INTEGER :: datatype, type_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val
      INTEGER :: ierror
    END SUBROUTINE MPI_TYPE_SET_ATTR
  END INTERFACE
! @function MPI_Type_get_attr
  INTERFACE
    SUBROUTINE MPI_TYPE_GET_ATTR(datatype, type_keyval, attribute_val, flag, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      INTEGER :: datatype, type_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val
      LOGICAL :: flag
      INTEGER :: ierror
    END SUBROUTINE MPI_TYPE_GET_ATTR
  END INTERFACE
! @function MPI_Win_create_keyval
  INTERFACE
    SUBROUTINE MPI_WIN_CREATE_KEYVAL(win_copy_attr_fn, win_delete_attr_fn, win_keyval, &
        extra_state, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      EXTERNAL :: win_copy_attr_fn, win_delete_attr_fn
      INTEGER :: win_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
      INTEGER :: ierror
    END SUBROUTINE MPI_WIN_CREATE_KEYVAL
  END INTERFACE
! @function MPI_Win_set_attr
  INTERFACE
    SUBROUTINE MPI_WIN_SET_ATTR(win, win_keyval, attribute_val, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      INTEGER :: win, win_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val
      INTEGER :: ierror
    END SUBROUTINE MPI_WIN_SET_ATTR
  END INTERFACE
! @function MPI_Win_get_attr
  INTERFACE
    SUBROUTINE MPI_WIN_GET_ATTR(win, win_keyval, attribute_val, flag, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      INTEGER :: win, win_keyval
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val
      LOGICAL :: flag
      INTEGER :: ierror
    END SUBROUTINE MPI_WIN_GET_ATTR
  END INTERFACE
! @function MPI_Keyval_create
  INTERFACE
    SUBROUTINE MPI_KEYVAL_CREATE(copy_fn, delete_fn, keyval, extra_state, ierror)
      IMPLICIT NONE
      EXTERNAL :: copy_fn, delete_fn
      INTEGER :: keyval, extra_state
      INTEGER :: ierror
    END SUBROUTINE MPI_KEYVAL_CREATE
  END INTERFACE
! @function MPI_Attr_put
  INTERFACE
    SUBROUTINE MPI_ATTR_PUT(comm, keyval, attribute_val, ierror)
      IMPLICIT NONE
      INTEGER :: comm, keyval, attribute_val
      INTEGER :: ierror
    END SUBROUTINE MPI_ATTR_PUT
  END INTERFACE
! @function MPI_Attr_get
  INTERFACE
    SUBROUTINE MPI_ATTR_GET(comm, keyval, attribute_val, flag, ierror)
      IMPLICIT NONE
      INTEGER :: comm, keyval, attribute_val
      LOGICAL :: flag
      INTEGER :: ierror
    END SUBROUTINE MPI_ATTR_GET
  END INTERFACE
! @function MPI_Grequest_start
  INTERFACE
    SUBROUTINE MPI_GREQUEST_START(query_fn, free_fn, cancel_fn, extra_state, request, ierror)
      IMPORT :: MPI_ADDRESS_KIND
      IMPLICIT NONE
      EXTERNAL :: query_fn, free_fn, cancel_fn
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
      INTEGER :: request
      INTEGER :: ierror
    END SUBROUTINE MPI_GREQUEST_START
  END INTERFACE
! @function MPI_File_create_errhandler
  INTERFACE
    SUBROUTINE MPI_FILE_CREATE_ERRHANDLER(file_errhandler_fn, errhandler, ierror)
      IMPLICIT NONE
      EXTERNAL :: file_errhandler_fn
      INTEGER :: errhandler
      INTEGER :: ierror
    END SUBROUTINE MPI_FILE_CREATE_ERRHANDLER
  END INTERFACE
! @function MPI_Comm_spawn
  INTERFACE
    SUBROUTINE MPI_COMM_SPAWN(command, argv, maxprocs, info, root, comm, intercomm, &
        array_of_errcodes, ierror)
      IMPLICIT NONE
      CHARACTER(LEN=*) :: command, argv(*)
      INTEGER :: maxprocs, info, root, comm, intercomm
      INTEGER :: array_of_errcodes(*)
      INTEGER :: ierror
    END SUBROUTINE MPI_COMM_SPAWN
  END INTERFACE
! @function MPI_Comm_spawn_multiple
  INTERFACE
    SUBROUTINE MPI_COMM_SPAWN_MULTIPLE(count, array_of_commands, array_of_argv, &
        array_of_maxprocs, array_of_info, root, comm, intercomm, array_of_errcodes, ierror)
      IMPLICIT NONE
      INTEGER :: count
      CHARACTER(LEN=*) :: array_of_commands(*), array_of_argv(count, *)
      INTEGER :: array_of_maxprocs(*), array_of_info(*), root, comm, intercomm
      INTEGER :: array_of_errcodes(*)
      INTEGER :: ierror
    END SUBROUTINE MPI_COMM_SPAWN_MULTIPLE
  END INTERFACE
! @function ALWAYS
  INTERFACE
    SUBROUTINE MPI_F_SYNC_REG(buf)
      IMPLICIT NONE
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      TYPE(*), DIMENSION(*) :: buf
    END SUBROUTINE MPI_F_SYNC_REG
  END INTERFACE
  ! MPI_SIZEOF(X, SIZE, IERROR): one specific per type and kind (X may be of any rank).
  INTERFACE MPI_SIZEOF
    SUBROUTINE MPI_SIZEOF_I1(x, size, ierror)
      IMPLICIT NONE
      INTEGER(KIND=1) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_I1
    SUBROUTINE MPI_SIZEOF_I2(x, size, ierror)
      IMPLICIT NONE
      INTEGER(KIND=2) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_I2
    SUBROUTINE MPI_SIZEOF_I4(x, size, ierror)
      IMPLICIT NONE
      INTEGER(KIND=4) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_I4
    SUBROUTINE MPI_SIZEOF_I8(x, size, ierror)
      IMPLICIT NONE
      INTEGER(KIND=8) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_I8
    SUBROUTINE MPI_SIZEOF_I16(x, size, ierror)
      IMPLICIT NONE
      INTEGER(KIND=16) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_I16
    SUBROUTINE MPI_SIZEOF_R4(x, size, ierror)
      IMPLICIT NONE
      REAL(KIND=4) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_R4
    SUBROUTINE MPI_SIZEOF_R8(x, size, ierror)
      IMPLICIT NONE
      REAL(KIND=8) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_R8
    SUBROUTINE MPI_SIZEOF_R16(x, size, ierror)
      IMPLICIT NONE
      REAL(KIND=16) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_R16
    SUBROUTINE MPI_SIZEOF_C4(x, size, ierror)
      IMPLICIT NONE
      COMPLEX(KIND=4) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_C4
    SUBROUTINE MPI_SIZEOF_C8(x, size, ierror)
      IMPLICIT NONE
      COMPLEX(KIND=8) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_C8
    SUBROUTINE MPI_SIZEOF_C16(x, size, ierror)
      IMPLICIT NONE
      COMPLEX(KIND=16) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_C16
    SUBROUTINE MPI_SIZEOF_L1(x, size, ierror)
      IMPLICIT NONE
      LOGICAL(KIND=1) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_L1
    SUBROUTINE MPI_SIZEOF_L2(x, size, ierror)
      IMPLICIT NONE
      LOGICAL(KIND=2) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_L2
    SUBROUTINE MPI_SIZEOF_L4(x, size, ierror)
      IMPLICIT NONE
      LOGICAL(KIND=4) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_L4
    SUBROUTINE MPI_SIZEOF_L8(x, size, ierror)
      IMPLICIT NONE
      LOGICAL(KIND=8) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_L8
    SUBROUTINE MPI_SIZEOF_CH(x, size, ierror)
      IMPLICIT NONE
      CHARACTER(LEN=*) :: x(..)
      INTEGER :: size, ierror
    END SUBROUTINE MPI_SIZEOF_CH
  END INTERFACE MPI_SIZEOF
