// layer_norm: hand-computed values, gradient checks with and without the affine parameters.
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
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;

TEST(LayerNorm, NormalisesEachRowThenAppliesGammaAndBeta) {
  Tape tape;
  // row [1, 2, 3, 6]: mean 3, var (4 + 1 + 0 + 9) / 4 = 3.5
  const Var y = layer_norm(tape, tape.constant(Tensor({1, 4}, std::vector<float>{1, 2, 3, 6})),
                           tape.constant(Tensor({4}, 2.f)), tape.constant(Tensor({4}, 1.f)), 0.f + 1e-6f);
  const float rstd = 1.f / std::sqrt(3.5f + 1e-6f);
  const std::vector<float> want = {1 - 4 * rstd, 1 - 2 * rstd, 1.f, 1 + 6 * rstd};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(tape.value(y).data()[i], want[static_cast<size_t>(i)], 1e-5f);
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  Parameter x{"x", random_tensor({5, 6}, 1, -2.f, 2.f), {}},
      g{"gamma", random_tensor({6}, 2, 0.5f, 1.5f), {}}, b{"beta", random_tensor({6}, 3), {}};
  EXPECT_TRUE(check_gradients({&x, &g, &b}, [&](Tape& t) {
    return weighted_sum(t, layer_norm(t, t.parameter(x), t.parameter(g), t.parameter(b)), 4);
  }));
  EXPECT_TRUE(check_gradients(
      {&x}, [&](Tape& t) { return weighted_sum(t, layer_norm(t, t.parameter(x), {}, {}), 5); }));
}

TEST(LayerNorm, RejectsMismatchedAffineParameters) {
  Tape tape;
  edgeattn::testing::expect_throw_naming<ShapeError>(
      [&] {
        (void)layer_norm(tape, tape.constant(Tensor({2, 4})), tape.constant(Tensor({3})), {});
      },
      {"layer_norm: gamma", "[3]", "[4]"});
}

}  // namespace
}  // namespace edgeattn::autograd
