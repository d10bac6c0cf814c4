#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages only, needs root for that) and builds wanmpi into
# build/. Re-running is cheap: nothing is installed twice and ninja rebuilds only what changed.
#   BUILD_DIR=dir        build somewhere else (default: build)
#   CMAKE_BUILD_TYPE=t   Release, RelWithDebInfo (default), Debug
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}

# What the build and the tests need. mpich gives MPICH's Hydra launcher, which a test uses to
# prove PMI-1 interoperability; iproute2/iputils-ping/gnuplot-nox serve wanemu and its tests;
# iptables gives a wan test a site firewall (tests/wan/wan_test.py --firewall).
pkgs=(build-essential cmake ninja-build g++ gfortran python3 pkg-config googletest libgtest-dev
      libzstd-dev libssl-dev iproute2 iputils-ping gnuplot-nox procps psmisc mpich libmpich-dev
      iptables)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "build.sh: installing ${missing[*]}"
    if [[ $(id -u) -ne 0 ]]; then
        echo "build.sh: run as root (or install these packages): ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -f $build/build.ninja ]]; then
    cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}"
fi
ninja -C "$build" -j"$(nproc)"
