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

As in PyG 2.8: ``edge_index`` is int64 or int32 (GATConv and GATv2Conv with ``add_self_loops``
also take uint8/int8/int16, which PyG's ``add_self_loops`` promotes); the returned ``edge_index`` is
the given tensor itself without self-loops, and an int64 one with them. GATConv and GATv2Conv
return ``(out, (edge_index, alpha))`` when ``return_attention_weights`` is truthy, TransformerConv
whenever it is a bool (``False`` included). While training with ``dropout > 0``, GATConv's and
GATv2Conv's ``alpha`` are the weights used, after dropout (zeros where dropped, the rest scaled by
1/(1-p)); TransformerConv's are before dropout. Outputs and ``alpha`` come back in the input's
dtype, computed in float32. A graph without edges gives ``alpha`` [0, H]. ``GATConv((x_src, None),
...)`` has no destination score term and no residual. ``reset_parameters()`` draws PyG's
initialisation in PyG's order, so after the same ``torch.manual_seed`` a layer holds PyG's values.
One difference: the dropout mask is a function of (seed, destination, source, head), so repeated
edges between the same two nodes are dropped together (PyG draws each one independently).

Not supported (a clear error, not a silent difference): CUDA tensors, sparse-tensor adjacency
(``torch.sparse`` or ``torch_sparse.SparseTensor``; pass ``edge_index``).

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


def _reset_linear(lin: nn.Linear, glorot: bool) -> None:
    """torch_geometric.nn.Linear.reset_parameters: the weight glorot (``weight_initializer='glorot'``)
    or PyG's kaiming_uniform with a = sqrt(5); the bias U(-1/sqrt(in), 1/sqrt(in)). The bounds are
    computed as PyG computes them, so the same generator state gives the same values."""
    fan = lin.in_features
    if glorot:
        _glorot(lin.weight)
    else:
        a = math.sqrt(5)
        bound = math.sqrt(6 / ((1 + a**2) * fan))
        with torch.no_grad():
            lin.weight.uniform_(-bound, bound)
    if lin.bias is not None:
        bound = 1.0 / math.sqrt(fan)
        with torch.no_grad():
            lin.bias.uniform_(-bound, bound)


def _linear(in_channels: int, out_channels: int, bias: bool, glorot: bool) -> nn.Linear:
    """An nn.Linear initialised as torch_geometric.nn.Linear initialises itself when built (no draws
    from torch's generator but PyG's)."""
    lin = torch.nn.utils.skip_init(nn.Linear, in_channels, out_channels, bias=bias)
    _reset_linear(lin, glorot)
    return lin


def _pair(in_channels: Union[int, Tuple[int, int]]) -> Tuple[int, int]:
    return (in_channels, in_channels) if isinstance(in_channels, int) else tuple(in_channels)


_INDEX_DTYPES = (torch.int64, torch.int32)
_SMALL_INDEX_DTYPES = (torch.int16, torch.int8, torch.uint8)


def _is_sparse_adjacency(edge_index) -> bool:
    """A torch.sparse tensor (COO, CSR, ...) or a torch_sparse.SparseTensor (not imported here)."""
    if isinstance(edge_index, torch.Tensor):
        return edge_index.layout != torch.strided
    return type(edge_index).__module__.split(".")[0] == "torch_sparse"


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
        if _is_sparse_adjacency(edge_index):
            layout = (edge_index.layout if isinstance(edge_index, torch.Tensor)
                      else f"{type(edge_index).__module__}.{type(edge_index).__name__}")
            raise _edgeattn.InvalidArgument(
                f"edge_index is a sparse adjacency matrix ({layout}), which edgeattn's layers do not take: "
                f"pass edge_index, a [2, num_edges] integer tensor (row 0 source, row 1 destination). From "
                f"PyG's transposed adjacency adj_t [num_dst, num_src]: adj_t.coalesce().indices().flip(0) for "
                f"a torch.sparse COO tensor (adj_t.to_sparse_coo() first for CSR), or torch.stack([col, row]) "
                f"with row, col, _ = adj_t.coo() for a torch_sparse.SparseTensor")
        if not isinstance(edge_index, torch.Tensor) or edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise _edgeattn.ShapeError(
                f"edge_index: expected a [2, num_edges] integer tensor, found "
                f"{tuple(edge_index.shape) if isinstance(edge_index, torch.Tensor) else type(edge_index).__name__}")
        if edge_index.dtype not in _INDEX_DTYPES + _SMALL_INDEX_DTYPES:
            raise _edgeattn.InvalidArgument(
                f"edge_index has dtype {edge_index.dtype}, expected an integer tensor (torch.int64 or torch.int32): "
                f"node ids are not rounded or reinterpreted")
        if edge_index.dtype in _SMALL_INDEX_DTYPES and not add_self_loops:
            # PyG indexes with edge_index as given (index_select takes int64 and int32 only) unless its
            # add_self_loops has promoted it to int64 first: the same inputs work here.
            raise _edgeattn.InvalidArgument(
                f"edge_index has dtype {edge_index.dtype}, expected torch.int64 or torch.int32 "
                f"(as in PyG: smaller integer types only where GATConv or GATv2Conv add self-loops)")
        if edge_index.device.type != "cpu":
            raise _edgeattn.InvalidArgument(f"edge_index is on {edge_index.device}; edgeattn runs on the CPU")
        key = (edge_index.data_ptr(), edge_index.dtype, edge_index.shape, edge_index.stride(), edge_index._version,
               num_src, num_dst, add_self_loops)
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
    """-> (x_src, x_dst): (x, x) for one tensor x (the same object twice), x_dst None for PyG's
    (x_src, None)."""
    if isinstance(x, (tuple, list)):
        if len(x) != 2:
            raise _edgeattn.InvalidArgument(f"x: expected a tensor or a pair (x_src, x_dst), found {len(x)} items")
        return _node_features(x[0], "x_src"), None if x[1] is None else _node_features(x[1], "x_dst")
    x = _node_features(x, "x")
    return x, x


def _require_x_dst(layer: str, x_dst, what: str) -> torch.Tensor:
    if x_dst is None:  # PyG fails here too (an assert, or linear() of None)
        raise _edgeattn.InvalidArgument(
            f"{layer}: x is (x_src, None), but {what} need the destination nodes' features: pass x, or "
            f"(x_src, x_dst) with x_dst [num_dst, in_channels]")
    return x_dst


def _dropout_factors(seed: int, edge_index: torch.Tensor, heads: int, p: float) -> torch.Tensor:
    """[E, H] float32: the factor (0, or 1/(1-p)) attention dropout applied to each edge's weight in
    the kernel called with ``seed`` (the kernel returns the weights before dropout), from the
    library's own mask function."""
    return torch.from_numpy(_edgeattn.attention_dropout_factors(
        edge_index[0].numpy(), edge_index[1].numpy(), heads, p, seed))


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

    #: whether return_attention_weights gives the weights after attention dropout (PyG's GATConv
    #: and GATv2Conv) or before it (PyG's TransformerConv)
    _weights_after_dropout = True

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

    def _attend(self, edge_index, num_src: int, num_dst: int, want_weights: bool, per_edge=None, **operands):
        """-> (out [num_dst, H*Dv] (concat) or [num_dst, Dv] (mean) in value's dtype, the edge_index
        attended over as PyG returns it, alpha [E', H] in its order or None). per_edge: a function
        (edge_index it attends over, kept mask) -> {operand name: [E', ...] tensor in that
        edge_index's order}, or None; they are permuted into the graph's CSR order."""
        from .torch import attention

        graph, ei, kept, perm = self._cache.get(edge_index, num_src, num_dst, self.add_self_loops)
        # PyG returns the given tensor when it adds no self-loops, else the int64 one it built.
        returned_ei = ei if self.add_self_loops else edge_index
        value = operands["value"]
        dtype, heads = value.dtype, self.heads
        if ei.size(1) == 0:
            # No messages: zeros, as PyG's scatter of none gives (the kernel takes no empty graph or
            # node set). The empty slice keeps the operands in autograd, so their gradients are
            # zeros, as in PyG, not None.
            shape = (num_dst, heads * value.size(-1)) if self.concat else (num_dst, value.size(-1))
            anchor = sum(t.reshape(-1)[:0].sum() for t in operands.values() if isinstance(t, torch.Tensor))
            out = value.new_zeros(shape) + anchor
            return out, returned_ei, value.new_zeros(0, heads) if want_weights else None
        if per_edge is not None:
            if bool((perm < 0).any()):  # from_edge_index keeps every edge (duplicates="keep")
                raise _edgeattn.GraphError("edge_attr: the graph dropped some of edge_index's edges")
            for name, t in per_edge(ei, kept).items():
                operands[name] = t[perm]
        dropout, seed = (self.dropout if self.training else 0.0), self._seed()
        result = attention(graph, **operands, combine="concat" if self.concat else "mean", dropout=dropout,
                           seed=seed, return_attention=want_weights, attention_order="input")
        out, alpha = (result if want_weights else (result, None))
        out = (out.flatten(1) if self.concat else out).to(dtype)
        if alpha is not None:
            if dropout > 0 and self._weights_after_dropout:
                alpha = alpha * _dropout_factors(seed, ei, heads, dropout)
            alpha = alpha.to(dtype)
        return out, returned_ei, alpha

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"


class _GatFamilyConv(_AttentionConv):
    """GATConv's and GATv2Conv's common tail: the residual of the destination features (none for
    PyG's x=(x_src, None)) and the bias."""

    def _finish(self, out, x_dst, ei, alpha, return_attention_weights):
        if self.res is not None and x_dst is not None:
            out = out + self.res(x_dst)
        if self.bias is not None:
            out = out + self.bias
        return (out, (ei, alpha)) if return_attention_weights else out


class GATConv(_GatFamilyConv):
    """torch_geometric.nn.GATConv (Velickovic et al. 2018) on edgeattn's kernel.

    Parameters (PyG names and shapes): ``lin.weight`` [H*C, in] (or ``lin_src`` / ``lin_dst`` for
    bipartite ``in_channels=(in_src, in_dst)``), ``att_src``, ``att_dst`` [1, H, C], ``bias``
    [H*C] or [C], ``res.weight`` when ``residual``, ``lin_edge.weight`` [H*C, edge_dim] and
    ``att_edge`` [1, H, C] when ``edge_dim``.

    ``x`` is one tensor (sources and destinations), ``(x_src, x_dst)``, or ``(x_src, None)``: then,
    as in PyG, the score has no destination term (alpha_ij = softmax_j(LeakyReLU(a_src . W x_j
    [+ a_edge . W_e e_ij]))), there is no residual, and the destinations are ``size[1]`` (default:
    as many as sources), the first min(size) of them getting self-loops."""

    def __init__(self, in_channels: Union[int, Tuple[int, int]], out_channels: int, heads: int = 1,
                 concat: bool = True, negative_slope: float = 0.2, dropout: float = 0.0,
                 add_self_loops: bool = True, edge_dim: Optional[int] = None, fill_value="mean",
                 bias: bool = True, residual: bool = False) -> None:
        super().__init__(heads, concat, dropout, add_self_loops, edge_dim)
        self.in_channels, self.out_channels, self.negative_slope = in_channels, out_channels, negative_slope
        self.fill_value, self.residual = fill_value, residual
        in_src, in_dst = _pair(in_channels)
        # Built in PyG's order, each Linear initialised as it is built, as PyG's are, then
        # reset_parameters: torch's generator is drawn from exactly as PyG draws from it.
        if isinstance(in_channels, int):
            self.lin = _linear(in_channels, heads * out_channels, False, True)
            self.lin_src = self.lin_dst = None
        else:
            self.lin = None
            self.lin_src = _linear(in_src, heads * out_channels, False, True)
            self.lin_dst = _linear(in_dst, heads * out_channels, False, True)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        if edge_dim is not None:
            self.lin_edge = _linear(edge_dim, heads * out_channels, False, True)
            self.att_edge = nn.Parameter(torch.empty(1, heads, out_channels))
        else:
            self.lin_edge = None
            self.register_parameter("att_edge", None)
        width = heads * out_channels if concat else out_channels
        self.res = _linear(in_dst, width, False, True) if residual else None
        self.bias = nn.Parameter(torch.empty(width)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyG's initialisation: every weight and attention vector glorot, the bias zeros."""
        for lin in (self.lin, self.lin_src, self.lin_dst, self.lin_edge, self.res):
            if lin is not None:
                _reset_linear(lin, True)
        for att in (self.att_src, self.att_dst, self.att_edge):
            if att is not None:
                _glorot(att)
        if self.bias is not None:
            with torch.no_grad():
                self.bias.zero_()

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

    def _num_dst(self, size, n_src: int, x_dst, one_tensor: bool) -> int:
        """The destinations: x_dst's rows (x's for one tensor x), or size[1] for (x_src, None); a
        given size=(num_src, num_dst) must agree with the inputs it describes (PyG raises too)."""
        if size is None:
            return n_src if x_dst is None else x_dst.size(0)
        if len(size) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in size):
            raise _edgeattn.InvalidArgument(f"GATConv: size is {size!r}, expected (num_src, num_dst) integers")
        if size[0] != n_src:
            raise _edgeattn.ShapeError(f"GATConv: size[0] is {size[0]}, but x_src has {n_src} rows")
        if one_tensor and size[1] != n_src:
            raise _edgeattn.ShapeError(
                f"GATConv: size[1] is {size[1]}, but x has {n_src} rows (one tensor x is both the sources and "
                f"the destinations; for other destinations pass x=(x_src, x_dst), or (x_src, None) with size)")
        if x_dst is not None and size[1] != x_dst.size(0):
            raise _edgeattn.ShapeError(f"GATConv: size[1] is {size[1]}, but x_dst has {x_dst.size(0)} rows")
        if size[1] < 0:
            raise _edgeattn.ShapeError(f"GATConv: size[1] is {size[1]}, expected >= 0")
        return size[1]

    def forward(self, x, edge_index, edge_attr=None, size=None, return_attention_weights=None):
        x_src, x_dst = _split_input(x)
        h, c = self.heads, self.out_channels
        lin_src, lin_dst = (self.lin, self.lin) if self.lin is not None else (self.lin_src, self.lin_dst)
        hs = lin_src(x_src).view(-1, h, c)
        n_src = hs.size(0)
        n_dst = self._num_dst(size, n_src, x_dst, one_tensor=not isinstance(x, (tuple, list)))
        if x_dst is None:
            # PyG's (x_src, None): alpha_dst is None, each edge's score is its source's term alone.
            scores = dict(score_dst=hs.new_zeros(n_dst, h), score_src=(hs * self.att_src).sum(-1))
        elif x_dst is x_src and self.lin is not None:
            # One node set: the kernel takes both score terms from hs (destination i is source i)
            # and folds their gradients into hs's in its backward.
            scores = dict(att_dst=self.att_dst.view(h, c), att_src=self.att_src.view(h, c))
        else:
            hd = lin_dst(x_dst).view(-1, h, c)
            scores = dict(score_dst=(hd * self.att_dst).sum(-1), score_src=(hs * self.att_src).sum(-1))
        out, ei, alpha = self._attend(edge_index, n_src, n_dst, bool(return_attention_weights),
                                      per_edge=self._edge_scores(edge_attr), value=hs, **scores,
                                      score="additive", negative_slope=self.negative_slope)
        return self._finish(out, x_dst, ei, alpha, return_attention_weights)


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
        self.fill_value, self.residual, self.share_weights = fill_value, residual, share_weights
        in_src, in_dst = _pair(in_channels)
        # PyG's order of construction and initialisation (see GATConv.__init__)
        self.lin_l = _linear(in_src, heads * out_channels, bias, True)
        self.lin_r = self.lin_l if share_weights else _linear(in_dst, heads * out_channels, bias, True)
        self.att = nn.Parameter(torch.empty(1, heads, out_channels))
        self.lin_edge = _linear(edge_dim, heads * out_channels, False, True) if edge_dim is not None else None
        width = heads * out_channels if concat else out_channels
        self.res = _linear(in_dst, width, False, True) if residual else None
        self.bias = nn.Parameter(torch.empty(width)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyG's initialisation: lin_l, lin_r (again when shared, as PyG), lin_edge and res glorot
        with lin_l's and lin_r's biases U(+-1/sqrt(in)), att glorot, the bias zeros."""
        for lin in (self.lin_l, self.lin_r, self.lin_edge, self.res):
            if lin is not None:
                _reset_linear(lin, True)
        _glorot(self.att)
        if self.bias is not None:
            with torch.no_grad():
                self.bias.zero_()

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        x_src, x_dst = _split_input(x)
        x_dst = _require_x_dst("GATv2Conv", x_dst, "its scores (W_r x_i for each destination i)")
        h, c = self.heads, self.out_channels
        xl = self.lin_l(x_src).view(-1, h, c)
        xr = xl if (x_dst is x_src and self.share_weights) else self.lin_r(x_dst).view(-1, h, c)
        n_src, n_dst = xl.size(0), xr.size(0)
        per_edge, edge_proj = None, None
        if edge_attr is not None:
            attr = _edge_attr_2d("GATv2Conv", edge_attr, self.edge_dim)
            per_edge = lambda ei, kept: {  # noqa: E731
                "edge_attr": _with_loop_attr("GATv2Conv", attr, ei, kept, self.fill_value).to(xl.dtype)}
            # lin_edge.weight [H*C, F] is the kernel's edge projection [H, C, F] as it is.
            edge_proj = self.lin_edge.weight.view(h, c, -1)
        out, ei, alpha = self._attend(edge_index, n_src, n_dst, bool(return_attention_weights), per_edge=per_edge,
                                      query=xr, key=xl, value=xl, att=self.att.view(h, c), edge_proj=edge_proj,
                                      score="gatv2", negative_slope=self.negative_slope)
        return self._finish(out, x_dst, ei, alpha, return_attention_weights)


class TransformerConv(_AttentionConv):
    """torch_geometric.nn.TransformerConv (Shi et al. 2021): alpha_ij = softmax_j(q_i . k_j / sqrt(C)),
    out_i = sum_j alpha_ij v_j (+ lin_skip(x_i) when root_weight, gated by beta when beta=True).

    Parameters: ``lin_key``, ``lin_query``, ``lin_value`` [H*C, in] (biases when ``bias``),
    ``lin_skip`` [H*C or C, in_dst] (bias when ``bias``; used when ``root_weight``), ``lin_beta``
    [1, 3*width] (no bias) when ``beta`` and ``root_weight`` (``self.beta`` is ``beta and
    root_weight``, as in PyG). ``lin_edge.weight`` [H*C, edge_dim] (no bias) when ``edge_dim``
    (then ``edge_attr`` is required): each edge's projection is added to its key and value. No
    self-loops are added (as in PyG). ``return_attention_weights`` returns the weights before
    attention dropout, and does so for any bool, ``False`` too (PyG's test is ``isinstance(.., bool)``)."""

    _weights_after_dropout = False  # PyG keeps them before F.dropout

    def __init__(self, in_channels: Union[int, Tuple[int, int]], out_channels: int, heads: int = 1,
                 concat: bool = True, beta: bool = False, dropout: float = 0.0, edge_dim: Optional[int] = None,
                 bias: bool = True, root_weight: bool = True) -> None:
        super().__init__(heads, concat, dropout, False, edge_dim)
        self.in_channels, self.out_channels, self.root_weight = in_channels, out_channels, root_weight
        self.beta = beta and root_weight  # as PyG: beta takes effect only with root_weight
        in_src, in_dst = _pair(in_channels)
        # PyG's order of construction and initialisation (PyG's default Linear init: kaiming_uniform)
        self.lin_key = _linear(in_src, heads * out_channels, bias, False)
        self.lin_query = _linear(in_dst, heads * out_channels, bias, False)
        self.lin_value = _linear(in_src, heads * out_channels, bias, False)
        self.lin_edge = _linear(edge_dim, heads * out_channels, False, False) if edge_dim is not None else None
        width = heads * out_channels if concat else out_channels
        # As PyG: lin_skip exists even without root_weight (unused then), so state dicts match.
        self.lin_skip = _linear(in_dst, width, bias, False)
        self.lin_beta = _linear(3 * width, 1, False, False) if self.beta else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyG's initialisation: each Linear's weight kaiming_uniform (a = sqrt(5)), biases U(+-1/sqrt(in))."""
        for lin in (self.lin_key, self.lin_query, self.lin_value, self.lin_edge, self.lin_skip, self.lin_beta):
            if lin is not None:
                _reset_linear(lin, False)

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        x_src, x_dst = _split_input(x)
        x_dst = _require_x_dst("TransformerConv", x_dst, "its queries (lin_query of each destination)")
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
        elif self.edge_dim is not None:  # PyG asserts edge_attr is not None
            raise _edgeattn.InvalidArgument(
                f"TransformerConv: the layer has edge_dim={self.edge_dim} but no edge_attr was given "
                f"(pass edge_attr [num_edges, {self.edge_dim}])")
        want = isinstance(return_attention_weights, bool)
        out, ei, alpha = self._attend(edge_index, k.size(0), q.size(0), want, per_edge=per_edge,
                                      query=q, key=k, value=v, edge_proj=edge_proj, score="dot_product",
                                      scale=1.0 / math.sqrt(c))
        if self.root_weight:
            x_r = self.lin_skip(x_dst)
            if self.lin_beta is not None:
                b = torch.sigmoid(self.lin_beta(torch.cat([out, x_r, out - x_r], dim=-1)))
                out = b * x_r + (1 - b) * out
            else:
                out = out + x_r
        return (out, (ei, alpha)) if want else out
