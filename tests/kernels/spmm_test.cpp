// SpMM (kernels/spmm.hpp) against its serial reference:
// hand-computed values, random shapes that cross tile and chunk boundaries, empty rows and
// columns, accumulation, bit-identical results for 1, 2 and 4 threads, and shape errors. The
// dropped variants also against the plain kernels on the explicitly dropped matrix, bit for bit.
#include "edgeattn/kernels/spmm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "kernels/reference/reference_matmul.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::random_tensor;

// A random CSR matrix with about `density` of its entries set, some rows and columns left empty.
CsrMatrix random_csr(int64_t rows, int64_t cols, float density, uint64_t seed) {
  const Tensor u = random_tensor({rows, cols}, seed, 0.f, 1.f);
  const Tensor v = random_tensor({rows, cols}, seed + 1);
  std::vector<int64_t> r, c;
  std::vector<float> x;
  for (int64_t i = 0; i < rows; ++i) {
    if (i % 7 == 3) continue;  // empty rows
    for (int64_t j = 0; j < cols; ++j)
      if (j % 5 != 2 && u(i, j) < density) {  // empty columns
        r.push_back(i);
        c.push_back(j);
        x.push_back(v(i, j));
      }
  }
  return CsrMatrix::from_triplets(rows, cols, r, c, x);
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  if (!(a.shape() == b.shape())) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.data()[i] != b.data()[i]) return false;
  return true;
}

TEST(Spmm, MatchesHandComputedProduct) {
  // x = [[0, 2, 0], [1, 0, 3]], b = [[1, 2], [3, 4], [5, 6]]
  const CsrMatrix x(2, 3, {0, 1, 3}, {1, 0, 2}, {2.f, 1.f, 3.f});
  const Tensor b({3, 2}, std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor y({2, 2});
  kernels::spmm(x, b, y);
  EXPECT_EQ(std::vector<float>(y.span().begin(), y.span().end()), (std::vector<float>{6, 8, 16, 20}));
  // x^T . [[1, 1], [2, 0]] = [[2, 0], [2, 2], [6, 0]]
  const Tensor d({2, 2}, std::vector<float>{1, 1, 2, 0});
  Tensor yt({3, 2});
  kernels::spmm_transposed(x, d, yt);
  EXPECT_EQ(std::vector<float>(yt.span().begin(), yt.span().end()), (std::vector<float>{2, 0, 2, 2, 6, 0}));
}

TEST(Spmm, MatchesReferenceOnRandomSparseMatrices) {
  for (const auto& [rows, cols, m] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1},
                                                                                        {37, 50, 3},
                                                                                        {500, 300, 64},
                                                                                        {2000, 140, 7},
                                                                                        {300, 90, 8},
                                                                                        {200, 120, 75},
                                                                                        {150, 60, 144}}) {
    // widths cover each register tile of the kernel: 64-column tiles, 8-column tiles, the tail
    const CsrMatrix x = random_csr(rows, cols, 0.05f, static_cast<uint64_t>(rows + cols));
    const Tensor b = random_tensor({cols, m}, 11);
    Tensor got({rows, m}), want({rows, m});
    kernels::spmm(x, b, got);
    kernels::reference_spmm(x, b, want);
    EXPECT_LE(max_abs_diff(got, want), 1e-5f) << rows << "x" << cols << " m=" << m;

    const Tensor d = random_tensor({rows, m}, 12);
    Tensor got_t({cols, m}), want_t({cols, m});
    kernels::spmm_transposed(x, d, got_t);
    kernels::reference_spmm_transposed(x, d, want_t);
    EXPECT_LE(max_abs_diff(got_t, want_t), 1e-4f) << rows << "x" << cols << " m=" << m;
  }
}

TEST(Spmm, AccumulatesIntoTheOutputWhenAsked) {
  for (const int64_t m : {5, 75}) {
    const CsrMatrix x = random_csr(60, 40, 0.1f, 3);
    const Tensor b = random_tensor({40, m}, 4);
    const Tensor start = random_tensor({60, m}, 5);
    Tensor got = start, want = start;
    kernels::spmm(x, b, got, /*accumulate=*/true);
    kernels::reference_spmm(x, b, want, /*accumulate=*/true);
    EXPECT_LE(max_abs_diff(got, want), 1e-5f) << "m=" << m;
  }
}

TEST(Spmm, TransposedAccumulatesIntoTheOutputWhenAsked) {
  const CsrMatrix x = random_csr(60, 40, 0.1f, 3);
  const Tensor b = random_tensor({40, 5}, 4);
  const Tensor start = random_tensor({60, 5}, 5);
  Tensor got = start, want = start;
  kernels::spmm(x, b, got, /*accumulate=*/true);
  kernels::reference_spmm(x, b, want, /*accumulate=*/true);
  EXPECT_LE(max_abs_diff(got, want), 1e-5f);
  Tensor got_t = random_tensor({40, 5}, 6), want_t = got_t;
  const Tensor d = random_tensor({60, 5}, 7);
  kernels::spmm_transposed(x, d, got_t, true);
  kernels::reference_spmm_transposed(x, d, want_t, true);
  EXPECT_LE(max_abs_diff(got_t, want_t), 1e-5f);
}

TEST(Spmm, IsBitIdenticalForAnyThreadCount) {
  const CsrMatrix x = random_csr(3000, 500, 0.02f, 8);
  const Tensor b = random_tensor({500, 64}, 9), d = random_tensor({3000, 64}, 10);
  std::vector<Tensor> ys, yts;
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    Tensor y({3000, 64}), yt({500, 64});
    kernels::spmm(x, b, y);
    kernels::spmm_transposed(x, d, yt);
    ys.push_back(std::move(y));
    yts.push_back(std::move(yt));
  }
  for (size_t k = 1; k < ys.size(); ++k) {
    EXPECT_TRUE(bit_identical(ys[0], ys[k]));
    EXPECT_TRUE(bit_identical(yts[0], yts[k]));
  }
}

kernels::EntryDropout entry_dropout(float p, uint64_t key) {
  return {.key = key, .threshold = dropout_threshold16(p), .scale = 1.f / (1.f - p)};
}

TEST(SpmmDropped, EqualsTheProductOfTheExplicitlyDroppedMatrixBitForBit) {
  // Widths cover the register tiles; 20 x 2000 at density 0.5 has rows of ~900 entries and
  // 700 x 40 at 0.6 columns of ~400, beyond the kernels' 256-entry chunks.
  for (const auto& [rows, cols, density, m] :
       std::vector<std::tuple<int64_t, int64_t, float, int64_t>>{{1, 1, 1.f, 1},
                                                                 {37, 50, 0.1f, 3},
                                                                 {500, 300, 0.05f, 64},
                                                                 {300, 90, 0.05f, 8},
                                                                 {200, 120, 0.05f, 75},
                                                                 {20, 2000, 0.5f, 16},
                                                                 {700, 40, 0.6f, 9}}) {
    const CsrMatrix x = random_csr(rows, cols, density, static_cast<uint64_t>(rows * 3 + cols));
    for (const float p : {0.f, 0.3f, 0.6f, 0.95f}) {
      const kernels::EntryDropout drop = entry_dropout(p, 0x1234u + static_cast<uint64_t>(rows));
      const CsrMatrix xd = kernels::reference_dropped(x, drop);
      const Tensor b = random_tensor({cols, m}, 11), d = random_tensor({rows, m}, 12);
      Tensor got({rows, m}), want({rows, m}), oracle({rows, m});
      kernels::spmm_dropped(x, drop, b, got);
      kernels::spmm(xd, b, want);
      kernels::reference_spmm_dropped(x, drop, b, oracle);
      EXPECT_TRUE(bit_identical(got, want)) << rows << "x" << cols << " m=" << m << " p=" << p;
      EXPECT_LE(max_abs_diff(got, oracle), 1e-4f) << rows << "x" << cols << " m=" << m << " p=" << p;

      Tensor got_t({cols, m}), want_t({cols, m}), oracle_t({cols, m});
      kernels::spmm_transposed_dropped(x, drop, d, got_t);
      kernels::spmm_transposed(xd, d, want_t);
      kernels::reference_spmm_transposed_dropped(x, drop, d, oracle_t);
      EXPECT_TRUE(bit_identical(got_t, want_t)) << rows << "x" << cols << " m=" << m << " p=" << p;
      EXPECT_LE(max_abs_diff(got_t, oracle_t), 1e-4f) << rows << "x" << cols << " m=" << m << " p=" << p;
    }
  }
}

TEST(SpmmDropped, RecordsItsDecisionsForTheTransposedProductToReuse) {
  const CsrMatrix x = random_csr(700, 40, 0.6f, 17);  // columns of ~400 entries: several chunks
  const kernels::EntryDropout drop = entry_dropout(0.6f, 5);
  const Tensor b = random_tensor({40, 24}, 18), d = random_tensor({700, 24}, 19);
  Tensor y({700, 24}), y_plain({700, 24});
  std::vector<uint8_t> keep(static_cast<size_t>(x.nnz()), 7);
  kernels::spmm_dropped(x, drop, b, y, false, keep);
  kernels::spmm_dropped(x, drop, b, y_plain);
  EXPECT_TRUE(bit_identical(y, y_plain));
  for (int64_t r = 0; r < x.rows(); ++r)
    for (int64_t p = x.indptr()[static_cast<size_t>(r)]; p < x.indptr()[static_cast<size_t>(r) + 1]; ++p) {
      const bool want = sparse_entry_draw(drop.key, r, x.indices()[static_cast<size_t>(p)]) >= drop.threshold;
      ASSERT_EQ(keep[static_cast<size_t>(p)], want ? 1 : 0) << "entry " << p;
    }
  Tensor yt({40, 24}), yt_drawn({40, 24});
  kernels::spmm_transposed_dropped(x, drop, d, yt, false, keep);
  kernels::spmm_transposed_dropped(x, drop, d, yt_drawn);
  EXPECT_TRUE(bit_identical(yt, yt_drawn));
  // Wrong lengths name the buffer.
  std::vector<uint8_t> short_keep(3);
  testing::expect_throw_naming<ShapeError>([&] { kernels::spmm_dropped(x, drop, b, y, false, short_keep); },
                                           {"spmm_dropped: keep_out", "3 bytes"});
  testing::expect_throw_naming<ShapeError>(
      [&] { kernels::spmm_transposed_dropped(x, drop, d, yt, false, short_keep); },
      {"spmm_transposed_dropped: keep", "3 bytes"});
}

TEST(SpmmDropped, KeepsAboutOneMinusPAndScalesWhatItKeeps) {
  // One column of ones in b: y[r] is (kept entries of row r) x scale when x's values are all 1.
  std::vector<int64_t> r, c;
  for (int64_t i = 0; i < 50; ++i)
    for (int64_t j = 0; j < 400; ++j) {
      r.push_back(i);
      c.push_back(j);
    }
  const CsrMatrix x = CsrMatrix::from_triplets(50, 400, r, c, std::vector<float>(r.size(), 1.f));
  Tensor ones({400, 1});
  ones.fill(1.f);
  const kernels::EntryDropout drop = entry_dropout(0.5f, 77);  // scale 2: the sums are exact
  Tensor y({50, 1});
  kernels::spmm_dropped(x, drop, ones, y);
  double kept = 0;
  for (int64_t i = 0; i < 50; ++i) {
    const float count = y.data()[i] / drop.scale;
    EXPECT_EQ(count, std::round(count)) << "row " << i;
    kept += count;
  }
  EXPECT_NEAR(kept / (50.0 * 400.0), 0.5, 0.02);
}

TEST(SpmmDropped, AccumulatesAndWritesZeroRowsWhenEverythingIsDropped) {
  const CsrMatrix x = random_csr(60, 40, 0.2f, 3);
  const Tensor b = random_tensor({40, 12}, 4), d = random_tensor({60, 12}, 5);
  const kernels::EntryDropout drop = entry_dropout(0.5f, 9);
  const CsrMatrix xd = kernels::reference_dropped(x, drop);
  Tensor got = random_tensor({60, 12}, 6), want = got;
  kernels::spmm_dropped(x, drop, b, got, /*accumulate=*/true);
  kernels::spmm(xd, b, want, /*accumulate=*/true);
  EXPECT_TRUE(bit_identical(got, want));
  Tensor got_t = random_tensor({40, 12}, 7), want_t = got_t;
  kernels::spmm_transposed_dropped(x, drop, d, got_t, /*accumulate=*/true);
  kernels::spmm_transposed(xd, d, want_t, /*accumulate=*/true);
  EXPECT_TRUE(bit_identical(got_t, want_t));
  // threshold 65536: nothing is kept, so every output row is written as 0 (y held garbage).
  const kernels::EntryDropout all{.key = 1, .threshold = 65536, .scale = 2.f};
  Tensor y = random_tensor({60, 12}, 8), yt = random_tensor({40, 12}, 9);
  kernels::spmm_dropped(x, all, b, y);
  kernels::spmm_transposed_dropped(x, all, d, yt);
  EXPECT_EQ(max_abs_diff(y, Tensor({60, 12})), 0.f);
  EXPECT_EQ(max_abs_diff(yt, Tensor({40, 12})), 0.f);
}

TEST(SpmmDropped, IsBitIdenticalForAnyThreadCount) {
  const CsrMatrix x = random_csr(3000, 500, 0.02f, 8);
  const Tensor b = random_tensor({500, 64}, 9), d = random_tensor({3000, 64}, 10);
  const kernels::EntryDropout drop = entry_dropout(0.6f, 42);
  std::vector<Tensor> ys, yts;
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    Tensor y({3000, 64}), yt({500, 64});
    kernels::spmm_dropped(x, drop, b, y);
    kernels::spmm_transposed_dropped(x, drop, d, yt);
    ys.push_back(std::move(y));
    yts.push_back(std::move(yt));
  }
  for (size_t k = 1; k < ys.size(); ++k) {
    EXPECT_TRUE(bit_identical(ys[0], ys[k]));
    EXPECT_TRUE(bit_identical(yts[0], yts[k]));
  }
}

TEST(SpmmDropped, RejectsMismatchedShapesNamingTheOperand) {
  const CsrMatrix x = random_csr(10, 8, 0.3f, 1);
  const kernels::EntryDropout drop = entry_dropout(0.5f, 1);
  testing::expect_throw_naming<ShapeError>(
      [&] {
        kernels::spmm_dropped(x, drop, Tensor({7, 4}), Tensor({10, 4}));
      },
      {"spmm_dropped: b", "[7, 4]", "[8, *]"});
  testing::expect_throw_naming<ShapeError>(
      [&] {
        kernels::spmm_transposed_dropped(x, drop, Tensor({10, 4}), Tensor({10, 4}));
      },
      {"spmm_transposed_dropped: y", "[8, 4]"});
}

TEST(Spmm, RejectsMismatchedShapesNamingTheOperand) {
  const CsrMatrix x = random_csr(10, 8, 0.3f, 1);
  Tensor y({10, 4});
  testing::expect_throw_naming<ShapeError>(
      [&] {
        kernels::spmm(x, Tensor({7, 4}), y);
      },
      {"spmm: b", "[7, 4]", "[8, *]"});
  testing::expect_throw_naming<ShapeError>(
      [&] {
        kernels::spmm(x, Tensor({8, 4}), Tensor({9, 4}));
      },
      {"spmm: y", "[9, 4]", "[10, 4]"});
  testing::expect_throw_naming<ShapeError>(
      [&] {
        kernels::spmm_transposed(x, Tensor({10, 4}), Tensor({10, 4}));
      },
      {"spmm_transposed: y", "[8, 4]"});
}

}  // namespace
}  // namespace edgeattn
