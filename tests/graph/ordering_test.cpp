#include "edgeattn/graph/ordering.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/graph/cuthill_mckee_ordering.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/boost_interop.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/graph/partition.hpp"
#include "edgeattn/graph/transforms.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using I64 = std::vector<int64_t>;

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

// side x side 4-neighbour grid, both directions.
Graph grid(int64_t side) {
  I64 src, dst;
  for (int64_t r = 0; r < side; ++r)
    for (int64_t c = 0; c < side; ++c) {
      const int64_t v = r * side + c;
      if (c + 1 < side) {
        src.push_back(v);
        dst.push_back(v + 1);
      }
      if (r + 1 < side) {
        src.push_back(v);
        dst.push_back(v + side);
      }
    }
  return build_graph(side * side, side * side, src, dst, {.symmetrize = true});
}

Graph path(int64_t n) {
  I64 src, dst;
  for (int64_t i = 0; i + 1 < n; ++i) {
    src.push_back(i);
    dst.push_back(i + 1);
  }
  return build_graph(n, n, src, dst, {.symmetrize = true});
}

TEST(Locality, MeasuresBandwidthAndMeanEdgeDistance) {
  // four_node_graph: |i - j| over its 7 edges is 0, 1, 1, 1, 2, 1, 0.
  const Locality l = locality(testing::four_node_graph());
  EXPECT_EQ(l.bandwidth, 2);
  EXPECT_DOUBLE_EQ(l.mean_edge_distance, 6.0 / 7.0);
  EXPECT_EQ(bandwidth(grid(5)), 5);
  EXPECT_DOUBLE_EQ(mean_edge_distance(grid(5)), 3.0);  // 40 horizontal (1) + 40 vertical (5) over 80
  EXPECT_EQ(locality(Graph()).bandwidth, 0);
}

TEST(RcmOrdering, RestoresBandwidthOneOnAScrambledPath) {
  const Graph scrambled = permute(path(1000), random_permutation(1000, 1)).graph;
  EXPECT_GT(bandwidth(scrambled), 500);
  const auto order = rcm_ordering(scrambled);
  EXPECT_NO_THROW(check_permutation(order, 1000));
  EXPECT_EQ(bandwidth(permute(scrambled, order).graph), 1);
}

TEST(RcmOrdering, ShrinksTheBandwidthOfAScrambledGrid) {
  const int64_t side = 40;
  const Graph scrambled = permute(grid(side), random_permutation(side * side, 2)).graph;
  const Graph reordered = permute(scrambled, rcm_ordering(scrambled)).graph;
  EXPECT_GT(bandwidth(scrambled), 1000);
  // A breadth-first level of a grid holds at most side + 1 nodes; edges join adjacent levels.
  EXPECT_LE(bandwidth(reordered), 2 * side + 1);
  EXPECT_LT(mean_edge_distance(reordered), mean_edge_distance(scrambled) / 10.0);
}

TEST(RcmOrdering, OrdersEveryComponentAndIsolatedNode) {
  // Two paths and two isolated nodes.
  const I64 src = {0, 1, 5, 6}, dst = {1, 2, 6, 7};
  const Graph g = build_graph(9, 9, src, dst, {.symmetrize = true});
  const auto order = rcm_ordering(g);
  EXPECT_NO_THROW(check_permutation(order, 9));
  EXPECT_EQ(bandwidth(permute(g, order).graph), 1);
  EXPECT_TRUE(rcm_ordering(Graph()).empty());
}

// Reference twin: Boost's own cuthill_mckee_ordering, which finds each component's start itself
// (the same pseudo-peripheral search, but O(n) per component), reversed. The graph is already
// symmetric without self-loops, so rcm_ordering's pattern is the graph itself.
std::vector<int64_t> boost_rcm(const Graph& g) {
  const auto bg = to_boost_csr<boost::directedS>(g);
  std::vector<std::size_t> order;
  boost::cuthill_mckee_ordering(bg, std::back_inserter(order));
  std::vector<int64_t> new_of_old(order.size());
  for (size_t k = 0; k < order.size(); ++k) new_of_old[order[k]] = static_cast<int64_t>(order.size() - 1 - k);
  return new_of_old;
}

TEST(RcmOrdering, EqualsBoostsOwnStartSearch) {
  // A grid, a path, a star and isolated nodes, scrambled together.
  I64 src, dst;
  const Graph gr = grid(12);
  for (int64_t i = 0; i < gr.num_dst(); ++i)
    for (const int32_t j : gr.row(i)) {
      src.push_back(j);
      dst.push_back(i);
    }
  for (int64_t v = 144; v < 144 + 39; ++v) {  // path 144..183
    src.push_back(v);
    dst.push_back(v + 1);
  }
  for (int64_t leaf = 201; leaf < 220; ++leaf) {  // star around 200; 184..199 and 220..239 isolated
    src.push_back(200);
    dst.push_back(leaf);
  }
  const int64_t n = 240;
  const Graph g = permute(build_graph(n, n, src, dst, {.symmetrize = true}), random_permutation(n, 3)).graph;
  EXPECT_EQ(rcm_ordering(g), boost_rcm(g));
  const Graph scrambled_grid = permute(grid(30), random_permutation(900, 4)).graph;
  EXPECT_EQ(rcm_ordering(scrambled_grid), boost_rcm(scrambled_grid));
}

TEST(RcmOrdering, OrdersManySmallComponents) {
  // 20k edges between pairs and 20k isolated nodes: 40k components. (Boost's own start search
  // re-colours the whole graph for each of them; R-MAT graphs have hundreds of thousands.)
  const int64_t pairs = 20000, n = 3 * pairs;
  I64 src, dst;
  for (int64_t p = 0; p < pairs; ++p) {
    src.push_back(3 * p);
    dst.push_back(3 * p + 2);
  }
  const Graph g = permute(build_graph(n, n, src, dst, {.symmetrize = true}), random_permutation(n, 5)).graph;
  const auto order = rcm_ordering(g);
  EXPECT_NO_THROW(check_permutation(order, n));
  EXPECT_EQ(bandwidth(permute(g, order).graph), 1);
}

TEST(AmdOrdering, ReturnsAPermutationAndEliminatesAStarsHubLate) {
  const Graph g = testing::power_law_graph(2000, 20000, 4);
  EXPECT_NO_THROW(check_permutation(amd_ordering(g), 2000));
  // Star: hub 0 with leaves 1..9. Minimum degree eliminates leaves (degree 1) before the hub.
  I64 src, dst;
  for (int64_t leaf = 1; leaf < 10; ++leaf) {
    src.push_back(0);
    dst.push_back(leaf);
  }
  const auto order = amd_ordering(build_graph(10, 10, src, dst));
  EXPECT_NO_THROW(check_permutation(order, 10));
  EXPECT_GE(order[0], 8);
  EXPECT_TRUE(amd_ordering(Graph()).empty());
}

TEST(DegreeOrdering, PutsHighDegreeNodesFirstAndBreaksTiesById) {
  // four_node_graph, loops excluded: total degrees 2, 4, 2, 2.
  EXPECT_EQ(degree_ordering(testing::four_node_graph()), (I64{1, 0, 2, 3}));
}

// Each node's degree counted edge by edge: in + out, self-loops ignored.
I64 degrees_edge_by_edge(const Graph& g) {
  I64 degree(static_cast<size_t>(g.num_dst()), 0);
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (const int32_t j : g.row(i))
      if (j != i) {
        ++degree[static_cast<size_t>(i)];
        ++degree[static_cast<size_t>(j)];
      }
  return degree;
}

// The degree-based grouping written out: group g >= 1 holds degrees in [mean 2^(g-2), mean
// 2^(g-1)), group 0 those below mean / 2; highest group first, ids ascending within a group.
I64 degree_groups_reference(const Graph& g) {
  const I64 degree = degrees_edge_by_edge(g);
  const double mean = static_cast<double>(std::accumulate(degree.begin(), degree.end(), int64_t{0})) /
                      static_cast<double>(degree.size());
  const auto group = [&](int64_t d) {
    int level = 0;
    if (mean > 0)
      for (double t = mean / 2; static_cast<double>(d) >= t; t *= 2) ++level;
    return level;
  };
  I64 old_of_new(degree.size());
  std::iota(old_of_new.begin(), old_of_new.end(), 0);
  std::stable_sort(old_of_new.begin(), old_of_new.end(), [&](int64_t a, int64_t b) {
    return group(degree[static_cast<size_t>(a)]) > group(degree[static_cast<size_t>(b)]);
  });
  return invert_permutation(old_of_new);
}

TEST(DegreeGroupOrdering, GroupsByPowersOfTwoOfTheMeanKeepingInputOrderWithinAGroup) {
  const Graph g = testing::power_law_graph(3000, 30000, 6);
  EXPECT_EQ(total_degrees(g), degrees_edge_by_edge(g));
  const I64 order = degree_group_ordering(g);
  EXPECT_NO_THROW(check_permutation(order, g.num_dst()));
  EXPECT_EQ(order, degree_groups_reference(g));
  // Hubs first: the new first node has the largest degree's group, and the numbering is not the
  // full sort (nodes of a group keep their input order).
  const I64 degree = total_degrees(g);
  const int64_t first = std::find(order.begin(), order.end(), 0) - order.begin();
  EXPECT_GE(2 * degree[static_cast<size_t>(first)], *std::max_element(degree.begin(), degree.end()));
  EXPECT_NE(order, degree_ordering(g));
  // The hand-computed case: degrees 2, 4, 2, 2 (mean 2.5): node 1 alone in the top group.
  EXPECT_EQ(degree_group_ordering(testing::four_node_graph()), (I64{1, 0, 2, 3}));
  EXPECT_TRUE(degree_group_ordering(Graph()).empty());
  EXPECT_EQ(degree_group_ordering(Graph::from_csr(3, 3, {0, 0, 0, 0}, {})), (I64{0, 1, 2}));  // no edges
  testing::expect_throw_naming<GraphError>(
      [&] {
        degree_group_ordering(Graph::from_csr(1, 2, {0, 1}, {1}));
      },
      {"degree_group_ordering", "square"});
}

// `hubs` stars of `leaves` leaves each, numbered star by star (the hub, then its leaves), the hubs
// linked in a path; both directions. Skewed degrees (leaves 1, hubs leaves + 2; mean / median
// about 2) in a numbering where every edge is short.
Graph caterpillar(int64_t hubs, int64_t leaves) {
  const int64_t n = hubs * (leaves + 1);
  I64 src, dst;
  for (int64_t h = 0; h < hubs; ++h) {
    const int64_t hub = h * (leaves + 1);
    for (int64_t l = 1; l <= leaves; ++l) {
      src.push_back(hub);
      dst.push_back(hub + l);
    }
    if (h + 1 < hubs) {
      src.push_back(hub);
      dst.push_back(hub + leaves + 1);
    }
  }
  return build_graph(n, n, src, dst, {.symmetrize = true});
}

TEST(AdviseOrdering, RenumbersSkewedGraphsWithoutLocalityWhoseRowsExceedTheCache) {
  const Graph local = caterpillar(100, 100);  // 10,100 nodes
  const Graph g = permute(local, random_permutation(local.num_dst(), 9)).graph;
  const auto row_bytes = static_cast<int64_t>(2 * kReorderCacheBytes / 10100);  // 64 MiB of rows
  const OrderingAdvice yes = advise_ordering(g, row_bytes);
  EXPECT_TRUE(yes.reorder) << yes.reason;
  EXPECT_GT(yes.skew, kReorderSkew);
  EXPECT_GE(yes.spread, kReorderSpread);
  EXPECT_DOUBLE_EQ(yes.gathered_bytes, 10100.0 * static_cast<double>(row_bytes));
  EXPECT_DOUBLE_EQ(yes.spread, mean_edge_distance(g) / 10100.0);
  EXPECT_NE(yes.reason.find("skewed degrees"), std::string::npos) << yes.reason;
  // The same graph with rows that fit in cache: any order serves.
  const OrderingAdvice cached = advise_ordering(g, 256);
  EXPECT_FALSE(cached.reorder);
  EXPECT_NE(cached.reason.find("fit in a last-level cache"), std::string::npos) << cached.reason;
  // In its own star-by-star numbering every edge is short: renumbering could only lose that.
  const OrderingAdvice near = advise_ordering(local, row_bytes);
  EXPECT_DOUBLE_EQ(near.skew, yes.skew);
  EXPECT_FALSE(near.reorder);
  EXPECT_LT(near.spread, kReorderSpread);
  EXPECT_NE(near.reason.find("already local"), std::string::npos) << near.reason;
  testing::expect_throw_naming<InvalidArgument>([&] { advise_ordering(g, 0); }, {"row_bytes", "0"});
}

TEST(AdviseOrdering, DeclinesRegularAndBipartiteGraphs) {
  // A shuffled grid: degrees 2 to 4, median 4, so not skewed; its numbering has no locality.
  const Graph regular = permute(grid(60), random_permutation(3600, 4)).graph;
  const OrderingAdvice flat = advise_ordering(regular, int64_t{1} << 20);
  EXPECT_FALSE(flat.reorder);
  EXPECT_LE(flat.skew, kReorderSkew);
  EXPECT_GE(flat.spread, kReorderSpread);
  EXPECT_NE(flat.reason.find("not skewed"), std::string::npos) << flat.reason;
  const OrderingAdvice bip = advise_ordering(Graph::from_csr(1, 2, {0, 1}, {1}), int64_t{1} << 30);
  EXPECT_FALSE(bip.reorder);
  EXPECT_NE(bip.reason.find("bipartite"), std::string::npos) << bip.reason;
  EXPECT_FALSE(advise_ordering(Graph(), 4).reorder);
}

// `communities` groups of `size` nodes, each node with 8 random neighbours in its group and one
// outside (both directions), ids shuffled.
Graph shuffled_communities(int64_t communities, int64_t size, uint64_t seed) {
  const int64_t n = communities * size;
  std::mt19937_64 rng(seed);
  I64 src, dst;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t base = v / size * size;
    for (int k = 0; k < 8; ++k) {
      src.push_back(base + static_cast<int64_t>(rng() % static_cast<uint64_t>(size)));
      dst.push_back(v);
    }
    src.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(n)));
    dst.push_back(v);
  }
  const Graph g = build_graph(n, n, src, dst, {.symmetrize = true});
  return permute(g, random_permutation(n, seed + 1)).graph;
}

TEST(PartitionOrdering, TurnsCommunitiesIntoIdRanges) {
  const Graph g = shuffled_communities(16, 256, 3);
  if (!metis_available()) {
    testing::expect_throw_naming<InvalidArgument>([&] { partition_ordering(g, 256); }, {"METIS"});
    GTEST_SKIP() << "built without METIS";
  }
  const auto order = partition_ordering(g, 256);
  EXPECT_NO_THROW(check_permutation(order, g.num_dst()));
  EXPECT_EQ(order, partition_ordering(g, 256));  // deterministic (METIS's fixed seed)
  // Shuffled, an edge spans a third of the ids on average; grouped, mostly its own range.
  const double before = mean_edge_distance(g), after = mean_edge_distance(permute(g, order).graph);
  EXPECT_LT(after, before / 4) << before << " -> " << after;
  // Ascending ids within a part: nodes of one part keep their relative order.
  const std::vector<int32_t> part = partition_nodes(g, {.parts = 16, .method = PartitionMethod::metis});
  for (int64_t v = 1; v < g.num_dst(); ++v)
    for (int64_t u = v - 1; u >= std::max<int64_t>(0, v - 4); --u)
      if (part[static_cast<size_t>(u)] == part[static_cast<size_t>(v)]) {
        EXPECT_LT(order[static_cast<size_t>(u)], order[static_cast<size_t>(v)]);
      }
}

TEST(PartitionOrdering, IsTheIdentityBelowTwoPartsAndChecksItsArguments) {
  const Graph g = testing::power_law_graph(300, 3000, 2);
  const auto identity = partition_ordering(g, 300);  // one part: no METIS call
  for (int64_t v = 0; v < 300; ++v) EXPECT_EQ(identity[static_cast<size_t>(v)], v);
  EXPECT_TRUE(partition_ordering(Graph()).empty());
  testing::expect_throw_naming<InvalidArgument>([&] { partition_ordering(g, 0); }, {"part_size", "0"});
  testing::expect_throw_naming<GraphError>(
      [&] {
        partition_ordering(Graph::from_csr(1, 2, {0, 1}, {1}));
      },
      {"partition_ordering", "square"});
}

TEST(Orderings, AreDeterministicAndNeedASquareGraph) {
  const Graph g = testing::power_law_graph(3000, 30000, 6);
  EXPECT_EQ(rcm_ordering(g), rcm_ordering(g));
  EXPECT_EQ(amd_ordering(g), amd_ordering(g));
  const Graph bipartite = Graph::from_csr(1, 2, {0, 1}, {1});
  testing::expect_throw_naming<GraphError>([&] { rcm_ordering(bipartite); }, {"rcm_ordering", "square"});
  testing::expect_throw_naming<GraphError>([&] { amd_ordering(bipartite); }, {"amd_ordering", "square"});
  testing::expect_throw_naming<GraphError>([&] { degree_ordering(bipartite); },
                                           {"degree_ordering", "square"});
  testing::expect_throw_naming<GraphError>([&] { locality(bipartite); }, {"locality", "square"});
}

}  // namespace
}  // namespace edgeattn
