"""PyTorch Geometric's attention layers as ``torch.nn.Module`` s that run edgeattn's fused kernel.

``edgeattn.torch.GATConv``, ``GATv2Conv`` and ``TransformerConv`` take PyG's constructor
arguments, ``forward(x, edge_index, edge_attr=None, return_attention_weights=None)`` and keep
PyG's parameter names in ``state_dict()`` (``lin.weight``, ``att_src``, ``att_dst``, ``bias``,
...), so a PyG model switches by changing one import and loads PyG's checkpoints. The linear maps
stay in PyTorch; the attention (scores, softmax over each node's in-edges, dropout, weighted sum)
is one ``edgeattn.torch.attention`` call: forward and backward on the fused CPU kernel, with
nothing of size edges x features stored.

Semantics follow PyG 2.x: ``edge_index`` is ``[2, E]`` (row 0 source, row 1 destination);
repeated edges count separately in the softmax; ``add_self_loops`` removes the given self-loops
and adds one per node (for bipartite input ``(x_src, x_dst)``, nodes ``i < min(N_src, N_dst)``);
``return_attention_weights=True`` returns ``(out, (edge_index, alpha))`` with ``alpha`` ``[E', H]``
in the order of that ``edge_index`` (the self-loops appended last, as PyG does). The graph built
from an ``edge_index`` is cached until another tensor (or an in-place edit of it) comes in.

Edge features: all three take ``edge_dim=F`` with ``forward(x, edge_index, edge_attr)`` as in PyG
(``lin_edge.weight``, and GATConv's ``att_edge``; GATConv's and GATv2Conv's self-loops get
``fill_value`` of each node's in-edges, default ``"mean"``). GATConv's per-edge term enters the
kernel as [E, H] scalars, ``edge_attr @ u.T`` with ``u`` [H, F] the attention vector folded into
``lin_edge``; GATv2Conv's and TransformerConv's edge attributes go to the kernel as they are,
projected by ``lin_edge.weight`` as it runs (inside GATv2's LeakyReLU; added to TransformerConv's
keys and values). PyG's [E, H*C] projection is never formed.

Not supported (a clear error, not a silent difference): CUDA tensors, sparse-tensor adjacency.

Example::

    import torch, edgeattn.torch as et
    conv = et.GATConv(16, 8, heads=4, dropout=0.6)          # was torch_geometric.nn.GATConv
    out = conv(x, edge_index)                                # [N, 32]
    out, (ei, alpha) = conv(x, edge_index, return_attention_weights=True)
"""

from __future__ import annotations

import math
from typing import Optional, Tuple, Union

import torch
from torch import nn

from . import _edgeattn

__all__ = ["GATConv", "GATv2Conv", "TransformerConv"]


def _glorot(t: torch.Tensor) -> None:
    # torch_geometric.nn.inits.glorot: U(-a, a), a = sqrt(6 / (size(-2) + size(-1)))
    a = math.sqrt(6.0 / (t.size(-2) + t.size(-1)))
    with torch.no_grad():
        t.uniform_(-a, a)


def _linear(in_channels: int, out_channels: int, bias: bool, glorot: bool) -> nn.Linear:
    lin = nn.Linear(in_channels, out_channels, bias=bias)
    if glorot:
        _glorot(lin.weight)
        if bias:
            with torch.no_grad():
                lin.bias.zero_()
    return lin


def _pair(in_channels: Union[int, Tuple[int, int]]) -> Tuple[int, int]:
    return (in_channels, in_channels) if isinstance(in_channels, int) else tuple(in_channels)


class _GraphCache:
    """The edgeattn Graph of the last edge_index seen, rebuilt when the tensor, its contents
    (version counter) or the node counts change."""

    def __init__(self) -> None:
        self.key = None
        self.given = None
        self.graph = None
        self.edge_index = None
        self.kept = None
        self.perm = None

    def get(self, edge_index: torch.Tensor, num_src: int, num_dst: int, add_self_loops: bool):
        """-> (graph, the edge_index it was built from, the mask of given edges kept (None when all
        are), the CSR permutation: graph edge e is input edge perm[e])."""
        if not isinstance(edge_index, torch.Tensor) or edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise _edgeattn.ShapeError(
                f"edge_index: expected a [2, num_edges] integer tensor, found "
                f"{tuple(edge_index.shape) if isinstance(edge_index, torch.Tensor) else type(edge_index).__name__}")
        if edge_index.dtype.is_floating_point or edge_index.dtype.is_complex or edge_index.dtype == torch.bool:
            raise _edgeattn.InvalidArgument(
                f"edge_index has dtype {edge_index.dtype}, expected an integer tensor (torch.int64 or torch.int32): "
                f"node ids are not rounded")
        if edge_index.device.type != "cpu":
            raise _edgeattn.InvalidArgument(f"edge_index is on {edge_index.device}; edgeattn runs on the CPU")
        key = (edge_index.data_ptr(), edge_index.shape, edge_index.stride(), edge_index._version, num_src, num_dst,
               add_self_loops)
        # The key misses writes that bypass torch's version counter (through a NumPy view of the
        # same memory, say): the stored copy of the ids must also still equal the given ones.
        if key != self.key or not torch.equal(self.given, edge_index):
            self.given = edge_index.clone()
            ei = edge_index.to(torch.int64)
            self.kept = None
            if add_self_loops:
                self.kept = ei[0] != ei[1]
                ei = ei[:, self.kept]
                loops = torch.arange(min(num_src, num_dst), dtype=torch.int64)
                ei = torch.cat([ei, torch.stack([loops, loops])], dim=1)
            self.graph = _edgeattn.Graph.from_edge_index(ei.contiguous().numpy(), num_nodes=num_dst,
                                                         num_src=num_src, duplicates="keep")
            self.edge_index = ei
            self.perm = torch.from_numpy(self.graph.input_edge_of_csr.copy())
            self.key = key
        return self.graph, self.edge_index, self.kept, self.perm


def _node_features(x, what: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, found {type(x).__name__}")
    if x.dim() != 2:
        raise _edgeattn.ShapeError(f"{what} has shape {tuple(x.shape)}, expected [num_nodes, in_channels] "
                                   f"(a batch of graphs is one graph with block-diagonal edges)")
    return x


def _split_input(x) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    if isinstance(x, (tuple, list)):
        if len(x) != 2:
            raise _edgeattn.InvalidArgument(f"x: expected a tensor or a pair (x_src, x_dst), found {len(x)} items")
        return _node_features(x[0], "x_src"), None if x[1] is None else _node_features(x[1], "x_dst")
    return _node_features(x, "x"), None


def _edge_attr_2d(layer: str, edge_attr, edge_dim: Optional[int]) -> torch.Tensor:
    """edge_attr as [E, edge_dim] after checking it for a layer built with edge_dim."""
    if edge_dim is None:
        raise _edgeattn.InvalidArgument(
            f"{layer}: edge_attr was given but the layer has no edge_dim (build it with edge_dim=F)")
    if not isinstance(edge_attr, torch.Tensor):
        raise TypeError(f"{layer}: edge_attr must be a torch.Tensor, found {type(edge_attr).__name__}")
    attr = edge_attr.view(-1, 1) if edge_attr.dim() == 1 else edge_attr
    if attr.dim() != 2 or attr.size(1) != edge_dim:
        raise _edgeattn.ShapeError(f"{layer}: edge_attr has shape {tuple(edge_attr.shape)}, expected "
                                   f"[num_edges, edge_dim={edge_dim}]")
    return attr


def _with_loop_attr(layer: str, attr: torch.Tensor, ei: torch.Tensor, kept, fill_value) -> torch.Tensor:
    """attr [E, F] for the given edges -> [E', F] for the edge_index ``ei`` attended over: the
    given self-loops dropped (``kept``) and the added ones' attributes filled as PyG does."""
    if kept is None:
        if attr.size(0) != ei.size(1):
            raise _edgeattn.ShapeError(f"{layer}: edge_attr has {attr.size(0)} rows, edge_index {ei.size(1)} edges")
        return attr
    if attr.size(0) != kept.numel():
        raise _edgeattn.ShapeError(f"{layer}: edge_attr has {attr.size(0)} rows, edge_index {kept.numel()} edges")
    a = attr[kept]
    num_loops = ei.size(1) - a.size(0)
    return torch.cat([a, _loop_attr(a, ei[1, :a.size(0)], num_loops, fill_value)], dim=0)


def _loop_attr(edge_attr: torch.Tensor, dst: torch.Tensor, num_loops: int, fill_value) -> torch.Tensor:
    """The self-loops' attributes [num_loops, F], as torch_geometric.utils.add_self_loops computes
    them: a constant (float or tensor), ones for None, or a reduction ("mean", "add"/"sum", "max",
    "min", "mul") of each node's in-edges (the given self-loops already removed); a node without
    in-edges gets 0 (1 for "mul")."""
    size = (num_loops,) + tuple(edge_attr.shape[1:])
    if fill_value is None:
        return edge_attr.new_ones(size)
    if isinstance(fill_value, (int, float)) and not isinstance(fill_value, bool):
        return edge_attr.new_full(size, float(fill_value))
    if isinstance(fill_value, torch.Tensor):
        loop = fill_value.to(edge_attr.dtype)
        if loop.dim() != edge_attr.dim():
            loop = loop.unsqueeze(0)
        return loop.expand(size).contiguous()
    if not isinstance(fill_value, str):
        raise _edgeattn.InvalidArgument(f"fill_value: expected a float, a tensor or a reduction name, "
                                        f"found {type(fill_value).__name__}")
    keep = dst < num_loops  # edges into nodes that get a loop
    src, index = edge_attr[keep], dst[keep]
    idx = index.view(-1, *([1] * (edge_attr.dim() - 1))).expand_as(src)
    if fill_value == "mean":
        total = edge_attr.new_zeros(size).scatter_add(0, idx, src)
        count = torch.zeros(num_loops, dtype=edge_attr.dtype).index_add(0, index, torch.ones_like(index, dtype=edge_attr.dtype))
        return total / count.clamp(min=1).view(-1, *([1] * (edge_attr.dim() - 1)))
    if fill_value in ("add", "sum"):
        return edge_attr.new_zeros(size).scatter_add(0, idx, src)
    if fill_value in ("max", "min"):
        return edge_attr.new_zeros(size).scatter_reduce(0, idx, src, reduce="a" + fill_value, include_self=False)
    if fill_value == "mul":
        return edge_attr.new_ones(size).scatter_reduce(0, idx, src, reduce="prod", include_self=True)
    raise _edgeattn.InvalidArgument(f"fill_value is '{fill_value}', expected mean, add, sum, max, min, mul, "
                                    "a float or a tensor")


class _AttentionConv(nn.Module):
    """What the three layers share: the graph cache, dropout seeds and the attention call."""

    def __init__(self, heads: int, concat: bool, dropout: float, add_self_loops: bool,
                 edge_dim: Optional[int]) -> None:
        super().__init__()
        if edge_dim is not None and edge_dim < 1:
            raise _edgeattn.InvalidArgument(f"{type(self).__name__}: edge_dim is {edge_dim}, expected >= 1 (or None)")
        self.edge_dim = edge_dim
        if heads < 1:
            raise _edgeattn.InvalidArgument(f"{type(self).__name__}: heads is {heads}, expected >= 1")
        if not 0.0 <= dropout < 1.0:
            raise _edgeattn.InvalidArgument(f"{type(self).__name__}: dropout is {dropout}, expected in [0, 1)")
        self.heads, self.concat, self.dropout, self.add_self_loops = heads, concat, dropout, add_self_loops
        self._cache = _GraphCache()

    def _seed(self) -> int:
        # A fresh attention-dropout mask per call, drawn from torch's generator (torch.manual_seed
        # makes runs repeatable).
        return int(torch.randint(0, 2**62, (), dtype=torch.int64)) if self.training and self.dropout > 0 else 0

    def _attend(self, edge_index, num_src: int, num_dst: int, return_attention_weights, per_edge=None,
                **operands):
        """per_edge: a function (edge_index it attends over, kept mask) -> {operand name: [E', ...]
        tensor in that edge_index's order}, or None; they are permuted into the graph's CSR order."""
        from .torch import attention

        graph, ei, kept, perm = self._cache.get(edge_index, num_src, num_dst, self.add_self_loops)
        if per_edge is not None:
            if bool((perm < 0).any()):  # from_edge_index keeps every edge (duplicates="keep")
                raise _edgeattn.GraphError("edge_attr: the graph dropped some of edge_index's edges")
            for name, t in per_edge(ei, kept).items():
                operands[name] = t[perm]
        want = bool(return_attention_weights)
        result = attention(graph, **operands, combine="concat" if self.concat else "mean",
                           dropout=self.dropout if self.training else 0.0, seed=self._seed(),
                           return_attention=want, attention_order="input")
        out, alpha = (result if want else (result, None))
        return out, ei, alpha


class _GatFamilyConv(_AttentionConv):
    """GATConv's and GATv2Conv's common tail: heads concatenated (or already averaged), then the
    residual of the destination features and the bias."""

    def _finish(self, out, x_dst, ei, alpha, return_attention_weights):
        out = out.reshape(out.size(0), -1) if self.concat else out
        if self.res is not None:
            out = out + self.res(x_dst)
        if self.bias is not None:
            out = out + self.bias
        return (out, (ei, alpha)) if return_attention_weights else out


class GATConv(_GatFamilyConv):
    """torch_geometric.nn.GATConv (Velickovic et al. 2018) on edgeattn's kernel.

    Parameters (PyG names and shapes): ``lin.weight`` [H*C, in] (or ``lin_src`` / ``lin_dst`` for
    bipartite ``in_channels=(in_src, in_dst)``), ``att_src``, ``att_dst`` [1, H, C], ``bias``
    [H*C] or [C], ``res.weight`` when ``residual``, ``lin_edge.weight`` [H*C, edge_dim] and
    ``att_edge`` [1, H, C] when ``edge_dim``."""

    def __init__(self, in_channels: Union[int, Tuple[int, int]], out_channels: int, heads: int = 1,
                 concat: bool = True, negative_slope: float = 0.2, dropout: float = 0.0,
                 add_self_loops: bool = True, edge_dim: Optional[int] = None, fill_value="mean",
                 bias: bool = True, residual: bool = False) -> None:
        super().__init__(heads, concat, dropout, add_self_loops, edge_dim)
        self.in_channels, self.out_channels, self.negative_slope = in_channels, out_channels, negative_slope
        self.fill_value = fill_value
        in_src, in_dst = _pair(in_channels)
        if isinstance(in_channels, int):
            self.lin = _linear(in_channels, heads * out_channels, False, True)
            self.lin_src = self.lin_dst = None
        else:
            self.lin = None
            self.lin_src = _linear(in_src, heads * out_channels, False, True)
            self.lin_dst = _linear(in_dst, heads * out_channels, False, True)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        _glorot(self.att_src)
        _glorot(self.att_dst)
        if edge_dim is not None:
            self.lin_edge = _linear(edge_dim, heads * out_channels, False, True)
            self.att_edge = nn.Parameter(torch.empty(1, heads, out_channels))
            _glorot(self.att_edge)
        else:
            self.lin_edge = None
            self.register_parameter("att_edge", None)
        width = heads * out_channels if concat else out_channels
        self.res = _linear(in_dst, width, False, True) if residual else None
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None

    def _edge_scores(self, edge_attr):
        """(edge_index attended over, kept mask) -> {"score_edge": [E', H]}: att_edge . lin_edge(edge_attr)
        per edge, the self-loops' attributes filled as PyG does, computed as edge_attr @ u.T with u [H, F]."""
        if edge_attr is None:
            return None
        attr = _edge_attr_2d("GATConv", edge_attr, self.edge_dim)
        h, c = self.heads, self.out_channels
        u = (self.lin_edge.weight.view(h, c, -1) * self.att_edge.view(h, c, 1)).sum(1)  # [H, F]

        def scores(ei, kept):
            a = _with_loop_attr("GATConv", attr, ei, kept, self.fill_value)
            return {"score_edge": a.to(u.dtype) @ u.T}

        return scores

    def forward(self, x, edge_index, edge_attr=None, size=None, return_attention_weights=None):
        x_src, x_dst = _split_input(x)
        h, c = self.heads, self.out_channels
        if self.lin is not None:
            hs = self.lin(x_src).view(-1, h, c)
            hd = hs if x_dst is None else self.lin(x_dst).view(-1, h, c)
        else:
            if x_dst is None:
                raise _edgeattn.InvalidArgument("GATConv with in_channels=(in_src, in_dst) takes x=(x_src, x_dst)")
            hs = self.lin_src(x_src).view(-1, h, c)
            hd = self.lin_dst(x_dst).view(-1, h, c)
        n_src = hs.size(0)
        n_dst = hd.size(0) if size is None else size[1]
        if size is not None:  # PyG's (num_src, num_dst): both must agree with the inputs they describe
            if len(size) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in size):
                raise _edgeattn.InvalidArgument(f"GATConv: size is {size!r}, expected (num_src, num_dst) integers")
            if size[0] != n_src:
                raise _edgeattn.ShapeError(f"GATConv: size[0] is {size[0]}, but x_src has {n_src} rows")
            if x_dst is not None and size[1] != hd.size(0):
                raise _edgeattn.ShapeError(f"GATConv: size[1] is {size[1]}, but x_dst has {hd.size(0)} rows")
            if size[1] < 0:
                raise _edgeattn.ShapeError(f"GATConv: size[1] is {size[1]}, expected >= 0")
        if x_dst is None and n_dst <= n_src:
            # One node set: the kernel takes both score terms from hs (destination i is source i)
            # and folds their gradients into hs's in its backward.
            scores = dict(att_dst=self.att_dst.view(h, c), att_src=self.att_src.view(h, c))
        else:
            scores = dict(score_dst=(hd * self.att_dst).sum(-1), score_src=(hs * self.att_src).sum(-1))
        out, ei, alpha = self._attend(edge_index, n_src, n_dst, return_attention_weights,
                                      per_edge=self._edge_scores(edge_attr), value=hs, **scores,
                                      score="additive", negative_slope=self.negative_slope)
        return self._finish(out, x_src if x_dst is None else x_dst, ei, alpha, return_attention_weights)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"


class GATv2Conv(_GatFamilyConv):
    """torch_geometric.nn.GATv2Conv (Brody et al. 2022): e_ij = a . LeakyReLU(W_r x_i + W_l x_j [+ W_e e_ij]).

    Parameters: ``lin_l`` (source side) and ``lin_r`` (destination side) [H*C, in] with biases
    when ``bias`` (one shared Linear when ``share_weights``), ``att`` [1, H, C], ``lin_edge.weight``
    [H*C, edge_dim] when ``edge_dim``, ``bias``, ``res`` when ``residual``."""

    def __init__(self, in_channels: Union[int, Tuple[int, int]], out_channels: int, heads: int = 1,
                 concat: bool = True, negative_slope: float = 0.2, dropout: float = 0.0,
                 add_self_loops: bool = True, edge_dim: Optional[int] = None, fill_value="mean",
                 bias: bool = True, share_weights: bool = False, residual: bool = False) -> None:
        super().__init__(heads, concat, dropout, add_self_loops, edge_dim)
        self.in_channels, self.out_channels, self.negative_slope = in_channels, out_channels, negative_slope
        self.fill_value = fill_value
        in_src, in_dst = _pair(in_channels)
        self.lin_l = _linear(in_src, heads * out_channels, bias, True)
        self.lin_r = self.lin_l if share_weights else _linear(in_dst, heads * out_channels, bias, True)
        self.att = nn.Parameter(torch.empty(1, heads, out_channels))
        _glorot(self.att)
        self.lin_edge = _linear(edge_dim, heads * out_channels, False, True) if edge_dim is not None else None
        width = heads * out_channels if concat else out_channels
        self.res = _linear(in_dst, width, False, True) if residual else None
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        x_src, x_dst = _split_input(x)
        h, c = self.heads, self.out_channels
        xl = self.lin_l(x_src).view(-1, h, c)
        xr = self.lin_r(x_src if x_dst is None else x_dst).view(-1, h, c)
        n_src, n_dst = xl.size(0), xr.size(0)
        per_edge, edge_proj = None, None
        if edge_attr is not None:
            attr = _edge_attr_2d("GATv2Conv", edge_attr, self.edge_dim)
            per_edge = lambda ei, kept: {  # noqa: E731
                "edge_attr": _with_loop_attr("GATv2Conv", attr, ei, kept, self.fill_value).to(xl.dtype)}
            # lin_edge.weight [H*C, F] is the kernel's edge projection [H, C, F] as it is.
            edge_proj = self.lin_edge.weight.view(h, c, -1)
        out, ei, alpha = self._attend(edge_index, n_src, n_dst, return_attention_weights, per_edge=per_edge,
                                      query=xr, key=xl, value=xl, att=self.att.view(h, c), edge_proj=edge_proj,
                                      score="gatv2", negative_slope=self.negative_slope)
        return self._finish(out, x_src if x_dst is None else x_dst, ei, alpha, return_attention_weights)


class TransformerConv(_AttentionConv):
    """torch_geometric.nn.TransformerConv (Shi et al. 2021): alpha_ij = softmax_j(q_i . k_j / sqrt(C)),
    out_i = sum_j alpha_ij v_j (+ lin_skip(x_i) when root_weight, gated by beta when beta=True).

    Parameters: ``lin_key``, ``lin_query``, ``lin_value`` [H*C, in] with biases, ``lin_skip``
    [H*C or C, in_dst] (bias when ``bias``; used when ``root_weight``), ``lin_beta`` [1, 3*width] (no
    bias) when ``beta`` and ``root_weight``.
    ``lin_edge.weight`` [H*C, edge_dim] (no bias) when ``edge_dim``: each edge's projection is
    added to its key and value. No self-loops are added (as in PyG)."""

    def __init__(self, in_channels: Union[int, Tuple[int, int]], out_channels: int, heads: int = 1,
                 concat: bool = True, beta: bool = False, dropout: float = 0.0, edge_dim: Optional[int] = None,
                 bias: bool = True, root_weight: bool = True) -> None:
        super().__init__(heads, concat, dropout, False, edge_dim)
        self.in_channels, self.out_channels, self.beta, self.root_weight = in_channels, out_channels, beta, root_weight
        in_src, in_dst = _pair(in_channels)
        self.lin_key = nn.Linear(in_src, heads * out_channels)
        self.lin_query = nn.Linear(in_dst, heads * out_channels)
        self.lin_value = nn.Linear(in_src, heads * out_channels)
        self.lin_edge = nn.Linear(edge_dim, heads * out_channels, bias=False) if edge_dim is not None else None
        width = heads * out_channels if concat else out_channels
        # As PyG: lin_skip exists even without root_weight (unused then), so state dicts match;
        # beta takes effect only with root_weight.
        self.lin_skip = nn.Linear(in_dst, width, bias=bias)
        self.lin_beta = nn.Linear(3 * width, 1, bias=False) if (beta and root_weight) else None

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        x_src, x_dst = _split_input(x)
        x_dst = x_src if x_dst is None else x_dst
        h, c = self.heads, self.out_channels
        q = self.lin_query(x_dst).view(-1, h, c)
        k = self.lin_key(x_src).view(-1, h, c)
        v = self.lin_value(x_src).view(-1, h, c)
        per_edge, edge_proj = None, None
        if edge_attr is not None:
            attr = _edge_attr_2d("TransformerConv", edge_attr, self.edge_dim)
            per_edge = lambda ei, kept: {  # noqa: E731
                "edge_attr": _with_loop_attr("TransformerConv", attr, ei, kept, None).to(k.dtype)}
            edge_proj = self.lin_edge.weight.view(h, c, -1)  # added to keys and values by the kernel
        out, ei, alpha = self._attend(edge_index, k.size(0), q.size(0), return_attention_weights, per_edge=per_edge,
                                      query=q, key=k, value=v, edge_proj=edge_proj, score="dot_product",
                                      scale=1.0 / math.sqrt(c))
        out = out.reshape(q.size(0), h * c) if self.concat else out
        if self.root_weight:
            x_r = self.lin_skip(x_dst)
            if self.lin_beta is not None:
                b = torch.sigmoid(self.lin_beta(torch.cat([out, x_r, out - x_r], dim=-1)))
                out = b * x_r + (1 - b) * out
            else:
                out = out + x_r
        return (out, (ei, alpha)) if return_attention_weights else out
