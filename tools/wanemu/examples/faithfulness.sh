#!/bin/bash
# Measures how faithful the emulator is on this machine (needs root) and prints the tables of
# docs/wanemu.md:  tools/wanemu/examples/faithfulness.sh build/bin [SECONDS]
#  - delay: ping RTT (200 pings, 10 ms apart) against 2 x the configured one-way delay;
#  - rate: one cubic TCP flow, receiver-measured after a 1 s warm-up, against the configured
#    rate; with what the emulator itself delivered, its CPU use and its lateness. The TCP
#    endpoints run at nice -20 so that other load on the machine does not starve them.
set -euo pipefail
BIN=${1:?directory with wanemu and wanemu-bulk}
SECS=${2:-5}
W="$BIN/wanemu"
export WANEMU_RUN=faith-$$
trap '"$W" down >/dev/null 2>&1 || true' EXIT
kv() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
line() { "$W" stats --kv | grep " from=c0 to=c1 "; }

echo "## delay (one-way d, ping RTT in ms; error = median - 2d)"
echo "| d | RTT median | RTT mean | RTT p99 | error (median) | emulator lateness p50 / p99 |"
echo "|---|---|---|---|---|---|"
"$W" up -q --watch-pid $$ --clusters 2 --hosts 1 --delay 1ms --rate 1gbit
for d in 1 5 10 20; do
    "$W" set c0-c1 delay=${d}ms >/dev/null
    "$W" exec c0h0 -- ping -q -c 2 -i 0.01 c1h0 >/dev/null
    r=$("$W" exec c0h0 -- ping -n -c 200 -i 0.01 c1h0 | grep -o 'time=[0-9.]*' | cut -d= -f2 |
        sort -n)
    s=$(line)
    awk -v d="$d" -v l50="$(kv late_p50_us "$s")" -v l99="$(kv late_p99_us "$s")" '
        { a[NR] = $1; sum += $1 }
        END { m = a[int((NR + 1) / 2)]; p = a[int(NR * 0.99)];
              printf "| %d ms | %.3f | %.3f | %.3f | %+.3f ms | %s / %s us |\n",
                     d, m, sum / NR, p, m - 2 * d, l50, l99 }' <<<"$r"
done
"$W" down >/dev/null

echo
echo "## rate (one cubic TCP flow, ${SECS} s, one-way delay 5 ms)"
echo "| link | TCP goodput | % of rate | link delivered (emulator) | emulator CPU | lateness p50 / p99 / max |"
echo "|---|---|---|---|---|---|"
# measure LABEL RATE_MBIT: TCP goodput after a 1 s warm-up (receiver), and over the same
# window what the emulator delivered (monitor CSV) and how much CPU its thread used.
measure() {
    local b a r secs csv
    csv=/run/wanemu/$WANEMU_RUN/monitor.csv
    b=$(line)
    r=$("$W" exec c0h0 -- nice -n -20 "$BIN/wanemu-bulk" send c1h0 -t "$SECS" --warmup 1 --cc cubic)
    a=$(line)
    secs=$(kv secs "$r")
    local emu
    # Window: from 1 s after the transfer's first full-size bin to its last bin.
    emu=$(awk -F, '$3 == "c0" { if (!t0 && $5 > 10000) t0 = $1; if (t0) { t[NR] = $1; v[NR] = $5 }
                                if ($5 > 10000) last = $1 }
        END { for (i in t) if (t[i] >= t0 + 1 && t[i] < last) s += v[i];
              printf "%.1f", s * 8 / (last - t0 - 1) / 1e6 }' "$csv")
    awk -v lbl="$1" -v rate="$2" -v m="$(kv steady_mbit "$r")" -v s="$secs" -v emu="$emu" \
        -v c0="$(kv cpu_s "$b")" -v c1="$(kv cpu_s "$a")" -v l50="$(kv late_p50_us "$a")" \
        -v l99="$(kv late_p99_us "$a")" -v lmax="$(kv late_max_us "$a")" \
        'BEGIN { printf "| %s | %.1f Mbit/s | %.1f %% | %.1f Mbit/s | %.0f %% of a core |" \
                        " %s / %s / %.0f us |\n",
                 lbl, m, m / rate * 100, emu, (c1 - c0) / s * 100, l50, l99, lmax }'
}
run_case() {  # label rate_mbit up-options...
    local lbl=$1 rate=$2; shift 2
    "$W" up -q --watch-pid $$ --clusters 2 --hosts 1 --delay 5ms --rate "${rate}mbit" "$@"
    "$W" exec c1h0 -- nice -n -20 "$BIN/wanemu-bulk" server >/dev/null 2>&1 &
    sleep 0.3
    measure "$lbl" "$rate"
    "$W" down >/dev/null
}
run_case "100 Mbit/s, MTU 1500" 100
run_case "300 Mbit/s, MTU 1500" 300
run_case "500 Mbit/s, MTU 1500" 500
run_case "1 Gbit/s, MTU 1500" 1000
run_case "1 Gbit/s, MTU 9000" 1000 --mtu 9000
run_case "1 Gbit/s, GSO" 1000 --gso
run_case "2 Gbit/s, GSO" 2000 --gso
run_case "3 Gbit/s, MTU 9000" 3000 --mtu 9000
