#!/usr/bin/env bash
# wanmpi's main job, for now on one cluster: build, compile an MPI program with mpicc and run it
# on 4 ranks with mpirun, once over shared memory and once with every message over TCP.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/build.sh" >/dev/null
bin=${BUILD_DIR:-$top/build}/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== compiling examples/ring.c with wanmpi's mpicc:"
"$bin/mpicc" -show -O2 -o "$work/ring" "$top/examples/ring.c"
"$bin/mpicc" -O2 -o "$work/ring" "$top/examples/ring.c"
echo
echo "== mpirun -n 4 ring   (ranks on one host talk through shared memory)"
"$bin/mpirun" -n 4 "$work/ring"
echo
echo "== WANMPI_TRANSPORTS=self,tcp mpirun -n 4 ring   (every message over TCP)"
WANMPI_TRANSPORTS=self,tcp "$bin/mpirun" -n 4 "$work/ring"
