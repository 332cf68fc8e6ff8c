#!/usr/bin/env bash
# Creates the Python environment of the bindings (bindings/python) at .venv, once:
# Debian's python3 with its site packages (python3-torch, numpy, scipy, pytest: scripts/setup.sh --for test
# installs them) plus what Debian does not package, pinned: nanobind, scikit-build-core and
# torch_geometric (for the PyG parity tests).
# Quiet and quick when the environment is already there.
#
# usage: scripts/python_env.sh      then: .venv/bin/python -c 'import nanobind'
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python=/usr/bin/python3   # Debian's interpreter: PyTorch here is Debian's python3-torch
# torch_geometric: the PyG parity tests of edgeattn.torch's layers (tests/test_torch_conv.py); 2.6.1
# is the newest PyG that runs on Debian's PyTorch 1.13 (pure Python, no compiled extensions).
requirements=(nanobind==3.1.0 scikit-build-core==1.1.2 torch_geometric==2.6.1)

if [ ! -x .venv/bin/python ]; then
  echo "python_env: creating .venv (${python} with system site packages)"
  "$python" -m venv --system-site-packages .venv
fi
if ! .venv/bin/python - "${requirements[@]}" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
for req in sys.argv[1:]:
    name, want = req.split("==")
    if version(name) != want:
        sys.exit(1)
PY
  echo "python_env: installing ${requirements[*]}"
  .venv/bin/pip install --quiet --disable-pip-version-check "${requirements[@]}"
fi
