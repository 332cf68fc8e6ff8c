// Graph-masked multi-head attention, forward and backward, over any Pattern.
//
//   out_i^h = sum_{j in N(i)} alpha_ij^h v_j^h,   alpha_i.^h = normalize_j(score(i, j, h) + bias_ij^h)
//
// Scores (`Score`):
//   dot_product  scale * <q_i, k_j>                          (Vaswani et al. 2017)
//   additive     LeakyReLU(score_dst_i + score_src_j         (GAT, Velickovic et al. 2018; the two
//                          [+ score_edge_e])                 per-node scalars are a_dst.Wh_i, a_src.Wh_j;
//                                                            the optional per-edge one a_edge.W_e x_e,
//                                                            PyG's edge_dim)
//   gatv2        a . LeakyReLU(q_i + k_j)                    (GATv2, Brody et al. 2022; q = W_r h_i,
//                                                             k = W_l h_j)
//   bilinear     scale * q_i W k_j^T                         (Luong et al. 2015, "general")
//   perceptron   v . tanh(W q_i + U k_j)                     (Bahdanau et al. 2015)
// Normalisations: softmax over row i (default), or relu(score) unnormalised.
// Heads are combined by concatenation ([num_dst, H, Dv]) or mean ([num_dst, Dv]).
// Attention dropout drops alpha_ij^h with probability p (survivors scaled by 1/(1-p)); the mask
// is a pure function of (seed, i, j, h), so backward regenerates it and every path agrees.
//
// The sparse path is fused: one pass per destination row with an online softmax, over blocks of
// up to 32 of the row's edges; nothing of size edges x features is ever stored. Extra memory is
// the row log-sum-exp [num_dst, H] saved for backward, plus [num_edges, H] only when attention
// weights are requested. Backward is
// atomics-free: destination-parallel for query-side gradients, source-parallel (over the cached
// transpose) for key/value-side gradients. Results are bit-identical for any thread count.
//
// Example (Transformer attention restricted to a graph):
//   edgeattn::Graph g = edgeattn::build_graph(n, n, src, dst);
//   edgeattn::AttentionInputs in{.query = q, .key = k, .value = v};   // [n, H, D] each
//   auto fwd = edgeattn::attention_forward(g, in, {});                // fwd.out: [n, H, D]
//   auto grads = edgeattn::attention_backward(g, in, {}, fwd, grad_out);
//   // grads.query, grads.key, grads.value have the shapes of q, k, v
//
// Example (a GAT layer's attention over a sampled block, scores from the projection h):
//   edgeattn::AttentionInputs in{.value = h, .att_dst = a_dst, .att_src = a_src};  // h [Ns, H, D]
//   edgeattn::AttentionConfig cfg{.score = edgeattn::Score::additive};            // a_* [H, D]
//   auto fwd = edgeattn::attention_forward(block, in, cfg);           // fwd.out: [Nd, H, D]
//   auto grads = edgeattn::attention_backward(block, in, cfg, fwd, grad_out);
//   // grads.value includes the score terms; grads.att_dst, grads.att_src: [H, D]
#pragma once

#include <cstdint>
#include <string>

#include "edgeattn/core/tensor.hpp"
#include "edgeattn/graph/pattern.hpp"

namespace edgeattn {

enum class Score { dot_product, additive, gatv2, bilinear, perceptron };
enum class Normalization { softmax, relu };
enum class HeadCombine { concat, mean };

/// Which implementation runs. `automatic` picks dense for dot-product/bilinear scores when the
/// pattern's density is at least `AttentionConfig::dense_threshold`, else sparse. On every path
/// but `reference`, a Graph that equals a complete, causal or sliding-window pattern runs as that
/// pattern (graph/pattern.hpp: structured_equivalent; same CSR edge numbering, so per-edge
/// tensors are unchanged): passing the edges of a dense or banded mask costs one O(E) check,
/// not the 8-10x slower explicit-index kernel. On `sparse`, dot-product scores over a contiguous-row
/// pattern, or over a Graph whose rows are long and fill enough of their hulls (first to last
/// source; no duplicate edge), run the tiled (flash) kernel, the graph's non-edges masked; others
/// run edge by edge.
///
/// Arithmetic: the `reference` path computes scores, softmax and sums in double; the others in
/// float32 (the exponentials with a polynomial accurate to a few ulp), so they agree with the
/// reference to float32 rounding. The forward sums a row's edges in float blocks of at most 32,
/// added in double, so a hub of a million in-edges keeps that agreement too; so does the
/// backward, whose sums over a destination's in-edges (dq, d score_dst, and GATv2's d att) and a
/// source's out-edges (dk, dv, d score_src) are taken the same way: on hubs of 2^18 edges, every
/// gradient within 8e-7 of its scale of the reference (2.7e-5 summed edge by edge). A sum whose
/// terms largely cancel keeps the float rounding of its terms, relative to its own magnitude: on a
/// hub row with N(0, 9) additive scores, the score_dst gradient is off by 2.9e-4 (100k in-edges)
/// and 2.2e-4 (1M) of its magnitude (5e-4 and 2.5e-3 summed edge by edge); value and score_src
/// gradients by 1e-7 and 1.5e-6.
/// The tiled kernel's sums (structured patterns, dense graphs) go through float GEMM tiles.
///
/// A score whose magnitude exceeds float32's range (|s| > 3.4e38, e.g. q and k rows of norm
/// ~1e19) overflows to +-inf on the float32 paths and makes its row NaN, as PyTorch's attention
/// does; where and whether it overflows depends on the path's order of operations. The reference
/// path, in double, still returns finite weights there.
///
/// An inf or NaN in an operand reaches only what depends on it through the pattern's edges, on
/// every path but an explicit `dense`: a key or value row, the rows that attend its source; a
/// query row or a row of the output gradient, that row and the gradients of the sources it
/// attends (relu weights of a NaN score are NaN, as std::max(NaN, 0) gives, on every path). The
/// dense and tiled kernels compute whole tiles, where a masked pair's weight 0 times inf is NaN,
/// so a dot-product or bilinear call on a pattern with masked pairs is scanned first (q, k, v,
/// and in the backward the output gradient; each read once) when one of them could run, and
/// `automatic` and `sparse` take the per-edge kernels if the scan finds such a value. `path =
/// dense` is run as asked, and, like PyTorch's attention with a mask, may then return NaN in
/// other rows too.
enum class AttentionPath {
  automatic,
  sparse,     ///< fused, parallel, any pattern and score
  dense,      ///< blocked BLAS GEMM with a mask; dot_product and bilinear scores only
  reference,  ///< serial, written for clarity; the test oracle
  /// the GPU (kernels/cuda.hpp): every score, softmax or relu, dropout, edge bias; not edge
  /// attributes. Operands stay in host memory and are copied per call. DeviceError when this
  /// edgeattn was built without CUDA or no GPU is present; never picked by `automatic`.
  cuda,
};

const char* to_string(Score s);
const char* to_string(Normalization n);
const char* to_string(AttentionPath p);
/// Parses "dot_product"/"dot", "additive"/"gat", "gatv2", "bilinear", "perceptron".
Score parse_score(const std::string& name);

/// Density at and above which `automatic` uses the dense path; measured by
/// bench/kernels/dense_vs_sparse_bench.cpp (see bench/RESULTS.md).
inline constexpr double kDefaultDenseThreshold = 0.35;

struct AttentionConfig {
  Score score = Score::dot_product;
  Normalization normalization = Normalization::softmax;
  HeadCombine combine = HeadCombine::concat;
  /// dot_product and bilinear: multiplies the score; 0 means 1/sqrt(head_dim).
  float scale = 0.f;
  /// additive and gatv2: LeakyReLU slope for negative inputs.
  float negative_slope = 0.2f;
  /// Attention dropout probability in [0, 1); 0 disables dropout.
  float dropout = 0.f;
  /// Key of the dropout mask; use a new seed per training step.
  uint64_t seed = 0;
  /// Also return the normalised weights alpha [num_edges, H] (before dropout), in CSR edge order.
  bool return_attention = false;
  /// The forward will be followed by attention_backward (training): where it pays, keep what
  /// spares the backward a pass over each destination's edges (AttentionResult::dst_terms).
  /// Autograd's attention ops set it when training; the gradients agree with it off to float
  /// rounding (the destination score gradient is summed in another order).
  bool save_for_backward = false;
  AttentionPath path = AttentionPath::automatic;
  double dense_threshold = kDefaultDenseThreshold;
};

/// Operands, as views (not copied). Which ones are required depends on the score; the rest stay
/// empty. H = heads, Dk = key dim, Dv = value dim, C = perceptron hidden size, E = num_edges.
struct AttentionInputs {
  ConstView query{};       ///< [num_dst, H, Dk]  dot_product, bilinear, gatv2 (W_r h_i), perceptron
  ConstView key{};         ///< [num_src, H, Dk]  dot_product, bilinear, gatv2 (W_l h_j), perceptron
  ConstView value{};       ///< [num_src, H, Dv]  always
  ConstView score_dst{};   ///< [num_dst, H]      additive (a_dst . W h_i)
  ConstView score_src{};   ///< [num_src, H]      additive (a_src . W h_j)
  ConstView weight{};      ///< bilinear: [H, Dk, Dk]; perceptron W: [H, C, Dk] (applied to query)
  ConstView key_weight{};  ///< perceptron U: [H, C, Dk] (applied to key)
  ConstView att{};         ///< gatv2 a: [H, Dk]; perceptron v: [H, C]
  ConstView edge_bias{};   ///< optional [E, H], added to the score, CSR edge order
  /// optional [E, H], additive only: added inside the LeakyReLU with score_dst and score_src
  /// (GAT with edge features: a_edge . W_edge x_e per edge and head), CSR edge order.
  ConstView score_edge{};
  /// optional: edge attributes [E, F_e] (CSR edge order) and their projection [H, Dk, F_e]
  /// (perceptron: [H, C, F_e]), edge e's projection ve_e = edge_proj . edge_attr_e computed on the
  /// fly (nothing of size E x H x Dk is stored):
  ///   gatv2, perceptron  added inside the activation with the query and key terms (GATv2Conv's
  ///                      edge features: PyG's lin_edge(edge_attr))
  ///   dot_product        added to the key in the score and to the value in the sum (Dv = Dk;
  ///                      TransformerConv's edge features); runs on the sparse path
  /// Other scores reject them.
  ConstView edge_attr{};
  ConstView edge_proj{};
  /// additive only, instead of score_dst and score_src: GAT's per-node terms taken from the
  /// value itself, with destination i being source i (so num_dst <= num_src: a square graph, a
  /// sampled block or a distributed part, whose destinations are its first sources):
  ///   score_dst_i = <att_dst_h, value_ih>,   score_src_j = <att_src_h, value_jh>   ([H, Dv] each)
  /// The forward computes both in one sweep over value (AttentionResult::node_scores keeps them
  /// for backward). The backward adds their terms to the value gradient, dss_j att_src (+ dsd_j
  /// att_dst for j < num_dst), inside the pass that writes it, and returns AttentionGrads::att_dst
  /// and att_src: neither [N, H] score gradient is formed, and value and its gradient are swept
  /// once instead of three times more. Equal to computing the two score vectors and folding their
  /// gradients by hand (to float rounding).
  ConstView att_dst{};
  ConstView att_src{};
};

struct AttentionResult {
  Tensor out;        ///< concat: [num_dst, H, Dv]; mean: [num_dst, Dv]. Rows with no edges are 0.
  Tensor row_stats;  ///< softmax: row log-sum-exp of scores [num_dst, H] (-inf for empty rows); relu: empty
  Tensor attention;  ///< [E, H] when requested, else empty
  /// With att_dst/att_src: [num_dst + num_src, H], score_dst's rows then score_src's, for
  /// attention_backward; else empty.
  Tensor node_scores;
  /// With save_for_backward, on the sparse path, for additive softmax scores over an explicit
  /// graph whose gathered source rows exceed the cache, with 8 heads of 8 (GAT's hidden layers;
  /// within the memory the backward's per-edge records would take) or one head (the output layer;
  /// where those records would exceed it), no edge bias or per-edge term: [num_dst, 2, H, Dv], per
  /// destination its per-head output O_i and V_i = sum_j alpha_ij g_ij keep_ij v_j -
  /// (sum_j alpha_ij g_ij) O_i, g the LeakyReLU's slope at the edge's score. The backward then
  /// gets d score_dst_i = <dO_i, V_i> per head without a sweep over the edges. Empty otherwise.
  Tensor dst_terms;
  AttentionPath path = AttentionPath::sparse;  ///< the path that ran
  /// The pattern the forward ran on as the caller gave it: describe(pattern), and for a graph a
  /// fingerprint of its CSR sampled at 64 row offsets and 64 columns. attention_backward refuses
  /// another pattern (its gradients would be garbage); empty in a result attention_forward did not
  /// make, which is not checked.
  std::string pattern;
};

/// Gradients with the shapes of the corresponding inputs; empty where the input was empty.
struct AttentionGrads {
  Tensor query, key, value, score_dst, score_src, weight, key_weight, att, edge_bias, score_edge, edge_attr,
      edge_proj, att_dst, att_src;
};

/// Validates shapes and options (ShapeError / InvalidArgument naming the operand) and runs.
AttentionResult attention_forward(const Pattern& pattern, const AttentionInputs& inputs,
                                  const AttentionConfig& config = {});

/// `forward` is the result of attention_forward with the same pattern, inputs and config;
/// grad_out has the shape of forward.out. Runs on the path the forward took.
AttentionGrads attention_backward(const Pattern& pattern, const AttentionInputs& inputs,
                                  const AttentionConfig& config, const AttentionResult& forward,
                                  ConstView grad_out);

/// As above, but the value gradient is written into `value_grad` ([num_src, H, Dv], every
/// element) and AttentionGrads::value stays empty. `value_grad` may be the value operand's own
/// storage, which it then overwrites: a caller that can recompute v (autograd::gat_attention
/// recomputes v = x W^T) saves a [num_src, H, Dv] tensor. The fused sparse backward writes it in
/// place (it reads v_j for the last time in the task that writes dv_j); the dense, reference and
/// tiled paths, or a value_grad that overlaps another operand, compute it aside and copy it over
/// after the last read. ShapeError when the shape differs from value's.
AttentionGrads attention_backward(const Pattern& pattern, const AttentionInputs& inputs,
                                  const AttentionConfig& config, const AttentionResult& forward,
                                  ConstView grad_out, View value_grad);

/// Maps per-edge values in CSR order ([E, H], e.g. AttentionResult::attention) to the order of
/// the edge list the graph was built from ([num_input_edges, H]). Input edges the builder dropped
/// get 0; merged duplicates get the kept edge's value. Throws GraphError if the graph carries no
/// input map (it was built from CSR).
Tensor to_input_edge_order(const Graph& graph, ConstView per_edge);

}  // namespace edgeattn
