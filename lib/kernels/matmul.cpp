// Dense matmul: C tiled into fixed blocks, one single-threaded BLAS GEMM per block, blocks in
// parallel (see include/edgeattn/kernels/matmul.hpp).
//
// A right operand the size of a layer's weight (k <= 512, n <= 256) is packed once and met by
// the register-blocked microkernel row block by row block (kernels/packed_gemm.hpp). Otherwise,
// row blocks of C come first (each GEMM then streams a contiguous slab of A and all of B, the
// shape BLAS is fastest at); C is also split by columns when it is too short to feed the
// threads. When C is still only a few tiles and the inner extent is long (a weight gradient
// [out, in] = dy^T x over a whole batch of rows), the inner extent is split instead: fixed
// chunks, one partial product each in parallel, summed in chunk order (a layer-sized one by the
// packed microkernel's TransposeAccumulator, the rest by BLAS).
#include "edgeattn/kernels/matmul.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "kernels/blas.hpp"
#include "kernels/packed_gemm.hpp"

namespace edgeattn::kernels {
namespace {

constexpr int64_t kTileRows = 128;
constexpr int64_t kTileCols = 256;

// Split-k: used when C has fewer than kSplitBelowTiles tiles and k is at least two chunks. A
// chunk is kSplitRows long, or longer so that there are at most kMaxChunks (bounding the
// partials' memory); both depend on the shapes alone, never on the thread count.
constexpr int64_t kSplitBelowTiles = 8;
constexpr int64_t kSplitRows = 8192;
constexpr int64_t kMaxChunks = 64;
constexpr int64_t kMaxSplitElements = int64_t{1} << 16;  // C at most 256 KiB per partial

struct Operands {
  const float* a;
  int64_t lda;
  bool trans_a;
  const float* b;
  int64_t ldb;
  bool trans_b;
  // op(a) restricted to inner indices [k0, ...): the column k0 of op(a), the row k0 of op(b).
  const float* a_at(int64_t r0, int64_t k0) const { return trans_a ? a + k0 * lda + r0 : a + r0 * lda + k0; }
  const float* b_at(int64_t k0, int64_t c0) const { return trans_b ? b + c0 * ldb + k0 : b + k0 * ldb + c0; }
};

// c [m, n] = (accumulate ? c : 0) + sum over chunks of op(a)[:, chunk] op(b)[chunk, :].
void split_k(const Operands& o, int64_t m, int64_t n, int64_t k, float* c, bool accumulate) {
  const int64_t chunk = std::max(kSplitRows, (k + kMaxChunks - 1) / kMaxChunks);
  const int64_t chunks = (k + chunk - 1) / chunk, size = m * n;
  std::vector<float> partial(static_cast<size_t>(chunks * size));
  // A weight gradient dy^T x (both operands row-major over k): the packed microkernel, its sum in
  // L2 across the chunk; BLAS otherwise.
  const bool packed = o.trans_a && !o.trans_b && TransposeAccumulator::suits(m, n);
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    std::optional<TransposeAccumulator> sum;
    if (packed) sum.emplace(m, n);
    for (int64_t q = c0; q < c1; ++q) {
      const int64_t k0 = q * chunk, len = std::min(chunk, k - k0);
      if (packed) {
        sum->reset();
        sum->add(len, o.a_at(0, k0), o.lda, o.b_at(k0, 0), o.ldb);
        sum->write(partial.data() + q * size, n, false);
      } else {
        gemm(o.trans_a, o.trans_b, m, n, len, 1.f, o.a_at(0, k0), o.lda, o.b_at(k0, 0), o.ldb, 0.f,
             partial.data() + q * size, n);
      }
    }
  });
  parallel_for(0, size, 4096, [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e) {
      float s = accumulate ? c[e] : 0.f;
      for (int64_t q = 0; q < chunks; ++q) s += partial[static_cast<size_t>(q * size + e)];
      c[e] = s;
    }
  });
}

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
  const Operands o{a.data(), a.dim(1), trans_a, b.data(), b.dim(1), trans_b};
  const int64_t ldc = n;
  const float beta = accumulate ? 1.f : 0.f;
  const int64_t row_tiles = (m + kTileRows - 1) / kTileRows;
  const int64_t col_tiles = (n + kTileCols - 1) / kTileCols;
  if (!trans_a && PackedRight::suits(k, n)) {  // a weight on the right: pack it once
    const PackedRight right(o.b, o.ldb, trans_b, k, n);
    const int64_t blocks = (m + kPackedBlockRows - 1) / kPackedBlockRows;
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      std::vector<float> scratch(static_cast<size_t>(right.scratch_floats(kPackedBlockRows)));
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t r0 = blk * kPackedBlockRows, rows = std::min(kPackedBlockRows, m - r0);
        right.multiply(rows, o.a_at(r0, 0), o.lda, c.data() + r0 * ldc, ldc, accumulate, scratch.data());
      }
    });
    return;
  }
  if (row_tiles * col_tiles < kSplitBelowTiles && k >= 2 * kSplitRows && m * n <= kMaxSplitElements) {
    split_k(o, m, n, k, c.data(), accumulate);
    return;
  }
  parallel_for(0, row_tiles * col_tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t r0 = (t / col_tiles) * kTileRows, c0 = (t % col_tiles) * kTileCols;
      const int64_t rows = std::min(kTileRows, m - r0), cols = std::min(kTileCols, n - c0);
      gemm(trans_a, trans_b, rows, cols, k, 1.f, o.a_at(r0, 0), o.lda, o.b_at(0, c0), o.ldb, beta,
           c.data() + r0 * ldc + c0, ldc);
    }
  });
}

}  // namespace edgeattn::kernels
