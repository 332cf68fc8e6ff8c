#include "edgeattn/graph/components.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/build.hpp"
#include "support/expect_error.hpp"

namespace edgeattn {
namespace {

using I64 = std::vector<int64_t>;

// Components (weak): {0, 1, 2} by 0 -> 1 and 2 -> 1 (no path along directions from 0 to 2),
// {3, 4} by 4 -> 3, {5} isolated, {6, 7, 8} a directed triangle, {9, 10} by 10 -> 9.
Graph five_components() {
  const I64 src = {0, 2, 4, 6, 7, 8, 10};
  const I64 dst = {1, 1, 3, 7, 8, 6, 9};
  return build_graph(11, 11, src, dst);
}

TEST(ConnectedComponents, NumbersComponentsByTheirSmallestNodeIgnoringDirection) {
  const Components cc = connected_components(five_components());
  EXPECT_EQ(cc.count, 5);
  EXPECT_EQ(cc.component, (std::vector<int32_t>{0, 0, 0, 1, 1, 2, 3, 3, 3, 4, 4}));
  EXPECT_EQ(cc.size, (I64{3, 2, 1, 3, 2}));
}

TEST(LargestConnectedComponent, BreaksTiesTowardTheSmallestNodeId) {
  EXPECT_EQ(largest_connected_component(five_components()), (I64{0, 1, 2}));
}

TEST(LargestConnectedComponent, FindsALargerComponentAtHigherIds) {
  const I64 src = {0, 2, 4, 6, 7, 8, 10, 11};
  const I64 dst = {1, 1, 3, 7, 8, 6, 9, 6};  // node 11 joins the triangle
  EXPECT_EQ(largest_connected_component(build_graph(12, 12, src, dst)), (I64{6, 7, 8, 11}));
}

TEST(ConnectedComponents, CountsEveryIsolatedNodeAndIgnoresSelfLoops) {
  const Graph g = Graph::from_csr(3, 3, {0, 1, 1, 2}, {0, 2});  // loop on 0, edge 2 -> 2
  const Components cc = connected_components(g);
  EXPECT_EQ(cc.count, 3);
  EXPECT_EQ(cc.size, (I64{1, 1, 1}));
  EXPECT_EQ(largest_connected_component(g), (I64{0}));
}

TEST(ConnectedComponents, FollowsALongPathWithoutRecursionTrouble) {
  const int64_t n = 200000;
  I64 src, dst;
  for (int64_t i = 0; i + 1 < n; ++i) {
    src.push_back(i + 1);
    dst.push_back(i);
  }
  const Components cc = connected_components(build_graph(n, n, src, dst));
  EXPECT_EQ(cc.count, 1);
  EXPECT_EQ(cc.size, (I64{n}));
}

TEST(ConnectedComponents, HandlesTheEmptyGraphAndRejectsBipartiteOnes) {
  EXPECT_EQ(connected_components(Graph()).count, 0);
  EXPECT_TRUE(largest_connected_component(Graph()).empty());
  const Graph bipartite = Graph::from_csr(1, 2, {0, 1}, {1});
  testing::expect_throw_naming<GraphError>([&] { connected_components(bipartite); },
                                           {"connected_components", "num_dst=1", "num_src=2"});
}

}  // namespace
}  // namespace edgeattn
