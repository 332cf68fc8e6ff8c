#!/usr/bin/env bash
# Runs the test suite (ctest) of already-built presets and prints each one's summary.
# The full ctest output goes to build/<preset>/ctest.log; failing tests are listed, and re-run with
# their output shown when there are at most 20 of them.
# Tests must leave nothing behind: each suite runs with TMPDIR set to a fresh empty directory, and
# anything left in it afterwards is listed and fails the suite (tests/support/temp_dir.hpp).
# Exits non-zero if any suite fails.
#
# usage: scripts/test.sh [preset ...]     (default: release asan; build them first with scripts/build.sh)
#   extra ctest arguments can be passed in CTEST_ARGS, e.g. CTEST_ARGS="-L graph" or "-LE slow"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

presets=("$@")
((${#presets[@]})) || presets=(release asan)
jobs=$(nproc 2>/dev/null || echo 2)
read -r -a extra <<<"${CTEST_ARGS:-}"

status=0
tmp=
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT  # also after Ctrl-C
for preset in "${presets[@]}"; do
  log="build/$preset/ctest.log"
  if [ ! -d "build/$preset" ]; then
    echo "test.sh: build/$preset does not exist; run scripts/build.sh $preset first" >&2
    exit 2
  fi
  echo "== testing build/$preset (ctest -j$jobs; full log: $log)"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/edgeattn-ctest-$preset.XXXXXX")
  if TMPDIR=$tmp ctest --preset "$preset" -j "$jobs" "${extra[@]}" >"$log" 2>&1; then
    grep -E '^[0-9]+% tests passed|^Total Test time' "$log"
  else
    status=1
    grep -E '^[0-9]+% tests passed|^Total Test time' "$log" || tail -n 40 "$log"
    mapfile -t failed < <(grep -E '^[[:space:]]+[0-9]+ - .*\)$' "$log" | sed 's/^[[:space:]]*//')
    echo "== ${#failed[@]} failing tests in build/$preset:"
    ((${#failed[@]} == 0)) || printf '   %s\n' "${failed[@]:0:30}"
    ((${#failed[@]} <= 30)) || echo "   ... and $((${#failed[@]} - 30)) more (see $log)"
    if ((${#failed[@]} <= 20)); then
      echo "== output of the failing tests (re-run):"
      TMPDIR=$tmp ctest --preset "$preset" --rerun-failed --output-on-failure 2>&1 | tail -n 300 || true
    else
      echo "== their output is in $log"
    fi
  fi
  mapfile -t left < <(find "$tmp" -mindepth 1 -maxdepth 1 | sort)
  if ((${#left[@]})); then
    status=1
    echo "== FAILED: the tests of build/$preset left ${#left[@]} entries in their temporary directory:"
    printf '   %s\n' "${left[@]##*/}" | head -n 20
    echo "   (every test must write under a directory it removes: tests/support/temp_dir.hpp)"
  else
    echo "== nothing left in the temporary directory"
  fi
  rm -rf "$tmp"
done
exit "$status"
