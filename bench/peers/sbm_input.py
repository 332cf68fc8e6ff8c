#!/usr/bin/env python3
"""Writes a products-like synthetic node-classification input for the sampled-training workload.

The graph, features, labels and split come from edgeattn's own generator, the stochastic block
model of include/edgeattn/data/synthetic.hpp (``edgeattn.sbm_dataset`` of the Python module in
build/release/python): nodes in C blocks (the classes), each node with on average ``--degree-in``
neighbours in its class and ``--degree-out`` outside it (symmetric, no self-loops), features
``signal * mu_class + noise * N(0, I)``. Unlike ``edgeattn bench write-inputs`` (uniform labels, so
any classifier is at chance) the labels are learnable from both the features and the graph, so the
accuracy of a sampled epoch means something. The defaults follow ogbn-products' shape at a tenth
of its nodes: 47 classes, 100 features, mean degree 50, 8 % of the nodes for training, 2 % for
validation, the rest for testing.

The file has the members and layout of ``edgeattn bench write-inputs`` (bench/peers/README.md,
"Input contract"): adj_indptr int64 [N+1] / adj_indices int32 [E] CSR by destination, adj_data,
adj_shape, adj_rows_are_destinations, attr_matrix float32 [N, F], labels int64 [N], idx_train,
idx_val, idx_test int64; so ``edgeattn train --dataset FILE`` and peer.py read it as any other input.

    PYTHONPATH=build/release/python build/peers-venv/bin/python bench/peers/sbm_input.py \\
        --out build/peers/inputs/sbm_products_250k.npz --nodes 250000

Prints one JSON object (the fields of write-inputs: path, graph, nodes, edges, features, classes,
seed, seconds, peak_rss_mb, and the generator's parameters).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="the .npz to write")
    p.add_argument("--nodes", type=int, default=250_000)
    p.add_argument("--classes", type=int, default=47)
    p.add_argument("--features", type=int, default=100)
    p.add_argument("--degree-in", type=float, default=40.0, help="mean same-class neighbours")
    p.add_argument("--degree-out", type=float, default=10.0, help="mean other-class neighbours")
    p.add_argument("--signal", type=float, default=0.3, help="scale of the class means of the features")
    p.add_argument("--noise", type=float, default=1.0, help="standard deviation of the per-node noise")
    p.add_argument("--train-fraction", type=float, default=0.08)
    p.add_argument("--val-fraction", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    t0 = time.perf_counter()
    module_dir = ROOT / "build/release/python"
    sys.path.insert(0, str(module_dir))
    import numpy as np

    try:
        import edgeattn
    except ImportError as e:  # the module is built only on request (EDGEATTN_PYTHON=ON)
        print(f"sbm_input.py: cannot import edgeattn's Python module from {module_dir} ({e}); build it "
              "first: scripts/test_python.sh (builds it and runs its tests), or cmake --preset release "
              "-DEDGEATTN_PYTHON=ON && cmake --build build/release --target edgeattn_python", file=sys.stderr)
        return 2

    train_per_class = max(1, int(round(a.train_fraction * a.nodes / a.classes)))
    num_val = int(round(a.val_fraction * a.nodes))
    ds = edgeattn.sbm_dataset(num_nodes=a.nodes, num_classes=a.classes, expected_in_degree=a.degree_in,
                              expected_out_degree=a.degree_out, feature_dim=a.features, signal=a.signal,
                              noise=a.noise, train_per_class=train_per_class, num_val=num_val, num_test=-1,
                              shuffle_nodes=True, seed=a.seed)
    g = ds.graph
    split = ds.split(ds.default_split)
    n = int(ds.num_nodes)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_suffix(".tmp.npz")
    with open(tmp, "wb") as f:
        np.savez(f,
                 adj_indptr=np.asarray(g.indptr, dtype=np.int64),
                 adj_indices=np.asarray(g.indices, dtype=np.int32),
                 adj_data=np.ones(int(g.num_edges), dtype=np.float32),
                 adj_shape=np.array([n, n], dtype=np.int64),
                 adj_rows_are_destinations=np.array(True),
                 attr_matrix=np.ascontiguousarray(ds.dense_features, dtype=np.float32),
                 labels=np.asarray(ds.labels, dtype=np.int64),
                 idx_train=np.sort(np.asarray(split["train"], dtype=np.int64)),
                 idx_val=np.sort(np.asarray(split["val"], dtype=np.int64)),
                 idx_test=np.sort(np.asarray(split["test"], dtype=np.int64)))
    os.replace(tmp, a.out)
    print(json.dumps({
        "path": str(a.out), "graph": "sbm", "nodes": n, "edges": int(g.num_edges), "features": a.features,
        "classes": a.classes, "seed": a.seed, "degree_in": a.degree_in, "degree_out": a.degree_out,
        "signal": a.signal, "noise": a.noise, "train": len(split["train"]), "val": len(split["val"]),
        "test": len(split["test"]), "generator": "edgeattn.sbm_dataset (include/edgeattn/data/synthetic.hpp)",
        "seconds": time.perf_counter() - t0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
