#!/bin/bash
# Several front-ends (--frontends 2): in the private cluster c1, c1h0 and c1h1 are dual-homed
# (reachable from c0 on their public address and from c1's compute host on their private one),
# c1h2 is a compute host that cannot reach or be reached from c0. Each front-end has its own
# NIC limit (tbf on each interface): one flow out of a front-end is held to the NIC rate, and two
# front-ends together carry about twice that over the (faster) emulated link.
source "$(dirname "$0")/lib.sh" "$@"

NIC=40   # Mbit/s
wan_up --clusters 2 --hosts 3 --private 1 --frontends 2 --delay 2ms --rate 400mbit \
    --nic ${NIC}mbit
"$WANEMU" hosts
hosts=$("$WANEMU" hosts --kv)
h() { grep "^host=$1 " <<<"$hosts"; }
for fe in c0h0 c0h1 c1h0 c1h1; do
    [[ $(kv role "$(h $fe)") == frontend && $(kv public "$(h $fe)") != - ]] ||
        fail "$fe should be a front-end with a public address: $(h $fe)"
done
for fe in c1h0 c1h1; do
    [[ $(kv private "$(h $fe)") != - ]] || fail "$fe should have a private address too"
    [[ $(wx $fe -- tc qdisc show | grep -c "qdisc tbf") == 2 ]] ||
        fail "$fe: both of its interfaces should be NIC-limited"
done
cn=$(h c1h2)
[[ $(kv role "$cn") == compute && $(kv public "$cn") == - ]] ||
    fail "c1h2 should be a compute host with only a private address: $cn"
[[ $(kv role "$(h c0h2)") == compute ]] || fail "c0h2 should be a compute host"

for x in c0h0 c0h1 c1h1; do start_server "$x"; done
expect_reach ok   c0h0 c1h1                           # other cluster -> second front-end (public)
expect_reach ok   c1h1 c0h0                           # second front-end -> other cluster
expect_reach ok   c1h2 c1h1                           # compute host -> front-end (private address)
expect_reach fail c1h2 c0h0                           # compute host -> other cluster
expect_reach fail c0h0 "$(kv private "$(h c1h1)")"    # other cluster -> front-end's private address
[[ $(wx c1h2 -- getent hosts c1h1 | awk '{print $1}') == "$(kv private "$(h c1h1)")" ]] ||
    fail "inside c1, c1h1 should resolve to its private address"

note "one flow out of each front-end, at the same time (NIC ${NIC} Mbit/s, link 400 Mbit/s)"
before=$(stats_line c1 c0)
wx c1h0 -- "$BULK" send c0h0 -t 3 --warmup 1 --cc cubic >"$TMP/f0" &
p0=$!
wx c1h1 -- "$BULK" send c0h1 -t 3 --warmup 1 --cc cubic >"$TMP/f1" &
p1=$!
wait $p0 || fail "flow from c1h0 failed"
wait $p1 || fail "flow from c1h1 failed"
after=$(stats_line c1 c0)
cat "$TMP/f0" "$TMP/f1"
r0=$(kv steady_mbit "$(cat "$TMP/f0")"); r1=$(kv steady_mbit "$(cat "$TMP/f1")")
link=$(awk -v a="$(kv delivered_bytes "$before")" -v b="$(kv delivered_bytes "$after")" \
    'BEGIN { printf "%.1f", (b - a) * 8 / 3 / 1e6 }')
echo "front-ends: $r0 + $r1 Mbit/s; the link carried $link Mbit/s c1>c0 on average"
for r in "$r0" "$r1"; do
    in_range "$r" 0 $((NIC * 103 / 100)) || fail "a front-end sent $r Mbit/s, above its NIC"
done
in_range "$(awk -v a="$r0" -v b="$r1" 'BEGIN { print a + b }')" $((NIC * 3 / 2)) 1000 ||
    fail "two front-ends should carry more than 1.5 x the NIC rate together ($r0 + $r1)"
echo PASS
