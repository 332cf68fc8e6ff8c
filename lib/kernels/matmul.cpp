// Dense matmul: C tiled into fixed blocks, one single-threaded BLAS GEMM per block, blocks in
// parallel (see include/edgeattn/kernels/matmul.hpp).
//
// Row blocks of C come first (each GEMM then streams a contiguous slab of A and all of B, the
// shape BLAS is fastest at); C is also split by columns when it is too short to feed the
// threads, e.g. a weight gradient [out, in] = dy^T x with few output rows.
#include "edgeattn/kernels/matmul.hpp"

#include <algorithm>

#include "edgeattn/core/parallel.hpp"
#include "kernels/blas.hpp"

namespace edgeattn::kernels {
namespace {

constexpr int64_t kTileRows = 128;
constexpr int64_t kTileCols = 256;

}  // namespace

void matmul(ConstView a, bool trans_a, ConstView b, bool trans_b, View c, bool accumulate) {
  if (a.rank() != 2) raise<ShapeError>("matmul: a has shape ", a.shape().str(), ", expected rank 2");
  if (b.rank() != 2) raise<ShapeError>("matmul: b has shape ", b.shape().str(), ", expected rank 2");
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  const int64_t kb = trans_b ? b.dim(1) : b.dim(0);
  if (kb != k)
    raise<ShapeError>("matmul: b has shape ", b.shape().str(), (trans_b ? " (transposed)" : ""),
                      ", expected ", (trans_b ? "[*, " : "["), k, (trans_b ? "]" : ", *]"), " to match a ",
                      a.shape().str(), (trans_a ? " (transposed)" : ""));
  check_shape("matmul: c", c, {m, n});
  if (m == 0 || n == 0) return;
  const int64_t lda = a.dim(1), ldb = b.dim(1), ldc = n;
  const float beta = accumulate ? 1.f : 0.f;
  const int64_t row_tiles = (m + kTileRows - 1) / kTileRows;
  const int64_t col_tiles = (n + kTileCols - 1) / kTileCols;
  parallel_for(0, row_tiles * col_tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t r0 = (t / col_tiles) * kTileRows, c0 = (t % col_tiles) * kTileCols;
      const int64_t rows = std::min(kTileRows, m - r0), cols = std::min(kTileCols, n - c0);
      // Row r0 of op(a): a + r0 * lda untransposed, column r0 (a + r0) transposed; same for b.
      const float* a0 = a.data() + (trans_a ? r0 : r0 * lda);
      const float* b0 = b.data() + (trans_b ? c0 * ldb : c0);
      gemm(trans_a, trans_b, rows, cols, k, 1.f, a0, lda, b0, ldb, beta, c.data() + r0 * ldc + c0, ldc);
    }
  });
}

}  // namespace edgeattn::kernels
