// Locality orderings of a graph's nodes, and metrics of how local its edges are.
//
// An ordering is returned as `new_of_old` (new_of_old[i] is the new id of old node i), ready for
// permute (graph/transforms.hpp) or data::reorder (data/preprocess.hpp). Numbering neighbours
// close together makes the sources a row gathers (key/value rows in attention) sit near each other
// and near the row itself, so caches and prefetchers see less scattered traffic.
//
//   rcm_ordering     reverse Cuthill-McKee (Cuthill & McKee 1969; George & Liu 1981): breadth-first
//                    from a pseudo-peripheral node of each component, neighbours by ascending
//                    degree, then reversed. Minimises bandwidth heuristically. Boost.Graph's
//                    cuthill_mckee_ordering, from starts whose searches touch only their own
//                    component (Boost's own start search costs O(n) per component: minutes on a
//                    graph with many isolated nodes, as R-MAT graphs have). The same order as
//                    Boost's.
//   amd_ordering     approximate minimum degree (Amestoy, Davis & Duff 1996; SuiteSparse AMD):
//                    a fill-reducing order; clusters dense regions, not a bandwidth order.
//   degree_ordering  nodes by decreasing degree (in + out), ties by id: hubs first, as in the
//                    "degree sort" of Balaji & Lucia (IISWC 2018).
//   partition_ordering  nodes by METIS part (graph/partition.hpp: edge-cut k-way parts of about
//                    `part_size` nodes), ascending ids within a part: a graph's communities
//                    become id ranges, so a row's sources (or a sampled block's, numbered by
//                    ascending id) sit in a few ranges that fit in cache. The reordering of
//                    graph-partition-based GNN systems (Cluster-GCN's clusters, DGL's
//                    reorder_graph(node_permute_algo='metis')). Needs METIS.
// All three look at the symmetrized pattern without self-loops (direction does not matter to
// locality) and are deterministic.
//
// Example:
//   auto order = edgeattn::rcm_ordering(g);
//   auto h = edgeattn::permute(g, order).graph;
//   edgeattn::bandwidth(h) <= edgeattn::bandwidth(g);          // usually far smaller
//   edgeattn::mean_edge_distance(h);                            // mean |i - j| over edges
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

/// Reverse Cuthill-McKee; new_of_old, [num_nodes]. Throws GraphError unless square.
std::vector<int64_t> rcm_ordering(const Graph& graph);

/// SuiteSparse AMD on the symmetrized pattern; new_of_old, [num_nodes]. Throws GraphError unless
/// square; std::bad_alloc when AMD runs out of memory.
std::vector<int64_t> amd_ordering(const Graph& graph);

/// Decreasing total degree (in-degree + out-degree, self-loops ignored), ties by ascending id;
/// new_of_old, [num_nodes]. Throws GraphError unless square.
std::vector<int64_t> degree_ordering(const Graph& graph);

/// Nodes grouped by METIS part, ceil(num_nodes / part_size) parts (none below two parts: the
/// identity), ascending ids within a part; new_of_old, [num_nodes]. Throws GraphError unless
/// square; InvalidArgument when part_size < 1 or the build has no METIS (metis_available()).
std::vector<int64_t> partition_ordering(const Graph& graph, int64_t part_size = 4096);

/// How far apart the endpoints of edges are (square graphs; GraphError otherwise).
struct Locality {
  int64_t bandwidth = 0;            ///< max |i - j| over edges i <- j (0 without edges)
  double mean_edge_distance = 0.0;  ///< mean |i - j| over edges (0 without edges)
};

Locality locality(const Graph& graph);
/// locality(graph).bandwidth
int64_t bandwidth(const Graph& graph);
/// locality(graph).mean_edge_distance
double mean_edge_distance(const Graph& graph);

}  // namespace edgeattn
