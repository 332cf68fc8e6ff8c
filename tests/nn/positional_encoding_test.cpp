// Positional encodings: sinusoidal values, RWSE on a cycle and a star (hand-computed return
// probabilities), Laplacian eigenvectors on a path and a cycle (L v = lambda v with the known
// spectra), the size limit, sign flips and column appending.
#include "edgeattn/nn/positional_encoding.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "nn_test_util.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::nn {
namespace {

using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::undirected;

TEST(SinusoidalEncoding, MatchesTheTransformerFormula) {
  const Tensor pe = sinusoidal_encoding(50, 6);
  ASSERT_EQ(pe.shape(), (Shape{50, 6}));
  for (int64_t pos : {0, 1, 7, 49})
    for (int64_t i = 0; i < 3; ++i) {
      const double angle = double(pos) / std::pow(10000.0, 2.0 * double(i) / 6.0);
      EXPECT_NEAR(pe(pos, 2 * i), std::sin(angle), 1e-6) << pos << " " << i;
      EXPECT_NEAR(pe(pos, 2 * i + 1), std::cos(angle), 1e-6) << pos << " " << i;
    }
  EXPECT_EQ(pe(0, 0), 0.f);
  EXPECT_EQ(pe(0, 1), 1.f);
  const Tensor odd = sinusoidal_encoding(3, 5);
  EXPECT_NEAR(odd(2, 4), std::sin(2.0 / std::pow(10000.0, 4.0 / 5.0)), 1e-6);
  expect_throw_naming<InvalidArgument>([] { (void)sinusoidal_encoding(3, 0); }, {"dim=0"});
}

Graph cycle(int64_t n) {
  std::vector<int64_t> s, d;
  for (int64_t i = 0; i < n; ++i) s.push_back(i), d.push_back((i + 1) % n);
  return undirected(n, s, d);
}

TEST(RandomWalkEncoding, CycleReturnProbabilitiesAreHandComputed) {
  // On the 6-cycle a walk returns after t steps with probability (#closed walks) / 2^t:
  // t=2: 2/4, t=4: 6/16, t=6: (C(6,3) + 2)/64 = 22/64; odd t: 0 (bipartite).
  const Tensor pe = random_walk_encoding(cycle(6), 6);
  const std::vector<float> expected = {0.f, 0.5f, 0.f, 0.375f, 0.f, 22.f / 64.f};
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t t = 0; t < 6; ++t)
      EXPECT_FLOAT_EQ(pe(i, t), expected[static_cast<size_t>(t)]) << i << " " << t;
}

TEST(RandomWalkEncoding, StarCentreAndLeavesAreHandComputedAndIsolatedNodesAreZero) {
  // Centre 0 with leaves 1..4, and an isolated node 5.
  const Graph star = undirected(6, {0, 0, 0, 0}, {1, 2, 3, 4});
  const Tensor pe = random_walk_encoding(star, 4);
  const std::vector<float> centre = {0.f, 1.f, 0.f, 1.f}, leaf = {0.f, 0.25f, 0.f, 0.25f};
  for (int64_t t = 0; t < 4; ++t) {
    EXPECT_FLOAT_EQ(pe(0, t), centre[static_cast<size_t>(t)]);
    for (int64_t i = 1; i <= 4; ++i) EXPECT_FLOAT_EQ(pe(i, t), leaf[static_cast<size_t>(t)]);
    EXPECT_EQ(pe(5, t), 0.f);
  }
}

TEST(RandomWalkEncoding, IsIdenticalForAnyThreadCount) {
  const Graph g = edgeattn::testing::uniform_graph(300, 300, 1500, 4);
  Tensor one, many;
  {
    ThreadLimit limit(1);
    one = random_walk_encoding(g, 8);
  }
  {
    ThreadLimit limit(4);
    many = random_walk_encoding(g, 8);
  }
  EXPECT_EQ(max_abs_diff(one, many), 0.f);
}

// max_i |(L v)_i - lambda v_i| with L = I - D^-1/2 A D^-1/2 built from the undirected edge list.
double residual(const Graph& g, const Tensor& pe, int64_t col, double lambda) {
  const int64_t n = g.num_dst();
  std::vector<double> deg(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) deg[static_cast<size_t>(i)] = double(g.degree(i));
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double lv = pe(i, col);
    for (int32_t j : g.row(i))
      lv -= pe(j, col) / std::sqrt(deg[static_cast<size_t>(i)] * deg[static_cast<size_t>(j)]);
    worst = std::max(worst, std::fabs(lv - lambda * pe(i, col)));
  }
  return worst;
}

TEST(LaplacianEncoding, PathEigenpairsMatchTheKnownSpectrum) {
  // Normalised Laplacian of the path on n nodes: lambda_k = 1 - cos(pi k / (n - 1)), k = 0..n-1.
  const int64_t n = 8, k = 3;
  std::vector<int64_t> s, d;
  for (int64_t i = 0; i + 1 < n; ++i) s.push_back(i), d.push_back(i + 1);
  const Graph path = undirected(n, s, d);
  Tensor eig;
  const Tensor pe = laplacian_encoding(path, k, &eig);
  ASSERT_EQ(pe.shape(), (Shape{n, k}));
  for (int64_t c = 0; c < k; ++c) {
    const double lambda = 1.0 - std::cos(std::numbers::pi * double(c + 1) / double(n - 1));
    EXPECT_NEAR(eig(c), lambda, 1e-5);
    EXPECT_LT(residual(path, pe, c, lambda), 1e-5);
    double norm = 0;
    for (int64_t i = 0; i < n; ++i) norm += double(pe(i, c)) * pe(i, c);
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
}

TEST(LaplacianEncoding, CycleHasDoubleEigenvalues) {
  // Normalised Laplacian of the n-cycle: 1 - cos(2 pi k / n); k = 1 and k = n - 1 coincide.
  const int64_t n = 10;
  const Graph c = cycle(n);
  Tensor eig;
  const Tensor pe = laplacian_encoding(c, 4, &eig);
  const double l1 = 1.0 - std::cos(2.0 * std::numbers::pi / double(n));
  const double l2 = 1.0 - std::cos(4.0 * std::numbers::pi / double(n));
  const std::vector<double> expected = {l1, l1, l2, l2};
  for (int64_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(eig(k), expected[static_cast<size_t>(k)], 1e-5);
    EXPECT_LT(residual(c, pe, k, expected[static_cast<size_t>(k)]), 1e-5);
  }
}

TEST(LaplacianEncoding, RefusesLargeGraphsAndBadK) {
  const int64_t big = kMaxLaplacianNodes + 1;
  const Graph empty_big =
      Graph::from_csr(big, big, std::vector<int64_t>(static_cast<size_t>(big + 1), 0), {});
  expect_throw_naming<InvalidArgument>([&] { (void)laplacian_encoding(empty_big, 2); },
                                       {"4097 nodes", "4096", "random_walk_encoding"});
  expect_throw_naming<InvalidArgument>([] { (void)laplacian_encoding(cycle(5), 5); },
                                       {"k is 5", "[1, num_nodes - 1 = 4]"});
}

// Per graph of a block-diagonal batch, as PyG transforms each graph: a path of 8, a 10-cycle, a
// 2-node edge (one eigenvector past the first: the other columns 0) and a lone node (all 0). On
// the union the 4 components' null space (eigenvalue 0, 4 times) would fill every column.
TEST(LaplacianEncoding, PerGraphEqualsEachGraphsOwnAndPadsSmallGraphsWithZeros) {
  std::vector<int64_t> s, d;
  for (int64_t i = 0; i + 1 < 8; ++i) s.push_back(i), d.push_back(i + 1);              // path 0..7
  for (int64_t i = 0; i < 10; ++i) s.push_back(8 + i), d.push_back(8 + (i + 1) % 10);  // cycle 8..17
  s.push_back(18), d.push_back(19);  // the pair 18-19; node 20 alone
  const Graph g = undirected(21, s, d);
  const std::vector<int64_t> ptr = {0, 8, 18, 20, 21};
  const int64_t k = 3;
  const Tensor pe = laplacian_encoding_per_graph(g, ptr, k);
  ASSERT_EQ(pe.shape(), (Shape{21, k}));
  std::vector<int64_t> ps, pd;
  for (int64_t i = 0; i + 1 < 8; ++i) ps.push_back(i), pd.push_back(i + 1);
  const Tensor path = laplacian_encoding(undirected(8, ps, pd), k);
  const Tensor ring = laplacian_encoding(cycle(10), k);
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(pe(i, c), path(i, c)) << i << ", " << c;
    for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(pe(8 + i, c), ring(i, c)) << 8 + i << ", " << c;
  }
  // The pair's one eigenvector (1/sqrt 2, -1/sqrt 2) up to sign, then zeros; the lone node's zeros.
  EXPECT_NEAR(std::abs(pe(18, 0)), std::sqrt(0.5), 1e-6);
  EXPECT_NEAR(pe(18, 0), -pe(19, 0), 1e-6);
  for (const int64_t i : {18, 19})
    for (int64_t c = 1; c < k; ++c) EXPECT_EQ(pe(i, c), 0.f);
  for (int64_t c = 0; c < k; ++c) EXPECT_EQ(pe(20, c), 0.f);
  // An edge between two graphs is an input error, named.
  const Graph joined = undirected(4, {0, 1}, {1, 2});
  expect_throw_naming<InvalidArgument>(
      [&] {
        (void)laplacian_encoding_per_graph(joined, std::vector<int64_t>{0, 2, 4}, 1);
      },
      {"joins graph", "block-diagonal"});
  expect_throw_naming<InvalidArgument>(
      [&] {
        (void)laplacian_encoding_per_graph(joined, std::vector<int64_t>{0, 3}, 1);
      },
      {"graph_ptr"});
}

TEST(PositionalEncoding, RandomSignFlipNegatesWholeColumnsDeterministically) {
  const Tensor pe = sinusoidal_encoding(4, 16);
  const Tensor a = random_sign_flip(pe, 3), b = random_sign_flip(pe, 3);
  EXPECT_EQ(max_abs_diff(a, b), 0.f);
  int flipped = 0;
  for (int64_t c = 0; c < 16; ++c) {
    const float s = pe(1, c) != 0.f ? a(1, c) / pe(1, c) : a(0, c) / pe(0, c);
    ASSERT_TRUE(s == 1.f || s == -1.f);
    flipped += s < 0;
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(a(i, c), s * pe(i, c));
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 16);
}

TEST(PositionalEncoding, AppendColumnsJoinsDenseAndSparseFeatures) {
  const Tensor x({2, 2}, std::vector<float>{1, 0, 0, 3});
  const Tensor extra({2, 1}, std::vector<float>{5, 0});
  const Tensor dense = append_columns(x, extra);
  EXPECT_EQ(std::vector<float>(dense.span().begin(), dense.span().end()),
            (std::vector<float>{1, 0, 5, 0, 3, 0}));
  const CsrMatrix sparse = append_columns(CsrMatrix::from_dense(x), extra);
  EXPECT_EQ(sparse.cols(), 3);
  EXPECT_EQ(max_abs_diff(sparse.to_dense(), dense), 0.f);
  expect_throw_naming<ShapeError>(
      [&] {
        (void)append_columns(x, Tensor({3, 1}));
      },
      {"append_columns", "[3, 1]"});
}

}  // namespace
}  // namespace edgeattn::nn
