// Dropout on dense Vars and sparse matrices: identity in eval mode and at p = 0, the kept
// fraction and scaling, masks that are pure functions of (seed, element) and independent of the
// thread count, the gradient, and invalid p.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/parallel.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::autograd {
namespace {

using edgeattn::testing::check_gradients;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;

std::vector<float> values(const Tensor& t) { return {t.span().begin(), t.span().end()}; }

TEST(Dropout, IsTheIdentityInEvalModeAndAtZeroRate) {
  const Tensor x = random_tensor({50, 20}, 1);
  Tape eval;
  eval.training = false;
  EXPECT_EQ(values(eval.value(dropout(eval, eval.constant(x), 0.6f, 7))), values(x));
  Tape train;
  EXPECT_EQ(values(train.value(dropout(train, train.constant(x), 0.f, 7))), values(x));
  const CsrMatrix s = CsrMatrix::from_dense(x);
  EXPECT_EQ(dropout(eval, s, 0.6f, 7), s);
}

TEST(Dropout, KeepsAboutOneMinusPAndScalesSurvivors) {
  const Tensor x({200, 100}, 1.f);
  Tape tape;
  const Tensor& y = tape.value(dropout(tape, tape.constant(x), 0.6f, 42));
  int64_t kept = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float v = y.data()[i];
    ASSERT_TRUE(v == 0.f || std::fabs(v - 2.5f) < 1e-6f) << v;
    if (v != 0.f) {
      ++kept;
      EXPECT_TRUE(dropout_keeps_element(42, i, 0.6f));
    } else {
      EXPECT_FALSE(dropout_keeps_element(42, i, 0.6f));
    }
  }
  // 20000 Bernoulli(0.4) draws: mean 8000, sd ~69
  EXPECT_NEAR(static_cast<double>(kept), 8000.0, 350.0);
}

TEST(Dropout, MaskDependsOnTheSeedButNotOnTheThreadCount) {
  const Tensor x = random_tensor({300, 257}, 2);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    Tape tape;
    runs.push_back(values(tape.value(dropout(tape, tape.constant(x), 0.5f, 9))));
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
  Tape tape;
  EXPECT_NE(values(tape.value(dropout(tape, tape.constant(x), 0.5f, 10))), runs[0]);
}

TEST(Dropout, GradientMatchesFiniteDifferencesForAFixedSeed) {
  Parameter x{"x", random_tensor({6, 7}, 3), {}};
  EXPECT_TRUE(check_gradients(
      {&x}, [&](Tape& t) { return weighted_sum(t, dropout(t, t.parameter(x), 0.4f, 5), 4); }));
}

TEST(Dropout, SparseKeepsThePatternAndKeysTheMaskByRowAndColumn) {
  Tensor dense = random_tensor({60, 40}, 4, 0.5f, 1.5f);
  for (int64_t i = 0; i < 60; ++i)
    for (int64_t j = 0; j < 40; ++j)
      if ((i + j) % 3) dense(i, j) = 0.f;
  const CsrMatrix x = CsrMatrix::from_dense(dense);
  Tape tape;
  const CsrMatrix y = dropout(tape, x, 0.5f, 11);
  ASSERT_EQ(y.rows(), x.rows());
  EXPECT_TRUE(std::equal(y.indptr().begin(), y.indptr().end(), x.indptr().begin()));
  EXPECT_TRUE(std::equal(y.indices().begin(), y.indices().end(), x.indices().begin()));
  int64_t zeros = 0;
  for (int64_t k = 0; k < y.nnz(); ++k) {
    const float v = y.values()[static_cast<size_t>(k)], orig = x.values()[static_cast<size_t>(k)];
    ASSERT_TRUE(v == 0.f || std::fabs(v - 2.f * orig) < 1e-6f);
    zeros += v == 0.f;
  }
  EXPECT_GT(zeros, y.nnz() / 4);
  EXPECT_LT(zeros, 3 * y.nnz() / 4);
  // Entries keep their decision when other entries are added: the mask is keyed by (row,
  // column), not by the position in the value array.
  Tensor denser = dense;
  for (int64_t i = 0; i < 60; ++i)
    if (dense(i, (i * 7) % 40) == 0.f) denser(i, (i * 7) % 40) = 3.f;
  const Tensor y_denser = dropout(tape, CsrMatrix::from_dense(denser), 0.5f, 11).to_dense();
  const Tensor yd = y.to_dense();
  for (int64_t i = 0; i < 60; ++i)
    for (int64_t j = 0; j < 40; ++j)
      if (dense(i, j) != 0.f) {
        EXPECT_EQ(y_denser(i, j), yd(i, j)) << i << "," << j;
      }
}

TEST(Dropout, RejectsARateOutsideZeroToOne) {
  Tape tape;
  const Var x = tape.constant(Tensor({2}));
  expect_throw_naming<InvalidArgument>([&] { (void)dropout(tape, x, 1.f, 0); },
                                       {"dropout", "p is 1", "[0, 1)"});
  expect_throw_naming<InvalidArgument>([&] { (void)dropout(tape, CsrMatrix(), -0.1f, 0); },
                                       {"dropout (sparse x)", "-0.1"});
}

}  // namespace
}  // namespace edgeattn::autograd
