// Positional and structural encodings, computed once per graph (or sequence) and concatenated to
// the node features (Model::prepare_features does that for ModelConfig::pe). Each returns a
// Tensor [N, k].
//
//   sinusoidal_encoding(n, d)   Vaswani et al. 2017, for sequences:
//                               PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos /
//                               10000^(2i/d))
//   random_walk_encoding(g, k)  RWSE (Dwivedi et al., "Graph Neural Networks with Learnable
//                               Structural and Positional Representations", ICLR 2022):
//                               PE[i, t-1] = (P^t)_ii, P = D^-1 A, t = 1..k, the probability that a
//                               random walk from i is back at i after t steps. Exact (double
//                               accumulation, sparse propagation per node), parallel over nodes,
//                               identical for any thread count. Steps go from node i to the
//                               sources listed in row i of the graph (its in-neighbours), each with
//                               probability 1/degree(i); for undirected graphs (both directions
//                               stored) that is the usual walk. A node with no edges has P row 0:
//                               its encoding is 0. Cost O(N k E) in the worst case (the walk from
//                               a node reaches the whole graph); about a second for Cora, k = 16.
//   laplacian_encoding(g, k)    LapPE (Dwivedi & Bresson 2021; PyG AddLaplacianEigenvectorPE):
//                               the eigenvectors of L = I - D^-1/2 A D^-1/2 (A: the symmetrised,
//                               unweighted adjacency without self-loops; isolated nodes have
//                               L_ii = 1) for the 2nd .. (k+1)-th smallest eigenvalues (the first,
//                               0 for the constant-on-components vector, is skipped, as in PyG).
//                               Dense LAPACK ssyevr (MRRR) via the linked OpenBLAS: O(N^2) memory
//                               and O(N^3) time, so graphs above kMaxLaplacianNodes are refused
//                               with InvalidArgument. Eigenvectors have unit norm; their SIGN is
//                               arbitrary (v and -v are both eigenvectors), and for repeated
//                               eigenvalues any basis of the eigenspace is valid. The usual remedy
//                               is to flip signs at random during training: random_sign_flip.
//                               Which signs and basis come out depends on the node numbering:
//                               a model's inference should compute it in its training's numbering
//                               (edgeattn eval repeats a recorded --reorder for this).
//   laplacian_encoding_per_graph(g, graph_ptr, k)   the same for each graph of a many-graph
//                               dataset (graph classification), as PyG transforms each graph.
//
// Example:
//   Tensor pe = edgeattn::nn::laplacian_encoding(dataset.graph, 8);            // [N, 8], once
//   Tensor flipped = edgeattn::nn::random_sign_flip(pe, step_seed);            // per step
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn::nn {

/// Largest graph laplacian_encoding accepts (a dense N x N float matrix: 64 MiB at this size).
inline constexpr int64_t kMaxLaplacianNodes = 4096;

/// [positions, dim]; positions >= 0, dim >= 1 (odd dim: the last column is a sine).
Tensor sinusoidal_encoding(int64_t positions, int64_t dim, float base = 10000.f);

/// [N, k]: column t-1 holds diag((D^-1 A)^t), t = 1..k. k >= 1; the graph must be square.
Tensor random_walk_encoding(const Graph& graph, int64_t k);

/// [N, k]: eigenvectors for the 2nd..(k+1)-th smallest eigenvalues of the symmetric normalised
/// Laplacian; `eigenvalues`, when given, receives them ([k], ascending). Requires a square graph,
/// 1 <= k <= N - 1 and N <= kMaxLaplacianNodes (InvalidArgument otherwise).
Tensor laplacian_encoding(const Graph& graph, int64_t k, Tensor* eigenvalues = nullptr);

/// laplacian_encoding of each graph of a block-diagonal batch (graph_ptr [G + 1], as
/// Dataset::graph_ptr), as PyG's AddLaplacianEigenvectorPE applied per graph of a dataset: [N, k],
/// rows of graph g from that graph's own Laplacian. A graph of n <= k nodes has only n - 1 such
/// eigenvectors: its remaining columns are 0 (as the zero padding of GraphGPS's LapPE); a
/// one-node graph's row is all 0. Each graph is limited to kMaxLaplacianNodes, not the union.
/// InvalidArgument when an edge joins two graphs or graph_ptr does not span the graph.
Tensor laplacian_encoding_per_graph(const Graph& graph, std::span<const int64_t> graph_ptr, int64_t k);

/// pe with each column multiplied by +1 or -1, chosen from (seed, column).
Tensor random_sign_flip(const Tensor& pe, uint64_t seed);

/// [N, a] ++ [N, b] -> [N, a + b] (dense), and the sparse form: x [N, a] CSR with the dense
/// columns appended (every entry of `extra` stored, zeros included).
Tensor append_columns(const Tensor& x, const Tensor& extra);
CsrMatrix append_columns(const CsrMatrix& x, const Tensor& extra);

}  // namespace edgeattn::nn
