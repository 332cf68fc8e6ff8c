#!/usr/bin/env bash
# Mini-batch training with node features larger than the memory the process may use (issue 23):
# a 500k-node R-MAT graph with 2048 float32 features per node (4.1 GB, `--features FILE` read in
# place) trained under a 3 GB cgroup-v1 memory cap, against the same run without a cap. Needs root
# (cgroup v1 memory controller at /sys/fs/cgroup/memory, drop_caches), numpy and build/release.
# Page cache is dropped before every run, so each one starts cold. Writes its inputs and
# per-run JSON under ${OUT:-build/mapped_bench}; prints one line per run.
#
#   bench/data/mapped_features_run.sh            # then read build/mapped_bench/*.json
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
out=${OUT:-build/mapped_bench}
edgeattn=$root/build/release/bin/edgeattn
cap=${CAP_BYTES:-3000000000}
mkdir -p "$out"
cd "$out"
[ -f s.npz ] || "$edgeattn" bench write-inputs --out s.npz --graph rmat --nodes 500000 --edges 5000000 \
  --features 8 --classes 47 --threads 2 >/dev/null
[ -f xs.npy ] || /usr/bin/python3 "$root/bench/data/mapped_features_input.py" --graph s.npz --out-graph ss.npz \
  --out-features xs.npy --features 2048 --signal 6 >/dev/null
cg=/sys/fs/cgroup/memory/edgeattn_mapped_bench
mkdir -p "$cg"

# run NAME LIMIT: one training run in the cgroup with memory limit LIMIT; samples RssAnon/RssFile.
run() {
  local name=$1 limit=$2
  echo "$limit" >"$cg/memory.limit_in_bytes"
  sync
  echo 1 >/proc/sys/vm/drop_caches
  bash -c 'echo $$ >'"$cg"'/cgroup.procs; exec "$@"' sh "$edgeattn" train --dataset ss.npz --features xs.npy \
    --no-normalize --batch-size 512 --fanout 10,5 --layers 2 --heads 8 --hidden 8 --dropout 0.2 --lr 0.01 \
    --epochs 2 --patience 0 --threads 2 --json --quiet >"$name.json" &
  local pid=$! anon=0 file=0 a f
  while kill -0 "$pid" 2>/dev/null; do
    a=$(awk '/RssAnon/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
    f=$(awk '/RssFile/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$a" ] && ((a > anon)) && anon=$a
    [ -n "$f" ] && ((f > file)) && file=$f
    sleep 0.2
  done
  wait "$pid"
  /usr/bin/python3 -c "import json,sys; d=json.load(open('$name.json')); print('$name', 'limit', $limit, 's/epoch',
    round(d['seconds_per_epoch'], 3), 'test acc', d['test_accuracy'], 'peak RssAnon MB', $anon // 1024,
    'peak RssFile MB', $file // 1024)"
}
for i in 1 2; do run "uncapped_$i" 30000000000; done
for i in 1 2; do run "capped_$i" "$cap"; done
