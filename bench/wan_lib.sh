# wan_lib.sh: what the WAN benchmark scripts share (compare-wan.sh, compare-relay.sh, compare-pacing.sh, compare-security.sh, compare-lanes.sh, compare-compress.sh). Source it
# with BENCH_NAME (the script's name, for messages) and OMPI (1: compare with Open MPI) set.

# The WAN benchmarks measure the link with constant buffers, which compress to nearly nothing:
# with compression on (WANMPI_WAN_COMPRESS=auto is the default) they would measure zstd, not the
# link, and no longer compare with their earlier numbers or with Open MPI. Off unless the caller
# sets it (compare-compress.sh sets it per job with -x).
export WANMPI_WAN_COMPRESS=${WANMPI_WAN_COMPRESS:-off}

say() { printf '%s\n' "$*" >&2; }
die() { say "$BENCH_NAME: $*"; exit 1; }

# wan_prereq "NINJA TARGETS" FILE...: root (wanemu needs it), every FILE executable (else says
# which ninja targets build them), and Open MPI's wrapper if OMPI=1 (else OMPI=0, said once).
wan_prereq() {
    local targets=$1 f
    shift
    [ "$(id -u)" = 0 ] || die "needs root (wanemu)"
    for f in "$@"; do
        [ -x "$f" ] || die "missing $f (build it: ninja -C $BUILD $targets)"
    done
    if [ "$OMPI" = 1 ] && ! command -v mpicc.openmpi >/dev/null; then
        say "Open MPI (mpicc.openmpi) not installed: skipping it"
        OMPI=0
    fi
}

# wan_tmp NAME RUN...: a temporary directory in TMP (kept with KEEP=1) and, whatever happens, the
# wanemu runs RUN... taken down at exit.
wan_tmp() {
    TMP=$(mktemp -d "/tmp/wanmpi-$1.XXXXXX")
    shift
    WAN_RUNS=("$@")
    trap wan_cleanup EXIT
    trap 'exit 130' INT TERM HUP
}
wan_cleanup() {
    local r
    for r in "${WAN_RUNS[@]}"; do "$W" down --name "$r" >/dev/null 2>&1; done
    if [ "$KEEP" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}

# Plain TCP ping-pong (the floor every MPI is compared with), built into $TMP.
wan_build_tcp_pingpong() {
    cc -O2 -Wall -o "$TMP/wan_tcp_pingpong" "$ROOT/bench/wan_tcp_pingpong.c" 2>"$TMP/build.log" ||
        die "building wan_tcp_pingpong failed: $(cat "$TMP/build.log")"
}

# median: the median of the numbers on stdin, one per line ("n/a" if none).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# kv KEY FILE: the value of the first "KEY value ..." line of FILE (the benchmarks' output form).
kv() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
# m KEY PREFIX: the median of KEY over the files PREFIX.1 .. PREFIX.$RUNS (those that exist).
m() {
    local r
    for r in $(seq 1 "$RUNS"); do [ -f "$2.$r" ] && kv "$1" "$2.$r"; done | median
}

# wan_options "OPTS" HELP_LAST_LINE "$@": the options the WAN scripts share, each script naming
# the ones it takes (of: build delay rate runs quick no-openmpi keep); -h/--help prints the
# script's header comment up to line HELP_LAST_LINE. Sets BUILD DELAY RATE RUNS QUICK OMPI KEEP
# (defaults: set them before the call) and RUNS to 1 with --quick, 3 otherwise, unless given.
wan_options() {
    local opts=" $1 " last=$2 o
    shift 2
    while [ $# -gt 0 ]; do
        o=${1#--}
        if [ "$1" = -h ] || [ "$1" = --help ]; then
            sed -n "2,${last}p" "$0" | sed 's/^# \{0,1\}//'
            exit 0
        fi
        case $opts in
            *" $o "*) ;;
            *) echo "$BENCH_NAME: unknown option $1 (see --help)" >&2; exit 2 ;;
        esac
        case $o in
            build) BUILD=$(cd "$2" && pwd) || exit 2; shift 2 ;;
            delay) DELAY=$2; shift 2 ;;
            rate) RATE=$2; shift 2 ;;
            runs) RUNS=$2; shift 2 ;;
            quick) QUICK=1; shift ;;
            no-openmpi) OMPI=0; shift ;;
            keep) KEEP=1; shift ;;
        esac
    done
    [ -n "$RUNS" ] || { [ "$QUICK" = 1 ] && RUNS=1 || RUNS=3; }
}

# wan_ompi2 RUN PROGRAM ARGS...: PROGRAM (built with mpicc.openmpi) on c0h0 and c1h0 of wanemu
# run RUN, one rank each: ssh replaced by `wanemu exec` ($W), TCP on eth0, root allowed.
wan_ompi2() {
    local run=$1 prog=$2
    shift 2
    env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 WANEMU_RUN="$run" timeout 300 \
        "$W" exec c0h0 -- mpirun.openmpi --oversubscribe --mca plm_rsh_agent "$W exec" --mca pml ob1 \
        --mca btl tcp,self,vader --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
        --host "c0h0:1,c1h0:1" -np 2 "$prog" "$@"
}
# wan_two_links RUN: wanemu runs RUNa (200 Mbit/s, MTU 1500) and RUNb (1 Gbit/s, MTU 9000 with
# GSO super-packets), two clusters of one host each, one-way delay DELAY.
wan_two_links() {
    "$W" up --name "${1}a" --clusters 2 --hosts 1 --delay "$DELAY" --rate 200mbit --watch-pid $$ \
        --quiet || die "wanemu up (200 Mbit/s) failed"
    "$W" up --name "${1}b" --clusters 2 --hosts 1 --delay "$DELAY" --rate 1gbit --mtu 9000 --gso \
        --watch-pid $$ --quiet || die "wanemu up (1 Gbit/s) failed"
}
