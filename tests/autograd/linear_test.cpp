// matmul and linear (dense and sparse input): hand-computed values, gradient checks, the sparse
// path against the dense one, thread-count independence, and shape errors.
#include <gtest/gtest.h>

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

// A sparse [rows, cols] matrix with roughly a quarter of the entries set and an empty row.
CsrMatrix sparse_features(int64_t rows, int64_t cols, uint64_t seed) {
  Tensor dense = random_tensor({rows, cols}, seed);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (std::fabs(dense(i, j)) < 0.75f || i == 1) dense(i, j) = 0.f;
  return CsrMatrix::from_dense(dense);
}

TEST(Linear, MatchesHandComputedValuesInPyTorchLayout) {
  // x = [[1, 2]], weight [out=3, in=2] = [[1, 0], [0, 1], [1, 1]], bias = [10, 20, 30]
  Parameter w{"weight", Tensor({3, 2}, std::vector<float>{1, 0, 0, 1, 1, 1}), {}};
  Parameter b{"bias", Tensor({3}, std::vector<float>{10, 20, 30}), {}};
  Tape tape;
  const Var y = linear(tape, tape.constant(Tensor({1, 2}, std::vector<float>{1, 2})), tape.parameter(w),
                       tape.parameter(b));
  EXPECT_EQ(values(tape.value(y)), (std::vector<float>{11, 22, 33}));
  tape.backward(sum(tape, y));
  EXPECT_EQ(values(w.grad), (std::vector<float>{1, 2, 1, 2, 1, 2}));  // dy^T x
  EXPECT_EQ(values(b.grad), (std::vector<float>{1, 1, 1}));
}

TEST(Linear, MatmulGradientsMatchFiniteDifferences) {
  Parameter x{"x", random_tensor({5, 4}, 1), {}}, w{"w", random_tensor({4, 3}, 2), {}};
  EXPECT_TRUE(check_gradients(
      {&x, &w}, [&](Tape& t) { return weighted_sum(t, matmul(t, t.parameter(x), t.parameter(w)), 3); }));
}

TEST(Linear, DenseGradientsMatchFiniteDifferences) {
  Parameter x{"x", random_tensor({6, 5}, 4), {}}, w{"weight", random_tensor({3, 5}, 5), {}},
      b{"bias", random_tensor({3}, 6), {}};
  EXPECT_TRUE(check_gradients({&x, &w, &b}, [&](Tape& t) {
    return weighted_sum(t, linear(t, t.parameter(x), t.parameter(w), t.parameter(b)), 7);
  }));
  EXPECT_TRUE(check_gradients({&x, &w}, [&](Tape& t) {  // no bias
    return weighted_sum(t, linear(t, t.parameter(x), t.parameter(w)), 8);
  }));
}

TEST(Linear, SparseGradientsMatchFiniteDifferences) {
  const CsrMatrix x = sparse_features(7, 9, 9);
  Parameter w{"weight", random_tensor({4, 9}, 10), {}}, b{"bias", random_tensor({4}, 11), {}};
  EXPECT_TRUE(check_gradients(
      {&w, &b}, [&](Tape& t) { return weighted_sum(t, linear(t, x, t.parameter(w), t.parameter(b)), 12); }));
}

TEST(Linear, SparseInputGivesTheDenseResultAndGradients) {
  const CsrMatrix x = sparse_features(40, 30, 13);
  Parameter ws{"w", random_tensor({8, 30}, 14), {}}, bs{"b", random_tensor({8}, 15), {}};
  Parameter wd = ws, bd = bs;
  Tape sparse_tape, dense_tape;
  const Var ys = linear(sparse_tape, x, sparse_tape.parameter(ws), sparse_tape.parameter(bs));
  const Var yd = linear(dense_tape, dense_tape.constant(x.to_dense()), dense_tape.parameter(wd),
                        dense_tape.parameter(bd));
  EXPECT_LE(max_abs_diff(sparse_tape.value(ys), dense_tape.value(yd)), 1e-5f);
  sparse_tape.backward(weighted_sum(sparse_tape, ys, 16));
  dense_tape.backward(weighted_sum(dense_tape, yd, 16));
  EXPECT_LE(max_abs_diff(ws.grad, wd.grad), 1e-4f);
  EXPECT_LE(max_abs_diff(bs.grad, bd.grad), 1e-5f);
}

TEST(Linear, ResultsAreBitIdenticalForAnyThreadCount) {
  const CsrMatrix x = sparse_features(2000, 300, 17);
  const Tensor dense_x = random_tensor({2000, 64}, 18);
  std::vector<Tensor> outs, grads;
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    Parameter w1{"w1", random_tensor({64, 300}, 19), {}}, w2{"w2", random_tensor({7, 64}, 20), {}};
    Tape tape;
    const Var h = linear(tape, x, tape.parameter(w1));
    const Var y = linear(tape, add(tape, h, tape.constant_ref(dense_x)), tape.parameter(w2));
    tape.backward(weighted_sum(tape, y, 21));
    outs.push_back(tape.value(y));
    grads.push_back(w1.grad);
    grads.push_back(w2.grad);
  }
  for (size_t k = 1; k < outs.size(); ++k) {
    EXPECT_EQ(values(outs[0]), values(outs[k]));
    EXPECT_EQ(values(grads[0]), values(grads[2 * k]));
    EXPECT_EQ(values(grads[1]), values(grads[2 * k + 1]));
  }
}

TEST(Linear, RejectsMismatchedShapesNamingTheOperand) {
  Tape tape;
  const Var x = tape.constant(Tensor({4, 5}));
  expect_throw_naming<ShapeError>(
      [&] {
        (void)linear(tape, x, tape.constant(Tensor({3, 6})));
      },
      {"linear: weight", "[3, 6]", "[*, 5]"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)linear(tape, x, tape.constant(Tensor({3, 5})), tape.constant(Tensor({4})));
      },
      {"linear: bias", "[4]", "[3]"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)matmul(tape, x, tape.constant(Tensor({4, 2})));
      },
      {"matmul: w", "[4, 2]", "[5, *]"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)linear(tape, sparse_features(4, 5, 1), tape.constant(Tensor({3, 4})));
      },
      {"linear (sparse x): weight", "[3, 4]", "in=5"});
}

}  // namespace
}  // namespace edgeattn::autograd
