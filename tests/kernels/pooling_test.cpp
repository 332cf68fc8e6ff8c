// Segment pooling: hand-computed values, the parallel kernel against the serial reference on
// many graphs of random sizes (empty ones included), bit for bit, and the errors.
#include "edgeattn/kernels/pooling.hpp"

#include <gtest/gtest.h>

#include <random>

#include "kernels/reference/reference_pooling.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::kernels {
namespace {

using edgeattn::testing::expect_throw_naming;

// Graphs {0, 1, 2}, {} and {3, 4}; two features.
const std::vector<int64_t> kPtr = {0, 3, 3, 5};
const Tensor kX({5, 2}, std::vector<float>{1, -1, 4, 2, 1, 5, -2, 0, 3, -3});

TEST(Pooling, SumMeanAndMaxOfEachGraphWithEmptyGraphsGivingZero) {
  const Tensor sum = segment_pool(kX, kPtr, Pooling::sum).out;
  EXPECT_EQ(std::vector<float>(sum.span().begin(), sum.span().end()),
            (std::vector<float>{6, 6, 0, 0, 1, -3}));
  const Tensor mean = segment_pool(kX, kPtr, Pooling::mean).out;
  EXPECT_EQ(std::vector<float>(mean.span().begin(), mean.span().end()),
            (std::vector<float>{2, 2, 0, 0, 0.5f, -1.5f}));
  const PoolResult max = segment_pool(kX, kPtr, Pooling::max);
  EXPECT_EQ(std::vector<float>(max.out.span().begin(), max.out.span().end()),
            (std::vector<float>{4, 5, 0, 0, 3, 0}));
  EXPECT_EQ(max.argmax, (std::vector<int64_t>{1, 2, -1, -1, 4, 3}));
  // Backward: sum copies, mean divides by the size, max routes to the chosen node.
  const Tensor dy({3, 2}, std::vector<float>{1, 2, 3, 4, 5, 6});
  const Tensor dmean = segment_pool_backward(kPtr, Pooling::mean, dy, {}, 5);
  EXPECT_EQ(std::vector<float>(dmean.span().begin(), dmean.span().end()),
            (std::vector<float>{1.f / 3, 2.f / 3, 1.f / 3, 2.f / 3, 1.f / 3, 2.f / 3, 2.5f, 3, 2.5f, 3}));
  const Tensor dmax = segment_pool_backward(kPtr, Pooling::max, dy, max.argmax, 5);
  EXPECT_EQ(std::vector<float>(dmax.span().begin(), dmax.span().end()),
            (std::vector<float>{0, 0, 1, 0, 0, 2, 0, 6, 5, 0}));
}

TEST(Pooling, TiesInMaxGoToTheFirstNode) {
  const Tensor x({3, 1}, std::vector<float>{2, 2, 1});
  EXPECT_EQ(segment_pool(x, std::vector<int64_t>{0, 3}, Pooling::max).argmax, (std::vector<int64_t>{0}));
}

TEST(Pooling, TheParallelKernelEqualsTheReferenceBitForBit) {
  std::mt19937 rng(5);
  std::vector<int64_t> ptr = {0};
  for (int g = 0; g < 3000; ++g)
    ptr.push_back(ptr.back() + static_cast<int64_t>(rng() % 7 == 0 ? 0 : rng() % 40));
  const int64_t n = ptr.back();
  const Tensor x = edgeattn::testing::random_tensor({n, 9}, 3);
  const Tensor dy = edgeattn::testing::random_tensor({static_cast<int64_t>(ptr.size()) - 1, 9}, 4);
  for (const Pooling kind : {Pooling::sum, Pooling::mean, Pooling::max}) {
    const PoolResult fast = segment_pool(x, ptr, kind), slow = reference::segment_pool(x, ptr, kind);
    EXPECT_EQ(max_abs_diff(fast.out, slow.out), 0.f) << to_string(kind);
    EXPECT_EQ(fast.argmax, slow.argmax) << to_string(kind);
    EXPECT_EQ(max_abs_diff(segment_pool_backward(ptr, kind, dy, fast.argmax, n),
                           reference::segment_pool_backward(ptr, kind, dy, slow.argmax, n)),
              0.f)
        << to_string(kind);
  }
}

TEST(Pooling, BadOffsetsAndShapesAreNamed) {
  expect_throw_naming<InvalidArgument>(
      [] {
        segment_pool(kX, std::vector<int64_t>{0, 3, 4}, Pooling::sum);
      },
      {"graph_ptr", "to 4", "num_nodes = 5"});
  expect_throw_naming<InvalidArgument>(
      [] {
        segment_pool(kX, std::vector<int64_t>{0, 3, 2, 5}, Pooling::sum);
      },
      {"graph_ptr[2] = 2", "non-decreasing"});
  expect_throw_naming<ShapeError>([] { segment_pool(kX, std::vector<int64_t>{}, Pooling::sum); },
                                  {"graph_ptr is empty"});
  const Tensor dy({2, 2});
  expect_throw_naming<ShapeError>([&] { segment_pool_backward(kPtr, Pooling::sum, dy, {}, 5); },
                                  {"grad_out", "[2, 2]"});
  expect_throw_naming<ShapeError>(
      [&] {
        segment_pool_backward(kPtr, Pooling::max, Tensor({3, 2}), {}, 5);
      },
      {"argmax", "expected 6"});
  expect_throw_naming<InvalidArgument>([] { parse_pooling("median"); }, {"'median'", "sum, mean, max"});
  EXPECT_EQ(parse_pooling("add"), Pooling::sum);
}

}  // namespace
}  // namespace edgeattn::kernels
