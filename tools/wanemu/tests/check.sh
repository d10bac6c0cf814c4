#!/bin/bash
# Input checking without root: `wanemu check` shows what `up` would build; bad topologies and
# options are rejected with a message naming the problem (and the file:line).
set -euo pipefail
WANEMU=${1:?}
EXAMPLES=${3:?}
TMP=$(mktemp -d /tmp/wanemu-check.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for f in "$EXAMPLES"/*.topo; do
    "$WANEMU" check "$f" >/dev/null || fail "example $f does not parse"
done
out=$("$WANEMU" check --clusters 3 --hosts 2 --private 1 --delay 7ms --loss 0.1% --queue 100p)
grep -q "^c2h1 .*compute .*(private)" <<<"$out" ||
    fail "quick form: c2 should be private"$'\n'"$out"
grep -q "link c0-c2: delay=7ms rate=200mbit" <<<"$out" || fail "quick form: mesh link"$'\n'"$out"

# expect_error PATTERN ARGS...: wanemu check ARGS fails and says PATTERN.
expect_error() {
    local pat=$1; shift
    local rc=0 err
    err=$("$WANEMU" check "$@" 2>&1 >/dev/null) || rc=$?
    [[ $rc != 0 ]] || fail "check $* should fail"
    grep -q -- "$pat" <<<"$err" || fail "check $*: expected '$pat' in: $err"
    echo "ok: $err"
}
topo() { printf '%s\n' "$@" >"$TMP/t.topo"; echo "$TMP/t.topo"; }
expect_error "t.topo:2: unknown cluster 'b'" "$(topo 'cluster a' 'link a b delay=1ms')"
expect_error "t.topo:3: bad delay 'ten'" "$(topo 'cluster a' 'cluster b' 'link a b delay=ten')"
expect_error "bad rate '200mbps'" "$(topo 'cluster a' 'cluster b' 'link a b rate=200mbps')"
expect_error "bad loss '150%'" "$(topo 'cluster a' 'cluster b' 'link a b loss=150%')"
expect_error "t.topo: bad host name 'n_1'" "$(topo 'cluster a hosts=n_1')"
expect_error "host name 'x' used twice" "$(topo 'cluster a hosts=x' 'cluster b hosts=x')"
expect_error "already linked" "$(topo 'cluster a' 'cluster b' 'link a b' 'link b a')"
expect_error "unknown directive 'clutser'" "$(topo 'clutser a')"
expect_error "unknown link parameter 'dealy'" "$(topo 'cluster a' 'cluster b' 'link a b dealy=1ms')"
expect_error "no clusters" "$(topo '# empty')"
expect_error "either a topology file or the quick form" "$(topo 'cluster a')" --clusters 2
expect_error "bad --clusters '0'" --clusters 0
expect_error "--private 3: only 2 clusters" --clusters 2 --private 3
expect_error "bad --mtu" --clusters 2 --mtu 100
expect_error "needs a topology file or --clusters" --rate 1gbit
echo PASS
