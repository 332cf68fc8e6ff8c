// Graph attention with backward: the fused kernels of kernels/attention.hpp on the tape, and the
// per-node score terms of GAT.
//
// graph_attention takes the operands as Vars (only the ones its score uses; see AttentionInputs
// for shapes) and gives gradients to every defined operand that needs one. Attention dropout
// uses config.seed and is switched off when !tape.training. The forward's row log-sum-exp is kept
// for backward; per-edge weights are never stored unless asked for.
//
// Example (one GAT layer, PyG GATConv semantics, heads H, out channels D):
//   Var h   = linear(tape, x, w);                                  // [N, H*D]
//   Var h3  = reshape(tape, h, {n, H, D});                         // [N, H, D]
//   Var src = head_scores(tape, h3, att_src);                      // [N, H]  (att_src: [H, D])
//   Var dst = head_scores(tape, h3, att_dst);                      // [N, H]
//   AttentionConfig cfg{.score = Score::additive, .negative_slope = 0.2f, .dropout = 0.6f,
//                       .seed = step_seed};
//   Var out = graph_attention(tape, graph, {.value = h3, .score_dst = dst, .score_src = src}, cfg);
//   // out: [N, H, D] (cfg.combine = concat) or [N, D] (mean)
//   // The same, the scores taken from h3 inside the op (the faster form; a sampled block too):
//   Var out2 = graph_attention(tape, graph, {.value = h3, .att_dst = att_dst, .att_src = att_src}, cfg);
#pragma once

#include "edgeattn/autograd/ops/shape.hpp"
#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/kernels/attention.hpp"

namespace edgeattn::autograd {

/// The operands of graph_attention as tape variables; leave unused ones empty. Shapes as in
/// edgeattn::AttentionInputs (H = heads):
struct AttentionVars {
  Var query{};       ///< [num_dst, H, Dk]
  Var key{};         ///< [num_src, H, Dk]
  Var value{};       ///< [num_src, H, Dv]  always
  Var score_dst{};   ///< [num_dst, H]      additive
  Var score_src{};   ///< [num_src, H]      additive
  Var weight{};      ///< bilinear [H, Dk, Dk]; perceptron [H, C, Dk]
  Var key_weight{};  ///< perceptron [H, C, Dk]
  Var att{};         ///< gatv2 [H, Dk]; perceptron [H, C]
  Var edge_bias{};   ///< [num_edges, H], CSR edge order
  Var score_edge{};  ///< [num_edges, H], CSR edge order; additive: inside the LeakyReLU (edge features)
  Var edge_attr{};   ///< [num_edges, F_e], CSR edge order; gatv2/perceptron, with edge_proj
  Var edge_proj{};   ///< gatv2 [H, Dk, F_e]; perceptron [H, C, F_e]: edge_attr's term inside the activation
  /// additive, instead of score_dst/score_src: [H, Dv] each, the node terms taken from the value
  /// (AttentionInputs::att_dst/att_src; num_dst <= num_src, destination i is source i). Equal to
  /// head_scores(value, att_dst, num_dst) and head_scores(value, att_src) passed as score_dst and
  /// score_src, with one sweep over the value forward and none backward (the value's gradient
  /// gets the score terms inside the attention backward).
  Var att_dst{};
  Var att_src{};
};

/// An element-wise tail graph_attention applies to its output in place before recording it:
///   out = dropout(elu(out + bias))   (each part optional)
/// equal, in the forward bit for bit, to add_bias, then elu_dropout (or dropout) on the output;
/// the gradients agree to float rounding. Fused, the op keeps one output tensor instead of three,
/// and its backward needs neither the attention output nor the bias sum: the output's derivative
/// comes from the final value, and the softmax's row term D_i from the edges (the kernel's
/// two-sweep form). With Tape::release_in_backward the output is freed before the attention
/// backward allocates its gradients. GAT's hidden layers use it (bias, ELU, the next layer's
/// input dropout).
struct AttentionEpilogue {
  Var bias{};             ///< [Dv * H] (concat) or [Dv] (mean): added to every row; or none
  bool elu = false;       ///< then ELU
  float elu_alpha = 1.f;  ///< > 0
  float dropout = 0.f;    ///< then dense dropout (training only), the mask of dropout(tape, ., p, seed)
  uint64_t seed = 0;

  bool active() const { return bias.defined() || elu || dropout > 0.f; }
};

/// -> concat: [num_dst, H, Dv]; mean: [num_dst, Dv]. ShapeError / InvalidArgument from the kernel
/// name the operand. When `attention` is given and config.return_attention is set, it receives
/// the normalised weights [num_edges, H] (CSR order, before dropout). The pattern is copied
/// (cheap: patterns share their storage) and kept for backward. `epilogue`, when active, is
/// applied to the output (see AttentionEpilogue).
Var graph_attention(Tape& tape, const Pattern& pattern, const AttentionVars& vars, AttentionConfig config,
                    Tensor* attention = nullptr, const AttentionEpilogue& epilogue = {});

/// The operands of gat_attention: a GAT layer's input and parameters.
struct GatVars {
  Var x{};        ///< [N, in] node features (dense)
  Var weight{};   ///< [H * D, in] the layer's linear map (GATConv's lin.weight)
  Var att_dst{};  ///< [H, D]
  Var att_src{};  ///< [H, D]
  /// Dropout on x before the map (training only): the mask of dropout(tape, x, p, seed), as in
  /// dropout_linear. 0 for none.
  float input_dropout = 0.f;
  uint64_t input_seed = 0;
  /// Optional [num_edges, H] per-edge term inside the LeakyReLU (edge features), CSR edge order:
  /// AttentionVars::score_edge. It receives its gradient like the other operands.
  Var score_edge{};
  /// Optional: x holds the destinations' rows only ([num_dst, in]) and the other sources' h
  /// rows come from `sources` (a distributed part's halo, dist::halo_expansion): h is projected
  /// for the own rows, then expanded to [num_src, H*D], so the other sources' input rows are
  /// never needed here, and only their h rows ([num_src - num_dst, H, D]) are kept for backward.
  /// The backward returns dh and the source-score gradient of those rows through sources.reduce
  /// (two calls, in that order, whatever the operands need).
  SourceExpansion sources{};
};

/// One GAT attention step as a single op, over a pattern whose sources are x's N rows: square
/// [N x N], or bipartite [num_dst x N] with the destinations x's first num_dst rows (a sampled
/// block, a distributed part; s_dst is read for those rows and the output has num_dst rows):
///   h = dropout(x) W^T viewed [N, H, D],   s_dst = head_scores(h, att_dst),  s_src = head_scores(h, att_src)
///   out = graph_attention(pattern, {.value = h, .score_dst = s_dst, .score_src = s_src}, config,
///                         attention, epilogue)
/// with the forward equal bit for bit to those ops (dropout_linear, reshape, head_scores twice,
/// graph_attention) and gradients equal to rounding. The difference is memory: the op keeps only
/// its output and the row log-sum-exp. Its backward recomputes h (one GEMM over x, the same bits)
/// and lets the attention backward overwrite it with dh, so h and dh never coexist, and it takes
/// the score vectors' gradients from ds^T dropout(x) and W in the same pass over x as dW (so h is
/// not needed after dh is formed). With one head (GAT's output layer) and no sources it hands the
/// attention op h with att_dst and att_src instead (AttentionInputs::att_dst/att_src: the kernels
/// take a source's term from the value row they gather for the edge), whose backward returns the
/// score vectors' gradients. GATConv uses it when the input is dense and there is no
/// residual. config.score must be Score::additive (InvalidArgument otherwise); ShapeError names
/// the operand whose shape disagrees. -> concat: [num_dst, H, D]; mean: [num_dst, D].
/// With vars.sources, x is [num_dst, in] and the pattern [num_dst x num_src]: equal to the op
/// over x_src = [x; the other sources' input rows] in value (the same bits without input
/// dropout), with the gradients those rows' owners receive after the reduction.
///
/// Example (the hidden layer of GAT on a dense-feature graph):
///   Var out = gat_attention(tape, graph,
///                           {.x = x, .weight = w, .att_dst = a_dst, .att_src = a_src,
///                            .input_dropout = 0.6f, .input_seed = s1},
///                           {.score = Score::additive, .dropout = 0.6f, .seed = s2}, nullptr,
///                           {.bias = b, .elu = true, .dropout = 0.6f, .seed = s3});
Var gat_attention(Tape& tape, const Pattern& pattern, const GatVars& vars, AttentionConfig config,
                  Tensor* attention = nullptr, const AttentionEpilogue& epilogue = {});

/// Per-node, per-head score a_h . h_{n,h}: h: [N, H, D], a: [H, D] -> [N, H].
/// (GAT's a^T [W h_i || W h_j] split into a_dst . W h_i and a_src . W h_j.)
Var head_scores(Tape& tape, Var h, Var a);
/// The scores of h's first `rows` rows only: [rows, H] (a sampled block's destinations, which
/// are its first sources); the backward adds into those rows of dh. ShapeError unless
/// 0 <= rows <= N.
Var head_scores(Tape& tape, Var h, Var a, int64_t rows);

/// The head scores of a linear map folded into one small map: weight [H * D, in], a [H, D] ->
/// u [H, in] with u[k, f] = sum_d a[k, d] weight[k*D + d, f], so that
///   head_scores(reshape(linear(x, weight), {N, H, D}), a) == linear(x, u)      ([N, H])
/// without the [N, H * D] projection. GAT's edge-feature score uses it: per edge,
/// a_edge . W_edge x_e = linear(edge_attr, fold_head_scores(W_edge, a_edge)), [E, H] and nothing of
/// size edges x H * D. Gradients flow to weight and a.
Var fold_head_scores(Tape& tape, Var weight, Var a);

}  // namespace edgeattn::autograd
