#!/bin/bash
# Queue: with a small drop-tail queue a TCP bulk transfer sees drops, and the traffic monitor's
# CSV adds up to exactly the emulator's counters (drops, packets, bytes).
# Loss: 1% random loss measured end to end over 50,000 UDP datagrams is within +-20 % relative
# (the emulator's own count of random drops is checked the same way).
# Also: `wanemu plot` draws the CSV.
source "$(dirname "$0")/lib.sh" "$@"

CSV=$TMP/monitor.csv
wan_up --clusters 2 --hosts 1 --delay 5ms --rate 100mbit --queue 16KB --csv "$CSV"
start_server c1h0

note "TCP bulk through a 16 KB queue"
wx c0h0 -- "$BULK" send c1h0 -t 2 --warmup 0.5 --cc cubic
# Packets of the transfer (its last ACKs and FIN) may still be on the 5 ms link when the sender
# returns; counters and CSV are compared once the link is quiet (two snapshots agree), or the
# CSV would hold packets delivered after the emulator's snapshot.
line=$(quiet_stats_line c0 c1)
echo "$line"
drops=$(kv drop_queue "$line")
[[ $drops -gt 0 ]] || fail "no queue drops with a 16 KB queue"
csv_sums=$(awk -F, '$3 == "c0" && $4 == "c1" { b += $5; p += $6; q += $7; r += $8 }
    END { printf "bytes=%d packets=%d drop_queue=%d drop_random=%d", b, p, q, r }' "$CSV")
echo "csv: $csv_sums"
[[ $(kv drop_queue "$csv_sums") == "$drops" ]] ||
    fail "monitor drop count $(kv drop_queue "$csv_sums") != emulator's $drops"
[[ $(kv packets "$csv_sums") == "$(kv delivered "$line")" ]] ||
    fail "monitor packets $(kv packets "$csv_sums") != emulator's $(kv delivered "$line")"
[[ $(kv bytes "$csv_sums") == "$(kv delivered_bytes "$line")" ]] ||
    fail "monitor bytes $(kv bytes "$csv_sums") != emulator's $(kv delivered_bytes "$line")"
qmax=$(kv queue_bytes_max "$line")
[[ $qmax -le $((16 * 1024)) ]] || fail "queue reached $qmax bytes, above its 16 KB limit"

note "plot"
"$WANEMU" plot "$CSV" -o "$TMP/plot.png" --title "queue test"
[[ $(head -c 4 "$TMP/plot.png" | od -An -c | tr -d ' ') == '211PNG' ]] || fail "plot is not a PNG"
"$WANEMU" plot "$CSV" -o "$TMP/plot.svg"
grep -q "<svg" "$TMP/plot.svg" || fail "plot is not an SVG"

note "1% random loss over 50000 datagrams"
"$WANEMU" set c0-c1 rate=1gbit,queue=auto,loss=1%,from=c0 >/dev/null
before=$(stats_line c0 c1)
res=$(wx c0h0 -- "$BULK" udp c1h0 -n 50000 --size 200 --rate 40mbit)
after=$(stats_line c0 c1)
echo "$res"
sent=$(kv sent "$res"); received=$(kv received "$res"); overflow=$(kv overflow "$res")
[[ $sent -ge 50000 && $overflow == 0 ]] || fail "UDP test did not run cleanly: $res"
loss=$(kv loss "$res")
in_range "$loss" 0.008 0.012 || fail "measured loss $loss is not within 1% +-20%"
arr=$(( $(kv arrivals "$after") - $(kv arrivals "$before") ))
rnd=$(( $(kv drop_random "$after") - $(kv drop_random "$before") ))
emu=$(awk -v d="$rnd" -v a="$arr" 'BEGIN { printf "%.6f", d / a }')
echo "emulator: $rnd random drops of $arr arrivals = $emu;" \
    "end to end: $((sent - received)) of $sent"
in_range "$emu" 0.008 0.012 || fail "emulator's loss rate $emu is not within 1% +-20%"
echo PASS
