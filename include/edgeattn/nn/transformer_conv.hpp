// TransformerConv: the graph transformer operator of Shi et al., "Masked Label Prediction: Unified
// Message Passing Model for Semi-Supervised Classification" (IJCAI 2021), with PyTorch
// Geometric 2.x's hyper-parameters, defaults, parameter names and shapes
// (torch_geometric.nn.TransformerConv).
//
//   q = lin_query(x), k = lin_key(x), v = lin_value(x), each viewed [N, H, C]
//   with edge features e_ij = lin_edge(edge_attr_ij) [H, C]: k_j -> k_j + e_ij, v_j -> v_j + e_ij
//   alpha_ij = softmax_j(q_i . k_j / sqrt(C)) over the edges j -> i, attention dropout p = dropout
//   out_i = sum_j alpha_ij v_j  -> concat [N, H*C] or mean [N, C]
//   root_weight: x_r = lin_skip(x);
//     beta:  b = sigmoid(lin_beta([out, x_r, out - x_r]))  [N, 1];  out = b x_r + (1 - b) out
//     else:  out = out + x_r
//
// Hyper-parameters (TransformerConvOptions): in_channels, out_channels, heads=1, concat=true,
//   beta=false, dropout=0.0, edge_dim=0, bias=true, root_weight=true. As in PyG, beta takes effect only with
//   root_weight, and `bias` concerns lin_skip only (query/key/value always have biases).
// Parameters (all torch.nn.Linear default init: weight and bias U(+-1/sqrt(fan_in))):
//   lin_key.weight   [H*C, in], lin_key.bias   [H*C]
//   lin_query.weight [H*C, in], lin_query.bias [H*C]
//   lin_value.weight [H*C, in], lin_value.bias [H*C]
//   lin_edge.weight  [H*C, edge_dim], no bias (when edge_dim > 0)
//   lin_skip.weight  [H*C or C, in], lin_skip.bias [H*C or C] (when bias). PyG creates lin_skip
//                    even when root_weight = false (then it gets no gradient); so does this layer,
//                    so state dicts match.
//   lin_beta.weight  [1, 3*H*C] (concat) or [1, 3*C], no bias (when beta and root_weight)
// No self-loops are added (PyG's TransformerConv adds none): a node without in-edges gets 0 from
// attention, plus its root weight term. Bipartite input: in_channels_dst and the (x_src, x_dst)
// forward. Edge features (edge_dim > 0): forward takes EdgeFeatures [E, edge_dim] in the graph's
// CSR order; the kernel adds each edge's lin_edge projection to its key and value as it goes
// (kernels/attention.hpp: edge_attr, edge_proj with the dot score): PyG's [E, H*C] is never stored.
//
// Example:
//   TransformerConv conv({.in_channels = 16, .out_channels = 8, .heads = 2, .beta = true}, "conv1", seed);
//   Var h = conv.forward(tape, graph, x, step_seed);    // [N, 16]
//   TransformerConv with_edges({.in_channels = 16, .out_channels = 8, .heads = 2, .edge_dim = 3}, "c", seed);
//   Var he = with_edges.forward(tape, graph, x, EdgeFeatures{tape.constant_ref(edge_attr)}, step_seed);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/graph/graph.hpp"
#include "edgeattn/nn/linear.hpp"
#include "edgeattn/nn/prepare_graph.hpp"

namespace edgeattn::nn {

struct TransformerConvOptions {
  int64_t in_channels = 0;      ///< source features (lin_key, lin_value)
  int64_t in_channels_dst = 0;  ///< bipartite: destination features (lin_query, lin_skip); 0 = in_channels
  int64_t out_channels = 0;     ///< per head
  int64_t heads = 1;
  bool concat = true;
  bool beta = false;
  float dropout = 0.f;   ///< attention dropout
  int64_t edge_dim = 0;  ///< edge attribute width; 0 = no edge features
  bool bias = true;      ///< lin_skip's bias
  bool root_weight = true;
};

class TransformerConv {
 public:
  TransformerConv(const TransformerConvOptions& options, const std::string& name = "", uint64_t seed = 0);
  TransformerConv(const TransformerConv&) = delete;
  TransformerConv& operator=(const TransformerConv&) = delete;

  /// x: [N, in] (dense or sparse), graph N x N -> [N, H*C] (concat) or [N, C].
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x, uint64_t dropout_seed,
                        Tensor* attention = nullptr);
  /// Bipartite (cross-attention from one node set to another): x_src [num_src, in_channels] gives
  /// keys and values, x_dst [num_dst, in_channels_dst or in_channels] queries and the skip term,
  /// graph num_dst x num_src -> [num_dst, H*C] or [num_dst, C].
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                        const NodeInput& x_dst, uint64_t dropout_seed, Tensor* attention = nullptr);
  /// With edge features (edge_dim set; ShapeError unless edges.attr is [num_edges, edge_dim],
  /// InvalidArgument when the layer has no edge_dim); otherwise as the overloads above.
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                        const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention = nullptr);
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                        const NodeInput& x_dst, const EdgeFeatures& edges, uint64_t dropout_seed,
                        Tensor* attention = nullptr);

  const TransformerConvOptions& options() const { return options_; }
  int64_t out_features() const;
  std::vector<autograd::Parameter*> parameters();

  Linear lin_key, lin_query, lin_value, lin_skip;
  std::optional<Linear> lin_edge;  ///< [H*C, edge_dim], no bias; when edge_dim > 0
  std::optional<Linear> lin_beta;  ///< when beta && root_weight

 private:
  autograd::Var run(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src, const NodeInput& x_dst,
                    const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention);
  TransformerConvOptions options_;
};

}  // namespace edgeattn::nn
