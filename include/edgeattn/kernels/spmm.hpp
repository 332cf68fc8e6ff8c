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
// The `_dropped` variants multiply x with a dropout applied to its entries, drawn on the fly per
// (row, column) entry (core/rng.hpp's sparse_entry_draw): the products run over the kept entries
// only, and no dropped copy of x is made. They equal spmm / spmm_transposed of the explicitly
// dropped matrix (kept entries scaled, dropped ones 0, as autograd::dropout makes it) bit for bit,
// up to the sign of a zero: the same products, summed in the same order, without the zero terms.
// spmm_transposed_dropped reads x's values through x.transpose_index(), built once per pattern
// and shared by copies of x, so a training step's weight gradient costs no transpose.
//
// Example:
//   edgeattn::CsrMatrix x = ...;                       // [num_nodes, in]
//   edgeattn::Tensor wt({in, out}), y({num_nodes, out});
//   edgeattn::kernels::spmm(x, wt, y);                 // y = x . wt
//   edgeattn::Tensor dwt({in, out});
//   edgeattn::kernels::spmm_transposed(x, dy, dwt);    // dwt = x^T . dy
//   const edgeattn::kernels::EntryDropout drop{.key = site_key, .threshold =
//       edgeattn::dropout_threshold16(0.6f), .scale = 1 / 0.4f};
//   edgeattn::kernels::spmm_dropped(x, drop, wt, y);   // y = dropout(x) . wt
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/core/tensor.hpp"

namespace edgeattn::kernels {

/// A dropout of a sparse matrix's entries: entry (r, c) is kept, times `scale`, when
/// sparse_entry_draw(key, r, c) >= threshold, and is 0 otherwise.
struct EntryDropout {
  uint64_t key = 0;        ///< the dropout site's stream key
  uint32_t threshold = 0;  ///< dropout_threshold16(p): 0 keeps every entry
  float scale = 1.f;       ///< 1 / (1 - p)
};

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

/// y = dropout(x) . b, or y += dropout(x) . b when `accumulate`. Shapes as spmm's. With
/// `keep_out` (one byte per entry of x, in values() order) each entry's decision is recorded
/// there, 1 kept and 0 dropped, for spmm_transposed_dropped to reuse.
void spmm_dropped(const CsrMatrix& x, const EntryDropout& drop, ConstView b, View y, bool accumulate = false,
                  std::span<uint8_t> keep_out = {});

/// y = dropout(x)^T . b, or y += dropout(x)^T . b when `accumulate`. Shapes as spmm_transposed's.
/// With `keep` (spmm_dropped's keep_out for the same x and drop) the decisions are read from it
/// instead of drawn again; drop.scale still scales the kept values.
void spmm_transposed_dropped(const CsrMatrix& x, const EntryDropout& drop, ConstView b, View y,
                             bool accumulate = false, std::span<const uint8_t> keep = {});

}  // namespace edgeattn::kernels
