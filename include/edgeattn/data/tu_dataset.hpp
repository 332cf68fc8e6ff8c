// Loader for the TUDataset text format (Morris et al., "TUDataset: A collection of benchmark
// datasets for learning with graphs", 2020): MUTAG, PROTEINS, ENZYMES, NCI1, IMDB-BINARY, ...
//
//   <dir>/<DS>_A.txt                  m lines "i, j": the edge i -> j, 1-based node ids over all
//                                     graphs (undirected graphs list both directions)
//   <dir>/<DS>_graph_indicator.txt    n lines: the graph (1-based) of node i; nodes grouped by graph
//   <dir>/<DS>_graph_labels.txt       N lines: the class of graph g (any integers, e.g. -1/1)
//   <dir>/<DS>_node_labels.txt        optional, n lines: a categorical label per node (or several
//                                     comma-separated ones, the same number on every line)
//   <dir>/<DS>_node_attributes.txt    optional, n lines of comma-separated reals
//   <dir>/<DS>_edge_attributes.txt    optional, m lines of comma-separated reals (one per line of _A)
//   <dir>/<DS>_edge_labels.txt        optional, m lines: a categorical label per edge (or several)
//   <dir>/<DS>_graph_attributes.txt   optional, not loaded (see below)
//
// The Dataset holds the graphs as one block-diagonal graph (Dataset::graph_ptr gives each graph's
// node range), with PyTorch Geometric's TUDataset conventions: node features are the node
// attributes followed by the one-hot node labels (each label column shifted to start at 0 and
// encoded with its max + 1 classes, the columns side by side); graph labels are
// mapped to 0..K-1 in sorted order (Dataset::graph_labels; class_names keep the original values).
// Edge features (Dataset::edge_attr, in the graph's CSR order) are the edge attributes followed by
// the one-hot edge labels, as PyG's edge_attr. Self-loops are removed (with their edge features)
// and repeated edges merged (their edge features summed), as PyG's remove_self_loops and coalesce;
// a note counts the removed loops. Graph attributes (regression targets) are not
// loaded: a note says so. Node-level labels and splits stay empty:
// graph classification uses graph_labels with a k-fold split (data/splits.hpp).
//
// Errors: IoError naming a missing required file; ParseError "<file>:<line>: ..." for a malformed
// line, a node id outside [1, n], a graph id out of order or range, a row count that disagrees
// with the graph indicator (or, for edge files, with _A.txt), or an edge between two graphs.
//
// Example:
//   edgeattn::data::Dataset mutag = edgeattn::data::load_tu_dataset("data/MUTAG");   // prefix MUTAG
//   mutag.num_graphs();                       // 188
//   mutag.graph_labels.num_classes;           // 2
//   mutag.num_features();                     // 7 (one-hot atom types)
//   mutag.edge_attr.dim(1);                   // 4 (one-hot bond types)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

struct TuOptions {
  /// The files' prefix ("MUTAG" for MUTAG_A.txt); empty: the one *_A.txt in the directory.
  std::string prefix;
  /// Dataset::name; the prefix when empty.
  std::string name;
};

/// Loads a TUDataset directory (see above).
Dataset load_tu_dataset(const std::filesystem::path& dir, const TuOptions& options = {});

/// The contents of a TUDataset's files, in memory. The three first are required; an optional
/// one that is absent is a default (null) string_view, an empty file a non-null empty one.
struct TuTexts {
  std::string_view a, graph_indicator, graph_labels;
  std::string_view node_labels, node_attributes;
  std::string_view edge_labels, edge_attributes;
};

/// The same from memory (tests, fuzzing); files are named "<prefix>_A.txt" etc. in messages
/// (prefix "TU" when empty).
Dataset parse_tu_dataset(const TuTexts& texts, const TuOptions& options = {});

}  // namespace edgeattn::data
