// The tape: values and handles, backward order and seeding, accumulation into Parameter::grad,
// skipping of nodes no parameter feeds, lazy gradients, and errors for misuse.
#include <gtest/gtest.h>

#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::autograd {
namespace {

using edgeattn::testing::expect_throw_naming;

// y = factor * x, counting how often its backward runs.
Var counted_scale(Tape& tape, Var x, float factor, int* calls) {
  Tensor y(tape.value(x));
  for (float& v : y.span()) v *= factor;
  return tape.record("counted_scale", std::move(y), {x}, [x, factor, calls](BackwardContext& ctx) {
    ++*calls;
    if (!ctx.needs_grad(x)) return;
    Tensor& dx = ctx.grad(x);
    for (int64_t i = 0; i < dx.numel(); ++i) dx.data()[i] += factor * ctx.grad_out().data()[i];
  });
}

TEST(Tape, ConstantsAndParametersExposeTheirValues) {
  Parameter p{"w", Tensor({2}, std::vector<float>{1, 2}), {}};
  Tape tape;
  const Tensor features({3}, std::vector<float>{4, 5, 6});
  const Var a = tape.constant(Tensor({1}, std::vector<float>{7}));
  const Var b = tape.constant_ref(features);
  const Var w = tape.parameter(p);
  EXPECT_EQ(tape.value(a).data()[0], 7.f);
  EXPECT_EQ(tape.value(b).data(), features.data());  // not copied
  EXPECT_EQ(tape.value(w).data(), p.value.data());   // the parameter's own storage
  EXPECT_FALSE(tape.requires_grad(a));
  EXPECT_TRUE(tape.requires_grad(w));
  EXPECT_EQ(p.grad.shape(), p.value.shape());  // allocated, zeros
  EXPECT_EQ(p.grad.data()[1], 0.f);
  EXPECT_STREQ(tape.op_name(w), "parameter");
  EXPECT_EQ(tape.size(), 3);
}

TEST(Tape, BackwardComputesHandDerivedGradients) {
  // loss = sum(3 * (w + c)) -> dloss/dw = 3 everywhere
  Parameter p{"w", Tensor({2, 2}, std::vector<float>{1, -2, 3, 0.5f}), {}};
  Tape tape;
  const Var w = tape.parameter(p);
  const Var c = tape.constant(Tensor({2, 2}, 1.f));
  const Var loss = sum(tape, scale(tape, add(tape, w, c), 3.f));
  EXPECT_FLOAT_EQ(tape.value(loss).data()[0], 3.f * (1 - 2 + 3 + 0.5f + 4));
  tape.backward(loss);
  for (float g : p.grad.span()) EXPECT_EQ(g, 3.f);
  EXPECT_TRUE(tape.grad(c).absent());  // constants get no gradient
}

TEST(Tape, BackwardAccumulatesIntoParameterGradAcrossCalls) {
  Parameter p{"w", edgeattn::testing::random_tensor({3, 4}, 1), {}};
  Tape tape;
  const Var loss = edgeattn::testing::weighted_sum(tape, elu(tape, tape.parameter(p)), 2);
  tape.backward(loss);
  const Tensor once = p.grad;
  tape.backward(loss);  // same tape again: intermediate grads are reset, parameter grads add
  for (int64_t i = 0; i < once.numel(); ++i) EXPECT_FLOAT_EQ(p.grad.data()[i], 2.f * once.data()[i]);
  p.zero_grad();
  for (float g : p.grad.span()) EXPECT_EQ(g, 0.f);
}

TEST(Tape, ParameterUsedTwiceGetsBothContributions) {
  Parameter p{"w", Tensor({1}, std::vector<float>{2}), {}};
  Tape tape;
  const Var w = tape.parameter(p);
  const Var w_again = tape.parameter(p);
  tape.backward(sum(tape, add(tape, scale(tape, w, 5.f), scale(tape, w_again, 7.f))));
  EXPECT_EQ(p.grad.data()[0], 12.f);
}

// reshape hands its gradient on without a copy; when x's gradient is then written again (by a
// consumer of x recorded before the reshape, whose backward runs after it), the tape copies first:
// the reshape output's gradient keeps its own value. Both ways of adding are covered: add_grad
// (scale) and writing through ctx.grad (counted_scale).
TEST(Tape, AGradientSharedByReshapeIsCopiedBeforeItIsWritten) {
  for (const bool through_grad : {false, true}) {
    Parameter p{"w", Tensor({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}), {}};
    Tape tape;
    int calls = 0;
    const Var x = scale(tape, tape.parameter(p), 1.f);  // not a parameter node: its grad lives on the tape
    const Var other = through_grad ? counted_scale(tape, x, 5.f, &calls) : scale(tape, x, 5.f);
    const Var r = reshape(tape, x, {3, 2});
    const Var loss = add(tape, sum(tape, scale(tape, r, 2.f)), sum(tape, other));
    tape.backward(loss);
    for (float g : tape.grad(r).span()) EXPECT_EQ(g, 2.f) << "through_grad=" << through_grad;
    for (float g : tape.grad(x).span()) EXPECT_EQ(g, 7.f) << "through_grad=" << through_grad;
    for (float g : p.grad.span()) EXPECT_EQ(g, 7.f) << "through_grad=" << through_grad;
  }
}

TEST(Tape, NodesThatNoParameterFeedsGetNoBackwardWork) {
  Parameter p{"w", Tensor({4}, 1.f), {}};
  Tape tape;
  int constant_branch = 0, parameter_branch = 0, unused_branch = 0;
  const Var c = counted_scale(tape, tape.constant(Tensor({4}, 2.f)), 3.f, &constant_branch);
  const Var w = counted_scale(tape, tape.parameter(p), 2.f, &parameter_branch);
  (void)counted_scale(tape, w, 9.f, &unused_branch);  // depends on w, but the loss does not use it
  const Var loss = sum(tape, add(tape, c, w));
  tape.backward(loss);
  EXPECT_EQ(constant_branch, 0);
  EXPECT_EQ(parameter_branch, 1);
  EXPECT_EQ(unused_branch, 0);
  EXPECT_EQ(tape.backward_ops_run(), 3);  // sum, add, counted_scale(w)
  EXPECT_FALSE(tape.requires_grad(c));
  EXPECT_TRUE(tape.grad(c).absent());
  for (float g : p.grad.span()) EXPECT_EQ(g, 2.f);
}

TEST(Tape, LossWithoutParametersIsANoOp) {
  Tape tape;
  const Var loss = sum(tape, tape.constant(Tensor({3}, 1.f)));
  tape.backward(loss);
  EXPECT_EQ(tape.backward_ops_run(), 0);
}

TEST(Tape, BackwardRejectsANonScalarLoss) {
  Parameter p{"w", Tensor({2, 3}), {}};
  Tape tape;
  const Var w = tape.parameter(p);
  expect_throw_naming<ShapeError>([&] { tape.backward(relu(tape, w)); }, {"loss", "[2, 3]", "scalar"});
}

TEST(Tape, RejectsVarsFromAnotherTapeOrAfterClear) {
  Tape a, b;
  const Var x = a.constant(Tensor({2}));
  expect_throw_naming<InvalidArgument>([&] { (void)relu(b, x); }, {"not a variable of this tape"});
  a.clear();
  expect_throw_naming<InvalidArgument>([&] { (void)a.value(x); }, {"not a variable of this tape", "cleared"});
  expect_throw_naming<InvalidArgument>([&] { (void)a.value(Var{}); }, {"not given"});
}

TEST(Tape, ParameterWithGradOfAnotherShapeIsRejected) {
  Parameter p{"att_src", Tensor({2, 4}), Tensor({4, 2})};
  Tape tape;
  expect_throw_naming<ShapeError>([&] { (void)tape.parameter(p); }, {"att_src", "[4, 2]", "[2, 4]"});
}

TEST(Tape, TakeValueMovesAnOwnedValueOutAndCopiesABorrowedOne) {
  Parameter p{"w", Tensor({2}, std::vector<float>{1, 2}), {}};
  const Tensor features({2}, std::vector<float>{4, 5});
  Tape tape;
  const Var w = tape.parameter(p);
  const Var f = tape.constant_ref(features);
  const Var y = add(tape, w, f);
  const float* storage = tape.value(y).data();
  const Tensor taken = tape.take_value(y);
  EXPECT_EQ(taken.data(), storage);  // moved, not copied
  EXPECT_EQ(taken.data()[1], 7.f);
  expect_throw_naming<InvalidArgument>([&] { (void)tape.value(y); }, {"released", "take_value"});
  const Tensor wt = tape.take_value(w);
  const Tensor ft = tape.take_value(f);
  EXPECT_NE(wt.data(), p.value.data());  // the parameter keeps its own
  EXPECT_EQ(p.value.data()[0], 1.f);
  EXPECT_EQ(ft.data()[1], 5.f);
  EXPECT_NE(ft.data(), features.data());
  expect_throw_naming<InvalidArgument>([&] { tape.backward(sum(tape, tape.parameter(p))); },
                                       {"released", "take_value", "clear()"});
  tape.clear();
  const Var again = tape.parameter(p);
  tape.backward(sum(tape, again));  // usable again after clear()
  EXPECT_EQ(p.grad.data()[0], 1.f);
}

TEST(Tape, ValuesStayValidWhileTheTapeGrows) {
  Tape tape;
  const Var x = tape.constant(Tensor({2}, 1.f));
  const Tensor& first = tape.value(x);
  Var y = x;
  for (int k = 0; k < 1000; ++k) y = scale(tape, y, 1.f);
  EXPECT_EQ(&first, &tape.value(x));
  EXPECT_EQ(first.data()[0], 1.f);
}

}  // namespace
}  // namespace edgeattn::autograd

namespace edgeattn::autograd {
namespace {

TEST(Gradcheck, CatchesAWrongGradient) {
  Parameter p{"w", edgeattn::testing::random_tensor({3}, 5), {}};
  // y = 2x with a backward that claims 2.2
  auto wrong = [&](Tape& t) {
    const Var x = t.parameter(p);
    Tensor y(t.value(x));
    for (float& v : y.span()) v *= 2.f;
    const Var out = t.record("wrong", std::move(y), {x}, [x](BackwardContext& ctx) {
      Tensor& dx = ctx.grad(x);
      for (int64_t i = 0; i < dx.numel(); ++i) dx.data()[i] += 2.2f * ctx.grad_out().data()[i];
    });
    return edgeattn::testing::weighted_sum(t, out, 1);
  };
  const auto result = edgeattn::testing::check_gradients({&p}, wrong);
  EXPECT_FALSE(result);
  EXPECT_THAT(result.message(), ::testing::HasSubstr("parameter 'w'"));
}

}  // namespace
}  // namespace edgeattn::autograd
