import gc

import numpy as np
import pytest
import scipy.sparse as sp

import edgeattn as ea


def test_edge_index_builds_csr_by_destination():
    # edges src -> dst: 0->1, 2->1, 1->2, 0->2 ; row i lists the sources of node i
    ei = np.array([[0, 2, 1, 0], [1, 1, 2, 2]], dtype=np.int64)
    g = ea.Graph.from_edge_index(ei)
    assert (g.num_nodes, g.num_dst, g.num_src, g.num_edges) == (3, 3, 3, 4)
    assert g.indptr.tolist() == [0, 0, 2, 4]
    assert g.indices.tolist() == [0, 2, 0, 1]
    assert g.indptr.dtype == np.int64 and g.indices.dtype == np.int32
    # CSR edge p came from input edge input_edge_of_csr[p]
    assert g.input_edge_of_csr.tolist() == [0, 1, 3, 2]
    assert g.csr_edge_of_input.tolist() == [0, 1, 3, 2]
    assert g.edge_index().tolist() == [[0, 2, 0, 1], [1, 1, 2, 2]]
    assert "num_edges=4" in repr(g)


def test_edge_index_accepts_int32_and_strided_arrays():
    ei64 = np.array([[0, 2, 1, 0], [1, 1, 2, 2]], dtype=np.int64)
    ref = ea.Graph.from_edge_index(ei64)
    for ei in (ei64.astype(np.int32), np.asfortranarray(ei64), ei64.T.copy().T,
               np.repeat(ei64, 2, axis=1)[:, ::2]):
        g = ea.Graph.from_edge_index(ei)
        assert g.indptr.tolist() == ref.indptr.tolist()
        assert g.indices.tolist() == ref.indices.tolist()


def test_build_policies():
    ei = np.array([[0, 0, 1, 1], [1, 1, 1, 0]])  # duplicate 0->1, self-loop 1->1
    assert ea.Graph.from_edge_index(ei).num_edges == 4  # keep, as PyG does
    assert ea.Graph.from_edge_index(ei, duplicates="merge").num_edges == 3
    g = ea.Graph.from_edge_index(ei, self_loops="add", duplicates="merge")
    assert g.degree_stats()["self_loops"] == 2 and g.num_edges == 4
    assert ea.Graph.from_edge_index(ei, self_loops="add").num_edges == 5  # both 0 -> 1 kept
    assert ea.Graph.from_edge_index(ei, self_loops="remove", duplicates="merge").num_edges == 2
    sym = ea.Graph.from_edge_index(np.array([[0], [1]]), symmetrize=True)
    assert sym.edge_index().tolist() == [[1, 0], [0, 1]]
    with pytest.raises(ea.GraphError, match=r"edge \(src=0, dst=1\) appears at k=0 and k=1"):
        ea.Graph.from_edge_index(ei, duplicates="error")
    with pytest.raises(ea.InvalidArgument, match="unknown policy 'drop'"):
        ea.Graph.from_edge_index(ei, self_loops="drop")
    with pytest.raises(ea.InvalidArgument, match="unknown policy 'sum'"):
        ea.Graph.from_edge_index(ei, duplicates="sum")


def test_edge_index_errors_carry_the_message():
    with pytest.raises(ea.InvalidArgument, match="edge_index has dtype float64, expected int64 or int32"):
        ea.Graph.from_edge_index(np.zeros((2, 3)))
    with pytest.raises(ea.ShapeError, match=r"edge_index has shape \[3, 2\], expected \[2, num_edges\]"):
        ea.Graph.from_edge_index(np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(ea.GraphError) as e:
        ea.Graph.from_edge_index(np.array([[0, 5], [1, 1]]), num_nodes=3)
    assert "5" in str(e.value)
    with pytest.raises(ea.GraphError):
        ea.Graph.from_edge_index(np.array([[0, -1], [1, 1]]), num_nodes=3)
    # the Python classes follow the C++ hierarchy and the built-in ones
    assert issubclass(ea.GraphError, ea.Error) and issubclass(ea.GraphError, ValueError)
    assert issubclass(ea.ChecksumError, ea.IoError) and issubclass(ea.IoError, OSError)


def test_bipartite_graph_has_no_num_nodes():
    g = ea.Graph.from_edge_index(np.array([[0, 4], [1, 0]]), num_nodes=2, num_src=5)
    assert (g.num_dst, g.num_src) == (2, 5)
    with pytest.raises(ea.InvalidArgument, match="bipartite"):
        g.num_nodes


def test_from_csr_and_its_checks():
    g = ea.Graph.from_csr(np.array([0, 0, 2, 3]), np.array([0, 2, 1]))
    assert g.edge_index().tolist() == [[0, 2, 1], [1, 1, 2]]
    assert g.input_edge_of_csr.size == 0
    with pytest.raises(ea.GraphError):
        ea.Graph.from_csr(np.array([0, 2, 1, 3]), np.array([0, 2, 1]))  # indptr not monotone
    with pytest.raises(ea.GraphError):
        ea.Graph.from_csr(np.array([0, 0, 2, 3]), np.array([0, 3, 1]))  # index out of range
    with pytest.raises(ea.GraphError):
        ea.Graph.from_csr(np.array([0, 0, 2, 3]), np.array([2, 0, 1]))  # unsorted row
    assert ea.Graph.from_csr(np.array([0, 0, 2, 3]), np.array([2, 0, 1]), sort=True).indices.tolist() == [0, 2, 1]
    with pytest.raises(ea.GraphError, match="does not fit a 32-bit node id"):
        ea.Graph.from_csr(np.array([0, 1]), np.array([2**40]))
    with pytest.raises(ea.ShapeError):
        ea.Graph.from_csr(np.array([], dtype=np.int64), np.array([], dtype=np.int64))


def test_from_scipy_reads_rows_as_destinations():
    m = sp.coo_matrix((np.ones(4), ([1, 1, 2, 2], [2, 0, 1, 0])), shape=(3, 4))
    g = ea.graph_from_scipy(m)
    assert (g.num_dst, g.num_src) == (3, 4)
    assert g.indptr.tolist() == [0, 0, 2, 4]
    assert g.indices.tolist() == [0, 2, 0, 1]
    with pytest.raises(ea.InvalidArgument, match="expected a scipy.sparse matrix"):
        ea.graph_from_scipy(np.eye(3))


def test_views_are_read_only_and_keep_the_graph_alive():
    g = ea.Graph.from_edge_index(np.array([[0, 1], [1, 0]]))
    indices = g.indices
    with pytest.raises(ValueError):
        indices[0] = 7
    del g
    gc.collect()
    assert indices.tolist() == [1, 0]


def dense_mask(pattern):
    """[num_dst, num_src] bool from the pattern's materialised CSR."""
    g = pattern.materialize()
    m = np.zeros((g.num_dst, g.num_src), dtype=bool)
    ei = g.edge_index()
    m[ei[1], ei[0]] = True
    return m


def test_structured_patterns_match_their_definitions():
    i, j = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    assert (dense_mask(ea.CompletePattern(5, 7)) == np.ones((5, 7), bool)).all()
    assert (dense_mask(ea.CausalPattern(5, 7)) == (j <= i + 2)).all()
    i, j = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    w = ea.WindowPattern(9, 2, 1, 2)
    k = j - i
    assert (dense_mask(w) == ((k % 2 == 0) & (k >= -4) & (k <= 2))).all()
    assert (w.left, w.right, w.dilation) == (2, 1, 2)
    s = ea.WindowPattern.sliding(9, 1, causal=True)
    assert (dense_mask(s) == ((j <= i) & (j >= i - 1))).all()
    b = ea.BlockDiagonalPattern.padded_batch(3, np.array([2, 3]))
    expect = np.zeros((6, 6), bool)
    expect[0:3, 0:2] = True
    expect[3:6, 3:6] = True
    assert (dense_mask(b) == expect).all()
    assert b.num_blocks == 2 and b.block_starts.tolist() == [0, 3, 6] and b.valid_lengths.tolist() == [2, 3]
    wg = ea.WindowGlobalPattern(9, 1, np.array([4, 0, 4]))
    glob = np.isin(i, [0, 4]) | np.isin(j, [0, 4])
    assert (dense_mask(wg) == ((abs(i - j) <= 1) | glob)).all()
    assert wg.global_tokens.tolist() == [0, 4]
    for p in (ea.CompletePattern(5, 7), w, b, wg):
        assert ea.num_edges(p) == p.num_edges == dense_mask(p).sum()
        assert ea.materialize(p).num_edges == p.num_edges
        assert ea.density(p) == pytest.approx(p.num_edges / (p.num_dst * p.num_src))
    assert ea.describe(ea.CompletePattern(4, 4)) == repr(ea.CompletePattern(4, 4))
    assert ea.CausalPattern(4, 4).contains(2, 1) and not ea.CausalPattern(4, 4).contains(1, 2)


def test_pattern_errors():
    with pytest.raises(ea.InvalidArgument, match="outside the 4 x 4 pattern"):
        ea.CompletePattern(4, 4).contains(4, 0)
    with pytest.raises(ea.Error):
        ea.BlockDiagonalPattern.padded_batch(3, np.array([4]))  # valid length > block size
    with pytest.raises(ea.Error):
        ea.WindowGlobalPattern(5, 1, np.array([5]))  # global token out of range
    with pytest.raises(ea.InvalidArgument, match="dtype float64"):
        ea.BlockDiagonalPattern.padded_batch(3, np.array([1.0]))
    with pytest.raises(TypeError):
        ea.materialize("complete")


def test_generators_are_deterministic_and_sized():
    a = ea.erdos_renyi_graph(100, 500, seed=3, duplicates="keep")
    b = ea.erdos_renyi_graph(100, 500, seed=3, duplicates="keep")
    assert a.num_edges == 500 and a.num_nodes == 100
    assert (a.indices == b.indices).all() and (a.indptr == b.indptr).all()
    assert not (ea.erdos_renyi_graph(100, 500, seed=4, duplicates="keep").indices == a.indices).all()
    r = ea.rmat_graph(1024, 8000, seed=1, duplicates="keep")
    assert r.num_edges == 8000
    assert r.degree_stats()["max_degree"] > 4 * r.degree_stats()["mean_degree"]
    with pytest.raises(ea.InvalidArgument):
        ea.erdos_renyi_graph(0, 10)
    with pytest.raises(ea.InvalidArgument):
        ea.rmat_graph(16, 10, a=0.9)  # probabilities do not sum to 1


def test_empty_graph_and_invalid_pattern_arguments():
    g = ea.Graph()
    assert (g.num_dst, g.num_src, g.num_edges, g.density) == (0, 0, 0, 0.0)
    assert g.indptr.tolist() == [0] and g.indices.size == 0
    for bad in (lambda: ea.CompletePattern(-1, 3), lambda: ea.CausalPattern(3, -2),
                lambda: ea.WindowPattern(5, -1, 1), lambda: ea.WindowPattern(5, 1, 1, 0),
                lambda: ea.BlockDiagonalPattern(np.array([1, 3]), np.array([1])),
                lambda: ea.WindowGlobalPattern(5, -1, np.array([], dtype=np.int64))):
        with pytest.raises(ea.Error):
            bad()
    with pytest.raises(ea.ShapeError, match="expected one dimension"):
        ea.BlockDiagonalPattern.padded_batch(3, np.ones((1, 1), dtype=np.int64))


def test_orderings_renumber_for_locality():
    # A path 0-1-...-199 with scrambled ids: RCM gives it back bandwidth 1.
    n = 200
    rng = np.random.default_rng(7)
    scramble = rng.permutation(n)
    src, dst = scramble[:-1], scramble[1:]
    ei = np.stack([np.concatenate([src, dst]), np.concatenate([dst, src])])
    g = ea.Graph.from_edge_index(ei, num_nodes=n)
    assert ea.locality(g)["bandwidth"] > 50
    order = ea.rcm_ordering(g)
    assert order.dtype == np.int64 and sorted(order.tolist()) == list(range(n))
    h = g.permute(order)
    assert ea.locality(h) == {"bandwidth": 1, "mean_edge_distance": 1.0}
    # permute renames i -> order[i]: the edge set maps through the permutation
    before = {(int(order[s]), int(order[d])) for s, d in g.edge_index().T}
    assert before == {(int(s), int(d)) for s, d in h.edge_index().T}
    for f in (ea.amd_ordering, ea.degree_ordering, lambda g: ea.partition_ordering(g, part_size=64)):
        assert sorted(f(g).tolist()) == list(range(n))
    # below two parts partition_ordering keeps the ids; it checks part_size
    np.testing.assert_array_equal(ea.partition_ordering(g, part_size=n), np.arange(n))
    with pytest.raises(ea.InvalidArgument, match="part_size"):
        ea.partition_ordering(g, part_size=0)
    # a star: the hub has the highest degree, so degree order numbers it first
    star = ea.Graph.from_edge_index(np.array([[5, 5, 5, 5, 0, 1, 2, 3], [0, 1, 2, 3, 5, 5, 5, 5]]), num_nodes=6)
    assert ea.degree_ordering(star)[5] == 0


def test_degree_groups_and_the_reordering_advice():
    # Stars of 100 leaves numbered star by star, hubs in a path: skewed degrees, every edge short.
    hubs, leaves = 100, 100
    hub = np.arange(hubs) * (leaves + 1)
    src = np.concatenate([np.repeat(hub, leaves), hub[:-1]])
    dst = np.concatenate([(hub[:, None] + np.arange(1, leaves + 1)).ravel(), hub[1:]])
    n = hubs * (leaves + 1)
    ei = np.stack([np.concatenate([src, dst]), np.concatenate([dst, src])])
    local = ea.Graph.from_edge_index(ei, num_nodes=n)
    order = ea.degree_group_ordering(local)
    assert order.dtype == np.int64 and sorted(order.tolist()) == list(range(n))
    # hubs first, in their input order; then the leaves, in theirs
    np.testing.assert_array_equal(order[hub], np.arange(hubs))
    leaf = np.setdiff1d(np.arange(n), hub)
    np.testing.assert_array_equal(order[leaf], np.arange(hubs, n))
    rows = (64 << 20) // n  # about 64 MiB of gathered rows
    advice = ea.advise_ordering(local, row_bytes=rows)
    assert advice["reorder"] is False and "already local" in advice["reason"]
    assert advice["skew"] > 1.3 and advice["spread"] < 1 / 6
    shuffled = local.permute(np.random.default_rng(3).permutation(n))
    advice = ea.advise_ordering(shuffled, rows)
    assert advice["reorder"] is True and "skewed degrees" in advice["reason"]
    assert advice["gathered_bytes"] == n * rows
    assert ea.advise_ordering(shuffled, 256)["reorder"] is False  # rows that fit in cache
    with pytest.raises(ea.InvalidArgument, match="row_bytes"):
        ea.advise_ordering(local, 0)
    bipartite = ea.Graph.from_csr(np.array([0, 1]), np.array([1]), num_src=2)
    with pytest.raises(ea.GraphError, match="degree_group_ordering.*square"):
        ea.degree_group_ordering(bipartite)


def test_orderings_and_permute_reject_bad_input():
    bipartite = ea.Graph.from_csr(np.array([0, 1]), np.array([1]), num_src=2)
    with pytest.raises(ea.GraphError, match="rcm_ordering.*square"):
        ea.rcm_ordering(bipartite)
    g = ea.Graph.from_edge_index(np.array([[0, 1], [1, 2]]), num_nodes=3)
    with pytest.raises(ea.GraphError, match="permutation"):
        g.permute(np.array([0, 0, 1]))
