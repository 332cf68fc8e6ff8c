// Internal helpers shared by the autograd ops: parallel element loops, deterministic column sums
// over rows, blocked transposes, and shape checks that name the op and operand.
//
// Loops split work by a fixed grain (core/parallel.hpp), and reductions sum fixed row blocks in
// block order, so every result is bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/tensor.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::autograd::detail {

/// Elements per task of element-wise loops.
inline constexpr int64_t kElementGrain = int64_t{1} << 15;
/// Rows per partial sum of column reductions (fixed, so sums do not depend on threads).
inline constexpr int64_t kReduceRows = 256;

/// Runs f(i) for i in [0, n), in parallel pieces of kElementGrain.
template <class F>
void for_each_index(int64_t n, F&& f) {
  if (n <= kElementGrain) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  parallel_for(0, n, kElementGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

/// Runs f(begin, end) over [0, n) in parallel pieces of kElementGrain (one call when n is small).
/// For loops that want a plain `for` over restrict pointers inside, so they vectorise.
template <class F>
void for_each_span(int64_t n, F&& f) {
  if (n <= kElementGrain) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  parallel_for(0, n, kElementGrain, f);
}

/// y[i] = f(x[i]) over one span. `f` should be branch-free (selects, not ifs).
template <class F>
inline void map_span(const float* __restrict x, float* __restrict y, int64_t n, F f) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

/// Runs f(row_begin, row_end) over [0, rows) in pieces of about kElementGrain elements.
template <class F>
void for_each_row_block(int64_t rows, int64_t cols, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(cols, 1));
  if (rows <= grain) {
    if (rows > 0) f(int64_t{0}, rows);
    return;
  }
  parallel_for(0, rows, grain, f);
}

/// dst[i] = 0 for i in [0, n), in parallel pieces: the gradients' zero fills (Adam::zero_grad,
/// Tape::grad_storage) ran on one thread while the other waited (a 1433 x 64 weight gradient is
/// 367 KB).
inline void zero_into(float* dst, int64_t n) {
  for_each_span(n, [&](int64_t b, int64_t e) { std::fill(dst + b, dst + e, 0.f); });
}

/// dst[i] += src[i]
inline void add_span(float* __restrict dst, const float* __restrict src, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}
inline void add_into(float* dst, const float* src, int64_t n) {
  for_each_span(n, [&](int64_t b, int64_t e) { add_span(dst + b, src + b, e - b); });
}

/// out[c] (+)= sum_r row_value(r, c) over rows [0, rows), for c in [0, cols). `add_row(r, acc)`
/// adds row r's contribution into acc[0..cols). Rows are summed in fixed blocks of kReduceRows,
/// blocks in order: the result does not depend on the number of threads.
template <class AddRow>
void column_sums(int64_t rows, int64_t cols, AddRow&& add_row, float* out, bool accumulate) {
  const int64_t blocks = std::max<int64_t>(1, (rows + kReduceRows - 1) / kReduceRows);
  std::vector<float> partial(static_cast<size_t>(blocks * cols), 0.f);
  auto run_block = [&](int64_t b) {
    float* acc = partial.data() + b * cols;
    const int64_t end = std::min(rows, (b + 1) * kReduceRows);
    for (int64_t r = b * kReduceRows; r < end; ++r) add_row(r, acc);
  };
  if (blocks == 1) {
    run_block(0);
  } else {
    parallel_for(0, blocks, 1, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) run_block(k);
    });
  }
  for (int64_t c = 0; c < cols; ++c) {
    float s = accumulate ? out[c] : 0.f;
    for (int64_t b = 0; b < blocks; ++b) s += partial[static_cast<size_t>(b * cols + c)];
    out[c] = s;
  }
}

/// y[r, :] += bias for every row r of y (bias: [cols], y: [rows, cols]); the linear ops' bias.
inline void add_bias_rows(Tensor& y, const Tensor& bias) {
  const int64_t cols = bias.numel(), rows = cols ? y.numel() / cols : 0;
  float* yd = y.data();
  const float* b = bias.data();
  for_each_row_block(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) yd[r * cols + c] += b[c];
  });
}

/// The backward of add_bias_rows: dbias += column sums of the node's dy [rows, cols] (nothing
/// when bias is absent or needs no gradient).
inline void bias_backward(BackwardContext& ctx, Var bias) {
  if (!bias || !ctx.needs_grad(bias)) return;
  const Tensor& dy = ctx.grad_out();
  Tensor& db = ctx.grad(bias);
  const int64_t cols = db.numel(), rows = cols ? dy.numel() / cols : 0;
  const float* g = dy.data();
  column_sums(
      rows, cols,
      [&](int64_t r, float* acc) {
        for (int64_t c = 0; c < cols; ++c) acc[c] += g[r * cols + c];
      },
      db.data(), /*accumulate=*/true);
}

/// d[i] (+)= s[i * stride] for i in [0, n): one column of a transpose (strided reads become
/// vector gathers; writes are contiguous).
template <bool kAccumulate>
inline void strided_copy(const float* __restrict s, int64_t stride, int64_t n, float* __restrict d) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kAccumulate)
      d[i] += s[i * stride];
    else
      d[i] = s[i * stride];
  }
}

/// dst [cols, rows] (+)= src [rows, cols]^T, in parallel over blocks of 32 rows of src: each block
/// is 32 cache lines wide, which every column of the block reuses. Inside a block, 8 x 8 tiles
/// go through registers (kernels::transpose_8x8; the strided loop's vector gathers were twice as
/// slow on Zen 3), and the rows and columns beyond the last whole tile through the strided loop.
inline void transpose_into(const float* src, int64_t rows, int64_t cols, float* dst, bool accumulate) {
  constexpr int64_t kTile = 32;
  const int64_t tiles = (rows + kTile - 1) / kTile;
  auto run = [&]<bool kAccumulate>(int64_t t) {
    const int64_t r0 = t * kTile, r1 = std::min(rows, r0 + kTile), whole = r0 + (r1 - r0) / 8 * 8;
    for (int64_t c = 0; c < cols; c += 8) {
      const int64_t c1 = std::min(cols, c + 8);
      if (c1 - c == 8)
        for (int64_t r = r0; r < whole; r += 8)
          kernels::transpose_8x8<kAccumulate>(src + r * cols + c, cols, dst + c * rows + r, rows);
      const int64_t strided_from = c1 - c == 8 ? whole : r0;  // what the tiles left
      for (int64_t k = c; k < c1; ++k)
        strided_copy<kAccumulate>(src + strided_from * cols + k, cols, r1 - strided_from,
                                  dst + k * rows + strided_from);
    }
  };
  const int64_t tile_grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(kTile * cols, 1));
  parallel_for(0, tiles, tile_grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      if (accumulate)
        run.template operator()<true>(t);
      else
        run.template operator()<false>(t);
    }
  });
}

/// "op: operand"
inline std::string operand(const char* op, const char* name) { return std::string(op) + ": " + name; }

/// ShapeError naming op and operand unless `t` has the expected extents (kAny matches any).
inline void expect_shape(const char* op, const char* name, const Tensor& t,
                         std::initializer_list<int64_t> expected) {
  check_shape(operand(op, name), t, expected);
}

/// ShapeError unless t has rank `rank`; `layout` describes the expected shape ("[N, F]").
inline void expect_rank(const char* op, const char* name, const Tensor& t, int rank, const char* layout) {
  if (t.rank() != rank)
    raise<ShapeError>(op, ": ", name, " has shape ", t.shape().str(), ", expected ", layout);
}

}  // namespace edgeattn::autograd::detail
