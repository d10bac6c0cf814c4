#!/usr/bin/env bash
# relay-restart.sh: how fast a job comes back after its impi-relay is killed and started again
# with its state file (issue 13 point 4, docs/design/relay-restart.md), and that nothing is lost.
#
#   sudo bench/relay-restart.sh [--build DIR] [--runs N] [--delay D] [--keep]
#
# One `wanemu up`: 2 clusters of 2 hosts, c1 private (its front-end c1h0 runs the relay), one-way
# delay DELAY (default 10ms). Each job runs tests/wan/resilience.c (every message checked: one
# lost, duplicated or reordered fails the job) with 1 + 2 ranks and TLS on the WAN; the relay is
# SIGKILLed 3 s into the job and started again with the same command 1 s later (wanmpi-sites
# --relay-restart 3:1). From the restarted relay's log, in ms after it listened again: impi-server
# took it back, the cluster's agent came back, the first packet passed through it again.
# Prints the medians over RUNS jobs (default 5), how many jobs passed the message check, and the
# load average (the machine is shared: numbers taken while others build are noisy).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
RUNS=5
DELAY=10ms
QUICK=0
OMPI=0
KEEP=0
BENCH_NAME=relay-restart.sh
. "$ROOT/bench/wan_lib.sh"
wan_options "build runs delay keep" 15 "$@"

W=$BUILD/bin/wanemu
SITES=$ROOT/tools/wanmpi-sites/wanmpi-sites
PROG=$BUILD/tests/wan/resilience
wan_prereq "wanemu mpirun impi-server impi-relay mpitest_resilience" \
    "$W" "$BUILD/bin/mpirun" "$BUILD/bin/impi-server" "$BUILD/bin/impi-relay" "$PROG"

RUN=rrs$$
wan_tmp relay-restart "$RUN"
SECRET=$TMP/job.key
head -c 32 /dev/urandom | base64 >"$SECRET"
chmod 600 "$SECRET"

say "load before: $(uptime)"
"$W" up --name "$RUN" --clusters 2 --hosts 2 --private c1 --delay "$DELAY" --interval off \
    --watch-pid $$ --quiet || die "wanemu up failed"

ok=0
for r in $(seq 1 "$RUNS"); do
    out=$TMP/job.$r
    timeout 300 "$SITES" --bin "$BUILD/bin" --run "$RUN" --clusters c0,c1 -n 1,2 --timeout 240 \
        --secret-file "$SECRET" --relay-restart 3:1 -x WANMPI_WAN_SECURITY=tls -- \
        "$PROG" 12 2500 >"$out" 2>&1
    rc=$?
    if [ $rc = 0 ] && grep -q " No Errors" "$out" && grep -q "restarted from" "$out"; then
        ok=$((ok + 1))
    else
        say "job $r failed (exit $rc; see $out, --keep keeps it)"
    fi
    say "job $r of $RUNS: exit $rc"
done
say "load after: $(uptime)"

# ms VALUES of the lines matching REGEX: the number before " ms"
ms() { sed -n "s/.*$1[^0-9]*\([0-9][0-9]*\) ms.*/\1/p" "$TMP"/job.* ; }
printf '\n%-52s %s\n' "after the restarted relay listened (median of $RUNS)" "ms"
printf '%-52s %s\n' "impi-server took it back (BACK)" "$(ms 'back with impi-server [^ ]* after' | median)"
printf '%-52s %s\n' "the cluster's agent came back" "$(ms "agent ([^)]*) came back" | median)"
printf '%-52s %s\n' "first packet through it again" "$(ms 'traffic flows again through the restarted relay' | median)"
printf '%-52s %s\n' "jobs with every message exactly once, in order" "$ok of $RUNS"
