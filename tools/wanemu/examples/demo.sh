#!/bin/bash
# Reproduces the plot in docs/img/wanemu-demo.png from a real run (needs root):
#   tools/wanemu/examples/demo.sh build/bin OUT.png
# Two sites 10 ms apart over 200 Mbit/s with a 128 KB drop-tail queue. A cubic flow starts
# c0->c1 (slow-start overshoot, queue drops), a second flow c1->c0 joins at 2 s, and at 4 s the
# link flaps (loss=100% for 0.5 s, both directions) before both flows recover.
set -euo pipefail
BIN=${1:?directory with wanemu and wanemu-bulk}
OUT=${2:-wanemu-demo.png}
export WANEMU_RUN=demo-$$
TMP=$(mktemp -d)
trap '"$BIN/wanemu" down >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT

"$BIN/wanemu" up --watch-pid $$ -q --csv "$TMP/demo.csv" \
    --clusters 2 --hosts 1 --delay 10ms --rate 200mbit --queue 128KB
"$BIN/wanemu" exec c1h0 -- nice -n -20 "$BIN/wanemu-bulk" server >/dev/null &
"$BIN/wanemu" exec c0h0 -- nice -n -20 "$BIN/wanemu-bulk" server >/dev/null &
sleep 0.3
"$BIN/wanemu" exec c0h0 -- nice -n -20 "$BIN/wanemu-bulk" send c1h0 -t 7 --cc cubic >"$TMP/a" &
a=$!
sleep 2
"$BIN/wanemu" exec c1h0 -- nice -n -20 "$BIN/wanemu-bulk" send c0h0 -t 5 --cc cubic >"$TMP/b" &
b=$!
sleep 2
"$BIN/wanemu" set c0-c1 loss=100%,for=0.5s
wait $a $b
cat "$TMP/a" "$TMP/b"
"$BIN/wanemu" stats
[[ -n "${KEEP_CSV:-}" ]] && cp "$TMP/demo.csv" "$KEEP_CSV"
"$BIN/wanemu" plot "$TMP/demo.csv" -o "$OUT" --bin 10ms --size 900x520 \
    --title "wanemu: 200 Mbit/s, 10 ms, 128 KB queue; two cubic flows and a link flap"
