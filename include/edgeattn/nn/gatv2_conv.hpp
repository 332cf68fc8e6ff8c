// GATv2Conv: "How Attentive are Graph Attention Networks?" (Brody, Alon, Yahav, ICLR 2022), with
// PyTorch Geometric 2.x's hyper-parameters, defaults, parameter names and shapes
// (torch_geometric.nn.GATv2Conv).
//
//   x_l = lin_l(x) [N, H, C] (source side: key and value), x_r = lin_r(x) [N, H, C] (target side)
//   e_ij = att . LeakyReLU(x_r[i] + x_l[j] [+ lin_edge(edge_attr_ij)])   for each edge j -> i, per head
//   alpha_ij = softmax_j(e_ij), attention dropout p = dropout while training
//   out_i = sum_j alpha_ij x_l[j]  -> concat [N, H*C] or mean [N, C]; += res(x); += bias
//
// Hyper-parameters (GATv2ConvOptions): in_channels, out_channels, heads=1, concat=true,
//   negative_slope=0.2, dropout=0.0, add_self_loops=true, edge_dim=0, bias=true,
//   share_weights=false, residual=false
// Parameters:
//   lin_l.weight [H*C, in] glorot, lin_l.bias [H*C] U(+-1/sqrt(in)) (when bias)
//   lin_r.weight, lin_r.bias       the same shapes; when share_weights lin_r IS lin_l (one
//                                  object): parameters() lists lin_l.* once, as PyG's
//                                  named_parameters() does (its state_dict repeats them as lin_r.*)
//   att          [1, H, C] glorot
//   lin_edge.weight [H*C, edge_dim] glorot, no bias (when edge_dim > 0)
//   bias         [H*C] or [C], zeros (when bias)
//   res.weight   [H*C] or [C] x [in], glorot (when residual)
// The graph must be prepared by nn::prepare_graph(graph, add_self_loops) once (see gat_conv.hpp).
// Bipartite input: in_channels_dst and forward(tape, graph, x_src, x_dst, ...).
// Edge features (edge_dim > 0): forward takes EdgeFeatures [E, edge_dim] in the prepared graph's
// CSR order (prepare_graph(graph, true, edge_attr, fill) fills the self-loops' attributes, PyG's
// fill_value). The kernel projects each edge's attributes with lin_edge.weight inside the
// LeakyReLU as it goes (kernels/attention.hpp: edge_attr, edge_proj): the [E, H*C] projection PyG
// forms is never stored.
//
// Example:
//   GATv2Conv conv({.in_channels = 16, .out_channels = 8, .heads = 4, .share_weights = true}, "conv1", seed);
//   Var h = conv.forward(tape, prepared_graph, x, step_seed);    // [N, 32]
// With edge features:
//   GATv2Conv conv({.in_channels = 16, .out_channels = 8, .heads = 4, .edge_dim = 3}, "conv", seed);
//   PreparedGraph p = prepare_graph(graph, true, edge_attr /*[E, 3], CSR order*/);
//   Var h = conv.forward(tape, p.graph, x, EdgeFeatures{tape.constant_ref(p.edge_attr)}, step_seed);
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

struct GATv2ConvOptions {
  int64_t in_channels = 0;      ///< source features (lin_l)
  int64_t in_channels_dst = 0;  ///< bipartite: destination features (lin_r); 0 = in_channels
  int64_t out_channels = 0;     ///< per head
  int64_t heads = 1;
  bool concat = true;
  float negative_slope = 0.2f;
  float dropout = 0.f;
  bool add_self_loops = true;
  int64_t edge_dim = 0;  ///< edge attribute width; 0 = no edge features
  bool bias = true;
  bool share_weights = false;
  bool residual = false;
};

class GATv2Conv {
 public:
  GATv2Conv(const GATv2ConvOptions& options, const std::string& name = "", uint64_t seed = 0);
  GATv2Conv(const GATv2Conv&) = delete;
  GATv2Conv& operator=(const GATv2Conv&) = delete;

  /// x: [N, in], graph N x N (prepared) -> [N, H*C] (concat) or [N, C].
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x, uint64_t dropout_seed,
                        Tensor* attention = nullptr);
  /// Bipartite: x_src [num_src, in_channels] (lin_l), x_dst [num_dst, in_channels_dst or
  /// in_channels] (lin_r), graph num_dst x num_src (prepared) -> [num_dst, H*C] or [num_dst, C].
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                        const NodeInput& x_dst, uint64_t dropout_seed, Tensor* attention = nullptr);
  /// With edge features (edge_dim set; ShapeError unless edges.attr is [num_edges, edge_dim],
  /// InvalidArgument when the layer has no edge_dim); otherwise as the overloads above.
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                        const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention = nullptr);
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                        const NodeInput& x_dst, const EdgeFeatures& edges, uint64_t dropout_seed,
                        Tensor* attention = nullptr);
  /// Width of the destination features: in_channels_dst, or in_channels.
  int64_t in_dst() const;

  const GATv2ConvOptions& options() const { return options_; }
  int64_t out_features() const;
  std::vector<autograd::Parameter*> parameters();
  /// lin_r: lin_l itself when share_weights.
  Linear& lin_r() { return lin_r_ ? *lin_r_ : lin_l; }

  Linear lin_l;                    ///< [H*C, in] (+ bias)
  autograd::Parameter att;         ///< [1, H, C]
  std::optional<Linear> lin_edge;  ///< [H*C, edge_dim], no bias; when edge_dim > 0
  autograd::Parameter bias;        ///< [H*C] or [C]; absent when !bias
  std::optional<Linear> res;       ///< when residual

 private:
  autograd::Var run(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src, const NodeInput& x_dst,
                    const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention);
  std::optional<Linear> lin_r_;  ///< absent when share_weights
  GATv2ConvOptions options_;
};

}  // namespace edgeattn::nn
