#!/usr/bin/env bash
# Builds wanmpi (installing what is missing) and runs the whole test suite with ctest.
# Extra arguments go to ctest, e.g.  scripts/test.sh -L unit   or   scripts/test.sh -R send
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/build.sh"
build=${BUILD_DIR:-$top/build}
cd "$build"
# -j2: this is a 2-core machine; tests that must not overlap (emulated networks) are RUN_SERIAL.
ctest --output-on-failure --timeout 600 -j"${CTEST_JOBS:-2}" "$@"
