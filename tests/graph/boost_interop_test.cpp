// Boost.Graph interop: Graph -> Boost CSR / adjacency_list and any Boost graph -> Graph.
#include "edgeattn/graph/boost_interop.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/range/iterator_range.hpp>
#include <string>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <class T>
std::vector<T> vec(std::span<const T> s) {
  return {s.begin(), s.end()};
}

void expect_same_csr(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.num_dst(), b.num_dst());
  EXPECT_EQ(a.num_src(), b.num_src());
  EXPECT_EQ(vec(a.row_ptr()), vec(b.row_ptr()));
  EXPECT_EQ(vec(a.col_idx()), vec(b.col_idx()));
}

// ---------------------------------------------------------------------------------------------
// Graph -> Boost
// ---------------------------------------------------------------------------------------------

TEST(BoostInterop, CsrGraphOutEdgesAreTheDestinationsAttendingToASource) {
  // rows: 0 <- {0, 1}, 1 <- {0, 2}, 2 <- {}, 3 <- {1, 2, 3}
  const auto bg = to_boost_csr(testing::four_node_graph());
  EXPECT_EQ(num_vertices(bg), 4u);
  EXPECT_EQ(num_edges(bg), 7u);
  std::vector<std::size_t> out1, in3;
  for (auto e : boost::make_iterator_range(out_edges(std::size_t{1}, bg))) out1.push_back(target(e, bg));
  for (auto e : boost::make_iterator_range(in_edges(std::size_t{3}, bg))) in3.push_back(source(e, bg));
  EXPECT_THAT(out1, ElementsAre(0, 3));
  std::sort(in3.begin(), in3.end());  // (UnorderedElementsAre needs libgmock, which tests do not link)
  EXPECT_THAT(in3, ElementsAre(1, 2, 3));
  EXPECT_EQ(in_degree(std::size_t{2}, bg), 0u);
}

TEST(BoostInterop, DirectedCsrGraphHasTheSameOutEdges) {
  const Graph g = testing::four_node_graph();
  const auto bg = to_boost_csr<boost::directedS>(g);
  EXPECT_EQ(num_edges(bg), 7u);
  std::vector<std::pair<std::size_t, std::size_t>> got;
  for (auto e : boost::make_iterator_range(edges(bg))) got.emplace_back(source(e, bg), target(e, bg));
  EXPECT_THAT(
      got, ElementsAre(std::pair<std::size_t, std::size_t>{0, 0}, std::pair<std::size_t, std::size_t>{0, 1},
                       std::pair<std::size_t, std::size_t>{1, 0}, std::pair<std::size_t, std::size_t>{1, 3},
                       std::pair<std::size_t, std::size_t>{2, 1}, std::pair<std::size_t, std::size_t>{2, 3},
                       std::pair<std::size_t, std::size_t>{3, 3}));
}

TEST(BoostInterop, AdjacencyListHasOneBoostEdgePerCsrEdge) {
  const auto al = to_boost_adjacency_list(testing::four_node_graph());
  EXPECT_EQ(num_vertices(al), 4u);
  EXPECT_EQ(num_edges(al), 7u);
  std::vector<std::size_t> out2;
  for (auto e : boost::make_iterator_range(out_edges(std::size_t{2}, al))) out2.push_back(target(e, al));
  std::sort(out2.begin(), out2.end());
  EXPECT_THAT(out2, ElementsAre(1, 3));
}

TEST(BoostInterop, BipartiteGraphsDoNotConvert) {
  const Graph g = Graph::from_csr(2, 3, {0, 1, 2}, {0, 2});
  try {
    (void)to_boost_csr(g);
    ADD_FAILURE() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_THAT(e.what(), HasSubstr("to_boost_csr"));
    EXPECT_THAT(e.what(), HasSubstr("num_dst=2, num_src=3"));
  }
  EXPECT_THROW((void)to_boost_adjacency_list(g), GraphError);
}

// ---------------------------------------------------------------------------------------------
// Round trips and Boost -> Graph
// ---------------------------------------------------------------------------------------------

TEST(BoostInterop, CsrRoundTripGivesTheSameGraph) {
  for (const Graph& g : {testing::four_node_graph(), testing::power_law_graph(500, 6000, 3),
                         testing::uniform_graph(300, 300, 2000, 4), Graph()}) {
    SCOPED_TRACE(g.describe());
    expect_same_csr(from_boost(to_boost_csr(g)), g);
    expect_same_csr(from_boost(to_boost_csr<boost::directedS>(g)), g);
    expect_same_csr(from_boost(to_boost_adjacency_list(g)), g);
  }
}

TEST(BoostInterop, RoundTripKeepsDuplicateEdgesUnderKeepPolicy) {
  const Graph g = Graph::from_csr(2, 2, {0, 3, 3}, {1, 0, 1}, CsrCheck::sort);  // row 0 <- {0, 1, 1}
  expect_same_csr(from_boost(to_boost_csr(g), {.duplicates = Duplicates::keep}), g);
  EXPECT_EQ(from_boost(to_boost_csr(g)).num_edges(), 2) << "default policy merges";
}

TEST(BoostInterop, HandBuiltAdjacencyListBecomesTheExpectedCsr) {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> al(3);
  boost::add_edge(0, 1, al);  // 1 attends to 0
  boost::add_edge(2, 1, al);
  boost::add_edge(1, 2, al);
  const Graph g = from_boost(al);
  expect_same_csr(g, Graph::from_csr(3, 3, {0, 0, 2, 3}, {0, 2, 1}));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(0, 2, 1));
}

TEST(BoostInterop, UndirectedBoostGraphGivesBothDirections) {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS> ug(3);
  boost::add_edge(0, 1, ug);
  boost::add_edge(1, 2, ug);
  boost::add_edge(2, 2, ug);  // a self-loop appears once
  const Graph g = from_boost(ug);
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 1, 3, 5));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(1, 0, 2, 1, 2));
  // Input pairs k: 0->1, 1->0, 1->2, 2->1, 2->2; CSR order (dst, src): (0,1) (1,0) (1,2) (2,1) (2,2).
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(1, 0, 3, 2, 4));
}

TEST(BoostInterop, ListStorageGraphUsesItsVertexIndexProperty) {
  using G = boost::adjacency_list<boost::listS, boost::listS, boost::directedS,
                                  boost::property<boost::vertex_index_t, int>>;
  G g;
  std::vector<boost::graph_traits<G>::vertex_descriptor> v;
  for (int i = 0; i < 3; ++i) v.push_back(boost::add_vertex(g));
  // Index vertices in reverse creation order, so a wrong index map would be visible.
  for (int i = 0; i < 3; ++i) boost::put(boost::vertex_index, g, v[static_cast<std::size_t>(i)], 2 - i);
  boost::add_edge(v[0], v[1], g);  // index 2 -> index 1
  boost::add_edge(v[2], v[0], g);  // index 0 -> index 2
  const Graph out = from_boost(g);
  expect_same_csr(out, Graph::from_csr(3, 3, {0, 0, 1, 2}, {2, 0}));
}

TEST(BoostInterop, FromBoostAppliesBuildOptions) {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> al(3);
  boost::add_edge(0, 1, al);
  boost::add_edge(1, 1, al);
  const Graph g = from_boost(al, {.self_loops = SelfLoops::add, .symmetrize = true});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 2, 4, 5));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 1, 0, 1, 2));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(2, -1));
}

}  // namespace
}  // namespace edgeattn
