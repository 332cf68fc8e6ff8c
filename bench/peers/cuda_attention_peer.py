#!/usr/bin/env python3
"""The PyG 2.8 way of graph attention on a GPU, timed the way kernels_cuda_attention_bench times
edgeattn's CUDA path: the same shapes on graphs of the same sizes, operands resident, CUDA events,
medians of 10 calls after a warm-up.

PyG's GATConv (and GATv2Conv, TransformerConv) compute their attention after the projections as
gathers over the edge list, `torch_geometric.utils.softmax` over each destination's edges and a
scatter-sum of the weighted source rows; this script runs exactly those steps (no projection), so
its times are the attention's alone, as in edgeattn's bench:

  additive H=8 d=8      a = leaky_relu(sd[dst] + ss[src]); softmax; scatter(v[src] * a)     (GATConv)
  gatv2 H=8 d=8         a = (leaky_relu(q[dst] + k[src]) * att).sum(-1); softmax; scatter (GATv2Conv)
  dot_product H, d      a = (q[dst] * k[src]).sum(-1) / sqrt(d); softmax; scatter          (TransformerConv)

Graphs: uniform random (G(n, m), duplicates kept) and R-MAT (Graph500 parameters) with 1M nodes and
10M edges, and a Cora-sized uniform graph; edges sorted by destination, as a CSR is. One JSON line
per case: library, torch and torch_geometric versions, GPU name, graph, score, heads, d,
forward_ms, backward_ms (forward + backward minus forward), peak_mem_mb.

Usage: python3 bench/peers/cuda_attention_peer.py [--quick]
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F
import torch_geometric
from torch_geometric.utils import scatter, softmax


def rmat_edges(n: int, m: int, gen: torch.Generator, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """R-MAT (a, b, c) = (0.57, 0.19, 0.19), as the Graph500 and edgeattn's rmat_graph; n a power of
    two or rounded up to one, ids taken modulo n."""
    scale = max(1, math.ceil(math.log2(n)))
    src = torch.zeros(m, dtype=torch.int64, device=device)
    dst = torch.zeros(m, dtype=torch.int64, device=device)
    for bit in range(scale):
        r = torch.rand(m, generator=gen, device=device)
        right = (r >= 0.57) & (r < 0.76) | (r >= 0.95)
        down = r >= 0.76
        src |= down.to(torch.int64) << bit
        dst |= right.to(torch.int64) << bit
    return src % n, dst % n


def graph(name: str, n: int, m: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device=device).manual_seed(1)
    if name.endswith("rmat"):
        src, dst = rmat_edges(n, m, gen, device)
    else:
        src = torch.randint(0, n, (m,), generator=gen, device=device)
        dst = torch.randint(0, n, (m,), generator=gen, device=device)
    order = torch.argsort(dst * n + src)
    return src[order].contiguous(), dst[order].contiguous()


def timed(fn, reps: int = 10) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def case(gname: str, n: int, m: int, score: str, heads: int, d: int, device: str) -> dict:
    src, dst = graph(gname, n, m, device)
    gen = torch.Generator(device=device).manual_seed(2)

    def param(*shape):
        return (torch.rand(*shape, generator=gen, device=device) - 0.5).requires_grad_()

    v = param(n, heads, d)
    q, k = param(n, heads, d), param(n, heads, d)
    sd, ss = param(n, heads), param(n, heads)
    att = param(heads, d)
    dout = torch.rand(n, heads, d, generator=gen, device=device) - 0.5

    def forward():
        if score == "additive":
            a = F.leaky_relu(sd[dst] + ss[src], 0.2)
        elif score == "gatv2":
            a = (F.leaky_relu(q[dst] + k[src], 0.2) * att).sum(-1)
        else:
            a = (q[dst] * k[src]).sum(-1) / math.sqrt(d)
        a = softmax(a, dst, num_nodes=n)
        return scatter(v[src] * a.unsqueeze(-1), dst, dim=0, dim_size=n, reduce="sum")

    def forward_only():
        with torch.no_grad():
            forward()

    def forward_backward():
        out = forward()
        out.backward(dout)

    torch.cuda.reset_peak_memory_stats()
    f = timed(forward_only)
    fb = timed(forward_backward)
    return {"library": "pyg", "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
            "gpu": torch.cuda.get_device_name(), "graph": gname, "nodes": n, "edges": m, "score": score,
            "heads": heads, "d": d, "forward_ms": round(f, 4), "backward_ms": round(fb - f, 4),
            "forward_backward_ms": round(fb, 4),
            "peak_mem_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the Cora-sized graph only")
    args = ap.parse_args()
    device = "cuda"
    graphs = [("cora_uniform", 2708, 13264)]
    if not args.quick:
        graphs += [("1m_uniform", 1_000_000, 10_000_000), ("1m_rmat", 1_000_000, 10_000_000)]
    shapes = [("additive", 8, 8), ("gatv2", 8, 8), ("dot_product", 8, 8), ("dot_product", 1, 64)]
    for gname, n, m in graphs:
        for score, heads, d in shapes:
            print(json.dumps(case(gname, n, m, score, heads, d, device)), flush=True)


if __name__ == "__main__":
    main()
