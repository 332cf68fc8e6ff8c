// A node-classification dataset: graph, node features, labels, named splits and provenance.
//
//   graph     Graph, CSR by destination; undirected datasets store both directions. Node i of
//             the graph is row i of the features and entry i of the labels.
//   features  [num_nodes, num_features], dense (Tensor) or sparse (CsrMatrix) as the source
//             stored them (Cora's bag-of-words: 1.3% non-zero, so sparse)
//   labels    single-label: class id per node, -1 where the node has no label;
//             multi-label:  [num_nodes, num_classes] 0/1
//   splits    named train/val/test node sets ("public", "full", "random", OGB's own names)
//   edge_weight, edge_attr    optional per-edge data in the graph's CSR order
//   graph_ptr, graph_labels   for datasets of many graphs (TUDataset): node ranges and graph classes
//
// Example:
//   edgeattn::data::Dataset ds = edgeattn::data::load_dataset("cora");
//   const auto& split = ds.split();            // the default split ("public" for Planetoid)
//   split.train.size();                        // 140
//   ds.features.is_sparse();                   // true
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/graph.hpp"

namespace edgeattn::data {

/// Node features, dense or sparse; dense ones may be read in place from a file (mapped()).
class Features {
 public:
  Features() = default;
  Features(Tensor dense);      // NOLINT(google-explicit-constructor): [num_nodes, num_features]
  Features(CsrMatrix sparse);  // NOLINT(google-explicit-constructor)
  /// Dense features whose storage is a memory-mapped file (data/mapped_features.hpp makes them);
  /// `source` names it in messages, e.g. "x.npy" or "graph.npz:attr_matrix".
  static Features mapped(Tensor dense, std::string source);

  /// Copies are deep, except of mapped features: those share the mapping (a copy must not read
  /// a file larger than memory into memory).
  Features(const Features& other);
  Features& operator=(const Features& other);
  Features(Features&&) noexcept = default;
  Features& operator=(Features&&) noexcept = default;

  /// True for features read in place from a file: rows are paged in when read and evicted by the
  /// kernel under memory pressure, so they may exceed RAM. Writing them (normalize_features
  /// refuses) would make private copies of every page.
  bool is_mapped() const { return !mapped_from_.empty(); }
  /// The file (and member) mapped features are read from; empty otherwise.
  const std::string& mapped_from() const { return mapped_from_; }

  bool is_sparse() const { return std::holds_alternative<CsrMatrix>(storage_); }
  int64_t rows() const;
  int64_t cols() const;
  /// Stored non-zeros (sparse), or the count of non-zero entries (dense).
  int64_t nnz() const;
  /// nnz / (rows * cols).
  double density() const;
  /// Throw InvalidArgument when the features are of the other kind.
  const Tensor& dense() const;
  Tensor& dense();
  const CsrMatrix& sparse() const;
  CsrMatrix& sparse();
  /// [rows, cols] dense copy (of either kind).
  Tensor to_dense() const;

 private:
  std::variant<Tensor, CsrMatrix> storage_;
  std::string mapped_from_;
};

/// Class labels of the nodes.
struct Labels {
  /// [num_nodes] class id in [0, num_classes), or -1 for a node without a label. Empty when the
  /// dataset is multi-label.
  std::vector<int32_t> classes;
  /// [num_nodes, num_classes] with entries 0 or 1 for multi-label datasets; absent otherwise.
  Tensor multi_hot;
  int64_t num_classes = 0;
  /// Optional human-readable class names, [num_classes] when present.
  std::vector<std::string> class_names;

  /// How predictions are scored: "accuracy" (single-label), "micro_f1" (multi-label) or "rocauc"
  /// (multi-label: ROC-AUC averaged over the classes that have both outcomes, OGB's metric for
  /// ogbn-proteins). Empty: the default of the kind, which metric() returns.
  std::string eval_metric;

  bool multi_label() const { return !multi_hot.absent(); }
  std::string metric() const {
    return !eval_metric.empty() ? eval_metric : multi_label() ? "micro_f1" : "accuracy";
  }
};

/// A train/validation/test division of the nodes: sorted, disjoint node ids.
struct Split {
  std::vector<int64_t> train;
  std::vector<int64_t> val;
  std::vector<int64_t> test;
};

/// Where the data came from: one entry per file read.
struct SourceFile {
  std::string path;
  std::string sha256;  ///< lowercase hex; empty when not computed
  int64_t bytes = 0;
};

struct Dataset {
  std::string name;
  std::string format;  ///< "planetoid", "linqs", "npz", "ogb", "matrix-market", "edge-list", ...
  Graph graph;
  Features features;  ///< may be 0 columns (a graph with no features, e.g. karate)
  Labels labels;
  std::map<std::string, Split> splits;
  std::string default_split;  ///< key into `splits`; empty when there are none
  /// Optional per-edge weights in the graph's CSR order ([num_edges]); empty when unweighted.
  std::vector<float> edge_weight;
  /// Optional edge attributes (features) in the graph's CSR order, [num_edges, edge_dim] (OGB's
  /// edge-feat of ogbn-proteins, TUDataset's edge attributes and one-hot edge labels); absent
  /// when the source has none. The input of attention layers with edge_dim
  /// (nn/prepare_graph.hpp carries it through added self-loops).
  Tensor edge_attr;
  /// Optional original node identifiers (paper ids, PMIDs, names), [num_nodes] when present.
  std::vector<std::string> node_names;
  /// A dataset of many graphs (TUDataset) holds them as one block-diagonal graph: graph g owns the
  /// nodes [graph_ptr[g], graph_ptr[g + 1]) and no edge joins two graphs. [num_graphs + 1] when
  /// present, empty for a single-graph dataset.
  std::vector<int64_t> graph_ptr;
  /// Graph-level classes for graph classification, [num_graphs] in Labels::classes; empty otherwise.
  Labels graph_labels;
  std::vector<SourceFile> sources;
  /// What the loader did that a user should know, one line each, e.g. "cora.cites:17: cites
  /// unknown paper 'x'; skipped" or "removed 124 self-loops". Printed by `edgeattn dataset info`.
  std::vector<std::string> notes;

  int64_t num_nodes() const { return graph.num_dst(); }
  int64_t num_edges() const { return graph.num_edges(); }
  int64_t num_features() const { return features.cols(); }
  int64_t num_classes() const { return labels.num_classes; }
  /// Graphs in a many-graph dataset (graph_ptr), else 1.
  int64_t num_graphs() const { return graph_ptr.empty() ? 1 : static_cast<int64_t>(graph_ptr.size()) - 1; }

  /// The named split (the default split when `name` is empty). Throws InvalidArgument listing the
  /// available names when there is no such split.
  const Split& split(const std::string& name = {}) const;

  /// Checks that every part agrees on num_nodes, labels are in range, splits are sorted, disjoint
  /// and in range, features are finite (not mapped ones: they are not read), and edge weights and
  /// attributes match the edge count. Throws InvalidArgument naming the field (a feature by row and
  /// column).
  void validate() const;
};

/// Checks one split of a dataset of num_nodes nodes: each part sorted and unique, in
/// [0, num_nodes), no node in two parts. Throws InvalidArgument starting with `where` and naming
/// the split, the part and the position (Dataset::validate checks every split with it).
void validate_split(const std::string& where, const std::string& split_name, const Split& split,
                    int64_t num_nodes);

/// Split masks: [num_nodes] with 1 for the nodes in `ids`.
std::vector<uint8_t> to_mask(const std::vector<int64_t>& ids, int64_t num_nodes);

}  // namespace edgeattn::data
