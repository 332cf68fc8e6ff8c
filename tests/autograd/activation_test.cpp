// relu, leaky_relu, elu, gelu, sigmoid: hand-computed values (including PyTorch's values for GELU) and
// gradient checks on inputs away from the kink at 0.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::autograd {
namespace {

using edgeattn::testing::check_gradients;
using edgeattn::testing::weighted_sum;

const std::vector<float> kInputs = {-2.f, -0.5f, 0.f, 0.5f, 3.f};

std::vector<float> apply(Var (*op)(Tape&, Var)) {
  Tape tape;
  const Var y = op(tape, tape.constant(Tensor({5}, kInputs)));
  return {tape.value(y).span().begin(), tape.value(y).span().end()};
}

// Values away from the kink: |x| >= 0.2, mixed signs.
Tensor smooth_input(uint64_t seed) {
  Tensor x = edgeattn::testing::random_tensor({4, 6}, seed, -2.f, 2.f);
  for (float& v : x.span())
    if (std::fabs(v) < 0.2f) v = v < 0 ? v - 0.2f : v + 0.2f;
  return x;
}

TEST(Activation, ReluAndLeakyReluMatchHandValues) {
  EXPECT_EQ(apply(relu), (std::vector<float>{0, 0, 0, 0.5f, 3}));
  Tape tape;
  const Var y = leaky_relu(tape, tape.constant(Tensor({5}, kInputs)), 0.2f);
  const auto& v = tape.value(y);
  EXPECT_FLOAT_EQ(v.data()[0], -0.4f);
  EXPECT_FLOAT_EQ(v.data()[1], -0.1f);
  EXPECT_FLOAT_EQ(v.data()[4], 3.f);
}

TEST(Activation, EluAndGeluMatchReferenceValues) {
  const auto e = apply([](Tape& t, Var x) { return elu(t, x); });
  EXPECT_FLOAT_EQ(e[0], std::expm1(-2.f));
  EXPECT_FLOAT_EQ(e[3], 0.5f);
  // torch.nn.functional.gelu(torch.tensor([-2., -0.5, 0., 0.5, 3.]))
  const auto g = apply(gelu);
  const std::vector<float> torch = {-0.0455003f, -0.1542687f, 0.f, 0.3457312f, 2.9959502f};
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], torch[i], 1e-6f) << i;
}

TEST(Activation, EluRejectsANonPositiveAlpha) {
  Tape tape;
  const Var x = tape.constant(Tensor({2}));
  for (const float alpha : {0.f, -1.f})
    testing::expect_throw_naming<InvalidArgument>([&] { (void)elu(tape, x, alpha); },
                                                  {"elu", "alpha", "> 0"});
}

TEST(Activation, LongInputsTakeTheVectorPathWithTheSameValues) {
  // 100k elements: several parallel spans and vector remainders; every element equals the
  // scalar formula (fast_exp's error is ~1e-7 relative).
  const int64_t n = 100003;
  Tensor in({n});
  for (int64_t i = 0; i < n; ++i) in.data()[i] = -6.f + 12.f * static_cast<float>(i) / static_cast<float>(n);
  Tape tape;
  const Tensor& y = tape.value(elu(tape, tape.constant(in), 0.7f));
  for (int64_t i = 0; i < n; ++i) {
    const float v = in.data()[i];
    const float want = v > 0.f ? v : 0.7f * std::expm1(v);
    ASSERT_NEAR(y.data()[i], want, 2e-7f) << i;
  }
}

TEST(Activation, GradientsMatchFiniteDifferences) {
  Parameter x{"x", smooth_input(1), {}};
  auto check = [&](auto op) {
    return check_gradients({&x}, [&](Tape& t) { return weighted_sum(t, op(t, t.parameter(x)), 2); });
  };
  EXPECT_TRUE(check([](Tape& t, Var v) { return relu(t, v); })) << "relu";
  EXPECT_TRUE(check([](Tape& t, Var v) { return leaky_relu(t, v, 0.2f); })) << "leaky_relu";
  EXPECT_TRUE(check([](Tape& t, Var v) { return elu(t, v, 1.3f); })) << "elu";
  EXPECT_TRUE(check([](Tape& t, Var v) { return gelu(t, v); })) << "gelu";
}

TEST(Activation, KinkTakesTheNegativeBranchDerivative) {
  Parameter x{"x", Tensor({1}, std::vector<float>{0.f}), {}};
  Tape tape;
  x.zero_grad();
  tape.backward(sum(tape, relu(tape, tape.parameter(x))));
  EXPECT_EQ(x.grad.data()[0], 0.f);
  x.zero_grad();
  tape.clear();
  tape.backward(sum(tape, leaky_relu(tape, tape.parameter(x), 0.1f)));
  EXPECT_FLOAT_EQ(x.grad.data()[0], 0.1f);
  x.zero_grad();
  tape.clear();
  tape.backward(sum(tape, elu(tape, tape.parameter(x), 1.f)));
  EXPECT_FLOAT_EQ(x.grad.data()[0], 1.f);  // alpha * e^0
}

TEST(Activation, SigmoidMatchesHandValuesWithoutOverflow) {
  Tape tape;
  const Var y = sigmoid(tape, tape.constant(Tensor({5}, std::vector<float>{-100.f, -1.f, 0.f, 2.f, 100.f})));
  const auto& v = tape.value(y);
  EXPECT_FLOAT_EQ(v.data()[0], std::exp(-100.f) / (1.f + std::exp(-100.f)));
  EXPECT_FLOAT_EQ(v.data()[1], 0.26894142f);
  EXPECT_EQ(v.data()[2], 0.5f);
  EXPECT_FLOAT_EQ(v.data()[3], 0.88079708f);
  EXPECT_EQ(v.data()[4], 1.f);
  Parameter x{"x", smooth_input(3), {}};
  EXPECT_TRUE(check_gradients({&x}, [&](Tape& t) { return weighted_sum(t, sigmoid(t, t.parameter(x)), 4); }));
}

}  // namespace
}  // namespace edgeattn::autograd
