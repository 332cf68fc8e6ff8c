// Graph classification: an attention encoder over the nodes of a batch of graphs, a readout per
// graph, and a linear classifier (the shape of PyG's and DGL's graph-classification examples:
// convs -> global pooling -> Linear).
//
//   h      = elu(encoder(x))                     [N, E]   nn::Model (gat, gatv2, transformer) whose
//                                                         output width E = encoder.num_classes
//   r      = readout(h, graph_ptr)               [G, E]   sum / mean / max (autograd::global_pool),
//                                                         or attention: softmax_g(gate(h)) . h
//   logits = classifier(dropout(r))              [G, C]
//
// The graphs of a batch are one block-diagonal graph (data::Dataset::graph_ptr gives graph g's
// node range), so one encoder pass serves every graph and no message crosses between graphs.
// Train with train::fit on the graph labels and a split of graph ids (data::stratified_kfold):
// fit's loss and metric read the rows of the logits, which here are graphs.
//
// Parameters: the encoder's (conv1.lin.weight, ...), "gate.weight" [1, E] and "gate.bias" [1]
// (attention readout), "classifier.weight" [C, E], "classifier.bias" [C].
//
// Example (MUTAG, 10-fold):
//   GraphClassifierConfig cfg;
//   cfg.encoder = {.kind = ModelKind::gat, .in_channels = 7, .hidden = 16, .heads = 4, .num_classes = 64};
//   cfg.num_classes = 2;
//   GraphClassifier model(cfg);
//   const Graph g = model.prepare_graph(ds.graph);
//   auto forward = [&](Tape& t, uint64_t s) { return model.forward(t, g, x, ds.graph_ptr, s); };
//   auto r = train::fit(forward, model.parameters(), ds.graph_labels, folds[0], {});
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "edgeattn/nn/linear.hpp"
#include "edgeattn/nn/model.hpp"

namespace edgeattn::nn {

enum class Readout { sum, mean, max, attention };

/// "sum" ("add"), "mean", "max", "attention"; InvalidArgument listing them otherwise.
Readout parse_readout(const std::string& name);
const char* to_string(Readout r);

struct GraphClassifierConfig {
  ModelConfig encoder;      ///< its num_classes is the node embedding width E
  int64_t num_classes = 0;  ///< graph classes C
  Readout readout = Readout::mean;
  float dropout = 0.f;  ///< on the pooled rows, before the classifier
  uint64_t seed = 0;
  /// InvalidArgument naming the field when a value is out of range.
  void validate() const;
};

class GraphClassifier {
 public:
  explicit GraphClassifier(const GraphClassifierConfig& config);

  /// As Model::prepare_graph / prepare_features (self-loops per node; positional encodings, a
  /// Laplacian one per graph of graph_ptr, as PyG transforms each graph).
  Graph prepare_graph(const Graph& graph) const { return encoder_.prepare_graph(graph); }
  data::Features prepare_features(const Graph& graph, const data::Features& x,
                                  std::span<const int64_t> graph_ptr) const {
    return encoder_.prepare_features(graph, x, graph_ptr);
  }

  /// graph: prepared block-diagonal graph of N nodes; graph_ptr: [G + 1] -> logits [G, C].
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const data::Features& x,
                        std::span<const int64_t> graph_ptr, uint64_t step_seed);

  std::vector<autograd::Parameter*> parameters();
  const GraphClassifierConfig& config() const { return config_; }

 private:
  GraphClassifierConfig config_;
  Model encoder_;
  std::optional<Linear> gate_;
  Linear classifier_;
};

}  // namespace edgeattn::nn
