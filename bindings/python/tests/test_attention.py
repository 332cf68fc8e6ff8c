import os
import platform

import numpy as np
import pytest

import edgeattn as ea
import reference

RNG = np.random.default_rng(7)
N, H, D, C = 7, 2, 4, 3


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def operands(score, n=N, h=H, d=D):
    ops = dict(value=rand(n, h, d + 1))
    if score in ("dot_product", "bilinear", "gatv2", "perceptron"):
        ops.update(query=rand(n, h, d), key=rand(n, h, d))
    if score == "additive":
        ops.update(score_dst=rand(n, h), score_src=rand(n, h))
    if score == "bilinear":
        ops["weight"] = rand(h, d, d)
    if score == "gatv2":
        ops["att"] = rand(h, d)
    if score == "perceptron":
        ops.update(weight=rand(h, C, d), key_weight=rand(h, C, d), att=rand(h, C))
    return ops


def shuffled_edges(seed=1):
    """A random edge list in random order, with self-loops, as PyG would hand it over."""
    r = np.random.default_rng(seed)
    src = r.integers(0, N, 30)
    dst = r.integers(0, N, 30)
    keep = np.unique(np.stack([src, dst]), axis=1)  # no duplicates, so input order is 1:1
    perm = r.permutation(keep.shape[1])
    return keep[:, perm]


SCORES = ["dot_product", "additive", "gatv2", "bilinear", "perceptron"]


def test_repeated_edges_count_in_the_softmax_as_in_pyg_by_default():
    # 0 -> 2 appears twice: PyG's softmax over 2's in-edges sees it twice (weight 2/3 in all), and so
    # does the default graph; merging it gives a different (1/2, 1/2) result and says so by its size.
    ei = np.array([[0, 1, 0], [2, 2, 2]])
    ops = dict(value=np.stack([np.full((H, D), float(i)) for i in range(N)]).astype(np.float32),
               score_dst=np.zeros((N, H), np.float32), score_src=np.zeros((N, H), np.float32))
    g = ea.Graph.from_edge_index(ei, num_nodes=N)
    assert g.num_edges == 3
    r = ea.attention_forward(g, **ops, score="additive", return_attention=True, attention_order="input")
    out, alpha = reference.attention(N, ei[0], ei[1], "additive", ops)
    np.testing.assert_allclose(r.out, out, atol=1e-6)
    np.testing.assert_allclose(r.attention, alpha, atol=1e-7)
    np.testing.assert_allclose(r.out[2], np.full((H, D), 1.0 / 3.0), atol=1e-6)  # (0 + 1 + 0) / 3
    merged = ea.Graph.from_edge_index(ei, num_nodes=N, duplicates="merge")
    assert merged.num_edges == 2
    m = ea.attention_forward(merged, **ops, score="additive")
    np.testing.assert_allclose(m.out[2], np.full((H, D), 0.5), atol=1e-6)


def test_an_empty_edge_list_has_an_empty_input_order():
    # Built from no edges (perhaps with self-loops added): the input order is empty, not missing.
    ops = dict(value=np.ones((2, H, D), np.float32), score_dst=np.zeros((2, H), np.float32),
               score_src=np.zeros((2, H), np.float32))
    for loops, edges in (("add", 2), ("keep", 0)):
        g = ea.Graph.from_edge_index(np.zeros((2, 0), np.int64), num_nodes=2, self_loops=loops)
        assert g.num_edges == edges
        r = ea.attention_forward(g, **ops, score="additive", return_attention=True, attention_order="input")
        assert r.attention.shape == (0, H)


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("normalization", ["softmax", "relu"])
@pytest.mark.parametrize("combine", ["concat", "mean"])
def test_forward_matches_the_float64_oracle_in_input_edge_order(score, normalization, combine):
    ei = shuffled_edges()
    g = ea.Graph.from_edge_index(ei, num_nodes=N)
    ops = operands(score)
    r = ea.attention_forward(g, **ops, score=score, normalization=normalization, combine=combine,
                             return_attention=True, attention_order="input")
    out, alpha = reference.attention(N, ei[0], ei[1], score, ops, normalization, combine)
    assert r.out.dtype == np.float32 and r.out.shape == out.shape
    np.testing.assert_allclose(r.out, out, atol=2e-5, rtol=1e-4)
    assert r.attention.shape == (ei.shape[1], H) and r.attention_order == "input"
    np.testing.assert_allclose(r.attention, alpha, atol=2e-6, rtol=1e-5)
    # CSR order is the same values permuted by the graph's map
    c = ea.attention_forward(g, **ops, score=score, normalization=normalization, combine=combine,
                             return_attention=True)
    assert (c.attention[g.csr_edge_of_input] == r.attention).all()
    assert (g.to_input_order(c.attention) == r.attention).all()
    assert (normalization == "softmax") == (r.row_stats is not None)


@pytest.mark.parametrize("score", SCORES)
def test_sparse_and_reference_paths_agree_and_runs_are_bit_identical(score):
    g = ea.erdos_renyi_graph(N, 25, seed=5, self_loops="add")
    ops = operands(score)
    a = ea.attention_forward(g, **ops, score=score, path="sparse")
    b = ea.attention_forward(g, **ops, score=score, path="sparse")
    ref = ea.attention_forward(g, **ops, score=score, path="reference")
    assert a.path == "sparse" and ref.path == "reference"
    assert (a.out == b.out).all()  # deterministic
    np.testing.assert_allclose(a.out, ref.out, atol=1e-5, rtol=1e-5)


def test_numpy_and_dlpack_inputs_give_bit_identical_results():
    torch = pytest.importorskip("torch")
    g = ea.erdos_renyi_graph(N, 25, seed=2, self_loops="add")
    ops = operands("dot_product")
    a = ea.attention_forward(g, **ops)
    b = ea.attention_forward(g, **{k: torch.from_numpy(v) for k, v in ops.items()})
    assert (a.out == b.out).all()


def test_edge_bias_and_explicit_scale():
    ei = shuffled_edges(3)
    g = ea.Graph.from_edge_index(ei, num_nodes=N)
    ops = operands("dot_product")
    bias_input = rand(ei.shape[1], H)
    bias_csr = np.ascontiguousarray(bias_input[g.input_edge_of_csr])
    r = ea.attention_forward(g, **ops, edge_bias=bias_csr, scale=0.5)
    out, _ = reference.attention(N, ei[0], ei[1], "dot_product", dict(ops, edge_bias=bias_input), scale=0.5)
    np.testing.assert_allclose(r.out, out, atol=2e-5, rtol=1e-4)


def test_structured_patterns_equal_their_materialised_graph():
    q, k, v = rand(6, 2, 4), rand(6, 2, 4), rand(6, 2, 4)
    for p in (ea.CausalPattern(6, 6), ea.WindowPattern.sliding(6, 1),
              ea.BlockDiagonalPattern.padded_batch(3, np.array([2, 3])), ea.WindowGlobalPattern(6, 1, np.array([2]))):
        a = ea.attention_forward(p, query=q, key=k, value=v, return_attention=True, path="sparse")
        g = p.materialize()
        ei = g.edge_index()
        out, alpha = reference.attention(6, ei[0], ei[1], "dot_product", dict(query=q, key=k, value=v))
        np.testing.assert_allclose(a.out, out, atol=2e-5, rtol=1e-4)
        np.testing.assert_allclose(a.attention, alpha, atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("combine", ["concat", "mean"])
def test_backward_matches_finite_differences_of_the_oracle(score, combine):
    ei = shuffled_edges(4)
    g = ea.Graph.from_edge_index(ei, num_nodes=N)
    ops = operands(score)
    r = ea.attention_forward(g, **ops, score=score, combine=combine)
    grad_out = rand(*r.out.shape)
    grads = ea.attention_backward(g, r, grad_out, **ops)
    assert set(grads) == set(ops)

    def loss(o):
        out, _ = reference.attention(N, ei[0], ei[1], score, o, combine=combine)
        return float((out * grad_out).sum())

    eps = 1e-4
    for name, x in ops.items():
        x64 = x.astype(np.float64)
        num = np.zeros_like(x64)
        for idx in np.ndindex(x.shape):
            plus, minus = x64.copy(), x64.copy()
            plus[idx] += eps
            minus[idx] -= eps
            num[idx] = (loss(dict(ops, **{name: plus})) - loss(dict(ops, **{name: minus}))) / (2 * eps)
        assert grads[name].shape == x.shape and grads[name].dtype == np.float32
        np.testing.assert_allclose(grads[name], num, atol=1e-3, rtol=1e-3, err_msg=name)


@pytest.mark.parametrize("combine", ["concat", "mean"])
def test_additive_scores_from_the_value_equal_the_score_vectors_they_stand_for(combine):
    ei = shuffled_edges(5)
    g = ea.Graph.from_edge_index(ei, num_nodes=N)
    v, a_dst, a_src = rand(N, H, D), rand(H, D), rand(H, D)
    sd, ss = (v * a_dst).sum(-1), (v * a_src).sum(-1)
    opts = dict(score="additive", combine=combine, dropout=0.3, seed=4)
    r = ea.attention_forward(g, value=v, att_dst=a_dst, att_src=a_src, **opts)
    want = ea.attention_forward(g, value=v, score_dst=sd, score_src=ss, **opts)
    np.testing.assert_allclose(r.out, want.out, atol=1e-5, rtol=1e-5)
    grad_out = rand(*r.out.shape)
    grads = ea.attention_backward(g, r, grad_out, value=v, att_dst=a_dst, att_src=a_src)
    assert set(grads) == {"value", "att_dst", "att_src"}
    w = ea.attention_backward(g, want, grad_out, value=v, score_dst=sd, score_src=ss)
    dv = w["value"] + w["score_dst"][:, :, None] * a_dst + w["score_src"][:, :, None] * a_src
    np.testing.assert_allclose(grads["value"], dv, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(grads["att_dst"], (w["score_dst"][:, :, None] * v).sum(0), atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(grads["att_src"], (w["score_src"][:, :, None] * v).sum(0), atol=1e-5, rtol=1e-4)
    with pytest.raises(ea.InvalidArgument, match="not both"):
        ea.attention_forward(g, value=v, score_dst=sd, score_src=ss, att_dst=a_dst, att_src=a_src, **opts)


def test_dropout_is_keyed_by_the_seed():
    g = ea.erdos_renyi_graph(N, 25, seed=2, self_loops="add")
    ops = operands("dot_product")
    a = ea.attention_forward(g, **ops, dropout=0.5, seed=1)
    b = ea.attention_forward(g, **ops, dropout=0.5, seed=1)
    c = ea.attention_forward(g, **ops, dropout=0.5, seed=2)
    assert (a.out == b.out).all() and not (a.out == c.out).all()


def test_operand_errors_carry_the_cpp_message():
    g = ea.erdos_renyi_graph(N, 25, seed=2, self_loops="add")
    ops = operands("dot_product")
    with pytest.raises(ea.InvalidArgument, match="attention_forward: query has dtype float64, expected float32"):
        ea.attention_forward(g, **dict(ops, query=ops["query"].astype(np.float64)))
    with pytest.raises(ea.InvalidArgument, match="query with shape \\[7, 2, 4\\] is not C-contiguous"):
        ea.attention_forward(g, **dict(ops, query=np.asfortranarray(ops["query"])))
    with pytest.raises(ea.InvalidArgument, match="not C-contiguous"):
        ea.attention_forward(g, **dict(ops, value=rand(N, H, 10)[:, :, ::2]))
    with pytest.raises(ea.ShapeError, match=r"value has shape \[8, 2, 5\], expected \[7, 2, \*\]"):
        ea.attention_forward(g, **dict(ops, value=rand(N + 1, H, 5)))
    with pytest.raises(ea.ShapeError, match="key"):
        ea.attention_forward(g, **dict(ops, key=rand(N, H + 1, D)))
    with pytest.raises(ea.ShapeError, match="rank <= 4"):
        ea.attention_forward(g, **dict(ops, key=rand(N, H, D, 1, 1)))
    with pytest.raises(ea.Error, match="value"):
        ea.attention_forward(g, query=ops["query"], key=ops["key"])  # value missing
    with pytest.raises(ea.Error, match="score_dst|score_src"):
        ea.attention_forward(g, **ops, score="additive")  # additive needs the per-node scalars
    with pytest.raises(ea.InvalidArgument, match="unknown value 'softplus'"):
        ea.attention_forward(g, **ops, normalization="softplus")
    with pytest.raises(ea.InvalidArgument, match="combine"):
        ea.attention_forward(g, **ops, combine="sum")
    with pytest.raises(ea.InvalidArgument, match="path"):
        ea.attention_forward(g, **ops, path="gpu")
    with pytest.raises(ea.Error, match="cosine"):
        ea.attention_forward(g, **ops, score="cosine")
    with pytest.raises(ea.InvalidArgument, match="dropout"):
        ea.attention_forward(g, **ops, dropout=1.5)
    with pytest.raises(ea.InvalidArgument, match="attention_order='input' needs a Graph built from an edge list"):
        ea.attention_forward(ea.CompletePattern(N, N), **ops, return_attention=True, attention_order="input")
    with pytest.raises(ea.InvalidArgument, match="attention_order"):
        ea.attention_forward(g, **ops, attention_order="sorted")
    with pytest.raises(ea.GraphError):
        ea.Graph.from_csr(g.indptr, g.indices).to_input_order(rand(g.num_edges, H))
    with pytest.raises(TypeError):
        ea.attention_forward(g, **dict(ops, query=[[1.0]]))
    r = ea.attention_forward(g, **ops)
    with pytest.raises(ea.ShapeError, match="grad_out"):
        ea.attention_backward(g, r, rand(N, H), **ops)
    with pytest.raises(ea.InvalidArgument, match="grad_out has dtype float64"):
        ea.attention_backward(g, r, r.out.astype(np.float64), **ops)


def test_result_arrays_keep_the_result_alive():
    g = ea.erdos_renyi_graph(N, 25, seed=2, self_loops="add")
    ops = operands("dot_product")
    out = ea.attention_forward(g, **ops).out
    import gc

    gc.collect()
    expected = ea.attention_forward(g, **ops).out
    assert (out == expected).all()
    stats = ea.attention_forward(g, **ops).row_stats
    with pytest.raises(ValueError):
        stats[0, 0] = 1.0


def test_the_gil_is_released_while_the_kernel_runs():
    import threading
    import time

    g = ea.erdos_renyi_graph(20000, 400000, seed=1)
    x = rand(20000, 2, 16)
    spans = []

    def work():
        for _ in range(4):
            t0 = time.perf_counter()
            ea.attention_forward(g, query=x, key=x, value=x, path="reference")
            spans.append((t0, time.perf_counter()))

    t = threading.Thread(target=work)
    ticks = []
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    inside = sum(any(a < tick < b for a, b in spans) for tick in ticks)
    # With the GIL held during the call, this thread could not tick at all inside a span.
    assert inside >= 5, (inside, spans)


@pytest.mark.parametrize("score", SCORES)
def test_the_cuda_path_matches_the_reference_or_says_why_it_cannot_run(score):
    g = ea.erdos_renyi_graph(N, 25, seed=5, self_loops="add")
    ops = operands(score)
    if ea.cuda_device() is None:
        assert ea.cuda_unavailable_reason()
        with pytest.raises(ea.DeviceError, match="path=cuda"):
            ea.attention_forward(g, **ops, score=score, path="cuda")
        return
    got = ea.attention_forward(g, **ops, score=score, path="cuda")
    ref = ea.attention_forward(g, **ops, score=score, path="reference")
    assert got.path == "cuda"
    np.testing.assert_allclose(got.out, ref.out, atol=2e-4, rtol=2e-4)
    grad = rand(*ref.out.shape)
    dg = ea.attention_backward(g, got, grad, **ops)
    dr = ea.attention_backward(g, ref, grad, **ops)
    for name in dr:
        np.testing.assert_allclose(dg[name], dr[name], atol=2e-4, rtol=2e-4, err_msg=name)


def test_cuda_device_and_build_flags_are_consistent():
    device = ea.cuda_device()
    assert isinstance(ea.cuda_built(), bool)
    if device is not None:
        assert ea.cuda_built() and device["memory_bytes"] > 0 and len(device["compute_capability"]) == 2
    elif not ea.cuda_built():
        assert "without CUDA" in ea.cuda_unavailable_reason()
    assert issubclass(ea.DeviceError, ea.Error)


def test_blas_info_names_the_kernels_openblas_runs():
    info = ea.blas_info()
    assert set(info) == {"core", "config"}
    assert info["core"] and info["core"] != "unknown"
    assert "OpenBLAS" in info["config"]
    if platform.machine() == "x86_64" and "OPENBLAS_CORETYPE" not in os.environ:
        flags = open("/proc/cpuinfo").read()
        if " avx2 " in flags and " fma " in flags:  # at least AVX2's kernels (kernels/blas.cpp)
            assert info["core"] in {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"}, info
