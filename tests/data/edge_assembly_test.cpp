// assemble_graph's per-edge weights (lib/data/edge_assembly.hpp) against a reference that sums
// each CSR edge's entries by (src, dst) pair, over random edge lists with duplicates, both
// directions, self-loops and every self-loop policy; and its unit-weight shortcut (an empty
// edge_weight) taken exactly when every final weight is 1.
#include "data/edge_assembly.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace edgeattn::data {
namespace {

struct EdgeList {
  int64_t n = 0;
  std::vector<int64_t> src, dst;
  std::vector<float> weight;
};

// The weight of every CSR edge by the rules of edge_assembly.hpp, computed pair by pair: the sum
// of the stored entries src -> dst; if none, of the stored entries dst -> src when undirected;
// 1 for a self-loop under SelfLoops::add (which drops the stored ones and adds its own).
std::vector<float> reference_weights(const Graph& g, const EdgeList& in, bool undirected, SelfLoops loops) {
  std::map<std::pair<int64_t, int64_t>, double> stored;  // (src, dst) -> summed weight
  for (size_t k = 0; k < in.src.size(); ++k) stored[{in.src[k], in.dst[k]}] += in.weight[k];
  std::vector<float> w;
  const auto row_ptr = g.row_ptr();
  const auto col = g.col_idx();
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (int64_t e = row_ptr[static_cast<size_t>(i)]; e < row_ptr[static_cast<size_t>(i) + 1]; ++e) {
      const int64_t j = col[static_cast<size_t>(e)];
      if (i == j && loops == SelfLoops::add)
        w.push_back(1.f);
      else if (const auto it = stored.find({j, i}); it != stored.end())
        w.push_back(static_cast<float>(it->second));
      else if (const auto m = stored.find({i, j}); undirected && m != stored.end())
        w.push_back(static_cast<float>(m->second));
      else
        ADD_FAILURE() << "CSR edge " << j << " -> " << i << " matches no entry";
    }
  return w;
}

EdgeList random_edges(uint64_t seed, int64_t n, int64_t m, bool unit, bool allow_duplicates) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> node(0, n - 1);
  std::uniform_int_distribution<int> pick(0, 3);
  EdgeList l;
  l.n = n;
  std::set<std::pair<int64_t, int64_t>> seen;
  while (static_cast<int64_t>(l.src.size()) < m) {
    const int64_t s = node(rng), d = node(rng);
    if (!allow_duplicates && !seen.emplace(s, d).second) continue;
    l.src.push_back(s);
    l.dst.push_back(d);
    l.weight.push_back(unit ? 1.f : std::vector<float>{1.f, 0.5f, 2.f, 0.25f}[pick(rng)]);
  }
  return l;
}

void expect_weights(const EdgeList& in, bool undirected, SelfLoops loops, const char* what) {
  SCOPED_TRACE(what);
  const AssembledGraph a = assemble_graph(in.n, in.src, in.dst, in.weight, undirected, loops);
  const std::vector<float> want = reference_weights(a.graph, in, undirected, loops);
  bool all_one = true;
  for (const float w : want) all_one &= w == 1.f;
  if (all_one) {
    EXPECT_TRUE(a.edge_weight.empty()) << "every weight is 1: expected no weights";
  } else {
    EXPECT_EQ(a.edge_weight, want);
  }
}

TEST(EdgeAssembly, WeightsMatchThePairwiseReference) {
  for (const bool undirected : {false, true})
    for (const SelfLoops loops : {SelfLoops::keep, SelfLoops::remove, SelfLoops::add})
      for (const bool unit : {false, true})
        for (const bool dups : {false, true})
          for (uint64_t seed = 0; seed < 6; ++seed) {
            // 12 nodes, 40 entries: duplicates, both directions and self-loops all occur
            const EdgeList in = random_edges(seed, 12, 40, unit, dups);
            const std::string what = "undirected " + std::to_string(undirected) + " loops " +
                                     std::to_string(static_cast<int>(loops)) + " unit " +
                                     std::to_string(unit) + " duplicates " + std::to_string(dups) + " seed " +
                                     std::to_string(seed);
            expect_weights(in, undirected, loops, what.c_str());
          }
}

TEST(EdgeAssembly, UnitWeightsWithoutDuplicatesGiveNoWeights) {
  // 0 -> 1 and 1 -> 0 both stored, 2 -> 2 a self-loop, 1 -> 2 only one way
  const EdgeList in{3, {0, 1, 2, 1}, {1, 0, 2, 2}, {1, 1, 1, 1}};
  for (const bool undirected : {false, true})
    for (const SelfLoops loops : {SelfLoops::keep, SelfLoops::remove, SelfLoops::add})
      EXPECT_TRUE(assemble_graph(in.n, in.src, in.dst, in.weight, undirected, loops).edge_weight.empty());
}

TEST(EdgeAssembly, UnitWeightsOfARepeatedEntrySum) {
  // 0 -> 1 stored twice: the merged edge weighs 2, and so does its mirror 1 -> 0 when undirected
  const EdgeList in{3, {0, 1, 0}, {1, 2, 1}, {1, 1, 1}};
  const AssembledGraph directed = assemble_graph(in.n, in.src, in.dst, in.weight, false, SelfLoops::keep);
  ASSERT_EQ(directed.graph.num_edges(), 2);
  EXPECT_EQ(directed.edge_weight, (std::vector<float>{2, 1}));  // CSR rows 1 (from 0), 2 (from 1)
  const AssembledGraph undirected = assemble_graph(in.n, in.src, in.dst, in.weight, true, SelfLoops::keep);
  EXPECT_EQ(undirected.edge_weight, reference_weights(undirected.graph, in, true, SelfLoops::keep));
  EXPECT_EQ(undirected.edge_weight, (std::vector<float>{2, 2, 1, 1}));
  // a self-loop stored twice counts unless loops are removed or replaced
  const EdgeList loop{2, {1, 1, 0}, {1, 1, 1}, {1, 1, 1}};
  EXPECT_EQ(assemble_graph(loop.n, loop.src, loop.dst, loop.weight, false, SelfLoops::keep).edge_weight,
            (std::vector<float>{1, 2}));
  EXPECT_TRUE(
      assemble_graph(loop.n, loop.src, loop.dst, loop.weight, false, SelfLoops::remove).edge_weight.empty());
  EXPECT_TRUE(
      assemble_graph(loop.n, loop.src, loop.dst, loop.weight, false, SelfLoops::add).edge_weight.empty());
}

}  // namespace
}  // namespace edgeattn::data
