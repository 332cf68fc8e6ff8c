// SpMM: row-parallel CSR x dense products (see include/edgeattn/kernels/spmm.hpp).
//
// Pull style, as in GAP's kernels: each task owns a block of output rows and reads the sparse
// row's nonzeros in order, so there are no atomics and every row is summed in a fixed order.
// Blocks hold about the same number of nonzeros (graph/graph.hpp balanced_row_chunks).
#include "edgeattn/kernels/spmm.hpp"

#include <algorithm>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/graph.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::kernels {
namespace {

// y_row[j0 .. j0+8V) (+)= sum_p values[p] * b[indices[p], j0 .. j0+8V): one column tile of one
// output row, accumulated in V vector registers across the row's nonzeros (vector_math.hpp's
// Lanes8, written out so that GCC keeps the tile in registers instead of vectorising across
// nonzeros with gathers).
template <int V>
inline void spmm_tile(const int32_t* __restrict indices, const float* __restrict values, int64_t begin,
                      int64_t end, const float* __restrict b, int64_t m, int64_t j0, float* __restrict y_row,
                      bool accumulate) {
  Lanes8 acc[V];
  for (int t = 0; t < V; ++t) acc[t] = accumulate ? load_lanes8(y_row + j0 + 8 * t) : Lanes8{};
  for (int64_t p = begin; p < end; ++p) {
    const float v = values[p];
    const float* __restrict b_row = b + static_cast<int64_t>(indices[p]) * m + j0;
    for (int t = 0; t < V; ++t) acc[t] += v * load_lanes8(b_row + 8 * t);
  }
  for (int t = 0; t < V; ++t) store_lanes8(y_row + j0 + 8 * t, acc[t]);
}

// y_row (+)= sum_p values[p] * b[indices[p], :], for one row: tiles of 64 and 8 columns, then the
// remaining columns one at a time.
inline void spmm_row(const int32_t* __restrict indices, const float* __restrict values, int64_t begin,
                     int64_t end, const float* __restrict b, int64_t m, float* __restrict y_row,
                     bool accumulate) {
  int64_t j0 = 0;
  for (; j0 + 64 <= m; j0 += 64) spmm_tile<8>(indices, values, begin, end, b, m, j0, y_row, accumulate);
  for (; j0 + 8 <= m; j0 += 8) spmm_tile<1>(indices, values, begin, end, b, m, j0, y_row, accumulate);
  if (j0 == m) return;
  if (!accumulate) std::fill(y_row + j0, y_row + m, 0.f);
  for (int64_t p = begin; p < end; ++p) {
    const float v = values[p];
    const float* __restrict b_row = b + static_cast<int64_t>(indices[p]) * m;
    for (int64_t j = j0; j < m; ++j) y_row[j] += v * b_row[j];
  }
}

}  // namespace

void spmm(const CsrMatrix& x, ConstView b, View y, bool accumulate) {
  check_shape("spmm: b", b, {x.cols(), kAny});
  const int64_t m = b.dim(1);
  check_shape("spmm: y", y, {x.rows(), m});
  if (x.rows() == 0 || m == 0) return;
  const auto indptr = x.indptr();
  const int32_t* indices = x.indices().data();
  const float* values = x.values().data();
  const float* bd = b.data();
  float* yd = y.data();
  // About 32k multiply-adds per chunk: large enough to amortise a task, small enough to balance.
  const int64_t target = std::max<int64_t>(64, (int64_t{1} << 15) / std::max<int64_t>(m, 1));
  const std::vector<int64_t> chunks = balanced_row_chunks(indptr, target);
  parallel_for_chunks(chunks, [&](size_t, int64_t row_begin, int64_t row_end) {
    for (int64_t r = row_begin; r < row_end; ++r)
      spmm_row(indices, values, indptr[static_cast<size_t>(r)], indptr[static_cast<size_t>(r) + 1], bd, m,
               yd + r * m, accumulate);
  });
}

void spmm_transposed(const CsrMatrix& x, ConstView b, View y, bool accumulate) {
  check_shape("spmm_transposed: b", b, {x.rows(), kAny});
  check_shape("spmm_transposed: y", y, {x.cols(), b.dim(1)});
  spmm(x.transposed(), b, y, accumulate);
}

}  // namespace edgeattn::kernels
