#!/bin/bash
# Rate: a TCP bulk transfer (cubic, receiver-measured after a 1 s warm-up) over an emulated link
# of 100 and 300 Mbit/s with MTU 1500, and of 1 Gbit/s with MTU 9000 and with GSO super-packets.
# Also prints what the emulator itself delivered and its CPU use.
#
# As a ctest (pass/fail) it checks what the shaper guarantees whatever the machine's load:
# TCP never gets more than the configured rate (<= 102 %), and it gets a share that only the
# configured rate explains (100 Mbit/s: >= 50 %; after `wanemu set` to 300 Mbit/s: >= 45 %,
# i.e. above the old 100; 1 Gbit/s: >= 35 %, i.e. above 300). How close TCP comes to the rate
# is a performance figure, not a pass/fail one: on this 2-core machine the emulator's thread
# competes with the TCP endpoints and the kernel, and a run at 1 Gbit/s has measured 54-84 %
# where a quiet one measures 92-98 %. WANEMU_RATE_STRICT=1 applies the 90-102 % target instead
# (the benchmark: run it alone, e.g. `WANEMU_RATE_STRICT=1 bash tools/wanemu/tests/rate.sh
# build/bin/wanemu build/bin/wanemu-bulk`).
# The TCP endpoints run at nice -20: the test is about the link, not about how much CPU the
# endpoints get on a busy two-core machine. (Not SCHED_FIFO: starved normal tasks would then get
# the kernel's fair-server time, which preempts the emulator's real-time thread too.)
source "$(dirname "$0")/lib.sh" "$@"

SECS=${WANEMU_RATE_SECS:-3}
printf "%-10s %-6s %-5s %-12s %-8s %-14s %-10s\n" \
    rate mtu gso tcp_mbit percent emulator_mbit emu_cpu

start_server_rt() {
    "$WANEMU" exec "$1" -- nice -n -20 "$BULK" server >"$TMP/server-$1.log" 2>&1 &
    wait_for grep -q listening "$TMP/server-$1.log" || fail "server on $1 did not start"
}

# measure RATE_MBIT MTU GSO: one transfer c0h0 -> c1h0 on the current run.
measure() {
    local rate=$1 mtu=$2 gso=$3
    local before after res
    before=$(stats_line c0 c1)
    res=$(wx c0h0 -- nice -n -20 "$BULK" send c1h0 -t "$SECS" --warmup 1 --cc cubic)
    after=$(stats_line c0 c1)
    local mbit bytes secs
    mbit=$(kv steady_mbit "$res")
    secs=$(kv secs "$res")
    local emu cpu
    emu=$(awk -v a="$(kv delivered_bytes "$before")" -v b="$(kv delivered_bytes "$after")" \
        -v s="$secs" 'BEGIN { printf "%.1f", (b - a) * 8 / s / 1e6 }')
    cpu=$(awk -v a="$(kv cpu_s "$before")" -v b="$(kv cpu_s "$after")" -v s="$secs" \
        'BEGIN { printf "%.0f%%", (b - a) / s * 100 }')
    local pct
    pct=$(awk -v m="$mbit" -v r="$rate" 'BEGIN { printf "%.1f", m / r * 100 }')
    printf "%-10s %-6s %-5s %-12s %-8s %-14s %-10s\n" "${rate}mbit" "$mtu" "$gso" "$mbit" "$pct%" \
        "$emu" "$cpu"
    if [[ ${WANEMU_RATE_STRICT:-0} == 1 ]]; then
        in_range "$pct" 90 102
    else
        in_range "$pct" "$FLOOR" 102
    fi
}

# check RATE MTU GSO: up to three attempts, since the TCP endpoints (and the kernel's softirq
# threads) share two cores with whatever else runs; every attempt prints what the emulator
# itself delivered and its CPU, so a failure shows whether the link or the endpoints fell short.
check() {
    local lo=$FLOOR
    [[ ${WANEMU_RATE_STRICT:-0} == 1 ]] && lo=90
    measure "$@" || measure "$@" || measure "$@" ||
        fail "rate $1 Mbit/s (mtu $2, gso $3): TCP outside $lo-102% of the rate three times"
}

wan_up --clusters 2 --hosts 1 --delay 5ms --rate 100mbit
start_server_rt c1h0
FLOOR=50 check 100 1500 off
"$WANEMU" set c0-c1 rate=300mbit >/dev/null
FLOOR=45 check 300 1500 off
"$WANEMU" down --name "$RUN" >/dev/null

wan_up --clusters 2 --hosts 1 --delay 5ms --rate 1gbit --mtu 9000
start_server_rt c1h0
FLOOR=35 check 1000 9000 off
"$WANEMU" down --name "$RUN" >/dev/null

wan_up --clusters 2 --hosts 1 --delay 5ms --rate 1gbit --gso
start_server_rt c1h0
FLOOR=35 check 1000 1500 on
echo PASS
