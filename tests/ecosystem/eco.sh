#!/bin/bash
# Ecosystem checks on an installed and then moved wanmpi (see CMakeLists.txt here).
#   eco.sh install  BUILD_DIR WORK     cmake --install into WORK/p1, then move it to WORK/moved
#   eco.sh wrappers WORK SAMPLE        mpicc/mpicxx/mpif77/mpifort from the moved prefix, -show
#   eco.sh pkgconfig WORK SAMPLE       builds with pkg-config (mpi-c, mpi-fort, static wanmpi)
#   eco.sh makefile WORK SAMPLE        make CC=mpicc FC=mpifort ... check
#   eco.sh cmake    WORK SAMPLE        find_package(MPI COMPONENTS C CXX Fortran) through PATH
#   eco.sh clean    WORK
# Each program runs on 2 ranks with the moved mpirun and must print " No Errors".
set -euo pipefail
cmd=$1
shift

run_np2() {  # run a program on 2 ranks, fail unless it says " No Errors"
    local out
    out=$("$P/bin/mpirun" -n 2 --timeout 60 "$@" 2>&1) || { echo "$out"; echo "FAIL: $*"; exit 1; }
    echo "$out"
    grep -q " No Errors" <<<"$out" || { echo "FAIL: no ' No Errors' from $*"; exit 1; }
}

case $cmd in
install)
    build=$1 work=$2
    rm -rf "$work"
    mkdir -p "$work"
    cmake --install "$build" --prefix "$work/p1" >"$work/install.log"
    mv "$work/p1" "$work/moved"
    for f in bin/mpicc bin/mpicxx bin/mpifort bin/mpif77 bin/mpif90 bin/mpirun include/mpi.h \
             include/mpif.h include/mpi.mod lib/libwanmpi.so lib/libwanmpi.a \
             lib/pkgconfig/wanmpi.pc lib/pkgconfig/mpi.pc lib/pkgconfig/mpi-c.pc \
             lib/pkgconfig/mpi-cxx.pc lib/pkgconfig/mpi-fort.pc; do
        [ -e "$work/moved/$f" ] || { echo "FAIL: $f missing from the installed tree"; exit 1; }
    done
    if grep -rIl "$work/p1" "$work/moved" >/dev/null 2>&1; then
        echo "FAIL: installed files name the original prefix:"; grep -rIl "$work/p1" "$work/moved"
        exit 1
    fi
    echo "installed into $work/p1 and moved to $work/moved"
    ;;
wrappers)
    work=$1 sample=$2 P=$1/moved
    d=$work/wrappers
    rm -rf "$d" && mkdir -p "$d" && cd "$d"
    "$P/bin/mpicc" -show | grep -q -- "-I$P/include" || { echo "FAIL: mpicc -show"; exit 1; }
    "$P/bin/mpifort" --showme:compile
    "$P/bin/mpicc" -O2 -o hello_c "$sample/hello.c"
    "$P/bin/mpicxx" -O2 -o hello_cxx "$sample/hello.cpp"
    "$P/bin/mpif77" -O2 -o hello_f77 "$sample/hello.f"
    "$P/bin/mpifort" -O2 -o hello_f90 "$sample/hello_mod.f90"
    for p in hello_c hello_cxx hello_f77 hello_f90; do run_np2 "./$p"; done
    ;;
pkgconfig)
    work=$1 sample=$2 P=$1/moved
    d=$work/pkgconfig
    rm -rf "$d" && mkdir -p "$d" && cd "$d"
    export PKG_CONFIG_PATH=$P/lib/pkgconfig
    echo "pkg-config --cflags --libs mpi-c: $(pkg-config --cflags --libs mpi-c)"
    gcc -O2 $(pkg-config --cflags mpi-c) -o hello_c "$sample/hello.c" $(pkg-config --libs mpi-c)
    g++ -O2 $(pkg-config --cflags mpi-cxx) -o hello_cxx "$sample/hello.cpp" \
        $(pkg-config --libs mpi-cxx)
    gfortran -O2 $(pkg-config --cflags mpi-fort) -o hello_f77 "$sample/hello.f" \
        $(pkg-config --libs mpi-fort)
    # static: the archive and its private dependencies
    gcc -O2 $(pkg-config --cflags wanmpi) -o hello_static "$sample/hello.c" \
        $(pkg-config --static --libs wanmpi | sed 's/-lwanmpi/-l:libwanmpi.a/')
    if ldd hello_static | grep -q libwanmpi; then
        echo "FAIL: hello_static uses libwanmpi.so"
        exit 1
    fi
    for p in hello_c hello_cxx hello_f77 hello_static; do run_np2 "./$p"; done
    ;;
makefile)
    work=$1 sample=$2 P=$1/moved
    d=$work/makefile
    rm -rf "$d" && mkdir -p "$d" && cp "$sample"/Makefile "$sample"/hello* "$d" && cd "$d"
    export PATH=$P/bin:$PATH
    make -s all
    out=$(make -s check MPIRUN="mpirun --timeout 60" 2>&1) || { echo "$out"; exit 1; }
    echo "$out"
    [ "$(grep -c " No Errors" <<<"$out")" = 4 ] || { echo "FAIL: make check"; exit 1; }
    ;;
cmake)
    work=$1 sample=$2 P=$1/moved
    d=$work/cmake
    rm -rf "$d" && mkdir -p "$d" && cd "$d"
    # As users do: the wrappers first on PATH, MPI_HOME pointing at the prefix; no hints.
    export PATH=$P/bin:$PATH MPI_HOME=$P
    cmake -S "$sample" -B build -G Ninja -DEXPECT_MPI_HOME="$P" | tee configure.log
    grep -q "sample: all three languages found in $P" configure.log
    cmake --build build -j2 >build.log 2>&1 || { cat build.log; exit 1; }
    for p in hello_c hello_cxx hello_f77 hello_f90; do run_np2 "build/$p"; done
    ;;
clean)
    rm -rf "$1"
    ;;
*)
    echo "usage: eco.sh install|wrappers|pkgconfig|makefile|cmake|clean ..." >&2
    exit 2
    ;;
esac
