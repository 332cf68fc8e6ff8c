import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import edgeattn as ea  # noqa: E402
import edgeattn.torch as et  # noqa: E402


def test_complete_pattern_matches_dense_softmax_attention_within_1e5():
    torch.manual_seed(0)
    n, m, h, d = 33, 41, 4, 16
    q, k, v = torch.randn(n, h, d), torch.randn(m, h, d), torch.randn(m, h, d)
    # PyTorch's dense attention in float64: softmax(Q K^T / sqrt(d)) V per head
    q64, k64, v64 = (x.double().transpose(0, 1) for x in (q, k, v))
    dense = torch.softmax(q64 @ k64.transpose(1, 2) / math.sqrt(d), dim=-1) @ v64
    expected = dense.transpose(0, 1)
    for path in ("sparse", "dense", "automatic"):
        out = et.attention(ea.CompletePattern(n, m), query=q, key=k, value=v, path=path)
        assert out.shape == (n, h, d) and out.dtype == torch.float32
        assert (out.double() - expected).abs().max().item() < 1e-5, path
    # and the same through the explicit graph of the complete pattern
    out = et.attention(ea.CompletePattern(n, m).materialize(), query=q, key=k, value=v)
    assert (out.double() - expected).abs().max().item() < 1e-5


def test_complete_pattern_gradients_match_pytorch_autograd():
    torch.manual_seed(1)
    n, h, d = 20, 2, 8
    q, k, v = (torch.randn(n, h, d, requires_grad=True) for _ in range(3))
    w = torch.randn(n, h, d)
    (et.attention(ea.CompletePattern(n, n), query=q, key=k, value=v) * w).sum().backward()
    mine = [x.grad.clone() for x in (q, k, v)]
    q2, k2, v2 = (x.detach().double().requires_grad_() for x in (q, k, v))
    qt, kt, vt = (x.transpose(0, 1) for x in (q2, k2, v2))
    ref = (torch.softmax(qt @ kt.transpose(1, 2) / math.sqrt(d), dim=-1) @ vt).transpose(0, 1)
    (ref * w.double()).sum().backward()
    for a, b in zip(mine, (q2.grad, k2.grad, v2.grad)):
        assert (a.double() - b).abs().max().item() < 1e-5


def small_graph():
    ei = np.array([[0, 1, 2, 3, 0, 4, 2], [1, 2, 3, 4, 4, 0, 0]])
    return ea.Graph.from_edge_index(ei, num_nodes=5, self_loops="add")


# gradcheck: the kernels compute in float32, so the inputs are float64 (gradcheck's requirement;
# edgeattn.torch converts them to float32) and the finite differences use eps=1e-3 with
# atol=rtol=1e-2, i.e. the float32 kernel's analytic gradients against its own float32 numerics.
GRADCHECK = dict(eps=1e-3, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("combine", ["concat", "mean"])
@pytest.mark.parametrize("normalization", ["softmax", "relu"])
def test_gradcheck_dot_product(combine, normalization):
    torch.manual_seed(2)
    g = small_graph()
    q, k, v = (torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True) for _ in range(3))
    f = lambda q, k, v: et.attention(g, query=q, key=k, value=v, combine=combine, normalization=normalization)
    assert torch.autograd.gradcheck(f, (q, k, v), **GRADCHECK)


def test_gradcheck_additive_with_edge_bias():
    torch.manual_seed(3)
    g = small_graph()
    sd, ss = (torch.randn(5, 2, dtype=torch.float64, requires_grad=True) for _ in range(2))
    v = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(g.num_edges, 2, dtype=torch.float64, requires_grad=True)
    f = lambda sd, ss, v, b: et.attention(g, score_dst=sd, score_src=ss, value=v, edge_bias=b, score="additive")
    assert torch.autograd.gradcheck(f, (sd, ss, v, bias), **GRADCHECK)


@pytest.mark.parametrize("score", ["gatv2", "bilinear", "perceptron"])
def test_gradcheck_parametrised_scores(score):
    torch.manual_seed(4)
    g = small_graph()
    r = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
    q, k, v = r(5, 2, 3), r(5, 2, 3), r(5, 2, 3)
    extra = {"gatv2": dict(att=r(2, 3)), "bilinear": dict(weight=r(2, 3, 3)),
             "perceptron": dict(weight=r(2, 4, 3), key_weight=r(2, 4, 3), att=r(2, 4))}[score]
    names = list(extra)

    def f(q, k, v, *xs):
        return et.attention(g, query=q, key=k, value=v, score=score, **dict(zip(names, xs)))

    assert torch.autograd.gradcheck(f, (q, k, v, *extra.values()), **GRADCHECK)


def test_float32_inputs_pass_without_copy_and_outputs_share_the_result():
    g = small_graph()
    q = torch.randn(5, 2, 3)
    out, alpha = et.attention(g, query=q, key=q, value=q, return_attention=True, attention_order="input")
    assert alpha.shape == (7, 2) and not alpha.requires_grad
    direct = ea.attention_forward(g, query=q.numpy(), key=q.numpy(), value=q.numpy(), return_attention=True,
                                  attention_order="input")
    assert torch.equal(out, torch.from_numpy(direct.out))
    assert torch.equal(alpha, torch.from_numpy(direct.attention))


def test_trains_through_the_kernel():
    torch.manual_seed(5)
    g = small_graph()
    lin = torch.nn.Linear(3, 6)
    x = torch.randn(5, 3)
    target = torch.randn(5, 2, 3)
    opt = torch.optim.Adam(lin.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        h = lin(x).view(5, 2, 3)
        loss = (et.attention(g, query=h, key=h, value=h) - target).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]


def test_errors_from_torch_inputs():
    g = small_graph()
    q = torch.randn(5, 2, 3)
    with pytest.raises(ea.ShapeError, match="value"):
        et.attention(g, query=q, key=q, value=torch.randn(4, 2, 3))
    with pytest.raises(TypeError):
        et.attention(g, query=q.numpy(), key=q, value=q)
    # Floating point only: complex would lose its imaginary part, integers are no operands.
    for bad in (torch.complex64, torch.int64):
        with pytest.raises(ea.InvalidArgument, match=f"tensor of dtype {bad}, expected a floating-point tensor"):
            et.attention(g, query=q, key=q, value=q.to(bad))
    # the output is saved for backward: modifying it in place is caught by autograd
    qq = q.clone().requires_grad_()
    out = et.attention(g, query=qq, key=qq, value=qq)
    out.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def pyg_gat_conv(x, mask, weight, att_src, att_dst, bias, heads, concat, slope=0.2):
    """PyTorch Geometric's GATConv (eval mode) written densely in float64 from its parameters:
    mask[i, j] says j -> i is an edge (self-loops included)."""
    n = x.shape[0]
    h = (x @ weight.T).view(n, heads, -1)  # [N, H, C]
    a_src = (h * att_src).sum(-1)  # [N, H]
    a_dst = (h * att_dst).sum(-1)
    e = torch.nn.functional.leaky_relu(a_dst.T[:, :, None] + a_src.T[:, None, :], slope)  # [H, dst, src]
    e = e.masked_fill(~mask, float("-inf"))
    out = torch.softmax(e, dim=-1) @ h.transpose(0, 1)  # [H, N, C]
    out = out.transpose(0, 1).reshape(n, -1) if concat else out.mean(0)
    return out + bias


def test_gat_model_weights_copy_into_pytorch_geometric_layers():
    ds = ea.sbm_dataset(num_nodes=200, num_classes=3, feature_dim=10, num_val=50, num_test=50, seed=6)
    model = ea.Model(kind="gat", in_channels=10, num_classes=3, hidden=4, heads=3, out_heads=2, seed=1)
    p = {n: torch.from_numpy(np.array(model.parameter(n))).double() for n in model.parameter_names()}
    ei = torch.from_numpy(ds.graph.edge_index())
    mask = torch.eye(200, dtype=torch.bool)
    mask[ei[1], ei[0]] = True
    x = torch.from_numpy(np.array(ds.dense_features)).double()
    h = pyg_gat_conv(x, mask, p["conv1.lin.weight"], p["conv1.att_src"], p["conv1.att_dst"], p["conv1.bias"], 3, True)
    h = torch.nn.functional.elu(h)
    logits = pyg_gat_conv(h, mask, p["conv2.lin.weight"], p["conv2.att_src"], p["conv2.att_dst"], p["conv2.bias"],
                          2, False)
    mine = torch.from_numpy(model.logits(ds)).double()
    assert (mine - logits).abs().max().item() < 1e-4
    # and back: weights written from PyTorch change edgeattn's model the same way
    w = torch.randn(12, 10, dtype=torch.float64)
    model.set_parameter("conv1.lin.weight", w.float().numpy())
    p["conv1.lin.weight"] = w.float().double()
    h = torch.nn.functional.elu(
        pyg_gat_conv(x, mask, p["conv1.lin.weight"], p["conv1.att_src"], p["conv1.att_dst"], p["conv1.bias"], 3, True))
    logits = pyg_gat_conv(h, mask, p["conv2.lin.weight"], p["conv2.att_src"], p["conv2.att_dst"], p["conv2.bias"],
                          2, False)
    assert (torch.from_numpy(model.logits(ds)).double() - logits).abs().max().item() < 1e-4


def test_gat_conv_layer_matches_pytorch_geometric_semantics():
    ds = ea.sbm_dataset(num_nodes=120, num_classes=3, feature_dim=6, num_val=30, num_test=30, seed=2)
    conv = ea.GATConv(6, 5, heads=2, seed=3)
    assert {n: conv.parameter(n).shape for n in conv.parameter_names()} == {
        "lin.weight": (10, 6), "att_src": (1, 2, 5), "att_dst": (1, 2, 5), "bias": (10,)}
    conv.set_parameter("bias", np.linspace(-1, 1, 10, dtype=np.float32))
    x = np.array(ds.dense_features)  # a writable copy, for torch.from_numpy below
    out, alpha = conv(ds.graph, x, return_attention=True)
    assert out.shape == (120, 10) and alpha.shape == (ds.num_edges + 120, 2)
    p = {n: torch.from_numpy(np.array(conv.parameter(n))).double() for n in conv.parameter_names()}
    ei = torch.from_numpy(ds.graph.edge_index())
    mask = torch.eye(120, dtype=torch.bool)
    mask[ei[1], ei[0]] = True
    ref = pyg_gat_conv(torch.from_numpy(x).double(), mask, p["lin.weight"], p["att_src"], p["att_dst"], p["bias"], 2,
                       True)
    assert (torch.from_numpy(out).double() - ref).abs().max().item() < 1e-5
    mean = ea.GATConv(6, 5, heads=2, concat=False, bias=False, add_self_loops=False, seed=3)
    assert mean.parameter_names() == ["lin.weight", "att_src", "att_dst"]
    assert mean(ds.graph, x).shape == (120, 5)
    with pytest.raises(ea.ShapeError):
        conv(ds.graph, np.zeros((120, 7), np.float32))
    with pytest.raises(ea.ShapeError, match=r"bias has shape \[10\], got \[5\]"):
        conv.set_parameter("bias", np.zeros(5, np.float32))
    with pytest.raises(ea.InvalidArgument):
        ea.GATConv(0, 5)
