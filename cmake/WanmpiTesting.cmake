# WanmpiTesting.cmake: registers multi-rank MPI test programs with ctest (../shared/STYLE.md §6).
#
#   wanmpi_add_mpi_test(NAME n (SOURCES a.c ... | PROGRAM existing_target)
#                       [NP 1 2 4 8] [ROUTES shm tcp] [LABELS ...] [ENV VAR=val ...] [ARGS ...]
#                       [TIMEOUT s] [WILL_FAIL] [PASS_REGEX re] [LIBRARIES lib ...]
#                       [LAUNCHER_ARGS mpirun-option ...])
#
# Builds the program once (target mpitest_<n>, linked PRIVATE to `wanmpi`; PROGRAM reuses a
# program built by an earlier call, e.g. to run it with other ARGS) and registers one ctest per
# (np, route), named mp.<n>.np<NP>.<route>:
#   route shm  default environment (self + shared memory on this host),
#   route tcp  WANMPI_TRANSPORTS=self,tcp (every peer over TCP, on one machine).
# Command: ${CMAKE_BINARY_DIR}/bin/mpirun -n NP --timeout T LAUNCHER_ARGS <program> ARGS.
# Pass: exit status 0 and PASS_REGEX (default " No Errors", the MPICH convention) in the output.
# WILL_FAIL: the job must exit non-zero (e.g. MPI_Abort, ERRORS_ARE_FATAL); with PASS_REGEX the
# output must also match it (so "fails, and says why" is checked, not just "fails").
# Labels: mp, plus LABELS. Defaults: NP 2, ROUTES shm tcp, TIMEOUT 60.
#
# ctest alone cannot require both an exit status and a regex (PASS_REGULAR_EXPRESSION makes it
# ignore the exit status), so each test runs through this same file in script mode
# (cmake -P WanmpiTesting.cmake -- command...), which checks both and echoes the job's output.
#
# Validation against stock MPIs: configure with -DWANMPI_TEST_MPI=mpich (or openmpi) and the same
# programs are built with Debian's mpicc.mpich / mpicc.openmpi flags and run with mpiexec.mpich /
# mpirun.openmpi; route tcp then means UCX_TLS=tcp,self (MPICH over UCX) or btl tcp,self (Open MPI).
# The test programs use standard MPI only, so a failure there is a bug in the test.

# ---------------------------------------------------------------------------------------------
# Script mode: run one test command and judge it.
#   cmake -DWANMPI_EXPECT=pass|fail [-DWANMPI_REGEX=re] [-DWANMPI_KILL_AFTER=s] -P this -- cmd...
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED WANMPI_EXPECT)
    set(_cmd)
    set(_seen FALSE)
    math(EXPR _last "${CMAKE_ARGC} - 1")
    foreach(_i RANGE 1 ${_last})
        if(_seen)
            list(APPEND _cmd "${CMAKE_ARGV${_i}}")
        elseif("${CMAKE_ARGV${_i}}" STREQUAL "--")
            set(_seen TRUE)
        endif()
    endforeach()
    if(NOT _cmd)
        message(FATAL_ERROR "wanmpi-test: no command after --")
    endif()
    if(NOT DEFINED WANMPI_KILL_AFTER)
        set(WANMPI_KILL_AFTER 600)
    endif()
    list(JOIN _cmd " " _cmd_text)
    message(NOTICE "wanmpi-test: running: ${_cmd_text}")
    # Backstop only: the launcher's own --timeout fires first and cleans up the ranks.
    execute_process(COMMAND ${_cmd}
        RESULT_VARIABLE _rc
        OUTPUT_VARIABLE _out
        ERROR_VARIABLE _out
        TIMEOUT ${WANMPI_KILL_AFTER})
    message(NOTICE "${_out}")
    set(_why "")
    if(WANMPI_EXPECT STREQUAL "pass")
        if(NOT "${_rc}" STREQUAL "0")
            set(_why "exit status '${_rc}', expected 0")
        elseif(DEFINED WANMPI_REGEX AND NOT "${_out}" MATCHES "${WANMPI_REGEX}")
            set(_why "output does not match '${WANMPI_REGEX}'")
        endif()
    else()
        if("${_rc}" STREQUAL "0")
            set(_why "exit status 0, expected the job to fail")
        elseif(NOT "${_rc}" MATCHES "^[0-9]+$")
            set(_why "launcher did not exit normally: ${_rc}")
        elseif(DEFINED WANMPI_REGEX AND NOT "${_out}" MATCHES "${WANMPI_REGEX}")
            set(_why "job failed (exit ${_rc}) but output does not match '${WANMPI_REGEX}'")
        endif()
    endif()
    if(_why)
        message(FATAL_ERROR "wanmpi-test: FAIL: ${_why}")
    endif()
    message(NOTICE "wanmpi-test: PASS (exit ${_rc})")
    return()
endif()

# ---------------------------------------------------------------------------------------------
# Configure mode.
set(WANMPI_TEST_MPI "wanmpi" CACHE STRING
    "MPI that builds and runs tests/mp: wanmpi (default), mpich or openmpi (Debian packages)")
set_property(CACHE WANMPI_TEST_MPI PROPERTY STRINGS wanmpi mpich openmpi)
set(WANMPI_TEST_DEFAULT_TIMEOUT 60 CACHE STRING "Default per-job timeout (s) of MPI tests")
set(_wanmpi_testing_file "${CMAKE_CURRENT_LIST_FILE}")

# Import a stock MPI's compile and link flags as an INTERFACE target (stock mode only).
function(_wanmpi_stock_mpi_target out_target)
    set(_t wanmpi_test_stock_mpi)
    if(NOT TARGET ${_t})
        if(WANMPI_TEST_MPI STREQUAL "mpich")
            find_program(_wt_cc NAMES mpicc.mpich REQUIRED)
            set(_q1 -compile_info)
            set(_q2 -link_info)
        elseif(WANMPI_TEST_MPI STREQUAL "openmpi")
            find_program(_wt_cc NAMES mpicc.openmpi REQUIRED)
            set(_q1 --showme:compile)
            set(_q2 --showme:link)
        else()
            message(FATAL_ERROR "WANMPI_TEST_MPI must be wanmpi, mpich or openmpi")
        endif()
        execute_process(COMMAND ${_wt_cc} ${_q1} OUTPUT_VARIABLE _c OUTPUT_STRIP_TRAILING_WHITESPACE
            COMMAND_ERROR_IS_FATAL ANY)
        execute_process(COMMAND ${_wt_cc} ${_q2} OUTPUT_VARIABLE _l OUTPUT_STRIP_TRAILING_WHITESPACE
            COMMAND_ERROR_IS_FATAL ANY)
        separate_arguments(_c UNIX_COMMAND "${_c}")
        separate_arguments(_l UNIX_COMMAND "${_l}")
        set(_inc)
        set(_link)
        set(_libs)
        foreach(_tok IN LISTS _c _l)
            if(_tok MATCHES "^-I(.*)")
                list(APPEND _inc "${CMAKE_MATCH_1}")
            elseif(_tok MATCHES "^-l")
                list(APPEND _libs "${_tok}") # after the objects on the link line
            elseif(_tok MATCHES "^-(L|Wl,|pthread)")
                list(APPEND _link "${_tok}")
            endif()
        endforeach()
        list(REMOVE_DUPLICATES _inc)
        list(REMOVE_DUPLICATES _link)
        list(REMOVE_DUPLICATES _libs)
        add_library(${_t} INTERFACE)
        target_include_directories(${_t} INTERFACE ${_inc})
        target_link_options(${_t} INTERFACE ${_link})
        target_link_libraries(${_t} INTERFACE ${_libs})
        if(WANMPI_TEST_MPI STREQUAL "mpich" AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
            # MPICH 4.0's mpi.h declares MPI_STATUSES_IGNORE so that gcc 12 warns on every call.
            target_compile_options(${_t} INTERFACE $<$<COMPILE_LANGUAGE:C>:-Wno-stringop-overflow>)
        endif()
        message(STATUS "MPI tests use ${WANMPI_TEST_MPI} (${_wt_cc}): -I${_inc} ${_link} ${_libs}")
    endif()
    set(${out_target} ${_t} PARENT_SCOPE)
endfunction()

function(wanmpi_add_mpi_test)
    cmake_parse_arguments(PARSE_ARGV 0 A "WILL_FAIL"
        "NAME;PROGRAM;TIMEOUT;PASS_REGEX"
        "SOURCES;NP;ROUTES;LABELS;ENV;ARGS;LIBRARIES;LAUNCHER_ARGS")
    if(NOT A_NAME)
        message(FATAL_ERROR "wanmpi_add_mpi_test: NAME is required")
    endif()
    if(A_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "wanmpi_add_mpi_test(${A_NAME}): unknown arguments ${A_UNPARSED_ARGUMENTS}")
    endif()
    if(NOT A_SOURCES AND NOT A_PROGRAM)
        message(FATAL_ERROR "wanmpi_add_mpi_test(${A_NAME}): give SOURCES or PROGRAM")
    endif()

    if(WANMPI_TEST_MPI STREQUAL "wanmpi")
        # Before the library exists, configuring must still work: register nothing.
        if(NOT TARGET wanmpi)
            return()
        endif()
        set(_mpi wanmpi)
    else()
        _wanmpi_stock_mpi_target(_mpi)
    endif()

    if(A_SOURCES)
        set(_prog mpitest_${A_NAME})
        add_executable(${_prog} ${A_SOURCES})
        target_link_libraries(${_prog} PRIVATE ${_mpi} ${A_LIBRARIES})
        # Test programs stay in their test folder's build dir, out of the way of tools in bin/.
        set_target_properties(${_prog} PROPERTIES
            RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
            OUTPUT_NAME ${A_NAME})
    else()
        set(_prog ${A_PROGRAM})
        if(NOT TARGET ${_prog})
            set(_prog mpitest_${A_PROGRAM})
        endif()
        if(NOT TARGET ${_prog})
            message(FATAL_ERROR "wanmpi_add_mpi_test(${A_NAME}): no program ${A_PROGRAM}")
        endif()
    endif()

    if(NOT A_NP)
        set(A_NP 2)
    endif()
    if(NOT A_ROUTES)
        set(A_ROUTES shm tcp)
    endif()
    if(NOT A_TIMEOUT)
        set(A_TIMEOUT ${WANMPI_TEST_DEFAULT_TIMEOUT})
    endif()
    if(NOT DEFINED A_PASS_REGEX AND NOT A_WILL_FAIL)
        set(A_PASS_REGEX " No Errors")
    endif()
    math(EXPR _kill_after "${A_TIMEOUT} + 15")
    math(EXPR _ctest_timeout "${A_TIMEOUT} + 30")

    set(_judge -DWANMPI_KILL_AFTER=${_kill_after})
    if(A_WILL_FAIL)
        list(APPEND _judge -DWANMPI_EXPECT=fail)
    else()
        list(APPEND _judge -DWANMPI_EXPECT=pass)
    endif()
    if(DEFINED A_PASS_REGEX)
        list(APPEND _judge "-DWANMPI_REGEX=${A_PASS_REGEX}")
    endif()

    foreach(_np IN LISTS A_NP)
        foreach(_route IN LISTS A_ROUTES)
            set(_env ${A_ENV})
            if(WANMPI_TEST_MPI STREQUAL "wanmpi")
                set(_launch ${CMAKE_BINARY_DIR}/bin/mpirun -n ${_np} --timeout ${A_TIMEOUT})
                if(_route STREQUAL "tcp")
                    list(APPEND _env WANMPI_TRANSPORTS=self,tcp)
                elseif(NOT _route STREQUAL "shm")
                    message(FATAL_ERROR "wanmpi_add_mpi_test(${A_NAME}): unknown route ${_route}")
                endif()
            elseif(WANMPI_TEST_MPI STREQUAL "mpich")
                set(_launch mpiexec.mpich -n ${_np})
                list(APPEND _env MPIEXEC_TIMEOUT=${A_TIMEOUT})
                if(_route STREQUAL "tcp")
                    list(APPEND _env UCX_TLS=tcp,self)
                endif()
            else()
                set(_launch mpirun.openmpi --oversubscribe -n ${_np} --timeout ${A_TIMEOUT})
                list(APPEND _env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                    OMPI_MCA_rmaps_base_oversubscribe=1)
                if(_route STREQUAL "tcp")
                    list(APPEND _env OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self)
                endif()
            endif()
            # Launcher options: wanmpi's spelling; the one stock equivalent we need is mapped.
            foreach(_la IN LISTS A_LAUNCHER_ARGS)
                if(_la STREQUAL "--disable-auto-cleanup" AND WANMPI_TEST_MPI STREQUAL "mpich")
                    set(_la -disable-auto-cleanup)
                elseif(_la STREQUAL "--disable-auto-cleanup" AND WANMPI_TEST_MPI STREQUAL "openmpi")
                    set(_la --enable-recovery)
                endif()
                list(APPEND _launch ${_la})
            endforeach()
            set(_test mp.${A_NAME}.np${_np}.${_route})
            add_test(NAME ${_test}
                COMMAND ${CMAKE_COMMAND} ${_judge} -P ${_wanmpi_testing_file} --
                        ${_launch} $<TARGET_FILE:${_prog}> ${A_ARGS})
            set_tests_properties(${_test} PROPERTIES
                LABELS "mp;${A_LABELS}"
                TIMEOUT ${_ctest_timeout}
                ENVIRONMENT "${_env}")
        endforeach()
    endforeach()
endfunction()
