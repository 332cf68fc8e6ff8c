#!/usr/bin/env bash
# Builds the Python module into the Release tree and runs the Python tests (pytest).
# Sets up .venv first (scripts/python_env.sh), turns EDGEATTN_PYTHON on in build/release (the
# library objects are shared with the C++ build, so nothing compiles twice), builds the package
# into build/release/python and runs bindings/python/tests against it, and bench/peers/tests (the
# peer suite's scheduling and report, plain Python).
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
echo "== testing the Python package and the peer suite's report (pytest bindings/python/tests bench/peers/tests)"
# The tests write only under pytest's tmp_path; its base directory and TMPDIR lie in one fresh
# directory, removed afterwards, and anything else left in it fails the run (as scripts/test.sh).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edgeattn-pytest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
TMPDIR=$tmp PYTHONPATH=$PWD/build/release/python${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 \
  "$python" -m pytest -p no:cacheprovider --basetemp="$tmp/pytest" bindings/python/tests bench/peers/tests -q "$@" || status=$?
rm -rf "$tmp/pytest"
if [ -n "$(find "$tmp" -mindepth 1 -maxdepth 1)" ]; then
  echo "== FAILED: the Python tests left files in their temporary directory:"
  find "$tmp" -mindepth 1 -maxdepth 1 -printf '   %f\n' | head -n 20
  status=1
fi
exit "$status"
