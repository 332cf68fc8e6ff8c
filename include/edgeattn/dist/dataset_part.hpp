// One rank's share of a dataset, before any model preparation, and the partition files that
// hold it (`edgeattn partition`), so that each rank of a large run reads only its own part.
//
// A DatasetPart is the rank's LocalPartition cut from the dataset's graph as loaded (no
// self-loops added: the model adds them to the part, dist/distributed_training.hpp), the raw
// features of its sources, the edge attributes of its edges, the labels of its owned nodes, and
// where the split's nodes are among them (SplitPart: local rows and their positions in the
// split's node list, so gathered results come back in the one-process order).
//
// Partition files: a directory with `partitions.txt` (key=value lines: parts, num_nodes, the
// dataset's name, format and metric, the method and the partition's quality) and one
// `part-<r>-of-<P>.npz` per rank, all written atomically. Members of a part file (numpy reads
// them): owned, halo, recv_rows, send_rows (int64), send_index (int32), indptr (int64),
// indices (int32: local sources), edge_ids (int64: CSR position in the whole graph), features
// (float32 [num_src, F]), edge_attr (float32 [E_local, D], when present), labels (int64
// [num_owned], or float32 [num_owned, C] multi-hot), train_rows / train_pos / val_rows /
// val_pos / test_rows / test_pos (int64), sizes (int64 [6]: rank, parts, num_nodes, and the
// three split sizes). read_partition checks every array against the others and names the file,
// the member, what was expected and what was found.
//
// Example:
//   auto part = partition_nodes(ds.graph, {.parts = 4, .method = PartitionMethod::metis});
//   dist::write_partitions("cora.parts", ds, ds.default_split, part, 4, PartitionMethod::metis);  // once
//   dist::DatasetPart mine = dist::read_partition("cora.parts", 4, rank);  // on each rank
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/dist/local_partition.hpp"
#include "edgeattn/graph/partition.hpp"

namespace edgeattn::dist {

/// Where one split's nodes are on a rank.
struct SplitPart {
  std::vector<int64_t> rows;       ///< local rows (indices into owned) of this rank's nodes of the split
  std::vector<int64_t> positions;  ///< their positions in the whole split's node list
  int64_t total = 0;               ///< the whole split's size
};

struct DatasetPart {
  std::string name, format;
  /// From partition files (read_partition): the split's name, the method, and the quality of the
  /// whole partition (parts, edge_cut, edge_imbalance, node_imbalance, halo_fraction; no per-part
  /// vectors; node_imbalance is 0 in files written before it was recorded).
  std::string split, method;
  PartitionQuality quality;
  LocalPartition part;
  data::Features features;  ///< [part.num_src(), F]: the dataset's features of the local sources
  Tensor edge_attr;         ///< [part.graph.num_edges(), D], absent when the dataset has none
  data::Labels labels;      ///< of the owned nodes: row k is node part.owned[k]
  SplitPart train, val, test;
};

/// Rank `rank`'s share of `ds` under `part` ([num_nodes], entries in [0, parts)); `split` is the
/// split to train on. InvalidArgument as make_local_partition, or when split nodes are out of range.
DatasetPart make_dataset_part(const data::Dataset& ds, const data::Split& split,
                              std::span<const int32_t> part, int parts, int rank);

/// The file of rank `rank`: dir / "part-<rank>-of-<parts>.npz".
std::filesystem::path partition_file(const std::filesystem::path& dir, int parts, int rank);

/// Writes partitions.txt and every rank's part file into `dir` (created if missing), one part in
/// memory at a time. `split_name` (the split's key in ds.splits), `method` and the partition's
/// quality are recorded in partitions.txt. Returns the quality.
PartitionQuality write_partitions(const std::filesystem::path& dir, const data::Dataset& ds,
                                  const std::string& split_name, std::span<const int32_t> part, int parts,
                                  PartitionMethod method);

/// Reads rank `rank`'s part. IoError when the file is missing (naming it and the rank),
/// ParseError when it is corrupt or does not match partitions.txt or the other members (naming
/// the member, the expected and the found value); InvalidArgument when `parts` is not the
/// directory's part count.
DatasetPart read_partition(const std::filesystem::path& dir, int parts, int rank);

}  // namespace edgeattn::dist
