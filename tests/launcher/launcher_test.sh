#!/bin/bash
# Launcher tests (ctest label "mp"): one case per ctest entry, "launcher_test.sh CASE".
# Environment (set by CMakeLists.txt): MPIRUN, PMI_CHECK, FAKE_AGENT.
#
# Every rank started here carries a unique --marker=... argument; "nothing survives" means no
# live (non-zombie) process with that marker in its command line. Ranks write their pid to
# $TMP/pids/pid.<rank> after the first PMI fence, so a test knows when the job is up. On exit the
# test kills (by pid, after checking the marker) anything of its own that is still there.
# Exit 0: pass, 77: skipped (tool not installed), anything else: fail (with mpirun's output).
set -u
CASE=${1:?usage: launcher_test.sh CASE}
: "${MPIRUN:?}" "${PMI_CHECK:?}" "${FAKE_AGENT:?}"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/wanmpi-launcher.XXXXXX")
NONCE="${CASE}_$$_${RANDOM}"
MARK="wanmpi_lt_$NONCE"
MARK_RE="--marker=wanmpi_lt[_]$NONCE"  # matches the marker but not grep's own command line
PIDS=$TMP/pids
mkdir -p "$PIDS"
RC=0
ELAPSED_MS=0

survivors() {
    local f d state
    for f in $(grep -lsa -- "$MARK_RE" /proc/[0-9]*/cmdline 2>/dev/null); do
        d=${f%/cmdline}
        state=$(sed 's/^.*) //' "$d/stat" 2>/dev/null | cut -d' ' -f1)
        [ -n "$state" ] && [ "$state" != Z ] && echo "${d#/proc/}"
    done
}

cleanup() {
    local p
    for p in $(survivors); do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
    echo "FAIL [$CASE]: $*"
    echo "--- mpirun exit code: $RC, ${ELAPSED_MS} ms"
    echo "--- stdout:"
    cat "$TMP/out" 2>/dev/null
    echo "--- stderr:"
    cat "$TMP/err" 2>/dev/null
    exit 1
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run [mpirun args...]: mpirun with a safety net (a hung mpirun gets SIGTERM after 30 s, which it
# must also survive cleanly), stdin from /dev/null unless STDIN_FILE is set.
run() {
    local t0
    t0=$(now_ms)
    timeout -k 5 30 "$MPIRUN" "$@" >"$TMP/out" 2>"$TMP/err" <"${STDIN_FILE:-/dev/null}"
    RC=$?
    ELAPSED_MS=$(($(now_ms) - t0))
    echo "mpirun $* -> exit $RC in ${ELAPSED_MS} ms"
}

expect_rc() { [ "$RC" -eq "$1" ] || fail "expected exit code $1"; }
expect_err() { grep -qE -- "$1" "$TMP/err" || fail "stderr lacks /$1/"; }
expect_out() { grep -qE -- "$1" "$TMP/out" || fail "stdout lacks /$1/"; }
expect_no_survivors() {
    local s
    s=$(survivors)
    [ -z "$s" ] || fail "processes survived: $s ($(ps -o pid,stat,cmd -p "$(echo $s | tr ' ' ,)" 2>/dev/null))"
}
# The job must come down quickly after a failure (the bound is loose on purpose: mpirun kills
# within 2 s by design; this catches a job that hangs until a timeout).
expect_fast() { [ "$ELAPSED_MS" -lt 5000 ] || fail "took ${ELAPSED_MS} ms"; }
pid_of_rank() { cat "$PIDS/pid.$1" 2>/dev/null; }

# wait_pids N: until N ranks have written their pid files (10 s at most).
wait_pids() {
    local i
    for i in $(seq 1 500); do
        [ "$(ls "$PIDS" | wc -l)" -ge "$1" ] && return 0
        sleep 0.02
    done
    fail "only $(ls "$PIDS" | wc -l) of $1 ranks came up"
}
# wait_gone: until no marked process is left (5 s at most); for cases where mpirun itself was
# SIGKILLed and the ranks must notice on their own.
wait_gone() {
    local i
    for i in $(seq 1 250); do
        [ -z "$(survivors)" ] && return 0
        sleep 0.02
    done
    expect_no_survivors
}

# start_bg [mpirun args...]: mpirun in the background, its pid in BG.
start_bg() {
    "$MPIRUN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null &
    BG=$!
}

HOSTS2="--host nodeA:2,nodeB:2 --launcher-exec $FAKE_AGENT"

case "$CASE" in
basic)
    run -n 8 "$PMI_CHECK" --marker="$MARK"
    expect_rc 0
    expect_out "^pmi_check: 8 ranks, kvsname kvs_[0-9]+_[0-9a-f]+"
    expect_out "^ No Errors$"
    ;;
kill_signal)
    run -n 4 "$PMI_CHECK" kill 2 9 "$PIDS" --marker="$MARK"
    expect_rc 137
    expect_err "rank 2 \\(pid $(pid_of_rank 2) on host [^)]+\\) killed by signal 9 \\(Killed\\)"
    expect_no_survivors
    expect_fast
    ;;
kill_segv)
    run -n 3 "$PMI_CHECK" kill 0 11 "$PIDS" --marker="$MARK"
    expect_rc 139
    expect_err "rank 0 \\(pid [0-9]+ on host [^)]+\\) killed by signal 11"
    expect_no_survivors
    expect_fast
    ;;
exit_code)
    run -n 4 "$PMI_CHECK" exit 1 3 "$PIDS" --marker="$MARK"
    expect_rc 3
    expect_err "rank 1 \\(pid $(pid_of_rank 1) on host [^)]+\\) exited with code 3"
    expect_no_survivors
    expect_fast
    ;;
abort)
    run -n 4 "$PMI_CHECK" abort 3 5 "$PIDS" --marker="$MARK"
    expect_rc 5
    expect_err "rank 3 \\(pid [0-9]+ on host [^)]+\\) called MPI_Abort with error code 5: pmi_check abort test, rank 3"
    expect_no_survivors
    expect_fast
    ;;
malformed_pmi)
    run -n 3 "$PMI_CHECK" malformed 1 "$PIDS" --marker="$MARK"
    expect_rc 1
    expect_err "rank 1 \\(pid [0-9]+ on host [^)]+\\) sent a malformed PMI command.*this is not PMI"
    expect_no_survivors
    expect_fast
    ;;
pmi_flood)
    run -n 2 "$PMI_CHECK" flood 1 "$PIDS" --marker="$MARK"
    expect_rc 1
    expect_err "rank 1 \\(pid [0-9]+ on host [^)]+\\) sent a PMI line longer than 65536 bytes"
    expect_no_survivors
    run $HOSTS2 "$PMI_CHECK" flood 2 "$PIDS" --marker="$MARK"
    expect_rc 1
    expect_err "rank 2 \\(pid [0-9]+ on host nodeB\\) sent a .*PMI line longer than 65536 bytes"
    expect_no_survivors
    ;;
exit_before_pmi)
    # Rank 1 exits 0 without ever talking PMI while the others wait for it in a barrier.
    run -n 3 "$PMI_CHECK" noinit 1 --marker="$MARK"
    [ "$RC" -ne 0 ] || fail "expected a failure"
    expect_err "rank 1 .*exited with code 0 without joining the PMI barrier"
    expect_no_survivors
    expect_fast
    ;;
disable_auto_cleanup)
    run --disable-auto-cleanup -n 3 "$PMI_CHECK" peerfail 1 --marker="$MARK"
    expect_rc 3
    expect_err "rank 1 .*exited with code 3"
    [ "$(grep -c 'fence failed as expected' "$TMP/out")" -eq 2 ] || fail "survivors did not finish"
    expect_no_survivors
    ;;
sigint | sigterm)
    SIG=INT
    CODE=130
    [ "$CASE" = sigterm ] && SIG=TERM && CODE=143
    start_bg -n 4 "$PMI_CHECK" hang "$PIDS" --marker="$MARK"
    wait_pids 4
    kill -$SIG $BG
    wait $BG
    RC=$?
    expect_rc $CODE
    expect_err "received signal"
    expect_no_survivors
    ;;
sigkill_mpirun)
    start_bg -n 4 "$PMI_CHECK" hang "$PIDS" --marker="$MARK"
    wait_pids 4
    kill -KILL $BG
    wait $BG
    wait_gone
    ;;
timeout)
    run --timeout 1 -n 3 "$PMI_CHECK" hang "$PIDS" --marker="$MARK"
    expect_rc 124
    expect_err "timeout: the job did not finish within 1 s"
    expect_no_survivors
    expect_fast
    ;;
timeout_env)
    MPIEXEC_TIMEOUT=1 run -n 2 "$PMI_CHECK" hang "$PIDS" --marker="$MARK"
    expect_rc 124
    expect_no_survivors
    ;;
stdin)
    printf 'line one\nline two\n' >"$TMP/in"
    STDIN_FILE="$TMP/in" run -n 3 "$PMI_CHECK" stdin --marker="$MARK"
    expect_rc 0
    expect_out "^rank 0 read 18 bytes from stdin$"
    expect_out "^rank 1 read 0 bytes from stdin$"
    expect_out "^rank 2 read 0 bytes from stdin$"
    expect_out "^line two$"
    # Through a pipe, and with rank 0 on a remote host behind a proxy.
    printf 'piped\n' | "$MPIRUN" $HOSTS2 -n 3 "$PMI_CHECK" stdin --marker="$MARK" >"$TMP/out" 2>"$TMP/err"
    RC=$?
    expect_rc 0
    expect_out "^rank 0 read 6 bytes from stdin$"
    expect_out "^piped$"
    expect_out "^rank 2 read 0 bytes from stdin$"
    ;;
tag_output)
    run -n 3 --tag-output "$PMI_CHECK" lines 3000 --marker="$MARK"
    expect_rc 0
    [ "$(wc -l <"$TMP/out")" -eq 9000 ] || fail "expected 9000 lines"
    bad=$(grep -cvE '^\[([0-9])\] rank \1 line [0-9]+ [a-z]{150} end$' "$TMP/out")
    [ "$bad" -eq 0 ] || fail "$bad lines are mangled or wrongly tagged"
    ;;
lines_whole)
    run -n 4 "$PMI_CHECK" lines 5000 --marker="$MARK"
    expect_rc 0
    [ "$(wc -l <"$TMP/out")" -eq 20000 ] || fail "expected 20000 lines"
    bad=$(grep -cvE '^rank [0-9] line [0-9]+ [a-z]{150} end$' "$TMP/out")
    [ "$bad" -eq 0 ] || fail "$bad lines are interleaved"
    ;;
rank_sessions)
    # Default: the ranks share mpirun's session; WANMPI_MPIRUN_RANK_SESSIONS=1 (here through -x)
    # gives each its own (field 6 of /proc/PID/stat is the session id; a session leader's is
    # its pid).
    probe='set -- $(cat /proc/$$/stat); if [ "$6" = "$$" ]; then echo own; else echo shared; fi'
    run -n 2 sh -c "$probe"
    expect_rc 0
    [ "$(grep -c '^shared$' "$TMP/out")" -eq 2 ] || fail "expected both ranks in mpirun's session"
    run -n 2 -x WANMPI_MPIRUN_RANK_SESSIONS=1 sh -c "$probe"
    expect_rc 0
    [ "$(grep -c '^own$' "$TMP/out")" -eq 2 ] || fail "expected a session per rank"
    ;;
env_x)
    export LT_FWD=forwarded LT_NOT=secret WANMPI_LT_AUTO=auto1 IMPI_LT_AUTO=auto2
    run $HOSTS2 -n 4 -x LT_FWD -x LT_SET=given -genv LT_SP "a b" "$PMI_CHECK" env LT_FWD LT_SET LT_SP \
        WANMPI_LT_AUTO IMPI_LT_AUTO LT_NOT --marker="$MARK"
    expect_rc 0
    for r in 0 3; do
        expect_out "^rank $r: LT_FWD=forwarded$"
        expect_out "^rank $r: LT_SET=given$"
        expect_out "^rank $r: LT_SP=a b$"
        expect_out "^rank $r: WANMPI_LT_AUTO=auto1$"
        expect_out "^rank $r: IMPI_LT_AUTO=auto2$"
        expect_out "^rank $r: LT_NOT unset$"  # the fake agent's clean environment
    done
    # Local ranks inherit everything; -x NAME=value overrides.
    run -n 1 -x LT_FWD=over "$PMI_CHECK" env LT_FWD LT_NOT --marker="$MARK"
    expect_rc 0
    expect_out "^rank 0: LT_FWD=over$"
    expect_out "^rank 0: LT_NOT=secret$"
    ;;
hosts_proxy)
    run $HOSTS2 "$PMI_CHECK" where --marker="$MARK"
    expect_rc 0
    expect_out "^rank 0 of 4 on nodeA local 0/2$"
    expect_out "^rank 1 of 4 on nodeA local 1/2$"
    expect_out "^rank 2 of 4 on nodeB local 0/2$"
    expect_out "^rank 3 of 4 on nodeB local 1/2$"
    expect_err "^fake_agent: welcome to nodeA$"  # login chatter goes to stderr, whole
    run --host localhost:1,nodeA:2,nodeB:2 --launcher-exec "$FAKE_AGENT" -n 7 "$PMI_CHECK" --marker="$MARK"
    expect_rc 0
    expect_out "^pmi_check: 7 ranks"
    expect_out "^ No Errors$"
    ;;
hostfile)
    printf '# test hosts\nlocalhost slots=1\nnodeA:1\nnodeB slots=2 max_slots=4\n' >"$TMP/hosts"
    run --hostfile "$TMP/hosts" --launcher-exec "$FAKE_AGENT" "$PMI_CHECK" where --marker="$MARK"
    expect_rc 0
    expect_out "^rank 0 of 4 on - local 0/1$"
    expect_out "^rank 1 of 4 on nodeA local 0/1$"
    expect_out "^rank 3 of 4 on nodeB local 1/2$"
    printf 'nodeA cpus=2\n' >"$TMP/bad"
    run --hostfile "$TMP/bad" "$PMI_CHECK"
    expect_rc 2
    expect_err "bad:1: unknown host attribute 'cpus=2'"
    ;;
remote_kill)
    run $HOSTS2 "$PMI_CHECK" kill 3 9 "$PIDS" --marker="$MARK"
    expect_rc 137
    expect_err "rank 3 \\(pid $(pid_of_rank 3) on host nodeB\\) killed by signal 9"
    expect_no_survivors
    expect_fast
    run $HOSTS2 "$PMI_CHECK" abort 1 6 "$PIDS" --marker="$MARK"
    expect_rc 6
    expect_err "rank 1 \\(pid [0-9]+ on host nodeA\\) called MPI_Abort with error code 6"
    expect_no_survivors
    ;;
remote_sigkill_mpirun)
    start_bg $HOSTS2 "$PMI_CHECK" hang "$PIDS" --marker="$MARK"
    wait_pids 4
    kill -KILL $BG
    wait $BG
    wait_gone
    ;;
remote_sigterm)
    start_bg $HOSTS2 "$PMI_CHECK" hang "$PIDS" --marker="$MARK"
    wait_pids 4
    kill -TERM $BG
    wait $BG
    RC=$?
    expect_rc 143
    expect_no_survivors
    ;;
agent_failure)
    run --host nodeA:2 --launcher-exec false "$PMI_CHECK" --marker="$MARK"
    [ "$RC" -ne 0 ] || fail "expected a failure"
    expect_err "launcher agent for host nodeA .*exited with code 1 before wanmpi-proxy started"
    WANMPI_MPIRUN_PROXY=/nonexistent/wanmpi-proxy run $HOSTS2 "$PMI_CHECK" --marker="$MARK"
    [ "$RC" -ne 0 ] || fail "expected a failure"
    expect_err "exited with code 127 before wanmpi-proxy started"
    expect_no_survivors
    ;;
no_program)
    run -n 2 "$TMP/does-not-exist"
    expect_rc 127
    expect_err "cannot execute '.*does-not-exist': No such file or directory"
    run $HOSTS2 "$TMP/does-not-exist"
    expect_rc 127
    expect_err "host node[AB]: cannot execute .*: No such file or directory"
    ;;
usage)
    run -n
    expect_rc 2
    expect_err "option '-n' needs an argument"
    run --frobnicate "$PMI_CHECK"
    expect_rc 2
    expect_err "unknown option '--frobnicate'"
    run -n 4
    expect_rc 2
    expect_err "no program to run"
    run --help
    expect_rc 0
    expect_out "^Usage: mpirun "
    run --version
    expect_rc 0
    expect_out "\\(wanmpi\\)"
    "$(dirname "$MPIRUN")/mpiexec" --bogus >/dev/null 2>"$TMP/err"
    RC=$?
    expect_rc 2
    expect_err "^mpiexec: error: unknown option"
    ;;
hydra | hydra_pmi_port | hydra_abort)
    HYDRA=$(command -v mpiexec.hydra) || { echo "mpiexec.hydra not installed: skipped"; exit 77; }
    if [ "$CASE" = hydra ]; then
        MPIRUN=$HYDRA run -n 4 "$PMI_CHECK" --marker="$MARK"
        expect_rc 0
        expect_out "^ No Errors$"
    elif [ "$CASE" = hydra_pmi_port ]; then
        MPIRUN=$HYDRA run -pmi-port -n 3 "$PMI_CHECK" --marker="$MARK"
        expect_rc 0
        expect_out "^ No Errors$"
    else
        MPIRUN=$HYDRA run -n 3 "$PMI_CHECK" abort 1 5 "$PIDS" --marker="$MARK"
        expect_rc 5
        expect_no_survivors
    fi
    ;;
mpich_program)
    # The other direction: a program built with MPICH (its own PMI-1 client) under our mpirun.
    MPICC=$(command -v mpicc.mpich) || { echo "mpicc.mpich not installed: skipped"; exit 77; }
    cat >"$TMP/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0, one = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size) printf("rank %d: bad sum %d of %d\n", rank, sum, size);
    else if (rank == 0) printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
EOF
    "$MPICC" -o "$TMP/hello" "$TMP/hello.c" || fail "mpicc.mpich failed"
    run -n 3 "$TMP/hello" --marker="$MARK"
    expect_rc 0
    expect_out "^ No Errors$"
    ;;
*)
    echo "unknown case '$CASE'"
    exit 2
    ;;
esac
echo "PASS [$CASE]"
exit 0
