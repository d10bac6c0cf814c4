#!/usr/bin/env bash
# wanmpi's main job: builds, then runs ONE MPI job over two emulated clusters 10 ms apart
# (wanemu sites, 200 Mbit/s) and prints what it measured: inter-cluster ping-pong latency next to
# plain TCP on the same link, a 64 MiB transfer next to the link rate (compression off; then the
# same transfer compressed), and collectives next to the one-way delay. Needs root (network namespaces); as non-root it runs the old one-cluster demo.
#   scripts/demo.sh [--quick]        (BUILD_DIR=dir to use another build tree)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
quick=0
[ "${1:-}" = "--quick" ] && quick=1
BUILD_DIR=$build "$top/scripts/build.sh" >/dev/null
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "$(id -u)" != 0 ]; then
    echo "== not root: no emulated sites (wanemu needs network namespaces); one cluster instead"
    "$bin/mpicc" -O2 -o "$work/ring" "$top/examples/ring.c"
    "$bin/mpirun" -n 4 "$work/ring"
    exit 0
fi

echo "== compiling bench/wan_bench.c with wanmpi's mpicc:"
"$bin/mpicc" -show -O2 -o "$work/wan_bench" "$top/bench/wan_bench.c"
"$bin/mpicc" -O2 -o "$work/wan_bench" "$top/bench/wan_bench.c"
cc -O2 -o "$work/tcp_pingpong" "$top/bench/wan_tcp_pingpong.c"

run=demo$$
echo
echo "== wanemu up: two clusters (c0h0, c1h0), one-way delay 10 ms, 200 Mbit/s"
"$bin/wanemu" up --name "$run" --clusters 2 --hosts 1 --delay 10ms --rate 200mbit \
    --watch-pid $$ --quiet
trap '"$bin/wanemu" down --name "$run" >/dev/null 2>&1; rm -rf "$work"' EXIT
export WANEMU_RUN=$run  # other runs may be up: every `wanemu exec` below means this one

echo
echo "== plain TCP ping-pong c0h0 <-> c1h0 on the same link (the floor):"
"$bin/wanemu" exec c1h0 -- timeout 60 "$work/tcp_pingpong" server -p 5599 >/dev/null &
"$bin/wanemu" exec c0h0 -- "$work/tcp_pingpong" client c1h0:5599 -n 50 | tee "$work/tcp.out"
wait

if [ $quick = 1 ]; then args=(-l 30 -B 16 -r 1 -s 5); else args=(-l 100 -B 64 -r 2 -s 9); fi
# wan_bench's buffers are constant bytes, which compression (WANMPI_WAN_COMPRESS=auto, the
# default) sends as almost nothing: the link measurements run with it off, as bench/ does, and
# one more transfer shows what it does to such data.
sites=("$top/tools/wanmpi-sites/wanmpi-sites" --bin "$bin" --run "$run" --timeout 300)
plain=(-x WANMPI_WAN_COMPRESS=off)
echo
echo "== one MPI job over both clusters, 1 rank each: impi-server on c0h0, then"
echo "   mpirun -client 0 on c0h0 and mpirun -client 1 on c1h0 (tools/wanmpi-sites does the three steps):"
"${sites[@]}" "${plain[@]}" -n 1 -- "$work/wan_bench" "${args[@]}" -t lat,bulk | tee "$work/p2p.out"
echo
echo "== collectives, 2 clusters x 2 ranks (one-way delay d = 10 ms):"
"${sites[@]}" "${plain[@]}" -n 2 -- "$work/wan_bench" "${args[@]}" \
    -t barrier,bcast1k,bcast1m,allreduce8,allreduce1m,alltoall64k | tee "$work/coll.out"
echo
echo "== the same transfer with compression on its default (WANMPI_WAN_COMPRESS=auto):"
"${sites[@]}" -n 1 -- "$work/wan_bench" "${args[@]}" -t bulk | sed 's/^bulk_mbit/zbulk_mbit/' |
    tee "$work/z.out"
echo
echo "== what it measured (link: 10 ms one way, 200 Mbit/s):"
cat "$work/tcp.out" "$work/p2p.out" "$work/coll.out" "$work/z.out" | awk '
    $1 == "tcp_lat_us" { tcp = $2 }  $1 == "lat_us" { lat = $2 }  $1 == "bulk_mbit" { bw = $2 }
    $1 == "zbulk_mbit" { zbw = $2 }
    $1 ~ /_ms$/ && $1 !~ /^bulk/ { n = $1; sub(/_ms$/, "", n); c[n] = $2; order[++k] = n }
    END {
        if (tcp && lat) printf "  1-byte latency, half round trip: %.2f ms (plain TCP %.2f ms, %+.1f %%)\n", lat / 1000, tcp / 1000, 100 * (lat - tcp) / tcp
        if (bw) printf "  one large MPI_Send: %.1f Mbit/s = %.1f %% of the link (compression off)\n", bw, bw / 2
        if (zbw) printf "  the same, compressed (constant bytes): %.1f Mbit/s of user data = %.1fx the link\n", zbw, zbw / 200
        for (i = 1; i <= k; i++) printf "  %-12s %7.1f ms = %.1f one-way delays\n", order[i], c[order[i]], c[order[i]] / 10
    }'
echo
echo "== bench/compare-wan.sh puts these next to Open MPI over the same link, with lower bounds."
