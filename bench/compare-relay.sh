#!/usr/bin/env bash
# compare-relay.sh: what impi-relay costs a job with a private-address cluster: latency added per
# relay, one relay's throughput (with and without splice), trunking over several front-ends,
# and Open MPI on the same sites as the reference (and what it does across a private cluster).
#
#   sudo bench/compare-relay.sh [--build DIR] [--runs N] [--quick] [--no-openmpi] [--keep]
#                               [--plot PNG]
#
#   --build DIR    wanmpi build tree (default <repo>/build): bin/wanemu, mpirun, impi-server,
#                  impi-relay, bench/bench_relay_kernels (ninja bench_relay_kernels)
#   --runs N       repeat every wanmpi/Open MPI measurement N times (new job each time) and
#                  report the median (default 3; 1 with --quick)
#   --quick        small sizes: checks the set-up, the numbers mean little
#   --no-openmpi   skip Open MPI (needs mpicc.openmpi / mpirun.openmpi)
#   --plot PNG     where the trunking run's monitor plot goes (default: none; the docs use
#                  docs/img/relay-trunks.png)
#   --keep         keep the temporary directory (binaries, raw outputs, monitor CSV, relay logs)
#
# Program: bench/relay_kernels.c for both MPIs. Latency and bandwidth run between host 1 (a
# compute host) of each of two clusters, so traffic to a private cluster really passes its
# relay: 2 ranks per cluster, world ranks 1 and 3 measure, 0 and 2 wait (wanmpi's waiting ranks
# block; Open MPI runs its 2 ranks only, with mpi_yield_when_idle 1: spinning ranks on 2 cores
# cost it a 4 ms scheduler tick per message otherwise).
#
# A  (latency, one relay's throughput) wanemu: 4 clusters x 2 hosts (h0 front-end, h1 compute),
#    c0 and c1 public, c2 and c3 private, full mesh, 1 Gbit/s, MTU 9000, queue 512 KB.
#    direct = c0-c1, P-G (one relay) = c0-c3, P-P (two relays) = c2-c3.
#    a. 1-byte half round trip (median of 2000) with 0 ms delay; also P-G with
#       WANMPI_IMPI_RELAY_SPLICE_MIN=0 and the plain-TCP floor: wan_tcp_pingpong c1h1 -> c0h1
#       directly, and through a minimal user-space TCP forwarder (two blocking threads) on c3h0
#       from c3h1 -> c0h1: what any user-space hop costs on this machine.
#    b. after `wanemu set all delay=1ms`: 64 MiB one way (median of 3 in a job), direct vs P-G,
#       with and without splice.
#    e. Open MPI direct (c0h1-c1h1) for a and b; then Open MPI c0h1-c3h1 (private compute host)
#       with mpirun on c0h0 and on c3h0 (the front-end), each bounded by a 60 s timeout.
# C  (trunking) wanemu: 3 clusters x 4 hosts, c0 and c1 public, c2 private with 4 front-ends;
#    every host NIC 100 Mbit/s (tbf), links 400 Mbit/s, 1 ms, MTU 9000; monitor on (10 ms).
#    FT-like (Alltoall 256 KiB/pair) and IS-like (Alltoallv, uneven) kernels, 4+4 ranks (one
#    per host): c0-c2 through T = 1, 2, 4 trunk relays, and c0-c1 with no relay. Per run, the
#    bytes through each front-end's public NIC (which relay carried what). One extra FT run at
#    T = 4 with WANMPI_LOG_LEVEL=3 logs the relays' pairs (saved with --keep). Then T = 1, 2, 4
#    again with the clusters in the other order (c2 = client 0, pT*): the relay of a host pair is
#    chosen by the accepting host, the lower-numbered one (see the report).
# Timing thresholds live here only. Prints the load average: the machine is shared.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
RUNS=
QUICK=0
OMPI=1
KEEP=0
PLOT=
while [ $# -gt 0 ]; do
    case $1 in
        --build) BUILD=$(cd "$2" && pwd) || exit 2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --no-openmpi) OMPI=0; shift ;;
        --plot) PLOT=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,44p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare-relay.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$RUNS" ] || { [ $QUICK = 1 ] && RUNS=1 || RUNS=3; }
say() { printf '%s\n' "$*" >&2; }
die() { say "compare-relay.sh: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (wanemu)"
W=$BUILD/bin/wanemu
SITES=$ROOT/tools/wanmpi-sites/wanmpi-sites
KERN=$BUILD/bench/bench_relay_kernels
for f in "$W" "$BUILD/bin/mpirun" "$BUILD/bin/impi-server" "$BUILD/bin/impi-relay" "$KERN"; do
    [ -x "$f" ] || die "missing $f (ninja -C $BUILD wanemu mpirun impi-server impi-relay bench_relay_kernels)"
done
if [ $OMPI = 1 ] && ! command -v mpicc.openmpi >/dev/null; then
    say "Open MPI (mpicc.openmpi) not installed: skipping it"
    OMPI=0
fi

TMP=$(mktemp -d /tmp/wanmpi-relay.XXXXXX)
RA=rla$$
RC=rlc$$
cleanup() {
    "$W" down --name "$RA" >/dev/null 2>&1
    "$W" down --name "$RC" >/dev/null 2>&1
    if [ $KEEP = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- build ----------------------------------------------------------------------------------------
cc -O2 -Wall -o "$TMP/wan_tcp_pingpong" "$ROOT/bench/wan_tcp_pingpong.c" 2>"$TMP/build.log" ||
    die "building wan_tcp_pingpong failed: $(cat "$TMP/build.log")"
cat >"$TMP/tcp_fwd.c" <<'EOF'
/* tcp_fwd LISTEN_ADDR PORT TARGET_ADDR TARGET_PORT: forwards one connection, one blocking
 * thread per direction, TCP_NODELAY: the simplest user-space relay, as a floor. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
static int fds[2];
static void *pump(void *arg) {
    int from = fds[(long)arg], to = fds[1 - (long)arg];
    char buf[65536];
    ssize_t n;
    while ((n = read(from, buf, sizeof buf)) > 0)
        for (ssize_t o = 0; o < n;) { ssize_t w = write(to, buf + o, (size_t)(n - o)); if (w <= 0) return NULL; o += w; }
    shutdown(to, SHUT_WR);
    return NULL;
}
int main(int argc, char **argv) {
    if (argc != 5) return 2;
    struct sockaddr_in a = {0}, b = {0};
    int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_family = b.sin_family = AF_INET;
    inet_pton(AF_INET, argv[1], &a.sin_addr); a.sin_port = htons((unsigned short)atoi(argv[2]));
    inet_pton(AF_INET, argv[3], &b.sin_addr); b.sin_port = htons((unsigned short)atoi(argv[4]));
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1)) { perror("tcp_fwd: listen"); return 1; }
    fds[0] = accept(l, NULL, NULL);
    fds[1] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fds[1], (struct sockaddr *)&b, sizeof b)) { perror("tcp_fwd: connect"); return 1; }
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t t[2];
    for (long i = 0; i < 2; ++i) pthread_create(&t[i], NULL, pump, (void *)i);
    pthread_join(t[0], NULL); pthread_join(t[1], NULL);
    return 0;
}
EOF
cc -O2 -Wall -pthread -o "$TMP/tcp_fwd" "$TMP/tcp_fwd.c" 2>>"$TMP/build.log" ||
    die "building tcp_fwd failed: $(cat "$TMP/build.log")"
if [ $OMPI = 1 ]; then
    mpicc.openmpi -O2 -o "$TMP/relay_kernels.openmpi" "$ROOT/bench/relay_kernels.c" 2>>"$TMP/build.log" ||
        die "building relay_kernels with mpicc.openmpi failed: $(cat "$TMP/build.log")"
fi

if [ $QUICK = 1 ]; then
    LATN=300; BWM=16; BWR=1; FT="-B 64K -R 2"; IS="-K 64K -R 2"
else
    LATN=2000; BWM=64; BWR=3; FT="-B 256K -R 4"; IS="-K 256K -R 4"
fi
OMPI_ENV=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
OMPI_ARGS=(--oversubscribe --mca plm_rsh_agent "$W exec" --mca pml ob1 --mca btl tcp,self,vader
           --mca mpi_yield_when_idle 1)

# wk RUN OUT CLUSTERS NP [sites options...] -- kernel args: one wanmpi job
wk() {
    local run=$1 out=$2 cl=$3 np=$4; shift 4
    local sopts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
    shift
    timeout 300 "$SITES" --bin "$BUILD/bin" --run "$run" --clusters "$cl" -n "$np" --timeout 240 \
        -q "${sopts[@]}" -- "$KERN" "$@" >>"$out" 2>&1 || say "wanmpi job failed ($cl ${sopts[*]}; see $out)"
}
# ok RUN OUT LAUNCHHOST HOSTS ARGS...: one Open MPI job (1 rank per host given)
ok() {
    local run=$1 out=$2 at=$3 hosts=$4; shift 4
    env "${OMPI_ENV[@]}" WANEMU_RUN="$run" timeout 60 "$W" exec "$at" -- mpirun.openmpi \
        "${OMPI_ARGS[@]}" --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
        --host "$hosts" -np 2 "$TMP/relay_kernels.openmpi" "$@" >>"$out" 2>&1
}
# get KIND KEY FILE: KEY's values of the lines "relay_kernels: KIND ..."
get() { awk -v k="$1" -v key="$2" '$1 == "relay_kernels:" && $2 == k {
    for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == key) print kv[2] } }' "$3"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { get "$1" "$2" "$3" | median; }
addr() { "$W" hosts --name "$1" --kv | awk -v h="$2" -v k="$3" '{ split($1, a, "="); if (a[2] != h) next
    for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }'; }

say "load before: $(uptime)"
T0=$(date +%s)

# ==== A: latency and one relay's throughput =======================================================
"$W" up --name "$RA" --clusters 4 --hosts 2 --private c2,c3 --delay 0ms --rate 1gbit --mtu 9000 \
    --queue 512KB --interval off --watch-pid $$ --quiet || die "wanemu up (A) failed"
say "A: sites up ($RA): 4 clusters x 2 hosts, c2 c3 private, 1 Gbit/s, 0 ms, MTU 9000"
c0h1=$(addr "$RA" c0h1 public)
c3h0p=$(addr "$RA" c3h0 private)
for r in $(seq 1 "$RUNS"); do
    say "A: latency, run $r of $RUNS"
    # TCP floors: direct c1h1 -> c0h1, and c3h1 -> tcp_fwd on c3h0 -> c0h1
    WANEMU_RUN=$RA "$W" exec c0h1 -- timeout 60 "$TMP/wan_tcp_pingpong" server -p 5599 >/dev/null 2>&1 &
    WANEMU_RUN=$RA "$W" exec c1h1 -- "$TMP/wan_tcp_pingpong" client "$c0h1:5599" -n $LATN >"$TMP/tcp.direct.$r" 2>&1
    wait
    WANEMU_RUN=$RA "$W" exec c0h1 -- timeout 60 "$TMP/wan_tcp_pingpong" server -p 5599 >/dev/null 2>&1 &
    WANEMU_RUN=$RA "$W" exec c3h0 -- timeout 60 "$TMP/tcp_fwd" "$c3h0p" 5600 "$c0h1" 5599 >/dev/null 2>&1 &
    sleep 0.3
    WANEMU_RUN=$RA "$W" exec c3h1 -- "$TMP/wan_tcp_pingpong" client "$c3h0p:5600" -n $LATN >"$TMP/tcp.fwd.$r" 2>&1
    wait
    wk "$RA" "$TMP/lat.direct" c0,c1 2 -- -t lat -a 1 -p 3 -l $LATN
    wk "$RA" "$TMP/lat.pg" c0,c3 2 -- -t lat -a 1 -p 3 -l $LATN
    wk "$RA" "$TMP/lat.pp" c2,c3 2 -- -t lat -a 1 -p 3 -l $LATN
    WANMPI_IMPI_RELAY_SPLICE_MIN=0 wk "$RA" "$TMP/lat.pg0" c0,c3 2 -- -t lat -a 1 -p 3 -l $LATN
    [ $OMPI = 1 ] && ok "$RA" "$TMP/lat.ompi" c0h0 c0h1:1,c1h1:1 -t lat -a 0 -p 1 -l $LATN
done
"$W" set --name "$RA" all delay=1ms >/dev/null || die "wanemu set delay=1ms failed"
for r in $(seq 1 "$RUNS"); do
    say "A: 1 ms, ${BWM} MiB one way, run $r of $RUNS"
    wk "$RA" "$TMP/bw.direct" c0,c1 2 -- -t bw -a 1 -p 3 -M $BWM -r $BWR
    wk "$RA" "$TMP/bw.pg" c0,c3 2 -- -t bw -a 1 -p 3 -M $BWM -r $BWR
    WANMPI_IMPI_RELAY_SPLICE_MIN=0 wk "$RA" "$TMP/bw.pg0" c0,c3 2 -- -t bw -a 1 -p 3 -M $BWM -r $BWR
    wk "$RA" "$TMP/bw.pp" c2,c3 2 -- -t bw -a 1 -p 3 -M $BWM -r $BWR
    [ $OMPI = 1 ] && ok "$RA" "$TMP/bw.ompi" c0h0 c0h1:1,c1h1:1 -t bw -a 0 -p 1 -M $BWM -r $BWR
done
if [ $OMPI = 1 ]; then
    say "A: Open MPI across the private cluster c3 (c0h1 + c3h1)"
    s=$(date +%s.%N)
    ok "$RA" "$TMP/ompi.private.c0h0" c0h0 c0h1:1,c3h1:1 -t lat -a 0 -p 1 -l 100
    echo "rc=$? seconds=$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')" >>"$TMP/ompi.private.c0h0"
    s=$(date +%s.%N)
    env "${OMPI_ENV[@]}" WANEMU_RUN="$RA" timeout 60 "$W" exec c3h0 -- mpirun.openmpi "${OMPI_ARGS[@]}" \
        --host c0h1:1,c3h1:1 -np 2 "$TMP/relay_kernels.openmpi" -t lat -a 0 -p 1 -l 100 \
        >"$TMP/ompi.private.c3h0" 2>&1
    echo "rc=$? seconds=$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')" >>"$TMP/ompi.private.c3h0"
fi
"$W" down --name "$RA" >/dev/null 2>&1

# ==== C: trunking =================================================================================
CSV=$TMP/trunks.csv
"$W" up --name "$RC" --clusters 3 --hosts 4 --private c2 --frontends 4 --nic 100mbit \
    --rate 400mbit --delay 1ms --mtu 9000 --csv "$CSV" --interval 10ms --watch-pid $$ --quiet ||
    die "wanemu up (C) failed"
say "C: sites up ($RC): 3 clusters x 4 hosts, c2 private with 4 front-ends, NIC 100 Mbit/s, link 400 Mbit/s, 1 ms"
up_at=$(date +%s.%N)
# pubbytes: "tx rx" bytes of each c2 front-end's public interface
pubbytes() {
    local k a
    for k in 0 1 2 3; do
        a=$(addr "$RC" c2h$k public)
        WANEMU_RUN=$RC "$W" exec c2h$k -- sh -c "i=\$(ip -o -4 addr | awk '\$4 ~ /^$a\\// { print \$2 }'); cat /sys/class/net/\$i/statistics/tx_bytes /sys/class/net/\$i/statistics/rx_bytes" | tr '\n' ' '
    done
    echo
}
marks=$TMP/marks
: >"$marks"
trunk_job() {  # LABEL CLUSTERS [sites options]
    local label=$1 cl=$2; shift 2
    local b a s e
    b=$(pubbytes); s=$(date +%s.%N)
    wk "$RC" "$TMP/trunk.$label" "$cl" 4 "$@" -- -t ft,is $FT $IS
    e=$(date +%s.%N); a=$(pubbytes)
    echo "$label $(awk -v s="$s" -v u="$up_at" 'BEGIN { printf "%.1f", s - u }') $(awk -v e="$e" -v u="$up_at" 'BEGIN { printf "%.1f", e - u }') | $b | $a" >>"$marks"
}
for r in $(seq 1 "$RUNS"); do
    say "C: trunking, run $r of $RUNS"
    trunk_job T1 c0,c2 --trunks 1
    trunk_job T2 c0,c2 --trunks 2
    trunk_job T4 c0,c2 --trunks 4
    trunk_job norelay c0,c1
    # the private cluster as client 0: its hosts accept, so each pair takes its own host's relay
    trunk_job pT1 c2,c0 --trunks 1
    trunk_job pT2 c2,c0 --trunks 2
    trunk_job pT4 c2,c0 --trunks 4
done
say "C: T=4 with the relays' pair log (WANMPI_LOG_LEVEL=3)"
WANMPI_LOG_LEVEL=3 timeout 120 "$SITES" --bin "$BUILD/bin" --run "$RC" --clusters c0,c2 -n 4 \
    --trunks 4 --timeout 100 --tag-output -- "$KERN" -t ft -B 64K -R 1 >"$TMP/pairs.log" 2>&1 ||
    say "pair-log run failed (see $TMP/pairs.log)"
"$W" stats --name "$RC" >/dev/null 2>&1   # flush the monitor
cp "$CSV" "$TMP/trunks.keep.csv" 2>/dev/null
"$W" down --name "$RC" >/dev/null 2>&1
if [ -n "$PLOT" ]; then
    "$W" plot "$TMP/trunks.keep.csv" -o "$PLOT" --bin 100ms \
        --title "impi-relay trunking, x$RUNS: T=1,2,4 (c0-c2), no relay (c0-c1), T=1,2,4 with c2 as client 0; NIC 100 Mbit/s" \
        >/dev/null 2>&1 && say "plot: $PLOT" || say "plot failed"
fi
say "load after: $(uptime) ($(( $(date +%s) - T0 )) s)"

# ==== report ======================================================================================
f() { [ -z "$1" ] || [ "$1" = n/a ] && echo n/a || printf "%.${2:-1}f" "$1"; }
tcp_d=$(for r in $(seq 1 "$RUNS"); do awk '$1 == "tcp_lat_us" { print $2 }' "$TMP/tcp.direct.$r"; done | median)
tcp_f=$(for r in $(seq 1 "$RUNS"); do awk '$1 == "tcp_lat_us" { print $2 }' "$TMP/tcp.fwd.$r"; done | median)
ld=$(med lat half_rtt_us "$TMP/lat.direct"); lg=$(med lat half_rtt_us "$TMP/lat.pg")
lp=$(med lat half_rtt_us "$TMP/lat.pp"); lg0=$(med lat half_rtt_us "$TMP/lat.pg0")
lo=n/a; [ $OMPI = 1 ] && lo=$(med lat half_rtt_us "$TMP/lat.ompi")
echo
echo "== impi-relay: private-address clusters ($RUNS run(s), medians; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"
echo
echo "a. 1-byte half round trip, 1 Gbit/s link, 0 ms (host 1 of each cluster)"
printf '  %-44s %10s us\n' "plain TCP, direct (c1h1 -> c0h1)" "$(f "$tcp_d" 1)" \
    "plain TCP through a 2-thread forwarder on c3h0" "$(f "$tcp_f" 1)" \
    "wanmpi direct (public-public)" "$(f "$ld")" "wanmpi one relay (P-G)" "$(f "$lg")" \
    "wanmpi one relay, SPLICE_MIN=0" "$(f "$lg0")" "wanmpi two relays (P-P)" "$(f "$lp")" \
    "Open MPI direct (public-public)" "$(f "$lo")"
awk -v d="$ld" -v g="$lg" -v p="$lp" -v g0="$lg0" -v td="$tcp_d" -v tf="$tcp_f" -v o="$lo" 'BEGIN {
    if (d == "n/a" || g == "n/a") { print "  (no ratio: a measurement is missing)"; exit }
    printf "  added by one relay  (P-G - direct) = %+.1f us; target <= 10 us: %s\n", g - d, (g - d <= 10) ? "met" : "NOT met"
    if (p != "n/a") printf "  added by two relays (P-P - direct) = %+.1f us = %+.1f us per relay; target <= 10 us: %s\n", p - d, (p - d) / 2, ((p - d) / 2 <= 10) ? "met" : "NOT met"
    if (g0 != "n/a") printf "  splice off: P-G %+.1f us against splice on\n", g0 - g
    if (td != "n/a" && tf != "n/a") printf "  any user-space forwarder (plain TCP): %+.1f us\n", tf - td
    if (o != "n/a") printf "  wanmpi direct / Open MPI direct = %.2f; wanmpi P-G / Open MPI direct = %.2f\n", d / o, g / o }'
echo
bd=$(med bw MBps "$TMP/bw.direct"); bg=$(med bw MBps "$TMP/bw.pg"); bg0=$(med bw MBps "$TMP/bw.pg0")
bp=$(med bw MBps "$TMP/bw.pp"); bo=n/a; [ $OMPI = 1 ] && bo=$(med bw MBps "$TMP/bw.ompi")
echo "b. ${BWM} MiB one way, 1 Gbit/s (125 MB/s), 1 ms, MTU 9000; MB/s (median)"
printf '  %-44s %10s\n' "wanmpi direct" "$(f "$bd")" "wanmpi one relay (P-G), splice" "$(f "$bg")" \
    "wanmpi one relay (P-G), SPLICE_MIN=0" "$(f "$bg0")" "wanmpi two relays (P-P)" "$(f "$bp")" \
    "Open MPI direct" "$(f "$bo")"
awk -v d="$bd" -v g="$bg" -v g0="$bg0" -v p="$bp" -v o="$bo" 'BEGIN {
    if (d == "n/a" || g == "n/a") { print "  (no ratio: a measurement is missing)"; exit }
    printf "  P-G / direct = %.3f; target >= 0.9: %s\n", g / d, (g >= 0.9 * d) ? "met" : "NOT met"
    if (g0 != "n/a") printf "  P-G without splice / direct = %.3f (splice on / off = %.3f)\n", g0 / d, g / g0
    if (p != "n/a") printf "  P-P / direct = %.3f\n", p / d
    if (o != "n/a") printf "  wanmpi direct / Open MPI direct = %.3f; P-G / Open MPI direct = %.3f\n", d / o, g / o }'
echo
echo "c. trunking: 4+4 ranks, one per host; NIC 100 Mbit/s per host (12.5 MB/s), link 400 Mbit/s"
echo "   time in s (median), wan_MBps = bytes between the clusters / time, ratio = T=1's time / this time;"
echo "   FT ideal = the ratio the busiest NIC allows (bytes through it per Alltoall of B per pair:"
echo "   T1 16B, T2 11B, T4 9B, no relay 7B; private cluster first (pT*): T2 8B, T4 7B)"
echo "   T*: c0 = client 0 (c0's hosts accept: pair (c2 hj, c0 hk) goes through the relay on c2 hk)"
echo "   pT*: c2 = client 0 (c2's hosts accept: pair (c2 hj, c0 hk) goes through the relay on c2 hj)"
printf '  %-10s %10s %10s %8s %8s %10s %10s %8s\n' "" "FT s" "FT wanMB/s" "FT /T1" "ideal" "IS s" "IS wanMB/s" "IS /T1"
ft1=$(med ft time_s "$TMP/trunk.T1"); is1=$(med is time_s "$TMP/trunk.T1")
for l in T1 T2 T4 norelay pT1 pT2 pT4; do
    case $l in T1|pT1) id=1.00 ;; T2) id=1.45 ;; T4) id=1.78 ;; pT2) id=2.00 ;; *) id=2.29 ;; esac
    ft=$(med ft time_s "$TMP/trunk.$l"); fw=$(med ft wan_MBps "$TMP/trunk.$l")
    is=$(med is time_s "$TMP/trunk.$l"); iw=$(med is wan_MBps "$TMP/trunk.$l")
    awk -v l="$l" -v ft="$ft" -v fw="$fw" -v is="$is" -v iw="$iw" -v ft1="$ft1" -v is1="$is1" -v id="$id" 'BEGIN {
        fr = (ft == "n/a" || ft1 == "n/a") ? "n/a" : sprintf("%.2f", ft1 / ft)
        ir = (is == "n/a" || is1 == "n/a") ? "n/a" : sprintf("%.2f", is1 / is)
        printf "  %-10s %10s %10s %8s %8s %10s %10s %8s\n", l, ft, fw, fr, id, is, iw, ir }'
done
echo "  target: T=2 >= 1.6, T=4 >= 3.2 x T=1 (0.8 T, up to the link's 4 x NIC)"
echo
echo "   bytes through each c2 front-end's public NIC (tx+rx, MB) per run: c2h0 c2h1 c2h2 c2h3"
awk '{ split($0, p, "|"); split(p[2], b, " "); split(p[3], a, " ");
       printf "  %-10s", $1; for (k = 0; k < 4; k++) printf " %8.1f", (a[2*k+1] - b[2*k+1] + a[2*k+2] - b[2*k+2]) / 1e6; printf "   (t=%s..%s s)\n", $2, $3 }' "$marks"
if [ -s "$TMP/pairs.log" ]; then
    echo "   relay pair log (T=4): host pairs (IMPI host numbers; c0 = 0-3, c2 = 4-7) per relay"
    sed -n 's/.*relay \(c2h[0-9]\)\].*pair host \([0-9]*\) (client 1) <-> host \([0-9]*\) (client 0): connecting.*/\1 \2-\3/p' \
        "$TMP/pairs.log" | sort | awk '{ p[$1] = p[$1] " " $2; n[$1]++ } END { for (r in p) printf "    %s: %d pairs:%s\n", r, n[r], p[r] }' | sort
fi
if [ $OMPI = 1 ]; then
    echo
    echo "e. Open MPI across the private cluster (c0h1 + c3h1, no relay possible)"
    for at in c0h0 c3h0; do
        echo "  mpirun on $at: $(tail -1 "$TMP/ompi.private.$at")"
        grep -m 3 -E "unable|Unable|unreachable|failed|FATAL" "$TMP/ompi.private.$at" | sed 's/^/    /'
    done
fi
echo
echo "  (raw outputs: $TMP $([ $KEEP = 1 ] || echo '(removed; --keep keeps them)'))"
