"""edgeattn.NeighborLoader: seeded batches of sampled neighbourhoods for loops of one's own."""

import threading

import numpy as np
import pytest

import edgeattn as ea


@pytest.fixture(scope="module")
def graph():
    return ea.erdos_renyi_graph(500, 5000, seed=5, self_loops="remove")


def same_blocks(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.src_nodes, y.src_nodes)
        np.testing.assert_array_equal(x.edge_ids, y.edge_ids)
        np.testing.assert_array_equal(x.graph.indptr, y.graph.indptr)
        np.testing.assert_array_equal(x.graph.indices, y.graph.indices)


def test_an_epoch_covers_the_input_nodes_once_in_batches(graph):
    nodes = np.arange(3, 500, 2)  # 249 nodes
    loader = ea.NeighborLoader(graph, [5, 3], nodes, batch_size=40)
    assert len(loader) == 7
    batches = list(loader)
    assert [len(b.seeds) for b in batches] == [40] * 6 + [9]
    np.testing.assert_array_equal(np.concatenate([b.seeds for b in batches]), nodes)  # no shuffle: in order
    for b in batches:
        assert len(b.blocks) == 2 and b.x is None
        np.testing.assert_array_equal(b.input_nodes, b.blocks[0].src_nodes)
        np.testing.assert_array_equal(b.blocks[-1].dst_nodes, b.seeds)
    dropped = ea.NeighborLoader(graph, [5, 3], nodes, batch_size=40, drop_last=True)
    assert len(dropped) == 6 and sum(len(b.seeds) for b in dropped) == 240
    assert len(ea.NeighborLoader(graph, [2], batch_size=100)) == 5  # default: every node


def test_batches_are_the_samplers_and_repeat_for_the_same_seed_and_epoch(graph):
    loader = ea.NeighborLoader(graph, [4, 4], batch_size=64, shuffle=True, seed=3)
    first, second = list(loader), list(loader)
    assert (first[0].epoch, second[0].epoch, loader.epoch) == (0, 1, 2)
    np.testing.assert_array_equal(np.sort(np.concatenate([b.seeds for b in first])), np.arange(500))
    assert not np.array_equal(first[0].seeds, second[0].seeds)  # a new shuffle each epoch
    for b in first:  # each batch is sample_neighbors with the loader's seed for it
        direct = ea.sample_neighbors(graph, b.seeds, [4, 4], seed=loader.sampling_seed(0, b.index), order="ascending")
        same_blocks(b.blocks, direct.blocks)
    again = ea.NeighborLoader(graph, [4, 4], batch_size=64, shuffle=True, seed=3, prefetch=0)
    again.set_epoch(1)
    for a, b in zip(again, second):  # the same epoch: the same batches, whatever the prefetch depth
        np.testing.assert_array_equal(a.seeds, b.seeds)
        same_blocks(a.blocks, b.blocks)
    other = ea.NeighborLoader(graph, [4, 4], batch_size=64, shuffle=True, seed=4)
    assert not np.array_equal(next(iter(other)).seeds, first[0].seeds)


def test_features_travel_with_the_batch_as_numpy_or_torch(graph):
    x = np.random.default_rng(1).standard_normal((500, 6)).astype(np.float32)
    for b in ea.NeighborLoader(graph, [3], np.arange(100), batch_size=30, features=x):
        np.testing.assert_array_equal(b.x, x[b.input_nodes])
    torch = pytest.importorskip("torch")
    xt = torch.from_numpy(x)
    b = next(iter(ea.NeighborLoader(graph, [3], np.arange(100), batch_size=30, features=xt)))
    assert isinstance(b.x, torch.Tensor) and torch.equal(b.x, xt[torch.from_numpy(b.input_nodes)])


def test_gather_rows_copies_the_rows_in_id_order():
    x = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    np.testing.assert_array_equal(ea.gather_rows(x, np.array([4, 0, 4], np.int32)), x[[4, 0, 4]])
    big = np.random.default_rng(2).standard_normal((20000, 37)).astype(np.float32)
    ids = np.random.default_rng(3).integers(0, 20000, 50000)
    np.testing.assert_array_equal(ea.gather_rows(big, ids), big[ids])
    with pytest.raises(ea.InvalidArgument, match="5"):
        ea.gather_rows(x, [1, 5])
    with pytest.raises(ea.InvalidArgument, match="float32"):
        ea.gather_rows(x.astype(np.float64), [1])


def test_features_of_other_dtypes_are_gathered_too(graph):
    x = np.random.default_rng(1).standard_normal((500, 3))  # float64: numpy.take
    b = next(iter(ea.NeighborLoader(graph, [3], np.arange(50), batch_size=25, features=x)))
    assert b.x.dtype == np.float64
    np.testing.assert_array_equal(b.x, x[b.input_nodes])


def test_sampling_by_weight_and_its_errors_reach_the_loop(graph):
    w = np.ones(graph.num_edges, np.float32)
    w[::2] = 0.0
    for b in ea.NeighborLoader(graph, [-1], batch_size=100, weights=w):
        assert (w[b.blocks[0].edge_ids] > 0).all()
    w[int(graph.indptr[420])] = -3.0  # an in-edge of node 420, met in the fifth batch
    loader = ea.NeighborLoader(graph, [-1], batch_size=100, weights=w)
    seen = []
    with pytest.raises(ea.InvalidArgument, match="node 420"):
        for b in loader:
            seen.append(b.index)
    assert seen == [0, 1, 2, 3]


def test_breaking_out_stops_the_background_thread(graph):
    before = threading.active_count()
    loader = ea.NeighborLoader(graph, [5, 5], batch_size=10, prefetch=3)
    for b in loader:
        if b.index == 2:
            break
    assert threading.active_count() == before
    assert len(list(loader)) == 50  # the next epoch runs whole


def test_a_torch_model_trains_on_the_batches():
    torch = pytest.importorskip("torch")
    import edgeattn.torch as et

    ds = ea.sbm_dataset(num_nodes=400, num_classes=4, feature_dim=12, signal=0.6, num_val=100, num_test=200, seed=1)
    split = ds.split()
    x = torch.from_numpy(np.array(ds.dense_features))
    y = torch.from_numpy(np.array(ds.labels)).long()
    torch.manual_seed(0)
    convs = torch.nn.ModuleList([et.GATConv(12, 8, heads=4), et.GATConv(32, 4, heads=1)])
    opt = torch.optim.Adam(convs.parameters(), lr=0.01)
    loader = ea.NeighborLoader(ds.graph, [5, 5], split["train"], batch_size=16, shuffle=True, features=x)
    losses = []
    for _ in range(15):
        total = 0.0
        for b in loader:
            h = b.x
            for l, (conv, block) in enumerate(zip(convs, b.blocks)):
                h = conv((h, h[: block.num_dst]), torch.from_numpy(block.graph.edge_index()))
                if l == 0:
                    h = torch.nn.functional.elu(h)
            loss = torch.nn.functional.cross_entropy(h, y[torch.from_numpy(b.seeds)])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * len(b.seeds)
        losses.append(total)
    assert losses[-1] < 0.5 * losses[0]


def test_bad_arguments_are_refused_when_the_loader_is_made(graph):
    with pytest.raises(ea.InvalidArgument, match="batch_size is 0"):
        ea.NeighborLoader(graph, [3], batch_size=0)
    with pytest.raises(ea.GraphError, match=r"input_nodes\[1\] is 900"):
        ea.NeighborLoader(graph, [3], [1, 900])
    with pytest.raises(ea.GraphError, match=r"input_nodes\[2\] is 4, which appears earlier at input_nodes\[0\]"):
        ea.NeighborLoader(graph, [3], [4, 5, 4])
    with pytest.raises(ea.InvalidArgument, match="fanouts"):
        ea.NeighborLoader(graph, [3, -4])
    with pytest.raises(ea.InvalidArgument, match="weights has 3 entries"):
        ea.NeighborLoader(graph, [3], weights=np.ones(3, np.float32))
    with pytest.raises(ea.InvalidArgument, match="sorted"):
        ea.NeighborLoader(graph, [3], order="sorted")
    with pytest.raises(ea.ShapeError, match="features have 10 rows"):
        ea.NeighborLoader(graph, [3], features=np.zeros((10, 2), np.float32))
    # Integers only: a float is not truncated, a bool is not a count.
    with pytest.raises(ea.InvalidArgument, match=r"batch_size is 2.5 \(float\), expected an integer"):
        ea.NeighborLoader(graph, [3], batch_size=2.5)
    with pytest.raises(ea.InvalidArgument, match="batch_size is True"):
        ea.NeighborLoader(graph, [3], batch_size=True)
    with pytest.raises(ea.InvalidArgument, match=r"fanouts\[1\] is 2.7"):
        ea.NeighborLoader(graph, [3, 2.7])
    with pytest.raises(ea.InvalidArgument, match="fanouts is 5, expected a sequence"):
        ea.NeighborLoader(graph, 5)
    with pytest.raises(ea.InvalidArgument, match=r"seed is -1, expected in \[0, 2\*\*64\)"):
        ea.NeighborLoader(graph, [3], seed=-1)
    assert len(ea.NeighborLoader(graph, [3], batch_size=np.int64(100))) == 5  # NumPy integers are integers
    with pytest.raises(ea.GraphError, match=r"input_nodes\[0\] is 18446744073709551615"):
        ea.NeighborLoader(graph, [3], np.array([2**64 - 1], np.uint64))
    with pytest.raises(ea.InvalidArgument, match="graph is a NoneType, expected an edgeattn.Graph"):
        ea.NeighborLoader(None, [3])
    with pytest.raises(ea.InvalidArgument, match="features is a int"):
        ea.NeighborLoader(graph, [3], features=5)


EXIT_SCRIPTS = {
    # A loop left unfinished at the end of a script: its prefetching thread is mid-sample at exit.
    "loader": """
import numpy as np, edgeattn as ea
g = ea.erdos_renyi_graph(20000, 400000, seed=1)
loader = ea.NeighborLoader(g, [25, 25], np.arange(20000), batch_size=500, prefetch=2)
next(iter(loader))
""",
    # The user's own daemon thread, inside the library when the script ends.
    "daemon thread": """
import threading, time, numpy as np, edgeattn as ea
g = ea.erdos_renyi_graph(20000, 400000, seed=1)
def work():
    while True:
        ea.sample_neighbors(g, np.arange(2000), [25, 25])
threading.Thread(target=work, daemon=True).start()
time.sleep(0.2)
""",
}


@pytest.mark.parametrize("case", sorted(EXIT_SCRIPTS))
def test_the_interpreter_exits_cleanly_while_a_thread_is_in_the_library(case):
    # Python ends such a thread with pthread_exit when it comes back for the GIL; through a C++
    # destructor that aborted the process (rc 134, "terminate called without an active exception").
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", EXIT_SCRIPTS[case]], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
