#!/bin/bash
# Clean-up guarantee: nothing of a run (namespace, process, state) survives
#  - `wanemu down --all` after the controller was SIGKILLed (live runs of others are kept),
#  - SIGTERM to the controller,
#  - the exit of the process given to --watch-pid (how the tests protect themselves).
source "$(dirname "$0")/lib.sh" "$@"

leftovers() {  # leftovers RUN: prints what is left of RUN
    ip netns list | grep "^wn\.$1\." || true
    [[ ! -e /run/wanemu/$1 ]] || echo "/run/wanemu/$1"
}
controller_pid() { awk '/^pid / {print $2}' "/run/wanemu/$1/state"; }

note "SIGKILL the controller, then down --all"
R2=${RUN:0:20}-k
EXTRA_RUNS+=("$R2")
wan_up --clusters 2 --hosts 2 --private 1
"$WANEMU" up --name "$R2" --clusters 2 --hosts 1 -q
"$WANEMU" exec --name "$R2" c0h0 -- sleep 1000 &
agent=$!
wait_for sh -c "ip netns pids wn.$R2.c0h0 | grep -q ." || fail "sleeper did not start"
sleeper=$(ip netns pids "wn.$R2.c0h0")
pid=$(controller_pid "$R2")
kill -KILL "$pid"
wait_for sh -c "! kill -0 $pid" || fail "controller $pid survived SIGKILL"
"$WANEMU" list | grep -E "^$R2 .* stale " || fail "killed run not listed as stale"
[[ -n $(leftovers "$R2") ]] || fail "nothing left after SIGKILL? (test is broken)"
"$WANEMU" down --all | sed 's/^/  /'
[[ -z $(leftovers "$R2") ]] || fail "left after down --all: $(leftovers "$R2")"
! kill -0 "$sleeper" 2>/dev/null || fail "process $sleeper in the run survived down --all"
wait $agent 2>/dev/null || true
[[ -z $(leftovers "$RUN") ]] && fail "down --all removed a live run"
"$WANEMU" exec c0h0 -- true || fail "the live run stopped working after down --all"

note "SIGTERM to the controller"
"$WANEMU" exec c1h1 -- sleep 1000 &
agent=$!
wait_for sh -c "ip netns pids wn.$RUN.c1h1 | grep -q ." || fail "sleeper did not start"
pid=$(controller_pid "$RUN")
kill -TERM "$pid"
wait_for sh -c "! kill -0 $pid" || fail "controller did not exit on SIGTERM"
[[ -z $(leftovers "$RUN") ]] || fail "left after SIGTERM: $(leftovers "$RUN")"
rc=0; wait $agent || rc=$?
[[ $rc != 0 ]] || fail "the command in the run should have been killed"

note "--watch-pid"
sleep 1000 &
watched=$!
"$WANEMU" up --name "$R2" --watch-pid "$watched" --clusters 1 --hosts 1 -q
kill "$watched"
wait "$watched" 2>/dev/null || true
wait_for sh -c "[ -z \"\$(ip netns list | grep '^wn\.$R2\.')\" ] && [ ! -e /run/wanemu/$R2 ]" ||
    fail "run not taken down after its watched process exited"

note "failed start cleans up"
"$WANEMU" up --name "$R2" --clusters 1 --hosts 1 -q
rc=0; "$WANEMU" up --name "$R2" --clusters 1 --hosts 1 -q 2>"$TMP/err" || rc=$?
[[ $rc != 0 ]] && grep -q "already up" "$TMP/err" || fail "second up of the same name should fail"
"$WANEMU" down --name "$R2" >/dev/null
[[ -z $(leftovers "$R2") ]] || fail "left after down: $(leftovers "$R2")"
echo PASS
