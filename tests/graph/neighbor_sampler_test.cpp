#include "edgeattn/graph/neighbor_sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "graph/reference/reference_neighbor_sampler.hpp"
#include "support/expect_error.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

using testing::expect_throw_naming;
using I64 = std::vector<int64_t>;
using I32 = std::vector<int32_t>;

I64 ptr(const Graph& g) { return {g.row_ptr().begin(), g.row_ptr().end()}; }
I32 cols(const Graph& g) { return {g.col_idx().begin(), g.col_idx().end()}; }

// Six nodes; CSR edges (dst <- src): e0 0<-1, e1 0<-2, e2 1<-0, e3 1<-3, e4 3<-1, e5 3<-4,
// e6 3<-5, e7 4<-3, e8 5<-5; row 2 is empty.
Graph six_node_graph() { return Graph::from_csr(6, 6, {0, 2, 4, 4, 7, 8, 9}, {1, 2, 0, 3, 1, 4, 5, 3, 5}); }

I64 distinct_nodes(int64_t n, int64_t count, uint64_t seed) {
  I64 p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(p.begin(), p.end(), rng);
  p.resize(static_cast<size_t>(count));
  return p;
}

int64_t expected_count(int64_t degree, int64_t fanout, bool replace) {
  if (fanout == -1 || (!replace && degree <= fanout)) return degree;
  return replace && degree == 0 ? 0 : fanout;
}

// Every structural promise of one block: sampled edges exist in `graph` and leave the right
// destination, rows hold the right count, no repeats without replacement, sources distinct and
// numbered by first appearance (or, with SourceOrder::ascending, the new ones by global id).
void expect_valid_block(const Graph& graph, const Block& b, int64_t fanout, bool replace,
                        SourceOrder order = SourceOrder::appearance) {
  const bool square = graph.num_dst() == graph.num_src();
  ASSERT_EQ(b.num_dst(), static_cast<int64_t>(b.dst_nodes.size()));
  ASSERT_EQ(b.num_src(), static_cast<int64_t>(b.src_nodes.size()));
  ASSERT_EQ(b.num_edges(), static_cast<int64_t>(b.edge_ids.size()));
  if (square) {
    ASSERT_GE(b.num_src(), b.num_dst());
    EXPECT_TRUE(std::equal(b.dst_nodes.begin(), b.dst_nodes.end(), b.src_nodes.begin()));
  }
  EXPECT_EQ(std::set<int64_t>(b.src_nodes.begin(), b.src_nodes.end()).size(), b.src_nodes.size());
  std::map<int64_t, int64_t> local_of;  // first-appearance numbering, recomputed
  if (square)
    for (int64_t v : b.dst_nodes) local_of.try_emplace(v, static_cast<int64_t>(local_of.size()));
  for (int64_t i = 0; i < b.num_dst(); ++i) {
    const int64_t v = b.dst_nodes[static_cast<size_t>(i)];
    const int64_t lo = graph.row_ptr()[static_cast<size_t>(v)],
                  hi = graph.row_ptr()[static_cast<size_t>(v) + 1];
    const auto row = b.graph.row(i);
    ASSERT_EQ(static_cast<int64_t>(row.size()), expected_count(hi - lo, fanout, replace)) << "row " << i;
    I64 ids;
    for (int64_t e = b.graph.row_ptr()[static_cast<size_t>(i)];
         e < b.graph.row_ptr()[static_cast<size_t>(i) + 1]; ++e) {
      const int64_t id = b.edge_ids[static_cast<size_t>(e)];
      ASSERT_GE(id, lo);
      ASSERT_LT(id, hi);
      EXPECT_EQ(graph.col_idx()[static_cast<size_t>(id)],
                b.src_nodes[static_cast<size_t>(b.graph.col_idx()[static_cast<size_t>(e)])]);
      ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    if (!replace) {
      EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "repeated edge in row " << i;
    }
    for (int64_t id : ids)
      local_of.try_emplace(graph.col_idx()[static_cast<size_t>(id)], static_cast<int64_t>(local_of.size()));
  }
  ASSERT_EQ(static_cast<int64_t>(local_of.size()), b.num_src());
  if (order == SourceOrder::ascending) {  // the same set, the new sources renumbered by global id
    const int64_t lead = square ? b.num_dst() : 0;
    std::vector<int64_t> fresh;
    for (const auto& [global, local] : local_of)
      if (local >= lead) fresh.push_back(global);  // std::map: ascending global ids
    for (size_t k = 0; k < fresh.size(); ++k) local_of[fresh[k]] = lead + static_cast<int64_t>(k);
  }
  for (int64_t j = 0; j < b.num_src(); ++j) EXPECT_EQ(local_of[b.src_nodes[static_cast<size_t>(j)]], j);
}

void expect_same_block(const Block& a, const Block& b) {
  EXPECT_EQ(a.num_src(), b.num_src());
  EXPECT_EQ(ptr(a.graph), ptr(b.graph));
  EXPECT_EQ(cols(a.graph), cols(b.graph));
  EXPECT_EQ(a.dst_nodes, b.dst_nodes);
  EXPECT_EQ(a.src_nodes, b.src_nodes);
  EXPECT_EQ(a.edge_ids, b.edge_ids);
}

void expect_same(const SampledSubgraph& a, const SampledSubgraph& b) {
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (size_t l = 0; l < a.blocks.size(); ++l) {
    SCOPED_TRACE("block " + std::to_string(l));
    expect_same_block(a.blocks[l], b.blocks[l]);
  }
  EXPECT_EQ(a.input_nodes, b.input_nodes);
  EXPECT_EQ(a.seeds, b.seeds);
}

// ---------------------------------------------------------------------------------------------
// Hand-computed blocks

TEST(SampleNeighbors, AscendingOrderNumbersTheNewSourcesByGlobalId) {
  const Graph g = six_node_graph();
  const I64 seeds{3, 0};
  const SampledSubgraph s = sample_neighbors(g, seeds, {.fanouts = {-1}, .order = SourceOrder::ascending});
  // Destinations 3, 0 lead; row 3 brings 1, 4, 5 and row 0 brings 1, 2: new sources 1, 2, 4, 5.
  const Block& b = s.blocks[0];
  EXPECT_EQ(b.src_nodes, (I64{3, 0, 1, 2, 4, 5}));
  EXPECT_EQ(ptr(b.graph), (I64{0, 3, 5}));
  EXPECT_EQ(cols(b.graph), (I32{2, 4, 5, 2, 3}));
  EXPECT_EQ(b.edge_ids, (I64{4, 5, 6, 0, 1}));
  EXPECT_EQ(s.input_nodes, b.src_nodes);
}

TEST(SampleNeighbors, AscendingOrderSortsFewNewSourcesAndScansForMany) {
  // A few new sources of a large graph are sorted; many are read off the scratch array in index
  // order (graph/neighbor_sampler.cpp: kScanFraction). Both must give the reference's numbering.
  const Graph g = testing::power_law_graph(50000, 400000, 12);
  for (const int64_t batch : {int64_t{8}, int64_t{3000}}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const I64 seeds = distinct_nodes(50000, batch, 4);
    const NeighborSamplerOptions opt{.fanouts = {5, 3}, .seed = 8, .order = SourceOrder::ascending};
    const SampledSubgraph fast = sample_neighbors(g, seeds, opt);
    expect_same(fast, reference::sample_neighbors(g, seeds, opt));
    expect_valid_block(g, fast.blocks[1], 5, false, SourceOrder::ascending);
    expect_valid_block(g, fast.blocks[0], 3, false, SourceOrder::ascending);
  }
}

TEST(SampleNeighbors, ParsesTheSourceOrder) {
  EXPECT_EQ(parse_source_order("appearance"), SourceOrder::appearance);
  EXPECT_EQ(parse_source_order("ascending"), SourceOrder::ascending);
  EXPECT_STREQ(to_string(SourceOrder::ascending), "ascending");
  expect_throw_naming<InvalidArgument>([] { parse_source_order("sorted"); },
                                       {"sorted", "appearance", "ascending"});
}

TEST(SampleNeighbors, AllNeighboursOverTwoHopsGiveTheHandComputedBlocks) {
  const Graph g = six_node_graph();
  const I64 seeds{3, 0};
  const SampledSubgraph s = sample_neighbors(g, seeds, {.fanouts = {-1, -1}});
  ASSERT_EQ(s.blocks.size(), 2u);
  // Hop 1 (the last block): destinations 3, 0; row 3 brings 1, 4, 5, row 0 brings 2.
  const Block& last = s.blocks[1];
  EXPECT_EQ(last.dst_nodes, (I64{3, 0}));
  EXPECT_EQ(last.src_nodes, (I64{3, 0, 1, 4, 5, 2}));
  EXPECT_EQ(ptr(last.graph), (I64{0, 3, 5}));
  EXPECT_EQ(cols(last.graph), (I32{2, 3, 4, 2, 5}));
  EXPECT_EQ(last.edge_ids, (I64{4, 5, 6, 0, 1}));
  // Hop 2 (the first block): every node reached so far; nothing new. Row 1's sources 0 (local 1)
  // and 3 (local 0) are listed by local id, so its CSR edges come out as e3, e2.
  const Block& first = s.blocks[0];
  EXPECT_EQ(first.dst_nodes, (I64{3, 0, 1, 4, 5, 2}));
  EXPECT_EQ(first.src_nodes, (I64{3, 0, 1, 4, 5, 2}));
  EXPECT_EQ(ptr(first.graph), (I64{0, 3, 5, 7, 8, 9, 9}));
  EXPECT_EQ(cols(first.graph), (I32{2, 3, 4, 2, 5, 0, 1, 0, 4}));
  EXPECT_EQ(first.edge_ids, (I64{4, 5, 6, 0, 1, 3, 2, 7, 8}));
  EXPECT_EQ(s.input_nodes, first.src_nodes);
  EXPECT_EQ(s.seeds, seeds);
}

TEST(SampleNeighbors, FanoutAtLeastTheDegreeTakesEveryNeighbourWithoutReplacement) {
  const Graph g = six_node_graph();
  const I64 seeds{3, 0};
  expect_same(sample_neighbors(g, seeds, {.fanouts = {3, 5}, .seed = 7}),
              sample_neighbors(g, seeds, {.fanouts = {-1, -1}}));
}

TEST(SampleNeighbors, FanoutZeroGivesEmptyRowsAndOnlyTheDestinationsAsSources) {
  const Graph g = six_node_graph();
  const SampledSubgraph s = sample_neighbors(g, I64{3, 0}, {.fanouts = {0, 0}});
  for (const Block& b : s.blocks) {
    EXPECT_EQ(b.num_edges(), 0);
    EXPECT_EQ(b.src_nodes, (I64{3, 0}));
  }
}

TEST(SampleNeighbors, DegreeZeroSeedsGetEmptyRowsWithAndWithoutReplacement) {
  const Graph g = six_node_graph();
  for (bool replace : {false, true}) {
    const SampledSubgraph s = sample_neighbors(g, I64{2, 4}, {.fanouts = {3}, .replace = replace, .seed = 1});
    const Block& b = s.blocks[0];
    EXPECT_EQ(b.graph.degree(0), 0);  // node 2 has no in-edges
    EXPECT_EQ(b.graph.degree(1), replace ? 3 : 1);
    EXPECT_EQ(b.src_nodes, (I64{2, 4, 3}));
    expect_valid_block(g, b, 3, replace);
  }
}

TEST(SampleNeighbors, ReplacementDrawsExactlyFanoutEdgesEvenBeyondTheDegree) {
  const Graph g = six_node_graph();
  const SampledSubgraph s = sample_neighbors(g, I64{4, 3, 5}, {.fanouts = {7}, .replace = true, .seed = 3});
  const Block& b = s.blocks[0];
  EXPECT_EQ(ptr(b.graph), (I64{0, 7, 14, 21}));
  // Node 4 and node 5 each have one in-edge: all seven draws are it, kept as parallel edges.
  EXPECT_EQ(b.edge_ids[0], 7);
  EXPECT_EQ(std::count(b.edge_ids.begin(), b.edge_ids.begin() + 7, 7), 7);
  EXPECT_EQ(std::count(b.edge_ids.begin() + 14, b.edge_ids.end(), 8), 7);
  expect_valid_block(g, b, 7, true);
}

TEST(SampleNeighbors, BipartiteGraphNumbersSourcesInTheirOwnIdSpace) {
  // 2 destinations, 3 sources: row 0 <- {0, 2} (e0, e1), row 1 <- {1, 2} (e2, e3).
  const Graph g = Graph::from_csr(2, 3, {0, 2, 4}, {0, 2, 1, 2});
  const SampledSubgraph s = sample_neighbors(g, I64{1, 0}, {.fanouts = {-1}});
  const Block& b = s.blocks[0];
  EXPECT_EQ(b.dst_nodes, (I64{1, 0}));
  EXPECT_EQ(b.src_nodes, (I64{1, 2, 0}));  // by first appearance only: no destination prefix
  EXPECT_EQ(ptr(b.graph), (I64{0, 2, 4}));
  EXPECT_EQ(cols(b.graph), (I32{0, 1, 1, 2}));
  EXPECT_EQ(b.edge_ids, (I64{2, 3, 1, 0}));
  EXPECT_EQ(s.input_nodes, b.src_nodes);
}

TEST(SampleNeighbors, BipartiteRandomGraphMatchesTheReference) {
  const Graph g = testing::uniform_graph(300, 170, 3000, 4);
  const I64 seeds = distinct_nodes(300, 120, 5);
  for (SourceOrder order : {SourceOrder::appearance, SourceOrder::ascending})
    for (bool replace : {false, true}) {
      const NeighborSamplerOptions opt{.fanouts = {6}, .replace = replace, .seed = 11, .order = order};
      const SampledSubgraph s = sample_neighbors(g, seeds, opt);
      expect_valid_block(g, s.blocks[0], 6, replace, order);
      expect_same(s, reference::sample_neighbors(g, seeds, opt));
    }
}

TEST(SampleNeighbors, ConsecutiveBlocksChainAndEndAtTheSeeds) {
  const Graph g = testing::power_law_graph(2000, 20000, 3);
  const I64 seeds = distinct_nodes(2000, 64, 1);
  const NeighborSamplerOptions opt{.fanouts = {15, 10, 5}, .seed = 42};
  const SampledSubgraph s = sample_neighbors(g, seeds, opt);
  ASSERT_EQ(s.blocks.size(), 3u);
  EXPECT_EQ(s.blocks.back().dst_nodes, seeds);
  EXPECT_EQ(s.input_nodes, s.blocks.front().src_nodes);
  for (size_t l = 0; l + 1 < s.blocks.size(); ++l)
    EXPECT_EQ(s.blocks[l].dst_nodes, s.blocks[l + 1].src_nodes);
  // fanouts[h] is hop h + 1 from the seeds: the last block uses 15, the first 5.
  expect_valid_block(g, s.blocks[2], 15, false);
  expect_valid_block(g, s.blocks[1], 10, false);
  expect_valid_block(g, s.blocks[0], 5, false);
}

TEST(SampleNeighbors, EmptySeedListGivesEmptyBlocks) {
  const SampledSubgraph s = sample_neighbors(six_node_graph(), I64{}, {.fanouts = {2, 2}});
  ASSERT_EQ(s.blocks.size(), 2u);
  for (const Block& b : s.blocks) {
    EXPECT_EQ(b.num_dst(), 0);
    EXPECT_EQ(b.num_src(), 0);
  }
  EXPECT_TRUE(s.input_nodes.empty());
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(SampleNeighbors, SeedOutOfRangeIsAGraphErrorNamingIndexAndValue) {
  const Graph g = six_node_graph();
  expect_throw_naming<GraphError>(
      [&] {
        sample_neighbors(g, I64{1, 2, 9}, {.fanouts = {2}});
      },
      {"seeds[2]", "9", "[0, 6)"});
  expect_throw_naming<GraphError>([&] { sample_neighbors(g, I64{-1}, {.fanouts = {2}}); },
                                  {"seeds[0]", "-1"});
}

TEST(SampleNeighbors, RepeatedSeedIsAGraphErrorNamingBothIndices) {
  const Graph g = six_node_graph();
  expect_throw_naming<GraphError>(
      [&] {
        sample_neighbors(g, I64{3, 1, 3}, {.fanouts = {2}});
      },
      {"seeds[2] is 3", "seeds[0]", "distinct"});
  const Graph bip = Graph::from_csr(2, 3, {0, 2, 4}, {0, 2, 1, 2});
  expect_throw_naming<GraphError>(
      [&] {
        sample_neighbors(bip, I64{1, 1}, {.fanouts = {2}});
      },
      {"seeds[1] is 1", "seeds[0]"});
  // A failed check leaves nothing behind: the same call with valid seeds works.
  EXPECT_EQ(sample_neighbors(g, I64{3, 1}, {.fanouts = {-1}}).blocks[0].num_dst(), 2);
}

TEST(SampleNeighbors, BadFanoutsAreInvalidArguments) {
  const Graph g = six_node_graph();
  expect_throw_naming<InvalidArgument>(
      [&] {
        sample_neighbors(g, I64{0}, {.fanouts = {3, -2}});
      },
      {"fanouts[1]", "-2"});
  expect_throw_naming<InvalidArgument>([&] { sample_neighbors(g, I64{0}, {.fanouts = {}}); },
                                       {"fanouts", "empty"});
  expect_throw_naming<InvalidArgument>([&] { sample_block(g, I64{0}, -5, false, 0); }, {"fanout", "-5"});
}

TEST(SampleNeighbors, AFanoutWithReplacementBeyondMemoryIsRefusedBeforeAnyAllocation) {
  // With replacement a fanout is exact: 10^12 draws for each of two seeds would be 48 TB.
  const Graph g = six_node_graph();
  expect_throw_naming<InvalidArgument>(
      [&] {
        sample_neighbors(g, I64{0, 1}, {.fanouts = {1'000'000'000'000}, .replace = true});
      },
      {"sample_neighbors: hop 0 would sample 2e+12 edges", "fanout 1000000000000 with replacement",
       "over 2 nodes", "lower the fanout"});
  // Counts that overflow int64 when summed are caught too, and the next hop is named.
  expect_throw_naming<InvalidArgument>(
      [&] {
        sample_neighbors(g, I64{0, 1},
                         {.fanouts = {2, std::numeric_limits<int64_t>::max()}, .replace = true});
      },
      {"hop 1 would sample"});
  expect_throw_naming<InvalidArgument>(
      [&] { sample_block(g, I64{0}, std::numeric_limits<int64_t>::max(), true, 0); },
      {"sample_block: hop 0"});
  // Without replacement a node takes at most its in-degree, whatever the fanout.
  EXPECT_EQ(sample_neighbors(g, I64{0, 1}, {.fanouts = {std::numeric_limits<int64_t>::max()}})
                .blocks[0]
                .num_edges(),
            4);
}

TEST(SampleNeighbors, BipartiteGraphCannotBeSampledForMoreThanOneHop) {
  const Graph bip = Graph::from_csr(2, 3, {0, 2, 4}, {0, 2, 1, 2});
  expect_throw_naming<GraphError>(
      [&] {
        sample_neighbors(bip, I64{0}, {.fanouts = {2, 2}});
      },
      {"num_dst=2", "num_src=3", "1 hop"});
}

TEST(SampleBlock, DestinationErrorsNameTheOperand) {
  const Graph g = six_node_graph();
  expect_throw_naming<GraphError>([&] { sample_block(g, I64{0, 6}, 2, false, 0); }, {"dst_nodes[1]", "6"});
  expect_throw_naming<GraphError>([&] { full_neighborhood_block(g, I64{5, 5}); }, {"dst_nodes[1] is 5"});
}

// ---------------------------------------------------------------------------------------------
// Fast == reference, and independence of thread count and batch composition

struct Case {
  const char* name;
  Graph graph;
};

std::vector<Case> random_cases() {
  return {{"power_law", testing::power_law_graph(4000, 48000, 9)},
          {"uniform", testing::uniform_graph(3000, 3000, 30000, 2)}};
}

TEST(SampleNeighbors, MatchesTheSerialReferenceBitForBit) {
  for (const Case& c : random_cases()) {
    const int64_t n = c.graph.num_dst();
    const I64 seeds = distinct_nodes(n, 300, 17);
    for (SourceOrder order : {SourceOrder::appearance, SourceOrder::ascending})
      for (bool replace : {false, true})
        for (const auto& fanouts : {I64{10, 5}, I64{3, -1}, I64{25, 0, 2}, I64{70}}) {
          SCOPED_TRACE(std::string(c.name) + " " + to_string(order) + (replace ? " replace" : "") +
                       " fanouts[0]=" + std::to_string(fanouts[0]));
          const NeighborSamplerOptions opt{
              .fanouts = fanouts, .replace = replace, .seed = 123, .order = order};
          const SampledSubgraph fast = sample_neighbors(c.graph, seeds, opt);
          expect_same(fast, reference::sample_neighbors(c.graph, seeds, opt));
          for (size_t h = 0; h < fanouts.size(); ++h)
            expect_valid_block(c.graph, fast.blocks[fanouts.size() - 1 - h], fanouts[h], replace, order);
        }
  }
}

__extension__ using Uint128 = unsigned __int128;

TEST(NeighborDraw, IsTheScaledHalfOfThePhiloxBlockItSharesWithItsPair) {
  // The contract written out: draw t of (seed, hop, node) is half t % 2 of philox4x32 at counter
  // (node, hop, t / 2), scaled by a multiply-high. The sampler computes each block once for the
  // pair; the reference calls neighbor_draw per draw; both must give these numbers.
  for (const uint64_t seed : {uint64_t{0}, uint64_t{123}, ~uint64_t{0}})
    for (const int64_t node : {int64_t{0}, int64_t{7}, (int64_t{1} << 33) + 5})
      for (uint64_t t = 0; t < 6; ++t)
        for (const uint64_t n : {uint64_t{1}, uint64_t{2}, uint64_t{50}, uint64_t{1} << 40, ~uint64_t{0}}) {
          const auto v = static_cast<uint64_t>(node);
          const auto r = philox4x32(seed, {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32), 3u,
                                           static_cast<uint32_t>(t / 2)});
          const uint64_t bits = t % 2 ? (uint64_t{r[3]} << 32 | r[2]) : (uint64_t{r[1]} << 32 | r[0]);
          const auto expected = static_cast<uint64_t>((static_cast<Uint128>(bits) * n) >> 64);
          EXPECT_EQ(neighbor_draw(seed, 3, node, t, n), expected)
              << seed << " " << node << " " << t << " " << n;
          EXPECT_EQ(neighbor_bits(seed, 3, node, t / 2)[t % 2], bits);
          EXPECT_LT(expected, n);
        }
}

TEST(SampleNeighbors, LargeFanoutPathMatchesTheReference) {
  // Fanouts above 64 use the byte-mask membership test in Floyd's algorithm: a graph whose rows
  // have hundreds of in-edges, sampled at 100 of them.
  const Graph g = testing::uniform_graph(200, 2000, 60000, 8);
  const I64 seeds = distinct_nodes(200, 150, 3);
  const Block fast = sample_block(g, seeds, 100, false, 5, 2);
  expect_valid_block(g, fast, 100, false);
  expect_same_block(fast, reference::sample_block(g, seeds, 100, false, 5, 2));
}

TEST(SampleNeighbors, ResultDoesNotDependOnTheThreadCount) {
  const Graph g = testing::power_law_graph(20000, 200000, 5);
  const I64 seeds = distinct_nodes(20000, 2000, 23);
  for (const auto& [replace, order] :
       {std::pair{false, SourceOrder::appearance}, std::pair{true, SourceOrder::appearance},
        std::pair{false, SourceOrder::ascending}, std::pair{true, SourceOrder::ascending}}) {
    SCOPED_TRACE(std::string(to_string(order)) + (replace ? " replace" : ""));
    const NeighborSamplerOptions opt{.fanouts = {15, 10, 5}, .replace = replace, .seed = 99, .order = order};
    SampledSubgraph one;
    {
      const ThreadLimit limit(1);
      one = sample_neighbors(g, seeds, opt);
    }
    ASSERT_GT(one.blocks.front().num_edges(), 2 * 16384);  // several relabelling pieces
    for (int threads : {2, 4}) {
      const ThreadLimit limit(threads);
      SCOPED_TRACE(std::to_string(threads) + " threads");
      expect_same(sample_neighbors(g, seeds, opt), one);
    }
  }
}

TEST(SampleNeighbors, ANodesSampleDoesNotDependOnTheRestOfTheBatch) {
  const Graph g = testing::power_law_graph(3000, 40000, 6);
  const I64 batch = distinct_nodes(3000, 400, 8);
  I64 shuffled = batch;
  std::mt19937_64 rng(1);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  for (bool replace : {false, true}) {
    const Block whole = sample_block(g, batch, 4, replace, 77, 0);
    const Block other = sample_block(g, shuffled, 4, replace, 77, 0);
    // Sampled input edges of each node, as a sorted list.
    auto picks = [](const Block& b) {
      std::map<int64_t, I64> out;
      for (int64_t i = 0; i < b.num_dst(); ++i) {
        I64 ids(b.edge_ids.begin() + b.graph.row_ptr()[static_cast<size_t>(i)],
                b.edge_ids.begin() + b.graph.row_ptr()[static_cast<size_t>(i) + 1]);
        std::sort(ids.begin(), ids.end());
        out[b.dst_nodes[static_cast<size_t>(i)]] = ids;
      }
      return out;
    };
    const auto a = picks(whole);
    EXPECT_EQ(a, picks(other));
    for (int64_t v : {batch[0], batch[137], batch[399]}) {
      const Block alone = sample_block(g, I64{v}, 4, replace, 77, 0);
      EXPECT_EQ(picks(alone).at(v), a.at(v)) << "node " << v;
    }
    // A different hop or seed draws again.
    EXPECT_NE(picks(sample_block(g, batch, 4, replace, 78, 0)), a);
    EXPECT_NE(picks(sample_block(g, batch, 4, replace, 77, 1)), a);
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics: bounds far outside chance at these sizes (so fixed seeds cannot fail by luck), yet
// a sampler biased toward some positions by more than a few percent fails them.

// m destinations whose in-neighbours are the same d sources 0..d-1.
Graph same_neighbours(int64_t m, int64_t d) {
  std::vector<int64_t> row_ptr(static_cast<size_t>(m) + 1);
  std::vector<int32_t> col;
  for (int64_t i = 0; i < m; ++i) {
    row_ptr[static_cast<size_t>(i) + 1] = (i + 1) * d;
    for (int32_t j = 0; j < static_cast<int32_t>(d); ++j) col.push_back(j);
  }
  return Graph::from_csr(m, d, row_ptr, col);
}

I64 iota_ids(int64_t m) {
  I64 all(static_cast<size_t>(m));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

TEST(SampleNeighbors, WithoutReplacementEveryNeighbourAndEveryPairIsEquallyLikely) {
  // 6000 destinations with the same 12 in-neighbours, 4 sampled each: every source is expected
  // 2000 times (sd ~37), every pair of sources 6000 * C(10,2) / C(12,4) = 545.5 times (sd ~23).
  const int64_t m = 6000, d = 12, k = 4;
  const Graph g = same_neighbours(m, d);
  const I64 all = iota_ids(m);
  const Block b = sample_block(g, all, k, false, 2024, 0);
  std::vector<double> single(static_cast<size_t>(d), 0.0), pair(static_cast<size_t>(d * d), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    const auto ids =
        std::span<const int64_t>(b.edge_ids).subspan(static_cast<size_t>(i * k), static_cast<size_t>(k));
    for (size_t a = 0; a < ids.size(); ++a) {
      single[static_cast<size_t>(ids[a] - i * d)] += 1;
      for (size_t c = a + 1; c < ids.size(); ++c) {
        const auto p = std::min(ids[a], ids[c]) - i * d, q = std::max(ids[a], ids[c]) - i * d;
        pair[static_cast<size_t>(p * d + q)] += 1;
      }
    }
  }
  double chi2 = 0;
  for (double o : single) {
    EXPECT_NEAR(o, 2000.0, 200.0);
    chi2 += (o - 2000.0) * (o - 2000.0) / 2000.0;
  }
  EXPECT_LT(chi2, 60.0);  // 11 degrees of freedom: about 11 expected
  for (int64_t p = 0; p < d; ++p)
    for (int64_t q = p + 1; q < d; ++q) EXPECT_NEAR(pair[static_cast<size_t>(p * d + q)], 545.45, 120.0);
}

TEST(SampleNeighbors, WithReplacementDrawsAreUniformEvenBeyondTheDegree) {
  // 5000 destinations with the same 3 in-neighbours, 8 draws each: 40000 draws, 13333 per
  // source expected (sd ~94).
  const int64_t m = 5000, d = 3, k = 8;
  const Graph g = same_neighbours(m, d);
  const I64 all = iota_ids(m);
  const Block b = sample_block(g, all, k, true, 31, 0);
  ASSERT_EQ(b.num_edges(), m * k);
  std::vector<double> count(static_cast<size_t>(d), 0.0);
  for (int64_t e = 0; e < b.num_edges(); ++e) {
    const int64_t i = e / k;
    count[static_cast<size_t>(b.edge_ids[static_cast<size_t>(e)] - i * d)] += 1;
  }
  for (double o : count) EXPECT_NEAR(o, 40000.0 / 3.0, 700.0);
}

TEST(SampleNeighbors, EdgeFrequenciesOnARandomGraphFollowFanoutOverDegree) {
  // Over 40 seeds, each edge of a row with degree d > k is kept about 40 k / d times. The sum of
  // squared standardised deviations over n edges is about n for an unbiased sampler (sd about
  // sqrt(2 n)); a sampler preferring some positions pushes it well above.
  const Graph g = testing::power_law_graph(3000, 40000, 12);
  const int64_t k = 5, runs = 40;
  I64 all(static_cast<size_t>(g.num_dst()));
  std::iota(all.begin(), all.end(), 0);
  for (bool replace : {false, true}) {
    std::vector<double> hits(static_cast<size_t>(g.num_edges()), 0.0);
    for (int64_t r = 0; r < runs; ++r) {
      const Block b = sample_block(g, all, k, replace, 1000 + static_cast<uint64_t>(r), 0);
      for (int64_t id : b.edge_ids) hits[static_cast<size_t>(id)] += 1;
    }
    double z = 0;
    int64_t terms = 0;
    for (int64_t i = 0; i < g.num_dst(); ++i) {
      const int64_t d = g.degree(i);
      if (d <= k) continue;
      const double p = static_cast<double>(k) / static_cast<double>(d);
      // Draws with replacement: Binomial(runs k, 1/d) per edge; without: Bernoulli(k/d) per run.
      const double mean = static_cast<double>(runs) * p;
      const double var = replace ? static_cast<double>(runs * k) * (1.0 / static_cast<double>(d)) *
                                       (1.0 - 1.0 / static_cast<double>(d))
                                 : static_cast<double>(runs) * p * (1.0 - p);
      for (int64_t e = g.row_ptr()[static_cast<size_t>(i)]; e < g.row_ptr()[static_cast<size_t>(i) + 1];
           ++e) {
        const double o = hits[static_cast<size_t>(e)];
        z += (o - mean) * (o - mean) / var;
        ++terms;
      }
    }
    ASSERT_GT(terms, 5000);
    const double ratio = z / static_cast<double>(terms);
    EXPECT_GT(ratio, 0.75) << (replace ? "replace" : "no replace");
    EXPECT_LT(ratio, 1.25) << (replace ? "replace" : "no replace");
  }
}

// ---------------------------------------------------------------------------------------------
// Weighted sampling (NeighborSamplerOptions::weights)

// Random weights for every edge of `g`, about a fifth of them 0.
std::vector<float> random_weights(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 4.f);
  std::vector<float> w(static_cast<size_t>(g.num_edges()));
  for (float& x : w) x = rng() % 5 == 0 ? 0.f : u(rng);
  return w;
}

// A block's edges hold only positive-weight in-edges, and rows have the counts the header gives.
void expect_positive_counts(const Graph& g, const Block& b, std::span<const float> w, int64_t fanout,
                            bool replace) {
  for (int64_t i = 0; i < b.num_dst(); ++i) {
    const int64_t v = b.dst_nodes[static_cast<size_t>(i)];
    int64_t positive = 0;
    for (int64_t e = g.row_ptr()[static_cast<size_t>(v)]; e < g.row_ptr()[static_cast<size_t>(v) + 1]; ++e)
      positive += w[static_cast<size_t>(e)] > 0.f;
    EXPECT_EQ(b.graph.degree(i), expected_count(positive, fanout, replace)) << "node " << v;
  }
  for (int64_t id : b.edge_ids) EXPECT_GT(w[static_cast<size_t>(id)], 0.f) << "edge " << id;
}

TEST(SampleNeighborsWeighted, ZeroWeightInEdgesAreNeverSampledHandComputed) {
  // six_node_graph with e1, e4 and e7 at weight 0: node 0 keeps e0 (0<-1), node 1 e2, e3 (0, 3),
  // node 3 e5, e6 (4, 5), node 4 nothing (its one in-edge e7 weighs 0), node 5 e8 (5<-5).
  const Graph g = six_node_graph();
  const std::vector<float> w{1.f, 0.f, 2.f, 3.f, 0.f, 1.f, 1.f, 0.f, 5.f};
  for (int64_t fanout : {int64_t{-1}, int64_t{2}, int64_t{7}}) {
    SCOPED_TRACE("fanout " + std::to_string(fanout));
    const SampledSubgraph s = sample_neighbors(g, I64{0, 1, 3, 4, 5}, {.fanouts = {fanout}, .weights = w});
    const Block& b = s.blocks[0];
    EXPECT_EQ(b.src_nodes, (I64{0, 1, 3, 4, 5}));
    EXPECT_EQ(ptr(b.graph), (I64{0, 1, 3, 5, 5, 6}));
    EXPECT_EQ(cols(b.graph), (I32{1, 0, 2, 3, 4, 4}));
    EXPECT_EQ(b.edge_ids, (I64{0, 2, 3, 5, 6, 8}));
  }
  // With replacement: exactly 3 picks per node with a positive in-edge, all positive; node 4 none.
  const Block r = sample_block(g, I64{0, 1, 3, 4, 5}, 3, true, 9, 0, SourceOrder::appearance, w);
  EXPECT_EQ(ptr(r.graph), (I64{0, 3, 6, 9, 9, 12}));
  for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(r.edge_ids[static_cast<size_t>(k)], 0);  // node 0's only one
  expect_positive_counts(g, r, w, 3, true);
  // One pick without replacement from {e5: 1, e6: 1} of node 3, and node 1's {e2: 2, e3: 3}.
  const Block one = sample_block(g, I64{1, 3}, 1, false, 4, 0, SourceOrder::appearance, w);
  expect_positive_counts(g, one, w, 1, false);
}

TEST(SampleNeighborsWeighted, MatchesTheSerialReferenceBitForBitForAnyThreadCount) {
  for (const Case& c : random_cases()) {
    const int64_t n = c.graph.num_dst();
    const I64 seeds = distinct_nodes(n, 300, 21);
    const std::vector<float> w = random_weights(c.graph, 3);
    for (SourceOrder order : {SourceOrder::appearance, SourceOrder::ascending})
      for (bool replace : {false, true})
        for (const auto& fanouts : {I64{10, 5}, I64{3, -1}, I64{25, 0, 2}, I64{1}}) {
          SCOPED_TRACE(std::string(c.name) + " " + to_string(order) + (replace ? " replace" : "") +
                       " fanouts[0]=" + std::to_string(fanouts[0]));
          const NeighborSamplerOptions opt{
              .fanouts = fanouts, .replace = replace, .seed = 77, .order = order, .weights = w};
          SampledSubgraph one;
          {
            const ThreadLimit limit(1);
            one = sample_neighbors(c.graph, seeds, opt);
          }
          expect_same(one, reference::sample_neighbors(c.graph, seeds, opt));
          {
            const ThreadLimit limit(4);
            expect_same(sample_neighbors(c.graph, seeds, opt), one);
          }
          for (size_t h = 0; h < fanouts.size(); ++h)
            expect_positive_counts(c.graph, one.blocks[fanouts.size() - 1 - h], w, fanouts[h], replace);
        }
  }
}

TEST(SampleNeighborsWeighted, UnitWeightsKeepTheSameCountsAndNeverRepeatWithoutReplacement) {
  const Graph g = testing::power_law_graph(3000, 40000, 13);
  const std::vector<float> ones(static_cast<size_t>(g.num_edges()), 1.f);
  const I64 seeds = distinct_nodes(3000, 500, 5);
  for (bool replace : {false, true}) {
    const Block b = sample_block(g, seeds, 6, replace, 1, 0, SourceOrder::ascending, ones);
    expect_valid_block(g, b, 6, replace, SourceOrder::ascending);
  }
}

TEST(SampleNeighborsWeighted, PicksFollowTheWeightsWithAndWithoutReplacement) {
  // 20000 destinations with the same 4 in-neighbours weighing 1, 2, 3, 4 (and a fifth weighing
  // 0). One pick: in-edge q is chosen with probability w_q / 10 (sd of its count <= 71).
  const int64_t m = 20000, d = 5;
  const Graph g = same_neighbours(m, d);
  const std::vector<double> weight{1, 2, 3, 4, 0};
  std::vector<float> w;
  for (int64_t i = 0; i < m; ++i)
    for (double x : weight) w.push_back(static_cast<float>(x));
  const I64 all = iota_ids(m);
  auto counts = [&](const Block& b) {
    std::vector<double> c(static_cast<size_t>(d), 0.0);
    for (int64_t e = 0; e < b.num_edges(); ++e) {
      const int64_t i = std::upper_bound(b.graph.row_ptr().begin(), b.graph.row_ptr().end(), e) -
                        b.graph.row_ptr().begin() - 1;
      c[static_cast<size_t>(b.edge_ids[static_cast<size_t>(e)] - i * d)] += 1;
    }
    return c;
  };
  const std::vector<double> one = counts(sample_block(g, all, 1, false, 11, 0, SourceOrder::appearance, w));
  for (int64_t q = 0; q < d; ++q)
    EXPECT_NEAR(one[static_cast<size_t>(q)], static_cast<double>(m) * weight[static_cast<size_t>(q)] / 10.0,
                350.0)
        << "in-edge " << q;
  // Two picks without replacement, one after the other in proportion to the weights left:
  // P(q kept) = p_q + sum_{r != q} p_r w_q / (10 - w_r) (sd of a count <= 71).
  const std::vector<double> two = counts(sample_block(g, all, 2, false, 12, 0, SourceOrder::appearance, w));
  for (int64_t q = 0; q < 4; ++q) {
    const double wq = weight[static_cast<size_t>(q)];
    double p = wq / 10.0;
    for (int64_t r = 0; r < 4; ++r)
      if (r != q) p += weight[static_cast<size_t>(r)] / 10.0 * wq / (10.0 - weight[static_cast<size_t>(r)]);
    EXPECT_NEAR(two[static_cast<size_t>(q)], static_cast<double>(m) * p, 350.0) << "in-edge " << q;
  }
  EXPECT_EQ(two[4], 0.0);
  // With replacement, 3 picks each: 60000 independent picks, q with probability w_q / 10.
  const std::vector<double> rep = counts(sample_block(g, all, 3, true, 13, 0, SourceOrder::appearance, w));
  for (int64_t q = 0; q < d; ++q)
    EXPECT_NEAR(rep[static_cast<size_t>(q)],
                3.0 * static_cast<double>(m) * weight[static_cast<size_t>(q)] / 10.0, 600.0)
        << "in-edge " << q;
}

TEST(SampleNeighborsWeighted, BadWeightsAreInvalidArgumentsNamingPositionNodeAndValue) {
  const Graph g = six_node_graph();
  const std::vector<float> short_w(4, 1.f);
  expect_throw_naming<InvalidArgument>(
      [&] { sample_neighbors(g, I64{0}, {.fanouts = {2}, .weights = short_w}); },
      {"weights has 4 entries", "9"});
  expect_throw_naming<InvalidArgument>(
      [&] { sample_block(g, I64{0}, 2, false, 0, 0, SourceOrder::appearance, short_w); },
      {"sample_block", "4"});
  for (float bad : {-1.f, std::nanf(""), INFINITY}) {
    std::vector<float> w(9, 1.f);
    w[5] = bad;  // an in-edge of node 3
    w[6] = -2.f;
    SCOPED_TRACE(std::to_string(bad));
    expect_throw_naming<InvalidArgument>(
        [&] {
          sample_neighbors(g, I64{0, 3}, {.fanouts = {1}, .weights = w});
        },
        {"weights[5]", "node 3", "finite weight >= 0"});
    // A row the sampling does not visit is not read.
    EXPECT_EQ(sample_neighbors(g, I64{0, 1}, {.fanouts = {1}, .weights = w}).blocks[0].num_dst(), 2);
  }
}

// ---------------------------------------------------------------------------------------------
// Full neighbourhoods and feature gathering

TEST(FullNeighborhoodBlock, OverEveryNodeIsTheGraphItself) {
  const Graph g = testing::power_law_graph(1500, 12000, 4);
  I64 all(static_cast<size_t>(g.num_dst()));
  std::iota(all.begin(), all.end(), 0);
  const Block b = full_neighborhood_block(g, all);
  EXPECT_EQ(b.src_nodes, all);
  EXPECT_EQ(ptr(b.graph), ptr(g));
  EXPECT_EQ(cols(b.graph), cols(g));
  I64 ids(static_cast<size_t>(g.num_edges()));
  std::iota(ids.begin(), ids.end(), 0);
  EXPECT_EQ(b.edge_ids, ids);
}

TEST(FullNeighborhoodBlock, EqualsFanoutMinusOneAndTheReference) {
  const Graph g = testing::power_law_graph(1500, 12000, 4);
  const I64 nodes = distinct_nodes(1500, 500, 2);
  const Block b = full_neighborhood_block(g, nodes);
  expect_valid_block(g, b, -1, false);
  expect_same_block(b, reference::sample_block(g, nodes, -1, false, 0, 0));
  expect_same_block(b, sample_neighbors(g, nodes, {.fanouts = {-1}, .seed = 5}).blocks[0]);
}

TEST(GatherRows, CopiesTheRowsInIdOrderForAnyRank) {
  Tensor x({5, 2, 2});
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = static_cast<float>(i);
  const Tensor y = gather_rows(x, I64{4, 0, 4});
  ASSERT_EQ(y.shape(), (Shape{3, 2, 2}));
  for (int64_t c = 0; c < 4; ++c) {
    EXPECT_EQ(y.data()[c], static_cast<float>(16 + c));
    EXPECT_EQ(y.data()[4 + c], static_cast<float>(c));
    EXPECT_EQ(y.data()[8 + c], static_cast<float>(16 + c));
  }
  EXPECT_EQ(gather_rows(x, I64{}).shape(), (Shape{0, 2, 2}));
}

TEST(GatherRows, MatchesARowLoopOnSampledInputNodes) {
  const Graph g = testing::power_law_graph(3000, 30000, 1);
  const Tensor x = testing::random_tensor({3000, 37}, 3);
  const SampledSubgraph s =
      sample_neighbors(g, distinct_nodes(3000, 200, 4), {.fanouts = {10, 10}, .seed = 1});
  const Tensor y = gather_rows(x, s.input_nodes);
  ASSERT_EQ(y.shape(), (Shape{static_cast<int64_t>(s.input_nodes.size()), 37}));
  for (size_t r = 0; r < s.input_nodes.size(); ++r)
    for (int64_t c = 0; c < 37; ++c) ASSERT_EQ(y(static_cast<int64_t>(r), c), x(s.input_nodes[r], c));
}

// Outputs of 32 MiB and more are written with streaming stores (whole 16-byte groups: a width of
// 100 floats), narrower multiples of 4 floats or not (37) with plain copies: the same rows.
TEST(GatherRows, LargeOutputsMatchARowLoopWithStreamingStoresOrWithout) {
  for (const int64_t width : {int64_t{100}, int64_t{37}}) {
    SCOPED_TRACE("width " + std::to_string(width));
    const int64_t n = 20000, m = (int64_t{33} << 20) / (4 * width) + 3;  // just over 32 MiB out
    Tensor x({n, width});
    for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = static_cast<float>(i % 1000003) * 0.5f;
    std::vector<int64_t> ids(static_cast<size_t>(m));
    for (int64_t k = 0; k < m; ++k)
      ids[static_cast<size_t>(k)] = (k * 7919 + 13) % n;  // every row, scattered
    const Tensor y = gather_rows(x, ids);
    ASSERT_EQ(y.shape(), (Shape{m, width}));
    for (int64_t k = 0; k < m; ++k)
      for (int64_t c = 0; c < width; ++c)
        ASSERT_EQ(y(k, c), x(ids[static_cast<size_t>(k)], c)) << "row " << k;
  }
}

TEST(GatherRows, RejectsIdsOutOfRangeAndScalars) {
  const Tensor x({4, 3});
  expect_throw_naming<InvalidArgument>([&] { gather_rows(x, I64{0, 7}); }, {"ids[1]", "7", "N=4"});
  expect_throw_naming<InvalidArgument>([&] { gather_rows(x, I64{-1}); }, {"ids[0]", "-1"});
  const float one = 1.f;
  expect_throw_naming<ShapeError>([&] { gather_rows(ConstView(&one, Shape{}), I64{0}); }, {"rank"});
}

}  // namespace
}  // namespace edgeattn
