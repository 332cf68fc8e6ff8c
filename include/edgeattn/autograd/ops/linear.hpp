// Linear maps with backward: dense matmul, a linear layer over dense input, and a linear layer
// over SPARSE constant input (node features), which costs O(nnz * out) instead of O(N * in * out).
//
// Weights use PyTorch's layout, weight: [out, in], y = x weight^T + bias, so parameters move to
// and from PyTorch Geometric unchanged. Kernels: kernels/matmul.hpp (tiled BLAS) and
// kernels/spmm.hpp (row-parallel SpMM); all results are bit-identical for any thread count.
//
// Example (GAT's input projection over dropped-out sparse features):
//   CsrMatrix xd = dropout(tape, features, 0.6f, seed);          // [N, in], same pattern
//   Var h = linear(tape, std::move(xd), tape.parameter(w));       // [N, heads * dim]
#pragma once

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/sparse_matrix.hpp"

namespace edgeattn::autograd {

/// x: [N, K], w: [K, M] -> [N, M]
Var matmul(Tape& tape, Var x, Var w);

/// x: [N, in], weight: [out, in], bias: [out] or none -> [N, out]
Var linear(Tape& tape, Var x, Var weight, Var bias = {});

/// Sparse constant input (no gradient flows to x): x: [N, in] CSR, weight: [out, in],
/// bias: [out] or none -> [N, out]. The weight gradient dy^T x is computed sparsely. The tape
/// keeps x (moved in) for backward.
Var linear(Tape& tape, CsrMatrix x, Var weight, Var bias = {});

}  // namespace edgeattn::autograd
