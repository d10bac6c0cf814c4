#!/usr/bin/env bash
# Instructions per iteration of OSU's one-sided latency loops on an MPI_Win_allocate window (2
# ranks on this host; bench/rma_instr.c), counted by callgrind on rank 0, for wanmpi and, where
# installed, Debian's Open MPI and MPICH. Instruction counts do not depend on the machine's load,
# unlike the latencies of bench/compare-onesided.sh, so they are the evidence for per-call costs
# on a shared machine (they do not show the cost of atomic instructions and memory barriers,
# which the latencies do). Needs valgrind. Takes 1-3 minutes per MPI.
#
#   bench/count-onesided.sh [--build BUILD] [--out FILE]   (MPIS="wanmpi openmpi mpich" to choose)
#   WINDOW=create counts the loops on an MPI_Win_create window instead (user memory: accumulates,
#   fetch-and-ops and compare-and-swaps are messages the target applies, so rank 0's counts
#   include its polling while it waits for the replies: compare them with care).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build; out=""
while (($#)); do
    case $1 in
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--build BUILD] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done
command -v valgrind >/dev/null || { echo "$0: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d /tmp/wanmpi-rmainstr.XXXXXX)
trap 'rm -rf "$work"' EXIT
# rank 0 under callgrind (PMI_RANK: wanmpi and MPICH's Hydra; OMPI_COMM_WORLD_RANK: Open MPI)
cat > "$work/vg.sh" <<'VG'
#!/bin/sh
r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
[ "$r" = 0 ] && exec valgrind --tool=callgrind --callgrind-out-file="$CGOUT" "$@" 2>/dev/null
exec "$@"
VG
chmod +x "$work/vg.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
declare -A cc=([wanmpi]=$build/bin/mpicc [openmpi]=mpicc.openmpi [mpich]=mpicc.mpich)
declare -A run=([wanmpi]="$build/bin/mpirun -n 2 --timeout 900"
                [openmpi]="timeout 900 mpirun.openmpi -n 2 --oversubscribe"
                [mpich]="timeout 900 mpirun.mpich -n 2")
read -r -a mpis <<< "${MPIS:-wanmpi openmpi mpich}"
done_mpis=()
for m in "${mpis[@]}"; do
    command -v "${cc[$m]}" >/dev/null || continue
    "${cc[$m]}" -O2 -g -o "$work/$m" "$top/bench/rma_instr.c" || continue
    CGOUT=$work/$m.cg ${run[$m]} "$work/vg.sh" "$work/$m" ${WINDOW:-allocate} > "$work/$m.log" 2>&1
    [[ -s $work/$m.cg ]] || { echo "# $m: no callgrind output (see its log)"; continue; }
    # inclusive cost of each loop function / 20000 iterations
    callgrind_annotate --inclusive=yes "$work/$m.cg" 2>/dev/null |
        awk '/rma_instr.c:[a-z_]+ \[/ { gsub(",", "", $1); split($0, a, "rma_instr.c:"); n = a[2];
             sub(/ .*/, "", n); if (n != "main") printf "%s %.0f\n", n, $1 / 20000 }' |
        sort -u > "$work/$m.txt"
    done_mpis+=("$m")
done
{
    echo "# instructions per iteration, rank 0 (callgrind), ${WINDOW:-allocate} window; $(date -u +%F) build=$build"
    printf '%-18s' loop; for m in "${done_mpis[@]}"; do printf '%10s' "$m"; done; echo
    cut -d' ' -f1 "$work/${done_mpis[0]}.txt" | while read -r l; do
        printf '%-18s' "$l"
        for m in "${done_mpis[@]}"; do
            printf '%10s' "$(awk -v l="$l" '$1 == l { print $2 }' "$work/$m.txt")"
        done
        echo
    done
} | tee ${out:+"$out"}
