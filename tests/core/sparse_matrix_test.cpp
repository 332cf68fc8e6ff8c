#include "edgeattn/core/sparse_matrix.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "support/expect_error.hpp"

namespace edgeattn {
namespace {

using testing::expect_throw_naming;

CsrMatrix two_by_three() { return CsrMatrix(2, 3, {0, 1, 3}, {1, 0, 2}, {2.f, 1.f, 3.f}); }

TEST(CsrMatrix, ToDenseFillsTheStoredEntries) {
  const Tensor d = two_by_three().to_dense();
  ASSERT_EQ(d.shape(), Shape({2, 3}));
  const std::vector<float> expected = {0, 2, 0, 1, 0, 3};
  EXPECT_EQ(std::vector<float>(d.span().begin(), d.span().end()), expected);
}

TEST(CsrMatrix, FromDenseRoundTrips) {
  const CsrMatrix m = two_by_three();
  EXPECT_EQ(CsrMatrix::from_dense(m.to_dense()), m);
  EXPECT_DOUBLE_EQ(m.density(), 0.5);
}

TEST(CsrMatrix, FromTripletsSortsAndSumsDuplicates) {
  const std::vector<int64_t> r = {1, 0, 1, 1};
  const std::vector<int64_t> c = {2, 1, 0, 2};
  const std::vector<float> v = {1.f, 2.f, 1.f, 2.f};
  EXPECT_EQ(CsrMatrix::from_triplets(2, 3, r, c, v), two_by_three());
}

TEST(CsrMatrix, TransposeTwiceIsIdentity) {
  const CsrMatrix m = two_by_three();
  const CsrMatrix t = m.transposed();
  EXPECT_EQ(t.rows(), 3);
  EXPECT_EQ(t.to_dense()(2, 1), 3.f);
  EXPECT_EQ(t.transposed(), m);
}

TEST(CsrMatrix, ACopyWithOtherValuesTransposesItsOwnValues) {
  // A random 40 x 70 matrix: the transpose equals the dense transpose, for the matrix and for
  // copies whose values changed after the first transpose built the shared pattern.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::vector<int64_t> r, c;
  std::vector<float> v;
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 70; ++j)
      if (uniform(rng) < 0.1f) {
        r.push_back(i);
        c.push_back(j);
        v.push_back(uniform(rng) - 0.5f);
      }
  const CsrMatrix m = CsrMatrix::from_triplets(40, 70, r, c, v);
  auto values = [](const Tensor& t) { return std::vector<float>(t.span().begin(), t.span().end()); };
  auto dense_transpose = [](const CsrMatrix& x) {
    const Tensor d = x.to_dense();
    Tensor t({x.cols(), x.rows()});
    for (int64_t i = 0; i < x.rows(); ++i)
      for (int64_t j = 0; j < x.cols(); ++j) t(j, i) = d(i, j);
    return t;
  };
  EXPECT_EQ(values(m.transposed().to_dense()), values(dense_transpose(m)));
  CsrMatrix copy = m;
  for (float& x : copy.values()) x = 2.f * x + 1.f;
  EXPECT_EQ(values(copy.transposed().to_dense()), values(dense_transpose(copy)));
  EXPECT_EQ(values(m.transposed().to_dense()), values(dense_transpose(m)));  // m's own values
  EXPECT_EQ(copy.transposed().transposed(), copy);
  CsrMatrix moved = std::move(copy);
  copy = m.select_rows(std::vector<int64_t>{3, 1});  // the moved-from matrix, reassigned
  EXPECT_EQ(values(copy.transposed().to_dense()), values(dense_transpose(copy)));
  EXPECT_EQ(moved.transposed().transposed(), moved);
}

TEST(CsrMatrix, CopiesShareThePatternAndOwnTheirValues) {
  // A copy (e.g. the dropped-out features of a training step) shares the pattern object and
  // copies the values: changing its values leaves the original's alone. Transposes of the matrix
  // and of its copies share one transposed pattern.
  const CsrMatrix m = two_by_three();
  CsrMatrix copy = m;
  EXPECT_TRUE(copy.shares_pattern(m));
  EXPECT_EQ(copy.indices().data(), m.indices().data());
  EXPECT_NE(copy.values().data(), m.values().data());
  copy.values()[0] = 7.f;
  EXPECT_EQ(m.values()[0], 2.f);
  EXPECT_FALSE(copy == m);
  copy.values()[0] = 2.f;
  EXPECT_EQ(copy, m);
  const CsrMatrix t1 = m.transposed(), t2 = copy.transposed();
  EXPECT_TRUE(t1.shares_pattern(t2));
  EXPECT_FALSE(t1.shares_pattern(m));
  // Equal patterns that are different objects still compare equal.
  const CsrMatrix rebuilt = two_by_three();
  EXPECT_FALSE(rebuilt.shares_pattern(m));
  EXPECT_EQ(rebuilt, m);
}

TEST(CsrMatrix, AMovedFromMatrixIsTheEmptyMatrix) {
  CsrMatrix m = two_by_three();
  const CsrMatrix moved = std::move(m);
  EXPECT_EQ(moved, two_by_three());
  EXPECT_EQ(m.rows(), 0);  // NOLINT(bugprone-use-after-move): the documented moved-from state
  EXPECT_EQ(m.cols(), 0);
  EXPECT_EQ(m.nnz(), 0);
  ASSERT_EQ(m.indptr().size(), 1u);
  EXPECT_EQ(m.indptr()[0], 0);
  EXPECT_EQ(m, CsrMatrix());
  EXPECT_EQ(m.transposed(), CsrMatrix());
  CsrMatrix assigned = two_by_three();
  assigned = std::move(m);
  EXPECT_EQ(assigned, CsrMatrix());
}

TEST(CsrMatrix, SelectRowsKeepsOrderAndRepeats) {
  const std::vector<int64_t> rows = {1, 1, 0};
  const CsrMatrix s = two_by_three().select_rows(rows);
  EXPECT_EQ(s.rows(), 3);
  EXPECT_EQ(s.to_dense()(1, 2), 3.f);
  EXPECT_EQ(s.to_dense()(2, 1), 2.f);
}

TEST(CsrMatrix, RejectsAColumnOutOfRangeNamingTheRow) {
  expect_throw_naming<InvalidArgument>(
      [] {
        CsrMatrix(2, 3, {0, 1, 2}, {1, 3}, {1.f, 1.f}, "features");
      },
      {"features", "row 1", "column 3", "[0, 3)"});
}

TEST(CsrMatrix, RejectsUnsortedColumns) {
  expect_throw_naming<InvalidArgument>(
      [] {
        CsrMatrix(1, 3, {0, 2}, {2, 1}, {1.f, 1.f});
      },
      {"not strictly increasing", "2 then 1"});
}

TEST(CsrMatrix, RejectsAnIndptrOfTheWrongLength) {
  expect_throw_naming<ShapeError>([] { CsrMatrix(2, 3, {0, 1}, {1}, {1.f}); }, {"indptr has 2 entries", "3"});
}

TEST(CsrMatrix, RejectsATripletOutsideTheShape) {
  const std::vector<int64_t> r = {0, 5};
  const std::vector<int64_t> c = {0, 0};
  const std::vector<float> v = {1.f, 1.f};
  expect_throw_naming<InvalidArgument>([&] { CsrMatrix::from_triplets(2, 2, r, c, v); },
                                       {"triplet 1", "(5, 0)"});
}

}  // namespace
}  // namespace edgeattn
