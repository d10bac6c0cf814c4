#!/bin/bash
# wanmpi-tune on this host, read-only: the lines are findings, the exit status matches the fail
# lines, every finding the issue lists is there once, and what it reports agrees with /proc,
# uname and `ip route`. --quiet prints exactly the warn and fail lines.
source "$(dirname "$0")/lib.sh"

run
check_lines
[[ -z $ERR ]] || fail "stderr: $ERR"
for n in kernel net.core.rmem_max net.core.wmem_max net.ipv4.tcp_rmem net.ipv4.tcp_wmem \
    net.ipv4.tcp_slow_start_after_idle net.core.default_qdisc \
    net.ipv4.tcp_available_congestion_control net.ipv4.tcp_allowed_congestion_control \
    net.ipv4.tcp_congestion_control SO_MAX_PACING_RATE TCP_RTO_MIN_US TCP_DELACK_MAX_US \
    TCP_RTO_MAX_MS TCP_CONGESTION TCP_INFO; do
    line "$n" >/dev/null
done
grep -qE '^(ok  |info) route( |:)' <<<"$OUT" || fail "no route finding"

# Values against the host.
[[ $(line kernel) == *"Linux $(uname -r)" ]] || fail "kernel: $(line kernel)"
for k in tcp_rmem tcp_wmem; do
    max=$(awk '{print $3}' /proc/sys/net/ipv4/$k)
    [[ $(line net.ipv4.$k) == *": max $max ("* ]] || fail "$k max $max: $(line net.ipv4.$k)"
done
ssai=$(cat /proc/sys/net/ipv4/tcp_slow_start_after_idle)
want=$([[ $ssai == 0 ]] && echo "ok  " || echo warn)
[[ $(line net.ipv4.tcp_slow_start_after_idle) == "$want "* ]] ||
    fail "slow start after idle is $ssai: $(line net.ipv4.tcp_slow_start_after_idle)"
[[ $(line net.ipv4.tcp_congestion_control) == *": $(cat /proc/sys/net/ipv4/tcp_congestion_control) ("* ]] ||
    fail "default congestion control: $(line net.ipv4.tcp_congestion_control)"

# The socket options against the kernel's version (what each one needs, docs/wanmpi-tune.md).
IFS=. read -r major minor _ <<<"$(uname -r)"
ver=$((major * 100 + ${minor%%[^0-9]*}))
expect() {  # NAME MIN_VERSION LEVELS_BELOW (a regex)
    local want=$([[ $ver -ge $2 ]] && echo "ok  " || echo "$3")
    [[ $(line "$1") =~ ^($want)\ $1:\  ]] || fail "Linux $(uname -r), expected $want: $(line "$1")"
}
expect SO_MAX_PACING_RATE 413 "warn|fail"  # 4.4-4.12 pace only with fq; older lack the option
expect TCP_RTO_MIN_US 615 warn
expect TCP_DELACK_MAX_US 615 warn
expect TCP_RTO_MAX_MS 616 warn
expect TCP_INFO 607 warn
[[ $ver -lt 607 || $(line TCP_INFO) == *tcpi_total_rto* ]] || fail "TCP_INFO: $(line TCP_INFO)"

# Every route through a gateway in the main tables is reported, with its destination.
while read -r dst _ gw _; do
    grep -qF "route $dst via $gw " <<<"$OUT" || fail "route $dst via $gw not reported"
done < <( (ip -4 -o route show; ip -6 -o route show) | grep ' via ' | grep -v nexthop)

# --quiet: the same verdict, only the warn and fail lines.
full=$OUT full_rc=$RC
run --quiet
[[ $RC == "$full_rc" ]] || fail "--quiet exit status $RC, without $full_rc"
[[ $OUT == "$(grep -E '^(warn|fail) ' <<<"$full" || true)" ]] || fail "--quiet printed: $OUT"
echo PASS
