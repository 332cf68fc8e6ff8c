// Writing NumPy .npy arrays and .npz archives, and datasets as .npz files that numpy.load reads
// (and that load_npz reads back exactly).
//
// An array is written as an .npy member: v1.0 header (v2.0 when the header would exceed 65535
// bytes), little-endian C order, the header padded so the data starts at a multiple of 64 bytes
// (as numpy does). The archive is a ZIP of *stored* (uncompressed) members named "<key>.npy",
// each member's data also at a multiple of 64 bytes of the file (padding in the local header's
// extra field, as Android's zipalign does), so arrays can be mapped in place (data/mapped_features.hpp);
// ZIP64 fields are used for a member or offset of 4 GiB or more (or always, with force_zip64, as
// numpy >= 1.15 does). Timestamps are fixed (1980-01-01) so equal inputs give equal files. The
// file is written through write_file_atomic.
//
// write_npz(dataset) writes these members (N nodes, E edges, F features):
//   adj_indptr    int64   [N + 1]   CSR *by destination*, as Graph stores it: row i lists the
//   adj_indices   int32   [E]       sources j of the edges j -> i (sorted within the row)
//   adj_data      float32 [E]       ones (the dataset's edge weights when it has any)
//   adj_shape     int64   [2]       (N, N)
//   adj_rows_are_destinations  bool []  True: tells load_npz the row is the destination (the
//                                  gnn-benchmark files it also reads use rows = sources)
//   attr_matrix   float32 [N, F]    dense features, C order; absent when F = 0 or sparse
//   attr_data, attr_indices, attr_indptr, attr_shape   sparse features as CSR by node (float32,
//                                  int32, int64 [N + 1], int64 [2]: gnn-benchmark's layout)
//   labels        int64   [N]       class id, -1 = unlabelled (multi-label: int64 [N, C] of 0/1)
//   node_names, class_names  <U     when the dataset has them
//   dataset_name  <U      []        the dataset's name (load_npz names the dataset by it)
//   idx_train, idx_val, idx_test  int64 [*]  the dataset's default split, sorted node ids;
//                                  absent when the dataset has no split
//   split<k>_train, split<k>_val, split<k>_test  int64 [*]  its other splits, k = 1, 2, ...
//   split_names   <U      [K]       every split's name, the default's first (k = 0: idx_*)
// A dataset with edge attributes, many graphs (graph_ptr) or graph labels is refused
// (InvalidArgument): this layout does not hold them.
//   extra members given in NpzWriteOptions::extra (e.g. att_src, att_dst of `edgeattn bench
//   write-inputs`)
// In numpy: edges j -> i are (src, dst) = (adj_indices, np.repeat(np.arange(N), np.diff(adj_indptr))).
//
// Example:
//   edgeattn::data::Dataset ds = edgeattn::data::load_dataset("cora");
//   edgeattn::data::write_npz(ds, "cora_input.npz");
//   edgeattn::data::Dataset back = edgeattn::data::load_npz("cora_input.npz");  // same arrays
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/data/npy.hpp"

namespace edgeattn::data {

/// An array from typed values; `shape`'s product must equal values.size() (InvalidArgument
/// otherwise). An empty shape makes a 0-d array of one value.
NpyArray make_npy(std::span<const float> values, std::vector<int64_t> shape);
NpyArray make_npy(std::span<const int32_t> values, std::vector<int64_t> shape);
NpyArray make_npy(std::span<const int64_t> values, std::vector<int64_t> shape);
/// A '<U<n>' string array (UTF-8 in, UTF-32 out, n the longest string's code points; numpy's
/// str arrays). InvalidArgument for invalid UTF-8 or a shape that does not hold values.size().
NpyArray make_npy_strings(const std::vector<std::string>& values, std::vector<int64_t> shape);
/// A 0-d bool array ('|b1').
NpyArray make_npy_bool(bool value);

/// The .npy file bytes of an array (header + data). Throws InvalidArgument when the dtype is not
/// one parse_npy reads or the byte count does not match the shape.
std::string npy_bytes(const NpyArray& array);

struct NpzMember {
  std::string key;  ///< member name without ".npy"
  NpyArray array;
};

struct NpzWriteOptions {
  /// ZIP64 extra fields on every member, as numpy writes them; otherwise only where needed.
  bool force_zip64 = false;
  /// Members added after the dataset's own (keys must not collide with them).
  std::vector<NpzMember> extra;
};

/// The .npz archive bytes (stored members, in the given order). Throws InvalidArgument on
/// duplicate or empty keys.
std::string npz_bytes(std::span<const NpzMember> members, bool force_zip64 = false);

/// Writes the members to `path` atomically. Throws IoError naming the path.
void write_npz_arrays(const std::filesystem::path& path, std::span<const NpzMember> members,
                      bool force_zip64 = false);

/// The dataset's members as listed in the header comment. Throws InvalidArgument when the graph
/// is not square (num_src != num_dst).
std::vector<NpzMember> dataset_npz_members(const Dataset& dataset);

/// Writes the dataset (plus options.extra) to `path` atomically.
void write_npz(const Dataset& dataset, const std::filesystem::path& path,
               const NpzWriteOptions& options = {});

}  // namespace edgeattn::data
