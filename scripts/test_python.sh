#!/usr/bin/env bash
# Builds the Python module into the Release tree and runs the Python tests (pytest).
# Sets up .venv first (scripts/python_env.sh), turns EDGEATTN_PYTHON on in build/release (the
# library objects are shared with the C++ build, so nothing compiles twice), builds the package
# into build/release/python and runs bindings/python/tests against it.
#
# usage: scripts/test_python.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/python_env.sh
python=$PWD/.venv/bin/python
mkdir -p build
echo "== building the Python module (build/release, EDGEATTN_PYTHON=ON)"
cmake --preset release -DEDGEATTN_PYTHON=ON "-DPython_EXECUTABLE=$python" >build/python-configure.log 2>&1 ||
  { cat build/python-configure.log; exit 1; }
cmake --build build/release --target edgeattn_python
echo "== testing the Python package (pytest bindings/python/tests)"
PYTHONPATH=$PWD/build/release/python${PYTHONPATH:+:$PYTHONPATH} "$python" -m pytest -p no:cacheprovider bindings/python/tests -q "$@"
