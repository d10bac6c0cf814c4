#!/usr/bin/env bash
# compare-relay.sh: what impi-relay costs a job with a private-address cluster: latency added per
# relay, one relay's throughput (with and without splice), trunking over several front-ends,
# and Open MPI on the same sites as the reference (and what it does across a private cluster).
#
#   sudo bench/compare-relay.sh [--build DIR] [--runs N] [--lat-runs N] [--quick] [--no-openmpi]
#                               [--keep] [--plot PNG] [--floor-only]
#
#   --build DIR    wanmpi build tree (default <repo>/build): bin/wanemu, mpirun, impi-server,
#                  impi-relay, bench/bench_relay_kernels (ninja bench_relay_kernels)
#   --runs N       repeat every wanmpi/Open MPI measurement N times (new job each time) and
#                  report the median (default 3; 1 with --quick)
#   --lat-runs N   latency jobs per path (default 5; 1 with --quick)
#   --quick        small sizes: checks the set-up, the numbers mean little
#   --no-openmpi   skip Open MPI (needs mpicc.openmpi / mpirun.openmpi)
#   --plot PNG     where the trunking run's monitor plot goes (default: none; the docs use
#                  docs/img/relay-trunks.png)
#   --keep         keep the temporary directory (binaries, raw outputs, monitor CSV, relay logs)
#   --floor-only   only A's plain-TCP floor (no MPI; needs only bin/wanemu): the latency lines
#                  --lat-runs times and the 64 MiB lines --runs times, then the report of them
#
# Program: bench/relay_kernels.c for both MPIs.
#
# A  (latency, one relay's throughput) wanemu: 4 clusters x 2 hosts (h0 front-end, h1 compute),
#    c0 and c1 public, c2 and c3 private, full mesh, 1 Gbit/s, MTU 9000, queue 512 KB.
#    direct = c0-c1, P-G (one relay) = c0-c3, P-P (two relays) = c2-c3.
#    a. 1-byte half round trip (median of 2000; jobs repeated --lat-runs times, default 5) with
#       0 ms delay, --compute-only and 1 rank per cluster: the ranks on c0h1 and c1h1/c3h1, the
#       relay alone on its front-end c3h0. direct, and P-G with the relay's polling off and on
#       (WANMPI_IMPI_RELAY_SPIN_US=0 and 200, passed by wanmpi-sites to the relay; the default
#       on a host with < 4 CPUs is 0). Plain-TCP floor: wan_tcp_pingpong c1h1 -> c0h1 directly
#       and through a minimal user-space TCP forwarder (two blocking threads) on c3h0 from
#       c3h1 -> c0h1: what any user-space hop costs on this machine; and through the in-kernel
#       forwarder bench/tcp_kfwd.c on c3h0 (sockhash + sk_skb verdict program: no process on
#       the data path), in its two attach modes: verdict alone, and stream parser + verdict
#       (the strparser path an IMPI-framing relay would need; docs/design/relay-kernel-path.md).
#       The four floor lines run in a different order in each run (rotated), so drift and
#       other engineers' load spread over them; reported: median of the jobs' medians and the
#       median of the per-run differences to direct.
#    b. after `wanemu set all delay=1ms`: plain TCP, 64 MiB each way (wan_tcp_pingpong -s 64M,
#       1 warm-up + 3 timed round trips, median) direct, through tcp_fwd and through tcp_kfwd
#       (both modes); then wanmpi 64 MiB one way (median of 3 in a job), direct vs P-G,
#       with and without splice, and P-P: 2 ranks per cluster, world ranks 1 and 3 (host 1 of
#       each cluster) measure, 0 and 2 wait (wanmpi's waiting ranks block).
#    e. Open MPI direct (c0h1-c1h1) for a and b (with mpi_yield_when_idle 1: spinning ranks on 2
#       cores cost it a 4 ms scheduler tick per message otherwise); then Open MPI c0h1-c3h1
#       (private compute host) with mpirun on c0h0 and on c3h0 (the front-end), each bounded by
#       a 60 s timeout.
# C  (trunking, GridMPI's set-up: relays on dedicated front-ends, compute hosts behind them)
#    wanemu: 3 clusters x 12 hosts, the first 4 of each front-ends; c1 private (its 4 front-ends
#    are dual-homed and run the relays), c0 and c2 public; every host NIC 100 Mbit/s (tbf, each
#    interface, both directions), links 1 Gbit/s, 1 ms, MTU 9000, monitor off. --compute-only,
#    8 + 8 ranks, one per compute host (h4..h11): no rank shares a NIC with a relay.
#    FT-like (Alltoall 128 KiB/pair) and IS-like (Alltoallv, uneven, ~128 KiB/pair) kernels,
#    4 iterations each: c0-c1 through T = 1, 2, 4 trunk relays and c0-c2 with no relay (both
#    public, same layout); then the same with the clusters in the other order (the private
#    cluster, or c2, as client 0: pT*, pnorelay), and as a diagnosis the c0-c1 order once more
#    with rto_min 10 ms on every host's routes (rT*). The cross-cluster capacity is T x 100 Mbit/s
#    per direction through the relays' NICs, against 8 x 100 x 8/15 = 427 Mbit/s for the
#    ranks' own NICs (each sends 15 blocks, 8 of them to the other cluster). Per run: the bytes
#    through each c1 front-end's public NIC, and TCP retransmissions and retransmission
#    timeouts (RTOs) summed over every host of the run. One extra FT run at T = 4 with
#    WANMPI_LOG_LEVEL=3 logs the relays' pairs and forwarded bytes (saved with --keep). Then
#    a separate 2-cluster run of the same layout with the monitor on (10 ms bins) carries one
#    T = 4 job (FT then IS): --plot draws its c0-c1 link.
# Timing thresholds live here only. Prints the load average: the machine is shared.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
RUNS=
LRUNS=
QUICK=0
OMPI=1
KEEP=0
PLOT=
FLOOR=0
while [ $# -gt 0 ]; do
    case $1 in
        --build) BUILD=$(cd "$2" && pwd) || exit 2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --lat-runs) LRUNS=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --no-openmpi) OMPI=0; shift ;;
        --plot) PLOT=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --floor-only) FLOOR=1; OMPI=0; shift ;;
        -h|--help) sed -n '2,68p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare-relay.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$RUNS" ] || { [ $QUICK = 1 ] && RUNS=1 || RUNS=3; }
[ -n "$LRUNS" ] || { [ $QUICK = 1 ] && LRUNS=1 || LRUNS=5; }
BENCH_NAME=compare-relay.sh
. "$ROOT/bench/wan_lib.sh"

W=$BUILD/bin/wanemu
SITES=$ROOT/tools/wanmpi-sites/wanmpi-sites
KERN=$BUILD/bench/bench_relay_kernels
if [ $FLOOR = 1 ]; then
    wan_prereq wanemu "$W"
else
    wan_prereq "wanemu mpirun impi-server impi-relay bench_relay_kernels" \
        "$W" "$BUILD/bin/mpirun" "$BUILD/bin/impi-server" "$BUILD/bin/impi-relay" "$KERN"
fi

RA=rla$$
RC=rlc$$
RP=rlp$$
wan_tmp relay "$RA" "$RC" "$RP"

# ---- build ----------------------------------------------------------------------------------------
wan_build_tcp_pingpong
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
cc -O2 -Wall -pthread -o "$TMP/tcp_kfwd" "$ROOT/bench/tcp_kfwd.c" 2>>"$TMP/build.log" ||
    die "building tcp_kfwd failed: $(cat "$TMP/build.log")"
if [ $OMPI = 1 ]; then
    mpicc.openmpi -O2 -o "$TMP/relay_kernels.openmpi" "$ROOT/bench/relay_kernels.c" 2>>"$TMP/build.log" ||
        die "building relay_kernels with mpicc.openmpi failed: $(cat "$TMP/build.log")"
fi

if [ $QUICK = 1 ]; then
    LATN=300; BWM=16; BWR=1; FT="-B 32K -R 2"; IS="-K 32K -R 2"
else
    LATN=2000; BWM=64; BWR=3; FT="-B 128K -R 4"; IS="-K 128K -R 4"
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
# floor KIND OUT ARGS...: one plain-TCP ping-pong (wan_tcp_pingpong ARGS) to c0h1, KIND = direct
# (from c1h1), fwd (from c3h1 through tcp_fwd on c3h0), kfwd / kparser (from c3h1 through
# tcp_kfwd -m verdict / parser on c3h0; its own report of the pair goes to OUT.fwd)
floor() {
    local kind=$1 out=$2 fw
    shift 2
    WANEMU_RUN=$RA "$W" exec c0h1 -- timeout 120 "$TMP/wan_tcp_pingpong" server -p 5599 >/dev/null 2>&1 &
    if [ "$kind" = direct ]; then
        WANEMU_RUN=$RA "$W" exec c1h1 -- timeout 120 "$TMP/wan_tcp_pingpong" client "$c0h1:5599" "$@" >"$out" 2>&1
    else
        case $kind in
            fwd) fw=("$TMP/tcp_fwd") ;;
            kfwd) fw=("$TMP/tcp_kfwd" -m verdict) ;;
            kparser) fw=("$TMP/tcp_kfwd" -m parser) ;;
        esac
        WANEMU_RUN=$RA "$W" exec c3h0 -- timeout 120 "${fw[@]}" "$c3h0p" 5600 "$c0h1" 5599 >"$out.fwd" 2>&1 &
        sleep 0.3
        WANEMU_RUN=$RA "$W" exec c3h1 -- timeout 120 "$TMP/wan_tcp_pingpong" client "$c3h0p:5600" "$@" >"$out" 2>&1
    fi
    wait
}
FLOORS=(direct fwd kfwd kparser)
# floors R PREFIX ARGS...: the four floor lines, in an order rotated by run R
floors() {
    local r=$1 pre=$2 k i
    shift 2
    for i in 0 1 2 3; do
        k=${FLOORS[$(( (i + r) % 4 ))]}
        floor "$k" "$TMP/$pre.$k.$r" "$@"
    done
}
for r in $(seq 1 "$LRUNS"); do
    say "A: latency, run $r of $LRUNS"
    # TCP floors: direct c1h1 -> c0h1, and c3h1 -> tcp_fwd / tcp_kfwd on c3h0 -> c0h1
    floors "$r" tcp -n $LATN
    [ $FLOOR = 1 ] && continue
    # one rank per cluster on its compute host (h1); the relay alone on the front-end c3h0
    wk "$RA" "$TMP/lat.direct" c0,c1 1 --compute-only -- -t lat -a 0 -p 1 -l $LATN
    WANMPI_IMPI_RELAY_SPIN_US=0 wk "$RA" "$TMP/lat.pg" c0,c3 1 --compute-only -- -t lat -a 0 -p 1 -l $LATN
    WANMPI_IMPI_RELAY_SPIN_US=200 wk "$RA" "$TMP/lat.pgspin" c0,c3 1 --compute-only -- -t lat -a 0 -p 1 -l $LATN
done
for r in $(seq 1 "$RUNS"); do
    [ $OMPI = 1 ] && ok "$RA" "$TMP/lat.ompi" c0h0 c0h1:1,c1h1:1 -t lat -a 0 -p 1 -l $LATN
done
"$W" set --name "$RA" all delay=1ms >/dev/null || die "wanemu set delay=1ms failed"
for r in $(seq 1 "$RUNS"); do
    say "A: 1 ms, plain TCP ${BWM} MiB each way, run $r of $RUNS"
    floors "$r" tcpbw -s $((BWM << 20)) -n 3 -w 1
done
for r in $(seq 1 "$RUNS"); do
    [ $FLOOR = 1 ] && break
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

# floor_report: A's plain-TCP floor lines (latency and 64 MiB), with the in-kernel forwarder's
# own account of each job (bytes through user space should be 0, both directions closed cleanly)
floor_report() {
    local k r lbl vals m d pm
    lat() { awk '$1 == "tcp_lat_us" { print $2 }' "$1" 2>/dev/null; }
    echo "plain TCP floor (no MPI) to c0h1, 1 Gbit/s, MTU 9000; direct from c1h1, the forwarders on c3h0"
    echo "from c3h1; load average now $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
    echo "  1-byte half round trip, 0 ms, median of $LATN per job, $LRUNS job(s) per line, order rotated per run;"
    echo "  added = median - direct's median; paired = median over runs of (this run - direct's run)"
    printf '  %-40s %7s %7s %7s  %s\n' "" "us" added paired "single jobs (us)"
    for k in "${FLOORS[@]}"; do
        case $k in
            direct) lbl="direct" ;; fwd) lbl="user-space forwarder (2 threads)" ;;
            kfwd) lbl="in-kernel forwarder, sk_skb verdict" ;;
            kparser) lbl="in-kernel, stream parser + verdict" ;;
        esac
        vals=$(for r in $(seq 1 "$LRUNS"); do lat "$TMP/tcp.$k.$r"; done)
        m=$(echo "$vals" | median)
        d=$(for r in $(seq 1 "$LRUNS"); do lat "$TMP/tcp.direct.$r"; done | median)
        pm=$(for r in $(seq 1 "$LRUNS"); do paste <(lat "$TMP/tcp.$k.$r") <(lat "$TMP/tcp.direct.$r"); done |
            awk 'NF == 2 { print $1 - $2 }' | median)
        awk -v l="$lbl" -v m="$m" -v d="$d" -v pm="$pm" -v all="$(echo $vals)" 'BEGIN {
            printf "  %-40s %7s %7s %7s  %s\n", l, m, (m == "n/a" || d == "n/a") ? "n/a" : sprintf("%+.1f", m - d),
                pm == "n/a" ? "n/a" : sprintf("%+.1f", pm), all }'
    done
    echo "  ${BWM} MiB each way, 1 ms (${BWM} MiB / half round trip, median of 3 per job, $RUNS job(s)); MB/s"
    for k in "${FLOORS[@]}"; do
        for r in $(seq 1 "$RUNS"); do lat "$TMP/tcpbw.$k.$r"; done | median |
            awk -v k="$k" -v b=$((BWM << 20)) -v d="$(for r in $(seq 1 "$RUNS"); do lat "$TMP/tcpbw.direct.$r"; done | median)" '
                { if ($1 == "n/a") { printf "  %-10s n/a\n", k; next }
                  printf "  %-10s %8.1f MB/s", k, b / $1; if (d != "n/a") printf "  (%.3f of direct)", d / $1; printf "\n" }'
    done
    for k in kfwd kparser; do
        echo "  tcp_kfwd -m $([ $k = kfwd ] && echo verdict || echo parser): $(cat "$TMP"/tcp*."$k".*.fwd 2>/dev/null | grep -c 'both directions ended cleanly; .*through user space 0 + 0') of" \
             "$(ls "$TMP"/tcp*."$k".*.fwd 2>/dev/null | wc -l) jobs closed cleanly both ways with 0 bytes through user space"
        grep -h -v 'both directions ended cleanly; .*through user space 0 + 0' "$TMP"/tcp*."$k".*.fwd 2>/dev/null | sed 's/^/    /' | head -5
    done
}
if [ $FLOOR = 1 ]; then
    say "load after: $(uptime) ($(( $(date +%s) - T0 )) s)"
    echo
    floor_report
    echo
    echo "  (raw outputs: $TMP $([ $KEEP = 1 ] || echo '(removed; --keep keeps them)'))"
    exit 0
fi

# ==== C: trunking =================================================================================
CUP=(--clusters 3 --hosts 12 --private c1 --frontends 4 --nic 100mbit --rate 1gbit --delay 1ms --mtu 9000)
"$W" up --name "$RC" "${CUP[@]}" --interval off --watch-pid $$ --quiet || die "wanemu up (C) failed"
say "C: sites up ($RC): 3 clusters x 12 hosts (4 front-ends + 8 compute), c1 private, NIC 100 Mbit/s, link 1 Gbit/s, 1 ms"
# pubbytes: "tx rx" bytes of each c1 front-end's public interface
pubbytes() {
    local k a
    for k in 0 1 2 3; do
        a=$(addr "$RC" c1h$k public)
        WANEMU_RUN=$RC "$W" exec c1h$k -- sh -c "i=\$(ip -o -4 addr | awk '\$4 ~ /^$a\\// { print \$2 }'); cat /sys/class/net/\$i/statistics/tx_bytes /sys/class/net/\$i/statistics/rx_bytes" | tr '\n' ' '
    done
}
# tcpstat: "RTOs retransmitted-segments" summed over every host of the run
tcpstat() {
    local h
    for h in $("$W" hosts --name "$RC" --kv | sed -n 's/^host=\([^ ]*\) .*/\1/p'); do
        WANEMU_RUN=$RC "$W" exec "$h" -- nstat -asz TcpExtTCPTimeouts TcpRetransSegs 2>/dev/null
    done | awk '$1 == "TcpExtTCPTimeouts" { t += $2 } $1 == "TcpRetransSegs" { r += $2 } END { print t + 0, r + 0 }'
}
marks=$TMP/marks
: >"$marks"
trunk_job() {  # LABEL CLUSTERS [sites options]
    local label=$1 cl=$2; shift 2
    local b a tb ta
    b=$(pubbytes); tb=$(tcpstat)
    wk "$RC" "$TMP/trunk.$label" "$cl" 8 --compute-only "$@" -- -t ft,is $FT $IS
    a=$(pubbytes); ta=$(tcpstat)
    echo "$label | $b | $a | $tb | $ta" >>"$marks"
}
# trunk_series PREFIX RELAYED NORELAY: T = 1, 2, 4 on the clusters RELAYED, then no relay
trunk_series() {
    local t
    for t in 1 2 4; do trunk_job "${1}T$t" "$2" --trunks $t; done
    trunk_job "${1}norelay" "$3"
}
for r in $(seq 1 "$RUNS"); do
    say "C: trunking, run $r of $RUNS"
    trunk_series "" c0,c1 c0,c2
    # the other client order: the private cluster's (c2's) hosts accept, so the relay of a pair
    # is chosen by the private host's index instead of the public one's
    trunk_series p c1,c0 c2,c0
done
# diagnosis: the same c0-c1 runs with every route of every host at rto_min 10 ms (Linux default
# 200 ms): how much of the gap to the bounds is TCP retransmission timeouts at the 100 Mbit/s
# NICs' drop-tail queues (tbf, 20 ms = 250 KB = 27 jumbo frames, shared by up to 64 flows)
for h in $("$W" hosts --name "$RC" --kv | sed -n 's/^host=\([^ ]*\) .*/\1/p'); do
    WANEMU_RUN=$RC "$W" exec "$h" -- sh -c 'ip route show | while read -r r; do ip route change $r rto_min 10ms; done' ||
        say "rto_min on $h failed"
done
for r in $(seq 1 "$RUNS"); do
    say "C: trunking with rto_min 10 ms, run $r of $RUNS"
    trunk_series r c0,c1 c0,c2
done
say "C: T=4 with the relays' pair log (WANMPI_LOG_LEVEL=3)"
WANMPI_LOG_LEVEL=3 timeout 120 "$SITES" --bin "$BUILD/bin" --run "$RC" --clusters c0,c1 -n 8 --compute-only \
    --trunks 4 --timeout 100 --tag-output -- "$KERN" -t ft -B 64K -R 1 >"$TMP/pairs.log" 2>&1 ||
    say "pair-log run failed (see $TMP/pairs.log)"
"$W" down --name "$RC" >/dev/null 2>&1

say "C: one T=4 job with the monitor on (2 clusters, same layout)"
CSV=$TMP/trunks.csv
"$W" up --name "$RP" --clusters 2 --hosts 12 --private c1 --frontends 4 --nic 100mbit --rate 1gbit \
    --delay 1ms --mtu 9000 --csv "$CSV" --interval 10ms --watch-pid $$ --quiet || die "wanemu up (plot) failed"
sleep 0.5
wk "$RP" "$TMP/trunk.plot" c0,c1 8 --compute-only --trunks 4 -- -t ft,is $FT $IS
sleep 0.5
"$W" stats --name "$RP" >/dev/null 2>&1   # flush the monitor
cp "$CSV" "$TMP/trunks.keep.csv" 2>/dev/null
"$W" down --name "$RP" >/dev/null 2>&1
if [ -n "$PLOT" ]; then
    "$W" plot "$TMP/trunks.keep.csv" -o "$PLOT" --bin 50ms \
        --title "impi-relay, 4 trunks: 8+8 ranks on compute hosts, FT-like then IS-like; NIC 100 Mbit/s, link 1 Gbit/s" \
        >/dev/null 2>&1 && say "plot: $PLOT" || say "plot failed"
fi
say "load after: $(uptime) ($(( $(date +%s) - T0 )) s)"

# ==== report ======================================================================================
f() { [ -z "$1" ] || [ "$1" = n/a ] && echo n/a || printf "%.${2:-1}f" "$1"; }
tcp_d=$(for r in $(seq 1 "$LRUNS"); do awk '$1 == "tcp_lat_us" { print $2 }' "$TMP/tcp.direct.$r"; done | median)
tcp_f=$(for r in $(seq 1 "$LRUNS"); do awk '$1 == "tcp_lat_us" { print $2 }' "$TMP/tcp.fwd.$r"; done | median)
ld=$(med lat half_rtt_us "$TMP/lat.direct"); lg=$(med lat half_rtt_us "$TMP/lat.pg")
lsp=$(med lat half_rtt_us "$TMP/lat.pgspin")
lo=n/a; [ $OMPI = 1 ] && lo=$(med lat half_rtt_us "$TMP/lat.ompi")
echo
echo "== impi-relay: private-address clusters ($RUNS run(s), latency $LRUNS, medians; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"
echo
echo "a. 1-byte half round trip, 1 Gbit/s link, 0 ms; one rank per cluster on its compute host (h1),"
echo "   the relay alone on the front-end (--compute-only); median of $LRUNS jobs' medians"
printf '  %-48s %10s us\n' "plain TCP, direct (c1h1 -> c0h1)" "$(f "$tcp_d" 1)" \
    "plain TCP through a 2-thread forwarder on c3h0" "$(f "$tcp_f" 1)" \
    "wanmpi direct (public-public)" "$(f "$ld")" \
    "wanmpi one relay (P-G), SPIN_US=0" "$(f "$lg")" \
    "wanmpi one relay (P-G), SPIN_US=200" "$(f "$lsp")" \
    "Open MPI direct (c0h1-c1h1, 2 ranks)" "$(f "$lo")"
echo "  single jobs (us): direct $(get lat half_rtt_us "$TMP/lat.direct" | tr '\n' ' ')"
echo "                    P-G spin 0 $(get lat half_rtt_us "$TMP/lat.pg" | tr '\n' ' ')"
echo "                    P-G spin 200 $(get lat half_rtt_us "$TMP/lat.pgspin" | tr '\n' ' ')"
awk -v d="$ld" -v g="$lg" -v s="$lsp" -v td="$tcp_d" -v tf="$tcp_f" -v o="$lo" 'BEGIN {
    if (d == "n/a" || g == "n/a") { print "  (no ratio: a measurement is missing)"; exit }
    printf "  added by one relay, spin 0   (P-G - direct) = %+.1f us; target <= 10 us: %s\n", g - d, (g - d <= 10) ? "met" : "NOT met"
    if (s != "n/a") printf "  added by one relay, spin 200 (P-G - direct) = %+.1f us; target <= 10 us: %s\n", s - d, (s - d <= 10) ? "met" : "NOT met"
    if (td != "n/a" && tf != "n/a") printf "  any user-space forwarder (plain TCP): %+.1f us\n", tf - td
    if (o != "n/a") printf "  wanmpi direct / Open MPI direct = %.2f\n", d / o }'
echo
floor_report
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
echo "c. trunking: 8+8 ranks on compute hosts; NIC 100 Mbit/s per host (12.5 MB/s each way), link 1 Gbit/s"
echo "   time in s (median), wanMB = MB/s between the clusters (both directions) = wan bytes / time,"
echo "   /T1 = T=1's time / this time (of the same client order); bound = the ratio the busiest NIC allows"
echo "   (Alltoall of B per pair, per direction: relays 64B/T, a rank's own NIC 15B; FT's pairwise"
echo "   algorithm (rank XOR k) has 7 steps inside the clusters, when the relays idle, and 8 steps"
echo "   where all 8 pairs cross, in units of B / NIC rate T1 7 + 8x8 = 71, T2 7 + 8x4 = 39, T4 23,"
echo "   no relay 15 -> 1.82, 3.09, 4.73; IS's linear"
echo "   Alltoallv: 2.00, 3.60 (busiest relay), 3.72 (busiest rank NIC, uneven buckets))"
echo "   T*: c0 = client 0 (c0's hosts accept: relay of a pair = c0 host index mod T)"
echo "   pT*: c1 (c2) = client 0 (c1's hosts accept: relay of a pair = c1 host index mod T)"
echo "   rT*: as T*, every host's routes with rto_min 10 ms (diagnosis: retransmission timeouts)"
printf '  %-9s %7s %7s %6s %5s %7s %7s %6s %5s %6s %8s\n' "" "FT s" "FTwanMB" "FT/T1" "bound" "IS s" "ISwanMB" "IS/T1" "bound" "RTOs" "retrans"
for l in T1 T2 T4 norelay pT1 pT2 pT4 pnorelay rT1 rT2 rT4 rnorelay; do
    case $l in *T1) fb=1.00; ib=1.00 ;; *T2) fb=1.82; ib=2.00 ;; *T4) fb=3.09; ib=3.60 ;; *) fb=4.73; ib=3.72 ;; esac
    case $l in p*) b1=pT1 ;; r*) b1=rT1 ;; *) b1=T1 ;; esac
    ft1=$(med ft time_s "$TMP/trunk.$b1"); is1=$(med is time_s "$TMP/trunk.$b1")
    ft=$(med ft time_s "$TMP/trunk.$l"); fw=$(med ft wan_MBps "$TMP/trunk.$l")
    is=$(med is time_s "$TMP/trunk.$l"); iw=$(med is wan_MBps "$TMP/trunk.$l")
    rt=$(awk -v l="$l" -F'|' '{ split($1, x, " "); if (x[1] != l) next; split($4, b, " "); split($5, a, " ");
        t += a[1] - b[1]; r += a[2] - b[2]; n++ } END { if (n) printf "%.0f %.0f", t / n, r / n; else print "n/a n/a" }' "$marks")
    awk -v l="$l" -v ft="$ft" -v fw="$fw" -v is="$is" -v iw="$iw" -v ft1="$ft1" -v is1="$is1" -v fb="$fb" -v ib="$ib" -v rt="$rt" 'BEGIN {
        fr = (ft == "n/a" || ft1 == "n/a") ? "n/a" : sprintf("%.2f", ft1 / ft)
        ir = (is == "n/a" || is1 == "n/a") ? "n/a" : sprintf("%.2f", is1 / is)
        split(rt, r, " ")
        printf "  %-9s %7s %7s %6s %5s %7s %7s %6s %5s %6s %8s\n", l, ft, fw, fr, fb, is, iw, ir, ib, r[1], r[2] }'
done
echo "  target: T=2 >= 1.6, T=4 >= 3.2 x T=1 (0.8 T); RTOs, retrans: TCP retransmission timeouts and"
echo "  retransmitted segments per job (FT + IS + start-up), all hosts of the run"
echo
echo "   bytes through each c1 front-end's public NIC (tx+rx, MB, mean per job): c1h0 c1h1 c1h2 c1h3"
awk -F'|' '{ split($1, l, " "); split($2, b, " "); split($3, a, " "); if (!(l[1] in n)) o[++m] = l[1]; n[l[1]]++
       for (k = 0; k < 4; k++) v[l[1], k] += (a[2*k+1] - b[2*k+1] + a[2*k+2] - b[2*k+2]) / 1e6 }
     END { for (i = 1; i <= m; i++) { printf "  %-10s", o[i]; for (k = 0; k < 4; k++) printf " %8.1f", v[o[i], k] / n[o[i]]; printf "\n" } }' "$marks"
if [ -s "$TMP/pairs.log" ]; then
    echo "   relay pair log (T=4, c0 = client 0): host pairs (IMPI host numbers; c0 = 0-7, c1 = 8-15) per relay"
    sed -n 's/.*relay \(c1h[0-9]\)\].*pair host \([0-9]*\) (client 1) <-> host \([0-9]*\) (client 0): connecting.*/\1 \2-\3/p' \
        "$TMP/pairs.log" | sort | awk '{ p[$1] = p[$1] " " $2; n[$1]++ } END { for (r in p) printf "    %s: %d pairs:%s\n", r, n[r], p[r] }' | sort
    sed -n 's/.*relay \(c1h[0-9]\)\].*\(forwarded .*\)/    \1: \2/p' "$TMP/pairs.log" | sort
fi
echo "   monitored T=4 job (for the plot): $(grep -h '^relay_kernels: \(ft\|is\)' "$TMP/trunk.plot" 2>/dev/null | awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^time_s=/) printf "%s %s  ", $2, $i }')"
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
