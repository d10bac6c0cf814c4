# Fortran bindings (included from src/bindings/CMakeLists.txt after the `wanmpi` target).
#
# gen_fortran.py reads the same lists as the C bindings (functions/*.txt) and include/mpi.h.in,
# and writes into build/src/bindings/fortran/: the C++ entry points (compiled into libwanmpi, so
# the library itself never needs a Fortran runtime), mpif.h, the `mpi` module source and the
# coverage report. mpif.h and mpi.mod go to build/include (next to mpi.h), which is where the
# wrappers and the install tree look for them. The module is compiled only when a Fortran
# compiler was found (cmake/WanmpiInstall.cmake enables the language at the top level).
set(FGEN ${PROJECT_BINARY_DIR}/src/bindings/fortran)
set(FSRC ${CMAKE_CURRENT_SOURCE_DIR}/fortran)
set(FGEN_OUT ${FGEN}/fortran_bindings.cpp ${FGEN}/fortran_have.h ${FGEN}/mpif.h ${FGEN}/mpi.f90
             ${FGEN}/fortran_coverage.txt ${FGEN}/constants_check.c)
file(GLOB FORTRAN_HAND CONFIGURE_DEPENDS ${FSRC}/*.cpp ${FSRC}/*.hpp ${FSRC}/*.f90
     ${FSRC}/exceptions.txt)
add_custom_command(
  OUTPUT ${FGEN_OUT}
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/gen_fortran.py
          ${CMAKE_CURRENT_SOURCE_DIR}/functions ${PROJECT_SOURCE_DIR}/include/mpi.h.in
          ${FSRC} ${FGEN}
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${FGEN}/mpif.h ${PROJECT_BINARY_DIR}/include/mpif.h
  DEPENDS gen_fortran.py gen_bindings.py ${FUNCTION_LISTS} ${FORTRAN_HAND}
          ${PROJECT_SOURCE_DIR}/include/mpi.h.in
  BYPRODUCTS ${PROJECT_BINARY_DIR}/include/mpif.h
  COMMENT "Generating Fortran bindings (mpif.h, mpi module) from functions/*.txt")
add_custom_target(wanmpi_fortran_generated DEPENDS ${FGEN_OUT})
add_dependencies(wanmpi_fortran_generated wanmpi_generated)

file(GLOB FORTRAN_CXX CONFIGURE_DEPENDS ${FSRC}/*.cpp)
target_sources(wanmpi PRIVATE ${FGEN}/fortran_bindings.cpp ${FORTRAN_CXX})
target_include_directories(wanmpi PRIVATE ${FGEN} ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(wanmpi wanmpi_fortran_generated)
install(FILES ${FGEN}/mpif.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

if(CMAKE_Fortran_COMPILER)
  # The module: interfaces and constants only, so its object file is not linked anywhere; the
  # .mod is what user code needs. -fallow-argument-mismatch is not needed here (choice buffers
  # are TYPE(*) with NO_ARG_CHECK).
  add_library(wanmpi_fortran_module OBJECT ${FGEN}/mpi.f90)
  set_target_properties(wanmpi_fortran_module PROPERTIES
    Fortran_MODULE_DIRECTORY ${PROJECT_BINARY_DIR}/include
    Fortran_FORMAT FREE)
  add_dependencies(wanmpi_fortran_module wanmpi_fortran_generated)
  # Building the library gives a complete build tree for the wrappers (mpifort + use mpi).
  add_dependencies(wanmpi wanmpi_fortran_module)
  install(FILES ${PROJECT_BINARY_DIR}/include/mpi.mod DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
