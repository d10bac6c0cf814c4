#!/usr/bin/env bash
# compare-npb.sh: the NAS Parallel Benchmarks (NPB 3.4, MPI version) built with wanmpi's,
# Debian's MPICH's and Open MPI's Fortran/C wrappers from one source tree and run side by side
# on this machine, rounds interleaved (issue 16: NPB BT at 4 ranks within 1.1x of the faster of
# MPICH and Open MPI).
#
#   bench/compare-npb.sh --npb DIR [--build DIR] [--kernels "bt cg"] [--class A] [--np 4]
#                        [--rounds 3] [--mpis "wanmpi mpich openmpi"] [--keep]
#
#   --npb DIR      an NPB3.4-MPI source tree (the directory holding config/ and BT/). NPB is not
#                  a Debian package and is never committed here: bring your own copy (NASA's
#                  NPB3.4.x tarball, or a mirror of it).
#   --build DIR    wanmpi build tree (default: <repo>/build) with bin/mpif90, bin/mpicc, bin/mpirun
#   --kernels L    NPB benchmarks to build and run (default "bt")
#   --class C      problem class (default A)
#   --np N         ranks (default 4; BT and SP need a square)
#   --rounds N     rounds (default 3): round 1 runs every MPI once, then round 2, ...; the
#                  reported time per MPI is the median over rounds (the lower middle one
#                  for an even count)
#   --mpis L       which MPIs (default "wanmpi mpich openmpi")
#   --keep         keep the temporary directory (builds and raw outputs)
# Each MPI builds its own copy of the tree (config/make.def from make.def.template, -O3 as NPB
# ships it; Open MPI's mpif90 also gets -fallow-argument-mismatch, which NPB needs with gfortran
# 12 and Open MPI's mpif.h; it does not change the generated code of the kernels). Every MPI runs
# on its default single-host route. A run counts only if NPB prints "Verification = SUCCESSFUL".
# Output: per kernel and MPI the median time (s) and Mop/s, and wanmpi's time over the faster of
# the others; the threshold (1.1x) lives here and nowhere else.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
NPB=
KERNELS=bt
CLASS=A
NP=4
ROUNDS=3
MPIS="wanmpi mpich openmpi"
KEEP=0
while [ $# -gt 0 ]; do
    case $1 in
        --npb) NPB=$2; shift 2 ;;
        --build) BUILD=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift 2 ;;
        --kernels) KERNELS=$2; shift 2 ;;
        --class) CLASS=$2; shift 2 ;;
        --np) NP=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --mpis) MPIS=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare-npb.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
say() { printf '%s\n' "$*" >&2; }
[ -n "$NPB" ] && [ -f "$NPB/config/make.def.template" ] ||
    { say "compare-npb.sh: --npb DIR must be an NPB3.4-MPI tree (with config/make.def.template)"; exit 2; }
NPB=$(cd "$NPB" && pwd)
TMP=$(mktemp -d /tmp/compare-npb.XXXXXX)
[ $KEEP = 1 ] && say "keeping $TMP" || trap 'rm -rf "$TMP"' EXIT

# ---- build: one tree per MPI ----
declare -A FC CC OK
FC[wanmpi]=$BUILD/bin/mpif90; CC[wanmpi]=$BUILD/bin/mpicc
FC[mpich]=mpif90.mpich; CC[mpich]=mpicc.mpich
FC[openmpi]=mpif90.openmpi; CC[openmpi]=mpicc.openmpi
for m in $MPIS; do
    [ -n "${FC[$m]:-}" ] || { say "compare-npb.sh: unknown MPI $m"; exit 2; }
    command -v "${FC[$m]}" >/dev/null || { say "$m: ${FC[$m]} not found; skipped"; continue; }
    cp -r "$NPB" "$TMP/$m"
    mkdir -p "$TMP/$m/bin"
    flags=-O3
    [ "$m" = openmpi ] && flags="-O3 -fallow-argument-mismatch"
    sed -e "s|^MPIFC = .*|MPIFC = ${FC[$m]}|" -e "s|^MPICC = .*|MPICC = ${CC[$m]}|" \
        -e "s|^FFLAGS\t= .*|FFLAGS\t= $flags|" \
        "$NPB/config/make.def.template" >"$TMP/$m/config/make.def"
    OK[$m]=1
    for k in $KERNELS; do
        K=$(echo "$k" | tr a-z A-Z)
        if ! make -C "$TMP/$m" "$K" CLASS="$CLASS" NPROCS="$NP" >"$TMP/$m/build-$k.log" 2>&1 ||
            [ ! -x "$TMP/$m/bin/$k.$CLASS.x" ]; then
            say "$m: building $k failed (see $TMP/$m/build-$k.log; --keep to keep it)"
            OK[$m]=0
        fi
    done
done

# ---- run: rounds interleaved ----
run_one() {  # mpi kernel -> "seconds mops" or "fail"
    local m=$1 k=$2 exe=$TMP/$1/bin/$2.$CLASS.x out
    case $m in
        wanmpi) out=$(timeout 900 "$BUILD/bin/mpirun" -n "$NP" "$exe" 2>&1) ;;
        mpich) out=$(MPIEXEC_TIMEOUT=900 mpiexec.mpich -n "$NP" "$exe" 2>&1) ;;
        openmpi) out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 900 \
                       mpirun.openmpi --oversubscribe -n "$NP" "$exe" 2>&1) ;;
    esac
    printf '%s\n' "$out" >>"$TMP/$m/run-$k.log"
    if printf '%s\n' "$out" | grep -q 'Verification *= *SUCCESSFUL'; then
        printf '%s\n' "$out" | awk '/Time in seconds/ {t=$NF} /Mop\/s total/ {m=$NF} END {print t, m}'
    else
        echo fail
    fi
}
say "# NPB class $CLASS, $NP ranks, $ROUNDS rounds interleaved; $(uptime | sed 's/.*load/load/')"
for r in $(seq "$ROUNDS"); do
    for k in $KERNELS; do
        for m in $MPIS; do
            [ "${OK[$m]:-0}" = 1 ] || continue
            res=$(run_one "$m" "$k")
            echo "$k $m $r $res" >>"$TMP/results"
            say "round $r: $k $m: $res"
        done
    done
done

# ---- report ----
echo "# kernel mpi median_s median_mops runs_ok  (class $CLASS, $NP ranks)"
for k in $KERNELS; do
    best=""
    for m in $MPIS; do
        line=$(awk -v k="$k" -v m="$m" '$1 == k && $2 == m && $4 != "fail" {print $4, $5}' \
               "$TMP/results" 2>/dev/null | sort -n |
               awk '{t[NR] = $1; o[NR] = $2} END {if (NR) print t[int((NR + 1) / 2)], o[int((NR + 1) / 2)], NR}')
        [ -n "$line" ] || { echo "$k $m n/a n/a 0"; continue; }
        echo "$k $m $line"
        eval "T_$m=${line%% *}"
        if [ "$m" != wanmpi ]; then
            if [ -z "$best" ] || awk -v a="${line%% *}" -v b="$best" 'BEGIN {exit !(a < b)}'; then
                best=${line%% *}
            fi
        fi
    done
    if [ -n "${T_wanmpi:-}" ] && [ -n "$best" ]; then
        awk -v k="$k" -v w="$T_wanmpi" -v b="$best" 'BEGIN {
            r = w / b
            printf "# %s: wanmpi / faster of the others = %.3f (target <= 1.1: %s)\n", k, r,
                   (r <= 1.1 ? "met" : "NOT met") }'
    fi
    unset T_wanmpi
done
echo "# load after: $(uptime | sed 's/.*load/load/')"
