"""edgeattn's fused graph attention as a PyTorch autograd function.

``edgeattn.torch.attention(pattern, query=q, key=k, value=v, ...)`` runs
``edgeattn.attention_forward`` on CPU tensors and registers ``edgeattn.attention_backward`` as its
gradient, so a PyTorch model can call the kernel and train through it.

Copies: float32, contiguous CPU tensors go to the kernel through DLPack without a copy, and the
output and gradients come back as tensors sharing the C++ buffers (``torch.from_numpy``). Other
dtypes (e.g. float64, for ``torch.autograd.gradcheck``) and non-contiguous tensors are converted
to float32 contiguous first (a copy); the kernel always computes in float32 and gradients are
returned in each input's dtype. The output must not be modified in place before backward (the
backward pass of concatenated heads reads it; autograd's version check enforces this).

Example::

    import torch, edgeattn, edgeattn.torch as et
    g = edgeattn.Graph.from_edge_index(torch.tensor([[0, 1, 2], [1, 2, 0]]).numpy(), self_loops="add")
    q, k, v = (torch.randn(3, 2, 4, requires_grad=True) for _ in range(3))
    out = et.attention(g, query=q, key=k, value=v)        # [3, 2, 4]
    out.square().sum().backward()                         # q.grad, k.grad, v.grad

PyG's attention layers as modules on this function: ``edgeattn.torch.GATConv``, ``GATv2Conv``,
``TransformerConv`` (see ``edgeattn/torch_conv.py``), with PyG's arguments and parameter names.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from . import _edgeattn

__all__ = ["EdgeAttentionFunction", "GATConv", "GATv2Conv", "TransformerConv", "attention"]

OPERANDS = ("query", "key", "value", "score_dst", "score_src", "weight", "key_weight", "att", "edge_bias",
            "score_edge", "edge_attr", "edge_proj", "att_dst", "att_src")


def _to_kernel(t: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """float32, contiguous, CPU, detached; the same storage when it already is."""
    if t is None:
        return None
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"edgeattn.torch.attention: expected a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise _edgeattn.InvalidArgument(
            f"edgeattn.torch.attention: tensor on device {t.device}; edgeattn runs on the CPU")
    if not t.dtype.is_floating_point:  # complex would lose its imaginary part, integers are no operands
        raise _edgeattn.InvalidArgument(
            f"edgeattn.torch.attention: tensor of dtype {t.dtype}, expected a floating-point tensor "
            f"(float32; float64, float16 and bfloat16 are converted)")
    return t.detach().to(torch.float32).contiguous()


def _from_kernel(a: Any) -> Optional[torch.Tensor]:
    return None if a is None else torch.from_numpy(np.asarray(a))


class EdgeAttentionFunction(torch.autograd.Function):
    """forward(ctx, pattern, options, *operands) with operands in ``OPERANDS`` order (None for
    absent ones) and options the keyword arguments of ``edgeattn.attention_forward``. Returns
    the output, and the attention weights [E, H] (not differentiable) when
    options['return_attention'] is true."""

    @staticmethod
    def forward(ctx, pattern, options: dict, *operands):
        kernel_ops = [_to_kernel(t) for t in operands]
        named = {n: t for n, t in zip(OPERANDS, kernel_ops) if t is not None}
        result = _edgeattn.attention_forward(pattern, **named, **options)
        out = _from_kernel(result.out)
        ctx.pattern = pattern
        ctx.result = result
        ctx.dtypes = [None if t is None else t.dtype for t in operands]
        # out is saved too, so autograd's version check catches in-place edits before backward
        ctx.save_for_backward(*kernel_ops, out)
        if options.get("return_attention", False):
            attention = _from_kernel(result.attention)
            ctx.mark_non_differentiable(attention)
            return out, attention
        return out

    @staticmethod
    def backward(ctx, grad_out, *unused):
        if not any(ctx.needs_input_grad[2:]):
            return (None, None) + (None,) * len(ctx.dtypes)
        kernel_ops = ctx.saved_tensors[:-1]
        named = {n: t for n, t in zip(OPERANDS, kernel_ops) if t is not None}
        grads = _edgeattn.attention_backward(ctx.pattern, ctx.result, _to_kernel(grad_out), **named)
        out = []
        for i, (name, dtype) in enumerate(zip(OPERANDS, ctx.dtypes)):
            if dtype is None or not ctx.needs_input_grad[2 + i] or name not in grads:
                out.append(None)
            else:
                out.append(_from_kernel(grads[name]).to(dtype))
        return (None, None, *out)


def attention(
    pattern,
    *,
    query: Optional[torch.Tensor] = None,
    key: Optional[torch.Tensor] = None,
    value: Optional[torch.Tensor] = None,
    score_dst: Optional[torch.Tensor] = None,
    score_src: Optional[torch.Tensor] = None,
    weight: Optional[torch.Tensor] = None,
    key_weight: Optional[torch.Tensor] = None,
    att: Optional[torch.Tensor] = None,
    edge_bias: Optional[torch.Tensor] = None,
    score_edge: Optional[torch.Tensor] = None,
    edge_attr: Optional[torch.Tensor] = None,
    edge_proj: Optional[torch.Tensor] = None,
    att_dst: Optional[torch.Tensor] = None,
    att_src: Optional[torch.Tensor] = None,
    score: str = "dot_product",
    normalization: str = "softmax",
    combine: str = "concat",
    scale: float = 0.0,
    negative_slope: float = 0.2,
    dropout: float = 0.0,
    seed: int = 0,
    return_attention: bool = False,
    attention_order: str = "csr",
    path: str = "automatic",
):
    """Differentiable graph-masked attention (see ``edgeattn.attention_forward`` for the
    operands and options; ``score_edge`` [E, H] in the graph's CSR order is the additive score's
    per-edge term inside the LeakyReLU, GAT's edge features; ``edge_attr`` [E, F_e] with
    ``edge_proj`` [H, Dk, F_e] are GATv2's edge features, projected inside its activation;
    ``att_dst`` and ``att_src`` [H, Dv] replace ``score_dst`` and ``score_src`` with GAT's terms
    taken from ``value``, destination i being source i, one op forward and backward). Returns
    ``out`` ([num_dst, H, Dv] or [num_dst, Dv] for combine='mean'), or ``(out, attention)`` with
    ``return_attention=True``."""
    options = dict(score=score, normalization=normalization, combine=combine, scale=scale,
                   negative_slope=negative_slope, dropout=dropout, seed=seed,
                   return_attention=return_attention, attention_order=attention_order, path=path)
    operands = (query, key, value, score_dst, score_src, weight, key_weight, att, edge_bias, score_edge,
                edge_attr, edge_proj, att_dst, att_src)
    return EdgeAttentionFunction.apply(pattern, options, *operands)


# PyG's layers as torch.nn.Modules over this function (edgeattn/torch_conv.py).
from .torch_conv import GATConv, GATv2Conv, TransformerConv  # noqa: E402
