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

# Front-ends: the first F hosts of each cluster; in a private cluster only they are dual-homed.
out=$("$WANEMU" check --clusters 2 --hosts 3 --private 1 --frontends 2)
grep -q "^c1h1 .*frontend .*(public), .*(private)" <<<"$out" || fail "--frontends 2: c1h1"$'\n'"$out"
grep -q "^c1h2 .*compute .* [0-9.]* (private)$" <<<"$out" || fail "--frontends 2: c1h2"$'\n'"$out"
grep -q "^c0h1 .*frontend " <<<"$out" || fail "--frontends 2: c0h1 (public cluster)"$'\n'"$out"
out=$("$WANEMU" check "$(topo 'cluster a hosts=3 private frontends=3' 'cluster b')")
[[ $(grep -c " frontend .*(public), .*(private)" <<<"$out") == 3 ]] ||
    fail "frontends=3: all of a's hosts are dual-homed"$'\n'"$out"
expect_error "frontends 4: must be 1..3 (--hosts)" --clusters 2 --hosts 3 --frontends 4
expect_error "frontends 0: must be 1..3" --clusters 2 --hosts 3 --frontends 0
expect_error "cluster a: frontends=3 must be 1..2" "$(topo 'cluster a hosts=2 private frontends=3')"
expect_error "bad frontends '0'" "$(topo 'cluster a hosts=2 frontends=0')"

# Queues: a packet count alone replaces the auto byte limit; both limits together apply both;
# a queue smaller than one packet is refused.
out=$("$WANEMU" check --clusters 2 --queue 20p)
grep -q "link c0-c1: .* queue=20p loss" <<<"$out" || fail "--queue 20p: packets only"$'\n'"$out"
out=$("$WANEMU" check --clusters 2 --queue 64KB+20p)
grep -q "queue=64KB,20p" <<<"$out" || fail "--queue 64KB+20p: both"$'\n'"$out"
out=$("$WANEMU" check --clusters 2 --queue 20p,64KB)
grep -q "queue=64KB,20p" <<<"$out" || fail "--queue 20p,64KB: both"$'\n'"$out"
out=$("$WANEMU" check --clusters 2 --queue auto+20p)
grep -q "queue=.*(auto),20p" <<<"$out" || fail "--queue auto+20p"$'\n'"$out"
out=$("$WANEMU" check --clusters 2 --queue-pkts 20)
grep -q "queue=.*(auto),20p" <<<"$out" || fail "--queue-pkts keeps the byte limit"$'\n'"$out"
out=$("$WANEMU" check "$(topo 'cluster a' 'cluster b' 'link a b queue=30p')")
grep -q "queue=30p loss" <<<"$out" || fail "queue=30p in a file"$'\n'"$out"
expect_error "a queue must hold at least one packet" --clusters 2 --queue 0p
expect_error "a queue must hold at least one packet" --clusters 2 --queue 0KB
expect_error "queue 1KB (1024 bytes) is smaller than one packet (MTU 1500 bytes)" \
    --clusters 2 --queue 1KB
expect_error "queue 8KB (8192 bytes) is smaller than one packet (MTU 9000 bytes)" \
    --clusters 2 --queue 8KB --mtu 9000
expect_error "link a>b: queue 1000B" "$(topo 'cluster a' 'cluster b' 'link a>b queue=1000')"
expect_error "the queue needs a limit" --clusters 2 --queue 20p --queue-pkts 0
echo PASS
