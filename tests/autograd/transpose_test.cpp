// The blocked transpose the autograd ops share (lib/autograd/elementwise.hpp: transpose_into, with
// kernels::transpose_8x8 for whole 8 x 8 tiles) against the plain double loop: every shape around
// the tile edges, plain and accumulating, on 1 and 2 threads, bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/elementwise.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn::autograd {
namespace {

std::vector<float> pattern(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>(i % 97) - 0.37f * i;
  return v;
}

TEST(TransposeInto, MatchesTheScalarLoopForEveryShapeAroundTheTiles) {
  std::vector<int64_t> extents;
  for (int64_t n = 1; n <= 18; ++n) extents.push_back(n);
  for (int64_t n : {23, 31, 32, 33, 40, 64, 65, 100}) extents.push_back(n);
  for (int threads : {1, 2}) {
    const ThreadLimit limit(threads);
    for (int64_t rows : extents)
      for (int64_t cols : extents)
        for (bool accumulate : {false, true}) {
          SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) +
                       (accumulate ? " accumulate" : "") + ", threads " + std::to_string(threads));
          const std::vector<float> src = pattern(rows * cols, 0.5f);
          std::vector<float> got = pattern(rows * cols, -1.25f), want = got;
          detail::transpose_into(src.data(), rows, cols, got.data(), accumulate);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              float& w = want[static_cast<size_t>(c * rows + r)];
              const float x = src[static_cast<size_t>(r * cols + c)];
              w = accumulate ? w + x : x;
            }
          ASSERT_EQ(got, want);
        }
  }
}

TEST(TransposeInto, TransposesALayerWeightBothWays) {
  // Cora's first layer: the weight [64, 1433] into [1433, 64] (the sparse linear's forward), and
  // its gradient back, accumulated (its backward).
  const int64_t out = 64, in = 1433;
  const std::vector<float> w = pattern(out * in, 0.25f);
  std::vector<float> wt(static_cast<size_t>(in * out));
  detail::transpose_into(w.data(), out, in, wt.data(), false);
  std::vector<float> back = pattern(out * in, 2.f), want = back;
  detail::transpose_into(wt.data(), in, out, back.data(), true);
  for (size_t k = 0; k < want.size(); ++k) want[k] += w[k];
  EXPECT_EQ(back, want);
  EXPECT_EQ(wt[static_cast<size_t>(5 * out + 3)], w[static_cast<size_t>(3 * in + 5)]);
}

}  // namespace
}  // namespace edgeattn::autograd
