// Sparse float32 matrices in CSR (compressed sparse row) form: node features that are mostly zero
// (Cora's bag-of-words features are 1.3% non-zero) and sparse operands of SpMM.
//
//   row r holds columns indices[indptr[r] .. indptr[r+1]) with values values[...]
//
// The pattern (indptr and indices) never changes after construction, only the values: copies share
// one pattern and copy only the values (the dropped-out features of each training step copy nnz
// floats, not the whole matrix), and the transpose's pattern, built on the first call, is shared
// the same way.
//
// Invariants, checked by the constructor (InvalidArgument/ShapeError naming the entry):
// indptr has rows+1 non-decreasing entries from 0 to nnz; every column is in [0, cols); columns
// are strictly increasing within a row (sorted, no duplicates). Values may be any float, including
// explicit zeros.
//
// Example:
//   // [[0, 2, 0],
//   //  [1, 0, 3]]
//   edgeattn::CsrMatrix m(2, 3, {0, 1, 3}, {1, 0, 2}, {2.f, 1.f, 3.f});
//   m.row_values(1);                 // {1, 3}
//   edgeattn::Tensor d = m.to_dense();  // [2, 3]
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn {

class CsrMatrix {
 public:
  /// The 0 x 0 matrix.
  CsrMatrix() : pattern_(empty_pattern()) {}
  /// Takes the arrays (move them in) and validates them; `what` names the matrix in errors.
  CsrMatrix(int64_t rows, int64_t cols, std::vector<int64_t> indptr, std::vector<int32_t> indices,
            std::vector<float> values, const std::string& what = "CsrMatrix");
  /// Copies share the pattern (and the transpose's, once built) and copy the values.
  CsrMatrix(const CsrMatrix&) = default;
  CsrMatrix& operator=(const CsrMatrix&) = default;
  /// A moved-from matrix is the 0 x 0 matrix.
  CsrMatrix(CsrMatrix&& other) noexcept;
  CsrMatrix& operator=(CsrMatrix&& other) noexcept;
  ~CsrMatrix() = default;

  /// From (row, col, value) triplets in any order; duplicates are summed. Throws InvalidArgument
  /// naming the first triplet out of range.
  static CsrMatrix from_triplets(int64_t rows, int64_t cols, std::span<const int64_t> row,
                                 std::span<const int64_t> col, std::span<const float> value);
  /// Keeps the entries of a rank-2 tensor with |x| > tolerance.
  static CsrMatrix from_dense(ConstView dense, float tolerance = 0.f);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t nnz() const { return static_cast<int64_t>(pattern_->indices.size()); }
  /// nnz / (rows * cols); 0 for an empty matrix.
  double density() const;

  std::span<const int64_t> indptr() const { return pattern_->indptr; }    // [rows + 1]
  std::span<const int32_t> indices() const { return pattern_->indices; }  // [nnz]
  std::span<const float> values() const { return values_; }               // [nnz]
  std::span<float> values() { return values_; }                           // mutable values, fixed pattern
  std::span<const int32_t> row_indices(int64_t r) const;
  std::span<const float> row_values(int64_t r) const;
  /// True when this matrix and `other` hold the same pattern object (a copy, or the same matrix):
  /// equal patterns without comparing them.
  bool shares_pattern(const CsrMatrix& other) const { return pattern_ == other.pattern_; }

  /// [rows, cols] dense copy.
  Tensor to_dense() const;
  /// The rows listed in `rows` (any order, repeats allowed), as a new matrix.
  CsrMatrix select_rows(std::span<const int64_t> rows) const;
  /// The transpose (CSC of this matrix as CSR), columns sorted. Its pattern is built on the first
  /// call and shared by every copy of this matrix and by every transpose returned: a later call,
  /// on this matrix or a copy (e.g. the dropped-out features of each training step), only gathers
  /// the values, in parallel.
  CsrMatrix transposed() const;
  /// The transpose's pattern without its values: row c of x^T holds x's rows indices[q] for q in
  /// [indptr[c], indptr[c+1]), ascending, and entry q is x's entry source[q] (a position in
  /// values()). Built and shared as for transposed(); for kernels that read x's values through it
  /// instead of gathering a transposed copy. The spans live as long as this matrix or a copy.
  struct TransposeIndex {
    std::span<const int64_t> indptr;   // [cols + 1]
    std::span<const int32_t> indices;  // [nnz]
    std::span<const int64_t> source;   // [nnz]
  };
  TransposeIndex transpose_index() const;

  /// Equal shapes, patterns and values.
  friend bool operator==(const CsrMatrix& a, const CsrMatrix& b) {
    return a.rows_ == b.rows_ && a.cols_ == b.cols_ &&
           (a.pattern_ == b.pattern_ ||
            (a.pattern_->indptr == b.pattern_->indptr && a.pattern_->indices == b.pattern_->indices)) &&
           a.values_ == b.values_;
  }

 private:
  struct Pattern {
    std::vector<int64_t> indptr;
    std::vector<int32_t> indices;
  };
  // The transpose's pattern and, for each of its entries, the position in values() it reads.
  struct TransposedPattern {
    std::once_flag built;
    std::shared_ptr<const Pattern> pattern;
    std::vector<int64_t> source;
  };
  /// The shared pattern of every 0 x 0 matrix (indptr {0}).
  static const std::shared_ptr<const Pattern>& empty_pattern();
  const TransposedPattern& transposed_pattern() const;

  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::shared_ptr<const Pattern> pattern_;  // never null
  std::vector<float> values_;
  // Shared by copies (same pattern); a moved-from matrix has none and builds its own when asked.
  mutable std::shared_ptr<TransposedPattern> transposed_ = std::make_shared<TransposedPattern>();
};

}  // namespace edgeattn
