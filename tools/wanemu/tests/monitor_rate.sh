#!/bin/bash
# Traffic monitor: a bin never shows more than the link carried. TCP keeps a 300 Mbit/s link
# saturated for 2 s with 200 us bins; no bin may hold more than rate x bin + one packet (a bin
# boundary can fall inside a packet's serialization). Deliveries are binned by their scheduled
# time, so a late emulator that writes a burst does not show a burst (it did, up to ~30 packets
# in one bin, when bins followed the emulator's clock). The CSV still sums to the counters.
source "$(dirname "$0")/lib.sh" "$@"

CSV=$TMP/monitor.csv
RATE=300e6
BIN=0.0002
wan_up --clusters 2 --hosts 1 --delay 2ms --rate 300mbit --interval 200us --csv "$CSV"
start_server c1h0
wx c0h0 -- "$BULK" send c1h0 -t 2 --warmup 0.5 --cc cubic
line=$(quiet_stats_line c0 c1)
echo "$line"
res=$(awk -F, -v rate=$RATE -v bin=$BIN -v pkt=1500 '
    NR > 1 && $3 == "c0" {
        n++; b += $5; p += $6
        if ($5 > max) { max = $5; at = $1 }
        if ($5 > rate / 8 * bin + pkt) over++
        if ($11 > bin * 1e6) late++
        if ($5 >= rate / 8 * bin * 0.9) full++
    }
    END { printf "rows=%d full=%d over=%d max=%d at=%s late_bins=%d bytes=%d packets=%d",
                 n, full, over, max, at, late, b, p }' "$CSV")
echo "monitor: $res (limit $(awk -v r=$RATE -v b=$BIN 'BEGIN { print r / 8 * b + 1500 }') bytes per bin)"
[[ $(kv full "$res") -gt 1000 ]] || fail "the link was not saturated (too few full bins): $res"
[[ $(kv over "$res") == 0 ]] || fail "$(kv over "$res") bins show more than the link rate: $res"
[[ $(kv bytes "$res") == "$(kv delivered_bytes "$line")" &&
    $(kv packets "$res") == "$(kv delivered "$line")" ]] ||
    fail "monitor sums differ from the emulator's counters"
echo PASS
