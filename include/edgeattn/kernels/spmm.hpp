// Sparse x dense products (SpMM) for sparse node features: a linear layer over Cora's 1.3%-dense
// bag-of-words input does ~70x less work as SpMM than as a dense GEMM.
//
//   spmm:             y [rows, m]  = x [rows, cols] (CSR) . b [cols, m]     (forward of x W^T)
//   spmm_transposed:  y [cols, m]  = x^T . b [rows, m]                       (weight gradient)
//
// Both are row-parallel over the rows of y with no atomics: spmm walks x's rows, and
// spmm_transposed walks the rows of x^T (x's CSC, built once per call by a counting sort, or
// passed in when the caller already has it). Every output row is computed by one task in a fixed
// order (ascending nonzero position), so results are bit-identical for any thread count. The
// serial oracle lives in lib/kernels/reference/reference_matmul.cpp.
//
// Example:
//   edgeattn::CsrMatrix x = ...;                       // [num_nodes, in]
//   edgeattn::Tensor wt({in, out}), y({num_nodes, out});
//   edgeattn::kernels::spmm(x, wt, y);                 // y = x . wt
//   edgeattn::Tensor dwt({in, out});
//   edgeattn::kernels::spmm_transposed(x, dy, dwt);    // dwt = x^T . dy
#pragma once

#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/core/tensor.hpp"

namespace edgeattn::kernels {

/// y = x . b, or y += x . b when `accumulate`.
/// x: [rows, cols] CSR; b: [cols, m]; y: [rows, m]. ShapeError naming the operand otherwise.
void spmm(const CsrMatrix& x, ConstView b, View y, bool accumulate = false);

/// y = x^T . b, or y += x^T . b when `accumulate`.
/// x: [rows, cols] CSR; b: [rows, m]; y: [cols, m].
void spmm_transposed(const CsrMatrix& x, ConstView b, View y, bool accumulate = false);

/// Same, with x^T already at hand (`x_transposed` = x.transposed(), [cols, rows]); this is
/// exactly spmm(x_transposed, b, y, accumulate).
inline void spmm_transposed_with(const CsrMatrix& x_transposed, ConstView b, View y,
                                 bool accumulate = false) {
  spmm(x_transposed, b, y, accumulate);
}

}  // namespace edgeattn::kernels
