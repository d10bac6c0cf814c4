# Fails if gen_fortran.py could not bind a C function and exceptions.txt does not explain it
# (cmake -DCOVERAGE=build/src/bindings/fortran/fortran_coverage.txt -P this).
file(STRINGS ${COVERAGE} lines)
set(bad)
set(n 0)
foreach(l IN LISTS lines)
  if(l MATCHES "^MPI")
    math(EXPR n "${n} + 1")
  endif()
  if(l MATCHES "^MPIX?_[A-Za-z0-9_]+ +UNSUPPORTED")
    list(APPEND bad "${l}")
  endif()
endforeach()
message(STATUS "${n} C functions listed in ${COVERAGE}")
if(bad)
  list(JOIN bad "\n  " txt)
  message(FATAL_ERROR "C functions without a Fortran binding (bind them in gen_fortran.py or "
                      "list them in src/bindings/fortran/exceptions.txt):\n  ${txt}")
endif()
