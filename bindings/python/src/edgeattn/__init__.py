"""edgeattn: graph attention over sparse graphs, from Python.

The compiled module ``edgeattn._edgeattn`` holds the C++ library; this package re-exports it and
adds a few pure-Python helpers (SciPy input, PyG-style names).

Arrays (zero-copy rules)
------------------------
* Kernel operands (query, key, value, score_dst, ...) must be float32, C-contiguous and in CPU
  memory: NumPy arrays or anything exposing DLPack (PyTorch tensors). They are used in place,
  never copied; a wrong dtype, layout, device or shape raises ``edgeattn.InvalidArgument`` or
  ``edgeattn.ShapeError`` carrying the C++ message.
* Index arrays (edge_index, CSR indptr/indices, lengths) may be int32 or int64 with any strides:
  the Graph owns its CSR, so they are always copied.
* Results are NumPy arrays that own the C++ buffers (no copy). ``Graph.indptr``/``indices`` and
  dataset arrays are read-only views kept alive by their object; ``AttentionResult.out`` and
  ``.attention`` are writable views of the result (backward reads ``out``: leave it unchanged).
* ``Model.parameter(name)`` is a writable view; ``Model.logits(graph, features)`` copies the
  features into the model's input tensor.
* The GIL is released while kernels, graph builders, loaders and training run.

Example::

    import numpy as np, edgeattn
    edge_index = np.array([[0, 1, 2, 2], [1, 0, 0, 1]])        # row 0 source, row 1 destination
    g = edgeattn.Graph.from_edge_index(edge_index, self_loops="add")
    q = k = v = np.random.rand(3, 2, 4).astype(np.float32)   # [nodes, heads, dim]
    r = edgeattn.attention_forward(g, query=q, key=k, value=v, return_attention=True,
                                   attention_order="input")
    r.out.shape, r.attention.shape                           # (3, 2, 4), (4, 2)
"""

from __future__ import annotations

from . import _edgeattn
from ._edgeattn import (  # noqa: F401  (re-exports)
    AttentionResult,
    Block,
    BlockDiagonalPattern,
    CausalPattern,
    ChecksumError,
    CompletePattern,
    Dataset,
    DeviceError,
    DownloadError,
    Error,
    GATConv,
    GATv2Conv,
    Graph,
    GraphError,
    InvalidArgument,
    IoError,
    Model,
    ParseError,
    SampledSubgraph,
    ShapeError,
    TransformerConv,
    WindowGlobalPattern,
    WindowPattern,
    advise_ordering,
    amd_ordering,
    partition_ordering,
    attention_backward,
    attention_forward,
    blas_info,
    cuda_built,
    cuda_device,
    cuda_unavailable_reason,
    dataset_names,
    default_data_root,
    degree_group_ordering,
    degree_ordering,
    density,
    describe,
    erdos_renyi_graph,
    evaluate,
    fetch_dataset,
    fit,
    fit_distributed,
    full_neighborhood_block,
    gather_rows,
    load_dataset,
    load_dataset_path,
    locality,
    materialize,
    mpi_available,
    mpi_rank_size,
    ogb_binary_info,
    num_edges,
    partition,
    predict_distributed,
    rcm_ordering,
    rmat_graph,
    sample_neighbors,
    sbm_dataset,
)
from .loader import MiniBatch, NeighborLoader  # noqa: F401  (re-exports)

__all__ = [
    "AttentionResult",
    "Block",
    "BlockDiagonalPattern",
    "CausalPattern",
    "ChecksumError",
    "CompletePattern",
    "Dataset",
    "DeviceError",
    "DownloadError",
    "Error",
    "GATConv",
    "GATv2Conv",
    "Graph",
    "GraphError",
    "InvalidArgument",
    "IoError",
    "MiniBatch",
    "Model",
    "NeighborLoader",
    "ParseError",
    "SampledSubgraph",
    "ShapeError",
    "TransformerConv",
    "WindowGlobalPattern",
    "WindowPattern",
    "advise_ordering",
    "amd_ordering",
    "partition_ordering",
    "attention_backward",
    "attention_forward",
    "blas_info",
    "cuda_built",
    "cuda_device",
    "cuda_unavailable_reason",
    "dataset_names",
    "default_data_root",
    "degree_group_ordering",
    "degree_ordering",
    "density",
    "describe",
    "erdos_renyi_graph",
    "evaluate",
    "fetch_dataset",
    "fit",
    "fit_distributed",
    "full_neighborhood_block",
    "gather_rows",
    "graph_from_scipy",
    "load_dataset",
    "load_dataset_path",
    "locality",
    "materialize",
    "mpi_available",
    "mpi_rank_size",
    "ogb_binary_info",
    "num_edges",
    "partition",
    "predict_distributed",
    "rcm_ordering",
    "rmat_graph",
    "sample_neighbors",
    "sbm_dataset",
    "sparse_features",
]


def graph_from_scipy(matrix, *, sort: bool = True) -> Graph:
    """A Graph from a ``scipy.sparse`` matrix of shape (num_dst, num_src).

    Row i of the matrix lists the sources that destination i attends to (the CSR-by-destination
    layout, so ``A @ V`` aggregates like the attention does); for PyG's ``to_scipy_sparse_matrix``
    (A[src, dst]) pass ``matrix.T``. Stored entries are edges whatever their value (explicit zeros
    included); duplicate entries are summed by SciPy first. Copies the index arrays.
    """
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise InvalidArgument(
            f"graph_from_scipy: expected a scipy.sparse matrix, got {type(matrix).__name__}")
    csr = sp.csr_matrix(matrix, copy=True)
    csr.sum_duplicates()  # also sorts the indices
    return Graph.from_csr(csr.indptr, csr.indices, num_src=csr.shape[1], sort=sort)


def sparse_features(dataset: Dataset):
    """The dataset's features as a ``scipy.sparse.csr_matrix`` sharing the dataset's buffers
    (read-only), or None when the features are dense (use ``dataset.dense_features``)."""
    parts = dataset.sparse_features
    if parts is None:
        return None
    import scipy.sparse as sp

    indptr, indices, values, shape = parts
    return sp.csr_matrix((values, indices, indptr), shape=shape, copy=False)
