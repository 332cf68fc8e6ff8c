#include "edgeattn/core/rng.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace edgeattn {
namespace {

// The integer threshold keeps exactly the 16-bit values the float comparison
// bits * 2^-16 >= p keeps, for every value and for p on and between the 2^-16 grid points.
TEST(DropoutThreshold, KeepsExactlyWhatTheFloatComparisonKeeps) {
  std::vector<float> ps = {0.f,
                           -0.5f,
                           1e-30f,
                           1.f / 65536.f,
                           0.1f,
                           0.2f,
                           0.5f,
                           0.6f,
                           0.999f,
                           65535.f / 65536.f,
                           std::nextafter(1.f, 0.f)};
  for (uint32_t k : {1u, 2u, 13107u, 32768u, 65534u}) {  // grid points and their neighbours
    const float grid = static_cast<float>(k) / 65536.f;
    ps.push_back(grid);
    ps.push_back(std::nextafter(grid, 0.f));
    ps.push_back(std::nextafter(grid, 1.f));
  }
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  for (int t = 0; t < 50; ++t) ps.push_back(uniform(rng));
  for (const float p : ps) {
    const uint32_t threshold = dropout_threshold16(p);
    for (uint32_t bits = 0; bits < 65536; ++bits)
      ASSERT_EQ(bits >= threshold, static_cast<float>(bits) * (1.0f / 65536.0f) >= p)
          << "p = " << p << ", bits = " << bits << ", threshold = " << threshold;
  }
}

TEST(DropoutThreshold, PerHeadFactorsAgreeWithDropoutKeep) {
  for (const float p : {0.f, 0.2f, 0.6f})
    for (int64_t heads : {1, 3, 8})
      for (int64_t dst = 0; dst < 20; ++dst)
        for (int64_t src = 0; src < 20; ++src) {
          float factor[8];
          dropout_keep_heads(42, dst, src, heads, p, 2.5f, factor);
          for (int64_t h = 0; h < heads; ++h)
            ASSERT_EQ(factor[h], dropout_keep(42, dst, src, static_cast<int32_t>(h), p) ? 2.5f : 0.f)
                << "p " << p << " (" << dst << ", " << src << ") head " << h;
        }
}

// Node ids across the 32-bit range for the run tests below: 37 spread ones, then 0 and INT32_MAX.
std::vector<int32_t> ids_across_int32() {
  std::vector<int32_t> ids;
  for (int64_t k = 0; k < 37; ++k) ids.push_back(static_cast<int32_t>((k * 2654435761ULL) % 2147483647ULL));
  ids.push_back(0);
  ids.push_back(2147483647);
  return ids;
}

// The single-head kernels' runs of edges (vectorised over the edges) make dropout_keep's
// decisions: one row's edges (dropout_keep_row, the row's mix hoisted) and one column's
// (dropout_keep_col), for ids across the 32-bit range, runs of every length around a vector's
// width, and nothing written past the run.
TEST(DropoutThreshold, RunsOfEdgesAgreeWithDropoutKeep) {
  const std::vector<int32_t> ids = ids_across_int32();
  for (const float p : {0.f, 0.2f, 0.6f})
    for (const int64_t node : {int64_t{0}, int64_t{17}, int64_t{2147483646}, int64_t{1} << 40})
      for (const bool column : {false, true})
        for (int64_t n = 0; n <= static_cast<int64_t>(ids.size()); n += 3) {
          std::vector<float> factor(static_cast<size_t>(n) + 1, -1.f);
          if (column)
            dropout_keep_col(42, ids.data(), n, node, dropout_threshold16(p), 2.5f, factor.data());
          else
            dropout_keep_row(edge_row_key(42, node), ids.data(), n, dropout_threshold16(p), 2.5f,
                             factor.data());
          for (int64_t k = 0; k < n; ++k) {
            const int64_t other = ids[static_cast<size_t>(k)];
            const bool keep =
                column ? dropout_keep(42, other, node, 0, p) : dropout_keep(42, node, other, 0, p);
            ASSERT_EQ(factor[static_cast<size_t>(k)], keep ? 2.5f : 0.f)
                << "p " << p << (column ? " src " : " dst ") << node << " edge " << k << " of " << n;
          }
          ASSERT_EQ(factor[static_cast<size_t>(n)], -1.f) << "wrote past the run";
        }
}

}  // namespace
}  // namespace edgeattn
