#!/usr/bin/env bash
# compare-io.sh: MPI-IO collective write of a 2-D block-distributed array of doubles through a
# subarray view (bench/io_bench.c), wanmpi vs Debian's Open MPI (ROMIO/OMPIO) and MPICH (ROMIO),
# side by side in one run, on the same file system (issue 15, MPI-IO measurement).
#
#   bench/compare-io.sh [--build DIR] [--no-build] [--np N] [--mib M] [--reps R] [--rounds K]
#                       [--dir D] [--keep] [--no-mpich]
#
#   --build DIR  wanmpi build tree (default <repo>/build); builds mpirun + libwanmpi unless
#                --no-build
#   --np N       ranks (default 4)           --mib M   array size in MiB (default 256)
#   --reps R     writes per run, best taken (default 3)
#   --rounds K   runs per library, interleaved; the median of the runs' best (default 3)
#   --dir D      directory of the files (default /tmp; /dev/shm works too)
#   --keep       keep the files and the temporary directory
# Output: seconds per collective write (open + set_view + write_all + close, max over ranks) and
# MB/s per library (wanmpi-2ph: wanmpi with two-phase I/O forced by the romio_cb_write hint), wanmpi's time / Open MPI's, whether wanmpi's file is byte-identical to Open
# MPI's (cmp), and the load average. The target (within 1.5x of Open MPI) is checked here and
# nowhere else. Numbers on a shared 2-core machine are noisy: quote them with the load.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
BUILD_IT=1
NP=4
MIB=256
REPS=3
ROUNDS=3
DIR=/tmp
KEEP=0
MPICH=1
while [ $# -gt 0 ]; do
    case $1 in
        --build) BUILD=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift 2 ;;
        --no-build) BUILD_IT=0; shift ;;
        --np) NP=$2; shift 2 ;;
        --mib) MIB=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --dir) DIR=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --no-mpich) MPICH=0; shift ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare-io.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
say() { printf '%s\n' "$*" >&2; }

TMP=$(mktemp -d /tmp/wanmpi-io-bench.XXXXXX)
FILES=$(mktemp -d "$DIR/wanmpi-io-files.XXXXXX")
cleanup() { [ $KEEP = 1 ] && say "kept $TMP and $FILES" || rm -rf "$TMP" "$FILES"; }
trap cleanup EXIT

if [ $BUILD_IT = 1 ]; then
    cmake --build "$BUILD" --target wanmpi mpirun >"$TMP/wanmpi-build.log" 2>&1 ||
        { say "building wanmpi failed (see $TMP/wanmpi-build.log)"; exit 1; }
fi
# wanmpi-2ph: the same binary with two-phase forced (hint romio_cb_write=enable), to show what
# the aggregation costs on this file system next to the default (automatic) choice.
libs=(wanmpi wanmpi-2ph)
"$BUILD/bin/mpicc" -O2 -o "$TMP/io_wanmpi" "$ROOT/bench/io_bench.c" -lm ||
    { say "building io_bench with wanmpi's mpicc failed"; exit 1; }
if command -v mpicc.openmpi >/dev/null && mpicc.openmpi -O2 -w -o "$TMP/io_openmpi" \
    "$ROOT/bench/io_bench.c" -lm 2>>"$TMP/build.log"; then
    libs+=(openmpi)
else
    say "Open MPI (mpicc.openmpi) missing: no comparison"
fi
if [ $MPICH = 1 ] && command -v mpicc.mpich >/dev/null && mpicc.mpich -O2 -w \
    -o "$TMP/io_mpich" "$ROOT/bench/io_bench.c" -lm 2>>"$TMP/build.log"; then
    libs+=(mpich)
fi

run() {  # lib file -> output line
    local m=$1 f=$2
    case $m in
        wanmpi) "$BUILD/bin/mpirun" -n "$NP" --timeout 600 "$TMP/io_wanmpi" "$f" "$MIB" "$REPS" ;;
        wanmpi-2ph) "$BUILD/bin/mpirun" -n "$NP" --timeout 600 -x IO_BENCH_HINTS=romio_cb_write=enable \
            "$TMP/io_wanmpi" "$f" "$MIB" "$REPS" ;;
        openmpi) OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            mpirun.openmpi --oversubscribe -n "$NP" "$TMP/io_openmpi" "$f" "$MIB" "$REPS" ;;
        mpich) UCX_TLS=self,sm mpiexec.mpich -n "$NP" "$TMP/io_mpich" "$f" "$MIB" "$REPS" ;;
    esac 2>>"$TMP/run.log" | grep 'write_s='
}

declare -A times
for ((r = 1; r <= ROUNDS; r++)); do
    for m in "${libs[@]}"; do
        rm -f "$FILES/$m.dat"
        line=$(run "$m" "$FILES/$m.dat")
        say "round $r $m: ${line:-FAILED (see $TMP/run.log)}"
        t=$(sed -n 's/.*write_s=\([0-9.]*\).*/\1/p' <<<"$line")
        [ -n "$t" ] && times[$m]+="$t "
        case $line in *check=ok*) ;; *) say "  $m: read-back check failed" ;; esac
    done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }
bytes=$(stat -c %s "$FILES/wanmpi.dat" 2>/dev/null || echo 0)
echo "MPI-IO collective write, ${NP} ranks, ${MIB} MiB array ($bytes bytes), $DIR, best of $REPS, median of $ROUNDS rounds"
printf '%-10s %12s %10s\n' library seconds MB/s
declare -A med
for m in "${libs[@]}"; do
    med[$m]=$(median <<<"${times[$m]:-}")
    [ -n "${med[$m]}" ] && printf '%-10s %12.4f %10.1f\n' "$m" "${med[$m]}" \
        "$(awk -v b="$bytes" -v t="${med[$m]}" 'BEGIN {print b / t / 1e6}')"
done
status=0
if [ -n "${med[openmpi]:-}" ] && [ -n "${med[wanmpi]:-}" ]; then
    ratio=$(awk -v a="${med[wanmpi]}" -v b="${med[openmpi]}" 'BEGIN {printf "%.2f", a / b}')
    verdict=$(awk -v r="$ratio" 'BEGIN {print (r <= 1.5) ? "within" : "NOT within"}')
    echo "wanmpi / Open MPI = $ratio ($verdict the 1.5x target)"
    [ "$verdict" = within ] || status=1
    if cmp -s "$FILES/wanmpi.dat" "$FILES/openmpi.dat"; then
        echo "file: byte-identical to Open MPI's (cmp)"
    else
        echo "file: DIFFERS from Open MPI's: $(cmp "$FILES/wanmpi.dat" "$FILES/openmpi.dat" 2>&1 | head -1)"
        status=1
    fi
fi
echo "load: $(uptime | sed 's/.*load average/load average/')"
exit $status
