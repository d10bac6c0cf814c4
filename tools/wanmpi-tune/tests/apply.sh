#!/bin/bash
# --apply and --apply-routes, as root, inside a network namespace of their own (unshare -n: it
# disappears with the inner shell, so nothing is left to clean up). Argument 2 picks the case:
#   apply_sysctl  a namespace with too small tcp_wmem and slow start after idle on: --apply
#                 fixes both (printing "applied: ... (was ...)"), the check after passes, and a
#                 second --apply has nothing to change;
#   apply_routes  routes through a gateway: --apply leaves them alone, --apply-routes sets
#                 initcwnd/initrwnd and keeps their other attributes;
#   apply_global  net.core.rmem_max/wmem_max, which Linux keeps global: --apply must not change
#                 them from a child namespace (it says it could not, or changed only a
#                 namespace's own copy on a kernel that has one).
# Afterwards the host's own sysctls and routes must be as before.
source "$(dirname "$0")/lib.sh"
CASE=${2:?case}
if [[ $(id -u) != 0 ]] || ! unshare -n true 2>/dev/null; then
    echo "SKIP: needs root and network namespaces"
    exit 77
fi

keys="net.core.rmem_max net.core.wmem_max net.ipv4.tcp_rmem net.ipv4.tcp_wmem
net.ipv4.tcp_slow_start_after_idle net.ipv4.tcp_no_metrics_save net.ipv4.tcp_window_scaling
net.ipv4.tcp_sack net.ipv4.tcp_allowed_congestion_control net.ipv4.tcp_congestion_control
net.ipv4.tcp_no_ssthresh_metrics_save net.core.default_qdisc"
host_state() {  # routes: only those through a gateway, the ones wanmpi-tune may change (other
               # tests on this machine add and remove interfaces, and their on-link routes)
    for k in $keys; do echo "$k = $(cat "/proc/sys/${k//.//}" 2>&1)"; done
    (ip -4 -o route show table all; ip -6 -o route show table all) | grep -E ' via |nexthop' || true
}
host_state >"$TMP/before"

# The inner script gets the binary and the case; it reports through its exit status and output.
cat >"$TMP/inner.sh" <<'INNER'
set -euo pipefail
TUNE=$1 CASE=$2 HOST_NS=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
# Never write anything unless this really is another network namespace than the host's.
[[ $(readlink /proc/self/ns/net) != "$HOST_NS" ]] || fail "not in a namespace of our own"
ip link set lo up
case $CASE in
apply_sysctl)
    read -r wmin wdef _ </proc/sys/net/ipv4/tcp_wmem
    sysctl -qw net.ipv4.tcp_wmem="$wmin $wdef 524288" net.ipv4.tcp_slow_start_after_idle=1
    only=--only=net.ipv4.tcp_wmem,net.ipv4.tcp_slow_start_after_idle,net.ipv4.tcp_rmem
    # 200 Mbit/s x 40 ms: BDP 1 MB > 512 KB, so tcp_wmem fails; 2 x BDP rounds up to 2 MiB.
    rc=0; out=$("$TUNE" --rate 200mbit --rtt 40ms $only) || rc=$?
    [[ $rc == 1 ]] && grep -q '^fail net.ipv4.tcp_wmem: ' <<<"$out" || fail "before (rc $rc): $out"
    rc=0; out=$("$TUNE" --rate 200mbit --rtt 40ms $only --apply) || rc=$?
    echo "$out"
    [[ $rc == 0 ]] || fail "--apply: exit status $rc"
    grep -qxF "applied: sysctl -w net.ipv4.tcp_wmem=\"$wmin $wdef 2097152\" (was $wmin $wdef 524288)" <<<"$out" ||
        fail "no applied line for tcp_wmem"
    grep -qxF "applied: sysctl -w net.ipv4.tcp_slow_start_after_idle=0 (was 1)" <<<"$out" ||
        fail "no applied line for slow start after idle"
    [[ $(grep -c '^applied: ' <<<"$out") == 2 ]] || fail "more than the two changes applied"
    [[ $(cat /proc/sys/net/ipv4/tcp_wmem) == "$wmin	$wdef	2097152" ]] || fail "tcp_wmem not set"
    [[ $(cat /proc/sys/net/ipv4/tcp_slow_start_after_idle) == 0 ]] || fail "slow start still on"
    grep -q '^ok   net.ipv4.tcp_wmem: ' <<<"$out" && grep -q '^ok   net.ipv4.tcp_slow_start_after_idle: 0' <<<"$out" ||
        fail "the check after --apply does not pass"
    out=$("$TUNE" --rate 200mbit --rtt 40ms $only --apply --quiet) || fail "second --apply: $out"
    [[ $out == "applied: nothing to change" ]] || fail "second --apply: $out"
    ;;
apply_routes)
    ip link add wt0 type veth peer name wt1
    ip link set wt0 up; ip link set wt1 up
    ip addr add 10.77.0.2/24 dev wt0
    ip -6 addr add fd77::2/64 dev wt0 nodad
    ip route add 10.78.0.0/16 via 10.77.0.1 dev wt0
    ip route add 10.79.0.0/16 via 10.77.0.1 dev wt0 rto_min 5ms mtu 1400
    ip -6 route add fd78::/64 via fd77::1 dev wt0 metric 77
    ip route add 10.80.0.0/16 dev wt0  # on-link: not a wide-area route, not reported
    args=(--rate 200mbit --rtt 40ms --only route)
    out=$("$TUNE" "${args[@]}") || fail "check: $out"
    [[ $(grep -c '^info route .*; fix: ip -[46] route change .* initcwnd 100 initrwnd 100$' <<<"$out") == 3 ]] ||
        fail "want three route suggestions: $out"
    ! grep -q 10.80.0.0 <<<"$out" || fail "an on-link route reported: $out"
    grep -q '^info route 10.79.0.0/16 via 10.77.0.1 dev wt0: .*rto_min 5ms' <<<"$out" || fail "rto_min: $out"
    out=$("$TUNE" "${args[@]}" --apply) || fail "--apply: $out"
    ip -o route show | grep -q initcwnd && fail "--apply changed a route: $(ip -o route show)"
    grep -q '^applied: ip' <<<"$out" && fail "--apply applied a route: $out"
    out=$("$TUNE" "${args[@]}" --apply-routes) || fail "--apply-routes: $out"
    echo "$out"
    [[ $(grep -c '^applied: ip -[46] route change ' <<<"$out") == 3 ]] || fail "three routes applied?"
    [[ $(grep -c '^ok   route ' <<<"$out") == 3 ]] || fail "the check after is not ok"
    r=$(ip -o route show 10.79.0.0/16)
    [[ $r == *"mtu 1400"* && $r == *"initcwnd 100"* && $r == *"rto_min lock 5ms"* && $r == *"initrwnd 100"* ]] ||
        fail "10.79.0.0/16 lost an attribute: $r"
    r=$(ip -6 -o route show fd78::/64)
    [[ $r == *"metric 77"* && $r == *"initcwnd 100"* ]] || fail "fd78::/64: $r"
    ;;
apply_global)
    # A path whose 2 x BDP is twice the larger of the two: both warn, and --apply tries them.
    read -r rmax </proc/sys/net/core/rmem_max; read -r wmax </proc/sys/net/core/wmem_max
    max=$((rmax > wmax ? rmax : wmax))
    args=(--rate "$((max * 8))bit" --rtt 1s --only net.core.rmem_max,net.core.wmem_max)
    rc=0; out=$("$TUNE" "${args[@]}" --apply) || rc=$?
    echo "$out"
    [[ $rc == 0 ]] || fail "--apply: exit status $rc (warn lines only: want 0)"
    for k in rmem_max wmem_max; do
        grep -qE "^(applied|not applied): sysctl -w net.core.$k=" <<<"$out" || fail "$k not tried"
    done
    if grep -q '^not applied: ' <<<"$out"; then
        grep -q 'global setting' <<<"$out" || fail "a refused change does not say why"
        [[ $(grep -c '^warn net.core' <<<"$out") == 2 ]] || fail "the check after must still warn"
    fi
    ;;
*) fail "unknown case $CASE" ;;
esac
echo "inner: PASS"
INNER

rc=0
unshare -n bash "$TMP/inner.sh" "$TUNE" "$CASE" "$(readlink /proc/self/ns/net)" || rc=$?
host_state >"$TMP/after"
diff -u "$TMP/before" "$TMP/after" || fail "the host's sysctls or routes changed"
[[ $rc == 0 ]] || fail "$CASE (exit status $rc)"
echo PASS
