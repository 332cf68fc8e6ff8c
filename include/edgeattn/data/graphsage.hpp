// Loader for the GraphSAGE dataset layout (Hamilton et al., "Inductive Representation Learning on
// Large Graphs", 2017), in which PPI is published and which the GAT paper's inductive task uses:
//
//   <dir>/<prefix>-G.json          networkx node-link graph (GraphSAGE wrote it with networkx 1.11):
//                                  {"directed": false, "nodes": [{"id": 0, "val": false, "test": false},
//                                  ...],
//                                   "links": [{"source": 0, "target": 372}, ...], ...}
//                                  a link's source/target are positions in "nodes" (networkx 1.x);
//                                  PPI's ids equal their positions, so networkx 2.x files agree
//   <dir>/<prefix>-id_map.json     {"<node id>": row of the node in feats.npy, ...}
//   <dir>/<prefix>-class_map.json  {"<node id>": class id, ...} or {"<node id>": [0/1 per class], ...}
//   <dir>/<prefix>-feats.npy       [N, F] features, any numeric dtype (optional)
//
// Node k of the Dataset is row k of feats.npy (its id_map value). The graph is undirected unless
// "directed" is true (both directions stored); GraphSAGE's train_removed/test_removed link flags
// are not needed: the val and test nodes of PPI sit in their own graphs (connected components),
// so full-batch training with the loss on the train nodes is inductive as the paper's protocol
// requires. Labels: multi-label (Labels::multi_hot, scored by micro-F1 as in the GAT paper) when
// class_map holds lists, else single-label. Split "graphsage": val = nodes with "val": true,
// test = "test": true, train = the rest. Node ids may be numbers or strings (Reddit's).
// The JSON is read with a streaming (SAX) parser, so memory is that of the result.
//
// Errors: IoError naming a missing file; ParseError naming the file and the JSON byte offset for
// malformed JSON, or the node id / link index and what was expected, for content that disagrees
// (a link to a node that does not exist, a node without an id_map row or a label, label lists of
// different lengths, an id_map row outside feats.npy).
//
// Example:
//   edgeattn::data::Dataset ppi = edgeattn::data::load_graphsage("data/ppi");   // prefix "ppi"
//   ppi.labels.multi_label();          // true: 121 classes
//   ppi.split().train.size();          // 44906 (the 20 training graphs)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

struct GraphSageOptions {
  /// The files' common prefix ("ppi" for ppi-G.json); empty: the one *-G.json in the directory.
  std::string prefix;
  /// Dataset::name; the prefix when empty.
  std::string name;
};

/// Loads a GraphSAGE-layout directory (see above).
Dataset load_graphsage(const std::filesystem::path& dir, const GraphSageOptions& options = {});

/// The same from the files' contents in memory (tests, fuzzing, data from elsewhere); they are
/// named "<prefix>-G.json" etc. in messages (prefix "graphsage" when empty). feats_npy may be
/// empty: no features.
Dataset parse_graphsage(std::string_view g_json, std::string_view id_map_json,
                        std::string_view class_map_json, std::string_view feats_npy = {},
                        const GraphSageOptions& options = {});

}  // namespace edgeattn::data
