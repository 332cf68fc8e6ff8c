// Node-classification models that stack the nn layers, built from a plain ModelConfig.
//
//   kind = gat, gatv2, transformer (conv stacks; conv = GATConv, GATv2Conv or TransformerConv):
//     dropout(x) -> conv1(in, hidden, heads) -> ELU -> dropout -> conv2(hidden*heads, hidden, heads)
//     -> ELU -> dropout -> ... -> conv<layers>(hidden*heads, num_classes, heads=out_heads, concat=false)
//     (layers = 1: conv1(in, num_classes, out_heads, concat=false)). Attention dropout in every conv.
//     With the GAT paper's Cora set-up (hidden 8, heads 8, out_heads 1, dropout 0.6,
//     attention_dropout 0.6, layers 2) this is exactly PyG's example GAT:
//       dropout(0.6) -> GATConv(in, 8, heads=8, dropout=0.6) -> ELU -> dropout(0.6)
//       -> GATConv(64, C, heads=1, concat=False, dropout=0.6)
//     (PubMed in the paper: out_heads = 8, averaged.)
//   kind = graph_transformer:
//     dropout(x) -> lin_in(in, d = hidden*heads) -> GraphTransformerBlock x layers -> lin_out(d, C)
//
// Parameters are named like PyG modules: conv1.lin.weight, conv1.att_src, ..., conv2.bias;
// lin_in.weight, blocks.0.lin_query.weight, ..., lin_out.bias. Initial values are deterministic
// for config.seed. Layers live behind unique_ptr: parameters() pointers stay valid when the Model
// is moved.
//
// Inputs are prepared ONCE per graph (plan once, run many):
//   Graph g = model.prepare_graph(dataset.graph);            // self-loops per add_self_loops
//                                                            // (no input-order maps: CSR order)
//   data::Features x = model.prepare_features(dataset.graph, dataset.features);  // + positional encoding
// then every step: forward(tape, g, x, step_seed) -> logits [N, num_classes]; or, for mini-batch
// training, forward(tape, sample_neighbors(graph, seeds, {...}), x, step_seed) -> [seeds, C]. forward checks
// that x has in_channels + pe_dim columns and (GAT kinds with add_self_loops) that g has one self-loop per
// node. Dropout sites are keyed by step_seed and a per-site constant; with tape.training = false (evaluation)
// every dropout is the identity.
//
// Example (the GAT paper's Cora model, one training step; the optimiser is train/'s):
//   nn::ModelConfig cfg{.kind = nn::ModelKind::gat, .in_channels = 1433, .num_classes = 7};
//   nn::Model model(cfg);
//   Graph g = model.prepare_graph(ds.graph);
//   data::Features x = model.prepare_features(ds.graph, ds.features);
//   autograd::Tape tape;
//   Var logits = model.forward(tape, g, x, /*step_seed=*/epoch);
//   Var loss = autograd::cross_entropy(tape, logits, ds.labels.classes, ds.split().train);
//   for (auto* p : model.parameters()) p->zero_grad();
//   tape.backward(loss);     // p->grad for every p in model.parameters()
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "edgeattn/autograd/ops/shape.hpp"
#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/data/dataset.hpp"
#include "edgeattn/graph/graph.hpp"
#include "edgeattn/graph/neighbor_sampler.hpp"
#include "edgeattn/nn/prepare_graph.hpp"

namespace edgeattn::nn {

class NodeInput;  // nn/linear.hpp

enum class ModelKind { gat, gatv2, transformer, graph_transformer };
enum class PositionalEncodingKind { none, laplacian, rwse };

const char* to_string(ModelKind kind);
const char* to_string(PositionalEncodingKind kind);
/// "gat", "gatv2", "transformer", "graph_transformer"; InvalidArgument listing them otherwise.
ModelKind parse_model_kind(const std::string& name);
/// "none", "laplacian", "rwse".
PositionalEncodingKind parse_positional_encoding(const std::string& name);

struct ModelConfig {
  ModelKind kind = ModelKind::gat;
  /// Raw feature columns (before the positional encoding); 0 for a dataset without node
  /// features, which then needs a positional encoding (pe) as its nodes' only features.
  int64_t in_channels = 0;
  int64_t hidden = 8;  ///< per head
  int64_t heads = 8;
  int64_t out_heads = 1;  ///< heads of the output conv (averaged); conv kinds only
  int64_t num_classes = 0;
  int64_t layers = 2;    ///< convs, or graph-transformer blocks
  float dropout = 0.6f;  ///< feature dropout
  float attention_dropout = 0.6f;
  float negative_slope = 0.2f;  ///< gat, gatv2
  bool residual = false;        ///< gat, gatv2
  bool add_self_loops = true;   ///< prepare_graph adds one self-loop per node (PyG GATConv);
                                ///< PyG's TransformerConv adds none: set false to match it
  bool share_weights = false;   ///< gatv2
  bool beta = false;            ///< transformer
  bool pre_norm = false;        ///< graph_transformer
  int64_t ffn_hidden = 0;       ///< graph_transformer; 0: 2 * hidden * heads
  /// Conv kinds: the width of the edge attributes every conv layer reads (PyG's edge_dim on each
  /// layer; 0: none). The graph then comes with its attributes (prepare_graph(graph, edge_attr)).
  int64_t edge_dim = 0;
  PositionalEncodingKind pe = PositionalEncodingKind::none;
  int64_t pe_dim = 0;  ///< columns of the positional encoding (0 when pe = none)
  uint64_t seed = 0;

  /// A one-line JSON object holding every field, e.g. {"kind":"gat","in_channels":1433,...}.
  std::string to_json() const;
  /// The inverse of to_json, strict: every field present exactly once (edge_dim may be absent, as
  /// in model files written before it existed: 0), no other keys, values of the right type.
  /// InvalidArgument naming the key (or the character offset) otherwise.
  static ModelConfig from_json(const std::string& json);
  /// InvalidArgument naming the field when a value is out of range.
  void validate() const;
  /// InvalidArgument naming the option when one is set that the kind does not use: residual
  /// (gat, gatv2), share_weights (gatv2), beta (transformer), pre_norm and ffn_hidden
  /// (graph_transformer). What builds a configuration from a user's options calls it (the tool,
  /// the Python Model), so that none is silently dropped; model files are not held to it, so that
  /// one written before the check still loads.
  void check_kind_options() const;

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

class Model {
 public:
  explicit Model(const ModelConfig& config);
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  /// nn::prepare_graph(graph, config.add_self_loops), without its input-order maps (the model's
  /// attention weights are in the prepared graph's CSR order); call once per graph and keep it.
  Graph prepare_graph(const Graph& graph) const;
  /// The same carrying per-edge attributes [num_edges, edge_dim] (CSR order, e.g.
  /// Dataset::edge_attr) through the self-loops (PyG's fill_value "mean"), for a model with edge_dim.
  PreparedGraph prepare_graph(const Graph& graph, ConstView edge_attr) const;
  /// The features with the configured positional encoding (computed on `graph`) appended:
  /// [N, in_channels + pe_dim]. Dense features that are at most 10% non-zero (bag-of-words
  /// stored dense, e.g. an npz attr_matrix) become CSR first (data::sparsify_features), so the
  /// first layer takes the sparse-input path. Call once per graph.
  data::Features prepare_features(const Graph& graph, const data::Features& features) const;
  /// The same for a block-diagonal graph of many graphs (graph_ptr [G + 1], Dataset::graph_ptr):
  /// a Laplacian encoding is computed per graph (laplacian_encoding_per_graph), as PyG applies
  /// AddLaplacianEigenvectorPE to each graph; the random-walk one is the same either way (walks stay
  /// in their graph). An empty graph_ptr is the one-graph form above.
  data::Features prepare_features(const Graph& graph, const data::Features& features,
                                  std::span<const int64_t> graph_ptr) const;

  /// graph: prepared, N x N; x: [N, in_channels + pe_dim] (prepared) -> logits [N, num_classes].
  /// `attention`, when given, receives each attention layer's weights [num_edges, heads] (CSR order).
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const data::Features& x, uint64_t step_seed,
                        std::vector<Tensor>* attention = nullptr);
  /// With edge attributes (config.edge_dim > 0): `edges` [graph.num_edges(), edge_dim] in the
  /// prepared graph's CSR order (PreparedGraph::edge_attr), read by every conv layer. A model with
  /// edge_dim refuses the overloads without them (InvalidArgument).
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const data::Features& x,
                        const EdgeFeatures& edges, uint64_t step_seed,
                        std::vector<Tensor>* attention = nullptr);
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const CsrMatrix& x, uint64_t step_seed,
                        std::vector<Tensor>* attention = nullptr);
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const Tensor& x, uint64_t step_seed,
                        std::vector<Tensor>* attention = nullptr);

  /// Layer-wise full-neighbourhood inference, for evaluation and for embedding every node (the
  /// `inference` of PyG's and DGL's mini-batch examples): the logits [N, num_classes] of forward()
  /// in eval mode (no dropout), equal to them bit for bit, computed one layer at a time over all
  /// nodes. Each layer runs on a tape of its own that is dropped once its output is taken, so
  /// memory peaks at one layer's input, projection and output whatever the depth, where forward()
  /// holds every layer's output and (all kinds but gat) the state its backward would read.
  /// Measured (bench/nn/model_inference_bench.cpp; 3 layers of width 256, 131k nodes): gat
  /// 409 MB vs forward() 411 MB, transformer 1077 vs 1936 MB; each further layer adds one output
  /// (gat) or more to forward() and nothing here. PyG and DGL also split each layer into batches
  /// of destination nodes; edgeattn's attention kernels fuse score, softmax and aggregation and hold
  /// nothing per edge, so one pass over all destinations needs no more memory than batches would and
  /// projects each node once, where per-batch passes project shared neighbours again in every batch.
  /// `graph`, `x` and `edge_attr` as for forward() (prepared; edge_attr [graph.num_edges(), edge_dim]
  /// when config.edge_dim > 0, absent otherwise: InvalidArgument when that does not hold, ShapeError
  /// for x of another shape). Every kind, graph_transformer included.
  ///   Tensor logits = model.inference(g, x);   // after or between training epochs
  Tensor inference(const Graph& graph, const data::Features& x, const Tensor& edge_attr = Tensor());

  /// Mini-batch forward over a sampled neighbourhood (graph/neighbor_sampler.hpp; conv kinds):
  /// layer l runs on batch.blocks[l] (raw as sampled: self-loops are added here as
  /// prepare_graph does, one per destination i <- i, destinations leading the sources) with
  /// x_src = its sources' rows and x_dst = the first num_dst of them. `x` holds the prepared
  /// features of ALL nodes [N, in_channels + pe_dim] (prepare_features on the whole graph, once);
  /// the rows of batch.input_nodes are gathered here. -> logits [batch.seeds.size(), num_classes],
  /// row k for seed k. With every fanout -1 (whole neighbourhoods) and tape.training = false the
  /// seeds' rows equal forward() on the whole graph. InvalidArgument for the graph_transformer
  /// kind or when the batch has another number of blocks than config.layers.
  autograd::Var forward(autograd::Tape& tape, const SampledSubgraph& batch, const data::Features& x,
                        uint64_t step_seed);
  /// The same for a model with edge_dim: `edge_attr` [E, edge_dim] are the edge attributes of the
  /// graph the batch was sampled from, in its CSR order (Dataset::edge_attr); each block takes the
  /// rows of its edge_ids, and its added self-loops the mean of their node's sampled in-edges.
  autograd::Var forward(autograd::Tape& tape, const SampledSubgraph& batch, const data::Features& x,
                        ConstView edge_attr, uint64_t step_seed);
  /// Full-graph forward over one rank's part of a partitioned graph (dist/distributed_training.hpp;
  /// conv kinds). `graph` is bipartite [num_owned x num_src] and prepared: the part's owned nodes
  /// as destinations with all their in-edges, over sources that are the owned nodes (the first
  /// num_owned, so that the self-loop of prepare_graph joins i to i) then the halo nodes. x
  /// [num_src, in_channels + pe_dim] the prepared features of all sources, or [num_owned, ...]
  /// those of the owned nodes only (see below); `edges` the graph's edge attributes (edge_dim > 0
  /// only); `halo` turns rows over the owned nodes into rows over all sources (the halo rows from
  /// their owners: dist::halo_expansion). Every layer computes output rows for the owned nodes
  /// only. With every source's features, the first runs as on a sampled block
  /// (GATConv::forward_block with `recompute`: the fused op, whose backward recomputes the
  /// projection); with the owned nodes' only (first_layer_exchanges_projection() must hold), it
  /// projects them and exchanges the projected rows (GATConv::forward_expanded). A later layer
  /// gets its sources' rows through `halo`: a GAT layer whose projection is no wider than its
  /// input (heads * out_channels <= in; no residual) projects the owned rows and exchanges those,
  /// any other expands its input and runs as on a block. A part without halo nodes (square
  /// graph) runs the one-process layers, so that one part gives forward() on the whole graph bit
  /// for bit.
  /// -> logits [num_owned, num_classes]; ShapeError when num_owned is not graph.num_dst() or x's
  /// shape is not [num_src or num_owned, in_channels + pe_dim]; InvalidArgument for owned rows
  /// only where the first layer cannot exchange its projection. Dropout masks are keyed by local ids, so with
  /// dropout the masks differ from a one-process run (the same distribution); without dropout the
  /// result equals forward() on the whole graph up to float rounding (in-edges may be summed in
  /// another order).
  autograd::Var forward_partition(autograd::Tape& tape, const Graph& graph, int64_t num_owned,
                                  const data::Features& x, const EdgeFeatures& edges,
                                  const autograd::SourceExpansion& halo, uint64_t step_seed);
  /// Whether a distributed part's first layer can exchange its projected rows instead of reading
  /// the halo nodes' features (forward_partition with x over the owned nodes only): the gat kind
  /// without residual, over dense features.
  bool first_layer_exchanges_projection(bool dense_features) const {
    return config_.kind == ModelKind::gat && !config_.residual && dense_features;
  }
  /// Every trainable parameter, in a fixed order, with PyG-style dotted names.
  std::vector<autograd::Parameter*> parameters();
  int64_t num_parameters();
  const ModelConfig& config() const { return config_; }
  /// Multi-line summary: the layer stack with shapes and the parameter count.
  std::string describe();

 private:
  struct Impl;
  autograd::Var run_blocks(autograd::Tape& tape, const std::vector<Graph>& graphs,
                           const std::vector<EdgeFeatures>& edges, const NodeInput& x0, uint64_t step_seed,
                           const autograd::SourceExpansion* halo = nullptr);
  autograd::Var run_layers(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                           const EdgeFeatures& edges, uint64_t step_seed, std::vector<Tensor>* attention,
                           const autograd::SourceExpansion* halo = nullptr);
  template <class X>
  autograd::Var forward_input(autograd::Tape& tape, const Graph& graph, const X& x, const EdgeFeatures& edges,
                              uint64_t step_seed, std::vector<Tensor>* attention,
                              const autograd::SourceExpansion* halo = nullptr);
  ModelConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgeattn::nn
