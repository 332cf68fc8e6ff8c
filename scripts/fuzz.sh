#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, `fuzz` preset, clang) and runs each one briefly over
# a scratch copy of its seed corpus (tests/fuzz/corpus/<reader>/), so new inputs found in CI do
# not land in the tree. Exits non-zero on the first crash, sanitizer report, leak, or hang
# (-timeout per input); the reproducer is left in the scratch directory and its path printed.
#
# usage: scripts/fuzz.sh [seconds-per-target]      (default 20; EDGEATTN_FUZZ_SECONDS also works)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-${EDGEATTN_FUZZ_SECONDS:-20}}"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup.sh --for test installs it)" >&2; exit 2; }

cmake --preset fuzz >/dev/null
cmake --build build/fuzz

scratch="$(mktemp -d "${TMPDIR:-/tmp}/edgeattn-fuzz.XXXXXX")"
status=0
for exe in build/fuzz/fuzz/fuzz_*; do
  reader="${exe##*/fuzz_}"
  corpus="$scratch/$reader"
  mkdir -p "$corpus"
  if [ -d "tests/fuzz/corpus/$reader" ]; then cp -r "tests/fuzz/corpus/$reader/." "$corpus/"; fi
  log="$scratch/$reader.log"
  if (cd "$scratch" && "$OLDPWD/$exe" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
        -artifact_prefix="$scratch/$reader-" "$corpus") >"$log" 2>&1; then
    echo "fuzz $reader: $(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | head -1), no findings"
  else
    status=1
    echo "fuzz $reader: FAILED; log $log; reproducers:" >&2
    ls "$scratch/$reader-"* >&2 2>/dev/null || true
    tail -n 40 "$log" >&2
  fi
done
if ((status == 0)); then rm -rf "$scratch"; fi
exit "$status"
