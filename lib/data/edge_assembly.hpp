// Internal: turns the edge list a file stores into a Graph plus per-edge weights in the graph's
// CSR order, with the loaders' shared policies (used by the npz and OGB readers).
//
//   stored entry k is the edge src[k] -> dst[k] with weight[k] (weight empty = all 1)
//   undirected: the reverse of every stored edge is added; where both directions are stored,
//               each keeps its own weight, a direction that exists only as a mirror takes the
//               weight of the entry it mirrors
//   duplicates: merged; the merged edge's weight is the sum of its stored entries (as scipy sums
//               duplicate CSR entries)
//   self_loops: keep / remove / add (an added loop weighs 1)
// edge_weight comes back empty when every final weight is 1.
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/graph/build.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn::data {

struct AssembledGraph {
  Graph graph;
  std::vector<float> edge_weight;  // [num_edges] in CSR order, or empty when all 1
  int64_t stored_entries = 0;
  int64_t stored_self_loops = 0;
};

AssembledGraph assemble_graph(int64_t num_nodes, std::vector<int64_t> src, std::vector<int64_t> dst,
                              const std::vector<float>& weight, bool undirected, SelfLoops self_loops);

}  // namespace edgeattn::data
