// Structural transforms of a Graph: self-loops, symmetrization, relabelling, induced subgraphs.
//
// Every transform returns the new graph together with `old_edge`, the map from each new CSR edge
// to the CSR position of the same edge in the input graph (-1 for an edge the transform added), so
// per-edge data such as weights can follow:
//   new_weight[e] = old_edge[e] >= 0 ? old_weight[old_edge[e]] : fill;
//
// Node relabellings are always given as `new_of_old`: new_of_old[i] is the new id of old node i
// (a permutation of [0, n)). `invert_permutation` turns it into old_of_new and back.
//
// All transforms except `to_undirected` work row-parallel (core/parallel.hpp) in O(E + N) plus a
// per-row sort for `permute`; results never depend on the thread count.
//
// Example (PyG's GATConv preprocessing, weights following the edges):
//   auto t = edgeattn::add_self_loops(edgeattn::remove_self_loops(g).graph);
//   t.graph;       // every node has exactly one self-loop
//   t.old_edge;    // [t.graph.num_edges()] old CSR position of each edge, -1 for the new loops
//
//   auto p = edgeattn::permute(g, new_of_old);   // node i becomes new_of_old[i]
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

/// A transformed graph and where its edges came from.
struct TransformedGraph {
  Graph graph;
  /// [graph.num_edges()] CSR position in the input graph of each edge, -1 for an added edge.
  std::vector<int64_t> old_edge;
};

/// `to_undirected`'s result: also says, for each edge i <- j, where its reverse j <- i was.
struct UndirectedGraph {
  Graph graph;
  /// [graph.num_edges()] CSR position in the input of the same edge (i <- j), -1 when only its
  /// reverse was in the input. Repeated input edges map to the first of them.
  std::vector<int64_t> old_edge;
  /// [graph.num_edges()] CSR position in the input of the reverse edge (j <- i), -1 when absent.
  /// For a self-loop it equals old_edge.
  std::vector<int64_t> old_reverse_edge;
};

/// Ensures every node has a self-loop: existing edges are kept as they are (old_edge = their
/// position), a loop is added (old_edge = -1) to each node without one. Throws GraphError unless
/// the graph is square.
TransformedGraph add_self_loops(const Graph& graph);

/// Drops every edge i <- i. Throws GraphError unless the graph is square.
TransformedGraph remove_self_loops(const Graph& graph);

/// The union of the graph with its reverse: i <- j is an edge iff j <- i or i <- j was one.
/// Repeated edges are merged into one; self-loops are kept (once). Throws GraphError unless the
/// graph is square.
UndirectedGraph to_undirected(const Graph& graph);

/// True when every edge i <- j has its reverse j <- i (square graphs only; false otherwise).
bool is_symmetric(const Graph& graph);

/// Relabels the nodes: old node i becomes node new_of_old[i]; edge i <- j becomes
/// new_of_old[i] <- new_of_old[j]. Throws GraphError unless the graph is square and new_of_old is
/// a permutation of [0, num_nodes) (naming the first bad entry).
TransformedGraph permute(const Graph& graph, std::span<const int64_t> new_of_old);

/// The subgraph on `nodes` (distinct ids, any order): new node k is old node nodes[k]; the edges
/// are those with both ends in `nodes`. Throws GraphError unless the graph is square, and when a
/// node is out of range or repeated.
TransformedGraph induced_subgraph(const Graph& graph, std::span<const int64_t> nodes);

/// Throws GraphError unless `perm` is a permutation of [0, n); `what` names it in the message.
void check_permutation(std::span<const int64_t> perm, int64_t n, const char* what = "permutation");

/// The inverse permutation: inv[perm[i]] = i (new_of_old <-> old_of_new). Validates like
/// check_permutation with n = perm.size().
std::vector<int64_t> invert_permutation(std::span<const int64_t> perm);

}  // namespace edgeattn
