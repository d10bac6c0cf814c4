#!/usr/bin/env bash
# compare-relay-security.sh: what security costs through impi-relay (issue 13), next to the same
# settings between public clusters on the same emulated sites.
#
#   sudo bench/compare-relay-security.sh [--build DIR] [--runs N] [--quick] [--keep]
#
# One `wanemu up`: clusters c0, c1, c2 of two hosts, c1 private (its front-end c1h0 runs the
# relay), 1 Gbit/s, MTU 9000, 512 KB queues. One rank per cluster on its compute host (h1,
# `wanmpi-sites --compute-only`: the relay is alone on its front-end). bench/relay_kernels.c's
# 1-byte half round trip at 0 ms (5 jobs x 2000) and 64 MiB one way at 1 ms (RUNS jobs x 3), with
# WANMPI_WAN_SECURITY=none, auth and tls (job secret from a mode-600 file, given to the relay
# too; compression off: the buffers are constant), P-G (c0-c1, through the relay) and G-G (c0-c2,
# direct). Targets (the issue's): tls throughput >= 90 % of none at 1 Gbit/s; tls latency within
# 2 % + 50 us of none. Open MPI cannot cross a private cluster at all (compare-relay.sh shows its
# error), so there is no Open MPI column. Prints the load average: the machine is shared.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
RUNS=
QUICK=0
OMPI=0
KEEP=0
BENCH_NAME=compare-relay-security.sh
. "$ROOT/bench/wan_lib.sh"
wan_options "build runs quick keep" 16 "$@"

W=$BUILD/bin/wanemu
SITES=$ROOT/tools/wanmpi-sites/wanmpi-sites
KERN=$BUILD/bench/bench_relay_kernels
wan_prereq "wanemu mpirun impi-server impi-relay bench_relay_kernels" \
    "$W" "$BUILD/bin/mpirun" "$BUILD/bin/impi-server" "$BUILD/bin/impi-relay" "$KERN"

RUN=crs$$
wan_tmp relay-security "$RUN"
LATJOBS=5
[ "$QUICK" = 1 ] && LATJOBS=1
SECRET=$TMP/job.key
head -c 32 /dev/urandom | base64 >"$SECRET"
chmod 600 "$SECRET"

say "load before: $(uptime)"
"$W" up --name "$RUN" --clusters 3 --hosts 2 --private c1 --delay 0ms --rate 1gbit --mtu 9000 \
    --queue 512KB --interval off --watch-pid $$ --quiet || die "wanemu up failed"

# job OUT CLUSTERS SECURITY KERNEL-ARGS...: one wanmpi job, one rank per cluster on h1
job() {
    local out=$1 cl=$2 sec=$3
    shift 3
    timeout 300 "$SITES" --bin "$BUILD/bin" --run "$RUN" --clusters "$cl" -n 1 --compute-only \
        --timeout 240 -q --secret-file "$SECRET" -x WANMPI_WAN_SECURITY="$sec" \
        -x WANMPI_WAN_COMPRESS=off -- "$KERN" "$@" >>"$out" 2>&1 ||
        say "job failed ($cl $sec; see $out)"
}
for r in $(seq 1 "$LATJOBS"); do
    say "latency, job $r of $LATJOBS"
    for sec in none auth tls; do
        job "$TMP/lat.gg.$sec" c0,c2 "$sec" -t lat -a 0 -p 1 -l 2000
        job "$TMP/lat.pg.$sec" c0,c1 "$sec" -t lat -a 0 -p 1 -l 2000
    done
done
"$W" set --name "$RUN" all delay=1ms >/dev/null || die "wanemu set delay=1ms failed"
for r in $(seq 1 "$RUNS"); do
    say "64 MiB at 1 ms, job $r of $RUNS"
    for sec in none auth tls; do
        job "$TMP/bw.gg.$sec" c0,c2 "$sec" -t bw -a 0 -p 1 -M 64 -r 3
        job "$TMP/bw.pg.$sec" c0,c1 "$sec" -t bw -a 0 -p 1 -M 64 -r 3
    done
done
say "load after: $(uptime)"

# get KEY FILE: KEY's values of the "relay_kernels: ..." lines
get() { awk -v key="$1" '$1 == "relay_kernels:" { for (i = 3; i <= NF; i++) {
    split($i, kv, "="); if (kv[1] == key) print kv[2] } }' "$2"; }
printf '\n%-22s %12s %14s %10s %12s\n' "path, security" "half RTT us" "vs none" "MB/s" "vs none"
for p in gg pg; do
    l0=$(get half_rtt_us "$TMP/lat.$p.none" | median)
    b0=$(get MBps "$TMP/bw.$p.none" | median)
    for sec in none auth tls; do
        l=$(get half_rtt_us "$TMP/lat.$p.$sec" | median)
        b=$(get MBps "$TMP/bw.$p.$sec" | median)
        printf '%-22s %12s %14s %10s %12s\n' "$([ $p = gg ] && echo direct || echo 'P-G relay'), $sec" \
            "$l" "$(awk -v a="$l" -v z="$l0" 'BEGIN { printf "%+.1f us", a - z }')" "$b" \
            "$(awk -v a="$b" -v z="$b0" 'BEGIN { if (z > 0) printf "%.3f", a / z }')"
    done
done
