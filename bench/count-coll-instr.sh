#!/usr/bin/env bash
# count-coll-instr.sh: instructions per call of small blocking collectives (callgrind).
#
# On a machine shared with other work, latencies move by 30 % or more between runs; the number
# of instructions a call executes does not. This runs bench/coll_loop.c at NP ranks with ONE rank
# (-r, default 0) under valgrind's callgrind, collecting only inside the collective's PMPI_ entry
# point, and prints Ir / N per collective. The other ranks run at full speed, so the measured rank
# mostly finds its messages already there: the count is the call's own work (checks, dispatch,
# sending, taking the messages) plus little waiting. Rank 0 is the root of Bcast.
#
# Usage: bench/count-coll-instr.sh [-b BUILD_DIR] [-n NP] [-c "barrier alltoall ..."] [-s BYTES]
#                                  [-i CALLS] [-r RANK] [-L LIBDIR] [-o OUT_DIR]
#   -L  run against the libwanmpi.so in LIBDIR (LD_LIBRARY_PATH), e.g. a copy of an older build's
#       lib/ for before/after counts with the same binary
# Needs valgrind (Debian package valgrind). Output: "<coll> <bytes> <instructions per call>".
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build"
np=2
colls="barrier bcast allreduce alltoall allgather"
bytes=8
calls=10000
rank=0
libdir=""
out=""
while [ $# -gt 0 ]; do
    case "$1" in
    -b) build=$2; shift 2 ;;
    -n) np=$2; shift 2 ;;
    -c) colls=$2; shift 2 ;;
    -s) bytes=$2; shift 2 ;;
    -i) calls=$2; shift 2 ;;
    -r) rank=$2; shift 2 ;;
    -L) libdir=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "count-coll-instr.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
command -v valgrind >/dev/null || { echo "count-coll-instr.sh: valgrind not installed" >&2; exit 2; }
build=$(cd "$build" 2>/dev/null && pwd) || { echo "count-coll-instr.sh: no build tree at $build" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/count-coll-instr.XXXXXX)
mkdir -p "$out"
"$build/bin/mpicc" -O2 -g -o "$out/coll_loop" "$here/coll_loop.c" || exit 1
# The wrapper each rank runs: the chosen rank under callgrind, the others plain.
cat >"$out/wrap.sh" <<WRAP
#!/bin/sh
if [ "\${PMI_RANK:-}" = "$rank" ]; then
    exec valgrind -q --tool=callgrind --callgrind-out-file="\$CG_OUT" --collect-atstart=no \
        --toggle-collect="\$CG_FN" "\$@"
fi
exec "\$@"
WRAP
chmod +x "$out/wrap.sh"
for c in $colls; do
    case $c in
    barrier) fn=PMPI_Barrier ;; bcast) fn=PMPI_Bcast ;; allreduce) fn=PMPI_Allreduce ;;
    alltoall) fn=PMPI_Alltoall ;; allgather) fn=PMPI_Allgather ;;
    *) echo "count-coll-instr.sh: unknown collective $c" >&2; exit 2 ;;
    esac
    f="$out/$c.$bytes.cg"
    rm -f "$f"
    env CG_OUT="$f" CG_FN="$fn" ${libdir:+LD_LIBRARY_PATH="$libdir"} \
        timeout 900 "$build/bin/mpirun" -n "$np" "$out/wrap.sh" "$out/coll_loop" "$c" "$bytes" \
        "$calls" >"$out/$c.log" 2>&1 || { echo "$c: run failed (see $out/$c.log)" >&2; continue; }
    ir=$(awk '/^summary:/ {print $2}' "$f")
    [ -z "$ir" ] && ir=$(awk '/^totals:/ {print $2}' "$f")
    [ "$c" = barrier ] && b=0 || b=$bytes
    awk -v c="$c" -v b="$b" -v ir="$ir" -v n="$calls" 'BEGIN {printf "%s %s %.0f\n", c, b, ir / n}'
done
