// One rank's part of a partitioned graph: its nodes, their in-edges, and its halo.
//
// Given part[v] (graph/partition.hpp), rank r owns the nodes with part[v] == r as destinations,
// with all their in-edges. Local ids (the DGL/PyG block convention, graph/neighbor_sampler.hpp):
//   destinations  0 .. num_owned - 1            owned[k], ascending global id
//   sources       0 .. num_owned - 1            the owned nodes again (destinations lead sources)
//                 num_owned .. num_src - 1      halo[k]: remote sources, grouped by owning rank
//                                               (rank 0's first), ascending global id within
// so a layer's input for the sources is [its owned rows; the halo rows], and the halo rows from
// rank q arrive as one contiguous block (dist/halo_exchange.hpp). send_index lists, per rank q, the
// owned rows q needs, in q's halo order, so one MPI_Alltoallv carries a layer's halo.
//
// The local graph is [num_owned x num_src], CSR by destination with ascending local columns (the
// in-edges of a row may come in another order than in the global graph: owned sources first);
// edge_ids[e] is the global CSR position of local edge e, so per-edge data follows.
//
// Built from the whole graph by every rank for itself (a pure function of graph, part and rank:
// no communication), and consistent across ranks by construction: send_rows[q] on rank r equals
// recv_rows[r] on rank q, and the rows are listed in the same order on both sides.
//
// Example:
//   auto part = partition_nodes(g, {.parts = comm.size(), .method = PartitionMethod::metis});
//   dist::LocalPartition p = dist::make_local_partition(g, part, comm.size(), comm.rank());
//   Tensor x_src = gather_rows(features, p.sources());       // [p.num_src(), F]
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/graph/graph.hpp"

namespace edgeattn::dist {

struct LocalPartition {
  int rank = 0;
  int parts = 1;
  int64_t num_nodes = 0;            ///< of the whole graph
  std::vector<int64_t> owned;       ///< [num_owned] global ids, ascending
  std::vector<int64_t> halo;        ///< [num_halo] global ids, by owner rank then ascending
  std::vector<int64_t> recv_rows;   ///< [parts] halo rows from each rank (0 for this rank)
  std::vector<int64_t> send_rows;   ///< [parts] owned rows each rank needs (0 for this rank)
  std::vector<int32_t> send_index;  ///< [sum(send_rows)] local (owned) index of each row sent
  Graph graph;                      ///< [num_owned x num_src] in local ids
  std::vector<int64_t> edge_ids;    ///< [graph.num_edges()] global CSR position of each edge

  int64_t num_owned() const { return static_cast<int64_t>(owned.size()); }
  int64_t num_halo() const { return static_cast<int64_t>(halo.size()); }
  int64_t num_src() const { return num_owned() + num_halo(); }
  /// [num_src] global id of each local source: owned, then halo.
  std::vector<int64_t> sources() const;
};

/// Rank `rank`'s part of a square graph under `part` ([num_nodes], entries in [0, parts)).
/// InvalidArgument when part has the wrong length or an entry out of range, or rank is not in
/// [0, parts), or the rank owns no node.
LocalPartition make_local_partition(const Graph& graph, std::span<const int32_t> part, int parts, int rank);

/// What is wrong with one side of rank `rank`'s exchange plan (recv_rows against num_halo,
/// send_rows against send_index's size): each count must be in [0, total] (so that the sum cannot
/// wrap), 0 for the rank itself, and the counts must add up to `total`. Empty when they fit; else
/// "entry q is c, expected ..." or "the counts add up to s, expected t".
std::string exchange_counts_error(std::span<const int64_t> counts, int rank, int64_t total);

}  // namespace edgeattn::dist
