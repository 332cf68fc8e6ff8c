#include "edgeattn/core/sparse_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "edgeattn/core/parallel.hpp"

namespace edgeattn {

CsrMatrix::CsrMatrix(int64_t rows, int64_t cols, std::vector<int64_t> indptr, std::vector<int32_t> indices,
                     std::vector<float> values, const std::string& what)
    : rows_(rows), cols_(cols), values_(std::move(values)) {
  if (rows_ < 0 || cols_ < 0)
    raise<ShapeError>(what, ": shape [", rows_, ", ", cols_, "] has a negative extent");
  if (cols_ > int64_t{1} << 31)
    raise<ShapeError>(what, ": ", cols_, " columns do not fit 32-bit column indices");
  if (static_cast<int64_t>(indptr.size()) != rows_ + 1)
    raise<ShapeError>(what, ": indptr has ", indptr.size(), " entries, expected rows + 1 = ", rows_ + 1);
  if (indices.size() != values_.size())
    raise<ShapeError>(what, ": ", indices.size(), " column indices but ", values_.size(), " values");
  const auto nz = static_cast<int64_t>(indices.size());
  if (indptr[0] != 0) raise<InvalidArgument>(what, ": indptr[0] is ", indptr[0], ", expected 0");
  if (indptr.back() != nz)
    raise<InvalidArgument>(what, ": indptr[", rows_, "] is ", indptr.back(), ", expected nnz = ", nz);
  for (int64_t r = 0; r < rows_; ++r) {
    const int64_t b = indptr[static_cast<size_t>(r)], e = indptr[static_cast<size_t>(r) + 1];
    if (e < b) raise<InvalidArgument>(what, ": indptr decreases at row ", r, " (", b, " then ", e, ")");
    for (int64_t p = b; p < e; ++p) {
      const int32_t c = indices[static_cast<size_t>(p)];
      if (c < 0 || c >= cols_)
        raise<InvalidArgument>(what, ": row ", r, " has column ", c, " (entry ", p, "), expected [0, ", cols_,
                               ")");
      if (p > b && c <= indices[static_cast<size_t>(p) - 1])
        raise<InvalidArgument>(what, ": row ", r, " columns are not strictly increasing at entry ", p, " (",
                               indices[static_cast<size_t>(p) - 1], " then ", c, ")");
    }
  }
  pattern_ = std::make_shared<const Pattern>(Pattern{std::move(indptr), std::move(indices)});
}

CsrMatrix::CsrMatrix(CsrMatrix&& other) noexcept
    : rows_(std::exchange(other.rows_, 0)),
      cols_(std::exchange(other.cols_, 0)),
      pattern_(std::exchange(other.pattern_, empty_pattern())),
      values_(std::move(other.values_)),
      transposed_(std::move(other.transposed_)) {
  other.values_.clear();
}

CsrMatrix& CsrMatrix::operator=(CsrMatrix&& other) noexcept {
  if (this != &other) {
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    pattern_ = std::exchange(other.pattern_, empty_pattern());
    values_ = std::move(other.values_);
    other.values_.clear();
    transposed_ = std::move(other.transposed_);
  }
  return *this;
}

const std::shared_ptr<const CsrMatrix::Pattern>& CsrMatrix::empty_pattern() {
  static const std::shared_ptr<const Pattern> empty = std::make_shared<const Pattern>(Pattern{{0}, {}});
  return empty;
}

CsrMatrix CsrMatrix::from_triplets(int64_t rows, int64_t cols, std::span<const int64_t> row,
                                   std::span<const int64_t> col, std::span<const float> value) {
  if (row.size() != col.size() || row.size() != value.size())
    raise<ShapeError>("CsrMatrix::from_triplets: ", row.size(), " rows, ", col.size(), " columns and ",
                      value.size(), " values; expected equal counts");
  for (size_t t = 0; t < row.size(); ++t) {
    if (row[t] < 0 || row[t] >= rows || col[t] < 0 || col[t] >= cols)
      raise<InvalidArgument>("CsrMatrix::from_triplets: triplet ", t, " is (", row[t], ", ", col[t],
                             "), outside the shape [", rows, ", ", cols, "]");
  }
  std::vector<size_t> order(row.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return row[a] != row[b] ? row[a] < row[b] : col[a] < col[b]; });
  std::vector<int64_t> indptr(static_cast<size_t>(rows) + 1, 0);
  std::vector<int32_t> indices;
  std::vector<float> values;
  indices.reserve(order.size());
  values.reserve(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t t = order[k];
    if (k > 0 && row[order[k - 1]] == row[t] && col[order[k - 1]] == col[t]) {
      values.back() += value[t];
      continue;
    }
    indices.push_back(static_cast<int32_t>(col[t]));
    values.push_back(value[t]);
    ++indptr[static_cast<size_t>(row[t]) + 1];
  }
  std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
  return CsrMatrix(rows, cols, std::move(indptr), std::move(indices), std::move(values),
                   "CsrMatrix::from_triplets");
}

CsrMatrix CsrMatrix::from_dense(ConstView dense, float tolerance) {
  check_shape("CsrMatrix::from_dense: dense", dense, {kAny, kAny});
  const int64_t rows = dense.dim(0), cols = dense.dim(1);
  std::vector<int64_t> indptr(static_cast<size_t>(rows) + 1, 0);
  std::vector<int32_t> indices;
  std::vector<float> values;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float x = dense.data()[r * cols + c];
      if (std::fabs(x) > tolerance) {
        indices.push_back(static_cast<int32_t>(c));
        values.push_back(x);
      }
    }
    indptr[static_cast<size_t>(r) + 1] = static_cast<int64_t>(indices.size());
  }
  return CsrMatrix(rows, cols, std::move(indptr), std::move(indices), std::move(values),
                   "CsrMatrix::from_dense");
}

double CsrMatrix::density() const {
  if (rows_ == 0 || cols_ == 0) return 0.0;
  return static_cast<double>(nnz()) / (static_cast<double>(rows_) * static_cast<double>(cols_));
}

std::span<const int32_t> CsrMatrix::row_indices(int64_t r) const {
  assert(r >= 0 && r < rows_);
  const auto& ip = pattern_->indptr;
  const auto b = static_cast<size_t>(ip[static_cast<size_t>(r)]);
  const auto e = static_cast<size_t>(ip[static_cast<size_t>(r) + 1]);
  return std::span<const int32_t>(pattern_->indices).subspan(b, e - b);
}

std::span<const float> CsrMatrix::row_values(int64_t r) const {
  assert(r >= 0 && r < rows_);
  const auto& ip = pattern_->indptr;
  const auto b = static_cast<size_t>(ip[static_cast<size_t>(r)]);
  const auto e = static_cast<size_t>(ip[static_cast<size_t>(r) + 1]);
  return std::span<const float>(values_).subspan(b, e - b);
}

Tensor CsrMatrix::to_dense() const {
  Tensor out({rows_, cols_});
  float* d = out.data();
  const auto& ip = pattern_->indptr;
  const auto& ix = pattern_->indices;
  for (int64_t r = 0; r < rows_; ++r)
    for (int64_t p = ip[static_cast<size_t>(r)]; p < ip[static_cast<size_t>(r) + 1]; ++p)
      d[r * cols_ + ix[static_cast<size_t>(p)]] = values_[static_cast<size_t>(p)];
  return out;
}

CsrMatrix CsrMatrix::select_rows(std::span<const int64_t> rows) const {
  std::vector<int64_t> indptr(rows.size() + 1, 0);
  std::vector<int32_t> indices;
  std::vector<float> values;
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t r = rows[k];
    if (r < 0 || r >= rows_)
      raise<InvalidArgument>("CsrMatrix::select_rows: rows[", k, "] is ", r, ", expected [0, ", rows_, ")");
    const auto ri = row_indices(r);
    const auto rv = row_values(r);
    indices.insert(indices.end(), ri.begin(), ri.end());
    values.insert(values.end(), rv.begin(), rv.end());
    indptr[k + 1] = static_cast<int64_t>(indices.size());
  }
  return CsrMatrix(static_cast<int64_t>(rows.size()), cols_, std::move(indptr), std::move(indices),
                   std::move(values), "CsrMatrix::select_rows");
}

const CsrMatrix::TransposedPattern& CsrMatrix::transposed_pattern() const {
  if (!transposed_) transposed_ = std::make_shared<TransposedPattern>();  // a moved-from matrix
  TransposedPattern& t = *transposed_;
  std::call_once(t.built, [&] {
    const auto& ip = pattern_->indptr;
    const auto& ix = pattern_->indices;
    Pattern tp;
    tp.indptr.assign(static_cast<size_t>(cols_) + 1, 0);
    for (const int32_t c : ix) ++tp.indptr[static_cast<size_t>(c) + 1];
    std::partial_sum(tp.indptr.begin(), tp.indptr.end(), tp.indptr.begin());
    std::vector<int64_t> next(tp.indptr.begin(), tp.indptr.end() - 1);
    tp.indices.resize(ix.size());
    t.source.resize(ix.size());
    for (int64_t r = 0; r < rows_; ++r)  // rows ascending, so each output row comes out sorted
      for (int64_t p = ip[static_cast<size_t>(r)]; p < ip[static_cast<size_t>(r) + 1]; ++p) {
        const auto q = static_cast<size_t>(next[static_cast<size_t>(ix[static_cast<size_t>(p)])]++);
        tp.indices[q] = static_cast<int32_t>(r);
        t.source[q] = p;
      }
    t.pattern = std::make_shared<const Pattern>(std::move(tp));
  });
  return t;
}

CsrMatrix::TransposeIndex CsrMatrix::transpose_index() const {
  const TransposedPattern& t = transposed_pattern();
  return {t.pattern->indptr, t.pattern->indices, t.source};
}

CsrMatrix CsrMatrix::transposed() const {
  const TransposedPattern& t = transposed_pattern();
  std::vector<float> values(values_.size());
  const auto n = static_cast<int64_t>(values.size());
  parallel_for(0, n, 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q)
      values[static_cast<size_t>(q)] = values_[static_cast<size_t>(t.source[static_cast<size_t>(q)])];
  });
  // The pattern is valid by construction (no validation pass) and shared by every transpose of
  // this matrix and its copies.
  CsrMatrix out;
  out.rows_ = cols_;
  out.cols_ = rows_;
  out.pattern_ = t.pattern;
  out.values_ = std::move(values);
  return out;
}

}  // namespace edgeattn
