#!/usr/bin/env bash
# Installs the peer libraries for bench/peers/ into three virtual environments under build/:
#
#   old     build/peers-venv   Debian's /usr/bin/python3 with --system-site-packages: Debian's
#                              python3-torch (1.13.1), numpy, scipy and matplotlib, plus PyG 2.6.1 and
#                              DGL 1.1.2 from PyPI. The suite itself runs under this interpreter (the
#                              report's plots need matplotlib).
#   torch2  build/peers-torch2 /usr/bin/python3, isolated: the newest PyTorch 2.x on PyPI (its CUDA
#                              wheels come along, ~5 GB; it runs on the CPU) with PyG 2.8.1 (and
#                              pyg-lib where PyPI has a wheel for that PyTorch, for NeighborLoader).
#   dgl2    build/peers-dgl2   /usr/bin/python3, isolated: DGL 2.1.0 (the newest DGL wheel on PyPI) with
#                              the PyTorch it was built against (2.2.1) and its pins: torchdata 0.7.1,
#                              pandas < 2.3, numpy < 2 (and pyyaml, pydantic: imported by dgl but
#                              missing from its wheel's requirements).
#
# Nothing is vendored into the repository; every step checks first and installs only what is
# missing, so re-running only checks. When an environment's install or import fails, the exact
# error goes to build/peers/<env>_error.txt (old: dgl_error.txt for DGL 1.x), the suite records that
# environment's runs as errors quoting it, and this script goes on with the next environment and
# still succeeds.
#
# Usage: bench/peers/setup.sh [--only old,torch2,dgl2]     (default: all three)
#        PEERS_ONLY=old bench/peers/setup.sh               (the same, from the environment)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE="$ROOT/build/peers"
BASE_PY=/usr/bin/python3

# --- environments to set up ---------------------------------------------------------------------
ONLY="${PEERS_ONLY:-old,torch2,dgl2}"
while (($#)); do
  case "$1" in
    --only) ONLY="${2:?--only needs a value: old, torch2, dgl2 (comma-separated)}"; shift 2 ;;
    --only=*) ONLY="${1#--only=}"; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown argument '$1' (expected --only old,torch2,dgl2)" >&2; exit 2 ;;
  esac
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }
for e in ${ONLY//,/ }; do
  case "$e" in old|torch2|dgl2) ;; *) echo "setup: unknown environment '$e' (old, torch2, dgl2)" >&2; exit 2 ;; esac
done

# --- versions -----------------------------------------------------------------------------------
PYG_VERSION="2.6.1"  # old: the newest PyG that runs on PyTorch 1.13 without compiled extras
# DGL's last PyPI wheels with a tensor adapter for PyTorch 1.13 (DGL 2.x needs torch >= 2.0). 1.1.3
# installs but refuses Debian's PyTorch at import ("DGL requires PyTorch >= 1.13.0": Debian's build
# calls itself 1.13.0a0), so 1.1.2 is tried first; the others are fallbacks.
DGL_VERSIONS=("1.1.2" "1.1.3" "1.1.1" "1.1.0")
TORCH2_SPEC="torch>=2.3,<3"  # the newest 2.x pip finds for this interpreter
PYG2_VERSION="2.8.1"
DGL2_VERSION="2.1.0"
# dgl 2.1.0's wheel does not declare everything `import dgl` needs: its graphbolt package imports
# yaml and pydantic at import time, so they are named here.
DGL2_PINS=("torch==2.2.1" "torchdata==0.7.1" "pandas<2.3" "numpy<2" "scipy" "pyyaml" "pydantic")

mkdir -p "$STATE"

# --- Debian packages ----------------------------------------------------------------------------
# The interpreter, venv, numpy and matplotlib (the suite and its report), Debian's PyTorch and scipy
# for the old environment, and SuiteSparse:GraphBLAS for `edgeattn bench graphblas` (reconfigure the
# tool's build after installing it: cmake --preset release && cmake --build build/release --target
# edgeattn_tool).
pkgs=(python3-venv python3-numpy python3-matplotlib libgraphblas-dev)
want old && pkgs+=(python3-torch python3-scipy)
missing=()
for pkg in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: apt-get install ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# make_venv DIR [--system-site-packages]: creates the venv from Debian's interpreter when missing.
make_venv() {
  local dir="$1"
  shift
  if [[ ! -x "$dir/bin/python" ]]; then
    echo "setup: creating $dir from $BASE_PY $*"
    "$BASE_PY" -m venv "$@" "$dir"
  fi
}

# pip_into PY SPEC...: pip install into the interpreter PY, quietly.
pip_into() {
  local py="$1"
  shift
  "$py" -m pip install --disable-pip-version-check --no-input -q "$@"
}

# record_error FILE TITLE OUTPUT: appends a failure to an error file.
record_error() { printf '%s:\n%s\n\n' "$2" "$3" >> "$1"; }

# --- old: Debian's PyTorch 1.13, PyG 2.6.1, DGL 1.1.2 ---------------------------------------------
setup_old() {
  local venv="$ROOT/build/peers-venv"
  make_venv "$venv" --system-site-packages
  local py="$venv/bin/python"
  "$py" -c 'import torch, numpy, scipy, matplotlib; print("setup: old: torch", torch.__version__)'

  # PyTorch Geometric: pure Python; no torch_scatter/torch_sparse (they would need a matching
  # build). Its dependencies do not include torch, so pip leaves Debian's PyTorch alone.
  if ! "$py" -c "import torch_geometric as g, sys; sys.exit(g.__version__ != '$PYG_VERSION')" 2>/dev/null; then
    echo "setup: old: pip install torch_geometric==$PYG_VERSION"
    pip_into "$py" "torch_geometric==$PYG_VERSION"
  fi
  "$py" -c 'import torch_geometric; print("setup: old: torch_geometric", torch_geometric.__version__)'

  # DGL: try the pinned versions newest first; keep the first that imports with this PyTorch.
  local dgl_ok=0 v out
  if "$py" -c 'import dgl' 2>/dev/null; then
    dgl_ok=1
  else
    : > "$STATE/dgl_error.txt"
    for v in "${DGL_VERSIONS[@]}"; do
      echo "setup: old: pip install dgl==$v"
      if ! out=$(pip_into "$py" "dgl==$v" 2>&1); then
        record_error "$STATE/dgl_error.txt" "pip install dgl==$v failed" "$out"
        continue
      fi
      if out=$("$py" -c 'import dgl, dgl.nn, dgl.ops; print(dgl.__version__)' 2>&1); then
        dgl_ok=1
        break
      fi
      record_error "$STATE/dgl_error.txt" "dgl==$v installed but \`import dgl\` failed" "$out"
      "$py" -m pip uninstall -y -q dgl >/dev/null 2>&1 || true
    done
  fi
  if ((dgl_ok)); then
    rm -f "$STATE/dgl_error.txt"
    "$py" -c 'import dgl; print("setup: old: dgl", dgl.__version__)'
  else
    echo "setup: old: DGL unavailable; the errors are in $STATE/dgl_error.txt" >&2
  fi
}

# install_checked NAME PY ERR CHECK WHAT SIZE PKG...: when the python CHECK fails in PY, pip
# installs PKG... and checks again; a failure of either step goes to ERR (quoting pip or Python)
# and returns 1 so the caller skips the rest of NAME's setup. Success removes ERR.
install_checked() {
  local name=$1 py=$2 err=$3 check=$4 what=$5 size=$6 out
  shift 6
  if ! "$py" -c "$check" 2>/dev/null; then
    echo "setup: $name: pip install $* ($size)"
    if ! out=$(pip_into "$py" "$@" 2>&1); then
      record_error "$err" "pip install $* failed" "$out"
      echo "setup: $name: install failed; the error is in $err" >&2
      return 1
    fi
    if ! out=$("$py" -c "$check" 2>&1); then
      record_error "$err" "installed, but the check ($what) failed" "$out"
      echo "setup: $name: check failed; the error is in $err" >&2
      return 1
    fi
  fi
  rm -f "$err"
}

# --- torch2: the newest PyTorch 2.x with PyG 2.8.1 -------------------------------------------------
setup_torch2() {
  local venv="$ROOT/build/peers-torch2" err="$STATE/torch2_error.txt" out
  make_venv "$venv"
  local py="$venv/bin/python"
  local check="import sys, torch, numpy, scipy, torch_geometric as g, torch.nn.functional as F
sys.exit(not (int(torch.__version__.split('.')[0]) >= 2 and hasattr(F, 'scaled_dot_product_attention')
              and g.__version__ == '$PYG2_VERSION'))"
  install_checked torch2 "$py" "$err" "$check" \
    "torch >= 2 with scaled_dot_product_attention, torch_geometric $PYG2_VERSION" "PyTorch's CUDA wheels: ~5 GB" \
    "$TORCH2_SPEC" "torch_geometric==$PYG2_VERSION" numpy scipy || return 0
  "$py" -c 'import torch, torch_geometric; print("setup: torch2: torch", torch.__version__, "torch_geometric", torch_geometric.__version__)'

  # pyg-lib: PyG's NeighborLoader needs pyg-lib or torch-sparse to sample. Install pyg-lib only
  # when PyPI has a wheel that imports with this PyTorch; otherwise say why (the suite records
  # PyG's sampled epoch as unsupported, quoting build/peers/pyglib_error.txt).
  local perr="$STATE/pyglib_error.txt"
  if "$py" -c 'import pyg_lib' 2>/dev/null; then
    rm -f "$perr"
  else
    : > "$perr"
    echo "setup: torch2: pip install pyg-lib (only if PyPI has a wheel for this PyTorch)"
    if ! out=$(pip_into "$py" --only-binary=:all: --no-deps pyg-lib 2>&1); then
      record_error "$perr" "pip install --only-binary=:all: --no-deps pyg-lib failed" "$out"
      echo "setup: torch2: no pyg-lib wheel; PyG's NeighborLoader is skipped (see $perr)" >&2
    elif ! out=$("$py" -c 'import torch, pyg_lib; torch.ops.pyg.neighbor_sample' 2>&1); then
      record_error "$perr" "pyg-lib installed but does not load with torch $("$py" -c 'import torch; print(torch.__version__)')" "$out"
      "$py" -m pip uninstall -y -q pyg-lib >/dev/null 2>&1 || true
      echo "setup: torch2: pyg-lib does not load; removed; PyG's NeighborLoader is skipped (see $perr)" >&2
    else
      rm -f "$perr"
      "$py" -c 'import pyg_lib; print("setup: torch2: pyg_lib", pyg_lib.__version__)'
    fi
  fi
}

# --- dgl2: DGL 2.1.0 with PyTorch 2.2.1 -----------------------------------------------------------
setup_dgl2() {
  local venv="$ROOT/build/peers-dgl2" err="$STATE/dgl2_error.txt" out
  make_venv "$venv"
  local py="$venv/bin/python"
  local check="import sys, torch, dgl, dgl.nn, dgl.ops, dgl.dataloading
sys.exit(dgl.__version__ != '$DGL2_VERSION')"
  install_checked dgl2 "$py" "$err" "$check" "import dgl $DGL2_VERSION" "PyTorch's CUDA wheels: ~3 GB" \
    "dgl==$DGL2_VERSION" "${DGL2_PINS[@]}" || return 0
  "$py" -c 'import torch, dgl; print("setup: dgl2: dgl", dgl.__version__, "torch", torch.__version__)'
}

want old && setup_old
want torch2 && setup_torch2
want dgl2 && setup_dgl2
echo "setup: done ($ONLY)"
