# Compile a fixed-form and a free-form program that include mpif.h, strictly
# (cmake -DFC=gfortran -DINCDIR=build/include -DWORK=dir -P this).
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/fixed.f
"      program fixed\n      implicit none\n      include 'mpif.h'\n      integer ierr\n"
"      call mpi_init(ierr)\n      call mpi_finalize(ierr)\n      end\n")
file(WRITE ${WORK}/free.f90
"program free\n  implicit none\n  include 'mpif.h'\n  integer :: ierr\n  call mpi_init(ierr)\n"
"  call mpi_finalize(ierr)\nend program free\n")
foreach(src fixed.f free.f90)
  if(src MATCHES "\\.f$")
    set(form -ffixed-form -ffixed-line-length-72)
  else()
    set(form -ffree-form)
  endif()
  execute_process(COMMAND ${FC} ${form} -std=f2008 -fimplicit-none -Wall -Werror=line-truncation
                          -Werror=character-truncation -I${INCDIR} -c ${src}
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mpif.h does not compile in ${src}:\n${out}")
  endif()
  message(STATUS "${src}: ok")
endforeach()
