// SpMM (kernels/spmm.hpp) against its serial reference:
// hand-computed values, random shapes that cross tile and chunk boundaries, empty rows and
// columns, accumulation, bit-identical results for 1, 2 and 4 threads, and shape errors.
#include "edgeattn/kernels/spmm.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "edgeattn/core/parallel.hpp"
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
