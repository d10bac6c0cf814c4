#!/bin/bash
# Packet-count queues: `--queue 100p` alone is 100 packets, with no byte limit besides (the auto
# byte limit, 64 KB here, would stop it at ~43 full packets); `set` refuses a queue smaller than
# one packet and leaves the link as it was; `64KB+100p` applies both limits.
source "$(dirname "$0")/lib.sh" "$@"

CSV=$TMP/monitor.csv
wan_up --clusters 2 --hosts 1 --delay 1ms --rate 100mbit --queue 100p --csv "$CSV"
line=$(stats_line c0 c1)
[[ $(kv queue_pkts "$line") == 100 && $(kv queue_bytes "$line") == 0 ]] ||
    fail "--queue 100p should be 100 packets and no byte limit: $line"
start_server c1h0
wx c0h0 -- "$BULK" send c1h0 -t 2 --warmup 0.5 --cc cubic
line=$(stats_line c0 c1)
echo "$line"
qmax=$(awk -F, 'NR > 1 && $3 == "c0" && $10 > m { m = $10 } END { print m + 0 }' "$CSV")
echo "largest queue: $(kv queue_bytes_max "$line") bytes, $qmax packets"
[[ $(kv queue_bytes_max "$line") -gt 65536 ]] ||
    fail "the queue never held more than 64 KB: a byte limit still applies"
[[ $qmax -le 100 ]] || fail "the queue held $qmax packets, above its 100-packet limit"

for bad in queue=0p queue=1KB queue_pkts=0,queue=20p,queue_pkts=0; do
    rc=0
    err=$("$WANEMU" set c0-c1 "$bad" 2>&1) || rc=$?
    echo "set $bad: $err"
    [[ $rc != 0 ]] || fail "set $bad should be refused"
done
grep -q "smaller than one packet (MTU 1500 bytes)" <<<"$("$WANEMU" set c0-c1 queue=1KB 2>&1)" ||
    fail "set queue=1KB: no clear error"
line=$(stats_line c0 c1)
[[ $(kv queue_pkts "$line") == 100 && $(kv queue_bytes "$line") == 0 ]] ||
    fail "a refused set changed the link: $line"
"$WANEMU" set c0-c1 queue=64KB+100p
line=$(stats_line c1 c0)
[[ $(kv queue_pkts "$line") == 100 && $(kv queue_bytes "$line") == 65536 ]] ||
    fail "queue=64KB+100p should set both limits: $line"
echo PASS
