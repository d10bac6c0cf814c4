#!/bin/bash
# --help prints the usage and exits 0; a bad command line prints a message on stderr, nothing on
# stdout, and exits 2; so do --apply without root and an unreadable /proc/sys.
source "$(dirname "$0")/lib.sh"

for h in --help -h; do
    run $h
    [[ $RC == 0 && $OUT == "usage: wanmpi-tune "* ]] || fail "$h: rc $RC: $OUT"
    for w in --rate --rtt --apply --apply-routes --only --quiet BDP "Exit status" fail: warn:; do
        grep -q -- "$w" <<<"$OUT" || fail "$h does not mention $w"
    done
done

bad=("--bogus" "--rate" "--rate fast" "--rate 0" "--rate 10mbps" "--rtt -5ms" "--rtt 0"
     "--rtt soon" "--only nosuch" "--only ," "extra" "-x")
for args in "${bad[@]}"; do
    # shellcheck disable=SC2086
    run $args
    [[ $RC == 2 ]] || fail "'$args': exit status $RC, want 2"
    [[ -z $OUT ]] || fail "'$args' printed on stdout: $OUT"
    [[ $ERR == "wanmpi-tune: "* ]] || fail "'$args': no message: $ERR"
done
run --only nosuch
[[ $ERR == *"names: "*net.ipv4.tcp_rmem* ]] || fail "--only nosuch does not list the names: $ERR"

# No /proc/sys to read (root only: a tmpfs over it in a private mount namespace): exit 2.
if [[ $(id -u) == 0 ]] && unshare -m true 2>/dev/null; then
    rc=0
    unshare -m sh -c 'mount -t tmpfs none /proc/sys && exec "$0"' "$TUNE" >"$TMP/out" 2>"$TMP/err" ||
        rc=$?
    [[ $rc == 2 ]] && grep -q "^wanmpi-tune: cannot read /proc/sys/" "$TMP/err" ||
        fail "without /proc/sys: rc $rc: $(cat "$TMP/out" "$TMP/err")"
fi

# --apply as an unprivileged user (nobody, when we are root).
as_user=()
if [[ $(id -u) == 0 ]]; then
    command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
for a in --apply --apply-routes; do
    rc=0
    "${as_user[@]}" "$TUNE" $a >"$TMP/out" 2>"$TMP/err" || rc=$?
    [[ $rc == 2 && ! -s $TMP/out ]] && grep -q "needs root" "$TMP/err" ||
        fail "$a unprivileged: rc $rc: $(cat "$TMP/out" "$TMP/err")"
done
echo PASS
