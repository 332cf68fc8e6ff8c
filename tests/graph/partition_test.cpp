// Node partitions: every node in exactly one part, every part non-empty, ranges balanced by
// what they promise, METIS cutting fewer edges than contiguous ranges of a shuffled graph, and
// the quality figures checked against a direct count.
#include "edgeattn/graph/partition.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/build.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::expect_throw_naming;

void expect_valid(const std::vector<int32_t>& part, int64_t n, int64_t parts) {
  ASSERT_EQ(static_cast<int64_t>(part.size()), n);
  std::vector<int64_t> count(static_cast<size_t>(parts), 0);
  for (int32_t p : part) {
    ASSERT_GE(p, 0);
    ASSERT_LT(p, parts);
    ++count[static_cast<size_t>(p)];
  }
  for (int64_t c : count) EXPECT_GT(c, 0);
}

bool contiguous_ranges(const std::vector<int32_t>& part) { return std::is_sorted(part.begin(), part.end()); }

TEST(Partition, ContiguousSplitsNodeRangesEvenly) {
  const Graph g = testing::uniform_graph(103, 103, 600, 1);
  const auto part = partition_nodes(g, {.parts = 4, .method = PartitionMethod::contiguous});
  expect_valid(part, 103, 4);
  EXPECT_TRUE(contiguous_ranges(part));
  const auto q = partition_quality(g, part, 4);
  for (int64_t c : q.nodes) EXPECT_NEAR(static_cast<double>(c), 103.0 / 4, 1.0);
}

TEST(Partition, DegreeBalancedEvensOutSkewedWork) {
  const Graph g = testing::power_law_graph(400, 6000, 3);
  const auto part = partition_nodes(g, {.parts = 3, .method = PartitionMethod::degree_balanced});
  expect_valid(part, 400, 3);
  EXPECT_TRUE(contiguous_ranges(part));
  const auto balanced = partition_quality(g, part, 3);
  const auto plain =
      partition_quality(g, partition_nodes(g, {.parts = 3, .method = PartitionMethod::contiguous}), 3);
  // Work per part: in-edges + rows, within one row's worth of the ideal share.
  int64_t max_row = 0;
  for (int64_t i = 0; i < g.num_dst(); ++i) max_row = std::max(max_row, g.degree(i) + 1);
  const double ideal = static_cast<double>(g.num_edges() + g.num_dst()) / 3;
  for (int p = 0; p < 3; ++p)
    EXPECT_LE(std::abs(static_cast<double>(balanced.edges[p] + balanced.nodes[p]) - ideal),
              static_cast<double>(max_row));
  EXPECT_LE(balanced.edge_imbalance, plain.edge_imbalance);
}

TEST(Partition, OnePartOwnsEverythingAndAsManyPartsAsNodesWorks) {
  const Graph g = testing::four_node_graph();
  for (auto m : {PartitionMethod::contiguous, PartitionMethod::degree_balanced}) {
    EXPECT_EQ(partition_nodes(g, {.parts = 1, .method = m}), std::vector<int32_t>(4, 0));
    const auto part = partition_nodes(g, {.parts = 4, .method = m});
    EXPECT_EQ(part, (std::vector<int32_t>{0, 1, 2, 3}));
  }
}

TEST(Partition, QualityCountsCutEdgesAndDistinctHaloSources) {
  // row 0 <- {0, 1}, row 1 <- {0, 2}, row 2 <- {}, row 3 <- {1, 2, 3}; parts {0, 1} | {2, 3}
  const Graph g = testing::four_node_graph();
  const std::vector<int32_t> part{0, 0, 1, 1};
  const auto q = partition_quality(g, part, 2);
  EXPECT_EQ(q.edge_cut, 2);  // 1 <- 2 and 3 <- 1
  EXPECT_EQ(q.halo_nodes, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(q.nodes, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(q.edges, (std::vector<int64_t>{4, 3}));
  EXPECT_DOUBLE_EQ(q.halo_fraction, 0.5);
  EXPECT_DOUBLE_EQ(q.edge_imbalance, 4.0 / 3.5);
  EXPECT_DOUBLE_EQ(q.node_imbalance, 1.0);
  EXPECT_DOUBLE_EQ(partition_quality(g, std::vector<int32_t>{0, 1, 1, 1}, 2).node_imbalance, 1.5);
}

TEST(Partition, MetisCutsFewerEdgesThanRangesOfAShuffledCommunityGraph) {
  if (!metis_available()) GTEST_SKIP() << "built without METIS (libmetis-dev)";
  // Four dense communities whose ids are interleaved: ranges cut most edges, METIS few.
  const int64_t n = 400, parts = 4;
  std::vector<int64_t> src, dst;
  const Graph noise = testing::uniform_graph(n, n, 4000, 7);
  for (int64_t i = 0; i < n; ++i)
    for (int32_t j : noise.row(i))
      if (i % parts == j % parts) {
        src.push_back(j);
        dst.push_back(i);
      }
  const Graph g = build_graph(n, n, src, dst, {.symmetrize = true});
  const auto part = partition_nodes(g, {.parts = parts, .method = PartitionMethod::metis, .seed = 3});
  expect_valid(part, n, parts);
  EXPECT_EQ(part, partition_nodes(g, {.parts = parts, .method = PartitionMethod::metis, .seed = 3}))
      << "METIS with a fixed seed must be deterministic (every rank computes it)";
  const auto metis = partition_quality(g, part, parts);
  const auto ranges = partition_quality(
      g, partition_nodes(g, {.parts = parts, .method = PartitionMethod::contiguous}), parts);
  EXPECT_LT(metis.edge_cut * 4, ranges.edge_cut);
  EXPECT_LT(metis.edge_imbalance, 1.2);
}

TEST(Partition, MetisBalancesNodesAndEdgesTogetherOnASkewedGraph) {
  if (!metis_available()) GTEST_SKIP() << "built without METIS (libmetis-dev)";
  // Power-law in-degrees: one weight of nodes + edges would let the parts holding the hubs own
  // few nodes and the others many; both counts must come out near their mean.
  const Graph g = testing::power_law_graph(2000, 30000, 5);
  for (int64_t parts : {2, 3, 4}) {
    const auto part = partition_nodes(g, {.parts = parts, .method = PartitionMethod::metis, .seed = 1});
    expect_valid(part, g.num_dst(), parts);
    const auto q = partition_quality(g, part, parts);
    EXPECT_LE(q.node_imbalance, 1.06) << parts << " parts";
    EXPECT_LE(q.edge_imbalance, 1.06) << parts << " parts";
  }
}

TEST(Partition, BadInputsAreNamed) {
  const Graph g = testing::four_node_graph();
  expect_throw_naming<InvalidArgument>([&] { partition_nodes(g, {.parts = 5}); },
                                       {"parts is 5", "num_nodes = 4"});
  expect_throw_naming<InvalidArgument>([&] { partition_nodes(g, {.parts = 0}); }, {"parts is 0"});
  expect_throw_naming<GraphError>([&] { partition_nodes(testing::uniform_graph(3, 4, 5, 1), {.parts = 2}); },
                                  {"square"});
  expect_throw_naming<InvalidArgument>(
      [&] {
        partition_quality(g, std::vector<int32_t>{0, 1, 2, 0}, 2);
      },
      {"part[2] is 2"});
  expect_throw_naming<InvalidArgument>([&] { parse_partition_method("kway"); }, {"'kway'", "metis"});
  EXPECT_EQ(parse_partition_method("degree"), PartitionMethod::degree_balanced);
  if (!metis_available())
    expect_throw_naming<InvalidArgument>(
        [&] { partition_nodes(g, {.parts = 2, .method = PartitionMethod::metis}); }, {"METIS"});
}

}  // namespace
}  // namespace edgeattn
