#include "edgeattn/graph/generators.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "support/expect_error.hpp"

namespace edgeattn {
namespace {

using edgeattn::testing::expect_throw_naming;

std::vector<int64_t> in_degrees(const EdgeList& list) {
  std::vector<int64_t> degree(static_cast<size_t>(list.num_nodes), 0);
  for (int32_t d : list.dst) ++degree[static_cast<size_t>(d)];
  return degree;
}

bool same_graph(const Graph& a, const Graph& b) {
  return a.num_dst() == b.num_dst() && a.num_src() == b.num_src() &&
         std::ranges::equal(a.row_ptr(), b.row_ptr()) && std::ranges::equal(a.col_idx(), b.col_idx());
}

// The per-edge R-MAT draw exactly as generators.hpp documents it, one edge at a time: the serial
// reference the batched, vectorised generator is checked against. Edge k, attempt t: one philox
// block for (k, t) keys a splitmix64 sequence; each level takes a 32-bit uniform (low half of a
// word, then its high half) and picks quadrant a, b, c or d against cumulative thresholds.
std::pair<int64_t, int64_t> reference_rmat_edge(int64_t n, uint64_t seed, int64_t k, const RmatParams& p) {
  constexpr uint32_t kStreamRmat = 0x726d6174;  // "rmat"
  const auto threshold = [](double x) {
    return static_cast<uint64_t>(std::min(std::llround(x * 4294967296.0), 4294967296ll));
  };
  const uint64_t t_a = threshold(p.a), t_ab = threshold(p.a + p.b), t_abc = threshold(p.a + p.b + p.c);
  const int scale = n <= 1 ? 0 : std::bit_width(static_cast<uint64_t>(n - 1));
  uint64_t s = 0, d = 0;
  for (uint32_t attempt = 0; attempt < 64; ++attempt) {
    const auto key =
        philox4x32(seed, {static_cast<uint32_t>(k), static_cast<uint32_t>(static_cast<uint64_t>(k) >> 32),
                          attempt, kStreamRmat});
    uint64_t state = (uint64_t{key[0]} << 32) | key[1];
    uint64_t word = 0;
    s = d = 0;
    for (int level = 0; level < scale; ++level) {
      if (level % 2 == 0) {
        state += 0x9e3779b97f4a7c15ull;
        word = mix64(state);
      }
      const uint64_t u = level % 2 == 0 ? (word & 0xffffffffu) : (word >> 32);
      const int quadrant = u < t_a ? 0 : u < t_ab ? 1 : u < t_abc ? 2 : 3;  // a, b, c, d
      s |= static_cast<uint64_t>(quadrant >= 2) << level;
      d |= static_cast<uint64_t>(quadrant == 1 || quadrant == 3) << level;
    }
    if (s < static_cast<uint64_t>(n) && d < static_cast<uint64_t>(n)) return {s, d};
  }
  return {static_cast<int64_t>(s % static_cast<uint64_t>(n)),
          static_cast<int64_t>(d % static_cast<uint64_t>(n))};
}

TEST(Rmat, BatchedGeneratorMatchesThePerEdgeReferenceExactly) {
  // Graph500 parameters, uniform quadrants on a non-power-of-two n (about half the draws are
  // rejected and redrawn), a single quadrant that is always out of range (every edge takes the
  // modulo fallback), and an edge count that leaves a partial batch.
  struct Case {
    int64_t n, m;
    RmatParams p;
  };
  for (const Case& c : {Case{1000, 5003, {.scramble_ids = false}},
                        Case{1025, 4099, {.a = 0.25, .b = 0.25, .c = 0.25, .d = 0.25, .scramble_ids = false}},
                        Case{10, 37, {.a = 0, .b = 0, .c = 0, .d = 1, .scramble_ids = false}},
                        Case{1, 5, {.scramble_ids = false}}}) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " m " << c.m << " d " << c.p.d);
    const EdgeList list = rmat_edges(c.n, c.m, 17, c.p);
    ASSERT_EQ(list.src.size(), static_cast<size_t>(c.m));
    for (int64_t k = 0; k < c.m; ++k) {
      const auto [s, d] = reference_rmat_edge(c.n, 17, k, c.p);
      ASSERT_EQ(list.src[static_cast<size_t>(k)], s) << "edge " << k;
      ASSERT_EQ(list.dst[static_cast<size_t>(k)], d) << "edge " << k;
    }
  }
}

TEST(ErdosRenyi, SameSeedGivesSameGraphAndOtherSeedDoesNot) {
  const Graph a = erdos_renyi_graph(500, 4000, 7);
  const Graph b = erdos_renyi_graph(500, 4000, 7);
  const Graph c = erdos_renyi_graph(500, 4000, 8);
  EXPECT_TRUE(same_graph(a, b));
  EXPECT_FALSE(same_graph(a, c));
}

TEST(ErdosRenyi, OneAndTwoThreadsGiveIdenticalEdgeLists) {
  // Enough edges for several parallel pieces, so two threads really split the work.
  EdgeList one, two;
  {
    ThreadLimit limit(1);
    one = erdos_renyi_edges(100000, 300000, 3);
  }
  {
    ThreadLimit limit(2);
    two = erdos_renyi_edges(100000, 300000, 3);
  }
  EXPECT_EQ(one.src, two.src);
  EXPECT_EQ(one.dst, two.dst);
}

TEST(ErdosRenyi, KeepingDuplicatesGivesExactlyTheRequestedEdgeCount) {
  const Graph g = erdos_renyi_graph(50, 3000, 1, {.duplicates = Duplicates::keep});
  EXPECT_EQ(g.num_edges(), 3000);
  EXPECT_EQ(g.num_dst(), 50);
  EXPECT_EQ(g.num_src(), 50);
}

TEST(ErdosRenyi, MergingDuplicatesLeavesOneEdgePerDistinctPair) {
  const EdgeList list = erdos_renyi_edges(40, 2000, 5);
  std::set<std::pair<int32_t, int32_t>> distinct;
  for (size_t k = 0; k < list.src.size(); ++k) distinct.insert({list.src[k], list.dst[k]});
  ASSERT_LT(distinct.size(), list.src.size());  // 2000 draws over 1600 pairs must repeat
  const Graph g = erdos_renyi_graph(40, 2000, 5);
  EXPECT_EQ(g.num_edges(), static_cast<int64_t>(distinct.size()));
}

TEST(ErdosRenyi, EndpointsCoverTheWholeRangeRoughlyUniformly) {
  const int64_t n = 64, m = 64000;
  const EdgeList list = erdos_renyi_edges(n, m, 11);
  std::vector<int64_t> src_count(n, 0);
  for (int32_t s : list.src) {
    ASSERT_GE(s, 0);
    ASSERT_LT(s, n);
    ++src_count[static_cast<size_t>(s)];
  }
  const auto in = in_degrees(list);
  // Expected 1000 per node, standard deviation ~31: a 20% band is > 6 sigma.
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(src_count[static_cast<size_t>(i)], 1000, 200) << "src " << i;
    EXPECT_NEAR(in[static_cast<size_t>(i)], 1000, 200) << "dst " << i;
  }
}

TEST(Rmat, SameSeedGivesSameGraph) {
  EXPECT_TRUE(same_graph(rmat_graph(1000, 8000, 2), rmat_graph(1000, 8000, 2)));
  EXPECT_FALSE(same_graph(rmat_graph(1000, 8000, 2), rmat_graph(1000, 8000, 3)));
}

TEST(Rmat, OneAndTwoThreadsGiveIdenticalEdgeLists) {
  EdgeList one, two;
  {
    ThreadLimit limit(1);
    one = rmat_edges(3000, 200000, 9);
  }
  {
    ThreadLimit limit(2);
    two = rmat_edges(3000, 200000, 9);
  }
  EXPECT_EQ(one.src, two.src);
  EXPECT_EQ(one.dst, two.dst);
}

TEST(Rmat, KeepingDuplicatesGivesExactlyTheRequestedEdgeCount) {
  const Graph g = rmat_graph(1024, 16384, 4, {}, {.duplicates = Duplicates::keep});
  EXPECT_EQ(g.num_edges(), 16384);
}

TEST(Rmat, InDegreesAreSkewedFarBeyondUniform) {
  const int64_t n = 1 << 14, m = 16 * n;
  const auto deg = in_degrees(rmat_edges(n, m, 1));
  const int64_t max_deg = *std::ranges::max_element(deg);
  const auto isolated = std::ranges::count(deg, 0);
  // Mean is 16. A uniform graph's maximum would be near 35; Graph500 R-MAT hubs reach hundreds,
  // and a large share of vertices receive no edge at all.
  EXPECT_GT(max_deg, 20 * 16);
  EXPECT_GT(isolated, n / 10);
}

TEST(Rmat, NonPowerOfTwoSizeKeepsEveryIdInRangeAndUsesTheTopIds) {
  const int64_t n = 1000;  // generated at 1024 with rejection
  const EdgeList list = rmat_edges(n, 50000, 6, {.scramble_ids = false});
  EXPECT_TRUE(std::ranges::all_of(list.src, [&](int32_t s) { return s >= 0 && s < n; }));
  EXPECT_TRUE(std::ranges::all_of(list.dst, [&](int32_t d) { return d >= 0 && d < n; }));
  // Rejection, unlike folding with modulo, leaves ids 1000..1023's mass out instead of on 0..23,
  // and ids just below n are still reachable.
  EXPECT_TRUE(std::ranges::any_of(list.dst, [&](int32_t d) { return d >= 990; }));
}

TEST(Rmat, WithoutScramblingTheHubIsVertexZero) {
  const auto deg = in_degrees(rmat_edges(4096, 65536, 8, {.scramble_ids = false}));
  EXPECT_EQ(std::ranges::max_element(deg) - deg.begin(), 0);
}

TEST(Rmat, ScramblingRelabelsVerticesWithoutChangingTheDegreeDistribution) {
  // n = 3000 is not a power of two, so the relabelling also exercises cycle walking.
  auto plain = in_degrees(rmat_edges(3000, 60000, 8, {.scramble_ids = false}));
  auto scrambled = in_degrees(rmat_edges(3000, 60000, 8));
  EXPECT_NE(plain, scrambled);
  EXPECT_NE(std::ranges::max_element(scrambled) - scrambled.begin(), 0);
  std::ranges::sort(plain);
  std::ranges::sort(scrambled);
  EXPECT_EQ(plain, scrambled);  // a bijection of ids permutes the degree sequence
}

TEST(Rmat, ParametersThatAlwaysMissTheRangeFallBackToModulo) {
  // d = 1 always picks the last vertex of the 16-vertex square, which is outside [0, 10).
  const EdgeList list = rmat_edges(10, 100, 1, {.a = 0, .b = 0, .c = 0, .d = 1, .scramble_ids = false});
  EXPECT_TRUE(std::ranges::all_of(list.src, [](int32_t s) { return s == 15 % 10; }));
  EXPECT_TRUE(std::ranges::all_of(list.dst, [](int32_t d) { return d == 15 % 10; }));
}

TEST(Rmat, SingleVertexGraphHasOnlySelfLoops) {
  const EdgeList list = rmat_edges(1, 10, 0);
  EXPECT_TRUE(std::ranges::all_of(list.src, [](int32_t s) { return s == 0; }));
  EXPECT_TRUE(std::ranges::all_of(list.dst, [](int32_t d) { return d == 0; }));
}

TEST(Generators, ZeroEdgesGiveAnEdgelessGraph) {
  EXPECT_EQ(erdos_renyi_graph(10, 0, 1).num_edges(), 0);
  EXPECT_EQ(rmat_graph(10, 0, 1).num_edges(), 0);
  EXPECT_EQ(rmat_graph(10, 0, 1).num_dst(), 10);
}

TEST(Generators, BuildOptionsArePassedToTheBuilder) {
  const Graph g = erdos_renyi_graph(30, 200, 2, {.self_loops = SelfLoops::add});
  for (int64_t i = 0; i < g.num_dst(); ++i) {
    const auto row = g.row(i);
    EXPECT_EQ(std::ranges::count(row, static_cast<int32_t>(i)), 1) << "row " << i;
  }
}

TEST(Generators, InvalidSizesAndParametersThrowInvalidArgument) {
  EXPECT_THROW(erdos_renyi_edges(0, 10, 1), InvalidArgument);
  EXPECT_THROW(erdos_renyi_edges(-5, 10, 1), InvalidArgument);
  EXPECT_THROW(erdos_renyi_edges(10, -1, 1), InvalidArgument);
  EXPECT_THROW(erdos_renyi_edges(int64_t{1} << 31, 10, 1), InvalidArgument);
  EXPECT_THROW(rmat_edges(0, 10, 1), InvalidArgument);
  EXPECT_THROW(rmat_edges(10, -1, 1), InvalidArgument);
  EXPECT_THROW(rmat_edges(10, 10, 1, {.a = 0.5, .b = 0.2, .c = 0.2, .d = 0.2}), InvalidArgument);
  EXPECT_THROW(rmat_edges(10, 10, 1, {.a = 1.2, .b = -0.1, .c = -0.1, .d = 0.0}), InvalidArgument);
  EXPECT_THROW(rmat_graph(10, 10, 1, {.a = 0.0, .b = 0.0, .c = 0.0, .d = 0.0}), InvalidArgument);
  // More edges than memory holds (10^14: 2 PB): refused before drawing, naming the count.
  expect_throw_naming<InvalidArgument>([] { (void)erdos_renyi_edges(1000, int64_t{100'000'000'000'000}, 1); },
                                       {"100000000000000 edges over 1000 nodes", "GB to draw and build"});
  expect_throw_naming<InvalidArgument>([] { (void)rmat_graph(1000, int64_t{100'000'000'000'000}, 1); },
                                       {"100000000000000 edges"});
}

TEST(Generators, InvalidArgumentMessageNamesTheOperand) {
  try {
    erdos_renyi_graph(10, -3, 1);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("num_edges is -3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace edgeattn
