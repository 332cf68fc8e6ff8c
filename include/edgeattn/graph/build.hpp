// Building a Graph from an edge list (COO), with explicit policies.
//
// Edges are given as (src, dst) pairs, the PyG `edge_index` convention: edge k says that dst[k]
// attends to src[k]. Input may be unsorted and hold duplicates and self-loops; the policies say
// what to do with them. The result remembers, for each of its edges, which input edge it came
// from, so per-edge results (e.g. attention weights) can be mapped back to the caller's order.
//
// Example (PyG's GATConv defaults: drop existing self-loops, add one per node):
//   std::vector<int64_t> src = {0, 1, 1, 2}, dst = {1, 0, 2, 1};
//   auto g = edgeattn::build_graph(3, 3, src, dst,
//       {.self_loops = edgeattn::SelfLoops::add, .duplicates = edgeattn::Duplicates::merge});
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

enum class SelfLoops {
  keep,    ///< keep self-loops as given
  remove,  ///< drop every self-loop
  add,     ///< drop given self-loops, then add exactly one per node (requires num_dst == num_src)
};

enum class Duplicates {
  keep,   ///< keep repeated (src, dst) pairs as separate edges
  merge,  ///< keep the first occurrence; later ones map to it
  error,  ///< throw GraphError naming the first repeated pair
};

struct BuildOptions {
  SelfLoops self_loops = SelfLoops::keep;
  Duplicates duplicates = Duplicates::merge;
  /// Also add the reverse of every edge (requires num_dst == num_src). Reverse edges that were
  /// not in the input map to input id -1.
  bool symmetrize = false;
};

/// Builds the CSR-by-destination graph of the edges src[k] -> dst[k]. Throws GraphError when an
/// index is negative or out of range (naming k and the value), when the arrays differ in length,
/// or when a policy needs num_dst == num_src and they differ.
Graph build_graph(int64_t num_dst, int64_t num_src, std::span<const int64_t> src,
                  std::span<const int64_t> dst, const BuildOptions& options = {});

/// Same with 32-bit indices.
Graph build_graph(int64_t num_dst, int64_t num_src, std::span<const int32_t> src,
                  std::span<const int32_t> dst, const BuildOptions& options = {});

}  // namespace edgeattn
