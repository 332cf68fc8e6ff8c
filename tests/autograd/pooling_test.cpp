// Readouts on the tape: global_pool's three kinds and global_attention_pool, checked against
// direct computation and finite differences, with empty graphs in the batch.
#include "edgeattn/autograd/ops/pooling.hpp"

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

const std::vector<int64_t> kPtr = {0, 4, 4, 7, 9};  // graphs of 4, 0, 3 and 2 nodes

TEST(GlobalPool, GradientsOfSumMeanAndMaxMatchFiniteDifferences) {
  // Values well apart, so no finite-difference step changes which node is the maximum.
  Tensor values({9, 3});
  for (int64_t i = 0; i < values.numel(); ++i)
    values.data()[i] = static_cast<float>((i * 7) % 27) * 0.1f - 1.3f;
  Parameter x{"x", values, {}};
  for (const Pooling kind : {Pooling::sum, Pooling::mean, Pooling::max}) {
    EXPECT_TRUE(check_gradients({&x}, [&](Tape& t) {
      return weighted_sum(t, global_pool(t, t.parameter(x), kPtr, kind), 2);
    })) << to_string(kind);
  }
  Tape tape;
  const Var y = global_pool(tape, tape.constant(values), kPtr, Pooling::mean);
  EXPECT_EQ(tape.value(y).shape(), Shape({4, 3}));
  EXPECT_EQ(tape.value(y).data()[3], 0.f);  // the empty graph
}

TEST(GlobalAttentionPool, IsASoftmaxOfTheGateOverEachGraphTimesItsRows) {
  const Tensor x = random_tensor({9, 3}, 1), gate = random_tensor({9, 1}, 2, -2.f, 2.f);
  Tape tape;
  const Var y = global_attention_pool(tape, tape.constant(x), tape.constant(gate), kPtr);
  const Tensor& out = tape.value(y);
  ASSERT_EQ(out.shape(), Shape({4, 3}));
  for (int64_t g = 0; g + 1 < static_cast<int64_t>(kPtr.size()); ++g) {
    double z = 0;
    for (int64_t v = kPtr[static_cast<size_t>(g)]; v < kPtr[static_cast<size_t>(g) + 1]; ++v)
      z += std::exp(gate.data()[v]);
    for (int64_t f = 0; f < 3; ++f) {
      double want = 0;
      for (int64_t v = kPtr[static_cast<size_t>(g)]; v < kPtr[static_cast<size_t>(g) + 1]; ++v)
        want += std::exp(gate.data()[v]) / z * x(v, f);
      EXPECT_NEAR(out(g, f), want, 1e-5) << "graph " << g << " feature " << f;
    }
  }
}

TEST(GlobalAttentionPool, GradientsForRowsAndGateMatchFiniteDifferences) {
  Parameter x{"x", random_tensor({9, 3}, 3), {}}, gate{"gate", random_tensor({9, 1}, 4), {}};
  EXPECT_TRUE(check_gradients({&x, &gate}, [&](Tape& t) {
    return weighted_sum(t, global_attention_pool(t, t.parameter(x), t.parameter(gate), kPtr), 5);
  }));
}

TEST(GlobalAttentionPool, ShapesAreChecked) {
  Tape tape;
  const Var x = tape.constant(Tensor({9, 3})), bad_gate = tape.constant(Tensor({9, 2}));
  edgeattn::testing::expect_throw_naming<ShapeError>([&] { global_attention_pool(tape, x, bad_gate, kPtr); },
                                                     {"gate", "[9, 2]"});
  edgeattn::testing::expect_throw_naming<InvalidArgument>(
      [&] {
        global_pool(tape, x, std::vector<int64_t>{0, 8}, Pooling::sum);
      },
      {"graph_ptr", "num_nodes = 9"});
}

}  // namespace
}  // namespace edgeattn::autograd
