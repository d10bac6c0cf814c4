# Shared helpers for the wanemu tests (sourced). Usage in a test:
#   source lib.sh "$@"        # args: WANEMU WANEMU_BULK EXAMPLES_DIR
#   wan_up --clusters 2 ...   # a run named after the test, torn down on any exit
# Every run is started with --watch-pid $$, so even a SIGKILLed test leaves nothing behind.
set -euo pipefail

WANEMU=${1:?path to wanemu}
BULK=${2:?path to wanemu-bulk}
EXAMPLES=${3:-}
TEST_NAME=$(basename "$0" .sh)

if [[ $(id -u) != 0 ]]; then
    echo "SKIP: wanemu tests need root (network namespaces)"
    exit 77
fi

RUN="t-${TEST_NAME//_/-}-$$"
RUN=${RUN:0:24}
export WANEMU_RUN=$RUN
TMP=$(mktemp -d /tmp/wanemu-test.XXXXXX)
EXTRA_RUNS=()

wan_cleanup() {
    local rc=$?
    set +e
    for r in "$RUN" "${EXTRA_RUNS[@]}"; do
        if [[ -d /run/wanemu/$r ]] || ip netns list | grep -q "^wn\.$r\."; then
            "$WANEMU" down --name "$r" >/dev/null 2>&1
        fi
    done
    if [[ $rc != 0 && -n "${LAST_LOG:-}" && -f "$LAST_LOG" ]]; then
        echo "--- controller log ---"; cat "$LAST_LOG"
    fi
    rm -rf "$TMP"
    exit $rc
}
trap wan_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "== $*"; }

# wan_up [up options...]: brings up $RUN (log kept in $TMP so a failure can show it).
wan_up() {
    LAST_LOG=$TMP/$RUN.log
    "$WANEMU" up --name "$RUN" --watch-pid $$ --log "$LAST_LOG" -q "$@"
}

wx() { "$WANEMU" exec "$@"; }

# kv FIELD LINE: value of FIELD=... in a key=value line.
kv() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

# stats_line FROM TO: the `stats --kv` line of one direction.
stats_line() { "$WANEMU" stats --kv | grep " from=$1 to=$2 "; }

# quiet_stats_line FROM TO: the direction's stats line once the link is quiet (two snapshots
# 0.1 s apart agree on delivered packets; at most 5 s). Packets of a transfer (its last ACKs and
# FIN) may still be on the link when the sender returns; comparing the monitor CSV with the
# counters needs both taken at the same quiet moment. Asking for stats also flushes the monitor.
quiet_stats_line() {
    local line again _
    line=$(stats_line "$1" "$2")
    for _ in $(seq 50); do
        sleep 0.1
        again=$(stats_line "$1" "$2")
        [[ $(kv delivered "$again") == "$(kv delivered "$line")" ]] && break
        line=$again
    done
    echo "$again"
}

# expect_reach ok|fail FROM TO_ADDR: whether host FROM can open a TCP connection to TO_ADDR
# (a server started with start_server), and fail the test if that is not what is expected.
expect_reach() {
    local want=$1 from=$2 to=$3 out rc=0
    out=$(wx "$from" -- "$BULK" probe "$to" --timeout 2s) || rc=$?
    printf "%-5s %-6s -> %-16s %s\n" "$want" "$from" "$to" "$out"
    if [[ $want == ok ]]; then
        [[ $rc == 0 ]] || fail "$from should reach $to"
    else
        [[ $rc != 0 ]] || fail "$from should not reach $to"
    fi
}

# wait_for CMD...: retries CMD for up to 10 s (start-up synchronisation, not pass/fail timing).
wait_for() {
    local i
    for i in $(seq 1 200); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.05
    done
    return 1
}

# start_server HOST: wanemu-bulk server on HOST (port 5201), killed with the run.
start_server() {
    "$WANEMU" exec "$1" -- "$BULK" server >"$TMP/server-$1.log" 2>&1 &
    wait_for grep -q listening "$TMP/server-$1.log" || fail "server on $1 did not start"
}

# in_range VALUE LO HI: LO <= VALUE <= HI (floating point).
in_range() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
