#!/usr/bin/env bash
# Issue 2's four kernel targets, measured in one run on 2 threads (bench/RESULTS.md, "Issue
# targets"): writes one JSON per measurement into OUT (default bench/results/) and prints the
# verdicts. Needs the Release tool (scripts/setup.sh builds it); about 3 minutes and 3 GB.
#
#   bench/core_targets.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
T=${EDGEATTN_TOOL:-build/release/bin/edgeattn}
OUT=${1:-bench/results}
[[ -x $T ]] || { echo "core_targets.sh: $T not found; run scripts/setup.sh first" >&2; exit 1; }
mkdir -p "$OUT"
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}  # README, "OpenBLAS core detection"

run() {  # run NAME ARGS...: one tool run, its JSON written atomically to OUT/NAME.json
  local name=$1
  shift
  echo "+ edgeattn bench attention $*" >&2
  "$T" bench attention "$@" --threads 2 >"$OUT/$name.json.tmp"
  mv "$OUT/$name.json.tmp" "$OUT/$name.json"
}

run gat_uniform_1m_10m --pattern uniform --nodes 1000000 --edges 10000000 --heads 8 --head-dim 8 --score additive --no-dense --limits
run gat_rmat_1m_10m --pattern rmat --nodes 1000000 --edges 10000000 --heads 8 --head-dim 8 --score additive --no-dense --limits
run complete_4096_d64 --pattern complete --nodes 4096 --heads 1 --head-dim 64 --score dot --limits
run window256_16384_d64 --pattern window:256 --nodes 16384 --heads 1 --head-dim 64 --score dot --no-dense
run complete_16384_d64_dense --pattern complete --nodes 16384 --heads 1 --head-dim 64 --score dot --path dense --no-dense --repeat 3
run window256_16384_h8_d64 --pattern window:256 --nodes 16384 --heads 8 --head-dim 64 --score dot --no-dense
run uniform_100k_1m_h8_d64 --pattern uniform --nodes 100000 --edges 1000000 --heads 8 --head-dim 64 --score dot --no-dense

python3 - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
r = {n: json.load(open(f"{out}/{n}.json")) for n in [
    "gat_uniform_1m_10m", "gat_rmat_1m_10m", "complete_4096_d64", "window256_16384_d64",
    "complete_16384_d64_dense", "window256_16384_h8_d64", "uniform_100k_1m_h8_d64"]}
ok = lambda b: "met" if b else "NOT met"
for g in ("gat_uniform_1m_10m", "gat_rmat_1m_10m"):
    d = r[g]
    print(f"{g}: forward {d['forward_ms']:.1f} ms, {d['achieved_gbps']:.1f} GB/s = "
          f"{100 * d['stream_fraction']:.0f}% of STREAM ({d['stream_triad_gbps']:.1f} GB/s), "
          f"{100 * d['random_gather_fraction']:.0f}% of random gather ({d['random_gather_gbps']:.1f}): "
          f"{ok(d['stream_fraction'] >= 0.5)} (>= 50%)")
c = r["complete_4096_d64"]
print(f"complete N=4096 d=64: sparse {c['forward_ms']:.1f} ms vs dense {c['dense_forward_ms']:.1f} ms = "
      f"{c['forward_ms'] / c['dense_forward_ms']:.2f}x: {ok(c['forward_ms'] <= 1.3 * c['dense_forward_ms'])} (<= 1.3x)")
w, dn = r["window256_16384_d64"], r["complete_16384_d64_dense"]
print(f"window 256 N=16384: sparse {w['forward_ms']:.1f} ms vs masked dense over all N^2 scores "
      f"{dn['forward_ms']:.1f} ms = {dn['forward_ms'] / w['forward_ms']:.1f}x: "
      f"{ok(dn['forward_ms'] >= 20 * w['forward_ms'])} (>= 20x)")
for g in ("window256_16384_h8_d64", "uniform_100k_1m_h8_d64", "gat_uniform_1m_10m"):
    d = r[g]
    print(f"peak memory {g}: {d['peak_rss_mb'] - d['baseline_rss_mb']:.0f} MiB over {d['held_mb']:.0f} MiB held "
          f"= {d['peak_over_held']:.2f}x: {ok(d['peak_over_held'] <= 1.5)} (<= 1.5x)")
EOF
