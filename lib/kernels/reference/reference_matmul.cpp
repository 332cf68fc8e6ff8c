// The serial oracle for SpMM and dense matmul: plain triple loops, double accumulators.
#include "kernels/reference/reference_matmul.hpp"

#include <vector>

#include "edgeattn/core/rng.hpp"

namespace edgeattn::kernels {

void reference_spmm(const CsrMatrix& x, ConstView b, View y, bool accumulate) {
  const int64_t m = b.dim(1);
  std::vector<double> acc(static_cast<size_t>(m));
  for (int64_t r = 0; r < x.rows(); ++r) {
    for (int64_t j = 0; j < m; ++j) acc[static_cast<size_t>(j)] = accumulate ? y.data()[r * m + j] : 0.0;
    const auto cols = x.row_indices(r);
    const auto vals = x.row_values(r);
    for (size_t p = 0; p < cols.size(); ++p)
      for (int64_t j = 0; j < m; ++j)
        acc[static_cast<size_t>(j)] += static_cast<double>(vals[p]) * b.data()[cols[p] * m + j];
    for (int64_t j = 0; j < m; ++j) y.data()[r * m + j] = static_cast<float>(acc[static_cast<size_t>(j)]);
  }
}

void reference_spmm_transposed(const CsrMatrix& x, ConstView b, View y, bool accumulate) {
  const int64_t m = b.dim(1);
  std::vector<double> acc(static_cast<size_t>(x.cols() * m));
  if (accumulate)
    for (int64_t i = 0; i < x.cols() * m; ++i) acc[static_cast<size_t>(i)] = y.data()[i];
  for (int64_t r = 0; r < x.rows(); ++r) {
    const auto cols = x.row_indices(r);
    const auto vals = x.row_values(r);
    for (size_t p = 0; p < cols.size(); ++p)
      for (int64_t j = 0; j < m; ++j)
        acc[static_cast<size_t>(cols[p] * m + j)] += static_cast<double>(vals[p]) * b.data()[r * m + j];
  }
  for (int64_t i = 0; i < x.cols() * m; ++i) y.data()[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
}

CsrMatrix reference_dropped(const CsrMatrix& x, const EntryDropout& drop) {
  CsrMatrix out = x;
  auto values = out.values();
  for (int64_t r = 0; r < x.rows(); ++r)
    for (int64_t p = x.indptr()[static_cast<size_t>(r)]; p < x.indptr()[static_cast<size_t>(r) + 1]; ++p) {
      const bool keep = sparse_entry_draw(drop.key, r, x.indices()[static_cast<size_t>(p)]) >= drop.threshold;
      values[static_cast<size_t>(p)] = keep ? values[static_cast<size_t>(p)] * drop.scale : 0.f;
    }
  return out;
}

void reference_spmm_dropped(const CsrMatrix& x, const EntryDropout& drop, ConstView b, View y,
                            bool accumulate) {
  reference_spmm(reference_dropped(x, drop), b, y, accumulate);
}

void reference_spmm_transposed_dropped(const CsrMatrix& x, const EntryDropout& drop, ConstView b, View y,
                                       bool accumulate) {
  reference_spmm_transposed(reference_dropped(x, drop), b, y, accumulate);
}

void reference_matmul(ConstView a, bool trans_a, ConstView b, bool trans_b, View c, bool accumulate) {
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  const int64_t lda = a.dim(1), ldb = b.dim(1);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = accumulate ? c.data()[i * n + j] : 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = trans_a ? a.data()[p * lda + i] : a.data()[i * lda + p];
        const float bv = trans_b ? b.data()[j * ldb + p] : b.data()[p * ldb + j];
        s += static_cast<double>(av) * bv;
      }
      c.data()[i * n + j] = static_cast<float>(s);
    }
}

}  // namespace edgeattn::kernels
