#!/usr/bin/env bash
# Installs edgeattn's build dependencies (Debian/Ubuntu) and builds the Release preset.
# Safe to run again: it installs only the packages that are missing and rebuilds only what changed.
#
# usage: scripts/setup.sh [--asan] [--no-build]
#   --asan      also build the AddressSanitizer + UBSan preset (build/asan)
#   --no-build  only install the dependencies
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_asan=0
build=1
for arg in "$@"; do
  case "$arg" in
    --asan) build_asan=1 ;;
    --no-build) build=0 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (valid: --asan, --no-build, --help)" >&2; exit 2 ;;
  esac
done

# OpenBLAS: the pthread build, which edgeattn pins to one thread per oneTBB task (see
# cmake/FindEdgeattnBLAS.cmake: Debian's serial build is not thread-safe).
packages=(build-essential cmake ninja-build pkg-config libtbb-dev libsuitesparse-dev libgraphblas-dev
          libboost-graph-dev libopenblas-dev libgtest-dev libgmock-dev libbenchmark-dev
          zlib1g-dev clang libclang-rt-dev python3 python3-venv python3-dev python3-numpy python3-scipy python3-pytest python3-torch)

installed() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }

if command -v dpkg >/dev/null && command -v apt-get >/dev/null; then
  missing=()
  for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
      sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "setup: all ${#packages[@]} packages already installed"
  fi
else
  echo "setup: not a Debian-like system; install the equivalents of: ${packages[*]}" >&2
fi

if ((build)); then
  scripts/build.sh release
  if ((build_asan)); then scripts/build.sh asan; fi
fi
