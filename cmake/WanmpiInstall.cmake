# WanmpiInstall.cmake: Fortran language, static library, pkg-config files, install layout.
# Included once from the top-level CMakeLists.txt, before the subdirectories.
#
# Install tree (relocatable: nothing in it names the prefix it was installed to):
#   bin/      mpirun, mpiexec, mpicc, mpicxx, mpic++, mpifort, mpif77, mpif90, wanmpi-info, ...
#   include/  mpi.h, mpif.h, mpi.mod
#   lib/      libwanmpi.so (RPATH $ORIGIN-relative), libwanmpi.a
#   lib/pkgconfig/  wanmpi.pc, mpi.pc, mpi-c.pc, mpi-cxx.pc, mpi-fort.pc (prefix from
#             ${pcfiledir}, so they follow a moved prefix)
#   share/doc/wanmpi/  the documentation (docs/*.md)
# The wrappers find include/ and lib/ relative to their own location (tools/wrappers/mpicc.in).

# Fortran is optional: without a compiler, the Fortran entry points and mpif.h are still built
# (they are C++), but not the `mpi` module, mpifort's module support or the Fortran tests.
include(CheckLanguage)
check_language(Fortran)
if(CMAKE_Fortran_COMPILER)
  enable_language(Fortran)
  set(WANMPI_FORTRAN ON)
else()
  set(WANMPI_FORTRAN OFF)
  message(STATUS "wanmpi: no Fortran compiler; building without the `mpi` module and Fortran tests")
endif()

option(WANMPI_BUILD_STATIC "Also build libwanmpi.a" ON)

# gfortran >= 10 rejects calls to one external procedure with different argument types, which
# mpif.h codes do with choice buffers; MPICH's and Open MPI's wrappers pass this flag.
set(WANMPI_FORTRAN_MISMATCH_FLAG "")
if(CMAKE_Fortran_COMPILER_ID STREQUAL "GNU"
   AND CMAKE_Fortran_COMPILER_VERSION VERSION_GREATER_EQUAL 10)
  set(WANMPI_FORTRAN_MISMATCH_FLAG "-fallow-argument-mismatch")
endif()

# Everything below needs the targets of the subdirectories: run it when the top-level
# CMakeLists.txt is done.
function(_wanmpi_install_finish)
  if(WANMPI_BUILD_STATIC AND TARGET wanmpi)
    # The very objects of the shared library, partially linked (ld -r) into ONE object: a
    # program that references any MPI symbol then gets all of wanmpi, including the parts that
    # only register themselves from static initializers (transports, collective modules),
    # which a plain archive of separate objects would silently leave out.
    get_target_property(_srcs wanmpi SOURCES)
    set(_objs $<TARGET_OBJECTS:wanmpi>)
    foreach(_s IN LISTS _srcs)
      if(_s MATCHES "^\\$<TARGET_OBJECTS:")
        list(APPEND _objs "${_s}")
      endif()
    endforeach()
    set(_all ${PROJECT_BINARY_DIR}/src/bindings/wanmpi_static_all.o)
    add_custom_command(OUTPUT ${_all}
      COMMAND ${CMAKE_LINKER} -r -o ${_all} ${_objs}
      DEPENDS wanmpi ${_objs}
      COMMAND_EXPAND_LISTS
      COMMENT "Partially linking libwanmpi.a's single object")
    add_library(wanmpi_static STATIC ${_all})
    set_source_files_properties(${_all} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    set_target_properties(wanmpi_static PROPERTIES OUTPUT_NAME wanmpi LINKER_LANGUAGE CXX)
    target_include_directories(wanmpi_static INTERFACE
      $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include> $<INSTALL_INTERFACE:include>)
    target_link_libraries(wanmpi_static INTERFACE Threads::Threads OpenSSL::SSL OpenSSL::Crypto PkgConfig::ZSTD stdc++ m)
    install(TARGETS wanmpi_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()

  # pkg-config: prefix computed from the .pc file's own location.
  file(RELATIVE_PATH _up "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig"
       "${CMAKE_INSTALL_PREFIX}")
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(_pc_dir ${PROJECT_BINARY_DIR}/pkgconfig)
  set(_head "prefix=\${pcfiledir}/${_up}
exec_prefix=\${prefix}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}
")
  set(_common "Version: ${PROJECT_VERSION}
URL: https://github.com/wanmpi/wanmpi
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lwanmpi
Libs.private: -lssl -lcrypto -lzstd -lstdc++ -lpthread -lm
")
  file(WRITE ${_pc_dir}/wanmpi.pc "${_head}
Name: wanmpi
Description: wanmpi: MPI for jobs spanning several clusters over wide-area networks
${_common}
cxxflags=-I\${includedir}
fflags=-I\${includedir} ${WANMPI_FORTRAN_MISMATCH_FLAG}
fcflags=-I\${includedir} ${WANMPI_FORTRAN_MISMATCH_FLAG}
")
  file(WRITE ${_pc_dir}/mpi.pc "${_head}
Name: mpi
Description: MPI (wanmpi)
Requires: wanmpi
Version: ${PROJECT_VERSION}
")
  file(WRITE ${_pc_dir}/mpi-c.pc "${_head}
Name: mpi-c
Description: MPI for C (wanmpi)
Requires: wanmpi
Version: ${PROJECT_VERSION}
")
  file(WRITE ${_pc_dir}/mpi-cxx.pc "${_head}
Name: mpi-cxx
Description: MPI for C++ (wanmpi; the C interface, no deprecated C++ bindings)
Requires: wanmpi
Version: ${PROJECT_VERSION}
")
  file(WRITE ${_pc_dir}/mpi-fort.pc "${_head}
Name: mpi-fort
Description: MPI for Fortran: mpif.h and use mpi (wanmpi; no mpi_f08)
Version: ${PROJECT_VERSION}
Cflags: -I\${includedir} ${WANMPI_FORTRAN_MISMATCH_FLAG}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lwanmpi
Libs.private: -lssl -lcrypto -lzstd -lstdc++ -lpthread -lm
")
  install(FILES ${_pc_dir}/wanmpi.pc ${_pc_dir}/mpi.pc ${_pc_dir}/mpi-c.pc ${_pc_dir}/mpi-cxx.pc
                ${_pc_dir}/mpi-fort.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

  # Documentation.
  file(GLOB _docs ${PROJECT_SOURCE_DIR}/docs/*.md)
  install(FILES ${_docs} ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _wanmpi_install_finish)
