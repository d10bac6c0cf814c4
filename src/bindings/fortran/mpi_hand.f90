! Interface blocks of the hand-written Fortran bindings (fortran_runtime.cpp), pasted into the
! `mpi` module by gen_fortran.py. Each block starts with `! @function MPI_X` and is used only while
! MPI_X is in the C lists. Only routines that MPICH's `use mpi` declares have one (gen_fortran.py:
! has_module_interface); the keyval, attribute, generalized-request, MPI_BUFFER_DETACH and
! MPI_PCONTROL bindings have none, like MPICH's, nor does MPI_F_SYNC_REG (a choice buffer).
! `! @function ALWAYS` blocks are Fortran-only routines, always present.
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
