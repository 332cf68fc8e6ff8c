// Graph: CSR validation, the cached transpose / degree stats / partition, and balanced_row_chunks.
#include "edgeattn/graph/graph.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/build.hpp"
#include "graph/transpose_edges.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

template <class T>
std::vector<T> vec(std::span<const T> s) {
  return {s.begin(), s.end()};
}

// The transpose's edge ids as 64-bit values, whichever width the graph stores.
std::vector<int64_t> ids(const TransposeEdges& t) {
  std::vector<int64_t> out(t.size());
  for (size_t p = 0; p < t.size(); ++p) out[p] = t[p];
  return out;
}

using testing::expect_throw_naming;

// ---------------------------------------------------------------------------------------------
// API and shapes
// ---------------------------------------------------------------------------------------------

TEST(Graph, DefaultGraphIsEmptyEverywhere) {
  const Graph g;
  EXPECT_EQ(g.num_dst(), 0);
  EXPECT_EQ(g.num_src(), 0);
  EXPECT_EQ(g.num_edges(), 0);
  EXPECT_EQ(g.density(), 0.0);
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0));
  EXPECT_TRUE(g.col_idx().empty());
  EXPECT_TRUE(g.input_edge_of_csr().empty());
  EXPECT_TRUE(g.csr_edge_of_input().empty());
  EXPECT_THAT(g.transpose().col_ptr, ElementsAre(0));
  EXPECT_TRUE(g.transpose().row_idx.empty());
  EXPECT_EQ(g.transpose_edges().size(), 0u);
  EXPECT_THAT(vec(g.partition()), ElementsAre(0));
  EXPECT_EQ(g.degree_stats().max_degree, 0);
  EXPECT_EQ(g.degree_stats().isolated_rows, 0);
  EXPECT_EQ(g.describe(), "Graph(num_dst=0, num_src=0, num_edges=0)");
}

TEST(Graph, ZeroByZeroFromCsrMatchesDefault) {
  const Graph g = Graph::from_csr(0, 0, {0}, {});
  EXPECT_EQ(g.num_edges(), 0);
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0));
  EXPECT_THAT(g.transpose().col_ptr, ElementsAre(0));
  EXPECT_THAT(vec(g.partition()), ElementsAre(0));
  EXPECT_EQ(g.degree_stats().mean_degree, 0.0);
}

TEST(Graph, RowsWithoutSourcesOrSourcesWithoutEdgesAreFine) {
  const Graph g = Graph::from_csr(3, 2, {0, 0, 0, 0}, {});
  EXPECT_EQ(g.num_edges(), 0);
  EXPECT_EQ(g.degree(2), 0);
  EXPECT_TRUE(g.row(1).empty());
  EXPECT_THAT(g.transpose().col_ptr, ElementsAre(0, 0, 0));
  EXPECT_EQ(g.degree_stats().isolated_rows, 3);
  EXPECT_THAT(vec(g.partition()), ElementsAre(0, 3));
}

TEST(Graph, DescribeNamesShapeAndEdges) {
  const Graph g = Graph::from_csr(2, 5, {0, 3, 4}, {0, 2, 4, 1});
  EXPECT_EQ(g.describe(), "Graph(num_dst=2, num_src=5, num_edges=4)");
  EXPECT_DOUBLE_EQ(g.density(), 0.4);
}

TEST(Graph, CopiesShareStorageAndCaches) {
  const Graph g = testing::four_node_graph();
  const Graph copy = g;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(copy.row_ptr().data(), g.row_ptr().data());
  EXPECT_EQ(&copy.transpose(), &g.transpose());
  const Graph mapped = g.with_input_maps({6, 5, 4, 3, 2, 1, 0}, {6, 5, 4, 3, 2, 1, 0});
  EXPECT_EQ(mapped.col_idx().data(), g.col_idx().data());
  EXPECT_EQ(&mapped.transpose(), &g.transpose());
  EXPECT_EQ(&mapped.degree_stats(), &g.degree_stats());
  EXPECT_THAT(vec(mapped.input_edge_of_csr()), ElementsAre(6, 5, 4, 3, 2, 1, 0));
  EXPECT_TRUE(g.input_edge_of_csr().empty()) << "the original keeps its (absent) maps";
}

TEST(Graph, RowAndDegreeRejectOutOfRangeRows) {
  const Graph g = testing::four_node_graph();
  expect_throw_naming<InvalidArgument>([&] { (void)g.row(4); }, {"Graph::row", "i is 4", "[0, 4)"});
  expect_throw_naming<InvalidArgument>([&] { (void)g.row(-1); }, {"i is -1"});
  expect_throw_naming<InvalidArgument>([&] { (void)g.degree(7); }, {"Graph::degree", "i is 7"});
}

// ---------------------------------------------------------------------------------------------
// from_csr validation: every invalid input raises GraphError naming the field
// ---------------------------------------------------------------------------------------------

TEST(GraphFromCsr, RejectsNegativeCounts) {
  expect_throw_naming<GraphError>([] { Graph::from_csr(-1, 3, {0}, {}); }, {"num_dst is -1"});
  expect_throw_naming<GraphError>([] { Graph::from_csr(1, -2, {0, 0}, {}); }, {"num_src is -2"});
}

TEST(GraphFromCsr, RejectsCountsBeyondInt32Columns) {
  expect_throw_naming<GraphError>([] { Graph::from_csr(0, int64_t{1} << 32, {0}, {}); },
                                  {"num_src is 4294967296"});
  expect_throw_naming<GraphError>([] { Graph::from_csr(int64_t{1} << 31, 1, {0}, {}); },
                                  {"num_dst is 2147483648"});
}

TEST(GraphFromCsr, RejectsRowPtrOfWrongLength) {
  expect_throw_naming<GraphError>(
      [] {
        Graph::from_csr(3, 3, {0, 1, 2}, {0, 1});
      },
      {"row_ptr has 3 entries", "num_dst + 1 = 4"});
}

TEST(GraphFromCsr, RejectsRowPtrNotStartingAtZero) {
  expect_throw_naming<GraphError>([] { Graph::from_csr(2, 2, {1, 1, 2}, {0, 1}); }, {"row_ptr[0] is 1"});
}

TEST(GraphFromCsr, RejectsDecreasingRowPtr) {
  expect_throw_naming<GraphError>(
      [] {
        Graph::from_csr(3, 3, {0, 2, 1, 2}, {0, 1});
      },
      {"row_ptr[2] is 1", "row_ptr[1] = 2"});
}

TEST(GraphFromCsr, RejectsRowPtrEndNotMatchingColumns) {
  expect_throw_naming<GraphError>(
      [] {
        Graph::from_csr(2, 2, {0, 1, 2}, {0, 1, 1});
      },
      {"row_ptr[num_dst=2] is 2", "col_idx.size() = 3"});
}

TEST(GraphFromCsr, RejectsColumnsOutOfRange) {
  expect_throw_naming<GraphError>(
      [] {
        Graph::from_csr(2, 3, {0, 1, 2}, {0, 3});
      },
      {"col_idx[1] is 3", "num_src=3"});
  expect_throw_naming<GraphError>([] { Graph::from_csr(2, 3, {0, 1, 2}, {-1, 0}); }, {"col_idx[0] is -1"});
}

TEST(GraphFromCsr, RequireSortedRejectsUnsortedRowNamingRowAndPosition) {
  expect_throw_naming<GraphError>(
      [] {
        Graph::from_csr(2, 3, {0, 1, 3}, {0, 2, 1});
      },
      {"row 1", "col_idx[1] = 2", "col_idx[2] = 1"});
}

TEST(GraphFromCsr, RequireSortedRejectsDuplicateColumns) {
  expect_throw_naming<GraphError>(
      [] {
        Graph::from_csr(1, 3, {0, 3}, {0, 2, 2});
      },
      {"row 0", "col_idx[1] = 2", "col_idx[2] = 2"});
}

TEST(GraphFromCsr, RejectsInputMapOfWrongLengthOrBelowMinusOne) {
  expect_throw_naming<GraphError>(
      [] {
        Graph::from_csr(1, 2, {0, 2}, {0, 1}, CsrCheck::require_sorted, {0});
      },
      {"input_edge_of_csr has 1 entries", "num_edges = 2"});
  expect_throw_naming<GraphError>(
      [] {
        Graph::from_csr(1, 2, {0, 2}, {0, 1}, CsrCheck::require_sorted, {0, -2});
      },
      {"input_edge_of_csr[1] is -2"});
}

TEST(GraphWithInputMaps, RejectsMapsOutOfRange) {
  const Graph g = testing::four_node_graph();  // 7 edges
  expect_throw_naming<GraphError>(
      [&] {
        (void)g.with_input_maps({0, 1}, {});
      },
      {"input_edge_of_csr has 2 entries"});
  expect_throw_naming<GraphError>(
      [&] {
        (void)g.with_input_maps({}, {0, 7});
      },
      {"csr_edge_of_input[1] is 7"});
  expect_throw_naming<GraphError>(
      [&] {
        (void)g.with_input_maps({0, 1, 2, -1, -1, -1, 9}, {0, 1, 2});
      },
      {"input_edge_of_csr[6] is 9"});
}

// ---------------------------------------------------------------------------------------------
// Hand-checked small graphs
// ---------------------------------------------------------------------------------------------

TEST(Graph, HeaderExampleHasTheDocumentedRowsAndTranspose) {
  // edges 0->1, 2->1, 1->2; node 0 attends to nothing
  const Graph g = Graph::from_csr(3, 3, {0, 0, 2, 3}, {0, 2, 1});
  EXPECT_THAT(vec(g.row(1)), ElementsAre(0, 2));
  EXPECT_EQ(g.degree(0), 0);
  const Transpose& t = g.transpose();
  EXPECT_THAT(t.col_ptr, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(t.row_idx, ElementsAre(1, 2, 1));
  EXPECT_THAT(ids(g.transpose_edges()), ElementsAre(0, 2, 1));
}

TEST(Graph, FourNodeGraphTransposeIsExact) {
  // rows: 0 <- {0, 1}, 1 <- {0, 2}, 2 <- {}, 3 <- {1, 2, 3}
  const Graph g = testing::four_node_graph();
  const Transpose& t = g.transpose();
  EXPECT_THAT(t.col_ptr, ElementsAre(0, 2, 4, 6, 7));
  EXPECT_THAT(t.row_idx, ElementsAre(0, 1, 0, 3, 1, 3, 3));
  EXPECT_THAT(ids(g.transpose_edges()), ElementsAre(0, 2, 1, 4, 3, 5, 6));
}

TEST(Graph, FourNodeGraphDegreeStatsAreExact) {
  const Graph g = testing::four_node_graph();
  const DegreeStats& d = g.degree_stats();  // valid while g (or a copy) lives
  EXPECT_EQ(d.min_degree, 0);
  EXPECT_EQ(d.max_degree, 3);
  EXPECT_DOUBLE_EQ(d.mean_degree, 7.0 / 4.0);
  EXPECT_EQ(d.isolated_rows, 1);
  EXPECT_EQ(d.self_loops, 2);  // (0, 0) and (3, 3)
  EXPECT_EQ(d.duplicate_edges, 0);
  EXPECT_EQ(d.row_extent, 2 + 3 + 3);  // hulls [0, 1], [0, 2], [1, 3]; row 2 is empty
}

TEST(Graph, BipartiteTransposeHasOneColumnPerSource) {
  const Graph g = Graph::from_csr(2, 5, {0, 3, 4}, {0, 2, 4, 1});
  const Transpose& t = g.transpose();
  EXPECT_THAT(t.col_ptr, ElementsAre(0, 1, 2, 3, 3, 4));
  EXPECT_THAT(t.row_idx, ElementsAre(0, 1, 0, 0));
  EXPECT_THAT(ids(g.transpose_edges()), ElementsAre(0, 3, 1, 2));
  const DegreeStats& d = g.degree_stats();
  EXPECT_EQ(d.min_degree, 1);
  EXPECT_EQ(d.max_degree, 3);
  EXPECT_EQ(d.self_loops, 2);  // (0, 0) and (1, 1)
}

TEST(GraphFromCsr, SortReordersRowsAndRecordsOriginalPositions) {
  const Graph g = Graph::from_csr(2, 3, {0, 3, 5}, {2, 0, 1, 1, 1}, CsrCheck::sort);
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 1, 2, 1, 1));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(1, 2, 0, 3, 4));
  EXPECT_TRUE(g.csr_edge_of_input().empty());
}

TEST(GraphFromCsr, DegreeStatsCountTheDuplicatesASortKeeps) {
  const Graph g = Graph::from_csr(2, 3, {0, 3, 5}, {2, 0, 1, 1, 1}, CsrCheck::sort);
  EXPECT_EQ(g.degree_stats().duplicate_edges, 1);  // row 1: {1, 1}
  EXPECT_EQ(g.degree_stats().row_extent, 3 + 1);
}

TEST(GraphFromCsr, SortIsStableAndPermutesTheGivenMap) {
  const Graph g = Graph::from_csr(2, 3, {0, 1, 5}, {0, 2, 1, 2, 1}, CsrCheck::sort, {10, 11, 12, 13, 14});
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 1, 1, 2, 2));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(10, 12, 14, 11, 13));
}

TEST(GraphFromCsr, SortOfSortedRowsAddsNoMap) {
  const Graph g = Graph::from_csr(2, 3, {0, 2, 4}, {0, 2, 1, 1}, CsrCheck::sort);
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 2, 1, 1));
  EXPECT_TRUE(g.input_edge_of_csr().empty());
}

TEST(BalancedRowChunks, ClosesAChunkWhenTargetIsReached) {
  // row costs (edges + 1): 4, 1, 1, 8
  const std::vector<int64_t> offsets = {0, 3, 3, 3, 10};
  EXPECT_THAT(balanced_row_chunks(offsets, 5), ElementsAre(0, 2, 4));
  EXPECT_THAT(balanced_row_chunks(offsets, 1), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(balanced_row_chunks(offsets, 1000), ElementsAre(0, 4));
  EXPECT_THAT(balanced_row_chunks(std::vector<int64_t>{0}, 3), ElementsAre(0));
}

TEST(BalancedRowChunks, RejectsBadArguments) {
  const std::vector<int64_t> offsets = {0, 3, 2};
  expect_throw_naming<InvalidArgument>([&] { balanced_row_chunks(offsets, 0); }, {"target is 0"});
  expect_throw_naming<InvalidArgument>([&] { balanced_row_chunks(std::vector<int64_t>{}, 4); },
                                       {"row_offset"});
  expect_throw_naming<InvalidArgument>([&] { balanced_row_chunks(offsets, 4); }, {"row_offset[2] is 2"});
}

TEST(Graph, SmallGraphPartitionIsOneChunk) {
  EXPECT_THAT(vec(testing::four_node_graph().partition()), ElementsAre(0, 4));
}

// ---------------------------------------------------------------------------------------------
// Random graphs against brute force
// ---------------------------------------------------------------------------------------------

std::vector<Graph> random_graphs() {
  return {testing::uniform_graph(50, 50, 400, 1), testing::uniform_graph(30, 70, 500, 2),
          testing::uniform_graph(90, 10, 300, 3), testing::uniform_graph(200, 200, 50, 4),
          testing::power_law_graph(300, 3000, 5), testing::power_law_graph(1000, 20000, 6)};
}

// edges_first: ask for transpose_edges() before transpose(), which then builds both in one sort.
void expect_transpose_matches_brute_force(const Graph& g, bool edges_first = false) {
  SCOPED_TRACE(g.describe() + (edges_first ? ", edge ids first" : ", transpose first"));
  if (edges_first) (void)g.transpose_edges();
  // Brute force: the edges of each source, as (dst, CSR position), from a map.
  std::map<int32_t, std::vector<std::pair<int32_t, int64_t>>> by_src;
  const auto rp = g.row_ptr();
  const auto ci = g.col_idx();
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (int64_t e = rp[static_cast<size_t>(i)]; e < rp[static_cast<size_t>(i) + 1]; ++e)
      by_src[ci[static_cast<size_t>(e)]].emplace_back(static_cast<int32_t>(i), e);

  const Transpose& t = g.transpose();
  ASSERT_EQ(t.col_ptr.size(), static_cast<size_t>(g.num_src()) + 1);
  ASSERT_EQ(t.row_idx.size(), static_cast<size_t>(g.num_edges()));
  const auto edges = g.transpose_edges();
  ASSERT_EQ(edges.size(), static_cast<size_t>(g.num_edges()));
  EXPECT_EQ(t.col_ptr.front(), 0);
  std::vector<int> seen(static_cast<size_t>(g.num_edges()), 0);
  for (int32_t j = 0; j < g.num_src(); ++j) {
    const auto& expected = by_src[j];
    const int64_t b = t.col_ptr[static_cast<size_t>(j)], e = t.col_ptr[static_cast<size_t>(j) + 1];
    ASSERT_EQ(e - b, static_cast<int64_t>(expected.size())) << "source " << j;
    for (int64_t p = b; p < e; ++p) {
      const auto [want_dst, want_edge] = expected[static_cast<size_t>(p - b)];
      EXPECT_EQ(t.row_idx[static_cast<size_t>(p)], want_dst);
      EXPECT_EQ(edges[static_cast<size_t>(p)], want_edge);
      // The permutation points to a CSR edge with the same (dst, src).
      const int64_t csr = edges[static_cast<size_t>(p)];
      EXPECT_EQ(ci[static_cast<size_t>(csr)], j);
      EXPECT_GE(csr, rp[static_cast<size_t>(t.row_idx[static_cast<size_t>(p)])]);
      EXPECT_LT(csr, rp[static_cast<size_t>(t.row_idx[static_cast<size_t>(p)]) + 1]);
      ++seen[static_cast<size_t>(csr)];
      if (p > b) {
        EXPECT_LE(t.row_idx[static_cast<size_t>(p) - 1], t.row_idx[static_cast<size_t>(p)]);
      }
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; })) << "edge is a permutation";
}

TEST(GraphRandom, TransposeMatchesBruteForce) {
  for (const Graph& g : random_graphs()) expect_transpose_matches_brute_force(g);
}

// Asked for first, the edge ids come with the transpose from one sort: the same arrays as the
// two sorts give (fresh graphs: the caches are per graph).
TEST(GraphRandom, TransposeWithEdgeIdsFromOneSortMatchesTwoSorts) {
  const std::vector<Graph> one = random_graphs(), two = random_graphs();
  for (size_t k = 0; k < one.size(); ++k) {
    expect_transpose_matches_brute_force(one[k], /*edges_first=*/true);
    (void)two[k].transpose();
    EXPECT_EQ(one[k].transpose().col_ptr, two[k].transpose().col_ptr);
    EXPECT_EQ(one[k].transpose().row_idx, two[k].transpose().row_idx);
    EXPECT_EQ(ids(one[k].transpose_edges()), ids(two[k].transpose_edges()));
  }
}

// Threads racing for the transpose and its edge ids, in either order, all see one result.
TEST(GraphRandom, TransposeAndEdgeIdsRacingThreadsAgree) {
  const Graph reference = testing::power_law_graph(1000, 20000, 6);
  const Transpose want = reference.transpose();
  const std::vector<int64_t> want_edges = ids(reference.transpose_edges());
  for (int round = 0; round < 8; ++round) {
    const Graph g = testing::power_law_graph(1000, 20000, 6);  // fresh caches
    std::vector<std::thread> threads;
    std::vector<const Transpose*> seen(4);
    std::vector<std::vector<int64_t>> seen_edges(4);
    for (size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        if ((t + static_cast<size_t>(round)) % 2 == 0) {
          seen_edges[t] = ids(g.transpose_edges());
          seen[t] = &g.transpose();
        } else {
          seen[t] = &g.transpose();
          seen_edges[t] = ids(g.transpose_edges());
        }
      });
    for (std::thread& th : threads) th.join();
    for (size_t t = 0; t < 4; ++t) {
      EXPECT_EQ(seen[t], &g.transpose());
      EXPECT_EQ(seen[t]->col_ptr, want.col_ptr);
      EXPECT_EQ(seen[t]->row_idx, want.row_idx);
      EXPECT_EQ(seen_edges[t], want_edges);
    }
  }
}

// Graphs of 2^31 edges or more store the transpose's edge ids in 64 bits: the same ids.
TEST(GraphRandom, TransposeWithWideEdgeIdsMatchesBruteForce) {
  detail::set_narrow_edge_limit(0);
  const std::vector<Graph> graphs = random_graphs();
  for (const Graph& g : graphs) {
    EXPECT_EQ(g.transpose_edges().is_wide(), g.num_edges() > 0);
    expect_transpose_matches_brute_force(g);
  }
  detail::set_narrow_edge_limit(std::numeric_limits<int32_t>::max());
  for (const Graph& g : random_graphs()) EXPECT_FALSE(g.transpose_edges().is_wide());
}

TEST(GraphRandom, TransposeOfAManyBlockGraphIsTheSameForAnyThreadCount) {
  // 400k edges on 3k nodes: the transpose's counting sort runs in several blocks when threads
  // allow; the result must match the brute force every time.
  std::mt19937_64 rng(31);
  const int64_t n = 3000, m = 400000;
  std::vector<int64_t> src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) {
    src[static_cast<size_t>(k)] = static_cast<int64_t>(rng() % (k % 3 == 0 ? 30 : n));  // hub sources
    dst[static_cast<size_t>(k)] = static_cast<int64_t>(rng() % n);
  }
  for (int threads : {1, 2, 4}) {
    const ThreadLimit limit(threads);
    const Graph g = build_graph(n, n, std::span<const int64_t>(src), std::span<const int64_t>(dst),
                                {.duplicates = Duplicates::keep});
    expect_transpose_matches_brute_force(g);
  }
}

TEST(GraphRandom, TransposeOfSortedCsrWithDuplicatesMatchesBruteForce) {
  // CsrCheck::sort keeps duplicate columns; the transpose must keep them apart.
  const Graph g = Graph::from_csr(3, 4, {0, 4, 4, 9}, {3, 1, 3, 0, 2, 2, 0, 3, 2}, CsrCheck::sort);
  expect_transpose_matches_brute_force(g);
}

TEST(GraphRandom, DegreeStatsMatchBruteForce) {
  for (const Graph& g : random_graphs()) {
    SCOPED_TRACE(g.describe());
    int64_t mn = INT64_MAX, mx = 0, isolated = 0, loops = 0;
    for (int64_t i = 0; i < g.num_dst(); ++i) {
      const auto row = g.row(i);
      mn = std::min<int64_t>(mn, static_cast<int64_t>(row.size()));
      mx = std::max<int64_t>(mx, static_cast<int64_t>(row.size()));
      isolated += row.empty() ? 1 : 0;
      loops += std::count(row.begin(), row.end(), static_cast<int32_t>(i));
    }
    const DegreeStats& d = g.degree_stats();
    EXPECT_EQ(d.min_degree, mn);
    EXPECT_EQ(d.max_degree, mx);
    EXPECT_EQ(d.isolated_rows, isolated);
    EXPECT_EQ(d.self_loops, loops);
    EXPECT_DOUBLE_EQ(d.mean_degree, static_cast<double>(g.num_edges()) / static_cast<double>(g.num_dst()));
  }
}

TEST(GraphRandom, PowerLawGraphHasItsIsolatedBlockAndLoops) {
  const Graph g = testing::power_law_graph(1000, 20000, 6);
  const DegreeStats& d = g.degree_stats();
  EXPECT_GE(d.isolated_rows, 100);  // the guaranteed block n/2 .. n/2 + n/10
  EXPECT_GT(d.self_loops, 0);
  EXPECT_GT(d.max_degree, 10 * static_cast<int64_t>(d.mean_degree)) << "hub rows";
}

// Greedy property of balanced_row_chunks: every chunk but the last reaches the target, and would
// not have reached it without its last row.
void expect_partition_is_greedy(std::span<const int64_t> offsets, std::span<const int64_t> bounds,
                                int64_t target) {
  const auto rows = static_cast<int64_t>(offsets.size()) - 1;
  ASSERT_GE(bounds.size(), 1u);
  EXPECT_EQ(bounds.front(), 0);
  EXPECT_EQ(bounds.back(), rows);
  for (size_t c = 0; c + 1 < bounds.size(); ++c) {
    const int64_t b = bounds[c], e = bounds[c + 1];
    ASSERT_LT(b, e) << "chunk " << c;
    auto units = [&](int64_t from, int64_t to) {
      return offsets[static_cast<size_t>(to)] - offsets[static_cast<size_t>(from)] + (to - from);
    };
    EXPECT_LT(units(b, e - 1), target) << "chunk " << c;
    if (c + 2 < bounds.size()) {
      EXPECT_GE(units(b, e), target) << "chunk " << c;
    }
  }
}

TEST(GraphRandom, BalancedRowChunksAreGreedyForAnyTarget) {
  const Graph g = testing::power_law_graph(1000, 20000, 7);
  for (int64_t target : {1, 2, 7, 50, 333, 5000, 100000}) {
    SCOPED_TRACE(target);
    expect_partition_is_greedy(g.row_ptr(), balanced_row_chunks(g.row_ptr(), target), target);
  }
}

TEST(GraphRandom, PartitionCoversRowsAndBalancesEdges) {
  const Graph g = testing::uniform_graph(50000, 50000, 400000, 8);
  const auto part = g.partition();
  EXPECT_GT(part.size(), 10u) << "a graph this size splits into many chunks";
  expect_partition_is_greedy(g.row_ptr(), part, std::max<int64_t>(2048, (g.num_edges() + g.num_dst()) / 256));
}

TEST(GraphRandom, SourcePartitionCoversColumnsAndBalancesInEdges) {
  // Rows and columns of different sizes, and skewed in-degrees.
  const Graph g = testing::power_law_graph(30000, 500000, 4);
  const auto part = g.source_partition();
  EXPECT_GT(part.size(), 10u) << "a graph this size splits into many chunks";
  expect_partition_is_greedy(g.transpose().col_ptr, part,
                             std::max<int64_t>(2048, (g.num_edges() + g.num_src()) / 256));
  EXPECT_EQ(part.data(), g.source_partition().data()) << "cached: computed once";
  const Graph bipartite = testing::uniform_graph(100, 7000, 9000, 5);
  EXPECT_EQ(bipartite.source_partition().back(), 7000);
}

TEST(GraphRandom, PartitionIsIdenticalUnderDifferentThreadLimits) {
  const Graph g = testing::power_law_graph(60000, 600000, 9);
  auto fresh = [&] {  // same CSR, empty caches
    return Graph::from_csr(g.num_dst(), g.num_src(), vec(g.row_ptr()), vec(g.col_idx()));
  };
  std::vector<int64_t> one, many;
  {
    ThreadLimit limit(1);
    one = vec(fresh().partition());
  }
  {
    ThreadLimit limit(4);
    many = vec(fresh().partition());
  }
  EXPECT_GT(one.size(), 2u);
  EXPECT_EQ(one, many);
  EXPECT_EQ(one, vec(g.partition()));
}

TEST(GraphRandom, ConcurrentFirstCallsBuildEachCacheOnce) {
  const Graph src = testing::power_law_graph(5000, 50000, 10);
  const Graph g = Graph::from_csr(src.num_dst(), src.num_src(), vec(src.row_ptr()), vec(src.col_idx()));
  std::atomic<int> mismatches{0};
  const Transpose* first_t = nullptr;
  const int64_t* first_p = nullptr;
  std::atomic<const Transpose*> t_addr{nullptr};
  std::atomic<const int64_t*> p_addr{nullptr};
  tbb::parallel_for(0, 64, [&](int) {
    const Transpose* t = &g.transpose();
    const int64_t* p = g.partition().data();
    const DegreeStats* d = &g.degree_stats();
    const Transpose* expected_t = nullptr;
    if (!t_addr.compare_exchange_strong(expected_t, t) && expected_t != t) ++mismatches;
    const int64_t* expected_p = nullptr;
    if (!p_addr.compare_exchange_strong(expected_p, p) && expected_p != p) ++mismatches;
    if (d != &g.degree_stats()) ++mismatches;
  });
  first_t = t_addr.load();
  first_p = p_addr.load();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(first_t, &g.transpose());
  EXPECT_EQ(first_p, g.partition().data());
  expect_transpose_matches_brute_force(g);
}

}  // namespace
}  // namespace edgeattn
