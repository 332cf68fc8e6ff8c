// Connected components of a graph, ignoring edge direction (weakly connected components), and the
// largest one, as gnn-benchmark's "standardize" keeps (Shchur et al., "Pitfalls of Graph Neural
// Network Evaluation", 2018).
//
// Computed with Boost.Graph's connected_components (a depth-first search) over the symmetrized
// pattern of the graph (graph/boost_interop.hpp). Components are numbered in the order of their
// smallest node: component 0 holds node 0, component 1 holds the smallest node not in
// component 0, and so on.
//
// Example:
//   auto cc = edgeattn::connected_components(g);
//   cc.count;                 // number of components (isolated nodes count as one each)
//   cc.component[v];          // component id of node v, [num_nodes]
//   auto keep = edgeattn::largest_connected_component(g);   // sorted node ids
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

struct Components {
  std::vector<int32_t> component;  // [num_nodes] component id in [0, count)
  std::vector<int64_t> size;       // [count] nodes per component
  int64_t count = 0;
};

/// Weakly connected components. Throws GraphError unless the graph is square.
Components connected_components(const Graph& graph);

/// The nodes of the largest weakly connected component, ascending; among components of equal
/// size, the one holding the smallest node id. Empty for the empty graph. Throws GraphError unless
/// the graph is square.
std::vector<int64_t> largest_connected_component(const Graph& graph);

}  // namespace edgeattn
