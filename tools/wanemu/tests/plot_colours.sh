#!/bin/bash
# `wanemu plot` colours: a direction keeps its colour in both panels, whichever direction comes
# first in the CSV, when a direction has no rows, with --link, and across runs with the same
# links. Checked on the gnuplot script (`--script`); no root and no gnuplot needed.
set -euo pipefail
WANEMU=${1:?}
TMP=$(mktemp -d /tmp/wanemu-plot.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

hdr=time_s,link,from,to,bytes,packets,drop_queue,drop_random,queue_bytes,queue_packets,late_max_us
# Run A: c1>c0 and c0-c2 traffic come first. Run B: other order, more rows, c2>c0 missing.
printf '%s\n' $hdr 0.001,c0-c1,c1,c0,1500,1,0,0,0,0,3 0.001,c0-c2,c2,c0,1500,1,0,0,0,0,3 \
    0.002,c0-c1,c0,c1,3000,2,1,0,1500,1,3 0.003,c0-c2,c0,c2,1500,1,0,0,0,0,1 >"$TMP/a.csv"
printf '%s\n' $hdr 0.001,c0-c2,c0,c2,1500,1,0,0,0,0,3 0.001,c0-c1,c0,c1,1500,1,0,0,0,0,3 \
    0.002,c0-c1,c1,c0,3000,2,0,0,1500,1,3 0.004,c0-c1,c0,c1,1500,1,0,0,0,0,1 >"$TMP/b.csv"

# colours SCRIPT: "DIRECTION COLOUR" per series, after checking that both panels draw each
# series with the same line style (so the same colour).
colours() {
    awk '
        /^set style line/ { c = $7; gsub("\047", "", c); style[$4] = c }
        /^plot / {
            ++panel
            n = split($0, parts, ", ")
            for (i = 1; i <= n; ++i) {
                if (parts[i] !~ / ls [0-9]+ title /) continue
                ls = parts[i]; sub(/.* ls /, "", ls); sub(/ .*/, "", ls)
                t = parts[i]; sub(/.* title "/, "", t); sub(/".*/, "", t)
                if (panel == 1) top[t] = ls; else if (top[t] != ls) bad = bad " " t
                if (panel == 1) order[++m] = t
            }
        }
        END {
            if (bad != "") { print "panels differ for" bad; exit 1 }
            for (i = 1; i <= m; ++i) { t = order[i]; sub(/^c[^ ]* /, "", t); print t, style[top[order[i]]] }
        }' "$1"
}
plot() { "$WANEMU" plot "$@" -o "$TMP/x.png" --script "$TMP/s.gp" >/dev/null && colours "$TMP/s.gp"; }

a=$(plot "$TMP/a.csv") || fail "run A: $a"
b=$(plot "$TMP/b.csv") || fail "run B: $b"
a1=$(plot "$TMP/a.csv" --link c0-c1) || fail "run A, c0-c1: $a1"
b2=$(plot "$TMP/b.csv" --link c0-c2) || fail "run B, c0-c2: $b2"
at=$(plot "$TMP/a.csv" --from 0.002) || fail "run A from 2 ms: $at"
printf 'A:\n%s\nB:\n%s\nA c0-c1:\n%s\nB c0-c2:\n%s\nA from 2 ms:\n%s\n' "$a" "$b" "$a1" "$b2" "$at"
colour() { awk -v d="$1" '$1 == d { print $2 }' <<<"$2"; }
for d in "c0>c1" "c1>c0" "c0>c2"; do
    want=$(colour "$d" "$a")
    [[ -n $want ]] || fail "no colour for $d in run A"
    for other in "$b" "$a1" "$at"; do
        got=$(colour "$d" "$other")
        [[ -z $got || $got == "$want" ]] || fail "$d is $want in run A but $got in another plot"
    done
    [[ $(colour "$d" "$b") == "$want" ]] || fail "$d: run B differs from run A"
done
[[ $(colour "c0>c2" "$b2") == "$(colour "c0>c2" "$a")" ]] || fail "c0>c2 differs with --link"
[[ $(colour "c2>c0" "$a") != "" ]] || fail "no colour for c2>c0"
n=$(awk '{ print $2 }' <<<"$a" | sort -u | wc -l)
[[ $n == 4 ]] || fail "the 4 directions of run A should have 4 different colours"
grep -q "#d62728" <<<"$(awk '{ print $2 }' <<<"$a")" && fail "red is for drops only"
echo PASS
