// Tiled dense matmul (kernels/matmul.hpp) against its serial reference: hand-computed values,
// every transpose combination across tile boundaries, accumulation, bit-identical results for
// 1, 2 and 4 threads, and shape errors.
#include "edgeattn/kernels/matmul.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "kernels/reference/reference_matmul.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::random_tensor;

bool bit_identical(const Tensor& a, const Tensor& b) {
  if (!(a.shape() == b.shape())) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.data()[i] != b.data()[i]) return false;
  return true;
}

TEST(Matmul, MatchesReferenceForEveryTransposeAcrossTiles) {
  const int64_t m = 300, k = 70, n = 530;  // crosses the 128-row and 256-column tiles
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const Tensor a = ta ? random_tensor({k, m}, 1) : random_tensor({m, k}, 1);
      const Tensor b = tb ? random_tensor({n, k}, 2) : random_tensor({k, n}, 2);
      const Tensor start = random_tensor({m, n}, 3);
      for (bool acc : {false, true}) {
        Tensor got = start, want = start;
        kernels::matmul(a, ta, b, tb, got, acc);
        kernels::reference_matmul(a, ta, b, tb, want, acc);
        EXPECT_LE(max_abs_diff(got, want), 1e-4f) << "trans_a=" << ta << " trans_b=" << tb << " acc=" << acc;
      }
    }
}

TEST(Matmul, MatchesHandComputedProduct) {
  const Tensor a({2, 2}, std::vector<float>{1, 2, 3, 4}), b({2, 2}, std::vector<float>{5, 6, 7, 8});
  Tensor c({2, 2});
  kernels::matmul(a, false, b, true, c);  // a b^T = [[17, 23], [39, 53]]
  EXPECT_EQ(std::vector<float>(c.span().begin(), c.span().end()), (std::vector<float>{17, 23, 39, 53}));
}

TEST(Matmul, IsBitIdenticalForAnyThreadCount) {
  const Tensor a = random_tensor({1000, 64}, 4), b = random_tensor({64, 300}, 5);
  std::vector<Tensor> cs;
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    Tensor c({1000, 300});
    kernels::matmul(a, false, b, false, c);
    cs.push_back(std::move(c));
  }
  EXPECT_TRUE(bit_identical(cs[0], cs[1]));
  EXPECT_TRUE(bit_identical(cs[0], cs[2]));
}

// matmul(a, ta, b, tb, start, acc) on 1, 2 and 3 threads: within `tol` of the reference, and
// the same bits on every thread count.
void expect_reference_on_any_thread_count(const Tensor& a, bool ta, const Tensor& b, bool tb,
                                          const Tensor& start, bool acc, float tol) {
  SCOPED_TRACE(::testing::Message() << "trans_a=" << ta << " trans_b=" << tb << " acc=" << acc);
  Tensor want = start;
  kernels::reference_matmul(a, ta, b, tb, want, acc);
  std::vector<Tensor> cs;
  for (int threads : {1, 2, 3}) {
    ThreadLimit limit(threads);
    Tensor c = start;
    kernels::matmul(a, ta, b, tb, c, acc);
    EXPECT_LE(max_abs_diff(c, want), tol) << threads << " threads";
    cs.push_back(std::move(c));
  }
  EXPECT_TRUE(bit_identical(cs[0], cs[1]));
  EXPECT_TRUE(bit_identical(cs[0], cs[2]));
}

// A layer's weight on the right (k <= 512, n <= 256) takes the packed microkernel path: rows
// across several 132-row blocks, n not a multiple of a panel, both layouts of b.
TEST(Matmul, PackedWeightPathMatchesReferenceAndIsBitIdenticalForAnyThreadCount) {
  const int64_t m = 300, k = 100, n = 70;
  for (bool tb : {false, true}) {
    const Tensor a = random_tensor({m, k}, 9);
    const Tensor b = tb ? random_tensor({n, k}, 10) : random_tensor({k, n}, 10);
    for (bool acc : {false, true})
      expect_reference_on_any_thread_count(a, false, b, tb, random_tensor({m, n}, 11), acc, 1e-4f);
  }
}

// A weight-gradient shape: C [40, n] is one tile and k is long, so k is split into chunks (3
// here, the last one short) computed in parallel and summed in order; n = 70 and a layer's 64.
TEST(Matmul, SplitsALongInnerExtentBitIdenticallyForAnyThreadCount) {
  const int64_t k = 2 * 8192 + 1000, m = 40;
  for (int64_t n : {70, 64})
    for (bool ta : {true, false})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(n);
        const Tensor a = ta ? random_tensor({k, m}, 6) : random_tensor({m, k}, 6);
        const Tensor b = tb ? random_tensor({n, k}, 7) : random_tensor({k, n}, 7);
        for (bool acc : {false, true})
          expect_reference_on_any_thread_count(a, ta, b, tb, random_tensor({m, n}, 8), acc, 2e-3f);
      }
}

// Weight-gradient shapes a^T b (a [k, m], b [k, n], C weight-sized) at the edges: no rows, one
// row, rows around a 128-row tile, and enough for the split-k path's chunks; C one row, under a
// vector, one and several panels wide.
TEST(Matmul, WeightGradientShapesMatchTheReferenceAtTheEdges) {
  for (int64_t k : {0, 1, 131, 133, 5000})
    for (int64_t m : {1, 7, 64})
      for (int64_t n : {1, 16, 100}) {
        SCOPED_TRACE(::testing::Message() << "k=" << k << " m=" << m << " n=" << n);
        const Tensor a = random_tensor({k, m}, 12), b = random_tensor({k, n}, 13);
        for (bool acc : {false, true})
          expect_reference_on_any_thread_count(a, true, b, false, random_tensor({m, n}, 14), acc, 2e-3f);
      }
}

TEST(Matmul, RejectsMismatchedInnerExtents) {
  Tensor c({3, 5});
  testing::expect_throw_naming<ShapeError>(
      [&] {
        kernels::matmul(Tensor({3, 4}), false, Tensor({6, 5}), false, c);
      },
      {"matmul: b", "[6, 5]", "[4, *]"});
  testing::expect_throw_naming<ShapeError>(
      [&] {
        kernels::matmul(Tensor({3, 4}), false, Tensor({4, 5}), false, Tensor({3, 6}));
      },
      {"matmul: c", "[3, 6]", "[3, 5]"});
}

}  // namespace
}  // namespace edgeattn
