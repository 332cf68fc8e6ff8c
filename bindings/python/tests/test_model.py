import os

import numpy as np
import pytest

import edgeattn as ea


@pytest.fixture(scope="module")
def sbm():
    return ea.sbm_dataset(num_nodes=400, num_classes=4, feature_dim=12, signal=0.6, num_val=100, num_test=200, seed=1)


def test_gat_parameters_have_pyg_names_and_shapes():
    m = ea.Model(kind="gat", in_channels=12, num_classes=4, hidden=8, heads=8)
    shapes = {n: m.parameter(n).shape for n in m.parameter_names()}
    assert shapes == {
        "conv1.lin.weight": (64, 12), "conv1.att_src": (1, 8, 8), "conv1.att_dst": (1, 8, 8), "conv1.bias": (64,),
        "conv2.lin.weight": (4, 64), "conv2.att_src": (1, 1, 4), "conv2.att_dst": (1, 1, 4), "conv2.bias": (4,),
    }
    assert m.num_parameters == sum(int(np.prod(s)) for s in shapes.values())
    assert '"kind":"gat"' in m.config_json
    assert "conv1" in repr(m)


def test_parameters_are_writable_views(sbm):
    m = ea.Model(in_channels=12, num_classes=4, seed=3)
    w = m.parameter("conv1.lin.weight")
    w[...] = 0.0
    assert (m.parameter("conv1.lin.weight") == 0).all()
    new = np.arange(4, dtype=np.float32)
    m.set_parameter("conv2.bias", new)
    assert (m.parameter("conv2.bias") == new).all()
    # zero first-layer weights: every node gets the same logits, equal to conv2's bias after ELU(0) = 0
    logits = m.logits(sbm)
    assert np.allclose(logits, new)
    with pytest.raises(ea.ShapeError, match=r"conv2.bias has shape \[4\], got \[5\]"):
        m.set_parameter("conv2.bias", np.zeros(5, np.float32))
    with pytest.raises(ea.InvalidArgument, match="no parameter 'conv3.bias'"):
        m.parameter("conv3.bias")
    with pytest.raises(ea.InvalidArgument, match="dtype float64"):
        m.set_parameter("conv2.bias", np.zeros(4))


def test_logits_from_a_dataset_and_from_arrays_are_identical(sbm):
    m = ea.Model(in_channels=12, num_classes=4, seed=2)
    a = m.logits(sbm)
    b = m.logits(sbm.graph, np.ascontiguousarray(sbm.dense_features))
    assert a.shape == (400, 4) and (a == b).all()
    assert (m.logits(sbm, training=True, seed=1) != a).any()  # dropout active
    with pytest.raises(ea.ShapeError):
        m.logits(sbm.graph, np.zeros((400, 11), np.float32))
    with pytest.raises(ea.Error):
        m.logits(sbm.graph, np.zeros((399, 12), np.float32))


def test_fit_on_sampled_mini_batches(sbm):
    m = ea.Model(in_channels=12, num_classes=4, seed=5)
    r = ea.fit(m, sbm, epochs=15, patience=0, lr=0.01, seed=1, batch_size=16, fanout=[5, 5])
    assert r["epochs_run"] == 15
    assert r["history"][-1]["train_loss"] < r["history"][0]["train_loss"]
    assert r["test_accuracy"] > 0.5  # 4 classes: chance is 0.25
    again = ea.fit(ea.Model(in_channels=12, num_classes=4, seed=5), sbm, epochs=15, patience=0, lr=0.01, seed=1,
                   batch_size=16, fanout=[5, 5])
    assert again["test_accuracy"] == r["test_accuracy"]  # seeded sampling: the same run
    # DGL's and PyG's numbering of each block's sources: the same model family, trained as well
    by_appearance = ea.fit(ea.Model(in_channels=12, num_classes=4, seed=5), sbm, epochs=15, patience=0, lr=0.01,
                           seed=1, batch_size=16, fanout=[5, 5], source_order="appearance")
    assert by_appearance["test_accuracy"] > 0.5
    with pytest.raises(ea.InvalidArgument, match="sorted"):
        ea.fit(m, sbm, epochs=1, batch_size=8, fanout=[5, 5], source_order="sorted")
    with pytest.raises(ea.InvalidArgument, match="give batch_size too"):
        ea.fit(m, sbm, epochs=1, fanout=[5, 5])
    # Sampling options are not silently dropped by full-batch training.
    with pytest.raises(ea.InvalidArgument, match="give batch_size too"):
        ea.fit(m, sbm, epochs=1, replace=True)
    with pytest.raises(ea.InvalidArgument, match="give batch_size too"):
        ea.fit(m, sbm, epochs=1, source_order="ascending")
    with pytest.raises(ea.InvalidArgument, match="one per layer"):
        ea.fit(m, sbm, epochs=1, batch_size=8, fanout=[5])


def test_fit_evaluate_save_load(sbm, tmp_path):
    m = ea.Model(in_channels=12, num_classes=4, seed=5)
    before = ea.evaluate(m, sbm)
    r = ea.fit(m, sbm, epochs=40, patience=0, lr=0.01, seed=1)
    assert r["epochs_run"] == 40 and len(r["history"]) == 40
    assert r["history"][-1]["train_loss"] < r["history"][0]["train_loss"]
    after = ea.evaluate(m, sbm)
    assert after["test_accuracy"] == pytest.approx(r["test_accuracy"])
    assert after["train_loss"] < before["train_loss"]
    assert after["test_accuracy"] > 0.5  # 4 classes: chance is 0.25
    path = str(tmp_path / "m.model")
    m.save(path)
    loaded = ea.Model.load(path)
    assert loaded.config_json == m.config_json
    assert (loaded.logits(sbm) == m.logits(sbm)).all()
    data = bytearray(open(path, "rb").read())
    data[40] ^= 1
    open(path, "wb").write(bytes(data))
    with pytest.raises(ea.ChecksumError):
        ea.Model.load(path)
    with pytest.raises(ea.IoError):
        ea.Model.load(str(tmp_path / "none.model"))
    with pytest.raises(ea.InvalidArgument, match="criterion"):
        ea.fit(m, sbm, epochs=1, criterion="f1")


def test_other_model_kinds_and_config_errors(sbm):
    for kind in ("gatv2", "transformer", "graph_transformer"):
        m = ea.Model(kind=kind, in_channels=12, num_classes=4, hidden=4, heads=2)
        assert m.logits(sbm).shape == (400, 4)
    t = ea.Model(kind="transformer", in_channels=12, num_classes=4, hidden=4, heads=2)
    assert "conv1.lin_query.weight" in t.parameter_names()
    with pytest.raises(ea.InvalidArgument, match="gcn"):
        ea.Model(kind="gcn", in_channels=12, num_classes=4)
    with pytest.raises(ea.InvalidArgument):
        ea.Model(in_channels=0, num_classes=4)
    same = ea.Model.from_json(ea.Model(in_channels=12, num_classes=4, seed=9).config_json)
    assert (same.parameter("conv1.att_src") == ea.Model(in_channels=12, num_classes=4, seed=9).parameter("conv1.att_src")).all()


def test_invalid_calls(sbm):
    m = ea.Model(in_channels=12, num_classes=4)
    with pytest.raises(ea.InvalidArgument):
        ea.Model.from_json('{"kind":"gat"}')
    with pytest.raises(ea.InvalidArgument, match="nosuch"):
        ea.evaluate(m, sbm, split="nosuch")
    with pytest.raises(ea.InvalidArgument, match="nosuch"):
        ea.fit(m, sbm, split="nosuch", epochs=1)
    with pytest.raises(ea.InvalidArgument, match="nosuch"):
        sbm.masks("nosuch")
    with pytest.raises(ea.ShapeError):
        ea.fit(ea.Model(in_channels=5, num_classes=4), sbm, epochs=1)
    with pytest.raises(ea.InvalidArgument, match="dtype int64"):
        m.logits(sbm.graph, np.zeros((400, 12), np.int64))
    with pytest.raises(ea.IoError):
        m.save("/nonexistent-dir/m.model")


def test_gatv2_and_transformer_layers(sbm):
    x = np.array(sbm.dense_features)
    v2 = ea.GATv2Conv(12, 5, heads=2, seed=1)
    assert {n: v2.parameter(n).shape for n in v2.parameter_names()} == {
        "lin_l.weight": (10, 12), "lin_l.bias": (10,), "lin_r.weight": (10, 12), "lin_r.bias": (10,),
        "att": (1, 2, 5), "bias": (10,)}
    out, alpha = v2(sbm.graph, x, return_attention=True)
    assert out.shape == (400, 10) and alpha.shape == (sbm.num_edges + 400, 2)
    # softmax weights: each destination's weights sum to one, per head
    dst = np.repeat(np.arange(400), np.diff(ea.materialize(sbm.graph).indptr + np.arange(401)))
    sums = np.zeros((400, 2))
    np.add.at(sums, dst, alpha)
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)
    v2.set_parameter("bias", np.ones(10, np.float32))
    assert np.allclose(v2(sbm.graph, x), out + 1, atol=1e-6)
    assert (v2(sbm.graph, x, training=True, seed=1) == v2(sbm.graph, x)).all()  # dropout 0
    t = ea.TransformerConv(12, 4, heads=3, concat=False, seed=2)
    assert {"lin_query.weight", "lin_key.weight", "lin_value.weight", "lin_skip.weight"} <= set(t.parameter_names())
    assert t.parameter("lin_query.weight").shape == (12, 12)
    assert t(sbm.graph, x).shape == (400, 4)
    with pytest.raises(ea.ShapeError):
        t(sbm.graph, np.zeros((400, 3), np.float32))
    with pytest.raises(ea.InvalidArgument, match="no parameter 'att'"):
        t.parameter("att")
    with pytest.raises(ea.InvalidArgument):
        ea.TransformerConv(12, 0)


def test_features_mapped_from_an_npz_train_as_features_in_memory(sbm, tmp_path):
    path = tmp_path / "sbm.npz"
    sbm.save_npz(str(path))
    in_memory = ea.load_dataset_path(str(path))
    mapped = ea.load_dataset_path(str(path), map_features=True)
    assert mapped.features_are_mapped and not in_memory.features_are_mapped
    assert (mapped.dense_features == sbm.dense_features).all()
    assert np.load(path)["attr_matrix"].shape == (400, 12)  # numpy reads the aligned archive
    runs = [ea.fit(ea.Model(in_channels=12, num_classes=4, seed=3), d, epochs=4, patience=0, lr=0.01, seed=2,
                   batch_size=32, fanout=[4, 4]) for d in (in_memory, mapped)]
    assert [h["train_loss"] for h in runs[0]["history"]] == [h["train_loss"] for h in runs[1]["history"]]
    assert runs[0]["test_accuracy"] == runs[1]["test_accuracy"]
    with pytest.raises(ea.InvalidArgument, match="read in place"):
        mapped.normalize_features()
    np.savez(tmp_path / "f64.npz", attr_matrix=np.zeros((3, 2)), labels=np.zeros(3, np.int64),
             adj_indptr=np.zeros(4, np.int64), adj_indices=np.zeros(0, np.int32), adj_data=np.zeros(0, np.float32),
             adj_shape=np.array([3, 3]))
    with pytest.raises(ea.ParseError, match="'<f8'"):
        ea.load_dataset_path(str(tmp_path / "f64.npz"), map_features=True)


def test_fit_evaluates_every_nth_epoch_and_trains_the_same_weights(sbm):
    a = ea.Model(in_channels=12, num_classes=4, seed=5)
    b = ea.Model(in_channels=12, num_classes=4, seed=5)
    every = ea.fit(a, sbm, epochs=8, patience=0, seed=1)
    some = ea.fit(b, sbm, epochs=8, patience=0, seed=1, eval_every=3)
    assert [h["evaluated"] for h in some["history"]] == [False, False, True, False, False, True, False, True]
    assert all(h["evaluated"] for h in every["history"])
    assert np.isnan(some["history"][0]["val_loss"]) and some["history"][2]["val_loss"] == every["history"][2]["val_loss"]
    for name in a.parameter_names():
        assert (a.parameter(name) == b.parameter(name)).all(), name
    with pytest.raises(ea.InvalidArgument, match="eval_every is 0"):
        ea.fit(a, sbm, epochs=1, eval_every=0)


def test_an_option_the_kind_does_not_use_is_refused():
    for kind, option in (("gat", "beta"), ("gat", "share_weights"), ("gat", "pre_norm"), ("gatv2", "beta"),
                         ("transformer", "share_weights"), ("transformer", "residual")):
        with pytest.raises(ea.InvalidArgument, match=f"{option} is set, but kind '{kind}' does not use it"):
            ea.Model(kind=kind, in_channels=8, num_classes=3, **{option: True})
    with pytest.raises(ea.InvalidArgument, match="ffn_hidden is set"):
        ea.Model(kind="gat", in_channels=8, num_classes=3, ffn_hidden=32)
    ea.Model(kind="transformer", in_channels=8, num_classes=3, beta=True)  # where it applies, it is taken


def test_set_parameter_refuses_non_finite_weights():
    m = ea.Model(in_channels=8, num_classes=3)
    name = m.parameter_names()[0]
    w = np.array(m.parameter(name), dtype=np.float32, copy=True)
    w.flat[3] = np.nan
    with pytest.raises(ea.InvalidArgument, match="element 3 is nan, expected finite weights"):
        m.set_parameter(name, w)



def rwse(graph, k):
    """diag((D^-1 A)^t), t = 1..k, in float64: row i of A lists i's in-neighbours (graph.indices)."""
    n = graph.num_dst
    a = np.zeros((n, n))
    indptr, indices = np.asarray(graph.indptr), np.asarray(graph.indices)
    for i in range(n):
        for j in indices[indptr[i]:indptr[i + 1]]:
            a[i, j] += 1.0
    deg = a.sum(axis=1)
    p = np.divide(a, deg[:, None], out=np.zeros_like(a), where=deg[:, None] > 0)
    out, q = np.zeros((n, k)), np.eye(n)
    for t in range(k):
        q = q @ p
        out[:, t] = np.diag(q)
    return out.astype(np.float32)


def test_positional_encodings_come_from_the_datasets_own_graph_as_in_the_cli(sbm):
    # The encoding of the graph as given, not of the graph with the model's self-loops (which
    # changes every return probability): the CLI's choice, so that a CLI model gives the same
    # logits here. Checked against the same weights fed the encoding by hand.
    k = 4
    m = ea.Model(in_channels=12, num_classes=4, hidden=4, heads=2, pe="rwse", pe_dim=k, seed=3)
    plain = ea.Model(in_channels=12 + k, num_classes=4, hidden=4, heads=2, seed=3)
    for name in m.parameter_names():
        plain.set_parameter(name, m.parameter(name))
    x = np.concatenate([sbm.dense_features, rwse(sbm.graph, k)], axis=1)
    np.testing.assert_allclose(m.logits(sbm), plain.logits(sbm.graph, x), rtol=1e-4, atol=1e-5)


def test_defaults_and_model_files_agree_with_the_cli(sbm, tmp_path):
    import json
    assert json.loads(ea.Model(kind="transformer", in_channels=12, num_classes=4).config_json)["add_self_loops"] is False
    assert json.loads(ea.Model(in_channels=12, num_classes=4).config_json)["add_self_loops"] is True
    m = ea.Model(in_channels=12, num_classes=4, seed=5)
    assert m.normalize_features is False
    m.save(str(tmp_path / "raw.model"))
    assert ea.Model.load(str(tmp_path / "raw.model")).normalize_features is False
    m.save(str(tmp_path / "norm.model"), normalize_features=True)
    assert ea.Model.load(str(tmp_path / "norm.model")).normalize_features is True


EDGE_FEAT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "edgeattn", "testdata",
                         "ogb_edge_feat")


def test_a_model_with_edge_features_trains_and_evaluates_on_the_datasets_edge_attributes(tmp_path):
    ds = ea.load_dataset_path(EDGE_FEAT)
    assert ds.edge_attr is not None and ds.edge_attr.shape[1] == 2
    m = ea.Model(in_channels=ds.num_features, num_classes=ds.num_classes, hidden=4, heads=2, edge_dim=2,
                 dropout=0.0, attention_dropout=0.0, seed=1)
    r = ea.fit(m, ds, epochs=3, patience=0)
    assert len(r["history"]) == 3
    ev = ea.evaluate(m, ds)
    assert ev["test_accuracy"] == pytest.approx(r["test_accuracy"])
    z = m.logits(ds)
    # The edge attributes matter, and the graph form takes them too.
    np.testing.assert_array_equal(m.logits(ds.graph, ds.dense_features, edge_attr=ds.edge_attr), z)
    assert not np.array_equal(m.logits(ds.graph, ds.dense_features, edge_attr=2 * ds.edge_attr), z)
    with pytest.raises(ea.InvalidArgument, match="edge_dim = 2"):
        m.logits(ds.graph, ds.dense_features)
    m.save(str(tmp_path / "e.model"))
    assert (ea.Model.load(str(tmp_path / "e.model")).logits(ds) == z).all()
