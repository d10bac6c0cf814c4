#!/bin/bash
# `wanemu COMMAND --help`, `-h` and `wanemu help COMMAND` print that command's usage on stdout
# and exit 0, for every command (no root needed; nothing is built or looked up).
set -euo pipefail
WANEMU=${1:?}
fail() { echo "FAIL: $*" >&2; exit 1; }

commands="up check hosts exec set stats down list plot help"
for c in $commands; do
    for form in "$c --help" "$c -h" "help $c"; do
        rc=0
        # shellcheck disable=SC2086
        out=$(env -u WANEMU_RUN "$WANEMU" $form 2>&1) || rc=$?
        [[ $rc == 0 ]] || fail "wanemu $form exited $rc: $out"
        grep -q "^usage: wanemu $c\b" <<<"$out" || fail "wanemu $form: no usage of $c in: $out"
    done
    echo "ok: $c"
done
# Also after other options, and before exec's HOST (after it, --help belongs to the command).
"$WANEMU" --name x up --clusters 2 --help | grep -q "^usage: wanemu up" || fail "up ... --help"
"$WANEMU" exec -n --help | grep -q "^usage: wanemu exec" || fail "exec -n --help"
rc=0
out=$(env -u WANEMU_RUN WANEMU_STATE_DIR=/nonexistent "$WANEMU" exec nosuchhost -- ls --help 2>&1) ||
    rc=$?
[[ $rc == 255 ]] && ! grep -q "^usage:" <<<"$out" ||
    fail "exec HOST -- CMD --help must run CMD (here: fail to find the run), got $rc: $out"
"$WANEMU" --help | grep -q "^usage: wanemu COMMAND" || fail "wanemu --help"
rc=0
"$WANEMU" help nosuchcommand >/dev/null 2>&1 || rc=$?
[[ $rc != 0 ]] || fail "help of an unknown command should fail"
echo PASS
