"""Distributed full-graph training from Python: partition() writes the part files, fit_distributed()
trains on them, predict_distributed() gives the owned nodes' logits. One part in this process
equals fit() and Model.logits on the whole graph; two ranks under mpirun
(when the module has MPI and mpirun exists) equal one process within float rounding, with the halo
nodes' features in each part or without them (halo_input="projection"), and a corrupt
part file ends the whole job with its rank and file named, never a hang."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import edgeattn as ea

SBM = dict(num_nodes=400, num_classes=4, feature_dim=12, signal=0.6, num_val=100, num_test=200, seed=1)
MODEL = dict(in_channels=12, num_classes=4, dropout=0.0, attention_dropout=0.0, seed=3)
TRAIN = dict(epochs=8, patience=0, lr=0.01, seed=1)


@pytest.fixture(scope="module")
def sbm():
    return ea.sbm_dataset(**SBM)


@pytest.fixture(scope="module")
def reference(sbm):
    """fit() on the whole graph: the history and weights every distributed run must reproduce."""
    m = ea.Model(**MODEL)
    r = ea.fit(m, sbm, **TRAIN)
    return r, {n: m.parameter(n).copy() for n in m.parameter_names()}


def test_partition_writes_one_file_per_rank_and_reports_the_quality(sbm, tmp_path):
    out = tmp_path / "parts"
    q = ea.partition(sbm, 2, str(out), method="degree_balanced")
    assert sorted(os.listdir(out)) == ["part-0-of-2.npz", "part-1-of-2.npz", "partitions.txt"]
    assert q["parts"] == 2 and q["method"] == "degree_balanced"
    assert sum(q["nodes"]) == 400 and len(q["halo_nodes"]) == 2
    assert sum(q["edges"]) == sbm.graph.num_edges
    assert 0 < q["halo_fraction"] < 1 and q["edge_cut"] > 0
    assert q["edge_imbalance"] >= 1 and q["node_imbalance"] >= 1
    with pytest.raises(ea.InvalidArgument, match="degree_balanced"):
        ea.partition(sbm, 2, str(tmp_path / "x"), method="spectral")
    with pytest.raises(ea.InvalidArgument, match="parts is 0"):
        ea.partition(sbm, 0, str(tmp_path / "x"))


def test_one_part_in_this_process_equals_fit_on_the_whole_graph(sbm, reference, tmp_path):
    want, weights = reference
    ea.partition(sbm, 1, str(tmp_path / "p1"), method="contiguous")
    assert ea.mpi_rank_size() == (0, 1)  # not started by mpirun
    m = ea.Model(**MODEL)
    got = ea.fit_distributed(m, str(tmp_path / "p1"), **TRAIN)
    assert got["epochs_run"] == want["epochs_run"] == TRAIN["epochs"]
    for a, b in zip(got["history"], want["history"]):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
        assert a["val_loss"] == pytest.approx(b["val_loss"], rel=1e-4)
    for name, w in weights.items():
        np.testing.assert_allclose(m.parameter(name), w, rtol=0, atol=1e-6, err_msg=name)
    # predictions over the part files: every node, ascending, the whole-graph logits
    nodes, logits = ea.predict_distributed(m, str(tmp_path / "p1"))
    assert nodes.dtype == np.int64 and (nodes == np.arange(400)).all()
    np.testing.assert_allclose(logits, m.logits(sbm), rtol=0, atol=1e-5)
    all_nodes, all_logits = ea.predict_distributed(m, str(tmp_path / "p1"), gather=True)
    assert (all_nodes == nodes).all() and (all_logits == logits).all()


def test_parts_for_more_ranks_than_this_process_are_refused_by_name(sbm, tmp_path):
    ea.partition(sbm, 2, str(tmp_path / "p2"), method="contiguous")
    with pytest.raises(ea.InvalidArgument, match=r"holds 2 parts.*mpirun -np 2"):
        ea.fit_distributed(ea.Model(**MODEL), str(tmp_path / "p2"), epochs=1)
    with pytest.raises(ea.IoError, match="partitions.txt does not exist"):
        ea.fit_distributed(ea.Model(**MODEL), str(tmp_path / "nothing"), epochs=1)
    with pytest.raises(ea.InvalidArgument, match="'halo'.*'features' or 'projection'"):
        ea.fit_distributed(ea.Model(**MODEL), str(tmp_path / "p2"), epochs=1, halo_input="halo")
    ea.partition(sbm, 1, str(tmp_path / "p1"))
    with pytest.raises(ea.InvalidArgument, match="projection.*gatv2"):
        ea.fit_distributed(ea.Model(kind="gatv2", **MODEL), str(tmp_path / "p1"), epochs=1, halo_input="projection")


SCRIPT = textwrap.dedent(
    """
    import json, sys
    import edgeattn as ea
    m = ea.Model(**json.loads(sys.argv[2]))
    halo = sys.argv[5]
    r = ea.fit_distributed(m, sys.argv[1], halo_input=halo, **json.loads(sys.argv[3]))
    rank, size = ea.mpi_rank_size()
    weights = {n: m.parameter(n).ravel().tolist() for n in m.parameter_names()}
    nodes, logits = ea.predict_distributed(m, sys.argv[1], halo_input=halo)
    all_nodes, all_logits = ea.predict_distributed(m, sys.argv[1], gather=True, halo_input=halo)
    with open(f"{sys.argv[4]}/rank-{rank}.json", "w") as f:
        json.dump({"size": size, "loss": [h["train_loss"] for h in r["history"]], "weights": weights,
                   "halo_bytes": r["halo_bytes_per_epoch"], "gradient_bytes": r["gradient_bytes_per_epoch"],
                   "nodes": nodes.tolist(), "logits": logits.tolist(), "all_nodes": all_nodes.tolist(),
                   "all_logits": all_logits.tolist()}, f)
    """
)

needs_mpi = pytest.mark.skipif(
    not ea.mpi_available() or shutil.which("mpirun") is None, reason="built without MPI, or no mpirun on PATH"
)


def mpirun(tmp_path, ranks, parts_dir, timeout=300, halo_input="features"):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ)
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
        # Open MPI's session directory (with its sockets) under a short path, as ctest's MPI tests.
        OMPI_MCA_orte_tmpdir_base="/tmp", PYTHONPATH=os.pathsep.join(sys.path),
    )
    return subprocess.run(
        ["mpirun", "-np", str(ranks), sys.executable, str(script), str(parts_dir), json.dumps(MODEL),
         json.dumps(TRAIN), str(tmp_path), halo_input],
        env=env, capture_output=True, text=True, timeout=timeout,
    )


@needs_mpi
@pytest.mark.parametrize("halo_input", ["features", "projection"])
def test_two_ranks_under_mpirun_equal_one_process(sbm, reference, tmp_path, halo_input):
    want, weights = reference
    ea.partition(sbm, 2, str(tmp_path / "p2"), method="degree_balanced")
    run = mpirun(tmp_path, 2, tmp_path / "p2", halo_input=halo_input)
    assert run.returncode == 0, run.stderr[-3000:]
    results = {rank: json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in (0, 1)}
    for rank, r in results.items():
        assert r["size"] == 2
        # halo rows cross every step: the output layer's projected rows (4 classes + their gradient
        # + the source score's), and with "projection" the first layer's (64 + 64 + 8) too
        assert r["halo_bytes"] > 0 and r["gradient_bytes"] > 0
        np.testing.assert_allclose(r["loss"], [h["train_loss"] for h in want["history"]], rtol=1e-4)
        for name, w in weights.items():
            np.testing.assert_allclose(r["weights"][name], w.ravel(), rtol=0, atol=1e-4, err_msg=f"{name} rank {rank}")
    # every rank ends with the same weights, bit for bit (gradients are summed in rank order)
    assert results[0]["weights"] == results[1]["weights"]
    # predictions: each rank its owned nodes, together every node once; gathered, the same on both
    # ranks and the whole-graph logits of the reference weights
    nodes = np.concatenate([results[0]["nodes"], results[1]["nodes"]])
    assert sorted(nodes.tolist()) == list(range(400))
    m = ea.Model(**MODEL)
    for name, w in weights.items():
        m.set_parameter(name, w)
    want_logits = m.logits(sbm)
    for rank, r in results.items():
        np.testing.assert_allclose(r["logits"], want_logits[r["nodes"]], rtol=0, atol=1e-3, err_msg=f"rank {rank}")
        assert r["all_nodes"] == list(range(400))
    assert results[0]["all_logits"] == results[1]["all_logits"]
    np.testing.assert_allclose(results[0]["all_logits"], want_logits, rtol=0, atol=1e-3)


@needs_mpi
def test_a_corrupt_part_file_ends_every_rank_with_its_name(sbm, tmp_path):
    ea.partition(sbm, 2, str(tmp_path / "p2"), method="contiguous")
    broken = tmp_path / "p2" / "part-1-of-2.npz"
    broken.write_bytes(broken.read_bytes()[:200])
    run = mpirun(tmp_path, 2, tmp_path / "p2", timeout=120)
    assert run.returncode != 0
    assert "rank 1 of 2: fit_distributed:" in run.stderr and "part-1-of-2.npz" in run.stderr, run.stderr[-3000:]
    assert not (tmp_path / "rank-0.json").exists() and not (tmp_path / "rank-1.json").exists()
