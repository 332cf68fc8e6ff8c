"""
edgeattn: graph attention over sparse graphs (compiled module; import edgeattn instead)
"""

from collections.abc import Sequence
from typing import Annotated, overload

import numpy
from numpy.typing import NDArray

class Error(Exception):
    """Base of every edgeattn error."""

class ShapeError(Error, ValueError):
    """A tensor's rank or extents do not match what the operation requires."""

class InvalidArgument(Error, ValueError):
    """An option, dtype or layout is out of its valid range."""

class GraphError(Error, ValueError):
    """A graph's structure is invalid (indices out of range, ...)."""

class IoError(Error, OSError):
    """A file cannot be opened, read or written."""

class ParseError(Error, ValueError):
    """A file's content does not follow its format."""

class ChecksumError(IoError):
    """A file's bytes do not match the checksum recorded for it."""

class DownloadError(IoError):
    """A file could not be downloaded: offline, unreachable, an HTTP error such as 404, a stalled server, a full disk or an interrupted transfer (the message says which and names the URL)."""

class DeviceError(Error, RuntimeError):
    """The GPU of path='cuda' is missing or failed (built without CUDA, no driver, no device, or a CUDA runtime error, which the message names)."""


class Graph:
    """
    The sparsity pattern of attention, CSR by destination: row i lists the sources j of the edges j -> i (ascending). Immutable; indptr/indices are read-only views.
    """

    def __init__(self) -> None:
        """The empty graph."""

    @staticmethod
    def from_edge_index(edge_index: Annotated[NDArray, dict(writable=False)], num_nodes: int | None = None, num_src: int | None = None, self_loops: str = 'keep', duplicates: str = 'keep', symmetrize: bool = False) -> Graph:
        """
        From a [2, E] int64/int32 edge_index (PyG convention: row 0 source, row 1 destination; any strides, copied). num_nodes defaults to max id + 1 and num_src to num_nodes. self_loops: keep | remove | add; duplicates: keep | merge | error. The default, keep, is PyG's semantics: a repeated (src, dst) pair is a separate edge with its own attention weight, so it counts twice in its destination's softmax, as in PyG's layers on the same edge_index; merge keeps the first occurrence (later ones map to it in to_input_order). The graph remembers the input edge order (see to_input_order).
        """

    @staticmethod
    def from_csr(indptr: Annotated[NDArray, dict(writable=False)], indices: Annotated[NDArray, dict(writable=False)], num_src: int | None = None, sort: bool = False) -> Graph:
        """
        From CSR-by-destination arrays: indptr [num_dst + 1], indices [E] (source ids, int32/int64, copied). num_src defaults to num_dst. sort=True sorts unsorted rows instead of raising.
        """

    @property
    def num_dst(self) -> int: ...

    @property
    def num_src(self) -> int: ...

    @property
    def num_nodes(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    @property
    def density(self) -> float: ...

    @property
    def indptr(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]:
        """int64 [num_dst + 1], read-only view"""

    @property
    def indices(self) -> Annotated[NDArray[numpy.int32], dict(shape=(None,), writable=False)]:
        """int32 [num_edges] source of each edge, read-only view"""

    @property
    def input_edge_of_csr(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]:
        """
        int64 [num_edges]: each CSR edge's index in the input edge list (-1: added); empty when built from CSR
        """

    @property
    def csr_edge_of_input(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]:
        """int64 [num_input_edges]: each input edge's CSR position (-1: dropped)"""

    def edge_index(self) -> NDArray[numpy.int64]:
        """
        A new [2, E] int64 array (row 0 source, row 1 destination) in CSR edge order.
        """

    def degree_stats(self) -> dict: ...

    def permute(self, new_of_old: Annotated[NDArray, dict(writable=False)]) -> Graph:
        """
        The graph with node i renamed new_of_old[i] (edge i <- j becomes new_of_old[i] <- new_of_old[j]; e.g. from rcm_ordering). Raises GraphError unless new_of_old is a permutation of [0, N).
        """

    def to_input_order(self, per_edge: Annotated[NDArray, dict(writable=False)]) -> object:
        """
        Maps per-edge float32 values in CSR order [E, ...] to the input edge list's order (dropped edges get 0, merged duplicates the kept edge's value).
        """

    def __repr__(self) -> str: ...

class CompletePattern:
    """Every destination attends to every source."""

    def __init__(self, num_dst: int, num_src: int) -> None: ...

    @property
    def num_dst(self) -> int: ...

    @property
    def num_src(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    def contains(self, i: int, j: int) -> bool:
        """Whether destination i attends to source j."""

    def materialize(self) -> Graph:
        """The explicit CSR Graph of the pattern (same edge numbering)."""

    def __repr__(self) -> str: ...

class CausalPattern:
    """Row i attends to sources j <= i + (num_src - num_dst)."""

    def __init__(self, num_dst: int, num_src: int) -> None: ...

    @property
    def num_dst(self) -> int: ...

    @property
    def num_src(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    def contains(self, i: int, j: int) -> bool:
        """Whether destination i attends to source j."""

    def materialize(self) -> Graph:
        """The explicit CSR Graph of the pattern (same edge numbering)."""

    def __repr__(self) -> str: ...

class WindowPattern:
    """Row i attends to j = i + k*dilation, -left <= k <= right, 0 <= j < n."""

    def __init__(self, n: int, left: int, right: int, dilation: int = 1) -> None: ...

    @staticmethod
    def sliding(n: int, w: int, causal: bool = False, dilation: int = 1) -> WindowPattern: ...

    @property
    def left(self) -> int: ...

    @property
    def right(self) -> int: ...

    @property
    def dilation(self) -> int: ...

    @property
    def num_dst(self) -> int: ...

    @property
    def num_src(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    def contains(self, i: int, j: int) -> bool:
        """Whether destination i attends to source j."""

    def materialize(self) -> Graph:
        """The explicit CSR Graph of the pattern (same edge numbering)."""

    def __repr__(self) -> str: ...

class BlockDiagonalPattern:
    """
    Padded batch: block b spans [starts[b], starts[b+1]) and its rows attend to the first valid_lengths[b] positions of the block.
    """

    def __init__(self, block_starts: Annotated[NDArray, dict(writable=False)], valid_lengths: Annotated[NDArray, dict(writable=False)]) -> None: ...

    @staticmethod
    def padded_batch(seq_len: int, valid_lengths: Annotated[NDArray, dict(writable=False)]) -> BlockDiagonalPattern:
        """B sequences of seq_len positions each."""

    @property
    def num_blocks(self) -> int: ...

    @property
    def block_starts(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]: ...

    @property
    def valid_lengths(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]: ...

    @property
    def num_dst(self) -> int: ...

    @property
    def num_src(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    def contains(self, i: int, j: int) -> bool:
        """Whether destination i attends to source j."""

    def materialize(self) -> Graph:
        """The explicit CSR Graph of the pattern (same edge numbering)."""

    def __repr__(self) -> str: ...

class WindowGlobalPattern:
    """Sliding window of a radius plus global tokens (Longformer)."""

    def __init__(self, n: int, radius: int, global_tokens: Annotated[NDArray, dict(writable=False)]) -> None: ...

    @property
    def radius(self) -> int: ...

    @property
    def global_tokens(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]: ...

    @property
    def num_dst(self) -> int: ...

    @property
    def num_src(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    def contains(self, i: int, j: int) -> bool:
        """Whether destination i attends to source j."""

    def materialize(self) -> Graph:
        """The explicit CSR Graph of the pattern (same edge numbering)."""

    def __repr__(self) -> str: ...

def materialize(pattern: Graph | CompletePattern | CausalPattern | WindowPattern | BlockDiagonalPattern | WindowGlobalPattern) -> Graph:
    """The explicit CSR Graph of any pattern."""

def num_edges(pattern: Graph | CompletePattern | CausalPattern | WindowPattern | BlockDiagonalPattern | WindowGlobalPattern) -> int: ...

def density(pattern: Graph | CompletePattern | CausalPattern | WindowPattern | BlockDiagonalPattern | WindowGlobalPattern) -> float: ...

def describe(pattern: Graph | CompletePattern | CausalPattern | WindowPattern | BlockDiagonalPattern | WindowGlobalPattern) -> str: ...

def erdos_renyi_graph(n: int, num_edges: int, seed: int = 0, self_loops: str = 'keep', duplicates: str = 'merge', symmetrize: bool = False) -> Graph:
    """
    num_edges uniform random edges on n nodes (graph/generators.hpp), built with the given policies.
    """

def rmat_graph(n: int, num_edges: int, seed: int = 0, a: float = 0.57, b: float = 0.19, c: float = 0.19, d: float = 0.05, scramble_ids: bool = True, self_loops: str = 'keep', duplicates: str = 'merge', symmetrize: bool = False) -> Graph:
    """
    num_edges R-MAT (Kronecker) edges on n nodes, Graph500 parameters by default.
    """

class Block:
    """
    One layer's bipartite message-passing graph in local ids (DGL's block): graph is [num_dst x num_src], CSR by destination; edge (i <- j) is dst_nodes[i] <- src_nodes[j]. For a square input graph src_nodes starts with dst_nodes, so x_dst = x_src[:num_dst]. Arrays are read-only int64 views kept alive by the block.
    """

    @property
    def graph(self) -> Graph:
        """the block's Graph [num_dst x num_src] (shares the block's CSR arrays)"""

    @property
    def dst_nodes(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]:
        """int64 [num_dst]: global ids of the destinations, in the order given"""

    @property
    def src_nodes(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]:
        """
        int64 [num_src]: global ids of the sources (the destinations first, on a square graph)
        """

    @property
    def edge_ids(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]:
        """
        int64 [num_edges]: each block edge's CSR position in the input graph (PyG's e_id), for per-edge data: block_attr = attr[edge_ids]
        """

    @property
    def num_dst(self) -> int: ...

    @property
    def num_src(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    def __repr__(self) -> str: ...

class SampledSubgraph:
    """
    A mini-batch: the seeds' sampled neighbourhood, one Block per layer, outermost hop first (DGL's blocks). blocks[l].dst_nodes equals blocks[l + 1].src_nodes[:num_dst]; the last block's destinations are the seeds.
    """

    @property
    def blocks(self) -> list:
        """list of Block, outermost hop first (each kept alive by the subgraph)"""

    @property
    def input_nodes(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]:
        """
        int64: global ids whose features the first layer reads (blocks[0].src_nodes)
        """

    @property
    def seeds(self) -> Annotated[NDArray[numpy.int64], dict(shape=(None,), writable=False)]:
        """int64: the seeds, in the order given (the last layer's output rows)"""

    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

@overload
def sample_neighbors(graph: Graph, seeds: Annotated[NDArray, dict(writable=False)], fanouts: Sequence[int], replace: bool = False, seed: int = 0, order: str = 'appearance', weights: Annotated[NDArray, dict(writable=False)] | None = None) -> SampledSubgraph: ...

@overload
def sample_neighbors(graph: Graph, seeds: Sequence[int], fanouts: Sequence[int], replace: bool = False, seed: int = 0, order: str = 'appearance', weights: Annotated[NDArray, dict(writable=False)] | None = None) -> SampledSubgraph:
    """
    Samples len(fanouts) hops of in-neighbours around the seeds (int32/int64 array or list, distinct, < num_dst): fanouts[h] neighbours of each node at hop h + 1 from the seeds, as PyG's num_neighbors ([15, 10, 5]: 15 per seed; DGL lists the same as [5, 10, 15]); -1 takes every in-edge. Without replacement a node keeps min(fanout, in-degree) distinct in-edges; with it, exactly fanout draws (repeats kept as parallel edges). Draws are a pure function of (seed, hop, node): the same for any thread count, batch or order; vary seed per batch. Each block's sources start with its destinations; order numbers the rest: 'appearance' (first appearance, as DGL and PyG) or 'ascending' (by node id: blocks keep the graph's locality). Returns a SampledSubgraph; gather features with x[sub.input_nodes]. weights (float32 [num_edges] by CSR position, as Dataset.edge_weight; DGL's prob, PyG's weight_attr): each node's in-edges are sampled in proportion to their weights, weight 0 never (without replacement: successive picks among those left). Raises GraphError for a seed out of range or repeated, InvalidArgument for another order, for weights not one per edge, or for a negative, NaN or infinite weight the sampling reads.
    """

@overload
def full_neighborhood_block(graph: Graph, dst_nodes: Annotated[NDArray, dict(writable=False)]) -> Block: ...

@overload
def full_neighborhood_block(graph: Graph, dst_nodes: Sequence[int]) -> Block:
    """
    Every in-edge of each of dst_nodes (int32/int64 array or list, distinct, < num_dst) as one Block: a layer of layer-wise full-neighbourhood inference (PyG's and DGL's evaluation path).
    """

@overload
def gather_rows(features: Annotated[NDArray, dict(writable=False)], ids: Annotated[NDArray, dict(writable=False)]) -> object: ...

@overload
def gather_rows(features: Annotated[NDArray, dict(writable=False)], ids: Sequence[int]) -> object:
    """
    features[ids] as a new float32 array (features: float32, C-contiguous, rank >= 1, NumPy or a torch tensor; ids: int32/int64 array or list) copied by the library in parallel without the GIL, a mini-batch's input rows several times faster than numpy.take or an index_select. Raises InvalidArgument naming an id outside [0, len(features)).
    """

def attention_dropout_factors(src: Annotated[NDArray, dict(writable=False)], dst: Annotated[NDArray, dict(writable=False)], heads: int, p: float, seed: int) -> object:
    """
    The factors attention dropout applies to the weights of edges src[e] -> dst[e] in a kernel called with dropout=p and seed=seed (core/rng.hpp's dropout_keep: a pure function of (seed, dst, src, head)): float32 [E, heads], 0 where dropped and 1/(1-p) where kept. attention_forward returns weights before dropout; times these factors they are the weights the output was computed with (what PyG's GATConv returns while training).
    """

def rcm_ordering(graph: Graph) -> object:
    """
    Reverse Cuthill-McKee (Boost.Graph; each component from a pseudo-peripheral node) of a square graph's symmetrized pattern: int64 [N] new_of_old (new_of_old[i] is old node i's new id), for Graph.permute or Dataset.reorder. Raises GraphError unless square.
    """

def amd_ordering(graph: Graph) -> object:
    """
    SuiteSparse AMD (approximate minimum degree) of the symmetrized pattern: int64 [N] new_of_old. Raises GraphError unless square.
    """

def degree_ordering(graph: Graph) -> object:
    """
    Nodes by decreasing total degree (in + out, self-loops ignored), ties by id: int64 [N] new_of_old, hubs first. Raises GraphError unless square.
    """

def degree_group_ordering(graph: Graph) -> object:
    """
    Degree-based grouping (Faldu et al., IISWC 2019): nodes by degree group (powers of two of the mean total degree), highest first, ids ascending within a group: int64 [N] new_of_old. Packs the hubs together as degree_ordering does while a group keeps its input order. What `edgeattn train --reorder dbg` (and auto, where advise_ordering says so) trains on. Raises GraphError unless square.
    """

def advise_ordering(graph: Graph, row_bytes: int) -> dict:
    """
    Whether renumbering by degree_group_ordering should speed up attention over this graph when each node's gathered row takes row_bytes (heads x channels x 4): {'reorder': bool, 'reason': str, 'gathered_bytes', 'skew' (mean / median degree), 'spread' (mean |i - j| / N)}. True when the rows exceed 32 MiB, skew > 1.3 and spread >= 1/6 (skew-aware selective reordering, Balaji & Lucia, IISWC 2018), what `edgeattn train --reorder auto` follows. Raises InvalidArgument when row_bytes < 1.
    """

def partition_ordering(graph: Graph, part_size: int = 4096) -> object:
    """
    Nodes grouped by METIS part (ceil(N / part_size) edge-cut parts; ascending ids within a part): int64 [N] new_of_old, a graph's communities as id ranges (mini-batch training keeps them: its blocks number new sources by ascending id). Raises GraphError unless square, InvalidArgument without METIS or for part_size < 1.
    """

def locality(graph: Graph) -> dict:
    """
    {'bandwidth': max |i - j|, 'mean_edge_distance': mean |i - j|} over the edges i <- j of a square graph (0 without edges).
    """

class AttentionResult:
    """
    What attention_forward returns; pass it to attention_backward. Its arrays are views owned by this object (row_stats read-only).
    """

    @property
    def out(self) -> object:
        """
        concat: [num_dst, H, Dv]; mean: [num_dst, Dv] (writable view; attention_backward reads it, so do not modify it before the backward pass)
        """

    @property
    def row_stats(self) -> object:
        """softmax: row log-sum-exp [num_dst, H]; relu: None"""

    @property
    def attention(self) -> object:
        """
        [E, H] attention weights (before dropout) when requested, in attention_order; else None
        """

    @property
    def attention_order(self) -> str: ...

    @property
    def path(self) -> str:
        """the path that ran: sparse, dense or reference"""

def attention_forward(pattern: Graph | CompletePattern | CausalPattern | WindowPattern | BlockDiagonalPattern | WindowGlobalPattern, *, query: Annotated[NDArray, dict(writable=False)] | None = None, key: Annotated[NDArray, dict(writable=False)] | None = None, value: Annotated[NDArray, dict(writable=False)] | None = None, score_dst: Annotated[NDArray, dict(writable=False)] | None = None, score_src: Annotated[NDArray, dict(writable=False)] | None = None, weight: Annotated[NDArray, dict(writable=False)] | None = None, key_weight: Annotated[NDArray, dict(writable=False)] | None = None, att: Annotated[NDArray, dict(writable=False)] | None = None, edge_bias: Annotated[NDArray, dict(writable=False)] | None = None, score_edge: Annotated[NDArray, dict(writable=False)] | None = None, edge_attr: Annotated[NDArray, dict(writable=False)] | None = None, edge_proj: Annotated[NDArray, dict(writable=False)] | None = None, att_dst: Annotated[NDArray, dict(writable=False)] | None = None, att_src: Annotated[NDArray, dict(writable=False)] | None = None, score: str = 'dot_product', normalization: str = 'softmax', combine: str = 'concat', scale: float = 0.0, negative_slope: float = 0.2, dropout: float = 0.0, seed: int = 0, return_attention: bool = False, attention_order: str = 'csr', path: str = 'automatic', dense_threshold: float = 0.35) -> AttentionResult:
    """
    Graph-masked multi-head attention (kernels/attention.hpp). Operands are float32 C-contiguous CPU arrays, used without copying: query [num_dst, H, Dk], key [num_src, H, Dk], value [num_src, H, Dv], score_dst [num_dst, H], score_src [num_src, H], weight, key_weight, att, edge_bias [E, H] (CSR order), score_edge [E, H] (CSR order; additive: inside the LeakyReLU, GAT's edge features), edge_attr [E, F_e] (CSR order) with edge_proj [H, Dk, F_e] (gatv2, perceptron: the projected edge attributes inside the activation, GATv2's edge features), att_dst and att_src [H, Dv] (additive, instead of score_dst and score_src: the scores taken from value, destination i being source i, so num_dst <= num_src). score: dot_product | additive | gatv2 | bilinear | perceptron; normalization: softmax | relu; combine: concat | mean; path: automatic | sparse | dense | reference | cuda (the GPU: DeviceError without one; see cuda_device()). attention_order='input' returns the attention weights in the order of the edge list the Graph was built from.
    """

def attention_backward(pattern: Graph | CompletePattern | CausalPattern | WindowPattern | BlockDiagonalPattern | WindowGlobalPattern, forward: AttentionResult, grad_out: Annotated[NDArray, dict(writable=False)], *, query: Annotated[NDArray, dict(writable=False)] | None = None, key: Annotated[NDArray, dict(writable=False)] | None = None, value: Annotated[NDArray, dict(writable=False)] | None = None, score_dst: Annotated[NDArray, dict(writable=False)] | None = None, score_src: Annotated[NDArray, dict(writable=False)] | None = None, weight: Annotated[NDArray, dict(writable=False)] | None = None, key_weight: Annotated[NDArray, dict(writable=False)] | None = None, att: Annotated[NDArray, dict(writable=False)] | None = None, edge_bias: Annotated[NDArray, dict(writable=False)] | None = None, score_edge: Annotated[NDArray, dict(writable=False)] | None = None, edge_attr: Annotated[NDArray, dict(writable=False)] | None = None, edge_proj: Annotated[NDArray, dict(writable=False)] | None = None, att_dst: Annotated[NDArray, dict(writable=False)] | None = None, att_src: Annotated[NDArray, dict(writable=False)] | None = None) -> dict:
    """
    Gradients of attention_forward's output: pass the same pattern and operands and the forward result. Returns a dict name -> float32 array with the shape of each given operand.
    """

class Dataset:
    """
    A node-classification dataset. Array properties are read-only views owned by the dataset.
    """

    @property
    def name(self) -> str: ...

    @property
    def format(self) -> str: ...

    @property
    def graph(self) -> Graph: ...

    @property
    def num_nodes(self) -> int: ...

    @property
    def num_edges(self) -> int: ...

    @property
    def num_features(self) -> int: ...

    @property
    def num_classes(self) -> int: ...

    @property
    def features_are_sparse(self) -> bool: ...

    @property
    def features_are_mapped(self) -> bool:
        """
        True when the dense features are read in place from the file (load_dataset_path(..., map_features=True)): rows are paged in as training reads them, so they may exceed memory
        """

    @property
    def dense_features(self) -> object:
        """
        float32 [N, F]: a view of dense features, or a new dense copy of sparse ones
        """

    @property
    def sparse_features(self) -> object:
        """
        (indptr, indices, values, (rows, cols)) views of sparse features; None when dense
        """

    @property
    def labels(self) -> object:
        """int32 [N] class ids (-1: unlabelled), or float32 [N, C] multi-hot"""

    @property
    def metric(self) -> str:
        """
        how predictions are scored: 'accuracy', 'micro_f1' or 'rocauc' (OGB's, for ogbn-proteins)
        """

    @property
    def edge_attr(self) -> object:
        """
        float32 [E, edge_dim] edge features in the graph's CSR order (graph.edge_index() order; OGB edge-feat, TUDataset edge attributes + one-hot edge labels); None when the dataset has none
        """

    @property
    def edge_weight(self) -> object:
        """
        float32 [E] edge weights in the graph's CSR order (npz adj_data, weighted edge lists, Matrix Market values); None when every weight is 1. sample_neighbors(..., weights=) and fit(..., sample_weights=True) sample by them
        """

    @property
    def num_graphs(self) -> int: ...

    @property
    def graph_ptr(self) -> object:
        """
        int64 [num_graphs + 1]: graph g owns nodes graph_ptr[g]:graph_ptr[g+1] (TUDataset); None for one graph
        """

    @property
    def graph_labels(self) -> object:
        """int32 [num_graphs] graph classes 0..K-1 (TUDataset); None otherwise"""

    @property
    def split_names(self) -> list[str]: ...

    @property
    def default_split(self) -> str: ...

    def add_split(self, name: str, train: Annotated[NDArray, dict(writable=False)], val: Annotated[NDArray, dict(writable=False)], test: Annotated[NDArray, dict(writable=False)]) -> None:
        """
        Adds split `name` from node ids (int32/int64 arrays, any order; sorted here), and makes it the default when the dataset has none (what a featureless or custom dataset trains on). Raises InvalidArgument for an id out of [0, num_nodes), a node in two parts or twice, or a name already taken.
        """

    def add_random_split(self, name: str, per_class: int, num_val: int, num_test: int, seed: int = 0) -> None:
        """
        Adds split `name` drawn from the labels as PyG's RandomNodeSplit(split='random'): per_class training nodes of each class, then num_val validation and num_test test nodes (data/splits.hpp; deterministic for a seed), and makes it the default when the dataset has none. Raises InvalidArgument when a class has fewer than per_class nodes or too few remain.
        """

    def split(self, name: str = '') -> dict:
        """
        {'train','val','test'}: sorted int64 node ids (the default split when name is empty)
        """

    def masks(self, name: str = '') -> dict:
        """{'train','val','test'}: bool [N] masks"""

    @property
    def notes(self) -> list[str]: ...

    def save_npz(self, path: str) -> None:
        """
        Writes the dataset as an .npz that numpy.load and load_dataset_path read back (data/npz_writer.hpp; written atomically): the graph and edge weights, features (sparse ones stay sparse), labels, node and class names, the name, and every split (the default as idx_train/val/test, the others as split<k>_*, all named in split_names). A dataset with edge attributes or many graphs raises InvalidArgument (the layout does not hold them). Every member's data is 64-byte aligned, so load_dataset_path(path, map_features=True) reads dense features in place.
        """

    def reorder(self, new_of_old: Annotated[NDArray, dict(writable=False)]) -> Dataset:
        """
        A new dataset with node i renamed new_of_old[i] everywhere: graph, features, labels, names and splits (e.g. ds.reorder(degree_ordering(ds.graph)), what `edgeattn train --reorder degree` trains on). Raises GraphError unless new_of_old is a permutation of [0, num_nodes).
        """

    def to_undirected(self) -> Dataset:
        """
        A new dataset with the reverse of every edge (duplicates merged; an added reverse edge copies its mirror's weight and edge attributes), as PyG's ToUndirected: e.g. for an adjacency list that networkx wrote with each undirected edge once. A note records it.
        """

    def with_self_loops(self) -> Dataset:
        """
        A new dataset with exactly one self-loop per node (added loops weigh 1, edge attributes 0).
        """

    def without_self_loops(self) -> Dataset:
        """
        A new dataset without self-loops (the other edges keep their weights and attributes).
        """

    def largest_component(self) -> Dataset:
        """
        A new dataset restricted to the largest weakly connected component (gnn-benchmark's standardize): nodes keep their relative order and are renumbered; features, labels, names, weights and splits follow.
        """

    def normalize_features(self) -> None:
        """
        Row-normalises the features in place (each row sums to 1; GAT's Cora preprocessing).
        """

    def __repr__(self) -> str: ...

def load_dataset(name: str, root: str = '', format: str = '', verify: bool = True, download: bool = True, offline: bool | None = None) -> Dataset:
    """
    A named dataset (dataset_names()), checksummed against the compiled-in manifest. Files are looked for in root, else $EDGEATTN_DATA, else the bundled datasets/ and the download cache (~/.cache/edgeattn); missing ones are downloaded from their official URLs (resumed, retried, verified, placed atomically) unless download=False or offline (default: $EDGEATTN_OFFLINE). Raises DownloadError when a file cannot be had.
    """

def fetch_dataset(name: str, root: str = '', format: str = '', offline: bool | None = None) -> str:
    """
    Downloads what a named dataset lacks (as load_dataset would) and returns the data root holding it.
    """

def load_dataset_path(path: str, map_features: bool = False) -> Dataset:
    """
    A dataset file or directory in any supported format. map_features: read an .npz's dense float32 attr_matrix in place (memory-mapped) instead of into memory, for features larger than RAM (mini-batch training: fit(..., batch_size=B)); they are used as stored (normalize_features refuses them), and unverified: neither the member's CRC-32 nor its values are checked at load (a corrupt or NaN row shows as fit's 'the ... loss became nan' error). Other features are checked: a NaN or infinite value raises InvalidArgument naming its row and column.
    """

def ogb_binary_info(path: str) -> dict:
    """
    Metadata of a dataset in OGB's binary layout (raw/data.npz; ogbn-papers100M) without loading it: num_nodes, num_edges, num_features, feature_dtype, labelled, num_classes, splits {name: (train, valid, test)}, bytes_to_load (what load_dataset_path would need).
    """

def cuda_device() -> object:
    """
    The GPU that path='cuda' runs on, as a dict (name, compute_capability, memory_bytes, multiprocessors), or None: built without CUDA, no driver or no device (cuda_unavailable_reason() says which).
    """

def blas_info() -> dict:
    """
    The BLAS under the dense attention path and wide products, as a dict: core (the kernel set OpenBLAS runs, e.g. 'SkylakeX'; edgeattn chooses again at import where OpenBLAS took a pre-AVX2 core on an AVX2 CPU and OPENBLAS_CORETYPE is unset) and config (OpenBLAS's build).
    """

def cuda_built() -> bool:
    """True when this edgeattn was compiled with its CUDA backend."""

def cuda_unavailable_reason() -> str:
    """Why cuda_device() is None, in words."""

def dataset_names() -> list[str]: ...

def default_data_root() -> str: ...

def sbm_dataset(num_nodes: int = 3000, num_classes: int = 5, expected_in_degree: float = 8.0, expected_out_degree: float = 2.0, feature_dim: int = 16, signal: float = 1.0, noise: float = 1.0, train_per_class: int = 20, num_val: int = 500, num_test: int = 1000, shuffle_nodes: bool = True, seed: int = 0) -> Dataset:
    """
    A stochastic-block-model dataset with class-correlated Gaussian features (data/synthetic.hpp).
    """

class Model:
    """
    A node-classification model (nn/model.hpp): gat, gatv2, transformer or graph_transformer. Parameters carry PyTorch Geometric's names and shapes (conv1.lin.weight, conv1.att_src, ...). add_self_loops defaults to PyG's choice for the kind (none for transformer, as PyG's TransformerConv and `edgeattn train`); edge_dim > 0 reads a dataset's edge attributes (Dataset.edge_attr) in every layer, as `edgeattn train --edge-features`.
    """

    def __init__(self, *, kind: str = 'gat', in_channels: int, num_classes: int, hidden: int = 8, heads: int = 8, out_heads: int = 1, layers: int = 2, dropout: float = 0.6, attention_dropout: float = 0.6, negative_slope: float = 0.2, residual: bool = False, add_self_loops: bool | None = None, share_weights: bool = False, beta: bool = False, pre_norm: bool = False, ffn_hidden: int = 0, pe: str = 'none', pe_dim: int = 0, edge_dim: int = 0, seed: int = 0) -> None: ...

    def parameter_names(self) -> list[str]: ...

    def parameter(self, name: str) -> object:
        """
        A writable float32 view of the named parameter (in-place edits change the model).
        """

    def set_parameter(self, name: str, value: Annotated[NDArray, dict(writable=False)]) -> None:
        """
        Copies a float32 array of the parameter's shape into it (finite values: InvalidArgument otherwise, naming the element).
        """

    @staticmethod
    def from_json(json: str) -> Model:
        """A model from ModelConfig JSON (Model.config_json)."""

    @property
    def config_json(self) -> str: ...

    @property
    def normalize_features(self) -> bool:
        """
        Whether the model file says its training features were row-normalised (`edgeattn train`'s default; Model.save(normalize_features=...)): call Dataset.normalize_features() before evaluate() or logits() to give it the same inputs. False for a model built here.
        """

    @property
    def num_parameters(self) -> int: ...

    @overload
    def logits(self, dataset: Dataset, training: bool = False, seed: int = 0) -> object:
        """
        Logits [N, num_classes] on a dataset's graph and features (training=False: no dropout).
        """

    @overload
    def logits(self, graph: Graph, features: Annotated[NDArray, dict(writable=False)], training: bool = False, seed: int = 0, edge_attr: Annotated[NDArray, dict(writable=False)] | None = None) -> object:
        """
        Logits on a graph and float32 features [N, F] (copied into the model's input); edge_attr [num_edges, edge_dim] in the graph's CSR order for a model with edge_dim.
        """

    def save(self, path: str, normalize_features: bool = False) -> None:
        """
        Writes the model file (config JSON + weights, checksummed; same format as the CLI). normalize_features: whether the features it was trained on were row-normalised (Dataset.normalize_features()), which `edgeattn eval` and `predict` then repeat; by default they use the dataset's features as stored, as fit() did.
        """

    @staticmethod
    def load(path: str) -> Model:
        """Loads a model file written by Model.save or `edgeattn train --save`."""

    def __repr__(self) -> str: ...

class GATConv:
    """
    PyTorch Geometric's GATConv (nn/gat_conv.hpp), forward only: parameters lin.weight [H*C, in], att_src / att_dst [1, H, C], bias, res.weight, readable and writable as arrays.
    """

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1, concat: bool = True, negative_slope: float = 0.2, dropout: float = 0.0, add_self_loops: bool = True, bias: bool = True, residual: bool = False, seed: int = 0) -> None: ...

    def parameter_names(self) -> list[str]: ...

    def parameter(self, name: str) -> object:
        """A writable float32 view of the named parameter (PyG name and shape)."""

    def set_parameter(self, name: str, value: Annotated[NDArray, dict(writable=False)]) -> None:
        """
        Copies a float32 array of the parameter's shape into it (finite values: InvalidArgument otherwise, naming the element).
        """

    def __call__(self, graph: Graph, x: Annotated[NDArray, dict(writable=False)], training: bool = False, seed: int = 0, return_attention: bool = False) -> object:
        """
        x: float32 [N, in] (copied) -> [N, H*C] (concat) or [N, C]. Self-loops are added when the layer adds them (PyG's add_self_loops); attention weights come in the CSR order of that prepared graph.
        """

class GATv2Conv:
    """
    PyTorch Geometric's GATv2Conv (nn/gatv2_conv.hpp), forward only: lin_l / lin_r (weight, bias), att [1, H, C], bias, res.weight.
    """

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1, concat: bool = True, negative_slope: float = 0.2, dropout: float = 0.0, add_self_loops: bool = True, bias: bool = True, share_weights: bool = False, residual: bool = False, seed: int = 0) -> None: ...

    def parameter_names(self) -> list[str]: ...

    def parameter(self, name: str) -> object:
        """A writable float32 view of the named parameter (PyG name and shape)."""

    def set_parameter(self, name: str, value: Annotated[NDArray, dict(writable=False)]) -> None:
        """
        Copies a float32 array of the parameter's shape into it (finite values: InvalidArgument otherwise, naming the element).
        """

    def __call__(self, graph: Graph, x: Annotated[NDArray, dict(writable=False)], training: bool = False, seed: int = 0, return_attention: bool = False) -> object:
        """
        x: float32 [N, in] (copied) -> [N, H*C] (concat) or [N, C]. Self-loops are added when the layer adds them (PyG's add_self_loops); attention weights come in the CSR order of that prepared graph.
        """

class TransformerConv:
    """
    PyTorch Geometric's TransformerConv (nn/transformer_conv.hpp), forward only: lin_query, lin_key, lin_value, lin_skip (weight, bias), lin_beta. Adds no self-loops (as PyG).
    """

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1, concat: bool = True, beta: bool = False, dropout: float = 0.0, bias: bool = True, root_weight: bool = True, seed: int = 0) -> None: ...

    def parameter_names(self) -> list[str]: ...

    def parameter(self, name: str) -> object:
        """A writable float32 view of the named parameter (PyG name and shape)."""

    def set_parameter(self, name: str, value: Annotated[NDArray, dict(writable=False)]) -> None:
        """
        Copies a float32 array of the parameter's shape into it (finite values: InvalidArgument otherwise, naming the element).
        """

    def __call__(self, graph: Graph, x: Annotated[NDArray, dict(writable=False)], training: bool = False, seed: int = 0, return_attention: bool = False) -> object:
        """
        x: float32 [N, in] (copied) -> [N, H*C] (concat) or [N, C]. Self-loops are added when the layer adds them (PyG's add_self_loops); attention weights come in the CSR order of that prepared graph.
        """

def fit(model: Model, dataset: Dataset, split: str = '', epochs: int = 1000, patience: int = 100, lr: float = 0.005, weight_decay: float = 0.0005, seed: int = 0, criterion: str = 'loss_or_accuracy', batch_size: int = 0, fanout: Sequence[int] = [], replace: bool = False, source_order: str | None = None, sample_weights: bool = False, eval_every: int = 1) -> dict:
    """
    Training (train/trainer.hpp) with Adam and early stopping; keeps the best weights. It starts from the model's current weights (a second fit continues the first) with a fresh optimiser (Adam's moments at zero). Full batch, or with batch_size > 0 mini-batches of training nodes over sampled neighbourhoods (fanout: neighbours per hop from the seeds, one per layer, -1 = all, default 10 each; replace: with replacement; source_order: how each block numbers its new sources, 'ascending' by node id (None: the default) or 'appearance' as DGL and PyG, see sample_neighbors; sample_weights: in-edges sampled in proportion to Dataset.edge_weight, uniform when the dataset has none; evaluation stays exact: every node's full neighbourhood, layer by layer as Model.logits). eval_every=N evaluates (metrics, early stopping, the kept weights) every N-th epoch and the last only (history entries of the others have evaluated=False and NaN metrics; patience still counts epochs). Returns a dict with history and final metrics.
    """

def evaluate(model: Model, dataset: Dataset, split: str = '') -> dict:
    """
    Loss and accuracy on the split's train/val/test nodes (evaluation mode).
    """

def mpi_available() -> bool:
    """
    Whether this build has MPI (CMake option EDGEATTN_MPI, MPI found): fit_distributed on more than one rank.
    """

def partition(dataset: Dataset, parts: int, out: str, method: str = '', split: str = '', seed: int = 0) -> dict:
    """
    Partitions the dataset's nodes into `parts` (method: metis when built with METIS, else degree_balanced; or contiguous) and writes partitions.txt and one part-<r>-of-<P>.npz per rank into `out` (the format of `edgeattn partition`): each rank then reads only its own part. Features are stored as given (normalise first if fit would see them normalised). Returns the partition's quality: parts, method, nodes, edges, halo_nodes (per part), edge_cut, edge_imbalance, node_imbalance, halo_fraction.
    """

def mpi_rank_size() -> tuple[int, int]:
    """
    (rank, size) of this process in MPI_COMM_WORLD when started by mpirun (MPI is initialised on first use and finalised at exit), else (0, 1).
    """

def fit_distributed(model: Model, partitions: str, epochs: int = 1000, patience: int = 100, lr: float = 0.005, weight_decay: float = 0.0005, seed: int = 0, criterion: str = 'loss_or_accuracy', halo_input: str = 'features', eval_every: int = 1) -> dict:
    """
    Full-graph training over MPI (dist/distributed_training.hpp): run the same script under `mpirun -np P`; each rank reads its part of `partitions` (written by partition(..., parts=P) or `edgeattn partition`), exchanges halo rows between layers and sums the gradients in rank order, so every rank ends with the same weights and the result equals fit's on the whole graph (same seed; within float rounding). Started without mpirun it is rank 0 of 1 (a one-part directory). An error on one rank of several ends the job (MPI_Abort naming the rank). halo_input='projection' drops the halo nodes' features and has the first layer exchange its projected rows instead (less memory, more bytes; gat without residual). Returns fit's dict, the same on every rank, with this rank's halo_bytes_per_epoch and gradient_bytes_per_epoch (sent to other ranks in a step).
    """

def predict_distributed(model: Model, partitions: str, gather: bool = False, halo_input: str = 'features') -> tuple:
    """
    Logits of this rank's owned nodes under `mpirun -np P` (the part files of fit_distributed; evaluation mode): (nodes [num_owned] global ids, ascending; logits [num_owned, C]). gather=True: every rank gets all of them, (arange(N), logits [N, C]). Without mpirun, rank 0 of 1 (a one-part directory).
    """
