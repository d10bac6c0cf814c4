#!/usr/bin/env bash
# OSU one-sided benchmarks (OSU Micro-Benchmarks 7.x, c/mpi/one-sided) with wanmpi, Debian's MPICH
# and Open MPI, side by side in one run, 2 ranks on this host, with every window creation option
# (create, allocate, dynamic) and every synchronization option (pscw, fence, lock, flush,
# flush_local, lock_all). The OSU sources are not part of wanmpi: pass a checkout.
#
#   bench/compare-onesided.sh --osu DIR [--build BUILD] [--quick] [--out FILE]
#   (ITERS=n, BW_ITERS=n: iterations per latency / bandwidth run; defaults 2000 / 100, --quick 300 / 20)
#   (BENCHES, WINDOWS, SYNCS, MPIS: space-separated subsets, to repeat noisy lines; REPEAT=n runs
#    each MPI n times per line, the MPIs taking turns, and keeps its best number, or with
#    STAT=median the median: on a shared machine the median of 7-10 alternating runs is steadier)
#
# Prints one line per (benchmark, window, sync): the latency of SIZE-byte operations in us (the
# bandwidth benchmarks: MB/s at BW_SIZE bytes; fop and cas: one element of MPI_CHAR, their only
# size) for each MPI, and wanmpi / best-of-the-others
# (latency; < 1 is faster). "fail" = the run did not finish or printed no number. The target of
# issue 15 (shm latency within 1.5x of the faster of MPICH and Open MPI) is checked on the
# default options of each latency benchmark (allocate + flush) and reported at the end.
# Run it on a quiet machine: it prints the load average before and after.
# Known OSU 7.4 bug: osu_fop_latency / osu_cas_latency with "-w allocate" free() the memory that
# MPI_Win_allocate returned, after printing their result; every MPI then dies with SIGSEGV at
# exit. The number is still taken (the script reads the output, not the exit status).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
osu=""; build=$top/build; quick=0; out=""
while (($#)); do
    case $1 in
    --osu) osu=$2; shift ;;
    --build) build=$2; shift ;;
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 --osu DIR [--build BUILD] [--quick] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done
[[ -d $osu/c/mpi/one-sided ]] || { echo "--osu DIR: an OSU 7.x source tree (c/mpi/one-sided)" >&2; exit 2; }
SIZE=${SIZE:-8}
BW_SIZE=${BW_SIZE:-65536}
iters=${ITERS:-2000}; bw_iters=${BW_ITERS:-100}
((quick)) && { iters=300; bw_iters=20; }
work=$(mktemp -d /tmp/wanmpi-osu.XXXXXX)
trap 'rm -rf "$work"' EXIT
all_benches=(osu_put_latency osu_get_latency osu_acc_latency osu_fop_latency osu_cas_latency
             osu_put_bw osu_get_bw)
read -r -a benches <<< "${BENCHES:-${all_benches[*]}}"
read -r -a windows <<< "${WINDOWS:-allocate create dynamic}"
read -r -a syncs <<< "${SYNCS:-flush lock lock_all fence pscw flush_local}"
repeat=${REPEAT:-1}
stat=${STAT:-best}
[[ $stat == best || $stat == median ]] || { echo "STAT: best or median" >&2; exit 2; }

build_osu() {  # $1 = mpicc, $2 = output dir
    local cc=$1 dir=$2 u=$osu/c/util
    mkdir -p "$dir"
    for f in osu_util osu_util_mpi osu_util_validation osu_util_graph osu_util_papi; do
        "$cc" -O2 -w -I"$u" -c "$u/$f.c" -o "$dir/$f.o" || return 1
    done
    for b in "${all_benches[@]}"; do
        "$cc" -O2 -w -I"$u" -o "$dir/$b" "$osu/c/mpi/one-sided/$b.c" "$dir"/osu_util*.o -lm \
            -lpthread || return 1
    done
}

declare -A run_cmd
if build_osu "$build/bin/mpicc" "$work/wanmpi" >/dev/null 2>&1; then
    run_cmd[wanmpi]="$build/bin/mpirun -n 2 --timeout 120"
fi
if command -v mpicc.mpich >/dev/null && build_osu mpicc.mpich "$work/mpich" >/dev/null 2>&1; then
    run_cmd[mpich]="timeout 120 mpirun.mpich -n 2"
fi
if command -v mpicc.openmpi >/dev/null && build_osu mpicc.openmpi "$work/openmpi" >/dev/null 2>&1; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    run_cmd[openmpi]="timeout 120 mpirun.openmpi -n 2 --oversubscribe"
fi
read -r -a mpis <<< "${MPIS:-wanmpi mpich openmpi}"

# One run; prints the number for the size asked, or "fail".
one_run() {  # mpi bench win sync
    local mpi=$1 b=$2 w=$3 s=$4 sz=$SIZE it=$iters
    [[ $b == *_bw ]] && { sz=$BW_SIZE; it=$bw_iters; }
    local v
    v=$(${run_cmd[$mpi]} "$work/$mpi/$b" -w "$w" -s "$s" -m "$sz:$sz" -i "$it" -x $((it / 10)) \
            2>/dev/null | awk '$1 ~ /^[0-9]+$/ && NF == 2 { v = $2 } END { print v }')
    echo "${v:-fail}"
}
# One number from a line's runs of one MPI (bench, then the values): the best (lowest latency,
# highest bandwidth) or the median of those that finished; "fail" if none did.
pick() {
    local b=$1; shift
    printf '%s\n' "$@" | grep -v '^fail$' | sort -g | awk -v stat="$stat" -v bw="${b##*_}" '
        { v[NR] = $1 }
        END { if (NR == 0) { print "fail"; exit }
              if (stat == "median") printf "%.2f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              else print (bw == "bw" ? v[NR] : v[1]) }'
}

{
echo "# load before: $(uptime)"
echo "# ITERS=$iters BW_ITERS=$bw_iters REPEAT=$repeat STAT=$stat build=$build"
printf "%-16s %-9s %-12s %10s %10s %10s %8s\n" bench window sync wanmpi mpich openmpi ratio
fails=0; target_ok=1
for b in "${benches[@]}"; do
    for w in "${windows[@]}"; do
        for s in "${syncs[@]}"; do
            declare -A r=() vals=()
            for ((i = 0; i < repeat; i++)); do
                for m in "${mpis[@]}"; do
                    [[ -n ${run_cmd[$m]:-} ]] && vals[$m]+="$(one_run "$m" "$b" "$w" "$s") "
                done
            done
            for m in "${mpis[@]}"; do
                if [[ -n ${run_cmd[$m]:-} ]]; then r[$m]=$(pick "$b" ${vals[$m]}); else r[$m]=n/a; fi
            done
            ratio=$(awk -v a="${r[wanmpi]:-n/a}" -v b="${r[mpich]:-n/a}" -v c="${r[openmpi]:-n/a}" -v bw="${b##*_}" '
                function num(x) { return x ~ /^[0-9.]+$/ }
                BEGIN { best = "";
                        if (num(b)) best = b;
                        if (num(c) && (best == "" || (bw == "bw" ? c > best : c < best))) best = c;
                        if (!num(a) || best == "" || best == 0) { print "-"; exit }
                        printf "%.2f", (bw == "bw") ? best / a : a / best }')
            [[ ${r[wanmpi]:-n/a} == fail ]] && fails=$((fails + 1))
            if [[ $w == allocate && $s == flush && $b == *_latency && $ratio != - ]]; then
                awk -v x="$ratio" 'BEGIN { exit !(x > 1.5) }' && target_ok=0
            fi
            printf "%-16s %-9s %-12s %10s %10s %10s %8s\n" "$b" "$w" "$s" "${r[wanmpi]:-n/a}" \
                "${r[mpich]:-n/a}" "${r[openmpi]:-n/a}" "$ratio"
        done
    done
done
echo "# ratio: wanmpi / best other (latency), best other / wanmpi (bandwidth); < 1 = wanmpi faster"
echo "# wanmpi runs that failed: $fails"
echo "# target (allocate+flush latency within 1.5x of the faster of MPICH/Open MPI): $([[ $target_ok == 1 ]] && echo met || echo NOT met)"
echo "# load after: $(uptime)"
} | if [[ -n $out ]]; then tee "$out"; else cat; fi
