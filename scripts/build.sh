#!/usr/bin/env bash
# Configures (if needed) and builds one CMake preset from CMakePresets.json into build/<preset>.
#
# usage: scripts/build.sh [release|asan] [extra `cmake --build` arguments, e.g. --target edgeattn_tool]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

preset=${1:-release}
shift || true
case "$preset" in
  release|asan) ;;
  *) echo "build.sh: unknown preset '$preset' (valid: release, asan)" >&2; exit 2 ;;
esac

# Configure on the first build only; later builds let ninja re-run CMake when a CMakeLists changes.
if [ ! -f "build/$preset/build.ninja" ]; then
  echo "== configuring build/$preset"
  cmake --preset "$preset"
fi
echo "== building build/$preset"
cmake --build --preset "$preset" "$@"
