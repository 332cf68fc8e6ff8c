#!/usr/bin/env bash
# Installs the peer libraries for bench/peers/ into a virtual environment, build/peers-venv.
#
# The interpreter is Debian's /usr/bin/python3 with --system-site-packages, so the venv sees
# Debian's python3-torch (1.13.1), numpy, scipy and matplotlib; the peers that are not packaged by
# Debian (PyTorch Geometric, DGL) come from PyPI at pinned versions. Nothing is vendored into the
# repository. DGL may not install or import on this interpreter/PyTorch pair: then the exact error
# goes to build/peers/dgl_error.txt, the suite records DGL runs as errors quoting it, and this
# script still succeeds.
#
# Usage: bench/peers/setup.sh            (idempotent; re-running only checks)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/build/peers-venv"
STATE="$ROOT/build/peers"
PYG_VERSION="2.6.1"
# DGL's last PyPI wheels with a tensor adapter for PyTorch 1.13 (DGL 2.x needs torch >= 2.0). 1.1.3
# installs but refuses Debian's PyTorch at import ("DGL requires PyTorch >= 1.13.0": Debian's build
# calls itself 1.13.0a0), so 1.1.2 is tried first; the others are fallbacks.
DGL_VERSIONS=("1.1.2" "1.1.3" "1.1.1" "1.1.0")

mkdir -p "$STATE"

# Debian packages: the interpreter's PyTorch, numpy, scipy, venv and matplotlib, and
# SuiteSparse:GraphBLAS for `edgeattn bench graphblas` (reconfigure the tool's build after
# installing it: cmake --preset release && cmake --build build/release --target edgeattn_tool).
missing=()
for pkg in python3-torch python3-numpy python3-scipy python3-venv python3-matplotlib libgraphblas-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: apt-get install ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "setup: creating $VENV from /usr/bin/python3"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
PY="$VENV/bin/python"
PIP=("$PY" -m pip install --disable-pip-version-check --no-input -q)

"$PY" -c 'import torch, numpy, scipy, matplotlib; print("setup: torch", torch.__version__)'

# PyTorch Geometric: pure Python; no torch_scatter/torch_sparse (they would need a matching build).
# Its dependencies do not include torch, so pip leaves Debian's PyTorch alone.
if ! "$PY" -c "import torch_geometric as g, sys; sys.exit(g.__version__ != '$PYG_VERSION')" 2>/dev/null; then
  echo "setup: pip install torch_geometric==$PYG_VERSION"
  "${PIP[@]}" "torch_geometric==$PYG_VERSION"
fi
"$PY" -c 'import torch_geometric; print("setup: torch_geometric", torch_geometric.__version__)'

# DGL: try the pinned versions newest first; keep the first that imports with this PyTorch.
dgl_ok=0
if "$PY" -c 'import dgl' 2>/dev/null; then
  dgl_ok=1
else
  : > "$STATE/dgl_error.txt"
  for v in "${DGL_VERSIONS[@]}"; do
    echo "setup: pip install dgl==$v"
    if ! out=$("${PIP[@]}" "dgl==$v" 2>&1); then
      printf 'pip install dgl==%s failed:\n%s\n\n' "$v" "$out" >> "$STATE/dgl_error.txt"
      continue
    fi
    if out=$("$PY" -c 'import dgl, dgl.nn, dgl.ops; print(dgl.__version__)' 2>&1); then
      dgl_ok=1
      break
    fi
    printf 'dgl==%s installed but `import dgl` failed:\n%s\n\n' "$v" "$out" >> "$STATE/dgl_error.txt"
    "$PY" -m pip uninstall -y -q dgl >/dev/null 2>&1 || true
  done
fi
if ((dgl_ok)); then
  rm -f "$STATE/dgl_error.txt"
  "$PY" -c 'import dgl; print("setup: dgl", dgl.__version__)'
else
  echo "setup: DGL unavailable; the errors are in $STATE/dgl_error.txt" >&2
fi
echo "setup: done ($VENV)"
