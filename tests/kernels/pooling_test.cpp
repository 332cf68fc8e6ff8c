// Segment pooling: hand-computed values, the parallel kernel against the serial reference on
// many graphs of random sizes (empty ones included), bit for bit, and the errors.
#include "edgeattn/kernels/pooling.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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
  const Tensor dmax = segment_pool_backward(kPtr, Pooling::max, dy, max.argmax, 5, kX);
  EXPECT_EQ(std::vector<float>(dmax.span().begin(), dmax.span().end()),
            (std::vector<float>{0, 0, 1, 0, 0, 2, 0, 6, 5, 0}));
}

// As PyG's global_max_pool (torch's scatter 'amax'): tied maxima share the gradient evenly.
TEST(Pooling, TiedMaximaShareTheGradientEvenly) {
  const Tensor x({4, 2}, std::vector<float>{2, 1, 2, 1, 1, 1, 2, 0});  // column 0: 3 ties; column 1: 3
  const std::vector<int64_t> ptr{0, 4};
  const PoolResult r = segment_pool(x, ptr, Pooling::max);
  EXPECT_EQ(r.argmax, (std::vector<int64_t>{0, 0}));
  const Tensor dy({1, 2}, std::vector<float>{6, 3});
  for (const bool reference_path : {false, true}) {
    const Tensor dx = reference_path ? reference::segment_pool_backward(ptr, Pooling::max, dy, r.argmax, 4, x)
                                     : segment_pool_backward(ptr, Pooling::max, dy, r.argmax, 4, x);
    EXPECT_EQ(std::vector<float>(dx.span().begin(), dx.span().end()),
              (std::vector<float>{2, 1, 2, 1, 0, 1, 2, 0}))
        << (reference_path ? "reference" : "parallel");
    // An infinite gradient reaches the tied nodes only: the others get 0, not 0 x inf.
    const float inf = std::numeric_limits<float>::infinity();
    const Tensor dy_inf({1, 2}, std::vector<float>{inf, -3});
    const Tensor dx_inf = reference_path
                              ? reference::segment_pool_backward(ptr, Pooling::max, dy_inf, r.argmax, 4, x)
                              : segment_pool_backward(ptr, Pooling::max, dy_inf, r.argmax, 4, x);
    EXPECT_EQ(std::vector<float>(dx_inf.span().begin(), dx_inf.span().end()),
              (std::vector<float>{inf, -1, inf, -1, 0, -1, inf, 0}))
        << (reference_path ? "reference" : "parallel");
  }
}

// A NaN is its column's maximum (the first one, as torch's amax propagates it) and takes the
// gradient; a column without NaN is unaffected.
TEST(Pooling, ANaNIsTheMaximumAndTakesTheGradient) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x({4, 2}, std::vector<float>{1, nan, nan, 2, 5, 3, nan, 1});
  const std::vector<int64_t> ptr{0, 4};
  for (const bool reference_path : {false, true}) {
    SCOPED_TRACE(reference_path ? "reference" : "parallel");
    const PoolResult r =
        reference_path ? reference::segment_pool(x, ptr, Pooling::max) : segment_pool(x, ptr, Pooling::max);
    EXPECT_TRUE(std::isnan(r.out(0, 0)));
    EXPECT_TRUE(std::isnan(r.out(0, 1)));
    EXPECT_EQ(r.argmax, (std::vector<int64_t>{1, 0}));
    const Tensor dy({1, 2}, std::vector<float>{4, 7});
    const Tensor dx = reference_path ? reference::segment_pool_backward(ptr, Pooling::max, dy, r.argmax, 4, x)
                                     : segment_pool_backward(ptr, Pooling::max, dy, r.argmax, 4, x);
    EXPECT_EQ(std::vector<float>(dx.span().begin(), dx.span().end()),
              (std::vector<float>{0, 7, 4, 0, 0, 0, 0, 0}));
  }
}

TEST(Pooling, TheParallelKernelEqualsTheReferenceBitForBit) {
  std::mt19937 rng(5);
  std::vector<int64_t> ptr = {0};
  for (int g = 0; g < 3000; ++g)
    ptr.push_back(ptr.back() + static_cast<int64_t>(rng() % 7 == 0 ? 0 : rng() % 40));
  const int64_t n = ptr.back();
  // Columns 0-2 on a grid of 5 values, so maxima tie often; the others continuous.
  Tensor x = edgeattn::testing::random_tensor({n, 9}, 3);
  for (int64_t v = 0; v < n; ++v)
    for (int64_t f = 0; f < 3; ++f) x(v, f) = std::round(x(v, f) * 2.f);
  const Tensor dy = edgeattn::testing::random_tensor({static_cast<int64_t>(ptr.size()) - 1, 9}, 4);
  for (const Pooling kind : {Pooling::sum, Pooling::mean, Pooling::max}) {
    const PoolResult fast = segment_pool(x, ptr, kind), slow = reference::segment_pool(x, ptr, kind);
    EXPECT_EQ(max_abs_diff(fast.out, slow.out), 0.f) << to_string(kind);
    EXPECT_EQ(fast.argmax, slow.argmax) << to_string(kind);
    EXPECT_EQ(max_abs_diff(segment_pool_backward(ptr, kind, dy, fast.argmax, n, x),
                           reference::segment_pool_backward(ptr, kind, dy, slow.argmax, n, x)),
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
        segment_pool_backward(kPtr, Pooling::max, Tensor({3, 2}), {}, 5, kX);
      },
      {"argmax", "expected 6"});
  const std::vector<int64_t> argmax(6, 0);
  expect_throw_naming<ShapeError>(
      [&] {
        segment_pool_backward(kPtr, Pooling::max, Tensor({3, 2}), argmax, 5);
      },
      {"x (max pooling's input", "[5, 2]"});
  std::vector<int64_t> bad_argmax = segment_pool(kX, kPtr, Pooling::max).argmax;
  bad_argmax[4] = 2;  // graph 2 is nodes 3 and 4
  expect_throw_naming<InvalidArgument>(
      [&] {
        segment_pool_backward(kPtr, Pooling::max, Tensor({3, 2}), bad_argmax, 5, kX);
      },
      {"argmax[4] (graph 2, feature 0) is 2", "a node in [3, 5)"});
  bad_argmax[4] = 3, bad_argmax[2] = 0;  // graph 1 is empty
  expect_throw_naming<InvalidArgument>(
      [&] {
        segment_pool_backward(kPtr, Pooling::max, Tensor({3, 2}), bad_argmax, 5, kX);
      },
      {"argmax[2] (graph 1, feature 0) is 0", "-1 (the graph is empty)"});
  expect_throw_naming<InvalidArgument>([] { parse_pooling("median"); }, {"'median'", "sum, mean, max"});
  EXPECT_EQ(parse_pooling("add"), Pooling::sum);
}

}  // namespace
}  // namespace edgeattn::kernels
