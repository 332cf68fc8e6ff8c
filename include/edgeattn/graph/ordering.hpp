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
//   degree_group_ordering  nodes by degree group, highest first, ascending ids within a group:
//                    the "degree-based grouping" (DBG) of Faldu, Diamond & Grot (IISWC 2019).
//                    Groups are powers of two of the mean degree (below mean / 2, [mean / 2,
//                    mean), [mean, 2 mean), ...), so hubs are packed together as with the full
//                    sort, while nodes of one group keep their input order (and whatever
//                    community structure that order has), which a full sort scatters.
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
#include <string>
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

/// Each node's degree as degree_ordering counts it (in + out, self-loops ignored), [num_nodes].
/// Throws GraphError unless square.
std::vector<int64_t> total_degrees(const Graph& graph);

/// Degree-based grouping (see the file comment); new_of_old, [num_nodes]. Throws GraphError
/// unless square.
std::vector<int64_t> degree_group_ordering(const Graph& graph);

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

/// Whether renumbering a graph's nodes by degree_group_ordering is likely to speed up attention
/// layers over it, judged from its structure alone: the skew-aware selective reordering of
/// Balaji & Lucia ("When is graph reordering an optimization?", IISWC 2018), with the skew test of
/// the GAP Benchmark Suite's WorthRelabelling (mean degree over median degree above 1.3). Yes
/// when all of these hold:
///   the rows a layer gathers, num_nodes * row_bytes, exceed kReorderCacheBytes (rows that fit
///     in a last-level cache are cached in any order);
///   degrees are skewed: mean / median of total_degrees > kReorderSkew (hubs to pack together;
///     1 for a regular graph);
///   the numbering has no locality to lose: the mean |i - j| over edges is at least
///     kReorderSpread of num_nodes (a random numbering gives about 1/3; a community order, far
///     less).
/// `edgeattn train --reorder auto` (its default) follows it. Measured on the 1M-node / 10M-edge
/// R-MAT graph (skew 19, spread 0.34; 2 threads, Zen 3): the full-batch GAT epoch took 0.92-1.02x
/// the input order's past the first epoch (median 0.96) and 0.85-1.04x in the first (median
/// 0.90), after 0.6-1.0 s of renumbering (bench/RESULTS.md); on the products-like SBM (skew 1.0)
/// it declines.
///
/// Example:
///   const OrderingAdvice a = edgeattn::advise_ordering(g, /*row_bytes=*/8 * 8 * 4);
///   if (a.reorder) ds = edgeattn::data::reorder(ds, edgeattn::degree_group_ordering(ds.graph));
///   std::cerr << a.reason << "\n";
struct OrderingAdvice {
  bool reorder = false;       ///< renumber by degree_group_ordering
  std::string reason;         ///< why, or why not, naming the figures below
  double gathered_bytes = 0;  ///< num_nodes * row_bytes
  double skew = 0;            ///< mean / median total degree (0 without nodes)
  double spread = 0;          ///< mean |i - j| over edges / num_nodes (0 without edges)
};

inline constexpr double kReorderCacheBytes = 32.0 * (1 << 20);
inline constexpr double kReorderSkew = 1.3;
inline constexpr double kReorderSpread = 1.0 / 6.0;

/// Advice for `graph` (any shape: a bipartite one is never renumbered) when each node's gathered
/// row takes `row_bytes` (a layer's heads x channels x 4). Throws InvalidArgument when row_bytes
/// < 1.
OrderingAdvice advise_ordering(const Graph& graph, int64_t row_bytes);

}  // namespace edgeattn
