import os

import numpy as np
import pytest

import edgeattn as ea


def test_cora_has_the_recorded_statistics():
    ds = ea.load_dataset("cora")
    assert (ds.name, ds.format) == ("cora", "planetoid")
    assert (ds.num_nodes, ds.num_edges, ds.num_features, ds.num_classes) == (2708, 10556, 1433, 7)
    assert ds.graph.degree_stats()["self_loops"] == 0
    assert ds.features_are_sparse
    x = ea.sparse_features(ds)
    assert x.shape == (2708, 1433) and x.nnz == 49216
    assert (x.toarray() == ds.dense_features).all()
    labels = ds.labels
    assert labels.dtype == np.int32 and labels.shape == (2708,) and labels.min() == 0 and labels.max() == 6
    assert ds.default_split == "public" and "public" in ds.split_names
    s = ds.split()
    assert s["train"].tolist() == list(range(140)) and s["val"].tolist() == list(range(140, 640))
    assert s["test"].tolist() == list(range(1708, 2708))
    assert (np.bincount(labels[s["train"]]) == 20).all()
    masks = ds.masks()
    assert masks["train"].dtype == np.bool_ and masks["train"].sum() == 140 and masks["test"].sum() == 1000
    assert (np.flatnonzero(masks["val"]) == s["val"]).all()
    assert "Dataset(name=cora" in repr(ds)


def test_other_formats_and_names():
    assert {"cora", "citeseer", "karate", "pubmed"} <= set(ea.dataset_names())
    npz = ea.load_dataset("cora", format="npz")
    assert npz.format == "npz" and npz.num_nodes in (2708, 2485)
    karate = ea.load_dataset("karate")
    assert karate.num_nodes == 34 and karate.num_features == 0
    assert os.path.isdir(ea.default_data_root())
    path = ea.load_dataset_path(os.path.join(ea.default_data_root(), "karate", "adjlist", "karate.adjlist"))
    assert path.num_nodes == 34 and path.num_edges == karate.num_edges


def test_normalize_features_makes_rows_sum_to_one():
    ds = ea.load_dataset("cora")
    ds.normalize_features()
    sums = np.asarray(ea.sparse_features(ds).sum(axis=1)).ravel()
    np.testing.assert_allclose(sums[sums > 0], 1.0, rtol=1e-5)


def test_loader_errors(tmp_path):
    with pytest.raises(ea.InvalidArgument, match="nosuch"):
        ea.load_dataset("nosuch")
    with pytest.raises(ea.IoError, match=r"missing file .*ind\.cora\.allx.*expected sha256"):
        ea.load_dataset("cora", root=str(tmp_path))
    # a file whose content differs from the manifest
    d = tmp_path / "karate" / "adjlist"
    d.mkdir(parents=True)
    (d / "karate.adjlist").write_text("1 2\n")
    with pytest.raises(ea.ChecksumError, match="karate.adjlist"):
        ea.load_dataset("karate", root=str(tmp_path))
    with pytest.raises(ea.ParseError, match="karate.adjlist: expected Zachary's karate club"):
        ea.load_dataset("karate", root=str(tmp_path), verify=False)
    with pytest.raises(ea.IoError):
        ea.load_dataset_path(str(tmp_path / "missing.txt"))
    # A path given as a name: the error says which function reads it.
    with pytest.raises(ea.InvalidArgument, match="existing file: read it with load_dataset_path"):
        ea.load_dataset(str(d / "karate.adjlist"))


def test_a_dataset_without_a_split_gets_one():
    karate = ea.load_dataset("karate")
    with pytest.raises(ea.InvalidArgument, match="has no train/validation/test split.*add_random_split"):
        karate.split()
    karate.add_random_split("random", 3, 8, 10, seed=1)
    assert karate.default_split == "random" and karate.split_names == ["random"]
    s = karate.split()
    assert len(s["train"]) == 3 * karate.num_classes and len(s["val"]) == 8 and len(s["test"]) == 10
    assert not set(s["train"]) & set(s["val"]) and not set(s["val"]) & set(s["test"])
    again = ea.load_dataset("karate")
    again.add_random_split("random", 3, 8, 10, seed=1)
    np.testing.assert_array_equal(again.split()["test"], s["test"])  # deterministic for a seed
    with pytest.raises(ea.InvalidArgument, match="already has a split named 'random'"):
        karate.add_random_split("random", 3, 8, 10)
    with pytest.raises(ea.InvalidArgument, match="fewer than per_class = 30"):
        karate.add_random_split("big", 30, 1, 1)
    # One's own lists, in any order; checked like a loaded dataset's.
    karate.add_split("mine", np.array([5, 0, 1]), np.array([2]), np.array([3], np.int32))
    np.testing.assert_array_equal(karate.split("mine")["train"], [0, 1, 5])
    assert karate.default_split == "random"  # only a dataset without splits gets a new default
    with pytest.raises(ea.InvalidArgument, match=r"train\[2\] is 40, expected \[0, 34\)"):
        karate.add_split("bad", np.array([0, 1, 40]), np.array([2]), np.array([3]))
    with pytest.raises(ea.InvalidArgument, match="puts node 1 in val and another part"):
        karate.add_split("bad", np.array([0, 1]), np.array([1]), np.array([3]))
    with pytest.raises(ea.InvalidArgument, match="dtype float64, expected int64 or int32"):
        karate.add_split("bad", np.array([0.0]), np.array([1]), np.array([3]))
    # A featureless dataset trains on its positional encoding alone.
    m = ea.Model(in_channels=0, num_classes=karate.num_classes, pe="rwse", pe_dim=8, seed=2)
    r = ea.fit(m, karate, epochs=30, patience=0, lr=0.01)
    assert r["epochs_run"] == 30 and np.isfinite(r["val_loss"])


def test_sbm_dataset():
    ds = ea.sbm_dataset(num_nodes=300, num_classes=3, feature_dim=8, num_val=60, num_test=90, seed=4)
    assert (ds.num_nodes, ds.num_features, ds.num_classes) == (300, 8, 3)
    assert not ds.features_are_sparse and ds.dense_features.shape == (300, 8)
    assert ds.sparse_features is None and ea.sparse_features(ds) is None
    s = ds.split()
    assert (len(s["train"]), len(s["val"]), len(s["test"])) == (60, 60, 90)
    again = ea.sbm_dataset(num_nodes=300, num_classes=3, feature_dim=8, num_val=60, num_test=90, seed=4)
    assert (again.dense_features == ds.dense_features).all() and (again.graph.indices == ds.graph.indices).all()
    with pytest.raises(ea.InvalidArgument, match="num_classes"):
        ea.sbm_dataset(num_nodes=300, num_classes=0)
    with pytest.raises(ea.InvalidArgument, match="split 'nosuch'|nosuch"):
        ds.split("nosuch")


def test_reorder_renames_every_node_consistently():
    ds = ea.sbm_dataset(num_nodes=300, num_classes=3, feature_dim=8, num_val=60, num_test=90, seed=4)
    order = ea.degree_ordering(ds.graph)
    r = ds.reorder(order)
    assert (r.num_nodes, r.num_edges, r.num_features) == (ds.num_nodes, ds.num_edges, ds.num_features)
    # node i of ds is node order[i] of r: its features, label, split membership and edges follow it
    assert (r.dense_features[order] == ds.dense_features).all()
    assert (r.labels[order] == ds.labels).all()
    for part in ("train", "val", "test"):
        assert sorted(order[ds.split()[part]].tolist()) == r.split()[part].tolist()
    assert {(int(order[s]), int(order[d])) for s, d in ds.graph.edge_index().T} == \
        {(int(s), int(d)) for s, d in r.graph.edge_index().T}
    degrees = np.diff(r.graph.indptr)
    assert degrees[0] == degrees.max()  # hubs first (the graph is symmetric: in-degree = out-degree)
    with pytest.raises(ea.GraphError, match="permutation"):
        ds.reorder(np.zeros(300, dtype=np.int64))


def test_structure_transforms_as_pyg_users_apply_them(tmp_path):
    # networkx's write_adjlist lists an undirected edge once: loaded as stored, with a note, and
    # to_undirected() makes it the undirected graph networkx read_adjlist would give.
    path = tmp_path / "g.adjlist"
    path.write_text("0 1 2\n1 2\n2 2\n3\n")  # 0-1, 0-2, 1-2, a self-loop at 2, an isolated 3
    ds = ea.load_dataset_path(str(path))
    assert ds.format == "adjlist" and ds.num_nodes == 4 and ds.num_edges == 4
    assert any("not symmetric" in n and "to_undirected" in n for n in ds.notes)
    both = ds.to_undirected()
    pairs = {(int(s), int(d)) for s, d in both.graph.edge_index().T}
    assert pairs == {(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1), (2, 2)}
    assert ds.num_edges == 4  # a new dataset; the original is unchanged
    loopless = both.without_self_loops()
    assert loopless.num_edges == 6 and all(s != d for s, d in loopless.graph.edge_index().T)
    looped = loopless.with_self_loops()
    assert looped.num_edges == 10 and sum(int(s == d) for s, d in looped.graph.edge_index().T) == 4
    lcc = loopless.largest_component()
    assert lcc.num_nodes == 3 and lcc.num_edges == 6
    # A symmetric file gets no note.
    path.write_text("0 1\n1 0\n")
    assert not any("not symmetric" in n for n in ea.load_dataset_path(str(path)).notes)


def test_save_npz_keeps_every_split_sparse_features_and_the_name(tmp_path):
    cora = ea.load_dataset("cora")
    cora.add_split("custom", np.arange(10), np.arange(10, 20), np.arange(20, 30))
    path = str(tmp_path / "copy")  # no extension: the file is still recognised as an npz
    cora.save_npz(path)
    back = ea.load_dataset_path(path)
    assert back.name == "cora"
    assert sorted(back.split_names) == sorted(cora.split_names) and back.default_split == cora.default_split
    for name in cora.split_names:
        for part in ("train", "val", "test"):
            np.testing.assert_array_equal(back.split(name)[part], cora.split(name)[part])
    assert back.features_are_sparse == cora.features_are_sparse
    assert back.num_edges == cora.num_edges

