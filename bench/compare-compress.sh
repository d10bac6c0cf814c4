#!/usr/bin/env bash
# compare-compress.sh: what compressing inter-cluster payloads gains and costs (issue 14,
# point 2), next to Open MPI on the same emulated link.
#
#   sudo bench/compare-compress.sh [--build DIR] [--delay 5ms] [--runs N] [--quick]
#                                  [--no-openmpi] [--keep]
#
# Two links, each its own `wanemu up` of two clusters of one host (c0h0, c1h0), one-way delay d:
#   200 Mbit/s, MTU 1500           and   1 Gbit/s, MTU 9000 with GSO super-packets
# On each: bench/compress_bench.c sends 64 MiB (--quick: 16 MiB) from c0h0 to c1h0, of
#   smooth  a smooth double field at full precision,
#   noisy   the same field with noise of 1e-3 in every value (low bits random: measured data),
#   sparse  a mostly-zero buffer (1 double in 64 set),
#   random  random bytes,
# for wanmpi with WANMPI_WAN_COMPRESS=off, auto and zstd:1 and for Open MPI (no compression).
# Reports the median transfer rate of user data (Mbit/s), the ratio to off, and the CPU seconds
# of sender and receiver (getrusage, all transfers of a run).
# Targets (the issue's): >= 3x faster than off for compressible data at 200 Mbit/s with auto;
# auto <= 3 % slower than off for random data.
# A subset: LINKS="b" KINDS="random" MODES="off auto" (environment) with --runs 5 alternates
# off and auto on one link, the fairest comparison on a busy machine.
# Timing thresholds live here, never in ctest. Prints the load average: the machine is shared.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
DELAY=5ms
RUNS=
QUICK=0
OMPI=1
KEEP=0
BENCH_NAME=compare-compress.sh
. "$ROOT/bench/wan_lib.sh"
wan_options "build delay runs quick no-openmpi keep" 21 "$@"

W=$BUILD/bin/wanemu
SITES=$ROOT/tools/wanmpi-sites/wanmpi-sites
wan_prereq "wanemu mpirun impi-server wanmpi wrappers" \
    "$W" "$BUILD/bin/mpicc" "$BUILD/bin/mpirun" "$BUILD/bin/impi-server"

RUN=cz$$
wan_tmp compress "${RUN}a" "${RUN}b"

"$BUILD/bin/mpicc" -O2 -o "$TMP/cb.wanmpi" "$ROOT/bench/compress_bench.c" -lm 2>>"$TMP/build.log" ||
    die "building compress_bench with wanmpi's mpicc failed: $(cat "$TMP/build.log")"
if [ $OMPI = 1 ]; then
    mpicc.openmpi -O2 -o "$TMP/cb.openmpi" "$ROOT/bench/compress_bench.c" -lm 2>>"$TMP/build.log" ||
        die "building compress_bench with mpicc.openmpi failed"
fi

if [ $QUICK = 1 ]; then ARGS=(-B 16 -r 1); else ARGS=(-B 64 -r 3); fi
MODES=${MODES:-off auto zstd:1}
KINDS=${KINDS:-smooth noisy sparse random}
LINKS=${LINKS:-a b}

run_wanmpi() {  # RUN MODE KIND
    WANEMU_RUN=$1 timeout 300 "$SITES" --bin "$BUILD/bin" --run "$1" -n 1 --timeout 250 -q \
        -x WANMPI_WAN_COMPRESS="$2" -x WANMPI_WAN_STATS="$TMP/stats.csv" -- \
        "$TMP/cb.wanmpi" -k "$3" "${ARGS[@]}"
}
run_openmpi() {  # RUN KIND
    wan_ompi2 "$1" "$TMP/cb.openmpi" -k "$2" "${ARGS[@]}"
}
# zratio FILE: compressed/raw bytes rank 0 sent (from the WANMPI_WAN_STATS CSV), "-" if none.
zratio() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             $(c["rank"]) == 0 { r += $(c["z_raw_sent"]); z += $(c["z_sent"]) }
             END { if (r > 0) printf "%.3f\n", z / r; else print "-" }' "$1" 2>/dev/null || echo "-"
}

say "load before: $(uptime)"
wan_two_links "$RUN"
for r in $(seq 1 "$RUNS"); do
    say "run $r of $RUNS"
    for link in $LINKS; do
        for kind in $KINDS; do
            for mode in $MODES; do
                f="$TMP/$link.$kind.${mode/:/}.$r"
                rm -f "$TMP/stats.csv"
                run_wanmpi "${RUN}$link" "$mode" "$kind" >"$f" 2>&1 ||
                    say "wanmpi $mode, $kind, link $link failed (see $f)"
                echo "zratio $(zratio "$TMP/stats.csv")" >>"$f"
            done
            if [ $OMPI = 1 ]; then
                run_openmpi "${RUN}$link" "$kind" >"$TMP/$link.$kind.ompi.$r" 2>&1 ||
                    say "Open MPI, $kind, link $link failed (see $TMP/$link.$kind.ompi.$r)"
            fi
        done
    done
done
say "load after: $(uptime)"

echo
echo "== compression between clusters: 2 sites, one-way delay $DELAY, $( [ $QUICK = 1 ] && echo 16 || echo 64) MiB one way ($RUNS run(s), medians)"
echo "   load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
for link in $LINKS; do
    [ $link = a ] && name="200 Mbit/s, MTU 1500" || name="1 Gbit/s, MTU 9000 + GSO"
    echo
    echo "link $name"
    printf '  %-7s %-9s %10s %8s %8s %7s %7s\n' data mode Mbit/s "x off" "z ratio" "cpu0 s" "cpu1 s"
    for kind in $KINDS; do
        off=$(m mbit "$TMP/$link.$kind.off")
        for mode in $MODES ompi; do
            [ $mode = ompi ] && [ $OMPI = 0 ] && continue
            p="$TMP/$link.$kind.${mode/:/}"
            v=$(m mbit "$p")
            printf '  %-7s %-9s %10s %8s %8s %7s %7s\n' "$kind" "$([ $mode = ompi ] && echo 'Open MPI' || echo "$mode")" \
                "$v" "$(awk -v a="$v" -v b="$off" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "-"; else printf "%.2f", a / b }')" \
                "$([ $mode = ompi ] && echo - || m zratio "$p")" "$(m cpu_s_0 "$p")" "$(m cpu_s_1 "$p")"
        done
    done
    if [ $link = a ]; then
        awk -v s="$(m mbit "$TMP/a.sparse.auto")" -v so="$(m mbit "$TMP/a.sparse.off")" \
            -v m="$(m mbit "$TMP/a.smooth.auto")" -v mo="$(m mbit "$TMP/a.smooth.off")" 'BEGIN {
            if (s == "n/a" || so == "n/a") { print "  (a measurement is missing)"; exit }
            printf "  target >= 3x for compressible data with auto: sparse %.2fx %s; smooth %.2fx %s\n",
                s / so, (s >= 3 * so) ? "met" : "NOT met", (mo > 0 ? m / mo : 0), (m >= 3 * mo) ? "met" : "NOT met" }'
    fi
    awk -v a="$(m mbit "$TMP/$link.random.auto")" -v o="$(m mbit "$TMP/$link.random.off")" 'BEGIN {
        if (a == "n/a" || o == "n/a") { print "  (a measurement is missing)"; exit }
        printf "  target auto <= 3 %% slower than off for random data: %+.1f %% %s\n",
            100 * (a / o - 1), (a >= 0.97 * o) ? "met" : "NOT met" }'
done
echo "  (raw outputs: $TMP $([ $KEEP = 1 ] || echo '(removed; --keep keeps them)'))"
