#!/usr/bin/env bash
# compare-p2p.sh: point-to-point performance of wanmpi next to Debian's MPICH and Open MPI, all
# measured in the same run on this machine, from the same benchmark sources (bench/*.c).
#
#   bench/compare-p2p.sh [--build DIR] [--no-build] [--quick] [--rounds N] [--no-install] [--keep]
#
#   --build DIR    wanmpi build tree (default: <repo>/build); its bench targets are built with
#                  `cmake --build DIR --target benchmarks mpirun` (or, failing that, compiled
#                  with DIR/bin/mpicc). Without a working wanmpi the wanmpi column reads n/a and
#                  the other two are still measured.
#   --no-build     use DIR as it is (no cmake --build)
#   --quick        fewer iterations and shorter runs (to check the set-up, not for numbers)
#   --rounds N     measure everything N times, interleaved (round 1: every MPI, then round 2...),
#                  and report the median over rounds (default 3; 1 with --quick). The machine is
#                  shared, so load comes and goes: interleaving gives every MPI the same
#                  conditions, and the median drops the rounds a burst of load spoiled.
#   --no-install   do not apt-get install MPICH / Open MPI when they are missing
#   --keep         keep the temporary directory with the binaries and raw outputs
#
# Routes: shm = 2 ranks on this host with each library's default (shared memory);
#         tcp = 2 ranks forced onto TCP: WANMPI_TRANSPORTS=self,tcp, UCX_TLS=tcp,self for MPICH
#               (Debian's MPICH runs over UCX), --mca pml ob1 --mca btl tcp,self for Open MPI;
#               plus a plain TCP ping-pong (bench/tcp_pingpong.c) as the floor.
# The load average at the start and end of every round is printed with the table.
# Then: a ring of 10,000 messages on 8 ranks, the CPU used by a rank blocked in MPI_Recv, and
# the wall time of `mpirun -n 8` on a hello world. The closing block checks issue 2's "Done when"
# targets; those thresholds live here and nowhere else. See docs/benchmarks.md.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
QUICK=0
ROUNDS=
BUILD_IT=1
INSTALL=1
KEEP=0
while [ $# -gt 0 ]; do
    case $1 in
        --build) BUILD=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift 2 ;;
        --quick) QUICK=1; shift ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --no-build) BUILD_IT=0; shift ;;
        --no-install) INSTALL=0; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare-p2p.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

say() { printf '%s\n' "$*" >&2; }
[ -n "$ROUNDS" ] || { [ $QUICK = 1 ] && ROUNDS=1 || ROUNDS=3; }
case $ROUNDS in ''|*[!0-9]*|0) echo "compare-p2p.sh: --rounds needs a positive number" >&2; exit 2 ;; esac

# ---- prerequisites ----------------------------------------------------------------------------
need_pkgs=()
command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null ||
    need_pkgs+=(mpich libmpich-dev)
command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null ||
    need_pkgs+=(openmpi-bin libopenmpi-dev)
command -v cc >/dev/null || need_pkgs+=(gcc)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    if [ $INSTALL = 1 ] && [ "$(id -u)" = 0 ]; then
        say "installing ${need_pkgs[*]} with apt-get"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends "${need_pkgs[@]}" >/dev/null ||
            { apt-get update >/dev/null && apt-get install -y --no-install-recommends \
                "${need_pkgs[@]}" >/dev/null; } ||
            { say "apt-get install ${need_pkgs[*]} failed"; exit 1; }
    else
        say "missing: ${need_pkgs[*]} (install them, or run as root without --no-install)"
        exit 1
    fi
fi

TMP=$(mktemp -d /tmp/wanmpi-bench.XXXXXX)
if [ $KEEP = 1 ]; then say "keeping $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi
RES=$TMP/results
mkdir -p "$RES"

# ---- build ------------------------------------------------------------------------------------
BENCHES="pingpong bandwidth ring idle_cpu hello"
for m in mpich openmpi; do
    mkdir -p "$TMP/$m"
    for b in $BENCHES; do
        "mpicc.$m" -O2 -w -o "$TMP/$m/$b" "$ROOT/bench/$b.c" 2>>"$TMP/build.log" ||
            { say "building $b with mpicc.$m failed (see $TMP/build.log)"; exit 1; }
    done
done
cc -O2 -w -o "$TMP/tcp_pingpong" "$ROOT/bench/tcp_pingpong.c" 2>>"$TMP/build.log" ||
    { say "building tcp_pingpong failed"; exit 1; }

WANMPI=0
MPIRUN=$BUILD/bin/mpirun
if [ $BUILD_IT = 1 ] && [ -f "$BUILD/CMakeCache.txt" ]; then
    say "building wanmpi benchmarks in $BUILD"
    cmake --build "$BUILD" --target benchmarks mpirun >"$TMP/wanmpi-build.log" 2>&1 ||
        say "wanmpi build failed (see $TMP/wanmpi-build.log); trying what is there"
fi
if [ -x "$MPIRUN" ]; then
    mkdir -p "$TMP/wanmpi"
    WANMPI=1
    for b in $BENCHES; do
        if [ -x "$BUILD/bench/bench_$b" ]; then
            ln -sf "$BUILD/bench/bench_$b" "$TMP/wanmpi/$b"
        elif [ -x "$BUILD/bin/mpicc" ] &&
            "$BUILD/bin/mpicc" -O2 -w -o "$TMP/wanmpi/$b" "$ROOT/bench/$b.c" 2>>"$TMP/build.log"; then
            :
        else
            WANMPI=0
        fi
    done
fi
# A half-finished rebuild can leave binaries without their library: check that one runs.
if [ $WANMPI = 1 ] && ! "$MPIRUN" -n 1 --timeout 60 "$TMP/wanmpi/hello" >"$TMP/wanmpi-check.log" 2>&1; then
    say "wanmpi's hello does not run (see $TMP/wanmpi-check.log)"
    WANMPI=0
fi
[ $WANMPI = 1 ] || say "wanmpi not available in $BUILD: its column reads n/a"
MPIS="mpich openmpi"
[ $WANMPI = 1 ] && MPIS="wanmpi $MPIS"

# ---- running ----------------------------------------------------------------------------------
TIMEOUT=600
# run MPI ROUTE NP PROGRAM ARGS...: runs one job, stdout to stdout, stderr to the log.
run() {
    local mpi=$1 route=$2 np=$3 prog=$4
    shift 4
    case $mpi in
        wanmpi)
            if [ "$route" = tcp ]; then
                WANMPI_TRANSPORTS=self,tcp "$MPIRUN" -n "$np" --timeout $TIMEOUT "$TMP/wanmpi/$prog" "$@"
            else
                "$MPIRUN" -n "$np" --timeout $TIMEOUT "$TMP/wanmpi/$prog" "$@"
            fi ;;
        mpich)
            if [ "$route" = tcp ]; then
                UCX_TLS=tcp,self MPIEXEC_TIMEOUT=$TIMEOUT mpiexec.mpich -n "$np" "$TMP/mpich/$prog" "$@"
            else
                MPIEXEC_TIMEOUT=$TIMEOUT mpiexec.mpich -n "$np" "$TMP/mpich/$prog" "$@"
            fi ;;
        openmpi)
            local tcp=()
            [ "$route" = tcp ] && tcp=(--mca pml ob1 --mca btl tcp,self)
            OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
                mpirun.openmpi --oversubscribe --timeout $TIMEOUT -n "$np" "${tcp[@]}" \
                "$TMP/openmpi/$prog" "$@" ;;
    esac 2>>"$TMP/run.log"
}

# measure KEY MPI ROUTE NP PROG ARGS...: keeps "<size> <value>" lines (column 2) in RES/KEY;
# one retry, since MPICH over UCX/TCP occasionally hangs in MPI_Finalize.
measure() {
    local key=$1
    shift
    local out
    for attempt in 1 2; do
        if out=$(run "$@"); then
            printf '%s\n' "$out" >"$RES/raw.$key"
            printf '%s\n' "$out" | awk '/^[0-9]/ {print $1, $2}' >"$RES/$key"
            return 0
        fi
        say "  $key: attempt $attempt failed"
        printf '%s\n' "$out" >"$RES/raw.$key"
        # Keep whatever sizes completed before a failure.
        printf '%s\n' "$out" | awk '/^[0-9]/ {print $1, $2}' >"$RES/$key"
    done
    return 1
}

Q=()
[ $QUICK = 1 ] && Q=(-q)
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# median_of OUT IN...: "<size> <value>" files -> per size, the median over the files that have it.
median_of() {
    local out=$1
    shift
    awk '{ v[$1] = v[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
        END {
            for (k = 1; k <= n; k++) {
                m = split(substr(v[order[k]], 2), a, " ")
                for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j] + 0 < a[j - 1] + 0; j--) {
                    t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
                printf "%s %s\n", order[k], (m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2)
            }
        }' "$@" >"$out"
}

# Ring, 8 ranks. MPICH spins in every waiting rank, which costs a scheduler time slice per hop
# on 2 cores (~10 ms): it runs a shorter ring and its time for 10,000 is extrapolated.
RING_MSGS=10000
[ $QUICK = 1 ] && RING_MSGS=2000
: >"$RES/load"
for round in $(seq "$ROUNDS"); do
    l0=$(loadavg)
    for route in shm tcp; do
        for m in $MPIS; do
            say "round $round/$ROUNDS: pingpong  $route $m"
            measure "lat.$route.$m.r$round" "$m" "$route" 2 pingpong "${Q[@]}"
            say "round $round/$ROUNDS: bandwidth $route $m"
            measure "bw.$route.$m.r$round" "$m" "$route" 2 bandwidth "${Q[@]}"
        done
        if [ $route = tcp ]; then
            say "round $round/$ROUNDS: tcp_pingpong"
            "$TMP/tcp_pingpong" "${Q[@]}" 2>>"$TMP/run.log" | awk '/^[0-9]/ {print $1, $2}' \
                >"$RES/lat.tcp.plain.r$round"
        fi
    done
    for m in $MPIS; do
        n=$RING_MSGS runs=3
        [ $m = mpich ] && { n=400; runs=1; }
        [ $QUICK = 1 ] && runs=1
        say "round $round/$ROUNDS: ring      8 ranks $m ($n messages)"
        if out=$(run "$m" shm 8 ring -n $n -r $runs); then
            # "<seconds for RING_MSGS> <µs per message> <1 if extrapolated>"
            printf '%s\n' "$out" | awk -v total=$RING_MSGS \
                '$1 == "ring" {printf "%.4f %.2f %d\n", $5 * total / 1e6, $5, $3 != total}' \
                >"$RES/ring.$m.r$round"
        fi
    done
    echo "round $round: load $l0 -> $(loadavg)" >>"$RES/load"
done
for k in lat.shm lat.tcp bw.shm bw.tcp; do
    for m in $MPIS plain; do
        ls "$RES/$k.$m".r* >/dev/null 2>&1 && median_of "$RES/$k.$m" "$RES/$k.$m".r*
    done
done
for m in $MPIS; do
    # ring: median over rounds of "<seconds> <µs>" (keyed on a dummy size), extrapolation flag kept
    ls "$RES/ring.$m".r* >/dev/null 2>&1 || continue
    awk '{print 0, $1}' "$RES/ring.$m".r* >"$RES/ring.$m.s"
    awk '{print 0, $2}' "$RES/ring.$m".r* >"$RES/ring.$m.us"
    median_of "$RES/ring.$m.sm" "$RES/ring.$m.s"
    median_of "$RES/ring.$m.usm" "$RES/ring.$m.us"
    printf '%s %s %s\n' "$(awk '{print $2}' "$RES/ring.$m.sm")" "$(awk '{print $2}' "$RES/ring.$m.usm")" \
        "$(awk '{print $3; exit}' "$RES/ring.$m".r1 2>/dev/null || echo 0)" >"$RES/ring.$m"
    printf '%s' "ring $m per round (s):" >>"$RES/ring.rounds"
    awk '{printf " %s", $1}' "$RES/ring.$m".r* >>"$RES/ring.rounds"
    echo >>"$RES/ring.rounds"
done

IDLE_SECS=3
[ $QUICK = 1 ] && IDLE_SECS=1
for m in $MPIS; do
    say "idle_cpu  $m (${IDLE_SECS} s)"
    out=$(run "$m" shm 2 idle_cpu $IDLE_SECS) &&
        printf '%s\n' "$out" | awk '$1 == "idle_cpu" {print $4}' >"$RES/idle.$m"
done

HELLO_RUNS=5
[ $QUICK = 1 ] && HELLO_RUNS=3
for m in $MPIS; do
    say "hello     -n 8 $m"
    : >"$RES/hello.$m.all"
    for i in $(seq $HELLO_RUNS); do
        t0=$(date +%s%N)
        run "$m" shm 8 hello >/dev/null || { echo fail >>"$RES/hello.$m.all"; continue; }
        t1=$(date +%s%N)
        echo "$(( (t1 - t0) / 1000 ))" >>"$RES/hello.$m.all"
    done
    grep -q fail "$RES/hello.$m.all" ||
        sort -n "$RES/hello.$m.all" | awk '{v[NR] = $1} END {printf "%.3f\n", v[int((NR + 1) / 2)] / 1e6}' \
            >"$RES/hello.$m"
done

# ---- report -----------------------------------------------------------------------------------
val() { [ -s "$RES/$1" ] && cat "$RES/$1" || echo n/a; }
# lookup FILE SIZE: the value for SIZE, or n/a
lookup() { [ -s "$RES/$1" ] && awk -v s="$2" '$1 == s {print $2; f = 1} END {if (!f) print "n/a"}' "$RES/$1" || echo n/a; }

# table TITLE NAME=FILE ...: one row per size; ratio columns wanmpi/each other column.
table() {
    local title=$1
    shift
    echo
    echo "$title"
    local args=() f
    for f in "$@"; do args+=("${f%%=*}" "$RES/${f#*=}"); done
    awk -v ncol=$# '
        BEGIN {
            for (i = 1; i <= ncol; i++) {
                name[i] = ARGV[2 * i - 1]; file = ARGV[2 * i]
                while ((getline line < file) > 0) {
                    split(line, p, " ")
                    v[i, p[1]] = p[2]
                    if (!(p[1] in seen)) { seen[p[1]] = 1; sizes[++ns] = p[1] + 0 }
                }
                ARGV[2 * i - 1] = ""; ARGV[2 * i] = ""
            }
            # sort sizes numerically
            for (a = 2; a <= ns; a++) for (b = a; b > 1 && sizes[b] < sizes[b - 1]; b--) {
                t = sizes[b]; sizes[b] = sizes[b - 1]; sizes[b - 1] = t }
            printf "%10s", "bytes"
            for (i = 1; i <= ncol; i++) printf " %10s", name[i]
            for (i = 2; i <= ncol; i++) printf " %9s", "w/" substr(name[i], 1, 7)
            printf "\n"
            for (k = 1; k <= ns; k++) {
                s = sizes[k]
                printf "%10s", (s >= 1048576 ? s / 1048576 "M" : s >= 1024 ? s / 1024 "K" : s)
                for (i = 1; i <= ncol; i++) printf " %10s", ((i, s) in v) ? v[i, s] : "n/a"
                for (i = 2; i <= ncol; i++) {
                    if (((1, s) in v) && ((i, s) in v) && v[i, s] > 0)
                        printf " %9.2f", v[1, s] / v[i, s]
                    else printf " %9s", "n/a"
                }
                printf "\n"
            }
        }' "${args[@]}"
}

echo
echo "wanmpi vs MPICH $(mpichversion 2>/dev/null | awk '/Version/ {print $3}') and Open MPI" \
    "$(ompi_info --version 2>/dev/null | awk 'NR == 1 {print $NF}'), $(nproc) cores," \
    "$(date -u +%Y-%m-%dT%H:%MZ)$([ $QUICK = 1 ] && echo ', QUICK run')"
echo "median over $ROUNDS interleaved round(s); load average (1/5/15 min) per round:"
sed 's/^/  /' "$RES/load"
table "Latency, shm route (2 ranks, one host): half round trip, median, µs" \
    wanmpi=lat.shm.wanmpi MPICH=lat.shm.mpich OpenMPI=lat.shm.openmpi
table "Latency, tcp route (2 ranks over TCP): half round trip, median, µs; TCP = plain socket" \
    wanmpi=lat.tcp.wanmpi MPICH=lat.tcp.mpich OpenMPI=lat.tcp.openmpi TCP=lat.tcp.plain
table "Bandwidth, shm route: window of 64 MPI_Isend, median, MB/s (ratio > 1: wanmpi faster)" \
    wanmpi=bw.shm.wanmpi MPICH=bw.shm.mpich OpenMPI=bw.shm.openmpi
table "Bandwidth, tcp route: MB/s" \
    wanmpi=bw.tcp.wanmpi MPICH=bw.tcp.mpich OpenMPI=bw.tcp.openmpi

echo
echo "8 ranks on $(nproc) cores                     wanmpi       MPICH     OpenMPI"
ring_s() { [ -s "$RES/ring.$1" ] && awk '{printf "%s%.3f", ($3 ? "*" : ""), $1}' "$RES/ring.$1" || echo n/a; }
ring_us() { [ -s "$RES/ring.$1" ] && awk '{printf "%.1f", $2}' "$RES/ring.$1" || echo n/a; }
printf '%-40s %11s %11s %11s\n' "ring, 10,000 messages (s)" "$(ring_s wanmpi)" "$(ring_s mpich)" "$(ring_s openmpi)"
printf '%-40s %11s %11s %11s\n' "ring, per message (µs)" "$(ring_us wanmpi)" "$(ring_us mpich)" "$(ring_us openmpi)"
printf '%-40s %11s %11s %11s\n' "idle rank in MPI_Recv (% of a core)" "$(val idle.wanmpi)" "$(val idle.mpich)" "$(val idle.openmpi)"
printf '%-40s %11s %11s %11s\n' "mpirun -n 8 hello, median wall (s)" "$(val hello.wanmpi)" "$(val hello.mpich)" "$(val hello.openmpi)"
echo "(* = extrapolated from a shorter ring: MPICH's spinning ranks need ~10 ms per hop here)"
[ -s "$RES/ring.rounds" ] && sed 's/^/  /' "$RES/ring.rounds"
echo "load at the end: $(loadavg)"

# ---- issue 2 "Done when" checks ---------------------------------------------------------------
# verdict VALUE OP LIMIT: PASS/FAIL, or n/a when the value is missing
verdict() {
    case $1 in n/a|""|\*) echo n/a; return ;; esac
    awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
        ok = (op == "<=") ? (v <= l) : (op == ">=") ? (v >= l) : (v < l)
        print ok ? "PASS" : "FAIL" }'
}
ratio() {
    case "$1$2" in *n/a*) echo n/a; return ;; esac
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'
}
r_lat=$(ratio "$(lookup lat.shm.wanmpi 8)" "$(lookup lat.shm.mpich 8)")
r_bw=$(ratio "$(lookup bw.shm.wanmpi 4194304)" "$(lookup bw.shm.mpich 4194304)")
r_tcp=$(ratio "$(lookup lat.tcp.wanmpi 8)" "$(lookup lat.tcp.plain 8)")
r_ring=n/a
[ -s "$RES/ring.wanmpi" ] && [ -s "$RES/ring.openmpi" ] &&
    r_ring=$(ratio "$(awk '{print $1}' "$RES/ring.wanmpi")" "$(awk '{print $1}' "$RES/ring.openmpi")")
idle=$(val idle.wanmpi)
hello=$(val hello.wanmpi)
echo
echo "Issue 2 \"Done when\" (wanmpi)"
printf '  %-52s %8s  %-8s %s\n' "shm 8 B latency / MPICH's" "$r_lat" "<= 1.5" "$(verdict "$r_lat" "<=" 1.5)"
printf '  %-52s %8s  %-8s %s\n' "shm 4 MiB bandwidth / MPICH's" "$r_bw" ">= 0.8" "$(verdict "$r_bw" ">=" 0.8)"
printf '  %-52s %8s  %-8s %s\n' "tcp route 8 B latency / plain TCP ping-pong" "$r_tcp" "<= 1.2" "$(verdict "$r_tcp" "<=" 1.2)"
printf '  %-52s %8s  %-8s %s\n' "ring 10,000 msgs, 8 ranks: time / Open MPI's" "$r_ring" "<= 2" "$(verdict "$r_ring" "<=" 2)"
printf '  %-52s %8s  %-8s %s\n' "idle rank in MPI_Recv, % of a core" "$idle" "< 5" "$(verdict "$idle" "<" 5)"
printf '  %-52s %8s  %-8s %s\n' "mpirun -n 8 hello world, s" "$hello" "< 1" "$(verdict "$hello" "<" 1)"
[ $QUICK = 1 ] && echo "  (quick run: fewer iterations; rerun without --quick for numbers to quote)"
exit 0
