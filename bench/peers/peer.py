#!/usr/bin/env python3
"""One measurement of one peer library (PyTorch, PyTorch Geometric or DGL) on one input.

Runs in its own process (the suite starts one per measurement, so peak memory is per run) and
prints exactly ONE JSON line, with the field names of the `edgeattn bench ...` commands:

    library, version, workload, threads, input, nodes, edges, heads, head_dim, score,
    forward_ms, forward_backward_ms (medians of --repeat runs after --warmup untimed runs),
    seconds_per_epoch (training), peak_rss_mb (getrusage ru_maxrss of this process),
    load_rss_mb (resident memory after the imports and the input, before the work),
    status ("ok", "error", "oom" or "unsupported") and message.

Workloads (``--workload``):
    kernel   graph-masked attention over the input's edges, q = k = v = attr_matrix as [N, H, d].
             torch: dense ``softmax(Q Kᵀ/√d + mask) V`` over all heads at once (the mask is -inf off
             the graph; no mask on a complete graph). pyg: the way GATConv/TransformerConv compute
             it: per-edge scores, ``torch_geometric.utils.softmax`` over destinations, ``scatter``
             sum. dgl: ``u_dot_v``/``u_add_v``, ``edge_softmax``, ``update_all(u_mul_e, sum)``.
             Scores: ``dot`` (q_i·k_j/√d) or ``additive`` (LeakyReLU_0.2(a_src·q_j + a_dst·q_i)).
    sdpa     torch.nn.functional.scaled_dot_product_attention over [1, H, N, d], where the installed
             PyTorch has it (1.13 does not: status "unsupported"). ``--sdpa-mask``: ``none`` (no
             mask: the complete graph), ``causal`` (``is_causal=True``: the causal graph), ``bool``
             (a boolean [N, N] attn_mask, True where j -> i is an edge: window and random graphs),
             ``float`` (the additive -inf mask of the kernel workload), ``auto`` (none on a complete
             graph, else float; the suite's older records).
    layer    PyG GATConv / GATv2Conv / TransformerConv, DGL GATConv (``--layer``): F inputs,
             H × D hidden (``--heads``, ``--hidden``), concatenated heads, self-loops as edgeattn's
             layers (PyG's default add_self_loops; DGL's graph gets them once, untimed).
    train    the GAT paper's 2-layer model (dropout 0.6, GAT(F, D, heads=H) → ELU → GAT(H·D, C)),
             Adam(lr 0.005, weight decay 5e-4), cross entropy on idx_train; --epochs timed epochs
             after --warmup untimed ones; also the test accuracy after them.
    minibatch  sampled mini-batch training (issue 23): a GAT of len(--fanout) layers
             (dropout → GATConv(H × D, ELU) → ... → GATConv(C, --out-heads averaged)), Adam, on
             batches of --batch-size training nodes with --fanout neighbours per hop (hop 1 = the
             seeds, as PyG's num_neighbors and edgeattn's --fanout). dgl: dgl.dataloading.
             NeighborSampler (fanouts reversed: DGL lists them input layer first) + DataLoader +
             dgl.nn.GATConv, each block given a self-loop per destination (as PyG's and edgeattn's
             layers add them). pyg: torch_geometric.loader.NeighborLoader + GATConv over the sampled
             subgraph (needs pyg-lib or torch-sparse: else status "unsupported"). seconds_per_epoch
             is the mean over --epochs epochs (sampling included); test_accuracy from a full-graph
             forward after them.
    matmul   [n, n] × [n, n] float32 torch.mm (n = --nodes), for choosing OPENBLAS_CORETYPE.

The input is an npz written by ``edgeattn bench write-inputs``: adj_indptr int64 [N+1] and
adj_indices int32 [E] are CSR BY DESTINATION (row i lists the sources j of the edges j → i),
attr_matrix float32 [N, F], labels int64 [N], idx_train/idx_val/idx_test int64, and optionally
att_src/att_dst float32 [H, d] (the additive score's vectors; drawn from --seed when absent).

Threads: OMP/OpenBLAS/MKL thread counts come from --threads (set in the environment before
torch loads), torch.set_num_threads(T) and set_num_interop_threads(1). ``--openblas-coretype``
sets OPENBLAS_CORETYPE before the BLAS library is loaded; OMP_WAIT_POLICY is taken from the
environment (the suite chooses it).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

LIBRARIES = ("torch", "pyg", "dgl")
WORKLOADS = ("kernel", "sdpa", "layer", "train", "minibatch", "matmul")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--library", choices=LIBRARIES, required=True)
    p.add_argument("--workload", choices=WORKLOADS, required=True)
    p.add_argument("--input", help="npz from `edgeattn bench write-inputs` (not for matmul)")
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=8, help="kernel: d; q = k = v = attr_matrix as [N, H, d]")
    p.add_argument("--hidden", type=int, default=8, help="layer/train: hidden features per head")
    p.add_argument("--score", choices=("dot", "additive"), default="dot")
    p.add_argument("--layer", choices=("gat", "gatv2", "transformer"), default="gat")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--epochs", type=int, default=200, help="train: timed epochs")
    p.add_argument("--nodes", type=int, default=2048, help="matmul: matrix size")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--openblas-coretype", default="", help="OPENBLAS_CORETYPE for this run ('' = autodetect)")
    p.add_argument("--no-backward", action="store_true", help="time the forward only")
    p.add_argument("--sdpa-mask", choices=("auto", "none", "causal", "bool", "float"), default="auto",
                   help="sdpa: how the graph reaches scaled_dot_product_attention (see the docstring)")
    p.add_argument("--batch-size", type=int, default=1024, help="minibatch: training nodes per step")
    p.add_argument("--fanout", default="15,10,5", help="minibatch: neighbours per hop, hop 1 (the seeds) first")
    p.add_argument("--out-heads", type=int, default=1, help="minibatch: heads of the output layer (averaged)")
    p.add_argument("--dropout", type=float, default=0.6, help="minibatch: feature and attention dropout")
    p.add_argument("--lr", type=float, default=0.005, help="minibatch: Adam learning rate")
    p.add_argument("--weight-decay", type=float, default=5e-4, help="minibatch: L2 weight decay")
    return p.parse_args(argv)


def configure_threads(threads: int, coretype: str) -> None:
    """Thread counts and the OpenBLAS core type; must run before torch (and its BLAS) is imported."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    if coretype:
        os.environ["OPENBLAS_CORETYPE"] = coretype
    else:
        os.environ.pop("OPENBLAS_CORETYPE", None)


def rss_mb() -> float:
    """Peak resident memory of this process so far, MiB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def median_ms(fn: Callable[[], Any], repeat: int, warmup: int) -> float:
    """Median wall time of fn over `repeat` runs after `warmup` untimed ones, in milliseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


@dataclass
class Graph:
    """The input: CSR by destination, expanded to PyG's edge_index order (src = j, dst = i)."""

    num_nodes: int
    src: Any  # torch.LongTensor [E]
    dst: Any  # torch.LongTensor [E]
    x: Any  # torch.FloatTensor [N, F]
    labels: Any  # torch.LongTensor [N]
    idx_train: Any
    idx_test: Any
    att_src: Any | None  # torch.FloatTensor [H, d] or None
    att_dst: Any | None

    @property
    def num_edges(self) -> int:
        return int(self.src.numel())

    def is_complete(self) -> bool:
        return self.num_edges == self.num_nodes * self.num_nodes


def load_graph(path: str) -> Graph:
    """Reads the npz contract of `edgeattn bench write-inputs` into torch tensors."""
    import numpy as np
    import torch

    with np.load(path) as z:
        indptr = z["adj_indptr"].astype(np.int64)
        indices = z["adj_indices"].astype(np.int64)
        n = int(indptr.shape[0] - 1)
        dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        get = lambda k: torch.from_numpy(z[k]) if k in z.files else None  # noqa: E731
        return Graph(
            num_nodes=n,
            src=torch.from_numpy(indices),
            dst=torch.from_numpy(dst),
            x=torch.from_numpy(np.ascontiguousarray(z["attr_matrix"], dtype=np.float32)),
            labels=get("labels").long() if "labels" in z.files else None,
            idx_train=get("idx_train"),
            idx_test=get("idx_test"),
            att_src=get("att_src"),
            att_dst=get("att_dst"),
        )


def qkv_from(graph: Graph, heads: int, head_dim: int, requires_grad: bool) -> Any:
    """q = k = v = attr_matrix as [N, H, d]; needs F == H * d (or more: the first H·d columns)."""
    f = graph.x.shape[1]
    if f < heads * head_dim:
        raise ValueError(f"input has {f} features, the kernel needs heads*head_dim = {heads * head_dim}")
    q = graph.x[:, : heads * head_dim].reshape(graph.num_nodes, heads, head_dim).clone()
    return q.requires_grad_(requires_grad)


def additive_vectors(graph: Graph, heads: int, head_dim: int, seed: int) -> tuple[Any, Any]:
    """a_src, a_dst [H, d]: the input's when present and of that shape, else seeded random."""
    import torch

    if graph.att_src is not None and tuple(graph.att_src.shape) == (heads, head_dim):
        return graph.att_src.float().clone(), graph.att_dst.float().clone()
    gen = torch.Generator().manual_seed(seed)
    scale = 1.0 / math.sqrt(head_dim)
    return (torch.randn(heads, head_dim, generator=gen) * scale, torch.randn(heads, head_dim, generator=gen) * scale)


# ----------------------------------------------------------------------------------------------
# kernel: three implementations of out_i = Σ_j softmax_j(score(i, j)) v_j over the edges j → i.


def torch_dense_kernel(graph: Graph, args: argparse.Namespace) -> Callable[[bool], Any]:
    """Dense masked attention over all heads at once; returns a function(backward) doing one run."""
    import torch
    import torch.nn.functional as F

    n, h, d = graph.num_nodes, args.heads, args.head_dim
    sdpa = getattr(F, "scaled_dot_product_attention", None) if args.workload == "sdpa" else None
    if sdpa is not None and args.score != "dot":
        raise NotImplementedError("scaled_dot_product_attention computes dot-product scores only")
    if sdpa is not None:  # its fused kernels need no [H, N, N] buffers: tried as is (see torch_sdpa_kernel)
        return torch_sdpa_kernel(graph, args, sdpa)
    need = 4.0 * h * n * n * (3 if not args.no_backward else 2)  # scores, probabilities, their grads
    avail = available_memory_bytes()
    if need > 0.9 * avail:
        raise MemoryError(f"dense attention needs about {need / 2**30:.1f} GiB for [H, N, N] = "
                          f"[{h}, {n}, {n}] float32 buffers; {avail / 2**30:.1f} GiB available")
    mask = None
    if not graph.is_complete():
        mask = torch.full((n, n), float("-inf"))
        mask[graph.dst, graph.src] = 0.0  # row i (destination) may attend to column j (source)
    q = qkv_from(graph, h, d, True)
    a_src, a_dst = additive_vectors(graph, h, d, args.seed)
    a_src.requires_grad_(True)
    a_dst.requires_grad_(True)
    grad = torch.ones(n, h, d)

    def run(backward: bool) -> Any:
        with torch.set_grad_enabled(backward):
            qh = q.transpose(0, 1)  # [H, N, d]
            if args.score == "dot":
                s = torch.matmul(qh, qh.transpose(1, 2)) * (1.0 / math.sqrt(d))  # [H, N, N]
            else:
                es = (q * a_src).sum(-1).t()  # [H, N] source terms
                ed = (q * a_dst).sum(-1).t()  # [H, N] destination terms
                s = F.leaky_relu(ed.unsqueeze(2) + es.unsqueeze(1), 0.2)
            if mask is not None:
                s = s + mask
            out = torch.matmul(torch.softmax(s, dim=-1), qh).transpose(0, 1)  # [N, H, d]
            if backward:
                out.backward(grad)
            return out

    return run


def sdpa_mask_mode(graph: Graph, args: argparse.Namespace) -> str:
    """The --sdpa-mask actually used: auto means none on a complete graph, else the float mask."""
    mode = args.sdpa_mask
    if mode == "auto":
        mode = "none" if graph.is_complete() else "float"
    if mode == "none" and not graph.is_complete():
        raise ValueError(f"--sdpa-mask none needs a complete graph; the input has {graph.num_edges} of "
                         f"{graph.num_nodes ** 2} edges")
    if mode == "causal" and graph.num_edges != graph.num_nodes * (graph.num_nodes + 1) // 2:
        raise ValueError("--sdpa-mask causal needs the causal graph (j -> i for every j <= i)")
    return mode


def torch_sdpa_kernel(graph: Graph, args: argparse.Namespace, sdpa: Callable[..., Any]) -> Callable[[bool], Any]:
    """scaled_dot_product_attention on q = k = v [1, H, N, d]; the graph as no mask, is_causal or a mask.

    No memory pre-check: PyTorch picks the kernel (the fused flash kernel keeps O(N d) state plus
    the N² mask; the math fallback materialises [H, N, N]); a run that does not fit fails at its
    allocation under the suite's address-space limit and becomes an "oom" record with the
    allocator's message, which says how much it tried to allocate."""
    import torch

    n, h, d = graph.num_nodes, args.heads, args.head_dim
    mode = sdpa_mask_mode(graph, args)
    args.sdpa_mode_used = mode
    mask, causal = None, mode == "causal"
    if mode == "bool":
        mask = torch.zeros((n, n), dtype=torch.bool)
        mask[graph.dst, graph.src] = True  # row i (destination) may attend to column j (source)
    elif mode == "float":
        mask = torch.full((n, n), float("-inf"))
        mask[graph.dst, graph.src] = 0.0
    q = qkv_from(graph, h, d, True)
    grad = torch.ones(n, h, d)

    def run(backward: bool) -> Any:
        with torch.set_grad_enabled(backward):
            qh = q.permute(1, 0, 2).unsqueeze(0)  # [1, H, N, d]
            out = sdpa(qh, qh, qh, attn_mask=mask, is_causal=causal)[0].permute(1, 0, 2)  # [N, H, d]
            if backward:
                out.backward(grad)
            return out

    return run


def pyg_sparse_kernel(graph: Graph, args: argparse.Namespace) -> Callable[[bool], Any]:
    """Edge-wise scores, torch_geometric.utils.softmax, scatter-sum: GATConv's message passing."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.utils import scatter, softmax

    n, h, d = graph.num_nodes, args.heads, args.head_dim
    q = qkv_from(graph, h, d, True)
    a_src, a_dst = additive_vectors(graph, h, d, args.seed)
    a_src.requires_grad_(True)
    a_dst.requires_grad_(True)
    src, dst = graph.src, graph.dst
    grad = torch.ones(n, h, d)

    def run(backward: bool) -> Any:
        with torch.set_grad_enabled(backward):
            if args.score == "dot":
                s = (q.index_select(0, dst) * q.index_select(0, src)).sum(-1) * (1.0 / math.sqrt(d))  # [E, H]
            else:
                es = (q * a_src).sum(-1)  # [N, H]
                ed = (q * a_dst).sum(-1)
                s = F.leaky_relu(es.index_select(0, src) + ed.index_select(0, dst), 0.2)
            alpha = softmax(s, dst, num_nodes=n)  # [E, H]
            msg = q.index_select(0, src) * alpha.unsqueeze(-1)  # [E, H, d]
            out = scatter(msg, dst, dim=0, dim_size=n, reduce="sum")
            if backward:
                out.backward(grad)
            return out

    return run


def dgl_sparse_kernel(graph: Graph, args: argparse.Namespace) -> Callable[[bool], Any]:
    """DGL's fused SDDMM (u_dot_v / u_add_v), edge_softmax and update_all(u_mul_e, sum)."""
    import dgl
    import dgl.function as fn
    import torch
    import torch.nn.functional as F
    from dgl.nn.functional import edge_softmax

    n, h, d = graph.num_nodes, args.heads, args.head_dim
    g = dgl.graph((graph.src, graph.dst), num_nodes=n)
    q = qkv_from(graph, h, d, True)
    a_src, a_dst = additive_vectors(graph, h, d, args.seed)
    a_src.requires_grad_(True)
    a_dst.requires_grad_(True)
    grad = torch.ones(n, h, d)

    def run(backward: bool) -> Any:
        with torch.set_grad_enabled(backward), g.local_scope():
            if args.score == "dot":
                s = dgl.ops.u_dot_v(g, q, q) * (1.0 / math.sqrt(d))  # [E, H, 1]
            else:
                el = (q * a_src).sum(-1, keepdim=True)  # [N, H, 1]
                er = (q * a_dst).sum(-1, keepdim=True)
                s = F.leaky_relu(dgl.ops.u_add_v(g, el, er), 0.2)
            g.srcdata["v"] = q
            g.edata["a"] = edge_softmax(g, s)
            g.update_all(fn.u_mul_e("v", "a", "m"), fn.sum("m", "out"))
            out = g.dstdata["out"]  # [N, H, d]
            if backward:
                out.backward(grad)
            return out

    return run


# ----------------------------------------------------------------------------------------------
# layer and train


def make_layer(library: str, kind: str, in_features: int, hidden: int, heads: int, dropout: float = 0.0) -> Any:
    """One attention layer with concatenated heads: PyG GATConv/GATv2Conv/TransformerConv or DGL GATConv."""
    if library == "pyg":
        from torch_geometric.nn import GATConv, GATv2Conv, TransformerConv

        if kind == "gat":
            return GATConv(in_features, hidden, heads=heads, dropout=dropout)
        if kind == "gatv2":
            return GATv2Conv(in_features, hidden, heads=heads, dropout=dropout)
        return TransformerConv(in_features, hidden, heads=heads, dropout=dropout)
    if library == "dgl" and kind == "gat":
        from dgl.nn import GATConv

        return GATConv(in_features, hidden, heads, feat_drop=0.0, attn_drop=dropout, allow_zero_in_degree=True)
    if library == "dgl" and kind == "gatv2":
        from dgl.nn import GATv2Conv

        return GATv2Conv(in_features, hidden, heads, attn_drop=dropout, allow_zero_in_degree=True)
    raise NotImplementedError(f"{library} has no '{kind}' layer in this benchmark")


def layer_input(library: str, graph: Graph) -> Any:
    """The graph argument of the library's layer: PyG edge_index, or a DGL graph with self-loops."""
    import torch

    if library == "pyg":
        return torch.stack([graph.src, graph.dst])
    import dgl

    g = dgl.graph((graph.src, graph.dst), num_nodes=graph.num_nodes)
    return dgl.add_self_loop(dgl.remove_self_loop(g))  # what PyG's and edgeattn's layers do


def layer_workload(graph: Graph, args: argparse.Namespace) -> Callable[[bool], Any]:
    """One layer forward (no grad) or forward + backward (input and parameter gradients)."""
    import torch

    layer = make_layer(args.library, args.layer, graph.x.shape[1], args.hidden, args.heads)
    g = layer_input(args.library, graph)
    x = graph.x.clone().requires_grad_(True)

    def run(backward: bool) -> Any:
        with torch.set_grad_enabled(backward):
            out = layer(x, g) if args.library == "pyg" else layer(g, x)
            if backward:
                layer.zero_grad(set_to_none=True)
                out.backward(torch.ones_like(out))
            return out

    return run


def build_gat(library: str, in_features: int, hidden: int, heads: int, classes: int) -> Any:
    """The GAT paper's 2-layer model as a torch.nn.Module, in PyG or DGL."""
    import torch
    import torch.nn.functional as F

    class PygGAT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            from torch_geometric.nn import GATConv

            self.conv1 = GATConv(in_features, hidden, heads=heads, dropout=0.6)
            self.conv2 = GATConv(hidden * heads, classes, heads=1, concat=False, dropout=0.6)

        def forward(self, x: Any, g: Any) -> Any:
            x = F.dropout(x, 0.6, self.training)
            x = F.elu(self.conv1(x, g))
            x = F.dropout(x, 0.6, self.training)
            return self.conv2(x, g)

    class DglGAT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            from dgl.nn import GATConv

            self.conv1 = GATConv(in_features, hidden, heads, feat_drop=0.6, attn_drop=0.6,
                                 activation=F.elu, allow_zero_in_degree=True)
            self.conv2 = GATConv(hidden * heads, classes, 1, feat_drop=0.6, attn_drop=0.6,
                                 allow_zero_in_degree=True)

        def forward(self, x: Any, g: Any) -> Any:
            x = self.conv1(g, x).flatten(1)
            return self.conv2(g, x).mean(1)

    return PygGAT() if library == "pyg" else DglGAT()


def train_workload(graph: Graph, args: argparse.Namespace) -> dict[str, Any]:
    """Trains the 2-layer GAT; seconds_per_epoch is the mean over --epochs after --warmup epochs, and
    epoch_seconds lists those epochs one by one."""
    import torch
    import torch.nn.functional as F

    if graph.labels is None or graph.idx_train is None:
        raise ValueError("train needs labels and idx_train in the input")
    torch.manual_seed(args.seed)
    classes = int(graph.labels.max()) + 1
    model = build_gat(args.library, graph.x.shape[1], args.hidden, args.heads, classes)
    g = layer_input(args.library, graph)
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    x, y, train_idx = graph.x, graph.labels, graph.idx_train.long()

    def epoch() -> float:
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x, g)[train_idx], y[train_idx])
        loss.backward()
        opt.step()
        return float(loss)

    for _ in range(args.warmup):
        epoch()
    loss, times = float("nan"), []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        loss = epoch()
        times.append(time.perf_counter() - t0)
    seconds = sum(times) / max(args.epochs, 1)
    # epoch_seconds: each timed epoch, so that a report can read the first one apart from the rest.
    result: dict[str, Any] = {"seconds_per_epoch": seconds, "epoch_seconds": times, "epochs": args.epochs,
                              "warmup_epochs": args.warmup, "final_loss": loss}
    if graph.idx_test is not None and graph.idx_test.numel() > 0:
        model.eval()
        with torch.no_grad():
            pred = model(x, g).argmax(-1)
        test = graph.idx_test.long()
        result["test_accuracy"] = float((pred[test] == y[test]).float().mean())
    return result


# ----------------------------------------------------------------------------------------------
# minibatch: sampled training (issue 23)


def fanouts(args: argparse.Namespace) -> list[int]:
    """--fanout as a list, hop 1 (the seeds) first; -1 takes every neighbour."""
    out = [int(k) for k in args.fanout.split(",") if k.strip()]
    if not out:
        raise ValueError("--fanout is empty")
    return out


def build_sampled_gat(library: str, in_features: int, hidden: int, heads: int, out_heads: int, classes: int,
                      layers: int, dropout: float) -> Any:
    """edgeattn's `train --model gat --layers L` as a PyG or DGL module: per layer dropout → GATConv,
    ELU between layers, hidden layers concatenate `heads` heads of `hidden`, the last averages
    `out_heads` heads of `classes` (attention dropout = dropout; self-loops in every layer)."""
    import torch
    import torch.nn.functional as F

    dims = [in_features] + [hidden * heads] * (layers - 1)

    class PygSampledGAT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            from torch_geometric.nn import GATConv

            self.convs = torch.nn.ModuleList(
                GATConv(dims[l], hidden, heads=heads, dropout=dropout) if l < layers - 1 else
                GATConv(dims[l], classes, heads=out_heads, concat=False, dropout=dropout) for l in range(layers))

        def forward(self, x: Any, edge_index: Any) -> Any:
            for l, conv in enumerate(self.convs):
                x = conv(F.dropout(x, dropout, self.training), edge_index)
                if l < layers - 1:
                    x = F.elu(x)
            return x

    class DglSampledGAT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            from dgl.nn import GATConv

            self.convs = torch.nn.ModuleList(
                GATConv(dims[l], hidden if l < layers - 1 else classes, heads if l < layers - 1 else out_heads,
                        feat_drop=0.0, attn_drop=dropout, allow_zero_in_degree=True) for l in range(layers))

        def forward(self, blocks: list[Any], x: Any) -> Any:
            for l, (conv, block) in enumerate(zip(self.convs, blocks)):
                # dropout once on the source rows: the destinations are their first rows (same mask)
                x = conv(block, F.dropout(x, dropout, self.training))
                x = F.elu(x.flatten(1)) if l < layers - 1 else x.mean(1)
            return x

    return PygSampledGAT() if library == "pyg" else DglSampledGAT()


def with_block_self_loops(block: Any) -> Any:
    """The block plus one edge i -> i per destination (its own row among the sources), as PyG's
    GATConv and edgeattn's layers add to every sampled block; the node ids carried over."""
    import dgl
    import torch

    src, dst = block.edges()
    loops = torch.arange(block.num_dst_nodes(), dtype=src.dtype)
    out = dgl.create_block((torch.cat([src, loops]), torch.cat([dst, loops])),
                           num_src_nodes=block.num_src_nodes(), num_dst_nodes=block.num_dst_nodes())
    out.srcdata[dgl.NID] = block.srcdata[dgl.NID]
    out.dstdata[dgl.NID] = block.dstdata[dgl.NID]
    return out


def minibatch_workload(graph: Graph, args: argparse.Namespace) -> dict[str, Any]:
    """Sampled training epochs of a len(--fanout)-layer GAT; then a full-graph test accuracy."""
    import torch
    import torch.nn.functional as F

    if graph.labels is None or graph.idx_train is None:
        raise ValueError("minibatch needs labels and idx_train in the input")
    fan = fanouts(args)
    layers = len(fan)
    torch.manual_seed(args.seed)
    classes = int(graph.labels.max()) + 1
    x, y, train_idx = graph.x, graph.labels, graph.idx_train.long()
    n = graph.num_nodes
    if args.library == "pyg":
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader

        data = Data(x=x, y=y, edge_index=torch.stack([graph.src, graph.dst]), num_nodes=n)
        loader = NeighborLoader(data, num_neighbors=fan, batch_size=args.batch_size, input_nodes=train_idx,
                                shuffle=True)
        try:
            next(iter(loader))
        except ImportError as e:  # PyG samples with pyg-lib or torch-sparse only
            raise NotImplementedError(f"PyG NeighborLoader: {e}") from e
        full = data.edge_index
    elif args.library == "dgl":
        import dgl

        g = dgl.remove_self_loop(dgl.graph((graph.src, graph.dst), num_nodes=n))  # sampled without loops
        sampler = dgl.dataloading.NeighborSampler(list(reversed(fan)))  # DGL: input layer first
        loader = dgl.dataloading.DataLoader(g, train_idx, sampler, batch_size=args.batch_size, shuffle=True,
                                            drop_last=False, num_workers=0)
        full = dgl.add_self_loop(g)
    else:
        raise NotImplementedError("minibatch runs pyg or dgl")
    model = build_sampled_gat(args.library, x.shape[1], args.hidden, args.heads, args.out_heads, classes, layers,
                              args.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    def epoch() -> tuple[float, int, int]:
        model.train()
        total, steps, sampled_edges = 0.0, 0, 0
        for batch in loader:
            opt.zero_grad(set_to_none=True)
            if args.library == "pyg":
                logits = model(batch.x, batch.edge_index)[: batch.batch_size]
                target = batch.y[: batch.batch_size]
                sampled_edges += int(batch.edge_index.shape[1])
            else:
                input_nodes, output_nodes, blocks = batch
                blocks = [with_block_self_loops(b) for b in blocks]
                logits = model(blocks, x[input_nodes])
                target = y[output_nodes]
                sampled_edges += sum(int(b.num_edges()) for b in blocks)
            loss = F.cross_entropy(logits, target)
            loss.backward()
            opt.step()
            total += float(loss)
            steps += 1
        return total / max(steps, 1), steps, sampled_edges

    for _ in range(args.warmup):
        epoch()
    times, loss, steps, edges = [], float("nan"), 0, 0
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        loss, steps, edges = epoch()
        times.append(time.perf_counter() - t0)
    result: dict[str, Any] = {"seconds_per_epoch": statistics.mean(times), "epoch_seconds": times,
                              "epochs": args.epochs, "final_loss": loss, "steps_per_epoch": steps,
                              "sampled_edges_per_epoch": edges, "batch_size": args.batch_size,
                              "fanout": args.fanout, "layers": layers, "train_rss_mb": rss_mb()}
    model.eval()
    with torch.no_grad():
        pred = (model(x, full) if args.library == "pyg" else model([full] * layers, x)).argmax(-1)
    for name, idx in (("test_accuracy", graph.idx_test), ("train_accuracy", graph.idx_train)):
        if idx is not None and idx.numel() > 0:
            idx = idx.long()
            result[name] = float((pred[idx] == y[idx]).float().mean())
    return result


# ----------------------------------------------------------------------------------------------


def available_memory_bytes() -> float:
    """MemAvailable from /proc/meminfo (bytes); +inf when unreadable."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return float("inf")


def library_versions(library: str) -> dict[str, Any]:
    """The exact versions this run used: torch always, torch_geometric for pyg, dgl for dgl (None: not
    used); and which interpreter (the suite's virtual environment) ran it."""
    import torch

    out: dict[str, Any] = {"torch_version": torch.__version__, "torch_geometric_version": None,
                           "dgl_version": None, "python_version": sys.version.split()[0],
                           "venv": os.path.basename(sys.prefix.rstrip(os.sep))}
    if library == "pyg":
        import torch_geometric

        out["torch_geometric_version"] = torch_geometric.__version__
    if library == "dgl":
        import dgl

        out["dgl_version"] = dgl.__version__
    return out


def library_version(library: str) -> str:
    """The version string of the library measured (PyTorch's for torch)."""
    import torch

    if library == "pyg":
        import torch_geometric

        return f"{torch_geometric.__version__} (torch {torch.__version__})"
    if library == "dgl":
        import dgl

        return f"{dgl.__version__} (torch {torch.__version__})"
    return torch.__version__


def measure(args: argparse.Namespace, record: dict[str, Any]) -> None:
    """Runs the workload and fills `record` in place (timings, sizes, memory)."""
    import torch

    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # only allowed before any parallel work; a fresh process always allows it
    record["version"] = library_version(args.library)
    record.update(library_versions(args.library))
    record["torch_threads"] = torch.get_num_threads()

    if args.workload == "matmul":
        n = args.nodes
        a, b = torch.randn(n, n), torch.randn(n, n)
        ms = median_ms(lambda: torch.mm(a, b), args.repeat, args.warmup)
        record.update(nodes=n, forward_ms=ms, gflops=2.0 * n**3 / (ms * 1e6), peak_rss_mb=rss_mb())
        return

    graph = load_graph(args.input)
    record.update(nodes=graph.num_nodes, edges=graph.num_edges, features=int(graph.x.shape[1]))
    record["load_rss_mb"] = rss_mb()

    if args.workload == "sdpa" and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        raise NotImplementedError(f"torch {torch.__version__} has no scaled_dot_product_attention (added in 2.0)")

    if args.workload in ("train", "minibatch"):
        record.update((train_workload if args.workload == "train" else minibatch_workload)(graph, args))
        record["peak_rss_mb"] = rss_mb()
        return

    if args.workload in ("kernel", "sdpa"):
        if args.workload == "sdpa" and args.library != "torch":
            raise NotImplementedError("sdpa is a torch workload")
        build = {"torch": torch_dense_kernel, "pyg": pyg_sparse_kernel, "dgl": dgl_sparse_kernel}[args.library]
        run = build(graph, args)
        record["path"] = "dense" if args.library == "torch" else "sparse"
        if args.workload == "sdpa":
            record["sdpa_mask"] = getattr(args, "sdpa_mode_used", args.sdpa_mask)
    else:
        if args.library == "torch":
            raise NotImplementedError("plain torch has no graph attention layer; see pyg and dgl")
        run = layer_workload(graph, args)
    record["forward_ms"] = median_ms(lambda: run(False), args.repeat, args.warmup)
    record["forward_rss_mb"] = rss_mb()
    if not args.no_backward:
        record["forward_backward_ms"] = median_ms(lambda: run(True), args.repeat, args.warmup)
    record["peak_rss_mb"] = rss_mb()


def main(argv: list[str] | None = None) -> int:
    """Parses, measures, prints one JSON line; exit status 0 for ok, 1 otherwise."""
    args = parse_args(argv)
    configure_threads(args.threads, args.openblas_coretype)
    record: dict[str, Any] = {
        "library": args.library,
        "workload": args.workload,
        "threads": args.threads,
        "input": os.path.basename(args.input) if args.input else None,
        "heads": args.heads,
        "head_dim": args.head_dim if args.workload in ("kernel", "sdpa") else args.hidden,
        "score": args.score if args.workload in ("kernel", "sdpa") else None,
        "layer": args.layer if args.workload == "layer" else None,
        "sdpa_mask": args.sdpa_mask if args.workload == "sdpa" else None,
        "openblas_coretype": args.openblas_coretype or "auto",
        "repeat": args.repeat,
        "status": "ok",
    }
    try:
        measure(args, record)
    except MemoryError as e:
        record.update(status="oom", message=str(e))
    except NotImplementedError as e:
        record.update(status="unsupported", message=str(e))
    except Exception as e:  # every failure becomes a record, never a crash of the suite
        msg = f"{type(e).__name__}: {e}"
        oom = isinstance(e, RuntimeError) and ("memory" in str(e).lower() or "alloc" in str(e).lower())
        record.update(status="oom" if oom else "error", message=msg[:2000])
        if not oom:
            traceback.print_exc(file=sys.stderr)
    record.setdefault("peak_rss_mb", rss_mb())
    print(json.dumps(record), flush=True)
    return 0 if record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
