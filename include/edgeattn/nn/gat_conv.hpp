// GATConv: the graph attention layer of Velickovic et al., "Graph Attention Networks" (ICLR 2018),
// with PyTorch Geometric 2.x's hyper-parameters, defaults, parameter names and shapes, so weights
// move across (torch_geometric.nn.GATConv, PyG >= 2.3 single `lin`).
//
//   h = lin(x) viewed [N, H, C]
//   e_ij = LeakyReLU(att_dst . h_i + att_src . h_j [+ att_edge . lin_edge(x_ij)])   per edge j -> i, head
//   alpha_ij = softmax_j(e_ij), dropped out with p = dropout while training
//   out_i = sum_j alpha_ij h_j  -> concat heads [N, H*C], or mean over heads [N, C]
//   out += res(x) (residual), out += bias
//
// Hyper-parameters (GATConvOptions; PyG names and defaults):
//   in_channels, out_channels (C, per head), heads=1 (H), concat=true, negative_slope=0.2,
//   dropout=0.0 (attention dropout), add_self_loops=true, edge_dim (0 = None), bias=true, residual=false
// Parameters (names relative to the layer's name; shapes as in PyG):
//   lin.weight  [H*C, in]     glorot                 (no lin.bias, as in PyG)
//   att_src     [1, H, C]     glorot (fan H + C)
//   att_dst     [1, H, C]     glorot
//   bias        [H*C] (concat) or [C] (!concat), zeros          (when bias)
//   res.weight  [H*C] or [C] x [in], glorot, no bias            (when residual)
//   lin_src.weight, lin_dst.weight  instead of lin.weight when in_channels_dst is set
//   lin_edge.weight [H*C, edge_dim], att_edge [1, H, C], glorot    (when edge_dim)
//
// add_self_loops: the graph passed to forward must already be prepared by
// nn::prepare_graph(graph, true) (once per graph; nn/prepare_graph.hpp). forward checks the
// graph's cached degree statistics and throws InvalidArgument when it is not.
// Bipartite input (x_src, x_dst) (PyG's in_channels=(in_src, in_dst)): the second forward below,
// over a num_dst x num_src graph; with in_channels_dst set the maps are lin_src [H*C, in_src] and
// lin_dst [H*C, in_dst] (PyG's names), otherwise lin projects both sides. A prepared bipartite
// graph has the self-loops i -> i for i < min(num_dst, num_src) (prepare_graph), as PyG adds them.
// Edge features (edge_dim > 0): forward takes EdgeFeatures, the attributes [E, edge_dim] in the
// prepared graph's CSR order; prepare_graph(graph, true, edge_attr, fill) gives them with the
// self-loops' attributes filled (PyG's fill_value, default "mean"). The per-edge term is
// computed as edge_attr u^T with u = fold_head_scores(lin_edge.weight, att_edge) [H, edge_dim]:
// [E, H] floats, never the [E, H*C] projection PyG forms.
//
// Example (the first layer of the GAT paper's Cora model):
//   GATConv conv1({.in_channels = 1433, .out_channels = 8, .heads = 8, .dropout = 0.6f}, "conv1", seed);
//   Graph g = prepare_graph(dataset.graph, true);
//   Var h = conv1.forward(tape, g, dropped_features /*CsrMatrix [N, 1433]*/, step_seed);  // [N, 64]
// With edge features:
//   GATConv conv({.in_channels = 16, .out_channels = 8, .heads = 4, .edge_dim = 3}, "conv", seed);
//   PreparedGraph p = prepare_graph(graph, true, edge_attr /*[E, 3], CSR order*/);
//   Var h = conv.forward(tape, p.graph, x, EdgeFeatures{tape.constant_ref(p.edge_attr)}, step_seed);  // [N,
//   32]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edgeattn/autograd/ops/attention.hpp"
#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/graph/graph.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "edgeattn/nn/linear.hpp"
#include "edgeattn/nn/prepare_graph.hpp"

namespace edgeattn::nn {

struct GATConvOptions {
  int64_t in_channels = 0;      ///< source features (all features, for one node set)
  int64_t in_channels_dst = 0;  ///< bipartite: destination features with their own map lin_dst; 0 = none
  int64_t out_channels = 0;     ///< per head
  int64_t heads = 1;
  bool concat = true;
  float negative_slope = 0.2f;
  float dropout = 0.f;  ///< attention dropout
  bool add_self_loops = true;
  int64_t edge_dim = 0;  ///< edge attributes per edge (lin_edge, att_edge); 0 = none
  bool bias = true;
  bool residual = false;
};

/// An ELU and a dropout that follow a layer (GAT's hidden activation and the next layer's input
/// dropout), for GATConv::forward to fuse into its attention op.
struct EluDropout {
  float alpha = 1.f;
  float p = 0.f;
  uint64_t seed = 0;
};

class GATConv {
 public:
  /// `name` prefixes the parameter names ("conv1" -> "conv1.lin.weight"); seeds derive from
  /// `seed` and the names. InvalidArgument for non-positive sizes or options out of range.
  GATConv(const GATConvOptions& options, const std::string& name = "", uint64_t seed = 0);
  GATConv(const GATConv&) = delete;  // the tape holds pointers to the parameters
  GATConv& operator=(const GATConv&) = delete;

  /// x: [N, in] (dense Var or sparse constant), graph: N x N (prepared) -> [N, H*C] (concat) or
  /// [N, C]. `dropout_seed` keys the attention-dropout mask (use a new one per step).
  /// `attention`, when given, receives the attention weights [num_edges, H] in CSR order.
  /// `then`, when given, is applied to the output: elu_dropout(out, then->alpha, then->p,
  /// then->seed). Without a residual it runs inside the attention op with the bias (one output
  /// tensor kept instead of three; autograd::AttentionEpilogue). A dense input without a residual
  /// makes the whole layer one autograd::gat_attention op, which keeps neither h = lin(x) nor
  /// the score terms and recomputes them in backward (same forward bits, gradients to rounding).
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x, uint64_t dropout_seed,
                        Tensor* attention = nullptr, const EluDropout* then = nullptr);
  /// Bipartite: x_src: [num_src, in_channels], x_dst: [num_dst, in_channels_dst or in_channels],
  /// graph: num_dst x num_src (prepared) -> [num_dst, H*C] (concat) or [num_dst, C].
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                        const NodeInput& x_dst, uint64_t dropout_seed, Tensor* attention = nullptr);
  /// With edge features (edge_dim set; ShapeError unless edges.attr is [num_edges, edge_dim],
  /// InvalidArgument when the layer has no edge_dim); otherwise as the overloads above.
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                        const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention = nullptr,
                        const EluDropout* then = nullptr);
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                        const NodeInput& x_dst, const EdgeFeatures& edges, uint64_t dropout_seed,
                        Tensor* attention = nullptr);

  /// A sampled block (graph/neighbor_sampler.hpp; DGL's blocks): graph num_dst x num_src whose
  /// destinations are the first num_dst sources, so x_dst is x_src's first rows (with x_src's
  /// pending dropout, keyed by element index: the same mask). Without lin_dst the sources are
  /// projected once and the destinations take that projection's first rows, as DGL's GATConv
  /// does; with lin_dst or a residual, x_dst is formed and forward(x_src, x_dst) runs. Equals
  /// forward(tape, graph, x_src, leading rows of x_src, ...) in value (bit for bit where the
  /// projection is row-independent: kernels::matmul's packed path and sparse input), and in the
  /// gradient x_src receives in total. `then`, when given, is applied to the output as in the
  /// one-input forward (fused into the attention op with the bias, without a residual).
  /// `recompute`: with dense x_src, no lin_dst and no residual, run the fused gat_attention, which
  /// keeps neither the sources' projection nor their score terms and recomputes them in backward
  /// (one more GEMM over x_src): for large blocks where memory binds (a distributed part, whose
  /// sources are most of its nodes). Sampled blocks keep the projection: there the recomputation
  /// cost 15% of a GAT epoch (sbm 250k, fan-outs 15,10,5) and saved no peak memory.
  autograd::Var forward_block(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                              const EdgeFeatures& edges, uint64_t dropout_seed, Tensor* attention = nullptr,
                              const EluDropout* then = nullptr, bool recompute = false);

  /// A distributed part's layer (nn::Model::forward_partition): graph num_dst x num_src as in
  /// forward_block, x_own [num_dst, in_channels] dense (the destinations' rows only), and
  /// `sources` (dist::halo_expansion) supplying the other sources' rows of the projection
  /// lin(x): the layer projects its own rows and exchanges [.., H*C] of them rather than its
  /// input [.., in], and keeps only the other sources' projected rows for backward (the fused
  /// gat_attention with GatVars::sources). Equals forward_block(graph, [x_own; the other sources'
  /// input rows], ..., recompute = true) in value (the same bits without pending dropout on x),
  /// and in the gradient the owners of those rows receive. Needs can_expand_projection()
  /// (InvalidArgument otherwise) and a dense x_own (InvalidArgument for sparse input).
  autograd::Var forward_expanded(autograd::Tape& tape, const Graph& graph, const NodeInput& x_own,
                                 const autograd::SourceExpansion& sources, const EdgeFeatures& edges,
                                 uint64_t dropout_seed, Tensor* attention = nullptr,
                                 const EluDropout* then = nullptr);
  /// Whether forward_expanded applies: no lin_dst and no residual (the fused op it runs takes
  /// one projection of x and no second map of the destinations' rows).
  bool can_expand_projection() const { return !lin_dst && !res; }

  const GATConvOptions& options() const { return options_; }
  /// Output width: H*C (concat) or C.
  int64_t out_features() const;
  /// Width of the destination features: in_channels_dst, or in_channels.
  int64_t in_dst() const;
  std::vector<autograd::Parameter*> parameters();

  Linear lin;                      ///< lin.weight [H*C, in] (lin_src.weight when in_channels_dst is set)
  std::optional<Linear> lin_dst;   ///< lin_dst.weight [H*C, in_channels_dst] when in_channels_dst is set
  autograd::Parameter att_src;     ///< [1, H, C]
  autograd::Parameter att_dst;     ///< [1, H, C]
  autograd::Parameter bias;        ///< [H*C] or [C]; absent when !bias
  std::optional<Linear> res;       ///< res.weight [out_features, in] when residual
  std::optional<Linear> lin_edge;  ///< lin_edge.weight [H*C, edge_dim] when edge_dim
  autograd::Parameter att_edge;    ///< [1, H, C] when edge_dim

 private:
  AttentionConfig attention_config(uint64_t dropout_seed, bool return_attention) const;
  /// The per-edge score term [E, H] (undefined without edges.attr).
  autograd::Var edge_scores(autograd::Tape& tape, const Graph& graph, const EdgeFeatures& edges);
  /// Dense x [num_src, in], no residual: one gat_attention op, the bias and `then` fused; the
  /// graph is square or a block whose destinations are x's first rows. -> [num_dst, out_features]
  /// With `sources`, x holds the destinations' rows only (forward_expanded).
  autograd::Var forward_fused(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                              autograd::Var score_edge, uint64_t dropout_seed, Tensor* attention,
                              const EluDropout* then, const autograd::SourceExpansion* sources = nullptr);
  /// A square graph: forward_fused where it applies, else the unfused ops and the residual tail.
  autograd::Var forward_square(autograd::Tape& tape, const Graph& graph, const NodeInput& x,
                               autograd::Var score_edge, uint64_t dropout_seed, Tensor* attention,
                               const EluDropout* then);
  /// The attention op's epilogue: the bias and `then`, unless a residual comes between.
  autograd::AttentionEpilogue fused_epilogue(autograd::Tape& tape, const EluDropout* then);
  /// With a residual: out + res(x_dst), the bias and `then`; otherwise out (all fused already).
  autograd::Var residual_tail(autograd::Tape& tape, autograd::Var out, const NodeInput& x_dst,
                              const EluDropout* then);
  /// x_dst null: the destinations are the first rows of x_src (forward_block without lin_dst).
  autograd::Var forward_bipartite(autograd::Tape& tape, const Graph& graph, const NodeInput& x_src,
                                  const NodeInput* x_dst, autograd::Var score_edge, uint64_t dropout_seed,
                                  Tensor* attention, const EluDropout* then);
  GATConvOptions options_;
};

/// Checks shared by the attention layers: x rows == graph nodes, square graph, and the self-loop
/// precondition when add_self_loops. `who` names the layer in the messages.
void check_layer_graph(const autograd::Tape& tape, const std::string& who, const Graph& graph,
                       const NodeInput& x, int64_t in_channels, bool add_self_loops);
/// The same for bipartite input: x_src [num_src, in_src], x_dst [num_dst, in_dst], and the
/// self-loops i -> i for i < min(num_dst, num_src) when add_self_loops.
void check_bipartite_layer_graph(const autograd::Tape& tape, const std::string& who, const Graph& graph,
                                 const NodeInput& x_src, const NodeInput& x_dst, int64_t in_src,
                                 int64_t in_dst, bool add_self_loops);
/// A sampled block's destination input: x's first `rows` rows with x's pending dropout (dense,
/// through autograd::leading_rows), or those rows of a sparse x copied into `sparse_storage`,
/// which must outlive the returned NodeInput. ShapeError when x has fewer rows.
NodeInput first_rows(autograd::Tape& tape, const NodeInput& x, int64_t rows,
                     std::optional<CsrMatrix>& sparse_storage);

}  // namespace edgeattn::nn
