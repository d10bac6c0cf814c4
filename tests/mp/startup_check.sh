#!/bin/bash
# startup_check.sh RUNS LOAD EXPECT_RC MUST_RE MUST_NOT_RE MPIRUN_ARGS...
# Runs `$MPIRUN MPIRUN_ARGS...` RUNS times and checks each run: exit status EXPECT_RC, the output
# (stdout + stderr) matches MUST_RE (grep -E) and never matches MUST_NOT_RE; EXPECT_RC may list
# alternatives, "137|1" (which failure mpirun reports first can be a race). With LOAD > 0, that
# many busy loops run alongside (a loaded machine is where start-up races showed up); they are
# killed by their PIDs on exit. For checks that wanmpi_add_mpi_test cannot express (it has no
# "must not print"), issue 16 point 2. Exit 0 pass, 1 fail (with the offending run's output).
set -u
RUNS=${1:?usage}; LOAD=${2:?usage}; EXPECT_RC=${3:?usage}; MUST_RE=${4:?usage}
MUST_NOT_RE=${5:?usage}
shift 5
: "${MPIRUN:?MPIRUN must name the mpirun to test}"

OUT=$(mktemp "${TMPDIR:-/tmp}/wanmpi-startup.XXXXXX")
LOADERS=()
cleanup() {
    local p
    for p in "${LOADERS[@]}"; do kill "$p" 2>/dev/null; done
    rm -f "$OUT"
}
trap cleanup EXIT
for ((i = 0; i < LOAD; ++i)); do
    (while :; do :; done) &
    LOADERS+=($!)
done

for ((run = 1; run <= RUNS; ++run)); do
    timeout -k 5 60 "$MPIRUN" "$@" >"$OUT" 2>&1 </dev/null
    rc=$?
    why=""
    if [[ "|$EXPECT_RC|" != *"|$rc|"* ]]; then
        why="exit status $rc, expected $EXPECT_RC"
    elif ! grep -qE -- "$MUST_RE" "$OUT"; then
        why="output lacks /$MUST_RE/"
    elif grep -qE -- "$MUST_NOT_RE" "$OUT"; then
        why="output matches /$MUST_NOT_RE/: $(grep -E -- "$MUST_NOT_RE" "$OUT" | head -3)"
    fi
    if [ -n "$why" ]; then
        echo "FAIL in run $run of $RUNS: $why"
        echo "--- output of: $MPIRUN $*"
        cat "$OUT"
        exit 1
    fi
done
echo "--- last run's output:"
cat "$OUT"
echo "PASS: $RUNS runs (load $LOAD), each exit $EXPECT_RC, /$MUST_RE/, never /$MUST_NOT_RE/"
