"""Datasets by name through the bindings: offline errors, and a download from a loopback server
standing in for the official host (through EDGEATTN_MIRROR, checked against the real manifest)."""

import functools
import http.server
import os
import pathlib
import threading

import pytest

import edgeattn

SHIPPED = pathlib.Path(__file__).resolve().parents[3] / "datasets"


@pytest.fixture
def loopback(tmp_path):
    """An HTTP server on 127.0.0.1 serving tmp_path/www, stopped after the test."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_offline_a_missing_dataset_names_the_file_and_its_url(tmp_path):
    with pytest.raises(edgeattn.DownloadError, match=r"ind\.pubmed\.allx.*508e538e.*offline"):
        edgeattn.load_dataset("pubmed", root=str(tmp_path), offline=True)
    with pytest.raises(edgeattn.IoError, match=r"download = false"):
        edgeattn.load_dataset("karate", root=str(tmp_path), download=False)
    assert list(tmp_path.iterdir()) == []


def test_a_named_dataset_is_downloaded_verified_and_loaded(tmp_path, loopback, monkeypatch):
    www, base = loopback
    (www / "karate.adjlist").write_bytes((SHIPPED / "karate/adjlist/karate.adjlist").read_bytes())
    monkeypatch.setenv("EDGEATTN_MIRROR", f"https://github.com/phanein/deepwalk/raw/master/example_graphs/={base}")
    root = tmp_path / "data"
    try:
        ds = edgeattn.load_dataset("karate", root=str(root), offline=False)
    except edgeattn.DownloadError as e:
        if "built without downloads" in str(e):
            pytest.skip(str(e))
        raise
    assert ds.num_nodes == 34
    assert (root / "karate/adjlist/karate.adjlist").read_bytes() == (SHIPPED / "karate/adjlist/karate.adjlist").read_bytes()
    # The second time nothing is fetched: offline works.
    assert edgeattn.fetch_dataset("karate", root=str(root), offline=True) == str(root)


def test_a_corrupted_download_is_refused(tmp_path, loopback, monkeypatch):
    www, base = loopback
    (www / "karate.adjlist").write_bytes(b"0 1\n")
    monkeypatch.setenv("EDGEATTN_MIRROR", f"https://github.com/phanein/deepwalk/raw/master/example_graphs/={base}")
    root = tmp_path / "data"
    with pytest.raises((edgeattn.ChecksumError, edgeattn.DownloadError)) as err:
        edgeattn.load_dataset("karate", root=str(root), offline=False)
    if isinstance(err.value, edgeattn.DownloadError) and "built without downloads" in str(err.value):
        pytest.skip(str(err.value))
    assert isinstance(err.value, edgeattn.ChecksumError)
    assert "f4ff0d1d42fa2e475515993f82e2f38decec36708f74b7635694a85418ab984f" in str(err.value)
    assert not (root / "karate/adjlist/karate.adjlist").exists()


def test_a_tu_dataset_loads_by_path_with_its_graphs(tmp_path):
    d = tmp_path / "TOY"
    d.mkdir()
    (d / "TOY_A.txt").write_text("1, 2\n2, 1\n3, 4\n4, 3\n")
    (d / "TOY_graph_indicator.txt").write_text("1\n1\n2\n2\n")
    (d / "TOY_graph_labels.txt").write_text("1\n-1\n")
    (d / "TOY_node_labels.txt").write_text("0\n1\n1\n0\n")
    ds = edgeattn.load_dataset_path(str(d))
    assert ds.num_graphs == 2
    assert ds.graph_ptr.tolist() == [0, 2, 4]
    assert ds.graph_labels.tolist() == [1, 0]
    assert ds.dense_features.shape == (4, 2)
    assert edgeattn.load_dataset("cora").graph_ptr is None and edgeattn.load_dataset("cora").metric == "accuracy"


def test_edge_features_of_a_dataset_follow_its_edge_index_into_gatconv(tmp_path):
    torch = pytest.importorskip("torch")
    import edgeattn.torch as et

    d = tmp_path / "TOY"
    d.mkdir()
    (d / "TOY_A.txt").write_text("1, 2\n2, 1\n3, 4\n4, 3\n")
    (d / "TOY_graph_indicator.txt").write_text("1\n1\n2\n2\n")
    (d / "TOY_graph_labels.txt").write_text("1\n-1\n")
    (d / "TOY_node_labels.txt").write_text("0\n1\n1\n0\n")
    (d / "TOY_edge_attributes.txt").write_text("0.5\n1.5\n2.5\n3.5\n")
    (d / "TOY_edge_labels.txt").write_text("1\n0\n0\n1\n")
    ds = edgeattn.load_dataset_path(str(d))
    ei = ds.graph.edge_index()
    # CSR order: 2->1, 1->2, 4->3, 3->4 (1-based): each row is [attribute, one-hot label].
    assert ei.tolist() == [[1, 0, 3, 2], [0, 1, 2, 3]]
    assert ds.edge_attr.tolist() == [[1.5, 1, 0], [0.5, 0, 1], [3.5, 0, 1], [2.5, 1, 0]]
    assert edgeattn.load_dataset("cora").edge_attr is None
    conv = et.GATConv(2, 3, heads=2, edge_dim=3)
    out = conv(torch.from_numpy(ds.dense_features.copy()), torch.from_numpy(ei.copy()),
               torch.from_numpy(ds.edge_attr.copy()))
    assert out.shape == (4, 6) and torch.isfinite(out).all()


def test_an_ogb_binary_dataset_gives_its_metadata_and_loads(tmp_path):
    np = pytest.importorskip("numpy")
    d = tmp_path / "ogbn-bin"
    (d / "raw").mkdir(parents=True)
    (d / "split" / "time").mkdir(parents=True)
    np.savez_compressed(d / "raw" / "data.npz",
                        edge_index=np.array([[0, 1, 2], [1, 2, 0]], dtype=np.int64),
                        node_feat=np.arange(6, dtype=np.float16).reshape(3, 2),
                        num_nodes_list=np.array([3]), num_edges_list=np.array([3]))
    np.savez_compressed(d / "raw" / "node-label.npz", node_label=np.array([[1.0], [np.nan], [0.0]]))
    for name, ids in (("train", "0\n"), ("valid", "1\n"), ("test", "2\n")):
        (d / "split" / "time" / f"{name}.csv").write_text(ids)
    info = edgeattn.ogb_binary_info(str(d))
    assert (info["num_nodes"], info["num_edges"], info["num_features"]) == (3, 3, 2)
    assert info["feature_dtype"] == "<f2" and info["labelled"] == 2 and info["num_classes"] == 2
    assert info["splits"] == {"time": (1, 1, 1)}
    ds = edgeattn.load_dataset_path(str(d))
    assert ds.num_edges == 3
    assert ds.dense_features.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert ds.labels.tolist() == [1, -1, 0]
