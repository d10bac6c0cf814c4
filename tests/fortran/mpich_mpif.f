C     mpif.h declares what MPICH's does and no more, so programs written
C     against MPICH compile: like MPICH's f77/rma/aintf, this one types
C     MPI_AINT_ADD and MPI_AINT_DIFF itself (two ways), which a second
C     declaration in mpif.h would make a compile error. MPI_WTIME and
C     MPI_WTICK (and PMPI_) come typed from mpif.h. Any number of ranks.
      program mpich_mpif
      implicit none
      include 'mpif.h'
      integer(kind=MPI_ADDRESS_KIND), external :: MPI_Aint_add
      integer(kind=MPI_ADDRESS_KIND) MPI_Aint_diff
      external MPI_Aint_diff
      integer ierr, rank, errs, toterrs, intsize
      integer array(0:15)
      integer(kind=MPI_ADDRESS_KIND) base, addr, disp
      double precision t

      errs = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_type_size(MPI_INTEGER, intsize, ierr)
      call mpi_get_address(array(0), base, ierr)
      call mpi_get_address(array(5), addr, ierr)
      disp = 5 * intsize
      if (MPI_Aint_add(base, disp) .ne. addr) then
         errs = errs + 1
         print *, 'MPI_Aint_add', MPI_Aint_add(base, disp), addr
      endif
      if (MPI_Aint_diff(addr, base) .ne. disp) then
         errs = errs + 1
         print *, 'MPI_Aint_diff', MPI_Aint_diff(addr, base), disp
      endif
      t = MPI_Wtime() + PMPI_Wtime()
      if (MPI_Wtick() .le. 0d0 .or. PMPI_Wtick() .le. 0d0
     &    .or. t .le. 0d0) errs = errs + 1

      call mpi_allreduce(errs, toterrs, 1, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         if (toterrs .eq. 0) then
            print *, ' No Errors'
         else
            print *, ' Found ', toterrs, ' errors'
         endif
      endif
      call mpi_finalize(ierr)
      end
