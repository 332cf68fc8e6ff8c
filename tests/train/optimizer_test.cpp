#include "edgeattn/train/optimizer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "support/expect_error.hpp"

namespace edgeattn::train {
namespace {

using autograd::Parameter;

// (Aggregate initialisation: GCC 12 warns, -Wrestrict, on assigning a short literal to p.name.)
Parameter scalar(float w, float g) { return Parameter{std::string("w"), Tensor({1}, w), Tensor({1}, g)}; }

// With a constant gradient the bias-corrected moments are exactly g and g^2, so every Adam step
// moves the weight by lr * g / (|g| + eps): 1 -> 0.9 -> 0.8.
TEST(Adam, ConstantGradientMovesByTheLearningRateEachStep) {
  Parameter p = scalar(1.f, 1.f);
  Adam opt({&p}, {.lr = 0.1f});
  opt.step();
  EXPECT_NEAR(p.value(0), 0.9f, 1e-6f);
  opt.step();
  EXPECT_NEAR(p.value(0), 0.8f, 1e-6f);
  EXPECT_EQ(opt.steps(), 2);
}

// L2 weight decay joins the gradient: g = 1 + 0.5 * 1 = 1.5, and the first step is still lr.
// Hand-computed second step: w = 0.9, g = 1.45; m = 0.9*0.15 + 0.1*1.45 = 0.28 (m_hat = 0.28/0.19),
// v = 0.999*0.00225 + 0.001*2.1025 = 0.00435025 (v_hat = v / 0.001999).
TEST(Adam, L2WeightDecayIsAddedToTheGradient) {
  Parameter p = scalar(1.f, 1.f);
  Adam opt({&p}, {.lr = 0.1f, .weight_decay = 0.5f});
  opt.step();
  EXPECT_NEAR(p.value(0), 0.9f, 1e-6f);
  opt.step();
  const double m_hat = 0.28 / 0.19, v_hat = 0.00435025 / (1 - 0.999 * 0.999);
  EXPECT_NEAR(p.value(0), 0.9 - 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8), 1e-5);
}

// AdamW shrinks the weight first (1 * (1 - 0.1 * 0.5) = 0.95), then takes the plain Adam step.
TEST(Adam, DecoupledWeightDecayShrinksTheWeightSeparately) {
  Parameter p = scalar(1.f, 1.f);
  Adam opt = make_adamw({&p}, 0.1f, 0.5f);
  opt.step();
  EXPECT_NEAR(p.value(0), 0.85f, 1e-6f);
}

TEST(Adam, MinimisesAQuadratic) {
  Parameter p{std::string("x"), Tensor({3}, std::vector<float>{3.f, -2.f, 5.f}), Tensor({3})};
  Adam opt({&p}, {.lr = 0.05f});
  for (int step = 0; step < 2000; ++step) {
    opt.zero_grad();
    for (int i = 0; i < 3; ++i) p.grad(i) = 2.f * (p.value(i) - static_cast<float>(i));  // min at (0, 1, 2)
    opt.step();
  }
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p.value(i), static_cast<float>(i), 1e-2f);
}

TEST(Adam, ZeroGradClearsTheGradients) {
  Parameter p = scalar(1.f, 3.f);
  Adam opt({&p}, {});
  opt.zero_grad();
  EXPECT_EQ(p.grad(0), 0.f);
}

TEST(Adam, RejectsInvalidHyperParameters) {
  Parameter p = scalar(1.f, 1.f);
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { Adam({&p}, {.beta1 = 1.f}); },
                                                          {"beta1", "[0, 1)"});
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { Adam({&p}, {.lr = -1.f}); }, {"lr", ">= 0"});
}

}  // namespace
}  // namespace edgeattn::train
