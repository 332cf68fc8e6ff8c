// Loader for graph datasets stored as .npz in the gnn-benchmark layout (Shchur et al., "Pitfalls
// of GNN evaluation"; gnnbench/data/io.py::load_npz_to_sparse_graph), e.g. cora.npz, citeseer.npz,
// amazon_electronics_*.npz, ms_academic_*.npz.
//
// Members read (any other member is ignored with a note):
//   adj_data, adj_indices, adj_indptr, adj_shape   CSR adjacency [N, N]; entry (r, c) is the edge
//                                                  r -> c (possibly not symmetric)
//     or adj_matrix                                dense [N, N] adjacency (non-zero = edge)
//   attr_data, attr_indices, attr_indptr, attr_shape   CSR node features [N, F] (kept sparse)
//     or attr_matrix                               dense [N, F] features
//   labels                                         [N] integer class per node (any int dtype;
//                                                  -1 = unlabelled), or [N, C] 0/1 multi-label
//     or labels_data/_indices/_indptr/_shape       CSR [N, C] multi-label
//   node_names, attr_names, class_names            optional string (or integer) arrays
//   adj_rows_are_destinations                      optional 0-d bool; True: CSR row i lists the
//                                                  *sources* j of edges j -> i (Graph's own layout,
//                                                  as write_npz writes it; data/npz_writer.hpp)
//   idx_train, idx_val, idx_test                   optional int64 node ids (sorted, disjoint): the
//                                                  split named "default" (all three or none)
//
// The graph is built with Graph's convention (edge r -> c stored at row c). Stored duplicate
// entries are merged (their weights summed, as scipy does); edge weights go to
// Dataset::edge_weight only when some final weight differs from 1. The gnn-benchmark files store no
// splits (`splits` stays empty); files with idx_* members get the split "default" (also the
// default split). Largest-component extraction is not done here.
//
// Example:
//   edgeattn::data::Dataset ds = edgeattn::data::load_npz("datasets/cora/npz/cora.npz",
//                                                         {.undirected = true});
//   ds.num_nodes();   // 2708
//   ds.num_edges();   // 10556 (5278 pairs, both directions)
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/data/npy.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::data {

struct NpzOptions {
  /// Add the reverse of every stored edge (the stored direction's weight wins when both exist).
  bool undirected = false;
  /// keep (as stored), remove, or add exactly one per node (weight 1).
  SelfLoops self_loops = SelfLoops::keep;
  /// Dataset::name; the file's stem ("cora") when empty.
  std::string name;
  NpzLimits limits;
  /// Read a dense attr_matrix in place instead of into memory (data/mapped_features.hpp: it must be
  /// a stored, C-order float32 member; ParseError otherwise). load_npz only: the *_from_bytes and
  /// *_from_arrays forms reject it (InvalidArgument). Sparse features (attr_data ...) load as usual.
  /// Mapped rows are used as stored: the member's CRC-32 and its values are not checked at load
  /// (that would read the whole member, which may exceed memory), so a corrupt or NaN row shows
  /// only as training's "the ... loss became nan" error.
  bool map_features = false;
};

/// Loads a gnn-benchmark .npz file. Throws IoError when the file cannot be read, ParseError naming
/// the file and member when the archive or an array is malformed or the arrays disagree.
/// Memory: the file is memory-mapped and each member released once parsed, and members are
/// dropped as the dataset takes them over, so the peak stays near the size of the dataset plus
/// its largest member (not the file plus copies of it).
Dataset load_npz(const std::filesystem::path& path, const NpzOptions& options = {});

/// The same from the archive's bytes; `what` names it in errors (and is the default name).
Dataset load_npz_from_bytes(std::string_view bytes, const std::string& what, const NpzOptions& options = {});

/// The same from already-parsed arrays (key -> array, as parse_npz returns).
Dataset dataset_from_npz_arrays(const std::map<std::string, NpyArray>& arrays, const std::string& what,
                                const NpzOptions& options = {});
/// The same, consuming the arrays: each member is freed as soon as the dataset holds its data.
Dataset dataset_from_npz_arrays(std::map<std::string, NpyArray>&& arrays, const std::string& what,
                                const NpzOptions& options = {});

}  // namespace edgeattn::data
