// Internal: products with a dropped input, x~ = dropout(x; p, seed) (the mask of
// autograd::dropout, keyed by the flat element index; p = 0: x itself, read in place), computed in
// row blocks so that x~ never exists whole. dropout_linear and gat_attention are built on them.
// With a row selection, x~ = dropout(x[rows]): the rows are read from x where they are (a sampled
// batch's input nodes from the whole feature matrix), the mask keyed by the selection's element
// index, as for a gathered copy.
//
//   project:          y = x~ W^T                        x [N, in], W [out, in] -> y [N, out]
//   transpose_products: out_k += g_k^T x~ for each k      g_k [N, cols_k] -> out_k [cols_k, in]
//   input_grad:       dx = mask * scale * (dy W)         dy [N, out] -> dx [N, in]
//
// transpose_products sums fixed 8192-row partials in order: results are bit-identical for any
// thread count.
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::autograd::detail {

struct DroppedInput {
  const Tensor& x;  ///< [N, in], or [M, in] with a row selection
  float p = 0.f;    ///< in [0, 1); 0 keeps every element
  uint64_t seed = 0;
  std::span<const int64_t> rows = {};  ///< empty: x itself; else x~'s row i is x's row rows[i] (in [0, M))
  /// x~'s rows, N.
  int64_t count() const { return rows.empty() ? x.dim(0) : static_cast<int64_t>(rows.size()); }
};

/// y [N, out] (every element written) = x~ w^T, w [out, in].
void dropped_project(const DroppedInput& in, const Tensor& w, Tensor& y);
/// The same into y [N, out] row-major (the leading rows of a larger buffer, say).
void dropped_project(const DroppedInput& in, const Tensor& w, float* y);

/// One operand of dropped_transpose_products: g [N, cols] (row-major) and out [cols, in].
struct TransposeProduct {
  const float* g;
  int64_t cols;
  float* out;  ///< accumulated into
};
void dropped_transpose_products(const DroppedInput& in, std::span<const TransposeProduct> products);

/// dx [N, in] (every element written) = mask * scale * (dy w), dy [N, out], w [out, in]. Not for a
/// row selection (InvalidArgument): its x is a constant.
void dropped_input_grad(const DroppedInput& in, const float* dy, const Tensor& w, Tensor& dx);

}  // namespace edgeattn::autograd::detail
