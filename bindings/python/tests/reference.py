"""Independent float64 NumPy oracles for the tests (written from the formulas in
include/edgeattn/kernels/attention.hpp, not from the C++ code)."""

import numpy as np


def leaky(x, slope):
    return np.where(x > 0, x, slope * x)


def edge_scores(score, src, dst, ops, scale=0.0, slope=0.2):
    """Scores [E, H] of the edges src[e] -> dst[e]."""
    f = {k: (None if v is None else np.asarray(v, dtype=np.float64)) for k, v in ops.items()}
    if score == "dot_product":
        dk = f["query"].shape[2]
        s = scale or 1.0 / np.sqrt(dk)
        return s * np.einsum("ehd,ehd->eh", f["query"][dst], f["key"][src])
    if score == "additive":
        return leaky(f["score_dst"][dst] + f["score_src"][src], slope)
    if score == "gatv2":
        return np.einsum("ehd,hd->eh", leaky(f["query"][dst] + f["key"][src], slope), f["att"])
    if score == "bilinear":
        dk = f["query"].shape[2]
        s = scale or 1.0 / np.sqrt(dk)
        return s * np.einsum("ehd,hdc,ehc->eh", f["query"][dst], f["weight"], f["key"][src])
    if score == "perceptron":
        wq = np.einsum("hcd,nhd->nhc", f["weight"], f["query"])
        uk = np.einsum("hcd,nhd->nhc", f["key_weight"], f["key"])
        return np.einsum("ehc,hc->eh", np.tanh(wq[dst] + uk[src]), f["att"])
    raise ValueError(score)


def attention(num_dst, src, dst, score, ops, normalization="softmax", combine="concat", scale=0.0, slope=0.2):
    """(out, alpha[E, H]) in float64 for the edge list src -> dst."""
    src = np.asarray(src)
    dst = np.asarray(dst)
    e = edge_scores(score, src, dst, ops, scale, slope)
    if ops.get("edge_bias") is not None:
        e = e + np.asarray(ops["edge_bias"], dtype=np.float64)
    alpha = np.zeros_like(e)
    if normalization == "softmax":
        for i in range(num_dst):
            rows = dst == i
            if rows.any():
                x = e[rows]
                x = np.exp(x - x.max(axis=0))
                alpha[rows] = x / x.sum(axis=0)
    else:
        alpha = np.maximum(e, 0)
    v = np.asarray(ops["value"], dtype=np.float64)
    out = np.zeros((num_dst, v.shape[1], v.shape[2]))
    np.add.at(out, dst, alpha[:, :, None] * v[src])
    if combine == "mean":
        out = out.mean(axis=1)
    return out, alpha
