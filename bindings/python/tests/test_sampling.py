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
