"""edgeattn.torch.GATConv / GATv2Conv / TransformerConv against the layers' definitions in PyG 2.x,
written out here in float64 PyTorch (scatter softmax over each destination's in-edges): outputs,
attention weights, every gradient, PyG's parameter names, bipartite input, repeated edges and
self-loops, and a short training run."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import edgeattn as ea  # noqa: E402
import edgeattn.torch as et  # noqa: E402


def edge_list(num_src=7, num_dst=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_src, (30,), generator=g)
    dst = torch.randint(0, num_dst, (30,), generator=g)
    ei = torch.stack([src, dst])
    return torch.cat([ei, ei[:, :3]], dim=1)  # three repeated edges, and whatever self-loops came up


def pyg_edges(ei, num_src, num_dst, add_self_loops):
    """PyG's remove_self_loops + add_self_loops (loops appended last)."""
    if not add_self_loops:
        return ei
    ei = ei[:, ei[0] != ei[1]]
    loops = torch.arange(min(num_src, num_dst))
    return torch.cat([ei, torch.stack([loops, loops])], dim=1)


def scatter_softmax_sum(score, value, dst, num_dst):
    """alpha = softmax of score [E, H] over edges with the same dst; out = sum alpha * value [E, H, C]."""
    h = score.size(1)
    e = torch.exp(score)  # float64 and scores of order 1: no shift needed
    z = torch.zeros(num_dst, h, dtype=score.dtype).index_add(0, dst, e)
    alpha = e / z[dst]
    out = torch.zeros(num_dst, h, value.size(2), dtype=score.dtype).index_add(0, dst, alpha[:, :, None] * value)
    return out, alpha


def gat_reference(conv, x, ei, bipartite=False):
    p = {k: v.detach().double().requires_grad_() for k, v in conv.state_dict().items()}
    h, c = conv.heads, conv.out_channels
    if bipartite:
        xs, xd = x
        hs = (xs.double() @ p["lin_src.weight"].T).view(-1, h, c)
        hd = (xd.double() @ p["lin_dst.weight"].T).view(-1, h, c)
    else:
        hs = hd = (x.double() @ p["lin.weight"].T).view(-1, h, c)
    e = pyg_edges(ei, hs.size(0), hd.size(0), conv.add_self_loops)
    a_s, a_d = (hs * p["att_src"]).sum(-1), (hd * p["att_dst"]).sum(-1)
    score = torch.nn.functional.leaky_relu(a_s[e[0]] + a_d[e[1]], conv.negative_slope)
    out, alpha = scatter_softmax_sum(score, hs[e[0]], e[1], hd.size(0))
    out = out.reshape(hd.size(0), h * c) if conv.concat else out.mean(1)
    if "bias" in p:
        out = out + p["bias"]
    return out, alpha, e, p


def check_against(conv, x, ei, reference, atol=2e-5):
    out, (ei_used, alpha) = conv(x, ei, return_attention_weights=True)
    ref, ref_alpha, ref_ei, params = reference
    assert torch.equal(ei_used, ref_ei)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=atol, rtol=1e-4)
    np.testing.assert_allclose(alpha.numpy(), ref_alpha.detach().numpy(), atol=atol)
    w = torch.randn(out.shape, dtype=torch.float64)
    (out.double() * w).sum().backward()
    (ref * w).sum().backward()
    for name, param in conv.named_parameters():
        np.testing.assert_allclose(param.grad.numpy(), params[name].grad.numpy(), atol=1e-4, rtol=1e-3,
                                   err_msg=name)


@pytest.mark.parametrize("concat", [True, False])
def test_gatconv_equals_pyg_semantics_with_repeated_edges_and_self_loops(concat):
    torch.manual_seed(0)
    conv = et.GATConv(5, 3, heads=2, concat=concat)
    x = torch.randn(7, 5)
    ei = edge_list()
    check_against(conv, x, ei, gat_reference(conv, x, ei))


def test_gatconv_bipartite_input():
    torch.manual_seed(1)
    conv = et.GATConv((5, 4), 3, heads=2)
    xs, xd = torch.randn(9, 5), torch.randn(6, 4)
    ei = edge_list(9, 6, seed=3)
    check_against(conv, (xs, xd), ei, gat_reference(conv, (xs, xd), ei, bipartite=True))
    assert conv((xs, xd), ei).shape == (6, 6)
    # PyG's size=(num_src, num_dst) must describe the inputs; it is not silently overridden.
    assert torch.equal(conv((xs, xd), ei, size=(9, 6)), conv((xs, xd), ei))
    with pytest.raises(ea.ShapeError, match=r"size\[0\] is 100, but x_src has 9 rows"):
        conv((xs, xd), ei, size=(100, 6))
    with pytest.raises(ea.ShapeError, match=r"size\[1\] is 5, but x_dst has 6 rows"):
        conv((xs, xd), ei, size=(9, 5))
    with pytest.raises(ea.InvalidArgument, match="expected \\(num_src, num_dst\\) integers"):
        conv((xs, xd), ei, size=(9.0, 6))


def test_pyg_parameter_names_and_shapes():
    names = lambda m: {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert names(et.GATConv(5, 3, heads=2, residual=True)) == {
        "lin.weight": (6, 5), "att_src": (1, 2, 3), "att_dst": (1, 2, 3), "bias": (6,), "res.weight": (6, 5)}
    assert names(et.GATConv((5, 4), 3, heads=2, concat=False)) == {
        "lin_src.weight": (6, 5), "lin_dst.weight": (6, 4), "att_src": (1, 2, 3), "att_dst": (1, 2, 3), "bias": (3,)}
    assert names(et.GATv2Conv(5, 3, heads=2)) == {
        "lin_l.weight": (6, 5), "lin_l.bias": (6,), "lin_r.weight": (6, 5), "lin_r.bias": (6,), "att": (1, 2, 3),
        "bias": (6,)}
    assert set(names(et.TransformerConv(5, 3, heads=2, beta=True))) == {
        "lin_key.weight", "lin_key.bias", "lin_query.weight", "lin_query.bias", "lin_value.weight",
        "lin_value.bias", "lin_skip.weight", "lin_skip.bias", "lin_beta.weight"}


def test_gatv2conv_equals_pyg_semantics():
    torch.manual_seed(2)
    conv = et.GATv2Conv(5, 3, heads=2)
    x = torch.randn(7, 5)
    ei = edge_list(seed=4)
    p = {k: v.detach().double().requires_grad_() for k, v in conv.state_dict().items()}
    xl = (x.double() @ p["lin_l.weight"].T + p["lin_l.bias"]).view(-1, 2, 3)
    xr = (x.double() @ p["lin_r.weight"].T + p["lin_r.bias"]).view(-1, 2, 3)
    e = pyg_edges(ei, 7, 7, True)
    score = (torch.nn.functional.leaky_relu(xl[e[0]] + xr[e[1]], 0.2) * p["att"]).sum(-1)
    out, alpha = scatter_softmax_sum(score, xl[e[0]], e[1], 7)
    check_against(conv, x, ei, (out.reshape(7, 6) + p["bias"], alpha, e, p))


@pytest.mark.parametrize("beta", [False, True])
def test_transformerconv_equals_pyg_semantics(beta):
    torch.manual_seed(3)
    conv = et.TransformerConv(5, 3, heads=2, beta=beta)
    x = torch.randn(7, 5)
    ei = edge_list(seed=5)
    p = {k: v.detach().double().requires_grad_() for k, v in conv.state_dict().items()}
    lin = lambda name: x.double() @ p[name + ".weight"].T + p[name + ".bias"]
    q, k, v = (lin(n).view(-1, 2, 3) for n in ("lin_query", "lin_key", "lin_value"))
    score = (q[ei[1]] * k[ei[0]]).sum(-1) / math.sqrt(3)
    out, alpha = scatter_softmax_sum(score, v[ei[0]], ei[1], 7)
    out = out.reshape(7, 6)
    skip = lin("lin_skip")
    if beta:
        b = torch.sigmoid(torch.cat([out, skip, out - skip], -1) @ p["lin_beta.weight"].T)
        out = b * skip + (1 - b) * out
    else:
        out = out + skip
    check_against(conv, x, ei, (out, alpha, ei, p))


def test_dropout_is_random_in_training_and_off_in_eval():
    torch.manual_seed(4)
    conv = et.GATConv(5, 3, heads=2, dropout=0.5)
    x, ei = torch.randn(7, 5), edge_list()
    a, b = conv(x, ei), conv(x, ei)
    assert not torch.equal(a, b)
    conv.eval()
    assert torch.equal(conv(x, ei), conv(x, ei))


def test_unsupported_options_say_so():
    for layer in (et.GATConv, et.GATv2Conv, et.TransformerConv):
        name = layer.__name__
        conv = layer(5, 3)
        with pytest.raises(ea.InvalidArgument, match=f"{name}: edge_attr was given but the layer has no edge_dim"):
            conv(torch.randn(7, 5), edge_list(), edge_attr=torch.randn(33, 4))
        with pytest.raises(ea.ShapeError, match=r"edge_index: expected a \[2, num_edges\]"):
            conv(torch.randn(7, 5), torch.zeros(3, 4, dtype=torch.int64))
        # Node features are [num_nodes, in_channels]: a batch dimension is not flattened away.
        for shape in ((2, 7, 5), (5,)):
            with pytest.raises(ea.ShapeError, match=r"x has shape .*expected \[num_nodes, in_channels\]"):
                conv(torch.randn(*shape), edge_list())
        # Node ids are integers: a float or bool edge_index is refused, not rounded.
        for dtype in (torch.float32, torch.float64, torch.bool):
            with pytest.raises(ea.InvalidArgument, match=f"edge_index has dtype {dtype}, expected an integer"):
                conv(torch.randn(7, 5), edge_list().to(dtype))
        assert conv(torch.randn(7, 5), edge_list().to(torch.int32)).shape[0] == 7
        with_edges = layer(5, 3, edge_dim=4)
        with pytest.raises(ea.ShapeError, match="edge_dim=4"):
            with_edges(torch.randn(7, 5), edge_list(), edge_attr=torch.randn(33, 2))
        with pytest.raises(ea.ShapeError, match="(33|26) edges"):
            with_edges(torch.randn(7, 5), edge_list(), edge_attr=torch.randn(30, 4))
        if layer is et.TransformerConv:  # no self-loops, no fill_value
            continue
        with pytest.raises(ea.InvalidArgument, match="fill_value is 'median'"):
            layer(5, 3, edge_dim=4, fill_value="median")(torch.randn(7, 5), edge_list(),
                                                         edge_attr=torch.randn(33, 4))
    for layer in (et.GATConv, et.GATv2Conv, et.TransformerConv):
        with pytest.raises(ea.InvalidArgument, match="edge_dim is 0"):
            layer(5, 3, edge_dim=0)


def test_a_two_layer_gat_trains_with_torch_optim():
    torch.manual_seed(5)
    n = 60
    x = torch.randn(n, 8)
    y = (x[:, 0] > 0).long()
    ei = torch.randint(0, n, (2, 300))
    conv1, conv2 = et.GATConv(8, 8, heads=4), et.GATConv(32, 2, heads=1)
    opt = torch.optim.Adam(list(conv1.parameters()) + list(conv2.parameters()), lr=0.01)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(conv2(torch.nn.functional.elu(conv1(x, ei)), ei), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


LAYERS = [et.GATConv, et.GATv2Conv, et.TransformerConv]
GAT_FAMILY = [et.GATConv, et.GATv2Conv]


@pytest.mark.parametrize("layer", LAYERS)
def test_a_graph_without_edges_gives_empty_attention_weights_and_zero_gradients(layer):
    torch.manual_seed(0)
    no_loops = {} if layer is et.TransformerConv else dict(add_self_loops=False)
    no_skip = dict(root_weight=False) if layer is et.TransformerConv else dict(bias=False)
    conv = layer(5, 3, heads=2, **no_loops, **no_skip)
    x, empty = torch.randn(7, 5), torch.empty(2, 0, dtype=torch.int64)
    out, (ei, alpha) = conv(x, empty, return_attention_weights=True)
    assert out.shape == (7, 6) and ei.shape == (2, 0) and alpha.shape == (0, 2)
    assert not out.any()  # no messages, no skip: zeros
    out.sum().backward()  # the projections took part: zero gradients, as in PyG, not None
    assert all(p.grad is not None and not p.grad.any() for n, p in conv.named_parameters() if "skip" not in n)
    # no sources or no destinations, self-loops added where the layer adds them (min(N_src, N_dst) = 0)
    full = layer(5, 3, heads=2)
    for num_src, num_dst in ((0, 4), (4, 0)):
        out, (ei, alpha) = full((torch.randn(num_src, 5), torch.randn(num_dst, 5)), empty,
                                return_attention_weights=True)
        assert out.shape == (num_dst, 6) and ei.shape == (2, 0) and alpha.shape == (0, 2)
    # mean over heads
    out, (_, alpha) = layer(5, 3, heads=2, concat=False, **no_loops)(x, empty, return_attention_weights=True)
    assert out.shape == (7, 3) and alpha.shape == (0, 2)


def test_transformerconv_without_bias_has_no_biases_in_its_projections():
    names = set(et.TransformerConv(5, 3, heads=2, bias=False).state_dict())
    assert names == {"lin_key.weight", "lin_query.weight", "lin_value.weight", "lin_skip.weight"}


def test_gatconv_with_no_destination_features_drops_the_destination_term_and_the_residual():
    torch.manual_seed(8)
    conv = et.GATConv(5, 3, heads=2, residual=True)
    x, ei = torch.randn(7, 5), edge_list()
    out, (e, alpha) = conv((x, None), ei, return_attention_weights=True)
    # the same as x with att_dst and the residual's weight zeroed
    with torch.no_grad():
        conv.att_dst.zero_()
        conv.res.weight.zero_()
    want, (e_want, alpha_want) = conv(x, ei, return_attention_weights=True)
    assert torch.equal(e, e_want)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(alpha, alpha_want)
    # size=(num_src, num_dst) sets the destinations: self-loops on the first min(size) nodes
    out, (e, _) = conv((x, None), torch.tensor([[0, 1, 2], [1, 2, 8]]), size=(7, 9), return_attention_weights=True)
    assert out.shape == (9, 6) and e.shape == (2, 3 + 7)
    for layer in (et.GATv2Conv, et.TransformerConv):  # they need x_dst (PyG fails on an assert / None)
        with pytest.raises(ea.InvalidArgument, match=rf"{layer.__name__}: x is \(x_src, None\)"):
            layer(5, 3)((x, None), ei)


@pytest.mark.parametrize("heads", [2, 5])
@pytest.mark.parametrize("layer", GAT_FAMILY)
def test_training_attention_weights_are_the_ones_used_after_dropout(layer, heads):
    torch.manual_seed(6)
    conv = layer(5, 3, heads=heads, dropout=0.5, bias=False)
    x, ei = torch.randn(7, 5), edge_list()
    out, (e, alpha) = conv(x, ei, return_attention_weights=True)
    conv.eval()
    _, (_, before) = conv(x, ei, return_attention_weights=True)
    kept = alpha != 0
    assert 0.2 < kept.float().mean() < 0.8
    assert torch.equal(alpha[kept], before[kept] * 2)  # survivors scaled by 1 / (1 - p)
    # out_i = sum_j alpha_ij v_j with the returned weights: they are the weights the kernel used
    v = (conv.lin(x) if layer is et.GATConv else conv.lin_l(x)).detach().view(-1, heads, 3)
    want = torch.zeros(7, heads, 3).index_add(0, e[1], alpha[:, :, None] * v[e[0]])
    torch.testing.assert_close(out.detach(), want.reshape(7, -1), atol=1e-5, rtol=1e-5)


def test_transformerconv_returns_the_attention_weights_before_dropout_as_pyg():
    torch.manual_seed(6)
    conv = et.TransformerConv(5, 3, heads=2, dropout=0.5)
    x, ei = torch.randn(7, 5), edge_list()
    out, (_, alpha) = conv(x, ei, return_attention_weights=True)
    conv.eval()
    out_eval, (_, alpha_eval) = conv(x, ei, return_attention_weights=True)
    assert torch.equal(alpha, alpha_eval) and not torch.equal(out, out_eval)


def test_return_attention_weights_is_read_as_each_pyg_layer_reads_it():
    x, ei = torch.randn(7, 5), edge_list()
    for flag, gat_tuple, transformer_tuple in ((None, False, False), (False, False, True), (True, True, True),
                                               (1, True, False), (0, False, False)):
        for layer in LAYERS:
            want = transformer_tuple if layer is et.TransformerConv else gat_tuple
            assert isinstance(layer(5, 3)(x, ei, return_attention_weights=flag), tuple) == want, (layer, flag)


@pytest.mark.parametrize("layer", LAYERS)
def test_the_returned_edge_index_keeps_the_given_dtype_unless_self_loops_are_added(layer):
    x, ei = torch.randn(7, 5), edge_list().to(torch.int32)
    no_loops = {} if layer is et.TransformerConv else dict(add_self_loops=False)
    _, (e, _) = layer(5, 3, **no_loops)(x, ei, return_attention_weights=True)
    assert e is ei  # PyG returns the given tensor
    small = edge_list().to(torch.int16)
    with pytest.raises(ea.InvalidArgument, match="edge_index has dtype torch.int16, expected torch.int64 or torch.int"):
        layer(5, 3, **no_loops)(x, small)
    if layer is et.TransformerConv:
        return
    conv = layer(5, 3)  # PyG's add_self_loops builds an int64 edge_index, from any integer type
    _, (e32, _) = conv(x, ei, return_attention_weights=True)
    assert e32.dtype == torch.int64
    for dtype in (torch.uint8, torch.int8, torch.int16):
        _, (e, _) = conv(x, edge_list().to(dtype), return_attention_weights=True)
        assert torch.equal(e, e32)


@pytest.mark.parametrize("layer,kwargs", [
    (et.GATConv, dict(heads=2, residual=True, edge_dim=2)), (et.GATConv, dict(in_channels=(5, 4), heads=2)),
    (et.GATv2Conv, dict(heads=2, residual=True, edge_dim=2)), (et.GATv2Conv, dict(heads=2, share_weights=True)),
    (et.TransformerConv, dict(heads=2, beta=True, edge_dim=2))])
def test_reset_parameters_redraws_every_parameter_and_keeps_shapes(layer, kwargs):
    args = {"in_channels": 5, "out_channels": 3, **kwargs}
    conv = layer(**args)
    with torch.no_grad():
        for p in conv.parameters():
            p.fill_(0.5)
    conv.reset_parameters()
    for name, p in conv.state_dict().items():
        assert p.shape == layer(**args).state_dict()[name].shape
        if name == "bias":  # GAT's and GATv2's output bias starts at zero (PyG's zeros)
            assert not p.any()
        else:
            assert (p != 0.5).all() and p.std() > 0, name
    torch.manual_seed(3)
    conv.reset_parameters()
    first = {k: v.clone() for k, v in conv.state_dict().items()}
    torch.manual_seed(3)
    conv.reset_parameters()  # torch's generator alone decides the values
    assert all(torch.equal(first[k], v) for k, v in conv.state_dict().items())


def test_repr_and_attributes_are_pygs():
    assert repr(et.GATConv(5, 3)) == "GATConv(5, 3, heads=1)"
    assert repr(et.GATv2Conv(5, 3)) == "GATv2Conv(5, 3, heads=1)"
    assert repr(et.TransformerConv((5, 4), 3, heads=2)) == "TransformerConv((5, 4), 3, heads=2)"
    assert et.GATConv(5, 3, residual=True).residual is True and et.GATConv(5, 3).residual is False
    v2 = et.GATv2Conv(5, 3, residual=True, share_weights=True)
    assert v2.residual is True and v2.share_weights is True and v2.lin_l is v2.lin_r
    assert et.TransformerConv(5, 3, beta=True).beta is True
    assert et.TransformerConv(5, 3, beta=True, root_weight=False).beta is False  # beta and root_weight


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
@pytest.mark.parametrize("layer", LAYERS)
def test_outputs_and_attention_weights_come_back_in_the_inputs_dtype(layer, dtype):
    torch.manual_seed(9)
    conv = layer(5, 3, heads=2).to(dtype)
    x = torch.randn(7, 5, dtype=dtype, requires_grad=True)
    out, (_, alpha) = conv(x, edge_list(), return_attention_weights=True)
    assert out.dtype == dtype and alpha.dtype == dtype
    out.float().sum().backward()
    assert x.grad.dtype == dtype and all(p.grad.dtype == dtype for p in conv.parameters())
    _, (_, alpha) = conv(x, torch.empty(2, 0, dtype=torch.int64), return_attention_weights=True)
    assert alpha.dtype == dtype


def test_what_pyg_refuses_is_refused_with_a_clear_error():
    x, ei = torch.randn(7, 5), edge_list()
    # One tensor x is both the sources and the destinations: size cannot say 5 destinations.
    with pytest.raises(ea.ShapeError, match=r"size\[1\] is 5, but x has 7 rows"):
        et.GATConv(5, 3)(x, ei % 5, size=(7, 5))
    assert et.GATConv(5, 3)(x, ei, size=(7, 7)).shape == (7, 3)
    with pytest.raises(ea.InvalidArgument, match=r"edge_dim=3 but no edge_attr was given"):
        et.TransformerConv(5, 3, edge_dim=3)(x, ei)
    for layer in GAT_FAMILY:  # these take edge_dim without edge_attr, as in PyG (no edge term then)
        assert layer(5, 3, edge_dim=3)(x, ei).shape == (7, 3)
    for dtype in (torch.uint8, torch.int8, torch.int16):
        with pytest.raises(ea.InvalidArgument, match=f"edge_index has dtype {dtype}, expected torch.int64"):
            et.TransformerConv(5, 3)(x, ei.to(dtype))


@pytest.mark.filterwarnings("ignore:Sparse")  # torch's notes on sparse invariant checks and CSR's beta state
@pytest.mark.parametrize("layer", LAYERS)
def test_a_sparse_adjacency_is_refused_with_what_to_pass_instead(layer):
    x, ei = torch.randn(7, 5), edge_list()
    adj_t = torch.sparse_coo_tensor(ei.flip(0), torch.ones(ei.size(1)), (7, 7))
    for adj in (adj_t, adj_t.coalesce().to_sparse_csr()):
        with pytest.raises(ea.InvalidArgument, match=r"sparse adjacency .*adj_t.coalesce\(\).indices\(\).flip\(0\)"):
            layer(5, 3)(x, adj)


# --- Against PyG itself (when torch_geometric is installed: scripts/python_env.sh installs it) ---

PYG_CASES = [
    ("GATConv", dict(in_channels=5, out_channels=3, heads=2, residual=True), False),
    ("GATConv", dict(in_channels=5, out_channels=3, heads=2, concat=False), False),
    ("GATConv", dict(in_channels=(5, 4), out_channels=3, heads=2), True),
    ("GATv2Conv", dict(in_channels=5, out_channels=3, heads=2), False),
    ("GATv2Conv", dict(in_channels=(5, 4), out_channels=3, heads=2, residual=True), True),
    ("TransformerConv", dict(in_channels=5, out_channels=3, heads=2, beta=True), False),
    ("TransformerConv", dict(in_channels=(5, 4), out_channels=3, heads=2, concat=False), True),
    ("GATv2Conv", dict(in_channels=5, out_channels=3, heads=2, share_weights=True, bias=False), False),
    # one tensor x through lin_src and lin_dst (in_channels a pair of equal sizes), as PyG does
    ("GATConv", dict(in_channels=(5, 5), out_channels=3, heads=2, residual=True), False),
]


def gat_edge_reference(conv, x, ei, edge_attr):
    """PyG's GATConv with edge_dim, in float64: remove the given self-loops, add one per node with
    fill_value 'mean' of its in-edges' attributes, alpha = leaky(a_src.h_j + a_dst.h_i +
    a_edge.(W_e x_e)) with the [E, H*C] projection PyG forms."""
    p = {k: v.detach().double().requires_grad_() for k, v in conv.state_dict().items()}
    h, c, n = conv.heads, conv.out_channels, x.size(0)
    hs = (x.double() @ p["lin.weight"].T).view(-1, h, c)
    keep = ei[0] != ei[1]
    e, attr = ei[:, keep], edge_attr.double()[keep]
    total = torch.zeros(n, attr.size(1), dtype=torch.float64).index_add(0, e[1], attr)
    count = torch.zeros(n, dtype=torch.float64).index_add(0, e[1], torch.ones(e.size(1), dtype=torch.float64))
    loops = torch.arange(n)
    e = torch.cat([e, torch.stack([loops, loops])], dim=1)
    attr = torch.cat([attr, total / count.clamp(min=1)[:, None]], dim=0)
    a_edge = ((attr @ p["lin_edge.weight"].T).view(-1, h, c) * p["att_edge"]).sum(-1)
    a_s, a_d = (hs * p["att_src"]).sum(-1), (hs * p["att_dst"]).sum(-1)
    score = torch.nn.functional.leaky_relu(a_s[e[0]] + a_d[e[1]] + a_edge, conv.negative_slope)
    out, alpha = scatter_softmax_sum(score, hs[e[0]], e[1], n)
    out = out.reshape(n, h * c) if conv.concat else out.mean(1)
    return out + p["bias"], alpha, e, p


def test_gatconv_with_edge_features_equals_pyg_semantics():
    torch.manual_seed(3)
    conv = et.GATConv(5, 3, heads=2, edge_dim=4)
    assert dict((k, tuple(v.shape)) for k, v in conv.state_dict().items() if "edge" in k) == {
        "lin_edge.weight": (6, 4), "att_edge": (1, 2, 3)}
    x = torch.randn(7, 5, requires_grad=True)
    ei = edge_list()
    attr = torch.randn(ei.size(1), 4, requires_grad=True)
    out, (ei_m, alpha) = conv(x, ei, edge_attr=attr, return_attention_weights=True)
    want, alpha_want, e, p = gat_edge_reference(conv, x.detach(), ei, attr.detach())
    assert torch.equal(ei_m, e)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(alpha.numpy(), alpha_want.detach().numpy(), atol=2e-6)
    w = torch.randn(out.shape)
    (out * w).sum().backward()
    xd, ad = x.detach().double().requires_grad_(), attr.detach().double().requires_grad_()
    want, _, _, p = gat_edge_reference(conv, xd, ei, ad)
    (want * w.double()).sum().backward()
    mine = dict(conv.named_parameters())
    for name, ref in p.items():
        np.testing.assert_allclose(mine[name].grad.numpy(), ref.grad.numpy(), atol=1e-4, rtol=1e-3, err_msg=name)
    np.testing.assert_allclose(x.grad.numpy(), xd.grad.numpy(), atol=1e-4, rtol=1e-3)
    np.testing.assert_allclose(attr.grad.numpy(), ad.grad.numpy(), atol=1e-4, rtol=1e-3)  # edge_attr learns too
    # 1-D edge attributes are one feature per edge, as in PyG
    one = et.GATConv(5, 3, edge_dim=1)
    flat = torch.randn(ei.size(1))
    assert torch.equal(one(x, ei, edge_attr=flat), one(x, ei, edge_attr=flat[:, None]))


@pytest.fixture
def pyg_nn(tmp_path, monkeypatch):
    """torch_geometric.nn, with the temporary directory pointed at tmp_path while the layers are
    built: PyG 2.x renders each MessagePassing class's propagate() from a template into
    tempfile.gettempdir() and never removes the file (scripts/test_python.sh fails a run whose
    temporary directory is not left empty)."""
    nn = pytest.importorskip("torch_geometric.nn")
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return nn


@pytest.mark.parametrize("fill_value", ["mean", "add", "max", "min", "mul", 0.5, "tensor"])
@pytest.mark.parametrize("bipartite", [False, True])
@pytest.mark.parametrize("layer", ["GATConv", "GATv2Conv"])
def test_edge_features_give_pygs_outputs_and_gradients_for_every_fill_value(layer, fill_value, bipartite, pyg_nn):
    torch.manual_seed(11)
    fill = torch.tensor([0.1, -0.2, 0.3]) if fill_value == "tensor" else fill_value
    kwargs = dict(in_channels=(5, 4) if bipartite else 5, out_channels=3, heads=2, edge_dim=3, fill_value=fill)
    theirs = getattr(pyg_nn, layer)(**kwargs).eval()
    mine = getattr(et, layer)(**kwargs).eval()
    check_edge_features_against_pyg(mine, theirs, bipartite)


@pytest.mark.parametrize("bipartite", [False, True])
@pytest.mark.parametrize("kwargs", [dict(), dict(concat=False), dict(beta=True), dict(root_weight=False)])
def test_transformer_edge_features_give_pygs_outputs_and_gradients(kwargs, bipartite, pyg_nn):
    torch.manual_seed(13)
    args = dict(in_channels=(5, 4) if bipartite else 5, out_channels=3, heads=2, edge_dim=3, **kwargs)
    theirs = pyg_nn.TransformerConv(**args).eval()
    mine = et.TransformerConv(**args).eval()
    check_edge_features_against_pyg(mine, theirs, bipartite)


def check_edge_features_against_pyg(mine, theirs, bipartite):
    """Loads PyG's weights into ``mine`` and compares both on random edge features [E, 3]."""
    mine.load_state_dict(theirs.state_dict())
    if bipartite:
        x = (torch.randn(9, 5), torch.randn(6, 4))
        ei = edge_list(9, 6, seed=4)
    else:
        x = torch.randn(7, 5)
        ei = edge_list(seed=4)
    attr_t = torch.randn(ei.size(1), 3, requires_grad=True)
    attr_m = attr_t.detach().clone().requires_grad_()
    out_t, (ei_t, alpha_t) = theirs(x, ei, edge_attr=attr_t, return_attention_weights=True)
    out_m, (ei_m, alpha_m) = mine(x, ei, edge_attr=attr_m, return_attention_weights=True)
    assert_same_as_pyg(mine, theirs, (out_m, ei_m, alpha_m), (out_t, ei_t, alpha_t), [(attr_m, attr_t)])


def assert_same_as_pyg(mine, theirs, got, expected, inputs):
    """mine's (out, edge_index, alpha) equal PyG's, and so do the gradients of a random weighted
    sum of the outputs: every parameter's and each (mine, theirs) input pair's."""
    (out_m, ei_m, alpha_m), (out_t, ei_t, alpha_t) = got, expected
    assert torch.equal(ei_m, ei_t)
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(alpha_m.numpy(), alpha_t.detach().numpy(), atol=2e-6)
    w = torch.randn(out_t.shape)
    (out_t * w).sum().backward()
    (out_m * w).sum().backward()
    mine_params = dict(mine.named_parameters())
    for name, p_t in theirs.named_parameters():
        if p_t.grad is None:  # unused by both (e.g. TransformerConv's lin_skip without root_weight)
            assert mine_params[name].grad is None, name
            continue
        np.testing.assert_allclose(mine_params[name].grad.numpy(), p_t.grad.numpy(), atol=1e-4, rtol=1e-3,
                                   err_msg=name)
    for a, b in inputs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-4, rtol=1e-3)


@pytest.fixture
def pyg28_nn(pyg_nn):
    """pyg_nn where the behaviour a test pins down is PyG 2.8's (earlier 2.x releases differ there:
    TransformerConv's bias=False left lin_key/query/value with biases, GATConv and GATv2Conv returned
    the attention weights for return_attention_weights=False)."""
    import torch_geometric

    if tuple(int(v) for v in torch_geometric.__version__.split(".")[:2]) < (2, 8):
        pytest.skip(f"pins PyG 2.8's behaviour; torch_geometric {torch_geometric.__version__} is installed")
    return pyg_nn


@pytest.mark.parametrize("layer,kwargs,bipartite", PYG_CASES + [
    ("TransformerConv", dict(in_channels=5, out_channels=3, heads=2, bias=False), False)])
def test_the_same_weights_give_pygs_outputs_attention_and_gradients(layer, kwargs, bipartite, request):
    # bias=False: PyG 2.8's TransformerConv takes it for its key, query and value projections too
    pin_28 = layer == "TransformerConv" and kwargs.get("bias") is False
    pyg_nn = request.getfixturevalue("pyg28_nn" if pin_28 else "pyg_nn")
    torch.manual_seed(7)
    theirs = getattr(pyg_nn, layer)(**kwargs).eval()
    mine = getattr(et, layer)(**kwargs).eval()
    mine.load_state_dict(theirs.state_dict())  # strict: the same names and shapes
    if bipartite:
        x = (torch.randn(9, 5, requires_grad=True), torch.randn(6, 4, requires_grad=True))
        ei = edge_list(9, 6, seed=8)
    else:
        x = torch.randn(7, 5, requires_grad=True)
        ei = edge_list(seed=8)
    out_t, (ei_t, alpha_t) = theirs(x, ei, return_attention_weights=True)
    xs = tuple(t.detach().clone().requires_grad_() for t in x) if bipartite else x.detach().clone().requires_grad_()
    out_m, (ei_m, alpha_m) = mine(xs, ei, return_attention_weights=True)
    assert_same_as_pyg(mine, theirs, (out_m, ei_m, alpha_m), (out_t, ei_t, alpha_t),
                       list(zip(xs if bipartite else (xs,), x if bipartite else (x,))))


def test_the_graph_cache_sees_edits_that_bypass_torchs_version_counter():
    # An edge_index over NumPy memory edited through NumPy: torch's version counter does not move,
    # but the layer must not keep using the old graph.
    torch.manual_seed(0)
    x = torch.randn(5, 8)
    ids = np.array([[0, 1, 2], [1, 2, 3]])
    ei = torch.from_numpy(ids)
    conv = et.GATConv(8, 4)
    before = conv(x, ei)
    ids[1] = [4, 4, 4]
    after = conv(x, ei)
    assert torch.equal(after, conv(x, ei.clone()))
    assert not torch.equal(before, after)


# --- PyG's behaviour at the edges of its API, case by case (PyG 2.8) ---

PYG_LAYERS = ["GATConv", "GATv2Conv", "TransformerConv"]


def pyg_pair(pyg_nn, layer, **kwargs):
    """(PyG's layer, edgeattn's with PyG's weights), both in eval mode."""
    torch.manual_seed(12)
    args = {"in_channels": 5, "out_channels": 3, "heads": 2, **kwargs}
    theirs = getattr(pyg_nn, layer)(**args).eval()
    mine = getattr(et, layer)(**args).eval()
    mine.load_state_dict(theirs.state_dict())
    return mine, theirs


def run_both(mine, theirs, x, ei, **kwargs):
    """Both layers on copies of x (a tensor or a pair, None allowed) -> ((out, ei, alpha) mine, theirs, input pairs)."""
    xs = x if isinstance(x, tuple) else (x,)
    x_t = tuple(None if t is None else t.detach().clone().requires_grad_() for t in xs)
    x_m = tuple(None if t is None else t.detach().clone().requires_grad_() for t in xs)
    pair = isinstance(x, tuple)
    out_t, (ei_t, alpha_t) = theirs(x_t if pair else x_t[0], ei, return_attention_weights=True, **kwargs)
    out_m, (ei_m, alpha_m) = mine(x_m if pair else x_m[0], ei, return_attention_weights=True, **kwargs)
    pairs = [(a, b) for a, b in zip(x_m, x_t) if a is not None]
    return (out_m, ei_m, alpha_m), (out_t, ei_t, alpha_t), pairs


@pytest.mark.parametrize("layer", PYG_LAYERS)
def test_graphs_without_edges_give_pygs_outputs_weights_and_gradients(layer, pyg_nn):
    empty = torch.empty(2, 0, dtype=torch.int64)
    no_loops = {} if layer == "TransformerConv" else dict(add_self_loops=False)
    mine, theirs = pyg_pair(pyg_nn, layer, **no_loops)
    got, expected, inputs = run_both(mine, theirs, torch.randn(7, 5), empty)
    assert got[2].shape == expected[2].shape == (0, 2)
    assert_same_as_pyg(mine, theirs, got, expected, inputs)
    for num_src, num_dst in ((0, 4), (4, 0)):  # self-loops added where the layer adds them
        mine, theirs = pyg_pair(pyg_nn, layer)
        got, expected, inputs = run_both(mine, theirs, (torch.randn(num_src, 5), torch.randn(num_dst, 5)), empty)
        assert got[0].shape == expected[0].shape and got[2].shape == expected[2].shape
        assert_same_as_pyg(mine, theirs, got, expected, inputs)


@pytest.mark.parametrize("kwargs,size,num_dst", [
    (dict(residual=True), None, 7), (dict(), (7, 9), 9), (dict(concat=False), (7, 4), 4),
    (dict(in_channels=(5, 4), edge_dim=2), None, 7)])
def test_gatconv_without_destination_features_gives_pygs_results(kwargs, size, num_dst, pyg_nn):
    mine, theirs = pyg_pair(pyg_nn, "GATConv", **kwargs)
    ei = edge_list(7, num_dst, seed=14)
    extra = dict(size=size)
    if "edge_dim" in kwargs:
        extra["edge_attr"] = torch.randn(ei.size(1), 2)
    got, expected, inputs = run_both(mine, theirs, (torch.randn(7, 5), None), ei, **extra)
    assert got[0].shape == (num_dst, expected[0].size(1))
    assert_same_as_pyg(mine, theirs, got, expected, inputs)


def test_the_same_seed_gives_pygs_initial_and_reset_parameters_repr_and_attributes(pyg28_nn):
    pyg_nn = pyg28_nn
    cases = [("GATConv", dict(edge_dim=2, residual=True)), ("GATConv", dict(in_channels=(5, 4), bias=False)),
             ("GATv2Conv", dict(edge_dim=2, residual=True)), ("GATv2Conv", dict(share_weights=True, concat=False)),
             ("TransformerConv", dict(edge_dim=2, beta=True)), ("TransformerConv", dict(beta=True, root_weight=False,
                                                                                        bias=False))]
    for layer, kwargs in cases:
        args = {"in_channels": 5, "out_channels": 3, "heads": 2, **kwargs}
        torch.manual_seed(21)
        theirs = getattr(pyg_nn, layer)(**args)
        torch.manual_seed(21)
        mine = getattr(et, layer)(**args)
        assert repr(mine) == repr(theirs)
        for name in ("residual", "share_weights", "beta", "root_weight", "concat", "dropout", "edge_dim"):
            assert getattr(mine, name, None) == getattr(theirs, name, None), (layer, name)
        for _ in range(2):  # as built, then after reset_parameters from the same generator state
            t, m = theirs.state_dict(), mine.state_dict()
            assert list(m) == list(t), layer
            for name in t:
                assert torch.equal(m[name], t[name]), (layer, kwargs, name)
            torch.manual_seed(22)
            theirs.reset_parameters()
            torch.manual_seed(22)
            mine.reset_parameters()


@pytest.mark.parametrize("layer", PYG_LAYERS)
def test_return_attention_weights_edge_index_dtypes_and_refusals_follow_pyg(layer, pyg28_nn):
    pyg_nn = pyg28_nn
    x, ei = torch.randn(7, 5), edge_list(seed=15)
    loop_options = [dict()] if layer == "TransformerConv" else [dict(), dict(add_self_loops=False)]
    for loops in loop_options:
        mine, theirs = pyg_pair(pyg_nn, layer, **loops)
        for flag in (None, False, True, 0, 1):
            assert (isinstance(mine(x, ei, return_attention_weights=flag), tuple)
                    == isinstance(theirs(x, ei, return_attention_weights=flag), tuple)), (loops, flag)
        for dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
            given = ei.to(dtype)
            try:
                out_t, (ei_t, alpha_t) = theirs(x, given, return_attention_weights=True)
            except (RuntimeError, ValueError):  # PyG refuses: so does edgeattn, with a clear error
                with pytest.raises(ea.InvalidArgument, match=f"edge_index has dtype {dtype}"):
                    mine(x, given)
                continue
            out_m, (ei_m, alpha_m) = mine(x, given, return_attention_weights=True)
            assert ei_m.dtype == ei_t.dtype and torch.equal(ei_m, ei_t), (loops, dtype)
            np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), atol=2e-5, rtol=1e-4)
            np.testing.assert_allclose(alpha_m.numpy(), alpha_t.detach().numpy(), atol=2e-6)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
@pytest.mark.parametrize("layer", PYG_LAYERS)
def test_outputs_and_attention_weights_have_pygs_dtype(layer, dtype, pyg_nn):
    mine, theirs = pyg_pair(pyg_nn, layer)
    x, ei = torch.randn(7, 5, dtype=dtype), edge_list(seed=16)
    out_t, (_, alpha_t) = theirs.to(dtype)(x, ei, return_attention_weights=True)
    out_m, (_, alpha_m) = mine.to(dtype)(x, ei, return_attention_weights=True)
    assert (out_m.dtype, alpha_m.dtype) == (out_t.dtype, alpha_t.dtype) == (dtype, dtype)
    tol = 2e-5 if dtype == torch.float64 else 5e-2  # edgeattn computes in float32
    np.testing.assert_allclose(out_m.detach().double().numpy(), out_t.detach().double().numpy(), atol=tol, rtol=tol)
    np.testing.assert_allclose(alpha_m.double().numpy(), alpha_t.detach().double().numpy(), atol=tol, rtol=tol)


@pytest.mark.parametrize("layer", PYG_LAYERS)
def test_training_attention_weights_are_before_or_after_dropout_as_in_pyg(layer, pyg_nn):
    x, ei = torch.randn(7, 5), edge_list(seed=17)
    for conv in pyg_pair(pyg_nn, layer, dropout=0.5):
        _, (_, before) = conv(x, ei, return_attention_weights=True)
        conv.train()
        _, (_, alpha) = conv(x, ei, return_attention_weights=True)
        if layer == "TransformerConv":  # PyG keeps its weights before F.dropout
            assert torch.equal(alpha, before)
        else:  # zeros where dropped, the others scaled by 1 / (1 - p)
            kept = alpha != 0
            assert 0 < kept.sum() < kept.numel()
            torch.testing.assert_close(alpha[kept], 2 * before[kept])


def test_what_pyg_refuses_edgeattn_refuses_too(pyg_nn):
    x, ei = torch.randn(7, 5), edge_list(seed=18)
    for conv in pyg_pair(pyg_nn, "GATConv"):  # one tensor x, size claiming 5 destinations
        with pytest.raises(ValueError):
            conv(x, ei % 5, size=(7, 5))
    for layer in ("GATv2Conv", "TransformerConv"):  # (x_src, None) without destination features
        for conv in pyg_pair(pyg_nn, layer):
            with pytest.raises((AssertionError, TypeError, ea.InvalidArgument)):
                conv((x, None), ei)
    for conv in pyg_pair(pyg_nn, "TransformerConv", edge_dim=2):  # edge_dim without edge_attr
        with pytest.raises((AssertionError, ea.InvalidArgument)):
            conv(x, ei)


@pytest.mark.parametrize("layer", ["GATConv", "GATv2Conv"])
def test_the_edge_index_the_sparse_error_names_gives_pygs_result_for_its_adj_t(layer, pyg_nn):
    mine, theirs = pyg_pair(pyg_nn, layer)
    x, ei = torch.randn(7, 5), torch.unique(edge_list(seed=19), dim=1)  # a sparse matrix has no repeated edges
    adj_t = torch.sparse_coo_tensor(ei.flip(0), torch.ones(ei.size(1)), (7, 7))  # [num_dst, num_src]
    np.testing.assert_allclose(mine(x, adj_t.coalesce().indices().flip(0)).detach().numpy(),
                               theirs(x, adj_t).detach().numpy(), atol=2e-5, rtol=1e-4)
