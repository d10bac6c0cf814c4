#!/bin/bash
# The buffer findings against the bandwidth-delay product given by --rate and --rtt: below the
# BDP the autotuning maxima fail (exit 1), between BDP and 2 x BDP they warn, above they pass;
# the fix asks for 2 x BDP rounded up to MiB (at most what the kernel's int holds).
source "$(dirname "$0")/lib.sh"
bufs=net.core.rmem_max,net.core.wmem_max,net.ipv4.tcp_rmem,net.ipv4.tcp_wmem

# 1000 Gbit/s x 1 s: no host holds 125 GB per socket.
run --rate 1000gbit --rtt 1s
check_lines
[[ $RC == 1 ]] || fail "1000gbit x 1s: exit status $RC"
for k in tcp_rmem tcp_wmem; do
    l=$(line net.ipv4.$k)
    [[ $l == "fail "*"; fix: sysctl -w net.ipv4.$k=\""*" 2147483647\"" ]] || fail "$l"
done
for k in rmem_max wmem_max; do
    [[ $(line net.core.$k) == "warn "*"; fix: sysctl -w net.core.$k=2147483647" ]] ||
        fail "$(line net.core.$k)"
done

# 1 kbit/s x 1 ms: every buffer is big enough.
run --rate 1kbit --rtt 1ms --only $bufs
check_lines
[[ $RC == 0 ]] || fail "1kbit x 1ms: exit status $RC"
[[ $(grep -c '^ok   ' <<<"$OUT") == 4 ]] || fail "1kbit x 1ms: $OUT"

# Between: a path whose BDP is 3/4 of this host's tcp_wmem maximum M (RTT 1 s, so rate =
# 6 M bit/s): warn, exit 0, and the fix is 1.5 M rounded up to MiB.
read -r wmin wdef wmax </proc/sys/net/ipv4/tcp_wmem
run --rate "$((wmax * 6))bit" --rtt 1000 --only net.ipv4.tcp_wmem  # a bare RTT is in ms
check_lines
mib=1048576
want=$(((wmax * 3 / 2 + mib - 1) / mib * mib))
[[ $RC == 0 && $OUT == "warn net.ipv4.tcp_wmem: max $wmax "*"; fix: sysctl -w net.ipv4.tcp_wmem=\"$wmin $wdef $want\"" ]] ||
    fail "BDP = 3/4 of tcp_wmem max (rc $RC): $OUT"
# And a BDP just above M: fail.
run --rate "$((wmax * 9))bit" --rtt 1s --only net.ipv4.tcp_wmem
[[ $RC == 1 && $OUT == "fail net.ipv4.tcp_wmem: "* ]] || fail "BDP = 9/8 of tcp_wmem max: $OUT"
echo PASS
