#!/usr/bin/env python3
"""Makes the input of the mapped-features benchmark: node features larger than a memory cap.

Takes a graph written by ``edgeattn bench write-inputs`` (its labels are uniform, so features made
here carry the class: any accuracy above chance comes from them) and writes, next to it:

* ``--out-graph``: the same graph and labels with a larger training split (``--train-fraction``
  of the nodes for training, ``--val-fraction`` for validation, the rest for testing; seeded) and
  without its attr_matrix, so that ``edgeattn train --dataset`` loads no features from it;
* ``--out-features``: float32 [N, F] features ``signal * mu[label] + N(0, 1)`` as an .npy file,
  written in chunks through a memory map (the generator never holds the whole array), with the
  class means ``mu`` unit-norm Gaussian directions.

    edgeattn bench write-inputs --out g.npz --graph rmat --nodes 2449029 --edges 61859140 --features 8 --classes 47
    python3 bench/data/mapped_features_input.py --graph g.npz --out-graph g_split.npz \\
        --out-features x.npy --features 512
    edgeattn train --dataset g_split.npz --features x.npy --no-normalize --batch-size 1024 --fanout 15,10,5 ...

Needs numpy only. Prints one JSON object (paths, shape, bytes, seconds).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", type=Path, required=True, help="an .npz of edgeattn bench write-inputs")
    p.add_argument("--out-graph", type=Path, required=True, help="the graph with the new split, no features")
    p.add_argument("--out-features", type=Path, required=True, help="the float32 [N, F] .npy to write")
    p.add_argument("--features", type=int, default=512)
    p.add_argument("--signal", type=float, default=0.5, help="norm of the class mean added to each row")
    p.add_argument("--train-fraction", type=float, default=0.02)
    p.add_argument("--val-fraction", type=float, default=0.01)
    p.add_argument("--chunk-rows", type=int, default=65536)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.features < 1 or not 0 < a.train_fraction < 1 or not 0 <= a.val_fraction < 1 - a.train_fraction:
        raise SystemExit("mapped_features_input.py: need --features >= 1 and fractions that leave test nodes")
    t0 = time.perf_counter()
    with np.load(a.graph) as z:
        members = {k: z[k] for k in z.files if k not in ("attr_matrix", "att_src", "att_dst")}
    labels = members["labels"]
    n = labels.shape[0]
    classes = int(labels.max()) + 1
    rng = np.random.default_rng(a.seed)
    order = rng.permutation(n)
    n_train, n_val = int(a.train_fraction * n), int(a.val_fraction * n)
    members["idx_train"] = np.sort(order[:n_train]).astype(np.int64)
    members["idx_val"] = np.sort(order[n_train:n_train + n_val]).astype(np.int64)
    members["idx_test"] = np.sort(order[n_train + n_val:]).astype(np.int64)
    tmp = a.out_graph.with_name(a.out_graph.name + ".partial.npz")
    np.savez(tmp, **members)
    tmp.replace(a.out_graph)

    mu = rng.standard_normal((classes, a.features)).astype(np.float32)
    mu *= a.signal / np.linalg.norm(mu, axis=1, keepdims=True)
    tmp = a.out_features.with_name(a.out_features.name + ".partial.npy")
    x = np.lib.format.open_memmap(tmp, mode="w+", dtype="<f4", shape=(n, a.features))
    for lo in range(0, n, a.chunk_rows):
        hi = min(n, lo + a.chunk_rows)
        block = rng.standard_normal((hi - lo, a.features), dtype=np.float32)
        block += mu[labels[lo:hi]]
        x[lo:hi] = block
    x.flush()
    del x
    tmp.replace(a.out_features)
    print(json.dumps({"graph": str(a.out_graph), "features": str(a.out_features), "nodes": n,
                      "feature_dim": a.features, "classes": classes, "train": n_train, "val": n_val,
                      "feature_bytes": a.out_features.stat().st_size, "seconds": time.perf_counter() - t0}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
