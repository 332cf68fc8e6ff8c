#include "edgeattn/graph/transforms.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/build.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::expect_throw_naming;
using testing::four_node_graph;
using I64 = std::vector<int64_t>;
using I32 = std::vector<int32_t>;

// four_node_graph's CSR edges (dst <- src): e0 0<-0, e1 0<-1, e2 1<-0, e3 1<-2, e4 3<-1, e5 3<-2,
// e6 3<-3; row 2 is empty.

I64 ptr(const Graph& g) { return {g.row_ptr().begin(), g.row_ptr().end()}; }
I32 cols(const Graph& g) { return {g.col_idx().begin(), g.col_idx().end()}; }

std::set<std::pair<int64_t, int64_t>> edge_set(const Graph& g) {
  std::set<std::pair<int64_t, int64_t>> s;
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (int32_t j : g.row(i)) s.emplace(i, j);
  return s;
}

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

TEST(AddSelfLoops, AddsALoopOnlyWhereOneIsMissing) {
  const TransformedGraph t = add_self_loops(four_node_graph());
  EXPECT_EQ(ptr(t.graph), (I64{0, 2, 5, 6, 9}));
  EXPECT_EQ(cols(t.graph), (I32{0, 1, 0, 1, 2, 2, 1, 2, 3}));
  EXPECT_EQ(t.old_edge, (I64{0, 1, 2, -1, 3, -1, 4, 5, 6}));
}

TEST(RemoveSelfLoops, DropsEveryLoopAndKeepsTheOtherEdgesPositions) {
  const TransformedGraph t = remove_self_loops(four_node_graph());
  EXPECT_EQ(ptr(t.graph), (I64{0, 1, 3, 3, 5}));
  EXPECT_EQ(cols(t.graph), (I32{1, 0, 2, 1, 2}));
  EXPECT_EQ(t.old_edge, (I64{1, 2, 3, 4, 5}));
}

TEST(RemoveSelfLoops, DropsRepeatedLoopsToo) {
  const Graph g = Graph::from_csr(2, 2, {0, 3, 3}, {0, 0, 1}, CsrCheck::sort);  // two loops on node 0
  const TransformedGraph t = remove_self_loops(g);
  EXPECT_EQ(cols(t.graph), (I32{1}));
  EXPECT_EQ(t.old_edge, (I64{2}));
}

TEST(ToUndirected, AddsMissingReverseEdgesAndMapsBothDirections) {
  const UndirectedGraph u = to_undirected(four_node_graph());
  EXPECT_EQ(ptr(u.graph), (I64{0, 2, 5, 7, 10}));
  EXPECT_EQ(cols(u.graph), (I32{0, 1, 0, 2, 3, 1, 3, 1, 2, 3}));
  EXPECT_EQ(u.old_edge, (I64{0, 1, 2, 3, -1, -1, -1, 4, 5, 6}));
  EXPECT_EQ(u.old_reverse_edge, (I64{0, 2, 1, -1, 4, 3, 5, -1, -1, 6}));
  EXPECT_TRUE(is_symmetric(u.graph));
  EXPECT_FALSE(is_symmetric(four_node_graph()));
}

TEST(ToUndirected, MergesRepeatedEdgesIntoTheFirst) {
  const Graph g = Graph::from_csr(2, 2, {0, 2, 2}, {1, 1}, CsrCheck::sort);  // 0 <- 1 twice
  const UndirectedGraph u = to_undirected(g);
  EXPECT_EQ(ptr(u.graph), (I64{0, 1, 2}));
  EXPECT_EQ(cols(u.graph), (I32{1, 0}));
  EXPECT_EQ(u.old_edge, (I64{0, -1}));
  EXPECT_EQ(u.old_reverse_edge, (I64{-1, 0}));
}

TEST(ToUndirected, MatchesTheUnionWithTheReverseOnARandomGraph) {
  const Graph g = testing::power_law_graph(300, 2000, 5);
  const UndirectedGraph u = to_undirected(g);
  const auto original = edge_set(g);
  auto expected = original;
  for (const auto& [i, j] : original) expected.emplace(j, i);
  EXPECT_EQ(edge_set(u.graph), expected);
  EXPECT_EQ(u.graph.num_edges(), static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < u.graph.num_dst(); ++i)
    for (int64_t p = u.graph.row_ptr()[static_cast<size_t>(i)];
         p < u.graph.row_ptr()[static_cast<size_t>(i) + 1]; ++p) {
      const int64_t j = u.graph.col_idx()[static_cast<size_t>(p)];
      const int64_t o = u.old_edge[static_cast<size_t>(p)], r = u.old_reverse_edge[static_cast<size_t>(p)];
      EXPECT_EQ(o >= 0, original.contains({i, j}));
      if (o >= 0) {
        EXPECT_EQ(g.col_idx()[static_cast<size_t>(o)], j);
      }
      if (r >= 0) {
        EXPECT_EQ(g.col_idx()[static_cast<size_t>(r)], i);
      }
      EXPECT_TRUE(o >= 0 || r >= 0);
    }
}

TEST(Permute, MovesEveryEdgeToItsNewEndpoints) {
  const TransformedGraph t = permute(four_node_graph(), I64{2, 0, 3, 1});
  EXPECT_EQ(ptr(t.graph), (I64{0, 2, 5, 7, 7}));
  EXPECT_EQ(cols(t.graph), (I32{2, 3, 0, 1, 3, 0, 2}));
  EXPECT_EQ(t.old_edge, (I64{2, 3, 4, 6, 5, 1, 0}));
}

TEST(Permute, ThenTheInverseGivesBackTheGraph) {
  const Graph g = testing::power_law_graph(500, 4000, 9);
  const auto perm = random_permutation(500, 3);
  const TransformedGraph t = permute(g, perm);
  const auto old_of_new = invert_permutation(perm);
  // Each new edge i <- j sits at the old position of old_of_new[i] <- old_of_new[j].
  for (int64_t i = 0; i < t.graph.num_dst(); ++i)
    for (int64_t p = t.graph.row_ptr()[static_cast<size_t>(i)];
         p < t.graph.row_ptr()[static_cast<size_t>(i) + 1]; ++p) {
      const int64_t o = t.old_edge[static_cast<size_t>(p)];
      const auto old_row = g.row(old_of_new[static_cast<size_t>(i)]);
      const int64_t old_start = g.row_ptr()[static_cast<size_t>(old_of_new[static_cast<size_t>(i)])];
      ASSERT_GE(o - old_start, 0);
      ASSERT_LT(o - old_start, static_cast<int64_t>(old_row.size()));
      EXPECT_EQ(g.col_idx()[static_cast<size_t>(o)],
                old_of_new[static_cast<size_t>(t.graph.col_idx()[static_cast<size_t>(p)])]);
    }
  const TransformedGraph back = permute(t.graph, old_of_new);
  EXPECT_EQ(ptr(back.graph), ptr(g));
  EXPECT_EQ(cols(back.graph), cols(g));
}

TEST(Permute, GivesTheSameResultOnOneAndTwoThreads) {
  const Graph g = testing::power_law_graph(20000, 200000, 2);
  const auto perm = random_permutation(20000, 8);
  TransformedGraph one, two;
  {
    ThreadLimit limit(1);
    one = permute(g, perm);
  }
  {
    ThreadLimit limit(2);
    two = permute(g, perm);
  }
  EXPECT_EQ(cols(one.graph), cols(two.graph));
  EXPECT_EQ(one.old_edge, two.old_edge);
}

TEST(Permute, RejectsWhatIsNotAPermutation) {
  expect_throw_naming<GraphError>(
      [] {
        permute(four_node_graph(), I64{0, 0, 1, 2});
      },
      {"new_of_old[1]", "0", "permutation"});
  expect_throw_naming<GraphError>(
      [] {
        permute(four_node_graph(), I64{0, 1, 2, 4});
      },
      {"new_of_old[3]", "4", "[0, 4)"});
  expect_throw_naming<GraphError>([] { permute(four_node_graph(), I64{0, 1, 2}); }, {"3 entries", "4"});
}

TEST(InducedSubgraph, KeepsTheEdgesBetweenTheChosenNodesInTheGivenOrder) {
  const TransformedGraph t = induced_subgraph(four_node_graph(), I64{3, 1});
  EXPECT_EQ(ptr(t.graph), (I64{0, 2, 2}));
  EXPECT_EQ(cols(t.graph), (I32{0, 1}));
  EXPECT_EQ(t.old_edge, (I64{6, 4}));

  const TransformedGraph sorted = induced_subgraph(four_node_graph(), I64{0, 1, 2});
  EXPECT_EQ(ptr(sorted.graph), (I64{0, 2, 4, 4}));
  EXPECT_EQ(cols(sorted.graph), (I32{0, 1, 0, 2}));
  EXPECT_EQ(sorted.old_edge, (I64{0, 1, 2, 3}));
}

TEST(InducedSubgraph, RejectsRepeatedOrOutOfRangeNodes) {
  expect_throw_naming<GraphError>(
      [] {
        induced_subgraph(four_node_graph(), I64{1, 3, 1});
      },
      {"nodes[2]", "1", "distinct"});
  expect_throw_naming<GraphError>([] { induced_subgraph(four_node_graph(), I64{-1}); }, {"nodes[0]", "-1"});
}

TEST(Transforms, NeedASquareGraph) {
  const Graph bipartite = Graph::from_csr(2, 3, {0, 1, 2}, {2, 0});
  expect_throw_naming<GraphError>([&] { add_self_loops(bipartite); },
                                  {"add_self_loops", "num_dst=2", "num_src=3"});
  expect_throw_naming<GraphError>([&] { remove_self_loops(bipartite); }, {"remove_self_loops", "square"});
  expect_throw_naming<GraphError>([&] { to_undirected(bipartite); }, {"to_undirected", "square"});
  expect_throw_naming<GraphError>([&] { permute(bipartite, I64{0, 1}); }, {"permute", "square"});
  expect_throw_naming<GraphError>([&] { induced_subgraph(bipartite, I64{0}); },
                                  {"induced_subgraph", "square"});
  EXPECT_FALSE(is_symmetric(bipartite));
}

TEST(Transforms, HandleTheEmptyGraph) {
  EXPECT_EQ(add_self_loops(Graph()).graph.num_edges(), 0);
  EXPECT_EQ(to_undirected(Graph()).graph.num_dst(), 0);
  EXPECT_EQ(permute(Graph(), I64{}).graph.num_dst(), 0);
  EXPECT_EQ(induced_subgraph(four_node_graph(), I64{}).graph.num_dst(), 0);
}

TEST(InvertPermutation, InvertsAndValidates) {
  EXPECT_EQ(invert_permutation(I64{2, 0, 3, 1}), (I64{1, 3, 0, 2}));
  expect_throw_naming<GraphError>([] { invert_permutation(I64{1, 1}); }, {"perm[1]", "permutation"});
}

}  // namespace
}  // namespace edgeattn
