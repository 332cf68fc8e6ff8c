// The kernels' branch-free math (lib/kernels/vector_math.hpp) against libm, the lazy-shift
// softmax helpers against their definition, the streaming row copy, and GAT's per-node score
// terms (lib/kernels/head_scores.hpp) against their summation contract.
#include "kernels/vector_math.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <random>
#include <utility>
#include <vector>

#include "kernels/head_scores.hpp"

namespace edgeattn::kernels {
namespace {

// Relative error of f against the double-precision log over [lo, hi], sampled geometrically.
double worst_log_error(float lo, float hi, int samples) {
  double worst = 0.0;
  for (int k = 0; k <= samples; ++k) {
    const float x =
        static_cast<float>(lo * std::pow(static_cast<double>(hi) / lo, static_cast<double>(k) / samples));
    const double want = std::log(static_cast<double>(x));
    const double err = std::fabs(fast_log(x) - want);
    worst = std::max(worst, want == 0.0 ? err : err / std::fabs(want));
  }
  return worst;
}

TEST(VectorMath, FastLogMatchesLibmOverEveryNormalMagnitude) {
  EXPECT_LT(worst_log_error(FLT_MIN, FLT_MAX, 200000), 3e-7);
  // Near 1 the log itself is small: check the absolute error (relative error ~1e-7 of ~1).
  for (int k = -1000; k <= 1000; ++k) {
    const float x = 1.f + static_cast<float>(k) * 1e-4f;
    EXPECT_NEAR(fast_log(x), std::log(static_cast<double>(x)), 2e-7) << x;
  }
  // The reduction's switch point sqrt(1/2) and exact powers of two.
  for (float x : {0.70710677f, 0.70710683f, 1.4142135f, 1.4142137f, 0.5f, 2.f, 1024.f, 1.f / 1024.f})
    EXPECT_NEAR(fast_log(x), std::log(static_cast<double>(x)), 2e-7 * std::fabs(std::log(x)) + 1e-7) << x;
  EXPECT_EQ(fast_log(1.f), 0.f);
}

TEST(VectorMath, FastExpMatchesLibmAndUnderflowsToZero) {
  for (int k = -870; k <= 880; ++k) {
    const float x = static_cast<float>(k) * 0.1f;
    const double want = std::exp(static_cast<double>(x));
    EXPECT_NEAR(fast_exp(x) / want, 1.0, 3e-7) << x;
  }
  EXPECT_EQ(fast_exp(0.f), 1.f);
  EXPECT_EQ(fast_exp(-100.f), 0.f);
  EXPECT_EQ(fast_exp(-std::numeric_limits<float>::infinity()), 0.f);
}

// One row through exceeds_shift / raise_shift / exp_shifted_sum, as the forward kernel runs it,
// against the softmax normaliser computed directly in double.
TEST(VectorMath, LazyShiftGivesTheLogSumExpOfAnyScoreSequence) {
  constexpr int64_t kLanes = kHeadLanes, kDv = 3;
  const std::vector<std::vector<float>> rows = {
      {0.f, 0.5f, 1.f, 1.5f, 2.f, 2.5f, 3.f, 3.5f, 4.f, 4.5f, 5.f, 5.5f, 6.f, 6.5f, 7.f, 7.5f, 8.f, 8.5f,
       9.f},
      {0.f, 7.99f, 8.01f, 16.f, 100.f, -50.f, 100.f},  // at, just under and just over the margin
      {1e4f, -1e4f, 1e4f - 1.f},                       // extreme logits
      {-30.f, -20.f, -40.f, 60.f, 59.f},               // a late jump after small scores
  };
  for (const auto& scores : rows) {
    float s[kLanes], w[kLanes], c[kLanes], m[kLanes], l[kLanes], acc[kLanes * kDv] = {};
    std::fill_n(m, kLanes, -FLT_MAX);
    std::fill_n(l, kLanes, 0.f);
    double mx = -INFINITY;
    for (float x : scores) mx = std::max(mx, static_cast<double>(x));
    double sum = 0.0, weighted = 0.0;
    for (size_t e = 0; e < scores.size(); ++e) {
      const float value = static_cast<float>(e % 5) - 2.f;
      std::fill_n(s, kLanes, scores[e]);
      if (exceeds_shift(kLanes, s, m)) raise_shift(kLanes, kLanes, kDv, s, m, l, c, acc);
      exp_shifted_sum(kLanes, s, m, w, l);
      EXPECT_LE(w[0], std::exp(kRescaleMargin) * (1 + 1e-6f));  // weights stay bounded
      for (int64_t h = 0; h < kLanes; ++h)
        for (int64_t d = 0; d < kDv; ++d) acc[h * kDv + d] += w[h] * value;
      sum += std::exp(scores[e] - mx);
      weighted += std::exp(scores[e] - mx) * value;
    }
    const double lse = mx + std::log(sum);
    for (int64_t h = 0; h < kLanes; ++h) {
      EXPECT_NEAR(m[h] + std::log(l[h]), lse, 2e-6 * (1 + std::fabs(lse)));
      EXPECT_NEAR(acc[h * kDv] / l[h], weighted / sum, 2e-6 * (1 + std::fabs(weighted / sum)));
    }
  }
}

// The eight per-head dots of two 8 x 8 rows give dot's bits, including signed zeros (dot ends
// with "+ 0", so an all-negative-zero product sum is +0) and cancellations where the summation
// order decides the rounding.
TEST(VectorMath, DotEightByEightGivesTheBitsOfEightDots) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> a(64), b(64);
  for (int trial = 0; trial < 2000; ++trial) {
    for (int k = 0; k < 64; ++k) {
      a[k] = u(rng) * (k % 3 == 0 ? 1e4f : 1.f);  // mixed magnitudes: order-sensitive rounding
      b[k] = u(rng);
    }
    if (trial == 0)
      for (int k = 0; k < 8; ++k) a[k] = -0.f, b[k] = 1.f;  // head 0: -0 products
    float got[8];
    dot_8x8(a.data(), b.data(), got);
    for (int h = 0; h < 8; ++h) {
      const float want = dot(a.data() + 8 * h, b.data() + 8 * h, 8);
      ASSERT_EQ(std::bit_cast<uint32_t>(got[h]), std::bit_cast<uint32_t>(want))
          << "trial " << trial << " head " << h;
    }
  }
}

// The 8-head keep factors in a register are dropout_keep_heads_row's, bit for bit, at every
// dropout rate's threshold including the edges (p = 0: all kept; thresholds at a draw's value).
TEST(VectorMath, DropoutKeepLanesGivesTheFactorsOfTheScalarDraws) {
  std::mt19937_64 rng(11);
  for (const float p : {0.f, 1e-5f, 0.2f, 0.5f, 0.6f, 0.99f}) {
    const uint32_t threshold = dropout_threshold16(p);
    const float scale = 1.f / (1.f - p);
    int kept = 0;
    for (int trial = 0; trial < 4000; ++trial) {
      const uint64_t row = edge_row_key(rng(), static_cast<int64_t>(rng() % 1000000));
      const int64_t src = static_cast<int64_t>(rng() % 100000000);
      float want[8];
      dropout_keep_heads_row(row, src, 8, threshold, scale, want);
      float got[8];
      store_lanes8(got, dropout_keep_lanes8(row, src, threshold, scale));
      for (int h = 0; h < 8; ++h) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[h]), std::bit_cast<uint32_t>(want[h]))
            << "p " << p << " trial " << trial << " head " << h;
        kept += got[h] != 0.f;
      }
    }
    if (p == 0.f) EXPECT_EQ(kept, 8 * 4000);
    if (p == 0.5f) EXPECT_NEAR(kept, 4 * 4000, 400);  // both outcomes occur, about equally
  }
}

// One head of at most 8 features (GAT's output layer): the register-held sums over a run of rows
// give the bits of the edge-by-edge sum with one FMA a term (where the target has FMA; else a
// product and a sum), for every width up to 8 and runs of 0 to 33 rows packed at that width (each
// row's neighbour starts right after it), and write nothing past acc[dv).
TEST(VectorMath, ShortRowSumsGiveTheBitsOfOneFmaPerTerm) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t dv = 1; dv <= 8; ++dv)
    for (int64_t n : {0, 1, 2, 5, 32, 33}) {
      std::vector<float> rows(static_cast<size_t>(n * dv + 8)), w(static_cast<size_t>(n));
      for (float& x : rows) x = u(rng) * 1e3f;  // magnitudes where an extra rounding shows
      for (float& x : w) x = u(rng);
      std::vector<float> got(9, 123.f), want(9, 123.f);
      for (int64_t d = 0; d < dv; ++d) got[size_t(d)] = want[size_t(d)] = u(rng);
      std::vector<int64_t> order(static_cast<size_t>(n));  // rows out of order, as gathered
      for (int64_t k = 0; k < n; ++k) order[size_t(k)] = (k * 7 + 3) % std::max<int64_t>(n, 1);
      accumulate_short_rows(
          got.data(), dv, n, [&](int64_t k) { return w[size_t(k)]; },
          [&](int64_t k) { return rows.data() + order[size_t(k)] * dv; });
      for (int64_t k = 0; k < n; ++k)
        for (int64_t d = 0; d < dv; ++d) {
          const float x = rows[size_t(order[size_t(k)] * dv + d)];
#if defined(__FMA__)
          want[size_t(d)] = std::fma(w[size_t(k)], x, want[size_t(d)]);
#else
          want[size_t(d)] += w[size_t(k)] * x;
#endif
        }
      for (int64_t d = 0; d < 9; ++d)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[size_t(d)]), std::bit_cast<uint32_t>(want[size_t(d)]))
            << "dv " << dv << " n " << n << " element " << d;
    }
}

#if defined(__AVX__)
// The paired sums (the one-head forward's output and destination-term sums over the same rows)
// give each sum's bits alone, short_row_sum's, in every lane, for every width up to 8.
TEST(VectorMath, PairedShortRowSumsGiveTheBitsOfEachSumAlone) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t dv = 1; dv <= 8; ++dv)
    for (int64_t n : {0, 1, 5, 33}) {
      std::vector<float> rows(static_cast<size_t>(n * dv + 8)), w(static_cast<size_t>(n)), w2(w.size());
      for (float& x : rows) x = u(rng) * 1e3f;
      for (size_t k = 0; k < w.size(); ++k) w[k] = u(rng), w2[k] = u(rng);
      auto row = [&](int64_t k) { return rows.data() + ((k * 7 + 3) % std::max<int64_t>(n, 1)) * dv; };
      auto weight = [&](int64_t k) { return w[size_t(k)]; };
      auto weight2 = [&](int64_t k) { return w2[size_t(k)]; };
      __m256 r, s;
      short_row_sums(dv, n, weight, weight2, row, r, s);
      alignas(32) float got_r[8], got_s[8], want_r[8], want_s[8];
      _mm256_store_ps(got_r, r);
      _mm256_store_ps(got_s, s);
      _mm256_store_ps(want_r, short_row_sum(dv, n, weight, row));
      _mm256_store_ps(want_s, short_row_sum(dv, n, weight2, row));
      for (int d = 0; d < 8; ++d) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got_r[d]), std::bit_cast<uint32_t>(want_r[d]))
            << "dv " << dv << " n " << n;
        ASSERT_EQ(std::bit_cast<uint32_t>(got_s[d]), std::bit_cast<uint32_t>(want_s[d]))
            << "dv " << dv << " n " << n;
      }
    }
}
#endif

// s[i, k] = sum_c h[i, k, c] a[k, c] in index order. The 8 x 8 register path (GAT's hidden layer,
// AVX with FMA) gives the bits of one FMA a term; the scalar loop of the other shapes leaves
// contraction to the compiler (none at the sanitizer build's -O1), so it is held to a tolerance.
// A row of zeros against negative weights gives +0, as the scalar loop's acc = 0 does.
TEST(HeadScores, RowsSumEachHeadInIndexOrderWithOneFmaPerTerm) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto [heads, d] : {std::pair<int64_t, int64_t>{8, 8}, {1, 8}, {8, 7}, {3, 16}, {4, 1}}) {
    const int64_t rows = 13;
    std::vector<float> h(static_cast<size_t>(rows * heads * d)), a(static_cast<size_t>(heads * d));
    for (float& x : h) x = u(rng) * 1e3f;  // magnitudes where a missing or extra rounding shows
    for (float& x : a) x = u(rng) - 0.5f;
    std::fill_n(h.begin(), heads * d, 0.f);  // row 0: products of 0 and negative weights are -0
    for (int64_t k = 0; k < heads; ++k)
      a[static_cast<size_t>(k * d)] = -std::abs(a[static_cast<size_t>(k * d)]) - 0.1f;
    std::vector<float> got(static_cast<size_t>(rows * heads), 123.f);
    head_scores_rows(rows, heads, d, h.data(), a.data(), got.data());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < heads; ++k) {
        float want = 0.f, magnitude = 0.f;
        for (int64_t c = 0; c < d; ++c) {
          const float x = h[static_cast<size_t>((i * heads + k) * d + c)],
                      w = a[static_cast<size_t>(k * d + c)];
          want = std::fma(x, w, want);
          magnitude += std::abs(x * w);
        }
        const float g = got[static_cast<size_t>(i * heads + k)];
#if defined(__AVX__) && defined(__FMA__)
        if (heads == 8 && d == 8) {
          ASSERT_EQ(std::bit_cast<uint32_t>(g), std::bit_cast<uint32_t>(want))
              << "row " << i << ", head " << k;
          continue;
        }
#endif
        ASSERT_NEAR(g, want, 1e-6f * magnitude) << heads << " x " << d << ", row " << i << ", head " << k;
      }
    for (int64_t k = 0; k < heads; ++k) EXPECT_EQ(std::bit_cast<uint32_t>(got[static_cast<size_t>(k)]), 0u);
  }
}

TEST(VectorMath, StreamRowCopiesExactly) {
  constexpr int64_t n = 4096;
  auto* dst = static_cast<float*>(::operator new[](n * sizeof(float), std::align_val_t{64}));
  std::vector<float> src(n);
  for (int64_t k = 0; k < n; ++k) src[static_cast<size_t>(k)] = static_cast<float>(k) * 0.37f - 11.f;
  for (int64_t row = 0; row < n; row += 64) stream_row(dst + row, src.data() + row, 64);
  stream_fence();
  for (int64_t k = 0; k < n; ++k) EXPECT_EQ(dst[k], src[static_cast<size_t>(k)]) << k;
  // Streaming needs a large output, 64-byte aligned, in whole lines.
  EXPECT_FALSE(streaming_stores_apply(dst, 16, 64));
  EXPECT_FALSE(streaming_stores_apply(dst + 1, int64_t{1} << 20, 64));
  EXPECT_FALSE(streaming_stores_apply(dst, int64_t{1} << 20, 24));
  ::operator delete[](dst, std::align_val_t{64});
}

}  // namespace
}  // namespace edgeattn::kernels
