# Shared by the wanmpi-tune tests (sourced): $TUNE is the binary (first argument).
set -euo pipefail
TUNE=${1:?path to wanmpi-tune}
TMP=$(mktemp -d /tmp/wanmpi-tune-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# run ARGS...: runs wanmpi-tune; sets RC, OUT (stdout) and ERR (stderr).
run() {
    RC=0
    "$TUNE" "$@" >"$TMP/out" 2>"$TMP/err" || RC=$?
    OUT=$(cat "$TMP/out")
    ERR=$(cat "$TMP/err")
}

# check_lines: every line of $OUT is a finding (or, with --apply, a change), warn and fail lines
# carry a fix and ok lines none, and the exit status says whether a fail line was printed.
check_lines() {
    local line
    [[ -n $OUT ]] || fail "no output (rc $RC, stderr: $ERR)"
    while IFS= read -r line; do
        [[ $line =~ ^(applied|not\ applied):\ . ]] && continue
        # LEVEL NAME: DETAIL, where NAME ends at the first ": " (an IPv6 route has colons)
        [[ $line =~ ^(ok\ \ |info|warn|fail)\ [^\ ] && ${line:5} == *": "?* ]] ||
            fail "not a finding: $line"
        case $line in
            warn*|fail*) [[ $line == *"; fix: "?* ]] || fail "no fix: $line" ;;
            ok*) [[ $line != *"; fix: "* ]] || fail "an ok line with a fix: $line" ;;
        esac
    done <<<"$OUT"
    if grep -q '^fail ' <<<"$OUT"; then
        [[ $RC == 1 ]] || fail "fail lines but exit status $RC"
    else
        [[ $RC == 0 ]] || fail "no fail line but exit status $RC: $ERR"
    fi
}

# line NAME: the finding line of NAME (exactly one).
line() {
    local l
    l=$(grep -E "^(ok  |info|warn|fail) $1: " <<<"$OUT" || true)
    [[ $(grep -c . <<<"$l") == 1 ]] || fail "expected one line for $1, got: ${l:-none}"
    echo "$l"
}
