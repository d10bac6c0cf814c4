#!/usr/bin/env bash
# compare-coll.sh: collective latency, wanmpi side by side with Debian's MPICH and Open MPI.
#
# Runs bench/coll_bench.c (standard MPI; built here with each MPI's own mpicc) for MPI_Barrier,
# MPI_Bcast, MPI_Allreduce, MPI_Alltoall and MPI_Allgather at 2 and 4 ranks on this machine,
# message sizes 8 B .. 1 MiB (alltoall/allgather: bytes per rank), and prints the median latency
# of each MPI with the ratio wanmpi / (faster of MPICH and Open MPI).
#
# Fairness: the three MPIs run in the same invocation, interleaved (the order rotates every
# repetition), so they see the same machine load. Each run reports per size the median over
# its samples (coll_bench.c explains the sampling); with -r R repetitions the table shows, per
# MPI and size, the lowest of the R medians, so one disturbed run does not decide a row.
#
# Criteria: at 4 ranks, Allreduce, Bcast and Alltoall within 1.5x of the faster of MPICH and
# Open MPI for every size (issue 3); at 2 ranks, Barrier, Allreduce, Alltoall and Allgather of
# 8-64 B within 1.2x of Open MPI (issue 16; column "vs Open MPI"). Those rows say PASS or FAIL;
# other rows are informational.
#
# First calls (issue 16): -f also runs bench/first_calls.c (the first 2,000 calls of an 8 B
# collective right after MPI_Init, timed one by one) with each MPI, same interleaving, and prints
# per MPI the cost of the very first call, the sum of the first 100 and the steady median.
#
# Usage: bench/compare-coll.sh [-b BUILD_DIR] [-n "2 4"] [-c "barrier bcast ..."] [-r REPS]
#                              [-t SECONDS_PER_SIZE] [-M MAX_BYTES] [-o OUT_DIR] [-f] [--strict]
#   -b  wanmpi build tree with bin/mpicc and bin/mpirun (default: build next to this script)
#   -f  also the first-calls table (see above); -M 0 skips the latency table
#   --strict  exit 1 if any criterion row FAILs (default: exit 0, the table is the result)
# Environment: MPICH_UCX_TLS sets UCX_TLS for MPICH (e.g. self,sm,tcp) if its default fails.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build"
nps="2 4"
colls="barrier bcast allreduce alltoall allgather"
reps=3
secs=0.25
max=1048576
out=""
strict=0
first=0
while [ $# -gt 0 ]; do
    case "$1" in
    -b) build=$2; shift 2 ;;
    -n) nps=$2; shift 2 ;;
    -c) colls=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -t) secs=$2; shift 2 ;;
    -M) max=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -f) first=1; shift ;;
    --strict) strict=1; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "compare-coll.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" 2>/dev/null && pwd) || { echo "compare-coll.sh: no build tree at $build" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/compare-coll.XXXXXX)
mkdir -p "$out"
src="$here/coll_bench.c"

# ---- build the benchmark with each MPI --------------------------------------------------------
mpis=""
if [ -x "$build/bin/mpicc" ] && [ -x "$build/bin/mpirun" ]; then
    if "$build/bin/mpicc" -O2 -o "$out/coll_bench.wanmpi" "$src" 2>"$out/build.wanmpi.log"; then
        mpis="$mpis wanmpi"
    else
        echo "compare-coll.sh: building with wanmpi failed (see $out/build.wanmpi.log)" >&2
    fi
else
    echo "compare-coll.sh: $build/bin/mpicc or mpirun missing (ninja -C $build wanmpi mpirun mpicc)" >&2
fi
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
    mpicc.mpich -O2 -o "$out/coll_bench.mpich" "$src" 2>"$out/build.mpich.log" && mpis="$mpis mpich"
fi
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
    mpicc.openmpi -O2 -o "$out/coll_bench.openmpi" "$src" 2>"$out/build.openmpi.log" &&
        mpis="$mpis openmpi"
fi
if [ "$first" = 1 ]; then
    for m in $mpis; do
        case $m in
        wanmpi) cc="$build/bin/mpicc" ;;
        mpich) cc=mpicc.mpich ;;
        openmpi) cc=mpicc.openmpi ;;
        esac
        "$cc" -O2 -o "$out/first_calls.$m" "$here/first_calls.c" 2>>"$out/build.$m.log" ||
            echo "compare-coll.sh: building first_calls with $m failed" >&2
    done
fi
case " $mpis " in *" wanmpi "*) ;; *) echo "compare-coll.sh: nothing to compare without wanmpi" >&2; exit 2 ;; esac
nm0=$(echo $mpis | wc -w)

run() {  # run MPI NP COLL -> coll_bench lines on stdout (PROG ARGS...: another program)
    local mpi=$1 np=$2 coll=$3
    shift 3
    local prog=coll_bench args=(-c "$coll" -m 8 -M "$max" -t "$secs" -q)
    if [ $# -gt 0 ]; then prog=$1; shift; args=("$@"); fi
    case $mpi in
    wanmpi) timeout 600 "$build/bin/mpirun" -n "$np" --timeout 580 "$out/$prog.wanmpi" "${args[@]}" ;;
    mpich)
        if [ -n "${MPICH_UCX_TLS:-}" ]; then export UCX_TLS=$MPICH_UCX_TLS; fi
        timeout 600 mpiexec.mpich -n "$np" "$out/$prog.mpich" "${args[@]}" ;;
    openmpi)
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            timeout 600 mpirun.openmpi --oversubscribe -n "$np" "$out/$prog.openmpi" "${args[@]}" ;;
    esac
}

# ---- first calls, interleaved (-f) ----------------------------------------------------------------
if [ "$first" = 1 ]; then
    fres="$out/first.txt"  # mpi np coll first_call_us first100_us steady_median_us
    : >"$fres"
    for rep in $(seq 1 "$reps"); do
        for np in $nps; do
            for coll in $colls; do
                set -- $mpis
                shift_by=$(( (rep - 1) % nm0 ))
                order="${*:$((shift_by + 1))} ${*:1:$shift_by}"
                for mpi in $order; do
                    f="$out/first.$mpi.$np.$coll.$rep.txt"
                    run "$mpi" "$np" "$coll" first_calls -c "$coll" -b 8 -n 2000 -w 100 >"$f" 2>&1 &&
                        awk -v m="$mpi" -v n="$np" -v c="$coll" '
                            $1 == "first_call" { a = $2 } $1 == "total_first_100" { b = $2 }
                            $1 == "steady_median" { d = $2 }
                            END { if (d != "") print m, n, c, a, b, d }' "$f" >>"$fres"
                done
            done
        done
    done
    echo "| coll | ranks | MPI | first call (us) | sum of first 100 (us) | steady median (us) |"
    echo "|---|---|---|---|---|---|"
    sort -k2,2n -k3,3 -k1,1 "$fres" | awk '
        { k = $3 SUBSEP $2 SUBSEP $1; n[k]++; a[k, n[k]] = $4; b[k, n[k]] = $5; d[k, n[k]] = $6
          if (!(k in seen)) { seen[k] = 1; order[++nk] = k } }
        function med(arr, k, c,   i, j, v, t) { for (i = 1; i <= c; i++) v[i] = arr[k, i]
            for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
            return v[int((c + 1) / 2)] }
        END { for (j = 1; j <= nk; j++) { split(order[j], f, SUBSEP); k = order[j]
            printf "| %s | %s | %s | %.1f | %.1f | %.2f |\n", f[1], f[2], f[3], med(a, k, n[k]), med(b, k, n[k]), med(d, k, n[k]) } }' |
        tee "$out/first.md"
    echo "(medians over $reps runs)"
    [ "$max" = 0 ] && exit 0
fi

# ---- measure, interleaved -----------------------------------------------------------------------
results="$out/results.txt"  # mpi np coll bytes median_us
: >"$results"
set -- $mpis
nm=$#
echo "# compare-coll: MPIs:$mpis; ranks: $nps; repetitions: $reps; $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for rep in $(seq 1 "$reps"); do
    for np in $nps; do
        for coll in $colls; do
            set -- $mpis
            # rotate the order by repetition
            shift_by=$(( (rep - 1) % nm ))
            order="${*:$((shift_by + 1))} ${*:1:$shift_by}"
            for mpi in $order; do
                printf '  rep %d: %-8s np=%d %-10s ... ' "$rep" "$mpi" "$np" "$coll" >&2
                t0=$(date +%s.%N)
                if run "$mpi" "$np" "$coll" >"$out/run.$mpi.$np.$coll.$rep.txt" 2>&1; then
                    awk -v m="$mpi" -v n="$np" -v c="$coll" \
                        '$1 == c && NF >= 5 { print m, n, c, $2, $3 }' \
                        "$out/run.$mpi.$np.$coll.$rep.txt" >>"$results"
                    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "done in %.1fs\n", b - a }' >&2
                else
                    echo "FAILED (see $out/run.$mpi.$np.$coll.$rep.txt)" >&2
                fi
            done
        done
    done
done

# ---- table --------------------------------------------------------------------------------------
table="$out/compare-coll.md"
awk -v mpis="$mpis" -v crit="allreduce bcast alltoall" -v crit2="barrier allreduce alltoall allgather" '
function fmt(v) { return v == "" ? "n/a" : sprintf("%.2f", v) }
BEGIN {
    n = split(mpis, M, " ")
    split(crit, C, " "); for (i in C) iscrit[C[i]] = 1
    split(crit2, C, " "); for (i in C) iscrit2[C[i]] = 1
}
{
    k = $2 SUBSEP $3 SUBSEP $4
    key = $1 SUBSEP k
    if (!(key in best) || $5 < best[key]) best[key] = $5
    if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
}
END {
    printf "| coll | ranks | bytes |"
    for (i = 1; i <= n; i++) printf " %s (us) |", M[i]
    printf " ratio | vs Open MPI | verdict |\n|---|---|---|"
    for (i = 1; i <= n; i++) printf "---|"
    printf "---|---|---|\n"
    pass = fail = pass2 = fail2 = 0
    for (j = 1; j <= nk; j++) {
        split(order[j], f, SUBSEP)
        w = best["wanmpi" SUBSEP order[j]]
        other = ""
        for (i = 1; i <= n; i++)
            if (M[i] != "wanmpi") {
                v = best[M[i] SUBSEP order[j]]
                if (v != "" && (other == "" || v + 0 < other + 0)) other = v
            }
        ratio = (w != "" && other != "" && other > 0) ? w / other : ""
        o = best["openmpi" SUBSEP order[j]]
        ratio_o = (w != "" && o != "" && o > 0) ? w / o : ""
        verdict = "-"
        if (f[1] == 4 && (f[2] in iscrit)) {
            if (ratio == "") verdict = "n/a"
            else if (ratio <= 1.5) { verdict = "PASS"; pass++ }
            else { verdict = "FAIL"; fail++ }
        }
        if (f[1] == 2 && (f[2] in iscrit2) && f[3] + 0 <= 64) {
            if (ratio_o == "") verdict = "n/a"
            else if (ratio_o <= 1.2) { verdict = "PASS"; pass2++ }
            else { verdict = "FAIL"; fail2++ }
        }
        printf "| %s | %s | %s |", f[2], f[1], f[3]
        for (i = 1; i <= n; i++) printf " %s |", fmt(best[M[i] SUBSEP order[j]])
        printf " %s | %s | %s |\n", ratio == "" ? "n/a" : sprintf("%.2f", ratio),
               ratio_o == "" ? "n/a" : sprintf("%.2f", ratio_o), verdict
    }
    printf "\nCriterion (4 ranks; allreduce, bcast, alltoall; wanmpi <= 1.5x the faster other MPI): %d PASS, %d FAIL\n", pass, fail
    printf "Criterion (2 ranks; barrier, allreduce, alltoall, allgather, 8-64 B; wanmpi <= 1.2x Open MPI): %d PASS, %d FAIL\n", pass2, fail2
}' < <(sort -k2,2n -k3,3 -k4,4n "$results") | tee "$table"
echo "(raw runs and this table: $out)" >&2
if [ "$strict" = 1 ] && grep -q '| FAIL |' "$table"; then exit 1; fi
exit 0
