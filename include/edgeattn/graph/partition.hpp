// Node partitions for distributed training: which part (rank) owns each node.
//
// A part owns its nodes as destinations, with their in-edges (rows of the CSR); the sources of
// those edges that other parts own are its halo, exchanged every layer (dist/halo_exchange.hpp).
// A good partition balances the work (edges + nodes per part) and keeps the halo small.
//
//   contiguous       nodes [k N / P, (k + 1) N / P) go to part k: no work at all, balanced in nodes
//                    only; the right choice when the ids already follow the graph's locality
//                    (an RCM ordering, graph/ordering.hpp).
//   degree_balanced  contiguous ranges with about the same in-edges + nodes each (the rows of a
//                    part are one range, as contiguous, but skewed degrees are balanced).
//   metis            METIS_PartGraphKway (Karypis & Kumar 1998) on the symmetrized pattern with
//                    two balance constraints, nodes and in-edges (each part within ~3% of the
//                    mean of both, as DistDGL), fixed seed: edge-cut parts with a far smaller
//                    halo on graphs with community structure. Needs the library built with METIS
//                    (metis_available()); InvalidArgument otherwise.
// Every method is deterministic: the same graph and part count give the same parts on every rank
// and every run, so each rank may compute the partition itself.
//
// Example:
//   std::vector<int32_t> part = edgeattn::partition_nodes(g, {.parts = 4, .method = PartitionMethod::metis});
//   PartitionQuality q = edgeattn::partition_quality(g, part, 4);   // q.halo_fraction, q.edge_cut, ...
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

enum class PartitionMethod { contiguous, degree_balanced, metis };

const char* to_string(PartitionMethod method);
/// "contiguous", "degree_balanced" (or "degree"), "metis"; InvalidArgument listing them otherwise.
PartitionMethod parse_partition_method(const std::string& name);
/// Whether this build has METIS (CMake option EDGEATTN_METIS, libmetis found).
bool metis_available();
/// The method a tool uses when none is named: metis where available, else degree_balanced.
PartitionMethod default_partition_method();

struct PartitionOptions {
  int64_t parts = 2;  ///< >= 1 and <= num_nodes (every part owns at least one node)
  PartitionMethod method = PartitionMethod::metis;
  uint64_t seed = 0;  ///< METIS's seed
};

/// part[v] in [0, parts) for every node v of a square graph -> [num_nodes]. GraphError when the
/// graph is not square; InvalidArgument when parts is out of range or METIS is unavailable;
/// Error when METIS fails or leaves a part empty (it may on tiny graphs: use degree_balanced).
std::vector<int32_t> partition_nodes(const Graph& graph, const PartitionOptions& options);

/// How good a partition is for halo exchange.
struct PartitionQuality {
  int64_t parts = 0;
  std::vector<int64_t> nodes;       ///< [parts] owned nodes
  std::vector<int64_t> edges;       ///< [parts] in-edges of the owned nodes (the part's work)
  std::vector<int64_t> halo_nodes;  ///< [parts] distinct remote sources each part receives
  int64_t edge_cut = 0;             ///< edges whose endpoints lie in different parts
  double edge_imbalance = 0;        ///< max(edges) / mean(edges) (1 is perfect)
  double node_imbalance = 0;        ///< max(nodes) / mean(nodes): the per-node work (projections)
  /// sum(halo_nodes) / num_nodes: the rows sent per layer, relative to the graph's node count.
  double halo_fraction = 0;
};

/// InvalidArgument when `part` does not have one entry in [0, parts) per node.
PartitionQuality partition_quality(const Graph& graph, std::span<const int32_t> part, int64_t parts);

}  // namespace edgeattn
