#!/usr/bin/env bash
# compare-lanes.sh: issue 14 between two clusters: head-of-line blocking (a ping during a large
# transfer to the same peer), for wanmpi with each part of the remedy on and off, and Open MPI
# over the same link, in the same wanemu run, and lanes (WANMPI_WAN_LANES) one against auto, and
# one large transfer striped over 4 lanes (WANMPI_WAN_STRIPE) against one lane. (The task farm's
# lanes comparison is bench/compare-farm.sh's.)
#
#   sudo bench/compare-lanes.sh [--delay 10ms] [--rate 200mbit] [--loss "0 1"] [--size 64]
#                               [--only hol,fat] [--runs N] [--quick] [--no-openmpi]
#                               [--modes "lanes1 default"] [--cc NAME] [--keep] [--build DIR]
#
#   --delay/--rate  the link between the clusters (default 10 ms one way, 200 Mbit/s, wanemu's
#                   auto queue: one round trip's worth)
#   --loss LIST     random loss in % on that link, one pass each (default "0 1")
#   --size MIB      the large message (default 64; 16 with --quick)
#   --only LIST     sections (default hol,fat)
#   --modes LIST    the wanmpi modes of section hol (default: all, below)
#   --runs N        jobs per mode and loss (default 1; each job makes 3 transfers)
#   --cc NAME       WANMPI_WAN_CC for every wanmpi job (e.g. cubic; default: the system's)
#   --quick         16 MiB, 1 transfer per job: checks the set-up, the numbers mean little
#   --no-openmpi    skip Open MPI (needs mpicc.openmpi / mpirun.openmpi)
#   --keep          keep the temporary directory (binaries, raw outputs)
#   --build DIR     wanmpi build tree (default <repo>/build)
#
# Sections:
#   hol  one wanemu run, 2 clusters x 1 host (c0h0, c1h0); bench/hol_bench.c: rank 0 sends the
#        large message to rank 1 (MPI_Isend, tag 1) while it ping-pongs 1 byte with it (tag 2).
#        Reported: idle round trip, the round trip during the transfer (median, 90th percentile,
#        max), their ratio (issue 14's target: <= 2 with the defaults, at 0 and 1 % loss), and
#        the transfer's throughput. wanmpi modes (WANMPI_WAN_* settings):
#          before   PRIORITY=0 NOTSENT_LOWAT=0 FRAGMENT=0   one queue, kernel buffer unbounded,
#                                                           1 MiB packets (wanmpi before issue 14)
#          lowat    PRIORITY=0 NOTSENT_LOWAT=auto FRAGMENT=0  only the kernel's queue bounded
#          prio     PRIORITY=1 NOTSENT_LOWAT=0 FRAGMENT=auto  only wanmpi's queue reordered
#          prio+lw  PRIORITY=1 NOTSENT_LOWAT=auto FRAGMENT=0  both, but whole 1 MiB packets
#          lanes1   WANMPI_WAN_LANES=1                      the remedies of one connection
#          default  (nothing set: PRIORITY=1, NOTSENT_LOWAT=auto, FRAGMENT=auto, LANES=auto:
#                   4 lanes at this delay; the ping's tag and the transfer's hash to different
#                   lanes on MPI_COMM_WORLD, so a segment lost on the transfer's lane does not
#                   hold the ping; STRIPE=auto)
#          lanes4   WANMPI_WAN_LANES=4 WANMPI_WAN_STRIPE=off   the transfer on its own lane
#          striped  WANMPI_WAN_LANES=4 WANMPI_WAN_STRIPE=on    the transfer over all 4 lanes
#        (not in the default list: --modes "lanes1 lanes4 striped" for the throughput of one
#        transfer, e.g. --only hol --loss 1 --size 64 --no-openmpi)
#        and Open MPI (ob1, btl tcp; its default TCP buffers and 1-byte eager path).
#   fat  what TCP_NOTSENT_LOWAT costs on a long fat pipe: a second wanemu run at 1 Gbit/s, MTU
#        9000 + GSO, same delay, no loss; hol_bench -n (the transfer alone, no pings) with
#        NOTSENT_LOWAT=0 vs auto vs 64k (the least auto sets).
# Congestion control: the machine's default for both MPIs (bbr here; see compare-pacing.sh for
# cubic). Timing thresholds live here only; exit status 0 even if a target is missed, 1 when
# the set-up fails. Prints the load average: the machine is shared.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
DELAY=10ms
RATE=200mbit
LOSSES="0 1"
SIZE=
ONLY=hol,fat
MODES_ARG=
RUNS=1
CC_ARG=
QUICK=0
OMPI=1
KEEP=0
while [ $# -gt 0 ]; do
    case $1 in
        --delay) DELAY=$2; shift 2 ;;
        --rate) RATE=$2; shift 2 ;;
        --loss) LOSSES=$2; shift 2 ;;
        --size) SIZE=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --modes) MODES_ARG=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --cc) CC_ARG=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --no-openmpi) OMPI=0; shift ;;
        --keep) KEEP=1; shift ;;
        --build) BUILD=$(cd "$2" && pwd) || exit 2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare-lanes.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for s in ${ONLY//,/ }; do
    case $s in hol|fat) ;; *) echo "compare-lanes.sh: --only: unknown section $s" >&2; exit 2 ;; esac
done
case $RUNS in ''|*[!0-9]*|0) echo "compare-lanes.sh: --runs must be 1 or more" >&2; exit 2 ;; esac
[ -n "$SIZE" ] || { [ $QUICK = 1 ] && SIZE=16 || SIZE=64; }
case $SIZE in ''|*[!0-9]*|0) echo "compare-lanes.sh: --size: MiB, 1 or more" >&2; exit 2 ;; esac
want() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }
BENCH_NAME=compare-lanes.sh
. "$ROOT/bench/wan_lib.sh"

W=$BUILD/bin/wanemu
SITES=$ROOT/tools/wanmpi-sites/wanmpi-sites
wan_prereq "wanemu mpirun wanmpi-proxy impi-server wanmpi wrappers" \
    "$W" "$BUILD/bin/mpicc" "$BUILD/bin/mpirun" "$BUILD/bin/impi-server"

RUN=cl$$
wan_tmp lanes "${RUN}a" "${RUN}b"

"$BUILD/bin/mpicc" -O2 -o "$TMP/hol.wanmpi" "$ROOT/bench/hol_bench.c" 2>>"$TMP/build.log" ||
    die "building hol_bench with wanmpi's mpicc failed: $(cat "$TMP/build.log")"
if [ $OMPI = 1 ]; then
    mpicc.openmpi -O2 -o "$TMP/hol.openmpi" "$ROOT/bench/hol_bench.c" 2>>"$TMP/build.log" ||
        die "building hol_bench with mpicc.openmpi failed"
fi
if [ $QUICK = 1 ]; then ARGS=(-B "$SIZE" -r 1 -i 20); else ARGS=(-B "$SIZE" -r 3 -i 50); fi
OMPI_ENV=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
OMPI_ARGS=(--oversubscribe --mca plm_rsh_agent "$W exec" --mca pml ob1 --mca btl tcp,self,vader
           --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0)

run_wanmpi() {  # RUN OUT ENV... -- ARGS...
    local run=$1 out=$2 xs=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do xs+=(-x "$1"); shift; done
    shift
    [ -n "$CC_ARG" ] && xs+=(-x "WANMPI_WAN_CC=$CC_ARG")
    WANEMU_RUN=$run timeout 600 "$SITES" --bin "$BUILD/bin" --run "$run" -n 1 --timeout 500 -q \
        "${xs[@]}" -- "$TMP/hol.wanmpi" "$@" >"$out" 2>&1 || say "wanmpi job failed (see $out)"
}
run_openmpi() {  # RUN OUT ARGS...
    local run=$1 out=$2
    shift 2
    env "${OMPI_ENV[@]}" WANEMU_RUN=$run timeout 600 "$W" exec c0h0 -- mpirun.openmpi \
        "${OMPI_ARGS[@]}" --host "c0h0:1,c1h0:1" -np 2 "$TMP/hol.openmpi" "$@" >"$out" 2>&1 ||
        say "Open MPI job failed (see $out)"
}

# The wanmpi modes of the hol section: name, then its settings.
MODES=(before lowat prio prio+lw lanes1 default)
if [ -n "$MODES_ARG" ]; then
    for m in $MODES_ARG; do
        case " ${MODES[*]} lanes4 striped " in *" $m "*) ;; *) die "--modes: unknown mode $m" ;; esac
    done
    read -r -a MODES <<<"$MODES_ARG"
fi
mode_env() {
    case $1 in
        before) echo WANMPI_WAN_PRIORITY=0 WANMPI_WAN_NOTSENT_LOWAT=0 WANMPI_WAN_FRAGMENT=0 ;;
        lowat) echo WANMPI_WAN_PRIORITY=0 WANMPI_WAN_NOTSENT_LOWAT=auto WANMPI_WAN_FRAGMENT=0 ;;
        prio) echo WANMPI_WAN_PRIORITY=1 WANMPI_WAN_NOTSENT_LOWAT=0 WANMPI_WAN_FRAGMENT=-1 ;;
        prio+lw) echo WANMPI_WAN_PRIORITY=1 WANMPI_WAN_NOTSENT_LOWAT=auto WANMPI_WAN_FRAGMENT=0 ;;
        lanes1) echo WANMPI_WAN_LANES=1 ;;
        lanes4) echo WANMPI_WAN_LANES=4 WANMPI_WAN_STRIPE=off ;;
        striped) echo WANMPI_WAN_LANES=4 WANMPI_WAN_STRIPE=on ;;
        default) echo ;;
    esac
}

say "load before: $(uptime)"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- section hol ---------------------------------------------------------------------------
if want hol; then
    "$W" up --name "${RUN}a" --clusters 2 --hosts 1 --delay "$DELAY" --rate "$RATE" \
        --watch-pid $$ --quiet || die "wanemu up ($RATE) failed"
    for loss in $LOSSES; do
        "$W" set --name "${RUN}a" c0-c1 "loss=${loss}%" >/dev/null ||
            die "wanemu set loss=${loss}% failed"
        for r in $(seq 1 "$RUNS"); do
            for m in "${MODES[@]}"; do
                say "hol: loss $loss %, run $r, wanmpi $m"
                # shellcheck disable=SC2046
                run_wanmpi "${RUN}a" "$TMP/hol.$loss.$m.$r" $(mode_env "$m") -- "${ARGS[@]}"
            done
            if [ $OMPI = 1 ]; then
                say "hol: loss $loss %, run $r, Open MPI"
                run_openmpi "${RUN}a" "$TMP/hol.$loss.ompi.$r" "${ARGS[@]}"
            fi
        done
    done
    "$W" down --name "${RUN}a" >/dev/null 2>&1
fi

# ---- section fat: TCP_NOTSENT_LOWAT's cost on a long fat pipe ------------------------------------
FAT_MODES=(0 auto 64k)
if want fat; then
    "$W" up --name "${RUN}b" --clusters 2 --hosts 1 --delay "$DELAY" --rate 1gbit --mtu 9000 \
        --gso --watch-pid $$ --quiet || die "wanemu up (1 Gbit/s) failed"
    for r in $(seq 1 "$RUNS"); do
        for lw in "${FAT_MODES[@]}"; do
            say "fat: run $r, NOTSENT_LOWAT=$lw"
            run_wanmpi "${RUN}b" "$TMP/fat.$lw.$r" WANMPI_WAN_NOTSENT_LOWAT=$lw -- "${ARGS[@]}" -n
        done
        if [ $OMPI = 1 ]; then
            say "fat: run $r, Open MPI"
            run_openmpi "${RUN}b" "$TMP/fat.ompi.$r" "${ARGS[@]}" -n
        fi
    done
    "$W" down --name "${RUN}b" >/dev/null 2>&1
fi
say "load after: $(uptime)"

echo
echo "== compare-lanes.sh: 2 clusters, one-way delay $DELAY ($RUNS run(s), medians)${CC_ARG:+, wanmpi with WANMPI_WAN_CC=$CC_ARG}"
echo "   load average before: $LOAD0, after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
if want hol; then
    for loss in $LOSSES; do
        echo
        echo "head-of-line: $RATE, loss $loss %, ${SIZE} MiB Isend + 1-byte ping-pong (round trips in ms)"
        printf '  %-9s %8s %8s %8s %8s %7s %10s\n' mode idle during p90 max ratio Mbit/s
        for m in "${MODES[@]}" ompi; do
            [ $m = ompi ] && [ $OMPI = 0 ] && continue
            f=$TMP/hol.$loss.$m
            printf '  %-9s %8s %8s %8s %8s %7s %10s\n' "$([ $m = ompi ] && echo 'Open MPI' || echo $m)" \
                "$(m idle_rtt_ms "$f")" "$(m hol_rtt_ms "$f")" "$(m hol_rtt_p90_ms "$f")" \
                "$(m hol_rtt_max_ms "$f")" "$(m hol_ratio "$f")" "$(m xfer_mbit "$f")"
        done
        awk -v r="$(m hol_ratio "$TMP/hol.$loss.default")" -v l=$loss 'BEGIN {
            if (r == "n/a") { print "  (default: no result)"; exit }
            printf "  target (defaults, loss %s %%): ratio <= 2: %s\n", l, (r <= 2) ? "met" : "NOT met" }'
    done
fi
if want fat; then
    echo
    echo "TCP_NOTSENT_LOWAT on a long fat pipe: 1 Gbit/s, MTU 9000, ${SIZE} MiB alone (Mbit/s)"
    printf '  %-16s %10s %10s\n' NOTSENT_LOWAT median first
    for lw in "${FAT_MODES[@]}" ompi; do
        [ $lw = ompi ] && [ $OMPI = 0 ] && continue
        printf '  %-16s %10s %10s\n' "$([ $lw = ompi ] && echo 'Open MPI' || echo $lw)" \
            "$(m xfer_mbit "$TMP/fat.$lw")" "$(m xfer_first_mbit "$TMP/fat.$lw")"
    done
fi
echo "  (raw outputs: $TMP $([ $KEEP = 1 ] || echo '(removed; --keep keeps them)'))"
