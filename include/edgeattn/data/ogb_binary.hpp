// OGB's binary node-property layout (the "-bin" archives; ogbn-papers100M: 111,059,956 nodes,
// 1,615,685,872 citation edges, 128 float16 features per node, 172 classes), read by streaming:
// the metadata without loading anything large, and the edges and features in blocks, so a
// machine that cannot hold the dataset (papers100M: ~57 GB of features and edges in memory) can
// still inspect it, convert it, or partition it.
//
//   <dir>/raw/data.npz         edge_index int [2, E] (row 0 sources, row 1 destinations: the
//                              edge src -> dst, as OGB stores citations), node_feat [N, F]
//                              (float16/32/64), num_nodes_list [1], num_edges_list [1], optional
//                              per-node arrays (node_year [N, 1])
//   <dir>/raw/node-label.npz   node_label [N, 1] float, NaN for unlabelled nodes
//   <dir>/split/<name>/{train,valid,test}.csv.gz   node ids (split "time" for papers100M)
//
// A directory small enough loads whole with load_ogb_node_dataset (data/ogb.hpp), which reads
// this layout too. Errors: IoError for a missing file; ParseError naming the file and member for
// arrays of the wrong dtype or shape, or counts that disagree (num_nodes_list vs node_feat rows,
// num_edges_list vs edge_index columns, node ids out of range in a block).
//
// Example:
//   edgeattn::data::OgbBinaryInfo info = edgeattn::data::ogb_binary_info("data/ogbn-papers100M/ogb");
//   info.num_nodes;                      // 111059956
//   info.bytes_to_load(/*undirected=*/true) / 1e9;   // ~150: too much for this machine
//   int64_t max_src = 0;
//   edgeattn::data::for_each_ogb_edge_block(dir, 1 << 24, [&](int64_t, auto src, auto) {
//     for (int64_t s : src) max_src = std::max(max_src, s);
//   });
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::data {

struct OgbBinaryInfo {
  std::string path;  ///< the dataset directory
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  ///< as stored (one direction per citation)
  int64_t num_features = 0;
  std::string feature_dtype;             ///< node_feat's descr ("<f2"), empty without features
  std::vector<std::string> node_arrays;  ///< other per-node members (node_year, ...)
  uint64_t compressed_bytes = 0;         ///< data.npz's members as stored
  /// From node-label.npz: nodes with a label and the class count (max label + 1); 0 without it.
  int64_t labelled = 0, num_classes = 0;
  /// Split name -> {train, valid, test} sizes (lines of each file).
  std::map<std::string, std::array<int64_t, 3>> splits;

  /// Memory a loaded Dataset needs: CSR graph with its input maps, float32 features, labels,
  /// plus the transient edge arrays of the build (undirected doubles the edges).
  uint64_t bytes_to_load(bool undirected) const;
};

/// The memory a load may take by default (OgbOptions::max_bytes = 0): $EDGEATTN_MAX_LOAD_BYTES
/// when set (a positive integer; InvalidArgument otherwise), else 3/4 of physical memory.
uint64_t default_load_limit();

/// Reads data.npz's directory and array headers, streams node-label.npz (N floats) and counts
/// the split files' lines. Memory: O(block), not O(N) or O(E).
OgbBinaryInfo ogb_binary_info(const std::filesystem::path& dir);

/// Calls fn(first, src, dst) for consecutive blocks of at most `block` edges in file order
/// (src[k] -> dst[k] is edge first + k), checking every id against num_nodes. Two streams over
/// edge_index (its rows are consecutive in the file), so memory is 2 x block x 8 bytes.
void for_each_ogb_edge_block(
    const std::filesystem::path& dir, int64_t block,
    const std::function<void(int64_t first, std::span<const int64_t> src, std::span<const int64_t> dst)>& fn);

/// Calls fn(first_row, rows) for consecutive blocks of at most `block_rows` rows of node_feat,
/// converted to float32: rows is [n, num_features].
void for_each_ogb_feature_block(const std::filesystem::path& dir, int64_t block_rows,
                                const std::function<void(int64_t first_row, ConstView rows)>& fn);

}  // namespace edgeattn::data
