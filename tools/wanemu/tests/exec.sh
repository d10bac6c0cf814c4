#!/bin/bash
# `wanemu exec` as a remote-exec agent: hostname, both argument forms, stdin/stdout/stderr,
# environment, exit status, signals (forwarded, and death of the agent kills the command),
# nested use from inside a host, and its own errors (255, like ssh).
source "$(dirname "$0")/lib.sh" "$@"

wan_up --clusters 2 --hosts 2 --delay 1ms --rate 1gbit

[[ $(wx c0h1 -- hostname) == c0h1 ]] || fail "hostname is not c0h1"
[[ $(wx c1h0 hostname) == c1h0 ]] || fail "ssh form: hostname is not c1h0"
[[ $(wx c0h0 'echo $((6 * 7)); echo "$WANEMU_HOST"') == $'42\nc0h0' ]] ||
    fail "ssh form runs a shell"
[[ $(wx c0h0 -- printf '%s|' 'a b' 'c') == 'a b|c|' ]] || fail "-- form keeps argv"
[[ $(echo "from stdin" | wx c0h0 -- cat) == "from stdin" ]] || fail "stdin not forwarded"
[[ $(echo "from stdin" | wx -n c0h0 -- cat) == "" ]] || fail "-n does not close stdin"
[[ $(wx c0h0 -- sh -c 'echo err >&2' 2>&1 >/dev/null) == err ]] || fail "stderr not forwarded"
[[ $(FOO=bar wx c0h0 -- sh -c 'echo $FOO') == bar ]] || fail "environment not passed"
[[ $(cd /tmp && wx c0h0 -- pwd) == /tmp ]] || fail "cwd not kept"
rc=0; wx c0h0 -- sh -c 'exit 7' || rc=$?
[[ $rc == 7 ]] || fail "exit status 7 came back as $rc"
rc=0; wx c0h0 'exit 3' || rc=$?
[[ $rc == 3 ]] || fail "ssh form: exit status 3 came back as $rc"
rc=0; wx nosuchhost -- true 2>/dev/null || rc=$?
[[ $rc == 255 ]] || fail "unknown host should give 255, got $rc"
rc=0; wx c0h0 -- /nonexistent 2>/dev/null || rc=$?
[[ $rc == 127 ]] || fail "missing command should give 127, got $rc"
[[ $(wx -x -o BatchMode=yes root@c0h0 hostname) == c0h0 ]] || fail "ssh options/user@ not accepted"
[[ $(wx c0h0 -- getent hosts c1h1 | awk '{print $2}') == c1h1 ]] || fail "host names do not resolve"
[[ $(wx c0h0 -- "$WANEMU" exec c1h1 -- hostname) == c1h1 ]] || fail "nested exec"
addr=$("$WANEMU" hosts --kv | awk '/^host=c1h1 / { sub("public=", "", $5); print $5 }')
[[ $(wx "$addr" -- hostname) == c1h1 ]] || fail "exec by address $addr"

# SIGTERM to the agent reaches the command; the agent then dies of the same signal.
"$WANEMU" exec c0h0 -- sh -c 'echo $$ > '"$TMP"'/pid1; exec sleep 100' &
agent=$!
wait_for test -s "$TMP/pid1" || fail "command did not start"
kill -TERM $agent
rc=0; wait $agent || rc=$?
[[ $rc == 143 ]] || fail "SIGTERM: agent exit status $rc, expected 143"
! kill -0 "$(cat "$TMP/pid1")" 2>/dev/null || fail "command survived SIGTERM to the agent"

# SIGKILL of the agent kills the command too.
"$WANEMU" exec c0h0 -- sh -c 'echo $$ > '"$TMP"'/pid2; exec sleep 100' &
agent=$!
wait_for test -s "$TMP/pid2" || fail "command did not start"
kill -KILL $agent
wait $agent 2>/dev/null || true
wait_for sh -c "! kill -0 $(cat "$TMP/pid2")" || fail "command survived SIGKILL of the agent"

# The command runs in the host's namespace: its processes are what `down` kills.
ns_pids=$(ip netns pids "wn.$RUN.c0h0" | wc -l)
[[ $ns_pids == 0 ]] || fail "$ns_pids process(es) left in c0h0"
echo PASS
