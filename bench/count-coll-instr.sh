#!/usr/bin/env bash
# count-coll-instr.sh: instructions per call of small blocking collectives (callgrind).
#
# On a machine shared with other work, latencies move by 30 % or more between runs; the number
# of instructions a call executes does not. This runs bench/coll_loop.c at NP ranks with ONE rank
# (-r, default 0) under valgrind's callgrind, collecting only inside the collective's PMPI_ entry
# point, and prints Ir / N per collective. The other ranks run at full speed, so the measured rank
# mostly finds its messages already there: the count is the call's own work (checks, dispatch,
# sending, taking the messages) plus little waiting; on a loaded machine the peer is sometimes
# descheduled and the measured rank polls meanwhile, so each collective runs -R times and the
# lowest count is printed, with the same count outside core::wait_until (what a message that
# arrives during the wait is received in). Rank 0 is the root of Bcast.
#
# Usage: bench/count-coll-instr.sh [-b BUILD_DIR] [-n NP] [-c "barrier alltoall ..."] [-s BYTES]
#                                  [-i CALLS] [-r RANK] [-R REPS] [-L LIBDIR] [-o OUT_DIR]
#   -L  run against the libwanmpi.so in LIBDIR (LD_LIBRARY_PATH), e.g. a copy of an older build's
#       lib/ for before/after counts with the same binary
# Needs valgrind (Debian package valgrind). Output per collective:
#   "<coll> <bytes> <instructions per call> <of which outside the wait>"
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build"
np=2
colls="barrier bcast allreduce alltoall allgather"
bytes=8
calls=10000
rank=0
reps=3
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
    -R) reps=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
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
    best=""
    for rep in $(seq "$reps"); do
        f="$out/$c.$bytes.$rep.cg"
        rm -f "$f"
        env CG_OUT="$f" CG_FN="$fn" ${libdir:+LD_LIBRARY_PATH="$libdir"} \
            timeout 900 "$build/bin/mpirun" -n "$np" "$out/wrap.sh" "$out/coll_loop" "$c" \
            "$bytes" "$calls" >"$out/$c.log" 2>&1 ||
            { echo "$c: run failed (see $out/$c.log)" >&2; continue; }
        ir=$(awk '/^summary:/ {print $2}' "$f")
        wait=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
               awk '/core::wait_until\(/ {gsub(",", "", $1); print $1; exit}')
        line=$(awk -v ir="$ir" -v w="${wait:-0}" 'BEGIN {print ir, ir - w}')
        if [ -z "$best" ] || [ "${line%% *}" -lt "${best%% *}" ]; then best=$line; fi
    done
    [ -n "$best" ] || continue
    [ "$c" = barrier ] && b=0 || b=$bytes
    awk -v c="$c" -v b="$b" -v n="$calls" -v best="$best" \
        'BEGIN {split(best, v, " "); printf "%s %s %.0f %.0f\n", c, b, v[1] / n, v[2] / n}'
done
