// Loader for Open Graph Benchmark node-property-prediction datasets (ogbn-arxiv, ogbn-products,
// ogbn-proteins, ...) from the directory OGB downloads and unzips, read from its raw CSV files:
//
//   <dir>/raw/num-node-list.csv.gz   one line: N (a node-prediction dataset is one graph)
//   <dir>/raw/num-edge-list.csv.gz   one line: E (optional; checked against edge.csv when present)
//   <dir>/raw/edge.csv.gz            E lines "src,dst": the edge src -> dst, node ids in [0, N)
//   <dir>/raw/node-feat.csv.gz       optional; N lines of comma-separated floats   -> dense [N, F]
//   <dir>/raw/node-label.csv.gz      optional; N lines of one or more columns:
//                                      1 column:  class id; empty or NaN = unlabelled (-1)
//                                      C columns: 0/1 per class (multi-label, like ogbn-proteins)
//   <dir>/raw/edge-feat.csv.gz       optional; 1 column -> Dataset::edge_weight (when not all 1);
//                                    several columns (ogbn-proteins: 8) -> Dataset::edge_attr
//                                    [num_edges, columns] in CSR order (OgbOptions::edge_attr; a
//                                    reverse edge added by `undirected` copies its edge's row, an
//                                    added self-loop gets 0), and, with node_features_from_edges
//                                    and no node-feat.csv, each node's features are the mean of
//                                    its edges' (as OGB's ogbn-proteins examples build them)
//   <dir>/split/<name>/{train,valid,test}.csv.gz   one node id per line, any order
//
// OGB's binary layout (the "-bin" archives: ogbn-papers100M) is read as well, when
// <dir>/raw/data.npz exists: edge_index [2, E], node_feat [N, F] (float16 is widened to float32),
// num_nodes_list, num_edges_list, optional node_year; <dir>/raw/node-label.npz: node_label
// [N, 1] (NaN = unlabelled); splits as above. Before anything large is read, the memory the
// Dataset would need is estimated (data/ogb_binary.hpp: OgbBinaryInfo::bytes_to_load) and
// compared with OgbOptions::max_bytes: beyond it an InvalidArgument gives both figures and
// points to the streaming readers (for_each_ogb_edge_block, ...), which need no such memory.
//
// Every file may also be present uncompressed (edge.csv instead of edge.csv.gz). Edges are kept as
// stored (OGB stores directed edges; ogbn-arxiv's are citations) unless `undirected` is set.
// Every split folder becomes a named split ("valid" is stored as Split::val, ids sorted). The
// default split is `options.split` when given, otherwise the first of "time", "sales_ranking",
// "species", "scaffold" that exists (the names OGB uses), otherwise the first folder in sorted
// order. Heterogeneous datasets (ogbn-mag) are not supported.
//
// Errors: IoError naming the missing file; ParseError "<file>:<line>: ..." for a malformed line,
// an id out of range, a repeated split id, a node in two parts of one split, or counts that
// disagree with num-node-list / num-edge-list (naming both files).
//
// Example:
//   edgeattn::data::Dataset ds = edgeattn::data::load_ogb_node_dataset("data/ogbn-arxiv");
//   ds.num_nodes();                 // 169343
//   ds.split().train.size();        // 90941 (split "time")
#pragma once

#include <filesystem>
#include <string>

#include "edgeattn/data/dataset.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::data {

struct OgbOptions {
  /// Add the reverse of every edge (OGB stores one direction).
  bool undirected = false;
  SelfLoops self_loops = SelfLoops::keep;
  /// The default split's folder name; empty = the rule above.
  std::string split;
  /// Dataset::name; the directory's name when empty.
  std::string name;
  /// Without node-feat.csv, average multi-column edge features into node features.
  bool node_features_from_edges = false;
  /// Keep multi-column edge features as Dataset::edge_attr (ogbn-proteins: 4 bytes x 8 per edge).
  bool edge_attr = true;
  /// Binary layout only: the most memory (bytes) loading may take; 0 = 3/4 of the machine's
  /// physical memory.
  uint64_t max_bytes = 0;
};

/// Loads an OGB node-property-prediction dataset directory (the one holding raw/ and split/).
Dataset load_ogb_node_dataset(const std::filesystem::path& dir, const OgbOptions& options = {});

}  // namespace edgeattn::data
