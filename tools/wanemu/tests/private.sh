#!/bin/bash
# Private cluster: its compute hosts cannot open a TCP connection to another cluster's hosts
# (nor be reached from there); its front-end, which has an address on both sides, can.
source "$(dirname "$0")/lib.sh" "$@"

wan_up --clusters 2 --hosts 2 --private 1 --delay 2ms --rate 200mbit
"$WANEMU" hosts
for h in c0h0 c1h0 c1h1; do start_server "$h"; done

hosts=$("$WANEMU" hosts --kv)
fe=$(grep "^host=c1h0 " <<<"$hosts")
cn=$(grep "^host=c1h1 " <<<"$hosts")
[[ $(kv role "$fe") == frontend && $(kv public "$fe") != - && $(kv private "$fe") != - ]] ||
    fail "front-end c1h0 should have a public and a private address: $fe"
[[ $(kv role "$cn") == compute && $(kv public "$cn") == - && $(kv private "$cn") != - ]] ||
    fail "compute host c1h1 should have only a private address: $cn"

expect_reach fail c1h1 c0h0                      # private compute -> other cluster
expect_reach ok   c1h0 c0h0                      # front-end -> other cluster
expect_reach ok   c0h0 c1h0                      # other cluster -> front-end (public address)
expect_reach fail c0h0 "$(kv private "$cn")"     # other cluster -> private address
expect_reach fail c0h0 "$(kv private "$fe")"     # other cluster -> front-end's private address
expect_reach ok   c1h1 c1h0                      # inside the private cluster
expect_reach ok   c1h0 c1h1
# Names resolve per cluster: inside c1, c1h0 is its private address; outside, its public one.
[[ $(wx c1h1 -- getent hosts c1h0 | awk '{print $1}') == "$(kv private "$fe")" ]] ||
    fail "inside the private cluster c1h0 should resolve to its private address"
[[ $(wx c0h0 -- getent hosts c1h0 | awk '{print $1}') == "$(kv public "$fe")" ]] ||
    fail "outside, c1h0 should resolve to its public address"
echo PASS
