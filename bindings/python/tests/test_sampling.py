"""Neighbour sampling from Python (graph/neighbor_sampler.hpp): PyG NeighborLoader / DGL block workflows."""

import numpy as np
import pytest

import edgeattn as ea


@pytest.fixture(scope="module")
def graph():
    # 300 nodes, ~3000 edges without self-loops: in-degrees around 10, above the fanouts below
    return ea.erdos_renyi_graph(300, 3000, seed=3, self_loops="remove")


def in_edges(g, v):
    return range(int(g.indptr[v]), int(g.indptr[v + 1]))


def check_block(g, block, fanout, replace):
    """Every block edge (i <- j) is the input edge edge_ids[p], from src_nodes[j] into dst_nodes[i]."""
    indptr, indices = block.graph.indptr, block.graph.indices
    assert block.graph.num_dst == block.num_dst == len(block.dst_nodes)
    assert block.graph.num_src == block.num_src == len(block.src_nodes)
    assert block.num_edges == len(block.edge_ids) == len(indices)
    np.testing.assert_array_equal(block.src_nodes[: block.num_dst], block.dst_nodes)  # destinations lead
    assert len(np.unique(block.src_nodes)) == block.num_src
    for i, v in enumerate(block.dst_nodes):
        row = range(int(indptr[i]), int(indptr[i + 1]))
        degree = len(in_edges(g, v))
        ids = block.edge_ids[row.start:row.stop]
        for p, e in zip(row, ids):
            assert e in in_edges(g, v), (i, p)
            assert g.indices[e] == block.src_nodes[indices[p]], (i, p)
        if fanout == -1:
            np.testing.assert_array_equal(ids, np.arange(*[int(x) for x in (g.indptr[v], g.indptr[v + 1])]))
        elif replace:
            assert len(ids) == (fanout if degree > 0 else 0)
        else:
            assert len(ids) == min(fanout, degree)
            assert len(np.unique(ids)) == len(ids)


@pytest.mark.parametrize("replace", [False, True])
def test_blocks_chain_from_the_input_nodes_to_the_seeds(graph, replace):
    seeds = np.array([5, 17, 3, 150, 299], dtype=np.int32)
    sub = ea.sample_neighbors(graph, seeds, fanouts=[4, 3], replace=replace, seed=11)
    assert len(sub) == 2 and len(sub.blocks) == 2
    blocks = sub.blocks
    np.testing.assert_array_equal(sub.seeds, seeds)
    np.testing.assert_array_equal(blocks[-1].dst_nodes, seeds)
    np.testing.assert_array_equal(blocks[0].dst_nodes, blocks[1].src_nodes)  # the next layer's sources
    np.testing.assert_array_equal(sub.input_nodes, blocks[0].src_nodes)
    # fanouts are listed from the seeds outwards (PyG's num_neighbors): the last block takes 4
    check_block(graph, blocks[1], 4, replace)
    check_block(graph, blocks[0], 3, replace)
    assert "SampledSubgraph(seeds=5" in repr(sub) and repr(blocks[0]).startswith("Block(num_dst=")
    for a in (sub.seeds, sub.input_nodes, blocks[0].edge_ids, blocks[0].src_nodes):
        assert a.dtype == np.int64 and not a.flags.writeable


def test_draws_are_keyed_by_the_seed_alone(graph):
    seeds = np.arange(0, 300, 7)
    first = ea.sample_neighbors(graph, seeds, [5, 5], seed=1)
    again = ea.sample_neighbors(graph, seeds, [5, 5], seed=1)
    other = ea.sample_neighbors(graph, seeds, [5, 5], seed=2)
    for a, b in zip(first.blocks, again.blocks):
        np.testing.assert_array_equal(a.edge_ids, b.edge_ids)
    assert any(not np.array_equal(a.edge_ids, b.edge_ids) for a, b in zip(first.blocks, other.blocks))
    # a seed's own neighbours do not depend on the other seeds of the batch
    alone = ea.sample_neighbors(graph, seeds[3:4], [5], seed=1).blocks[0]
    last = first.blocks[-1]
    row = slice(int(last.graph.indptr[3]), int(last.graph.indptr[4]))
    # (the same edges; a row lists them by local source id, which depends on the batch)
    np.testing.assert_array_equal(np.sort(alone.edge_ids), np.sort(last.edge_ids[row]))


def test_ascending_order_numbers_the_new_sources_by_id(graph):
    seeds = np.array([250, 5, 17, 3])
    by_appearance = ea.sample_neighbors(graph, seeds, [4, 3], seed=6)
    ascending = ea.sample_neighbors(graph, seeds, [4, 3], seed=6, order="ascending")
    for a, b in zip(by_appearance.blocks, ascending.blocks):
        np.testing.assert_array_equal(b.src_nodes[: b.num_dst], b.dst_nodes)  # destinations still lead
        new = b.src_nodes[b.num_dst:]
        assert np.all(np.diff(new) > 0)
        np.testing.assert_array_equal(np.sort(a.src_nodes[a.num_dst:]), new)  # the same nodes
        # the same edges, each from the same global source
        np.testing.assert_array_equal(np.sort(a.edge_ids), np.sort(b.edge_ids))
    check_block(graph, ascending.blocks[1], 4, False)
    check_block(graph, ascending.blocks[0], 3, False)
    with pytest.raises(ea.InvalidArgument, match="sorted"):
        ea.sample_neighbors(graph, seeds, [4], order="sorted")


def test_blocks_outlive_the_subgraph_object(graph):
    blocks = ea.sample_neighbors(graph, [1, 2, 3], [6], seed=4).blocks
    ids = blocks[0].edge_ids
    del blocks
    assert len(ids) > 0 and ids.max() < graph.num_edges


def test_full_neighborhood_block_takes_every_in_edge(graph):
    dst = np.array([9, 0, 250])
    block = ea.full_neighborhood_block(graph, dst)
    check_block(graph, block, -1, False)
    assert block.num_edges == sum(len(in_edges(graph, v)) for v in dst)
    sampled_all = ea.sample_neighbors(graph, dst, [-1]).blocks[0]
    np.testing.assert_array_equal(sampled_all.edge_ids, block.edge_ids)


def test_bad_seeds_and_fanouts_raise_with_the_offending_value(graph):
    with pytest.raises(ea.GraphError, match=r"seeds\[2\] is 4"):
        ea.sample_neighbors(graph, [4, 7, 4], [3])
    with pytest.raises(ea.GraphError, match="300"):
        ea.sample_neighbors(graph, [1, 300], [3])
    with pytest.raises(ea.InvalidArgument):
        ea.sample_neighbors(graph, [1, 2], [])
    with pytest.raises(ea.InvalidArgument):
        ea.sample_neighbors(graph, [1, 2], [-2])
    with pytest.raises(ea.InvalidArgument):
        ea.sample_neighbors(graph, np.array([1.0, 2.0]), [3])


def test_gatconv_on_full_neighbourhood_blocks_reproduces_the_full_graph_layers(graph):
    """The NeighborLoader workflow with edgeattn.torch layers: x[input_nodes] through one block per
    layer. With every in-edge taken (fanout -1) the seeds' outputs are the full-graph model's."""
    torch = pytest.importorskip("torch")
    import edgeattn.torch as et

    torch.manual_seed(0)
    conv1, conv2 = et.GATConv(8, 4, heads=2), et.GATConv(8, 3, heads=1)
    x = torch.randn(graph.num_src, 8)
    edge_index = torch.from_numpy(graph.edge_index())
    with torch.no_grad():
        full = conv2(torch.nn.functional.elu(conv1(x, edge_index)), edge_index)
        seeds = np.array([42, 7, 199])
        sub = ea.sample_neighbors(graph, seeds, [-1, -1])
        h = x[torch.from_numpy(np.array(sub.input_nodes))]
        for conv, block in zip((conv1, conv2), sub.blocks):
            h_dst = h[: block.num_dst]
            h = conv((h, h_dst), torch.from_numpy(block.graph.edge_index()))
            if conv is conv1:
                h = torch.nn.functional.elu(h)
    assert h.shape == (3, 3)
    assert (h - full[torch.from_numpy(seeds)]).abs().max().item() < 1e-5


# ---- Sampling by edge weight (DGL's prob, PyG's weight_attr) ------------------------------------------------


def weights_with_zeros(g, seed):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.1, 3.0, size=g.num_edges).astype(np.float32)
    w[rng.random(g.num_edges) < 0.3] = 0.0
    return w


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("fanout", [-1, 3])
def test_weighted_sampling_never_takes_a_zero_weight_edge(graph, replace, fanout):
    w = weights_with_zeros(graph, 4)
    seeds = np.arange(0, 300, 3)
    block = ea.sample_neighbors(graph, seeds, [fanout], replace=replace, seed=8, weights=w).blocks[0]
    assert (w[block.edge_ids] > 0).all()
    for i, v in enumerate(seeds):
        positive = int((w[graph.indptr[v]:graph.indptr[v + 1]] > 0).sum())
        taken = int(block.graph.indptr[i + 1] - block.graph.indptr[i])
        if fanout == -1 or (not replace and positive <= fanout):
            assert taken == positive
        else:
            assert taken == (fanout if positive > 0 else 0)
    again = ea.sample_neighbors(graph, seeds, [fanout], replace=replace, seed=8, weights=w).blocks[0]
    np.testing.assert_array_equal(again.edge_ids, block.edge_ids)


def test_weighted_sampling_prefers_heavy_edges(graph):
    # Each node's first in-edge weighs 30, the others 1: one pick takes it with probability
    # 30 / (29 + in-degree), about 3/4 here; uniform sampling would take it about a tenth of the time.
    w = np.ones(graph.num_edges, np.float32)
    w[graph.indptr[:-1][np.diff(graph.indptr) > 0]] = 30.0
    seeds = np.flatnonzero(np.diff(graph.indptr) > 0)
    expected = sum(30.0 / (29.0 + int(graph.indptr[v + 1] - graph.indptr[v])) for v in seeds)
    heavy = 0
    for seed in range(10):
        block = ea.sample_neighbors(graph, seeds, [1], seed=seed, weights=w).blocks[0]
        heavy += int((w[block.edge_ids] == 30.0).sum())
    assert abs(heavy - 10 * expected) < 0.05 * 10 * expected


def test_bad_weights_raise_naming_what_is_wrong(graph):
    with pytest.raises(ea.InvalidArgument, match="weights has 5 entries"):
        ea.sample_neighbors(graph, [1, 2], [3], weights=np.ones(5, np.float32))
    w = np.ones(graph.num_edges, np.float32)
    w[int(graph.indptr[7])] = -1.0
    with pytest.raises(ea.InvalidArgument, match=r"in-edge of node 7\) is -1, expected a finite weight >= 0"):
        ea.sample_neighbors(graph, [7], [3], weights=w)
    with pytest.raises(ea.InvalidArgument, match="float32"):
        ea.sample_neighbors(graph, [7], [3], weights=np.ones(graph.num_edges))


def test_fit_samples_by_the_datasets_edge_weights(tmp_path):
    # Three classes, each node with 6 same-class and 2 other-class in-neighbours, random weights.
    rng = np.random.default_rng(2)
    n = 150
    labels = np.arange(n) % 3
    x = rng.normal(0.0, 0.6, size=(n, 6)).astype(np.float32)
    x[np.arange(n), labels] += 1.0
    rows = [np.sort(np.concatenate([rng.choice(np.flatnonzero((labels == labels[i]) & (np.arange(n) != i)), 6, False),
                                    rng.choice(np.flatnonzero(labels != labels[i]), 2, False)])) for i in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.concatenate(rows).astype(np.int32)
    weights = rng.uniform(0.5, 2.0, size=len(indices)).astype(np.float32)
    perm = rng.permutation(n)
    path = tmp_path / "weighted.npz"
    np.savez(path, adj_indptr=indptr, adj_indices=indices, adj_data=weights, adj_shape=np.array([n, n]),
             adj_rows_are_destinations=np.array(True), attr_matrix=x, labels=labels.astype(np.int64),
             idx_train=np.sort(perm[:75]), idx_val=np.sort(perm[75:100]), idx_test=np.sort(perm[100:]))
    ds = ea.load_dataset_path(str(path))
    np.testing.assert_array_equal(ds.edge_weight, weights)
    r = ea.fit(ea.Model(in_channels=6, num_classes=3, seed=1), ds, epochs=30, patience=0, lr=0.01, seed=1,
               batch_size=16, fanout=[4, 3], sample_weights=True)
    assert r["test_accuracy"] > 0.6  # 3 classes: chance is 1/3
    uniform = ea.fit(ea.Model(in_channels=6, num_classes=3, seed=1), ds, epochs=30, patience=0, lr=0.01, seed=1,
                     batch_size=16, fanout=[4, 3])
    assert r["history"] != uniform["history"]  # another sample, so another run
    assert ea.sbm_dataset(num_nodes=400, num_classes=4, feature_dim=12, num_val=100, num_test=200).edge_weight is None
    with pytest.raises(ea.InvalidArgument, match="give batch_size too"):
        ea.fit(ea.Model(in_channels=6, num_classes=3), ds, epochs=1, sample_weights=True)
