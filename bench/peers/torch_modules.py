#!/usr/bin/env python3
"""edgeattn.torch's layers against PyG's own inside the same PyTorch model (issue 19, item 5).

A two-layer GAT (or GATv2 / Transformer) model, x -> conv1 (8 heads x 8, ELU) -> conv2 -> logits,
built once from torch_geometric.nn and once from edgeattn.torch with PyG's weights loaded into it,
timed for a training step (forward + cross-entropy + backward) and for inference on a uniform
random graph. Both run in the same process on the same PyTorch (Debian's 1.13 with PyG 2.6.1 in
.venv: scripts/python_env.sh), with the same thread count. Prints one JSON line per case.

usage: PYTHONPATH=build/release/python .venv/bin/python bench/peers/torch_modules.py \
           [--nodes 100000] [--edges 1000000] [--features 128] [--threads 2] [--repeat 5]
"""

import argparse
import json
import time

import torch
import torch_geometric
import torch_geometric.nn as pyg_nn

import edgeattn
import edgeattn.torch as et


def model(lib, layer, features, classes):
    conv = getattr(lib, layer)
    first = dict(heads=8) if layer != "TransformerConv" else dict(heads=8)
    c1 = conv(features, 8, **first)
    c2 = conv(64, classes, heads=1)
    return torch.nn.ModuleList([c1, c2])


def step(m, x, ei, y, train):
    h = torch.nn.functional.elu(m[0](x, ei))
    out = m[1](h, ei)
    if train:
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
    return out


def timed(fn, repeat):
    fn()  # warm-up (edgeattn builds and caches its graph here)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(a.nodes, a.features, generator=g)
    ei = torch.randint(0, a.nodes, (2, a.edges), generator=g)
    y = torch.randint(0, a.classes, (a.nodes,), generator=g)
    for layer in ("GATConv", "GATv2Conv", "TransformerConv"):
        torch.manual_seed(1)
        theirs = model(pyg_nn, layer, a.features, a.classes)
        mine = model(et, layer, a.features, a.classes)
        mine.load_state_dict(theirs.state_dict())
        row = dict(layer=layer, nodes=a.nodes, edges=a.edges, features=a.features, threads=a.threads,
                   torch=torch.__version__, pyg=torch_geometric.__version__)
        for name, m in (("pyg", theirs), ("edgeattn", mine)):
            m.train()
            row[f"{name}_train_step_ms"] = 1e3 * timed(lambda: (m.zero_grad(), step(m, x, ei, y, True)), a.repeat)
            m.eval()
            with torch.no_grad():
                row[f"{name}_inference_ms"] = 1e3 * timed(lambda: step(m, x, ei, y, False), a.repeat)
        row["train_speedup"] = row["pyg_train_step_ms"] / row["edgeattn_train_step_ms"]
        row["inference_speedup"] = row["pyg_inference_ms"] / row["edgeattn_inference_ms"]
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}), flush=True)


if __name__ == "__main__":
    main()
