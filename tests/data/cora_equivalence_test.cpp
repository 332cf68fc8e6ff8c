// The Planetoid and LINQS versions of Cora are the same graph with the same features, up to the
// numbering of the nodes (and of the classes). We find the node correspondence without trusting
// either file's order: colour nodes by their feature vector, refine by the multiset of neighbour
// colours (Weisfeiler-Lehman) until stable, and require (1) the same colour classes with the same
// sizes in both, (2) every uniquely coloured node's edges to map onto edges, and (3) one
// consistent class-name mapping. The npz version must agree too (it stores LINQS directed; made
// undirected it is the same graph).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "edgeattn/data/linqs.hpp"
#include "edgeattn/data/npz.hpp"
#include "edgeattn/data/planetoid.hpp"
#include "edgeattn/graph/components.hpp"

namespace edgeattn::data {
namespace {

const std::filesystem::path kData = std::filesystem::path(EDGEATTN_SOURCE_DIR) / "datasets";

uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xbf58476d1ce4e5b9ULL;
}

// Node colours after WL refinement from feature-vector colours.
std::vector<uint64_t> colours(const Dataset& ds, int rounds) {
  const CsrMatrix& x = ds.features.sparse();
  std::vector<uint64_t> c(static_cast<size_t>(ds.num_nodes()));
  for (int64_t i = 0; i < ds.num_nodes(); ++i) {
    uint64_t h = 1469598103934665603ULL;
    for (const int32_t col : x.row_indices(i)) h = mix(h, static_cast<uint64_t>(col));
    c[static_cast<size_t>(i)] = h;
  }
  for (int r = 0; r < rounds; ++r) {
    std::vector<uint64_t> next(c.size());
    for (int64_t i = 0; i < ds.num_nodes(); ++i) {
      std::vector<uint64_t> nb;
      for (const int32_t j : ds.graph.row(i)) nb.push_back(c[static_cast<size_t>(j)]);
      std::sort(nb.begin(), nb.end());
      uint64_t h = mix(c[static_cast<size_t>(i)], 0x51ed);
      for (const uint64_t v : nb) h = mix(h, v);
      next[static_cast<size_t>(i)] = h;
    }
    c.swap(next);
  }
  return c;
}

TEST(CoraEquivalence, PlanetoidAndLinqsAreTheSameGraphUpToRelabelling) {
  const Dataset planetoid = load_planetoid(kData / "cora/planetoid", "cora");
  const Dataset linqs = load_linqs(kData / "cora/linqs", "cora");
  ASSERT_EQ(planetoid.num_nodes(), linqs.num_nodes());
  ASSERT_EQ(planetoid.num_edges(), linqs.num_edges());
  ASSERT_EQ(planetoid.num_features(), linqs.num_features());
  ASSERT_EQ(planetoid.features.nnz(), linqs.features.nnz());

  const auto cp = colours(planetoid, 3), cl = colours(linqs, 3);
  std::map<uint64_t, std::vector<int64_t>> by_colour_p, by_colour_l;
  for (int64_t i = 0; i < planetoid.num_nodes(); ++i) by_colour_p[cp[static_cast<size_t>(i)]].push_back(i);
  for (int64_t i = 0; i < linqs.num_nodes(); ++i) by_colour_l[cl[static_cast<size_t>(i)]].push_back(i);
  // (1) identical colour classes (feature vectors + 3-hop neighbourhood structure).
  ASSERT_EQ(by_colour_p.size(), by_colour_l.size());
  int64_t unique = 0;
  std::vector<int64_t> to_linqs(static_cast<size_t>(planetoid.num_nodes()), -1);
  for (const auto& [colour, nodes] : by_colour_p) {
    const auto it = by_colour_l.find(colour);
    ASSERT_NE(it, by_colour_l.end()) << "a Planetoid node has no LINQS counterpart";
    ASSERT_EQ(nodes.size(), it->second.size());
    if (nodes.size() == 1) {
      to_linqs[static_cast<size_t>(nodes[0])] = it->second[0];
      ++unique;
    }
  }
  EXPECT_GT(unique, 2500);  // nearly every node is pinned down; the rest are symmetric twins

  // (2) edges between uniquely identified nodes map onto edges.
  int64_t checked = 0;
  for (int64_t i = 0; i < planetoid.num_nodes(); ++i) {
    const int64_t li = to_linqs[static_cast<size_t>(i)];
    if (li < 0) continue;
    for (const int32_t j : planetoid.graph.row(i)) {
      const int64_t lj = to_linqs[static_cast<size_t>(j)];
      if (lj < 0) continue;
      const auto row = linqs.graph.row(li);
      EXPECT_TRUE(std::binary_search(row.begin(), row.end(), static_cast<int32_t>(lj))) << i << " -> " << j;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);

  // (3) labels agree through one class bijection.
  std::map<int32_t, std::set<int32_t>> class_map;
  for (int64_t i = 0; i < planetoid.num_nodes(); ++i)
    if (to_linqs[static_cast<size_t>(i)] >= 0)
      class_map[planetoid.labels.classes[static_cast<size_t>(i)]].insert(
          linqs.labels.classes[static_cast<size_t>(to_linqs[static_cast<size_t>(i)])]);
  ASSERT_EQ(class_map.size(), 7u);
  std::set<int32_t> images;
  for (const auto& [c, targets] : class_map) {
    EXPECT_EQ(targets.size(), 1u) << "Planetoid class " << c << " maps to several LINQS classes";
    images.insert(*targets.begin());
  }
  EXPECT_EQ(images.size(), 7u);
}

TEST(CoraEquivalence, NpzIsLinqsStoredDirected) {
  NpzOptions directed;
  const Dataset npz = load_npz(kData / "cora/npz/cora.npz", directed);
  LinqsOptions linqs_directed;
  linqs_directed.directed = true;
  const Dataset linqs = load_linqs(kData / "cora/linqs", "cora", linqs_directed);
  EXPECT_EQ(npz.num_nodes(), linqs.num_nodes());
  EXPECT_EQ(npz.num_edges(), 5429);
  EXPECT_EQ(linqs.num_edges(), 5429);
  EXPECT_EQ(npz.features.nnz(), linqs.features.nnz());
}

// gnn-benchmark's standardize(): undirected, no self-loops, largest connected component. The
// Pitfalls paper (Shchur et al. 2018) reports these sizes.
TEST(CoraEquivalence, LargestComponentsMatchThePitfallsPaper) {
  for (const auto& [name, nodes, edges] : std::vector<std::tuple<std::string, int64_t, int64_t>>{
           {"cora", 2485, 5069}, {"citeseer", 2110, 3668}}) {
    NpzOptions o;
    o.undirected = true;
    o.self_loops = SelfLoops::remove;
    const Dataset ds = load_npz(kData / name / "npz" / (name + ".npz"), o);
    const std::vector<int64_t> lcc = largest_connected_component(ds.graph);
    EXPECT_EQ(static_cast<int64_t>(lcc.size()), nodes) << name;
    int64_t directed = 0;
    std::vector<uint8_t> in(static_cast<size_t>(ds.num_nodes()), 0);
    for (const int64_t v : lcc) in[static_cast<size_t>(v)] = 1;
    for (const int64_t v : lcc)
      for (const int32_t u : ds.graph.row(v)) directed += in[static_cast<size_t>(u)];
    EXPECT_EQ(directed, 2 * edges) << name;
  }
}

}  // namespace
}  // namespace edgeattn::data
