#!/usr/bin/env bash
# Configures (if needed) and builds one CMake preset from CMakePresets.json into build/<preset>.
# CMake's configure output goes to build/<preset>/configure.log. On a terminal the build shows
# ninja's one-line progress (and any warnings); otherwise its output goes to
# build/<preset>/build.log and one summary line is printed. On failure the log's end is shown.
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

# Runs "$@" with its output in $log; prints "done in N s", or the log's end and fails.
logged() {
  local log=$1 started=$SECONDS
  shift
  if "$@" >"$log" 2>&1; then
    echo "done in $((SECONDS - started)) s"
  else
    echo "FAILED after $((SECONDS - started)) s; the end of $log:"
    tail -n 40 "$log" | sed 's/^/  | /'
    return 1
  fi
}

# Configure on the first build only; later builds let ninja re-run CMake when a CMakeLists changes.
if [ ! -f "build/$preset/build.ninja" ]; then
  mkdir -p "build/$preset"
  printf '== configuring build/%s (log: build/%s/configure.log)... ' "$preset" "$preset"
  logged "build/$preset/configure.log" cmake --preset "$preset"
fi
if [ -t 1 ]; then
  echo "== building build/$preset"
  cmake --build --preset "$preset" "$@"
else
  printf '== building build/%s (log: build/%s/build.log)... ' "$preset" "$preset"
  logged "build/$preset/build.log" cmake --build --preset "$preset" "$@"
fi
