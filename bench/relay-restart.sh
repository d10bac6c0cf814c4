#!/usr/bin/env bash
# relay-restart.sh: how fast a job comes back after its impi-relay is killed and started again
# with its state file (issue 13 point 4, docs/design/relay-restart.md), and that nothing is lost.
#
#   sudo bench/relay-restart.sh [--build DIR] [--runs N] [--delay D] [--trunk K [--startup]] [--keep]
#
# One `wanemu up`: 2 clusters of 2 hosts, c1 private (its front-end c1h0 runs the relay), one-way
# delay DELAY (default 10ms). Each job runs tests/wan/resilience.c (every message checked: one
# lost, duplicated or reordered fails the job) with 1 + 2 ranks and TLS on the WAN; the relay is
# SIGKILLed 3 s into the job and started again with the same command 1 s later (wanmpi-sites
# --relay-restart 3:1). From the restarted relay's log, in ms after it listened again: impi-server
# took it back, the cluster's agent came back, the first packet passed through it again.
# --trunk K: c1 has 2 front-ends and 2 trunk relays (the primary on c1h0 starts the other on c1h1)
# and 3 hosts; c1 is client 0 with 2 ranks, c0 has 2, so pairs go through both relays. Relay K
# (0: the primary, 1: the member) is killed and started again; for a member the time it came back
# to the primary (TBCK) is printed instead of the server's and the agent's. --startup: relay K is
# killed during the IMPI start-up instead (wanmpi-sites --relay-restart startup:never:K) and not
# started again; the job must fail, naming the start-up; prints how long after the kill every
# cluster had ended.
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
TRUNK=
STARTUP=0
BENCH_NAME=relay-restart.sh
. "$ROOT/bench/wan_lib.sh"
args=()
while [ $# -gt 0 ]; do
    if [ "$1" = --trunk ]; then TRUNK=$2; shift 2
    elif [ "$1" = --startup ]; then STARTUP=1; shift
    else args+=("$1"); shift; fi
done
case $TRUNK in ""|0|1) ;; *) echo "$BENCH_NAME: --trunk takes 0 or 1" >&2; exit 2 ;; esac
[ "$STARTUP" = 0 ] || [ -n "$TRUNK" ] || { echo "$BENCH_NAME: --startup needs --trunk" >&2; exit 2; }
wan_options "build runs delay keep" 21 "${args[@]}"

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
if [ -n "$TRUNK" ]; then
    "$W" up --name "$RUN" --clusters 2 --hosts 3 --private c1 --frontends 2 --delay "$DELAY" \
        --interval off --watch-pid $$ --quiet || die "wanemu up failed"
    JOB=(--clusters c1,c0 -n 2,2 --trunks 2 --relay-restart "3:1:$TRUNK")
    [ "$STARTUP" = 1 ] && JOB=(--clusters c1,c0 -n 2,2 --trunks 2 --relay-restart "startup:never:$TRUNK")
else
    "$W" up --name "$RUN" --clusters 2 --hosts 2 --private c1 --delay "$DELAY" --interval off \
        --watch-pid $$ --quiet || die "wanemu up failed"
    JOB=(--clusters c0,c1 -n 1,2 --relay-restart 3:1)
fi

ok=0
for r in $(seq 1 "$RUNS"); do
    out=$TMP/job.$r
    timeout 300 "$SITES" --bin "$BUILD/bin" --run "$RUN" "${JOB[@]}" --timeout 240 \
        --secret-file "$SECRET" -x WANMPI_WAN_SECURITY=tls -- "$PROG" 12 2500 >"$out" 2>&1
    rc=$?
    if [ "$STARTUP" = 1 ]; then
        if [ $rc != 0 ] && grep -q "during the start-up" "$out" && ! grep -q "left running" "$out"; then
            ok=$((ok + 1))
        else
            say "job $r did not end as it should (exit $rc; see $out, --keep keeps it)"
        fi
    elif [ $rc = 0 ] && grep -q " No Errors" "$out" && grep -q "restarted from" "$out"; then
        ok=$((ok + 1))
    else
        say "job $r failed (exit $rc; see $out, --keep keeps it)"
    fi
    say "job $r of $RUNS: exit $rc"
done
say "load after: $(uptime)"

# ms VALUES of the lines matching REGEX: the number before " ms"
ms() { sed -n "s/.*$1[^0-9]*\([0-9][0-9]*\) ms.*/\1/p" "$TMP"/job.* ; }
if [ "$STARTUP" = 1 ]; then
    printf '\n%-52s %s\n' "every cluster ended after the kill (median of $RUNS)" \
        "$(sed -n 's/.*every cluster ended \([0-9.]*\) s after.*/\1/p' "$TMP"/job.* | median) s"
    printf '%-52s %s\n' "jobs that failed cleanly (start-up named, nothing left)" "$ok of $RUNS"
    exit 0
fi
printf '\n%-52s %s\n' "after the restarted relay listened (median of $RUNS)" "ms"
if [ "$TRUNK" = 1 ]; then
    printf '%-52s %s\n' "it came back to the primary relay (TBCK)" "$(ms 'back with the primary relay [^ ]* after' | median)"
else
    printf '%-52s %s\n' "impi-server took it back (BACK)" "$(ms 'back with impi-server [^ ]* after' | median)"
    printf '%-52s %s\n' "the cluster's agent came back" "$(ms "agent ([^)]*) came back" | median)"
fi
[ "$TRUNK" = 0 ] && printf '%-52s %s\n' "its trunk member came back to it (TBCK)" "$(ms 'trunk relay 1 of 2.* came back from [^ ]* after' | median)"
printf '%-52s %s\n' "first packet through it again" "$(ms 'traffic flows again through the restarted relay' | median)"
printf '%-52s %s\n' "jobs with every message exactly once, in order" "$ok of $RUNS"
