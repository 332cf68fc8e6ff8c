#!/usr/bin/env bash
# Installs edgeattn's dependencies (Debian/Ubuntu) and builds the Release preset.
# Safe to run again: it installs only the packages that are missing and rebuilds only what changed.
#
# usage: scripts/setup.sh [--for demo|test] [--asan] [--no-build]
#   --for demo  the C++ build only: compiler, CMake, Ninja and the libraries (`./run demo`);
#               builds just the edgeattn tool
#   --for test  also clang (fuzzing) and the Python stack of the bindings' tests, PyTorch included
#               (`./run test`; the default); builds everything
#   --asan      also build the AddressSanitizer + UBSan preset (build/asan)
#   --no-build  only install the dependencies
# apt's output goes to build/setup-apt.log; the terminal gets one line (and the log's tail on failure).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

purpose=test
build_asan=0
build=1
while (($#)); do
  case "$1" in
    --for)
      (($# >= 2)) || { echo "setup.sh: --for needs a value (demo or test)" >&2; exit 2; }
      purpose=$2
      shift
      ;;
    --for=*) purpose=${1#--for=} ;;
    --asan) build_asan=1 ;;
    --no-build) build=0 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (valid: --for demo|test, --asan, --no-build, --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$purpose" in
  demo|test) ;;
  *) echo "setup.sh: --for is '$purpose': expected demo or test" >&2; exit 2 ;;
esac

# What the C++ library, the tool and the test executables need to configure and build.
# OpenBLAS: the pthread build, which edgeattn pins to one thread per oneTBB task (see
# cmake/FindEdgeattnBLAS.cmake: Debian's serial build is not thread-safe). libcurl and libarchive:
# downloading datasets by name (lib/data/download.cpp, lib/data/archive.cpp). nlohmann-json:
# the GraphSAGE-layout JSON of PPI (lib/data/graphsage.cpp).
build_packages=(build-essential cmake ninja-build pkg-config libtbb-dev libsuitesparse-dev libgraphblas-dev
                libboost-graph-dev libopenblas-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
                libcurl4-openssl-dev libarchive-dev nlohmann-json3-dev)
# What only `./run test` needs: clang for the libFuzzer targets, and the Python stack of the
# bindings' tests (PyTorch is the reference the bindings are compared with).
# Open MPI and METIS: the optional distributed training (dist/) and its mpirun tests (label mpi).
test_packages=(clang libclang-rt-dev python3 python3-venv python3-dev python3-numpy python3-scipy python3-pytest
               python3-torch libopenmpi-dev openmpi-bin libmetis-dev)

packages=("${build_packages[@]}")
if [ "$purpose" = test ]; then packages+=("${test_packages[@]}"); fi

installed() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }

if command -v dpkg >/dev/null && command -v apt-get >/dev/null; then
  missing=()
  for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
  if ((${#missing[@]})); then
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
      sudo=(sudo)
      sudo -v  # asks for the password now, before the output goes to the log
    fi
    mkdir -p build
    log=build/setup-apt.log
    started=$SECONDS
    printf 'setup: installing %d package%s (%s; log: %s)... ' "${#missing[@]}" "$( ((${#missing[@]} == 1)) || echo s)" "${missing[*]}" "$log"
    if {
      echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC'): apt-get install ${missing[*]}"
      "${sudo[@]}" apt-get update &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
    } >"$log" 2>&1 </dev/null; then
      echo "done in $((SECONDS - started)) s"
    else
      echo "FAILED after $((SECONDS - started)) s; the end of $log:"
      tail -n 30 "$log" | sed 's/^/  | /'
      exit 1
    fi
  else
    echo "setup: all ${#packages[@]} packages for '$purpose' already installed"
  fi
else
  echo "setup: not a Debian-like system; install the equivalents of: ${packages[*]}" >&2
fi

if ((build)); then
  if [ "$purpose" = demo ]; then
    scripts/build.sh release --target edgeattn_tool
  else
    scripts/build.sh release
  fi
  if ((build_asan)); then scripts/build.sh asan; fi
fi
