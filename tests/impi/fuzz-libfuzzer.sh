#!/usr/bin/env bash
# fuzz-libfuzzer.sh: the IMPI fuzz targets of impi_fuzz.cpp under libFuzzer with AddressSanitizer
# and UBSan (clang). The ctest driver (impi_fuzz_test) runs fixed-seed mutations for a few seconds;
# this runs coverage-guided fuzzing for as long as you like.
#
#   tests/impi/fuzz-libfuzzer.sh [SECONDS] [WORKDIR]      (default 60 s, WORKDIR a temp dir)
#
# Builds WORKDIR/impi_fuzz (byte 0 of an input picks the target: 0 collate, 1 impi-server's
# command stream, 2 the agent's reply stream, 3 the host packet stream, 4 impi-relay's trunk
# codecs, 5 its packet check and rewrite, 6 its label rewriting), seeds WORKDIR/corpus
# with one valid input per target, and runs. Exit status 0: no crash, no sanitizer report, no
# hang (-timeout=20 per input); otherwise libFuzzer's, with the crashing input in WORKDIR.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
work=${2:-$(mktemp -d /tmp/impi-fuzz.XXXXXX)}
command -v clang++ >/dev/null || { echo "fuzz-libfuzzer.sh: clang++ is not installed" >&2; exit 77; }
mkdir -p "$work/corpus"
srcs=("$top/tests/impi/impi_fuzz.cpp" "$top"/src/runtime/impi_{wire,tables,agent,dance,startup,server,relay_map}.cpp
      "$top/src/runtime/event_loop.cpp" "$top"/src/base/*.cpp)
# -fno-sanitize=alignment: event_loop.cpp binds a reference to epoll_event.data.u64, which
# x86-64's packed epoll_event leaves misaligned (harmless there; reported to the runtime owner).
echo "building $work/impi_fuzz with clang++ -fsanitize=fuzzer,address,undefined"
clang++ -std=c++20 -O1 -g -DWANMPI_LIBFUZZER -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -fno-sanitize=alignment,nonnull-attribute -I"$top/src" "${srcs[@]}" -lpthread -o "$work/impi_fuzz"
# Seeds: a minimal valid-looking input per target (libFuzzer mutates from there).
printf '\000\001' >"$work/corpus/collate"
printf '\001\001AUTH\000\000\000\004\000\000\000\001IMPI\000\000\000\004\000\000\000\000DONE\000\000\000\000FINI\000\000\000\000' \
    >"$work/corpus/server"
printf '\002\000\000\000\000\000\000\000\000IMPI\000\000\000\004\000\000\000\002' >"$work/corpus/agent"
head -c 129 /dev/zero >"$work/corpus/packets" && printf '\003' | dd of="$work/corpus/packets" conv=notrunc 2>/dev/null
cd "$work"
WANMPI_LOG_LEVEL=0 ./impi_fuzz -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 corpus
