#!/usr/bin/env bash
# compare-pacing.sh: WAN pacing and TCP adaptation (issue 12): collectives through a bottleneck that
# several hosts overrun, a single large transfer, recovery after an outage and after a change of
# traffic pattern; wanmpi unpaced vs paced vs Open MPI over the same link, in the same wanemu run.
#
#   sudo bench/compare-pacing.sh [--rate 100mbit] [--delay 10ms] [--queue-pkts 20] [--hosts 4]
#                                [--nic 1gbit|off] [--cc "cubic bbr"] [--runs N] [--quick]
#                                [--only coll,single,outage,phase] [--outage-msg 256K]
#                                [--no-openmpi] [--plot PNG] [--coll LIST] [--paced-env "V=x ..."]
#                                [--keep] [--build DIR]
#
#   --rate/--delay  the link between the two clusters (default 100 Mbit/s, 10 ms one way)
#   --queue-pkts N  its drop-tail queue in packets (wanemu --queue-pkts; default 20: shallow)
#   --hosts H       hosts per cluster, one rank each (default 4)
#   --nic RATE      every host's NIC (wanemu --nic, tbf on both ends of each host interface;
#                   default 1gbit: each host alone can overrun the link; off: no NIC limit)
#   --cc LIST       congestion controls to run everything under (default "cubic bbr"; also reno,
#                   system = the machine's default, bbr here)
#   --runs N        jobs per measurement of coll, outage and phase, median reported (default 3;
#                   1 with --quick); single: one job per mode, median of its 3 transfers
#   --quick         smaller sizes, 1 run (~4-5 min): checks the set-up, the numbers mean little
#   --only LIST     sections to run (default all): coll, single, outage, phase
#   --outage-msg S  message size of the outage stream (default 256K; the first receipt after the
#                   link's return needs the whole lost window resent: 16K measures when bytes
#                   flow again rather than when a large message completes)
#   --no-openmpi    skip Open MPI (needs mpicc.openmpi / mpirun.openmpi)
#   --coll LIST     the collective measurements instead of the default list (see "sizes"
#                   below), e.g. a2av:1M:2,is:256K:4 (kind:size per pair:calls; kinds a2a, a2av,
#                   ft, is), to repeat the cases a change concerns
#   --paced-env S   more settings for the paced mode's ranks, e.g. "WANMPI_COLL_WAN_SHARES=equal"
#                   or "WANMPI_WAN_RESTORE=0" (to compare a feature with and without it)
#   --plot PNG      write the wanemu traffic plot of one collective, unpaced then paced (first cc,
#                   run 1; a2a 256 KiB/pair if measured), e.g. docs/img/pacing.png
#   --keep          keep the temporary directory (binaries, raw outputs, marks, CSVs, monitor)
#   --build DIR     wanmpi build tree (default <repo>/build): bin/mpicc, mpirun, impi-server,
#                   wanemu, wanemu-bulk
#
# Set-up: one wanemu run, 2 clusters x H hosts (c0h0..c1h<H-1>), the link above, monitor bins
# of 10 ms. Modes (every mode runs the same program, bench/pacing_bench.c, built with each MPI):
#   unpaced  wanmpi, WANMPI_WAN_ADAPT=off (everything of issue 12 off), WANMPI_WAN_CC=<cc>
#   paced    wanmpi, WANMPI_WAN_RATE=<rate>, WANMPI_WAN_CC=<cc> (adaptation on, the default)
#   openmpi  mpirun.openmpi on c0h0, --host c0h0:1,..., pml ob1, btl tcp,self,vader, and
#            mpi_yield_when_idle 1 (ranks outnumber the 2 cores)
# Both wanmpi modes set WANMPI_WAN_STATS=<file>.csv (per-connection statistics, written by rank
# 0 at MPI_Finalize; "n/a" while the library does not write it). Congestion control: a non-init
# network namespace may only make an algorithm of net.ipv4.tcp_allowed_congestion_control (reno
# bbr here) its default (EPERM for cubic), so instead of the namespaces' default every process of
# every mode gets a small LD_PRELOAD shim (built here) that sets TCP_CONGESTION=<cc> on each TCP
# socket it creates (accepted sockets inherit the listener's): the default both MPIs see. wanmpi's
# own WANMPI_WAN_CC, set after socket(), takes precedence. Which algorithm the sockets really
# used is shown per job (the CSV's cc column, and the kernel's for every socket between the
# clusters). The tools (mpirun, wanmpi-proxy, impi-server, wanemu) and libwanmpi.so are copied
# once at the start, so that a rebuild of the tree during the run cannot break a job. Each job has
# a time limit (coll 1500 s, single 240, outage stream + 50, phase 180; then it is ended, and its
# sockets are saved for the diagnosis).
#
# Sections:
#   coll    per cc, run and mode one job of 2H ranks: Alltoall and Alltoallv (uneven, 0.25-1.75 x
#           the size per pair) at 32 KiB, 256 KiB, 1 MiB per pair, FT-like (50 ms sleep as the
#           compute phase, then Alltoall 256 KiB) and IS-like (Allreduce, Alltoall of counts,
#           Alltoallv of keys, 256 KiB per pair on average); one unmeasured call first, then R
#           calls from a common start to the last rank's return. Around each measurement the
#           program stops at a quiet point and the script reads the link's counters (wanemu
#           stats) and the kernel's tcpi_total_retrans and tcpi_total_rto of every TCP socket
#           between the clusters (socket diagnostics, a small helper built here, as ss): drops,
#           retransmissions and RTOs are those of the measured calls only (steady state), for
#           every mode, Open MPI included.
#   single  1 rank per cluster (c0h0 -> c1h0): 3 x one 64 MiB MPI_Send; goodput = bytes / time
#           (median) against the link rate; a plain TCP flow (wanemu-bulk, 5 s) as reference.
#   outage  c0h0 streams --outage-msg (256 KiB) messages to c1h0 (16 in flight) for 16 s; 3 s in, the script
#           runs `wanemu set c0-c1 loss=100%,for=8s`. recovery = largest gap between consecutive
#           receipts - 8 s (receipts timestamped with CLOCK_MONOTONIC, the clock of every
#           namespace); "after return" = first receipt after the link's return - (the moment of
#           the set + 8 s). Floor: about one message time + d.
#   phase   2H ranks: 2 x Alltoall(256 KiB per pair), then at once c0h0 sends 32 MiB to c1h0 as 8
#           KiB messages (64 in flight); the receiver counts bytes per 10 ms bin from the moment
#           the sender's Alltoall returned: time until a bin reaches 90 % of the link (payload),
#           with the per-pattern restore (paced) and without (unpaced).
#
# Bounds (d = one-way delay, R = link rate): bound = gaps + calls x d + D x 8 / R, where D is the
# largest number of payload bytes any one direction of the link carries (all measured calls),
# calls the collective calls that must cross the link (FT: 1 per iteration, plus its sleep; IS:
# 3). TCP/IP headers cost 3.5 % at MTU 1500, which the 1.3 x target absorbs.
# Drop % = packets dropped at the link (queue and random, both directions) / packets arriving at
# it, data and ACKs. Drops are checked against the statistics: every dropped data segment must be
# retransmitted, so retransmissions >= dropped data segments (estimated from the dropped bytes:
# (bytes - 52 x packets) / 1448), and per wanmpi job the CSV's retrans/rtos against the kernel's
# figures for the same sockets.
# Targets (issue 12), checked at the end, paced mode: ratio to the bound <= 1.3, drops < 1 %, 0
# RTOs in the measured calls, under cubic >= 1.35 x faster than unpaced; single transfer >= 90 %
# of the link; recovery after the outage <= 1 s. Timing thresholds live here only. Exit status 0
# even if targets are missed; 1 only when the set-up fails. Prints the load average.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
RATE=100mbit
DELAY=10ms
QPKTS=20
HOSTS=4
NIC=1gbit
CCS="cubic bbr"
RUNS=
QUICK=0
ONLY=coll,single,outage,phase
OUT_MSG=256K
OMPI=1
PLOT=
KEEP=0
COLL_ARG=
PACED_ENV=
while [ $# -gt 0 ]; do
    case $1 in
        --rate) RATE=$2; shift 2 ;;
        --delay) DELAY=$2; shift 2 ;;
        --queue-pkts) QPKTS=$2; shift 2 ;;
        --hosts) HOSTS=$2; shift 2 ;;
        --nic) NIC=$2; shift 2 ;;
        --cc) CCS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --only) ONLY=$2; shift 2 ;;
        --outage-msg) OUT_MSG=$2; shift 2 ;;
        --no-openmpi) OMPI=0; shift ;;
        --plot) PLOT=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --coll) COLL_ARG=$2; shift 2 ;;
        --paced-env) PACED_ENV=$2; shift 2 ;;
        --build) BUILD=$(cd "$2" && pwd) || exit 2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare-pacing.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$RUNS" ] || { [ $QUICK = 1 ] && RUNS=1 || RUNS=3; }
for s in ${ONLY//,/ }; do
    case $s in coll|single|outage|phase) ;; *) echo "compare-pacing.sh: --only: unknown section $s" >&2; exit 2 ;; esac
done
for c in $CCS; do
    case $c in cubic|bbr|reno|system) ;; *) echo "compare-pacing.sh: --cc: unknown $c (cubic|bbr|reno|system)" >&2; exit 2 ;; esac
done
case $HOSTS in ''|*[!0-9]*|0) echo "compare-pacing.sh: --hosts must be 1 or more" >&2; exit 2 ;; esac
case $RUNS in ''|*[!0-9]*|0) echo "compare-pacing.sh: --runs must be 1 or more" >&2; exit 2 ;; esac
case $QPKTS in ''|*[!0-9]*|0) echo "compare-pacing.sh: --queue-pkts must be 1 or more" >&2; exit 2 ;; esac
case $OUT_MSG in [1-9]*K|[1-9]*M|[1-9]*) case ${OUT_MSG%[KM]} in *[!0-9]*) OUT_MSG=bad ;; esac ;; *) OUT_MSG=bad ;; esac
[ "$OUT_MSG" != bad ] || { echo "compare-pacing.sh: --outage-msg: a size such as 16K or 256K" >&2; exit 2; }
want() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }
BENCH_NAME=compare-pacing.sh
. "$ROOT/bench/wan_lib.sh"

W=$BUILD/bin/wanemu
SITES=$ROOT/tools/wanmpi-sites/wanmpi-sites
wan_prereq "wanemu wanemu-bulk mpirun wanmpi-proxy impi-server wanmpi wrappers" "$W" "$BUILD/bin/wanemu-bulk" \
    "$BUILD/bin/mpicc" "$BUILD/bin/mpirun" "$BUILD/bin/wanmpi-proxy" "$BUILD/bin/impi-server"

RUN=pace$$
wan_tmp pacing "$RUN"
JOBPID=        # the job running now (timeout's pid), killed on exit
BGPIDS=()      # outage timers
pacing_cleanup() {
    local p
    for p in $JOBPID "${BGPIDS[@]}"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null
    done
    [ -n "$JOBPID" ] && wait "$JOBPID" 2>/dev/null
    wan_cleanup
}
trap pacing_cleanup EXIT

# ---- build ----------------------------------------------------------------------------------------
# A private copy of the tools and the library, taken once: the build tree may be rebuilt while this
# runs (the machine is shared), and a job must not start half-written binaries. wanmpi-sites gets
# --bin $TMP/bin (mpirun finds wanmpi-proxy next to itself), the ranks LD_LIBRARY_PATH=$TMP/lib.
mkdir -p "$TMP/bin" "$TMP/lib"
for b in mpirun wanmpi-proxy impi-server wanemu wanemu-bulk; do
    cp "$BUILD/bin/$b" "$TMP/bin/$b" || die "cannot copy $BUILD/bin/$b"
done
cp -L "$BUILD/lib/libwanmpi.so.0" "$TMP/lib/libwanmpi.so.0" || die "cannot copy $BUILD/lib/libwanmpi.so.0"
"$BUILD/bin/mpicc" -O2 -o "$TMP/pacing_bench.wanmpi" "$ROOT/bench/pacing_bench.c" -L"$TMP/lib" 2>>"$TMP/build.log" ||
    die "building pacing_bench with wanmpi's mpicc failed: $(cat "$TMP/build.log")"
LD_LIBRARY_PATH=$TMP/lib ldd "$TMP/pacing_bench.wanmpi" | grep -q "$TMP/lib/libwanmpi.so.0" ||
    die "pacing_bench does not take $TMP/lib/libwanmpi.so.0"
W=$TMP/bin/wanemu   # the run's controller is started from the copy too
if [ $OMPI = 1 ]; then
    mpicc.openmpi -O2 -o "$TMP/pacing_bench.openmpi" "$ROOT/bench/pacing_bench.c" 2>>"$TMP/build.log" ||
        die "building pacing_bench with mpicc.openmpi failed: $(cat "$TMP/build.log")"
fi
cat >"$TMP/ccshim.c" <<'EOF'
/* LD_PRELOAD: TCP_CONGESTION=$PACING_SHIM_CC on every TCP socket this process creates. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
int socket(int domain, int type, int protocol)
{
    static int (*real)(int, int, int);
    if (!real) real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    int fd = real(domain, type, protocol);
    const char *cc = getenv("PACING_SHIM_CC");
    if (fd >= 0 && cc && *cc && (domain == AF_INET || domain == AF_INET6) &&
        (type & 0xff) == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP))
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc));
    return fd;
}
EOF
cc -O2 -Wall -shared -fPIC -o "$TMP/ccshim.so" "$TMP/ccshim.c" -ldl 2>>"$TMP/build.log" ||
    die "building the congestion-control shim failed: $(cat "$TMP/build.log")"
printf '#include <stdio.h>\n#include <time.h>\nint main(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); printf("%%ld.%%09ld\\n", (long)t.tv_sec, t.tv_nsec); return 0; }\n' >"$TMP/mono.c"
cc -O2 -o "$TMP/mono" "$TMP/mono.c" 2>>"$TMP/build.log" || die "building mono failed"
cat >"$TMP/tcpwan.c" <<'EOF'
/* tcpwan NETNS_PATH...: TCP sockets between clusters (local and peer address in different /24s)
 * in each network namespace, from the kernel's socket diagnostics (what ss reads): prints
 * "RETRANS RTOS SOCKETS CC" = the sums of tcpi_total_retrans and tcpi_total_rto (Linux >= 6.7;
 * struct tcp_info offset 240) over those sockets, their number, and "cubic:8,bbr:2"-style counts
 * of their congestion controls. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned long long retrans, rtos, nsock;
static char ccn[16][16];
static unsigned ccc[16];
static int nccs;

static void count_cc(const char *name)
{
    for (int i = 0; i < nccs; ++i)
        if (!strcmp(ccn[i], name)) { ccc[i]++; return; }
    if (nccs < 16) { snprintf(ccn[nccs], sizeof ccn[0], "%s", name); ccc[nccs++] = 1; }
}

static int dump(void)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    struct { struct nlmsghdr nlh; struct inet_diag_req_v2 r; } req;
    memset(&req, 0, sizeof req);
    req.nlh.nlmsg_len = sizeof req;
    req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.r.sdiag_family = AF_INET;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = ~(1u << 10); /* all but LISTEN */
    req.r.idiag_ext = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_CONG - 1));
    if (send(fd, &req, sizeof req, 0) < 0) { close(fd); return -1; }
    static char buf[1 << 16];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE) { close(fd); return 0; }
            if (h->nlmsg_type == NLMSG_ERROR) { close(fd); return -1; }
            struct inet_diag_msg *m = NLMSG_DATA(h);
            uint32_t s = ntohl(m->id.idiag_src[0]), d = ntohl(m->id.idiag_dst[0]);
            if (!s || !d || (s >> 8) == (d >> 8) || (s >> 24) == 127) continue;
            int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m)), got = 0;
            for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
                const unsigned char *p = RTA_DATA(a);
                if (a->rta_type == INET_DIAG_INFO && RTA_PAYLOAD(a) >= 104) {
                    uint32_t r; memcpy(&r, p + 100, 4); retrans += r; got = 1;
                    if (RTA_PAYLOAD(a) >= 242) { uint16_t t; memcpy(&t, p + 240, 2); rtos += t; }
                } else if (a->rta_type == INET_DIAG_CONG) {
                    char name[16] = {0};
                    memcpy(name, p, RTA_PAYLOAD(a) < 15 ? RTA_PAYLOAD(a) : 15);
                    count_cc(name);
                }
            }
            nsock += got;
        }
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; ++i) {
        int ns = open(argv[i], O_RDONLY | O_CLOEXEC);
        if (ns < 0 || setns(ns, CLONE_NEWNET) != 0 || dump() != 0) bad = 1;
        if (ns >= 0) close(ns);
    }
    printf("%llu %llu %llu ", retrans, rtos, nsock);
    for (int i = 0; i < nccs; ++i) printf("%s%s:%u", i ? "," : "", ccn[i], ccc[i]);
    printf("%s\n", nccs ? "" : "none");
    return bad;
}
EOF
cc -O2 -Wall -o "$TMP/tcpwan" "$TMP/tcpwan.c" 2>>"$TMP/build.log" ||
    die "building tcpwan failed: $(cat "$TMP/build.log")"

# ---- sizes ----------------------------------------------------------------------------------------
if [ $QUICK = 1 ]; then
    COLL=a2a:32K:3,a2a:256K:2,a2av:256K:2,ft:128K:2,is:128K:2
    BW=bw:16M:1; BULKT=3s
    OUT_LEAD=2; OUT_SECS=13
    PHASE=phase:128K:8M
    T_COLL=400
else
    COLL=a2a:32K:10,a2a:256K:4,a2a:1M:2,a2av:32K:10,a2av:256K:4,a2av:1M:2,ft:256K:4,is:256K:4
    BW=bw:64M:3; BULKT=5s
    OUT_LEAD=3; OUT_SECS=16
    PHASE=phase:256K:32M
    T_COLL=1500
fi
[ -z "$COLL_ARG" ] || COLL=$COLL_ARG
OUTAGE=8
bytes_of() { case $1 in *K) echo $(( ${1%K} * 1024 )) ;; *M) echo $(( ${1%M} * 1048576 )) ;; *) echo "$1" ;; esac; }
MODES="unpaced paced"
[ $OMPI = 1 ] && MODES="$MODES openmpi"

# ---- sites ----------------------------------------------------------------------------------------
UPNIC=()
[ "$NIC" = off ] || UPNIC=(--nic "$NIC")
"$W" up --name "$RUN" --clusters 2 --hosts "$HOSTS" --delay "$DELAY" --rate "$RATE" \
    --queue-pkts "$QPKTS" "${UPNIC[@]}" --interval 10ms --csv "$TMP/monitor.csv" \
    --watch-pid $$ --quiet || die "wanemu up failed"
export WANEMU_RUN=$RUN
LINK=c0-c1
d_s=$(awk -v s="$DELAY" 'BEGIN { v = s + 0; if (s ~ /us$/) v /= 1e6; else if (s ~ /ms$/ || s ~ /^[0-9.]+$/) v /= 1000; print v }')
rate_bps=$(awk -v s="$RATE" 'BEGIN { v = s + 0; if (s ~ /gbit/) v *= 1e9; else if (s ~ /mbit/) v *= 1e6; else if (s ~ /kbit/) v *= 1e3; print v }')
HOSTS0=() HOSTS1=()
for j in $(seq 0 $((HOSTS - 1))); do HOSTS0+=("c0h$j"); HOSTS1+=("c1h$j"); done
ALLHOSTS=("${HOSTS0[@]}" "${HOSTS1[@]}")
NSPATHS=()
for h in "${ALLHOSTS[@]}"; do
    ns=$("$W" hosts --name "$RUN" --kv | awk -v h="$h" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["host"] == h) print v["netns"] }')
    [ -n "$ns" ] && [ -e "/run/netns/$ns" ] || die "cannot find $h's network namespace (/run/netns/$ns)"
    NSPATHS+=("/run/netns/$ns")
done
"$TMP/tcpwan" "${NSPATHS[@]}" >/dev/null || die "tcpwan cannot read the hosts' sockets"

# sample: "up_s arrivals arrival_bytes delivered delivered_bytes drop_queue drop_random late_over
# tun_drops retrans rtos sockets cc" now: the link (both directions; wanemu's counters) and the TCP
# sockets between the clusters (tcpi_total_retrans, tcpi_total_rto, congestion controls)
sample() {
    local s
    s=$("$W" stats --name "$RUN" --kv 2>/dev/null | awk -v L="$LINK" '
        /^run=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "up_s") up = kv[2] } }
        /^link=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            if (v["link"] != L) next
            a += v["arrivals"]; ab += v["arrival_bytes"]; dl += v["delivered"]; db += v["delivered_bytes"]
            dq += v["drop_queue"]; dr += v["drop_random"]; lo += v["late_over"]; td += v["tun_drops"] }
        END { printf "%s %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f", up == "" ? "nan" : up, a, ab, dl, db, dq, dr, lo, td }')
    echo "$s $("$TMP/tcpwan" "${NSPATHS[@]}" 2>/dev/null || echo "n/a n/a n/a none")"
}

MARKS=$TMP/marks     # JOB|LABEL|sample
JOBS=$TMP/jobs       # JOB rc seconds retrans rtos sockets cc (WAN sockets at the last mark)
: >"$MARKS"; : >"$JOBS"
# job ID CC MODE NP LIMIT TESTS [HOOK]: one job of NP ranks per cluster running pacing_bench -t
# TESTS, serving its marks (sample the counters, then let it go on; HOOK ID LABEL is called after
# each); output in $TMP/ID.out, the wanmpi statistics CSV in $TMP/ID.csv. After LIMIT seconds the
# job is ended (SIGTERM to the launcher this function started), its open measurement closed by a
# sample taken then, and status 124 recorded; `timeout` 60 s later is only a safety net.
job() {
    local id=$1 cc=$2 mode=$3 np=$4 limit=$5 tests=$6 hook=${7:-}
    local sync=$TMP/sync.$id out=$TMP/$id.out n=1 what smp last="" open="" t0 rc killed=0
    local shim=() xs=() hl
    mkdir -p "$sync"
    rm -f "$TMP/$id.csv"
    [ "$cc" = system ] || shim=(LD_PRELOAD="$TMP/ccshim.so" PACING_SHIM_CC="$cc")
    echo "$id|job begin|$(sample)" >>"$MARKS"
    t0=$(date +%s.%N)
    case $mode in
        unpaced|paced)
            xs=(-x WANMPI_WAN_CC="$cc" -x WANMPI_WAN_STATS="$TMP/$id.csv" -x LD_LIBRARY_PATH="$TMP/lib")
            if [ $mode = unpaced ]; then
                xs+=(-x WANMPI_WAN_ADAPT=off)
            else
                xs+=(-x WANMPI_WAN_RATE="$RATE")
                for v in $PACED_ENV; do xs+=(-x "$v"); done
            fi
            [ ${#shim[@]} = 0 ] || xs+=(-x "${shim[0]}" -x "${shim[1]}")
            env "${shim[@]}" timeout $((limit + 60)) "$SITES" --bin "$TMP/bin" --run "$RUN" -n "$np" --timeout $((limit + 30)) \
                -q "${xs[@]}" -- "$TMP/pacing_bench.wanmpi" -S "$sync" -t "$tests" >"$out" 2>&1 &
            ;;
        openmpi)
            hl=$(printf '%s:1,' "${HOSTS0[@]:0:$np}" "${HOSTS1[@]:0:$np}")
            [ ${#shim[@]} = 0 ] || xs=(-x LD_PRELOAD -x PACING_SHIM_CC)
            env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "${shim[@]}" \
                timeout $((limit + 60)) "$W" exec -n c0h0 -- mpirun.openmpi --oversubscribe \
                --mca plm_rsh_agent "$W exec" --mca pml ob1 --mca btl tcp,self,vader \
                --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
                --mca mpi_yield_when_idle 1 "${xs[@]}" --host "${hl%,}" -np $((2 * np)) \
                "$TMP/pacing_bench.openmpi" -S "$sync" -t "$tests" >"$out" 2>&1 &
            ;;
    esac
    JOBPID=$!
    while :; do
        if [ -e "$sync/$n.mark" ]; then
            what=$(cat "$sync/$n.mark")
            smp=$(sample)
            echo "$id|$what|$smp" >>"$MARKS"
            case $what in *" end") last=$smp; open= ;; *" begin") open=${what% begin} ;; esac
            : >"$sync/$n.go"
            [ -z "$hook" ] || "$hook" "$id" "$what"
            n=$((n + 1))
            continue
        fi
        kill -0 "$JOBPID" 2>/dev/null || break
        if [ $killed = 0 ] && awk -v s="$t0" -v e="$(date +%s.%N)" -v l="$limit" 'BEGIN { exit !(e - s > l) }'; then
            killed=1
            "$TMP/mono" >"$TMP/$id.killed"
            if [ -n "$open" ]; then
                last=$(sample)
                echo "$id|$open end|$last" >>"$MARKS"
            fi
            for h in "${ALLHOSTS[@]}"; do   # for the diagnosis: the TCP state when it hung
                echo "== $h"; "$W" exec -n "$h" -- ss -tinp 2>&1
            done >"$TMP/$id.ss"
            say "  job $id still running after $limit s: ending it (its sockets then: $TMP/$id.ss)"
            kill "$JOBPID" 2>/dev/null
        fi
        sleep 0.02
    done
    wait "$JOBPID"; rc=$?
    JOBPID=
    [ $killed = 0 ] || rc=124
    sleep 0.3   # FINs and last ACKs
    echo "$id|job end|$(sample)" >>"$MARKS"
    # JOB status seconds, and the WAN sockets' "retrans rtos sockets cc" at the last end mark (the
    # job's whole life but its MPI_Finalize)
    set -- ${last:-x x x x x x x x x n/a n/a 0 none}
    echo "$id $rc $(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') ${10} ${11} ${12} ${13}" >>"$JOBS"
    [ $rc = 0 ] || say "  job $id failed (status $rc; see $out$([ $KEEP = 1 ] || echo ', --keep keeps it'))"
    return 0
}
# outage hook: 3 s after the stream began, the link drops everything for 8 s
outage_hook() {
    case $2 in
        stream:*" begin")
            ( sleep "$OUT_LEAD"; a=$("$TMP/mono"); "$W" set --name "$RUN" "$LINK" "loss=100%,for=${OUTAGE}s" >/dev/null
              b=$("$TMP/mono"); echo "$a $b" >"$TMP/$1.outage" ) &
            BGPIDS+=($!) ;;
    esac
}

say "load before: $(uptime)"
T0=$(date +%s)
say "sites up ($RUN): 2 clusters x $HOSTS hosts, link $RATE, $DELAY one way, queue $QPKTS packets, NIC ${NIC}; cc: $CCS; modes: $MODES; $RUNS run(s)"

for cc in $CCS; do
    if want coll; then
        for r in $(seq 1 "$RUNS"); do
            for m in $MODES; do
                say "coll: cc $cc, run $r of $RUNS, $m"
                job "coll.$cc.$m.$r" "$cc" "$m" "$HOSTS" "$T_COLL" "$COLL"
            done
        done
    fi
    if want single; then
        say "single: cc $cc, plain TCP (wanemu-bulk, $BULKT)"
        shim=(); [ "$cc" = system ] || shim=(LD_PRELOAD="$TMP/ccshim.so" PACING_SHIM_CC="$cc")
        env "${shim[@]}" "$W" exec -n c1h0 -- timeout 60 "$TMP/bin/wanemu-bulk" server -p 5201 --once >/dev/null 2>&1 &
        srv=$!
        "$W" exec -n c0h0 -- timeout 60 "$TMP/bin/wanemu-bulk" send c1h0:5201 -t "$BULKT" \
            $([ "$cc" = system ] || echo "--cc $cc") >"$TMP/bulk.$cc" 2>&1
        wait $srv 2>/dev/null
        for m in $MODES; do
            say "single: cc $cc, $m"
            job "single.$cc.$m.1" "$cc" "$m" 1 240 "$BW"
        done
    fi
    if want outage; then
        for r in $(seq 1 "$RUNS"); do
            for m in $MODES; do
                say "outage: cc $cc, run $r of $RUNS, $m"
                job "outage.$cc.$m.$r" "$cc" "$m" 1 $((OUT_SECS + 50)) "stream:$OUT_MSG:$OUT_SECS" outage_hook
                wait "${BGPIDS[@]}" 2>/dev/null
                BGPIDS=()
            done
        done
    fi
    if want phase; then
        for r in $(seq 1 "$RUNS"); do
            for m in $MODES; do
                say "phase: cc $cc, run $r of $RUNS, $m"
                job "phase.$cc.$m.$r" "$cc" "$m" "$HOSTS" 180 "$PHASE"
            done
        done
    fi
done
"$W" stats --name "$RUN" >"$TMP/stats.final" 2>&1   # also flushes the monitor
cp "$TMP/monitor.csv" "$TMP/monitor.keep.csv" 2>/dev/null
say "load after: $(uptime) ($(( $(date +%s) - T0 )) s)"

# ==== report ======================================================================================
# win ID LABEL: the counter deltas between "LABEL begin" and "LABEL end" of job ID (or of the
# whole job for LABEL "job"): "dt arrivals arrival_bytes delivered delivered_bytes dropq dropr
# late_over tun_drops retrans rtos up_begin up_end cc", empty if either is missing
win() {
    awk -F'|' -v id="$1" -v l="$2" '$1 == id && $2 == l " begin" { b = $3 } $1 == id && $2 == l " end" { e = $3 }
        END { if (b == "" || e == "") exit
              split(b, B, " "); split(e, E, " "); printf "%.3f", E[1] - B[1]
              for (i = 2; i <= 11; i++) { x = (E[i] == "n/a" || B[i] == "n/a") ? "n/a" : sprintf("%.0f", E[i] - B[i]); printf " %s", x }
              printf " %s %s %s\n", B[1], E[1], E[13] }' "$MARKS"
}
# val ID KIND KEY [LABELKEY LABELVAL]: KEY's value in job ID's line "pacing_bench: KIND ..."
val() {
    awk -v k="$2" -v key="$3" -v lk="${4:-}" -v lv="${5:-}" '$1 == "pacing_bench:" && $2 == k {
        delete v; for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (lk == "" || v[lk] == lv) { print v[key]; exit } }' "$TMP/$1.out" 2>/dev/null
}
# csvsum ID: "retrans rtos cc rows reconnects resent_bytes" from the job's WANMPI_WAN_STATS CSV, "n/a" if there is none
csvsum() {
    local f=$TMP/$1.csv
    [ -s "$f" ] || { echo "n/a n/a n/a 0 0 0"; return; }
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
                       if (!("retrans" in c) || !("rtos" in c) || !("cc" in c)) { bad = 1; exit } next }
             NF > 1 { r += $(c["retrans"]); t += $(c["rtos"]); cc[$(c["cc"])]++; n++
                      if ("reconnects" in c) { rc += $(c["reconnects"]); rb += $(c["resent_bytes"]) } }
             END { if (bad) { print "n/a n/a bad-header 0 0 0"; exit }
                   s = ""; for (k in cc) s = s (s == "" ? "" : ",") k
                   printf "%.0f %.0f %s %d %.0f %.0f\n", r, t, s == "" ? "-" : s, n, rc, rb }' "$f"
}
hsize() { awk -v b="$1" 'BEGIN { if (b >= 1048576 && b % 1048576 == 0) printf "%dM", b / 1048576; else if (b >= 1024 && b % 1024 == 0) printf "%dK", b / 1024; else printf "%d", b }'; }
jobok() { awk -v id="$1" '$1 == id { ok = ($2 == 0) } END { exit !ok }' "$JOBS"; }
# datadrops WINDOW...: dropped packets and the full data segments among them (estimated from the
# dropped bytes, arrival_bytes - delivered_bytes: (bytes - 52 x packets) / 1448), "n/a n/a" if unknown
datadrops() {
    awk -v ab="$3" -v db="$5" -v q="$6" -v r="$7" 'BEGIN { if (ab == "n/a" || ab == "") { print "n/a n/a"; exit }
        p = q + r; x = (ab - db - 52 * p) / 1448; printf "%.0f %.0f\n", p, x < 0 ? 0 : x }'; }

RES=$TMP/results   # section cc label mode run time bound arrivals drops datadrops retrans rtos late tun
: >"$RES"
if want coll; then
    for cc in $CCS; do for m in $MODES; do for r in $(seq 1 "$RUNS"); do
        id=coll.$cc.$m.$r
        for spec in ${COLL//,/ }; do
            kind=${spec%%:*}; rest=${spec#*:}; sz=${rest%%:*}
            bytes=$(awk -v s="$sz" 'BEGIN { v = s + 0; if (s ~ /[kK]$/) v *= 1024; else if (s ~ /[mM]$/) v *= 1048576; printf "%d", v }')
            t=$(val "$id" "$kind" time_s bytes "$bytes")
            calls=$(val "$id" "$kind" calls bytes "$bytes"); gap=$(val "$id" "$kind" gap_s bytes "$bytes")
            D=$(val "$id" "$kind" wan_dir_bytes bytes "$bytes")
            w=$(win "$id" "$kind:$bytes")
            [ -n "$t" ] || t=n/a
            bound=n/a
            [ -n "$D" ] && bound=$(awk -v g="$gap" -v c="$calls" -v d="$d_s" -v D="$D" -v R="$rate_bps" 'BEGIN { printf "%.4f", g + c * d + D * 8 / R }')
            if [ -n "$w" ]; then
                set -- $w
                echo "coll $cc $kind:$bytes $m $r $t $bound $2 $(datadrops "$@") ${10} ${11} $8 $9" >>"$RES"
            else
                echo "coll $cc $kind:$bytes $m $r $t $bound n/a n/a n/a n/a n/a n/a n/a" >>"$RES"
            fi
        done
    done; done; done
fi

fmt() { [ -z "$1" ] || [ "$1" = n/a ] && echo n/a || printf "%.${2:-2}f" "$1"; }
echo
echo "== WAN pacing (issue 12): 2 clusters x $HOSTS hosts x 1 rank, link $RATE, $DELAY one way, queue $QPKTS packets, NIC ${NIC}"
echo "   $RUNS run(s), medians; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; cc: $CCS"
if want coll; then
    echo
    echo "Collectives: time from a common start to the last rank's return; bound = gaps + calls x d + D x 8 / R"
    echo "  (D: payload bytes of the busiest link direction); drop % of the packets arriving at the link; drops"
    echo "  (data: ~ full data segments among them, from the dropped bytes), retr and RTOs: retransmitted segments and"
    echo "  retransmission timeouts of the TCP sockets between the clusters during the measured calls (per run,"
    echo "  r1/r2/..); speed-up = unpaced time / this time"
    for cc in $CCS; do
        echo
        printf '  %-6s %-5s %-5s %-8s %8s %8s %6s %6s %12s %14s %10s %8s\n' cc test size mode "time s" "bound s" ratio "drop%" "drops(data)" retr RTOs speed-up
        for spec in ${COLL//,/ }; do
            kind=${spec%%:*}; rest=${spec#*:}; sz=${rest%%:*}
            bytes=$(awk -v s="$sz" 'BEGIN { v = s + 0; if (s ~ /[kK]$/) v *= 1024; else if (s ~ /[mM]$/) v *= 1048576; printf "%d", v }')
            tu=$(awk -v cc="$cc" -v l="$kind:$bytes" '$1 == "coll" && $2 == cc && $3 == l && $4 == "unpaced" && $6 != "n/a" { print $6 }' "$RES" | median)
            for m in $MODES; do
                awk -v cc="$cc" -v l="$kind:$bytes" -v m="$m" -v tu="$tu" -v kind="$kind" -v sz="$sz" '
                    $1 == "coll" && $2 == cc && $3 == l && $4 == m {
                        n++; if ($6 != "n/a") t[++nt] = $6; if ($7 != "n/a") b = $7
                        if ($8 != "n/a" && $8 > 0) p[++np] = 100 * $9 / $8
                        dr = dr (n > 1 ? "/" : "") $9 "(" $10 ")"; rt = rt (n > 1 ? "/" : "") $11; ro = ro (n > 1 ? "/" : "") $12
                        if ($8 != "n/a" && ($13 > 0.01 * $8 || $14 > 0)) late = 1 }
                    function med(a, k,   i, j, x) { for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
                        return k == 0 ? "n/a" : (k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2) }
                    END { if (!n) exit
                        tm = med(t, nt); pm = med(p, np)
                        ts = tm == "n/a" ? "n/a" : sprintf("%.3f", tm); bs = b == "" ? "n/a" : sprintf("%.3f", b)
                        rs = (tm == "n/a" || b == "") ? "n/a" : sprintf("%.2f", tm / b)
                        ps = pm == "n/a" ? "n/a" : sprintf("%.2f", pm)
                        su = (m == "unpaced" || tm == "n/a" || tu == "n/a") ? "" : sprintf("%.2f", tu / tm)
                        printf "  %-6s %-5s %-5s %-8s %8s %8s %6s %6s %12s %14s %10s %8s%s\n", cc, kind, sz, m, ts, bs, rs, ps, dr, rt, ro, su, late ? "  (emulator late)" : "" }' "$RES"
            done
        done
    done
fi

if want single; then
    echo
    echo "Single transfer: one MPI_Send c0h0 -> c1h0, $(echo "$BW" | cut -d: -f2); goodput (median of $(echo "$BW" | cut -d: -f3) in one job) / link rate"
    printf '  %-6s %-16s %10s %8s %10s %8s %8s %8s\n' cc mode "Mbit/s" "% link" "first s" "drop%" retr RTOs
    for cc in $CCS; do
        tcp=$(sed -n 's/.*steady_mbit=\([0-9.]*\).*/\1/p' "$TMP/bulk.$cc" 2>/dev/null)
        awk -v cc="$cc" -v t="${tcp:-n/a}" -v R="$rate_bps" 'BEGIN {
            if (t == "n/a") printf "  %-6s %-16s %10s\n", cc, "plain TCP", "n/a"
            else printf "  %-6s %-16s %10.1f %8.1f\n", cc, "plain TCP", t, 100 * t * 1e6 / R }'
        for m in $MODES; do
            id=single.$cc.$m.1
            b=$(val "$id" bw bytes); t=$(val "$id" bw time_s); f=$(val "$id" bw first_s)
            w=$(win "$id" "bw:${b:-x}")
            set -- ${w:-x n/a n/a n/a n/a 0 0 0 0 n/a n/a}
            awk -v cc="$cc" -v m="$m" -v b="${b:-n/a}" -v t="${t:-n/a}" -v f="${f:-n/a}" -v R="$rate_bps" -v a="$2" -v dq="$6" -v dr="$7" -v rt="${10}" -v ro="${11}" 'BEGIN {
                if (t == "n/a" || b == "n/a") { printf "  %-6s %-16s %10s\n", cc, m, "n/a"; exit }
                g = b * 8 / t; pd = (a == "n/a" || a == 0) ? "n/a" : sprintf("%.2f", 100 * (dq + dr) / a)
                printf "  %-6s %-16s %10.1f %8.1f %10.3f %8s %8s %8s\n", cc, m, g / 1e6, 100 * g / R, f, pd, rt, ro }'
            echo "single $cc $m $(awk -v b="${b:-n/a}" -v t="${t:-n/a}" -v R="$rate_bps" 'BEGIN { if (t == "n/a" || b == "n/a") print "n/a"; else printf "%.4f\n", b * 8 / t / R }')" >>"$RES.single"
        done
    done
    echo "  (plain TCP: wanemu-bulk steady goodput; MTU 1500 caps TCP goodput at 96.5 % of the link's IP rate)"
fi

if want outage; then
    echo
    echo "Outage: c0h0 streams $OUT_MSG messages to c1h0; ${OUT_LEAD} s in, the link drops every packet for ${OUTAGE} s"
    echo "  recovery = largest gap between receipts - ${OUTAGE} s; after return = first receipt after the"
    echo "  link's return (set + ${OUTAGE} s) - that moment; stopped = last receipt before that gap - the set"
    echo "  (about 0: the gap is the outage); per run r1/r2/..; retr/RTOs over the whole stream; * = the job"
    echo "  was ended at its time limit (then: at least), > = no receipt after the return until then"
    printf '  %-6s %-8s %14s %18s %16s %10s %10s %10s\n' cc mode "recovery s" "after return s" "stopped s" "Mbit/s" retr RTOs
    for cc in $CCS; do for m in $MODES; do
        recs=() ; afts=(); stops=(); rts=(); ros=(); mb=()
        for r in $(seq 1 "$RUNS"); do
            id=outage.$cc.$m.$r
            set -- $(cat "$TMP/$id.outage" 2>/dev/null) n/a n/a
            sa=$1
            set -- $(awk -v sa="$sa" -v o="$OUTAGE" -v k="$(cat "$TMP/$id.killed" 2>/dev/null)" '
                function kv(   i, a) { delete v; for (i = 3; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } }
                $1 == "pacing_bench:" && $2 == "stream_gap" { kv(); n++; F[n] = v["from"]; T[n] = v["to"]; if (v["s"] > g) g = v["s"] }
                $1 == "pacing_bench:" && $2 == "stream" { kv(); done = 1; g = v["max_gap_s"]; n++; F[n] = v["gap_from"]; T[n] = v["gap_to"] }
                END {
                    if (sa == "n/a") { print "n/a n/a n/a"; exit }
                    ret = sa + o; c = 0
                    for (i = 1; i <= n; i++) if (F[i] <= ret && T[i] >= ret) c = i
                    star = (!done && k != "") ? "*" : ""
                    if (!c && !done && k != "") { x = sprintf(">%.1f", k - ret); print x, x, "n/a"; exit }
                    if (!done && n == 0) { print "n/a n/a n/a"; exit }
                    printf "%.3f%s %s %s\n", g - o, star, c ? sprintf("%.3f%s", T[c] - ret, star) : "n/a", c ? sprintf("%.3f", F[c] - sa) : "n/a" }' \
                "$TMP/$id.out" 2>/dev/null)
            recs+=("${1:-n/a}"); afts+=("${2:-n/a}"); stops+=("${3:-n/a}")
            echo "outage $cc $m $r ${1:-n/a}" >>"$RES.outage"
            w=$(win "$id" "stream:$(bytes_of "$OUT_MSG")")
            set -- ${w:-x n/a n/a n/a n/a 0 0 0 0 n/a n/a}
            rts+=("${10}"); ros+=("${11}")
            mb+=("$(val "$id" stream mbit)")
        done
        j() { local IFS=/; echo "$*"; }
        printf '  %-6s %-8s %14s %18s %16s %10s %10s %10s\n' "$cc" "$m" "$(j "${recs[@]}")" "$(j "${afts[@]}")" \
            "$(j "${stops[@]}")" "$(printf '%s\n' "${mb[@]}" | grep -v '^$' | median)" "$(j "${rts[@]}")" "$(j "${ros[@]}")"
    done; done
fi

if want phase; then
    pb=$(echo "$PHASE" | cut -d: -f2); pt=$(echo "$PHASE" | cut -d: -f3)
    echo
    echo "Phase change: 2 x Alltoall ($pb per pair), then at once c0h0 -> c1h0 $pt in 8 KiB messages;"
    echo "  t90 = time from the end of the sender's Alltoall until a 10 ms bin at the receiver carries 90 % of"
    echo "  the link in payload (per run; never: no bin did during the transfer); Mbit/s over the whole transfer"
    echo "  (median)"
    printf '  %-6s %-28s %22s %10s %10s\n' cc mode "t90 ms" "Mbit/s" "a2a s"
    for cc in $CCS; do for m in $MODES; do
        t90s=(); mbs=(); a2s=()
        for r in $(seq 1 "$RUNS"); do
            id=phase.$cc.$m.$r
            line=$(grep -m1 '^pacing_bench: phase ' "$TMP/$id.out" 2>/dev/null)
            if [ -z "$line" ]; then t90s+=(n/a); continue; fi
            set -- $(echo "$line" | awk -v R="$rate_bps" '{ for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                thr = 0.9 * R / 8 * v["bin_ms"] / 1000; n = split(v["bins"], b, ","); t90 = "never"
                for (i = 1; i <= n; i++) if (b[i] >= thr) { t90 = i * v["bin_ms"]; break }
                printf "%s %.1f %.3f\n", t90, v["total"] * 8 / v["time_s"] / 1e6, v["a2a_s"] }')
            t90s+=("$1"); mbs+=("$2"); a2s+=("$3")
            echo "phase $cc $m $r $1" >>"$RES.phase"
        done
        case $m in unpaced) lab="unpaced (no restore)" ;; paced) lab="paced (per-pattern restore)" ;; *) lab=$m ;; esac
        printf '  %-6s %-28s %22s %10s %10s\n' "$cc" "$lab" "$(IFS=/; echo "${t90s[*]}")" \
            "$(printf '%s\n' "${mbs[@]}" | grep -v '^$' | median)" "$(printf '%s\n' "${a2s[@]}" | grep -v '^$' | median)"
    done; done
fi

# ---- agreement: the wanmpi statistics, the kernel's counters and the link's drops ---------------------
echo
echo "Statistics vs counters, per job: CSV = WANMPI_WAN_STATS (sums over its rows: retrans, rtos; its cc"
echo "  column); sockets = the kernel's tcpi_total_retrans / tcpi_total_rto summed over every TCP socket between"
echo "  the clusters (socket diagnostics, at the job's last measurement: before MPI_Finalize; includes the"
echo "  impi-server or Open MPI control connections) and their congestion controls; link = packets dropped at"
echo "  the link over the job, ~ the full data segments among them (each must have been retransmitted)"
printf '  %-24s %4s %14s %16s %16s %10s %-22s %s\n' job exit "CSV retr/RTOs" "sockets retr/RTO" "link drops/~data" "cc (CSV)" "cc (sockets)" ""
AGREE_BAD=0; AGREE_N=0
while read -r id rc secs kr kt ns kcc; do
    w=$(win "$id" job)
    set -- ${w:-x n/a n/a n/a n/a 0 0 0 0 n/a n/a}
    read -r dp dd < <(datadrops "$@")
    rcn=0; rsb=0
    case $id in *.openmpi.*) cr=-; ct=-; ccc=-; rows=0 ;; *) read -r cr ct ccc rows rcn rsb < <(csvsum "$id") ;; esac
    note=""
    if [ "$cr" != - ] && [ "$cr" != n/a ] && [ "$kr" != n/a ]; then
        AGREE_N=$((AGREE_N + 1))
        # Connections replaced (a stall or a break; the CSV's reconnects): the kernel's counters
        # cover the current sockets only, while the CSV keeps the replaced ones' too, and what
        # the outage dropped was resent by wanmpi on the new connections (resent_bytes), not by
        # TCP. Then only the last check applies, with those resends counted as segments.
        note=$(awk -v cr="$cr" -v ct="$ct" -v kr="$kr" -v kt="$kt" -v dd="$dd" -v rc="$rcn" -v rb="$rsb" 'BEGIN {
            a = rc > 0 || (cr - kr < 0 ? kr - cr : cr - kr) <= (kr * 0.02 > 3 ? kr * 0.02 : 3)
            b = rc > 0 || (ct - kt < 0 ? kt - ct : ct - kt) <= 1
            c = (dd == "n/a") || ((rc > 0 ? cr + rb / 1448 : kr) + 3 >= 0.9 * dd)
            print (a && b && c) ? (rc > 0 ? "agree (" rc " replaced, " int(rb / 1448) " segments resent)" : "agree") : "DISAGREE" (a ? "" : ": retrans") (b ? "" : ": rtos") (c ? "" : ": retransmissions < dropped data") }')
        case $note in agree*) ;; *) AGREE_BAD=$((AGREE_BAD + 1)) ;; esac
    elif [ "$cr" = n/a ]; then
        note="(no CSV)"
    elif [ "$kr" != n/a ] && [ "$dd" != n/a ]; then
        note=$(awk -v kr="$kr" -v dd="$dd" 'BEGIN { print (kr + 3 >= 0.9 * dd) ? "" : "retransmissions < dropped data?" }')
    fi
    printf '  %-24s %4s %14s %16s %16s %10s %-22s %s\n' "$id" "$rc" "$cr/$ct" "$kr/$kt" "$dp/~$dd" "$ccc" "$kcc" "$note"
done <"$JOBS"

# ---- plot: one collective, unpaced then paced -----------------------------------------------------------
if [ -n "$PLOT" ] && want coll; then
    cc1=${CCS%% *}
    lab=
    case ",$COLL," in *,a2a:256K:*) lab=a2a:262144 ;; esac
    [ -n "$lab" ] || lab=$(awk -F'|' -v id="coll.$cc1.paced.1" '$1 == id && $2 ~ / begin$/ { sub(/ begin$/, "", $2); print $2; exit }' "$MARKS")
    wu=$(win "coll.$cc1.unpaced.1" "$lab"); wp=$(win "coll.$cc1.paced.1" "$lab")
    if [ -n "$wu" ] && [ -n "$wp" ] && [ -s "$TMP/monitor.keep.csv" ]; then
        set -- $wu; ub=${12}; ue=${13}
        set -- $wp; pb=${12}; pe=${13}
        awk -F, -v ub="$ub" -v ue="$ue" -v pb="$pb" -v pe="$pe" -v L="$LINK" 'BEGIN { OFS = "," }
            NR == 1 { print; next } $2 != L { next }
            $1 >= ub && $1 <= ue { $1 = sprintf("%.3f", $1 - ub); print; next }
            $1 >= pb && $1 <= pe { $1 = sprintf("%.3f", $1 - pb + (ue - ub) + 0.5); print }' \
            "$TMP/monitor.keep.csv" | sort -t, -k1,1g -s >"$TMP/plot.csv.body"
        { head -1 "$TMP/monitor.keep.csv"; grep -v '^time_s' "$TMP/plot.csv.body"; } >"$TMP/plot.csv"
        k=${lab%%:*}; b=$(hsize "${lab#*:}")
        split=$(awk -v ub="$ub" -v ue="$ue" 'BEGIN { printf "%.1f", ue - ub + 0.5 }')
        if "$W" plot "$TMP/plot.csv" -o "$PLOT" --bin 10ms --link "$LINK" \
            --title "$k $b/pair, 2x$HOSTS ranks, $RATE, $DELAY, $QPKTS-packet queue, $cc1: unpaced (0-${split} s), then paced" \
            >"$TMP/plot.log" 2>&1; then
            echo; echo "plot: $PLOT ($k $b per pair, $cc1, run 1: unpaced from 0 s, paced from ${split} s)"
        else
            echo; echo "plot failed: $(tail -3 "$TMP/plot.log")"
        fi
    else
        echo; echo "plot: no data (the $lab windows of coll.$cc1.unpaced.1 / paced.1 are missing)"
    fi
fi

# ---- targets ----------------------------------------------------------------------------------------------
echo
echo "Targets (paced mode; issue 12):"
if want coll; then
    for cc in $CCS; do
        awk -v cc="$cc" '
            $1 == "coll" && $2 == cc && $4 == "paced" { n++
                if ($6 == "n/a" || $7 == "n/a") { miss++; next }
                if ($6 / $7 > 1.3) { slow++; sl = sl " " $3 "(" sprintf("%.2f", $6 / $7) ")" }
                if ($8 != "n/a" && $8 > 0 && $9 / $8 >= 0.01) { dr++; dl = dl " " $3 "(" sprintf("%.1f%%", 100 * $9 / $8) ")" }
                if ($12 != "n/a" && $12 > 0) { rt++; rl = rl " " $3 "(" $12 ")" } }
            $1 == "coll" && $2 == cc && $4 == "unpaced" && $6 != "n/a" { tu[$3, $5] = $6 }
            $1 == "coll" && $2 == cc && $4 == "paced" && $6 != "n/a" { tp[$3, $5] = $6 }
            END {
                if (!n) { printf "  %s: no collective measurements\n", cc; exit }
                printf "  %-6s within 1.3 x bound: %s%s\n", cc, slow ? "NOT met:" sl : "met", miss ? " (" miss " missing)" : ""
                printf "  %-6s drops < 1 %%:          %s\n", cc, dr ? "NOT met:" dl : "met"
                printf "  %-6s 0 RTOs (measured):    %s\n", cc, rt ? "NOT met:" rl : "met"
                for (k in tp) if (k in tu) { m++; s = tu[k] / tp[k]; lg += log(s); if (s < 1.35) { low++ } }
                if (m) printf "  %-6s speed-up over unpaced: geometric mean %.2f over %d measurements, %d below 1.35%s\n", cc, exp(lg / m), m, low,
                    cc == "cubic" ? (low ? "; target >= 1.35: NOT met" : "; target >= 1.35: met") : " (target only under cubic)"
            }' "$RES"
    done
fi
if want single; then
    awk '$3 == "paced" || $3 == "unpaced" { if ($4 == "n/a") { printf "  single %-6s %-8s n/a\n", $2, $3; next }
        printf "  single %-6s %-8s %.1f %% of the link; target >= 90 %%: %s\n", $2, $3, 100 * $4, $4 >= 0.9 ? "met" : "NOT met" }' "$RES.single" 2>/dev/null
fi
if want outage; then
    for cc in $CCS; do for m in paced unpaced; do
        awk -v cc="$cc" -v m="$m" '$2 == cc && $3 == m && $5 != "n/a" { n++; x = $5; cut = (x ~ /[*>]/); gsub(/[*>]/, "", x)
                v[n] = x + 0; l = l (l == "" ? "" : "/") $5; if (cut || x + 0 > 1) bad++ }
            END { if (!n) { printf "  outage %-6s %-8s recovery n/a\n", cc, m; exit }
                  for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
                  md = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
                  printf "  outage %-6s %-8s recovery %.2f s (median of %s); target <= 1 s: %s\n", cc, m, md, l, (md <= 1 && bad <= n / 2) ? "met" : "NOT met" }' "$RES.outage" 2>/dev/null
    done; done
fi
if want phase; then
    for cc in $CCS; do
        awk -v cc="$cc" '$2 == cc { v[$3] = v[$3] (v[$3] == "" ? "" : "/") $5 }
            END { printf "  phase  %-6s t90 (ms, per run) with restore (paced) %s, without (unpaced) %s%s\n", cc,
                  v["paced"] == "" ? "n/a" : v["paced"], v["unpaced"] == "" ? "n/a" : v["unpaced"],
                  v["openmpi"] == "" ? "" : ", Open MPI " v["openmpi"] }' "$RES.phase" 2>/dev/null
    done
fi
echo "  statistics agree with the counters: $([ $AGREE_N = 0 ] && echo "n/a (no WANMPI_WAN_STATS CSV was written)" || { [ $AGREE_BAD = 0 ] && echo "yes, $AGREE_N job(s)" || echo "NO in $AGREE_BAD of $AGREE_N job(s)"; })"
echo
echo "Emulator over the whole run (wanemu stats; a late emulator distorts the numbers):"
awk '/^warnings/ { w = 1 } !w && /^ *(c0>c1|c1>c0):|^ *delivered|^ *emulator lateness/ { sub(/^ */, "  "); print }' "$TMP/stats.final"
awk '/^warnings/ { w = 1; print "  " $0; t = $2; gsub(/[^0-9]/, "", t); next } w && /^ / { l[++n] = $0 }
    END { for (i = (n > 3 ? n - 2 : 1); i <= n; i++) print "  " l[i]; if (t - 3 > 0) print "    (" t - 3 " earlier ones: wanemu stats; kept in stats.final with --keep)" }' "$TMP/stats.final"
echo "  (raw outputs: $TMP $([ $KEEP = 1 ] || echo '(removed; --keep keeps them)'))"
exit 0
