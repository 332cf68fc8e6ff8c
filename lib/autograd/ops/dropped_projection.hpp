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
//
// A DroppedInput may point at a KeepBits: the first product over it draws the mask and records
// each decision as a bit, and the later ones (the backward's) apply the bits instead of drawing
// the hashes again. The same decisions either way, so the same results bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::autograd::detail {

/// The keep decisions of one dropped input, a bit per element of x~ (1: kept): row r's element c
/// is bit c % 32 of words[r * words_per_row + c / 32], each row starting a word of its own so that
/// tasks writing different rows never share one. N * ceil(in / 32) words: 16 MB for 1M rows of
/// 128 features, where drawing the mask costs a 32-bit hash per 2 elements each time (the first
/// GAT layer's input dropout was drawn three times a step: its projection, the backward's
/// reprojection and its weight gradient).
struct KeepBits {
  std::vector<uint32_t> words;
  int64_t rows = 0, words_per_row = 0;
  bool filled = false;  ///< set once a product has recorded every row
};

struct DroppedInput {
  const Tensor& x;  ///< [N, in], or [M, in] with a row selection
  float p = 0.f;    ///< in [0, 1); 0 keeps every element
  uint64_t seed = 0;
  std::span<const int64_t> rows = {};  ///< empty: x itself; else x~'s row i is x's row rows[i] (in [0, M))
  /// Null: every product draws the mask. Else, empty (not filled): the next product draws it and
  /// records it here; filled: products read it (it must be this input's: N rows of ceil(in / 32)
  /// words, else InvalidArgument). Unused when p = 0 and with a row selection (whose short
  /// gathered rows cost more to record than to draw again).
  KeepBits* keep = nullptr;
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

/// keep[k] = 1 if the dense mask of (seed, p) keeps element begin + k, else 0, for k < n, drawn in
/// blocks as the ops draw it (for tests: autograd::dropout_keeps_element draws one element alone).
void dense_keep_decisions(uint64_t seed, float p, int64_t begin, int64_t n, uint8_t* keep);

}  // namespace edgeattn::autograd::detail
