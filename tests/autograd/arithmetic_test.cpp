// add, sub, mul, scale_rows, add_bias, scale and the shape ops (reshape, mean_heads, concat, leading_rows):
// values, gradient checks and shape errors.
#include <gtest/gtest.h>

#include <vector>

#include "edgeattn/autograd/ops.hpp"
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

TEST(Arithmetic, AddBiasBroadcastsOverLeadingIndices) {
  Tape tape;
  const Var y = add_bias(tape, tape.constant(Tensor({2, 1, 2}, std::vector<float>{1, 2, 3, 4})),
                         tape.constant(Tensor({2}, std::vector<float>{10, 20})));
  EXPECT_EQ(values(tape.value(y)), (std::vector<float>{11, 22, 13, 24}));
}

TEST(Arithmetic, GradientsMatchFiniteDifferences) {
  Parameter a{"a", random_tensor({3, 2, 4}, 1), {}}, b{"b", random_tensor({3, 2, 4}, 2), {}},
      bias{"bias", random_tensor({4}, 3), {}};
  EXPECT_TRUE(check_gradients(
      {&a, &b}, [&](Tape& t) { return weighted_sum(t, add(t, t.parameter(a), t.parameter(b)), 4); }));
  EXPECT_TRUE(check_gradients({&a, &bias}, [&](Tape& t) {
    return weighted_sum(t, add_bias(t, t.parameter(a), t.parameter(bias)), 5);
  }));
  EXPECT_TRUE(
      check_gradients({&a}, [&](Tape& t) { return weighted_sum(t, scale(t, t.parameter(a), -1.5f), 6); }));
}

TEST(Shape, MeanHeadsAveragesOverHeads) {
  Tape tape;
  // [N=1, H=2, D=2]
  const Var y = mean_heads(tape, tape.constant(Tensor({1, 2, 2}, std::vector<float>{1, 2, 3, 6})));
  EXPECT_EQ(tape.value(y).shape(), (Shape{1, 2}));
  EXPECT_EQ(values(tape.value(y)), (std::vector<float>{2, 4}));
}

TEST(Shape, ConcatJoinsAlongTheLastDimension) {
  Tape tape;
  const Var y = concat(tape, {tape.constant(Tensor({2, 1}, std::vector<float>{1, 2})),
                              tape.constant(Tensor({2, 2}, std::vector<float>{3, 4, 5, 6}))});
  EXPECT_EQ(tape.value(y).shape(), (Shape{2, 3}));
  EXPECT_EQ(values(tape.value(y)), (std::vector<float>{1, 3, 4, 2, 5, 6}));
}

TEST(Shape, GradientsMatchFiniteDifferences) {
  Parameter x{"x", random_tensor({3, 4, 2}, 7), {}}, y{"y", random_tensor({3, 4, 3}, 8), {}};
  EXPECT_TRUE(check_gradients({&x}, [&](Tape& t) {
    return weighted_sum(t, reshape(t, t.parameter(x), {3, 8}), 9);
  }));
  EXPECT_TRUE(
      check_gradients({&x}, [&](Tape& t) { return weighted_sum(t, mean_heads(t, t.parameter(x)), 10); }));
  EXPECT_TRUE(check_gradients({&x, &y}, [&](Tape& t) {
    return weighted_sum(t, concat(t, {t.parameter(x), t.parameter(y), t.parameter(x)}), 11);
  }));
  // x used whole and through its leading rows: both gradients add up.
  EXPECT_TRUE(check_gradients({&x}, [&](Tape& t) {
    const Var p = t.parameter(x);
    return add(t, weighted_sum(t, leading_rows(t, p, 2), 12), weighted_sum(t, p, 13));
  }));
}

TEST(Shape, LeadingRowsTakesTheFirstRows) {
  Tape tape;
  const Var x = tape.constant(Tensor({3, 2}, std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(tape.value(leading_rows(tape, x, 2)).shape(), (Shape{2, 2}));
  EXPECT_EQ(values(tape.value(leading_rows(tape, x, 2))), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(tape.value(leading_rows(tape, x, 0)).numel(), 0);
  expect_throw_naming<ShapeError>([&] { (void)leading_rows(tape, x, 4); },
                                  {"leading_rows", "[3, 2]", "4 rows"});
}

TEST(Shape, ReshapeKeepsValuesAndRejectsAnotherElementCount) {
  Tape tape;
  const Var x = tape.constant(Tensor({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}));
  const Var y = reshape(tape, x, {3, 2});
  EXPECT_EQ(tape.value(y).shape(), (Shape{3, 2}));
  EXPECT_EQ(values(tape.value(y)), values(tape.value(x)));
  expect_throw_naming<ShapeError>([&] { (void)reshape(tape, x, {4, 2}); }, {"reshape", "[2, 3]", "[4, 2]"});
}

TEST(Arithmetic, RejectsMismatchedShapesNamingTheOperand) {
  Tape tape;
  const Var a = tape.constant(Tensor({2, 3}));
  expect_throw_naming<ShapeError>(
      [&] {
        (void)add(tape, a, tape.constant(Tensor({3, 2})));
      },
      {"add: b", "[3, 2]", "[2, 3]"});
  expect_throw_naming<ShapeError>([&] { (void)add_bias(tape, a, tape.constant(Tensor({2}))); },
                                  {"add_bias: bias", "[2]", "[3]"});
  expect_throw_naming<ShapeError>([&] { (void)mean_heads(tape, a); },
                                  {"mean_heads: x", "[2, 3]", "[N, heads, dim]"});
  expect_throw_naming<ShapeError>(
      [&] {
        (void)concat(tape, {a, tape.constant(Tensor({3, 3}))});
      },
      {"concat: input 1", "[3, 3]"});
}

TEST(Arithmetic, SubMulAndScaleRowsMatchHandValues) {
  Tape tape;
  const Var a = tape.constant(Tensor({2, 2}, std::vector<float>{1, 2, 3, 4}));
  const Var b = tape.constant(Tensor({2, 2}, std::vector<float>{5, 7, 11, 13}));
  EXPECT_EQ(values(tape.value(sub(tape, a, b))), (std::vector<float>{-4, -5, -8, -9}));
  EXPECT_EQ(values(tape.value(mul(tape, a, b))), (std::vector<float>{5, 14, 33, 52}));
  const Var s = tape.constant(Tensor({2, 1}, std::vector<float>{10, -1}));
  EXPECT_EQ(values(tape.value(scale_rows(tape, a, s))), (std::vector<float>{10, 20, -3, -4}));
}

TEST(Arithmetic, SubMulAndScaleRowsGradientsMatchFiniteDifferences) {
  Parameter a{"a", random_tensor({3, 5}, 21), {}}, b{"b", random_tensor({3, 5}, 22), {}},
      s{"s", random_tensor({3, 1}, 23), {}};
  EXPECT_TRUE(check_gradients(
      {&a, &b}, [&](Tape& t) { return weighted_sum(t, sub(t, t.parameter(a), t.parameter(b)), 24); }));
  EXPECT_TRUE(check_gradients(
      {&a, &b}, [&](Tape& t) { return weighted_sum(t, mul(t, t.parameter(a), t.parameter(b)), 25); }));
  // The same Var on both sides: d(a*a)/da = 2a.
  EXPECT_TRUE(check_gradients({&a}, [&](Tape& t) {
    const Var v = t.parameter(a);
    return weighted_sum(t, mul(t, v, v), 26);
  }));
  EXPECT_TRUE(check_gradients(
      {&a, &s}, [&](Tape& t) { return weighted_sum(t, scale_rows(t, t.parameter(a), t.parameter(s)), 27); }));
}

TEST(Arithmetic, SubMulAndScaleRowsRejectMismatchedShapes) {
  Tape tape;
  const Var a = tape.constant(Tensor({2, 3}));
  expect_throw_naming<ShapeError>(
      [&] {
        (void)sub(tape, a, tape.constant(Tensor({3, 2})));
      },
      {"sub: b", "[3, 2]"});
  expect_throw_naming<ShapeError>([&] { (void)mul(tape, a, tape.constant(Tensor({6}))); }, {"mul: b", "[6]"});
  expect_throw_naming<ShapeError>([&] { (void)scale_rows(tape, a, tape.constant(Tensor({2}))); },
                                  {"scale_rows: s", "[2]"});
}

}  // namespace
}  // namespace edgeattn::autograd
