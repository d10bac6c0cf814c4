#!/usr/bin/env bash
# compare-wan.sh: one MPI job over two emulated sites (wanemu), wanmpi next to plain TCP and Open
# MPI on the same link: the numbers of issue 6's "Done when".
#
#   sudo bench/compare-wan.sh [--build DIR] [--delay 10ms] [--rate 200mbit] [--runs N] [--quick]
#                             [--no-openmpi] [--keep]
#
#   --build DIR    wanmpi build tree (default <repo>/build): bin/mpicc, mpirun, impi-server,
#                  wanemu, wanemu-bulk
#   --delay/--rate the emulated link (default 10 ms one way, 200 Mbit/s, queue one BDP)
#   --runs N       repeat every measurement N times (new processes each time) and report the
#                  median of the runs (default 3; 1 with --quick)
#   --quick        small sizes and few samples: checks the set-up, the numbers mean little
#   --no-openmpi   skip Open MPI
#   --keep         keep the temporary directory (binaries, raw outputs)
#
# Set-up: `wanemu up` of two clusters of one host each (c0h0, c1h0), linked by the link above.
#   TCP      bench/wan_tcp_pingpong (1-byte ping-pong, TCP_NODELAY) and wanemu-bulk (one cubic
#            flow, goodput measured by the receiver) between c0h0 and c1h0;
#   wanmpi   tools/wanmpi-sites --run: impi-server on c0h0, `mpirun -client 0` on c0h0 and
#            `mpirun -client 1` on c1h0, default IMPI settings;
#   Open MPI mpirun.openmpi on c0h0 with --host c0h0:K,c1h0:K and `wanemu exec` as its rsh agent,
#            pml ob1 + btl tcp,self,vader (PLATFORM.md).
# The program is bench/wan_bench.c for both MPIs (see its header for the method: common start on
# the machine's one clock, time to the last rank's return, medians). Latency and the 64 MiB
# transfer run with one rank per site (idle extra ranks only steal the 2 cores); the collectives
# with two ranks per site.
#
# Lower bounds (d = one-way delay, R = link rate): barrier d (each side's arrival must cross
# once; IMPI's master-based linear barrier needs 2d); Bcast/Allreduce of S bytes d + S/R;
# Alltoall of 64 KiB per pair over 2 x 2 ranks: each direction carries 4 x 64 KiB, so
# d + 256 KiB/R. The rate is the link's IP rate: TCP/IP headers alone cost 3.5 % at MTU 1500.
# Timing thresholds live here and in no test. Prints the load average: the machine is shared.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
DELAY=10ms
RATE=200mbit
RUNS=
QUICK=0
OMPI=1
KEEP=0
BENCH_NAME=compare-wan.sh
. "$ROOT/bench/wan_lib.sh"
wan_options "build delay rate runs quick no-openmpi keep" 37 "$@"

W=$BUILD/bin/wanemu
SITES=$ROOT/tools/wanmpi-sites/wanmpi-sites
wan_prereq "wanemu wanemu-bulk mpirun impi-server wanmpi wrappers" \
    "$W" "$BUILD/bin/wanemu-bulk" "$BUILD/bin/mpicc" "$BUILD/bin/mpirun" "$BUILD/bin/impi-server"

RUN=cw$$
wan_tmp wan "$RUN"

# ---- build ----------------------------------------------------------------------------------------
wan_build_tcp_pingpong
"$BUILD/bin/mpicc" -O2 -o "$TMP/wan_bench.wanmpi" "$ROOT/bench/wan_bench.c" 2>>"$TMP/build.log" ||
    die "building wan_bench with wanmpi's mpicc failed: $(cat "$TMP/build.log")"
if [ $OMPI = 1 ]; then
    mpicc.openmpi -O2 -o "$TMP/wan_bench.openmpi" "$ROOT/bench/wan_bench.c" 2>>"$TMP/build.log" ||
        die "building wan_bench with mpicc.openmpi failed"
fi

# ---- sites ----------------------------------------------------------------------------------------
"$W" up --name "$RUN" --clusters 2 --hosts 1 --delay "$DELAY" --rate "$RATE" --watch-pid $$ \
    --quiet || die "wanemu up failed"
export WANEMU_RUN=$RUN  # every `wanemu exec` (ours, Open MPI's agent) uses this run
d_ms=$(awk -v s="$DELAY" 'BEGIN { v = s + 0; if (s ~ /us$/) v /= 1000; else if (s ~ /s$/ && s !~ /ms$/) v *= 1000; print v }')
rate_bps=$(awk -v s="$RATE" 'BEGIN { v = s + 0; if (s ~ /gbit/) v *= 1e9; else if (s ~ /mbit/) v *= 1e6; else if (s ~ /kbit/) v *= 1e3; print v }')

if [ $QUICK = 1 ]; then
    LAT="-l 30"; BULK="-B 8 -r 1"; SAMP="-s 3"; TCPN=30; BULKT=2s
else
    LAT="-l 200"; BULK="-B 64 -r 3"; SAMP="-s 15"; TCPN=200; BULKT=5s
fi
COLLS=barrier,bcast1k,bcast1m,allreduce8,allreduce1m,alltoall64k
OMPI_ENV=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
OMPI_ARGS=(--oversubscribe --mca plm_rsh_agent "$W exec" --mca pml ob1 --mca btl tcp,self,vader
           --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0)

run_wanmpi() {  # NP-per-site ARGS...
    local np=$1; shift
    timeout 600 "$SITES" --bin "$BUILD/bin" --run "$RUN" -n "$np" --timeout 500 -q -- \
        "$TMP/wan_bench.wanmpi" "$@"
}
run_openmpi() {  # NP-per-site ARGS...
    local np=$1; shift
    env "${OMPI_ENV[@]}" timeout 600 "$W" exec c0h0 -- mpirun.openmpi "${OMPI_ARGS[@]}" \
        --host "c0h0:$np,c1h0:$np" -np $((2 * np)) "$TMP/wan_bench.openmpi" "$@"
}

say "load before: $(uptime)"
for r in $(seq 1 "$RUNS"); do
    say "run $r of $RUNS"
    # TCP floor: latency and goodput on the same link.
    "$W" exec c1h0 -- timeout 120 "$TMP/wan_tcp_pingpong" server -p 5599 >/dev/null 2>&1 &
    srv=$!
    "$W" exec c0h0 -- "$TMP/wan_tcp_pingpong" client c1h0:5599 -n $TCPN >"$TMP/tcp.$r" 2>&1
    wait $srv 2>/dev/null
    "$W" exec c1h0 -- timeout 120 "$BUILD/bin/wanemu-bulk" server -p 5201 --once >/dev/null 2>&1 &
    srv=$!
    "$W" exec c0h0 -- "$BUILD/bin/wanemu-bulk" send c1h0:5201 -t $BULKT >"$TMP/bulk.$r" 2>&1
    wait $srv 2>/dev/null
    run_wanmpi 1 $LAT $BULK -t lat,bulk >"$TMP/wanmpi.p2p.$r" 2>&1 ||
        say "wanmpi lat/bulk failed (see $TMP/wanmpi.p2p.$r)"
    run_wanmpi 2 $SAMP -t $COLLS >"$TMP/wanmpi.coll.$r" 2>&1 ||
        say "wanmpi collectives failed (see $TMP/wanmpi.coll.$r)"
    if [ $OMPI = 1 ]; then
        run_openmpi 1 $LAT $BULK -t lat,bulk >"$TMP/openmpi.p2p.$r" 2>&1 ||
            say "Open MPI lat/bulk failed (see $TMP/openmpi.p2p.$r)"
        run_openmpi 2 $SAMP -t $COLLS >"$TMP/openmpi.coll.$r" 2>&1 ||
            say "Open MPI collectives failed (see $TMP/openmpi.coll.$r)"
    fi
done
say "load after: $(uptime)"

tcp_lat=$(m tcp_lat_us "$TMP/tcp")
tcp_mbit=$(for r in $(seq 1 "$RUNS"); do sed -n 's/.*steady_mbit=\([0-9.]*\).*/\1/p' "$TMP/bulk.$r"; done | median)
mpis="wanmpi"
[ $OMPI = 1 ] && mpis="wanmpi openmpi"

echo
echo "== wanmpi over two emulated sites: one-way delay $DELAY, rate $RATE ($RUNS run(s), medians)"
echo "   load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo
printf '%-34s %12s %12s %12s\n' "1-byte half round trip" "TCP" "wanmpi" "Open MPI"
lat_w=$(m lat_us "$TMP/wanmpi.p2p")
lat_o=n/a; [ $OMPI = 1 ] && lat_o=$(m lat_us "$TMP/openmpi.p2p")
printf '%-34s %10s us %10s us %10s us\n' "" "$tcp_lat" "$lat_w" "$lat_o"
awk -v t="$tcp_lat" -v w="$lat_w" -v o="$lat_o" 'BEGIN {
    if (t + 0 <= 0 || w == "n/a") { print "  (no ratio: a measurement is missing)"; exit }
    lim = t * 1.05 + 200
    printf "  wanmpi / TCP = %.3f (%+.0f us); target <= 5 %% + 0.2 ms (%.0f us): %s\n", w / t, w - t, lim, (w <= lim) ? "met" : "NOT met"
    if (o != "n/a") printf "  Open MPI / TCP = %.3f; wanmpi / Open MPI = %.3f\n", o / t, w / o }'
echo
bulk_w=$(m bulk_mbit "$TMP/wanmpi.p2p")
first_w=$(m bulk_first_ms "$TMP/wanmpi.p2p")
bulk_o=n/a; [ $OMPI = 1 ] && bulk_o=$(m bulk_mbit "$TMP/openmpi.p2p")
echo "Bulk transfer rank 0 -> other site ($([ $QUICK = 1 ] && echo 8 || echo 64) MiB, one MPI_Send)"
awk -v R="$rate_bps" -v t="$tcp_mbit" -v w="$bulk_w" -v o="$bulk_o" -v f="$first_w" 'BEGIN {
    L = R / 1e6
    printf "  link %.0f Mbit/s; TCP goodput (one flow) %s Mbit/s = %.1f %% of the link\n", L, t, 100 * t / L
    if (w != "n/a") printf "  wanmpi  %s Mbit/s = %.1f %% of the link (%.1f %% of TCP); target >= 90 %% of the link: %s\n", w, 100 * w / L, 100 * w / t, (w >= 0.9 * L) ? "met" : "NOT met"
    if (f != "n/a") printf "          (first transfer, with TCP slow start: %s ms)\n", f
    if (o != "n/a") printf "  Open MPI %s Mbit/s = %.1f %% of the link; wanmpi / Open MPI = %.2f\n", o, 100 * o / L, w / o }'
echo
echo "Collectives over 2 sites x 2 ranks: time from a common start to the last return"
printf '  %-22s %10s %8s %10s %8s %12s %8s\n' "" "wanmpi" "/ d" "bound" "/ bound" "Open MPI" "/ bound"
for c in barrier bcast1k bcast1m allreduce8 allreduce1m alltoall64k; do
    w=$(m ${c}_ms "$TMP/wanmpi.coll")
    o=n/a; [ $OMPI = 1 ] && o=$(m ${c}_ms "$TMP/openmpi.coll")
    case $c in
        barrier) bytes=0; label="Barrier" ;;
        bcast1k) bytes=1024; label="Bcast 1 KiB" ;;
        bcast1m) bytes=1048576; label="Bcast 1 MiB" ;;
        allreduce8) bytes=8; label="Allreduce 8 B" ;;
        allreduce1m) bytes=1048576; label="Allreduce 1 MiB" ;;
        alltoall64k) bytes=262144; label="Alltoall 64 KiB/pair" ;;
    esac
    awk -v l="$label" -v w="$w" -v o="$o" -v d="$d_ms" -v b="$bytes" -v R="$rate_bps" 'BEGIN {
        bound = d + b * 8 / R * 1000
        ws = (w == "n/a") ? "n/a" : sprintf("%.1f ms", w); wd = (w == "n/a") ? "" : sprintf("%.2f", w / d)
        wb = (w == "n/a") ? "" : sprintf("%.2f", w / bound)
        os = (o == "n/a") ? "n/a" : sprintf("%.1f ms", o); ob = (o == "n/a") ? "" : sprintf("%.2f", o / bound)
        printf "  %-22s %10s %8s %7.1f ms %8s %12s %8s\n", l, ws, wd, bound, wb, os, ob }'
done
echo
echo "  (d = $d_ms ms; bound: barrier d, Bcast/Allreduce d + S/R, Alltoall d + 256 KiB/R;"
echo "   raw outputs: $TMP $([ $KEEP = 1 ] || echo '(removed; --keep keeps them)'))"
