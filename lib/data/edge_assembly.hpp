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
// edge attributes [stored, d] (optional) follow the same rules row by row: the sum of the merged
// stored entries (a stored direction wins over a mirror), 0 for an added self-loop.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn::data {

struct AssembledGraph {
  Graph graph;
  std::vector<float> edge_weight;  // [num_edges] in CSR order, or empty when all 1
  Tensor edge_attr;                // [num_edges, d] in CSR order, or absent when none was given
  int64_t stored_entries = 0;
  int64_t stored_self_loops = 0;
};

AssembledGraph assemble_graph(int64_t num_nodes, std::vector<int64_t> src, std::vector<int64_t> dst,
                              const std::vector<float>& weight, bool undirected, SelfLoops self_loops,
                              std::span<const float> edge_attr = {}, int64_t edge_attr_dim = 0);

/// Per-edge rows [stored, d] (row-major in `attr`) of the input edges of `graph` (built by
/// build_graph, whose input edges k < stored are the stored entries and k >= stored mirror entry
/// k - stored) in the graph's CSR order: each CSR edge gets the sum of the stored entries merged
/// into it, else the sum of the mirrored ones, else (an added self-loop) 0.
Tensor edge_rows_in_csr_order(const Graph& graph, std::span<const float> attr, int64_t d, int64_t stored);

}  // namespace edgeattn::data
