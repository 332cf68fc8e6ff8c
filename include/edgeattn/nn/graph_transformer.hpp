// GraphTransformerBlock: one Transformer encoder layer (Vaswani et al. 2017) whose self-attention
// is restricted to the graph's edges (Dwivedi & Bresson, "A Generalization of Transformer Networks
// to Graphs", 2021): multi-head scaled dot-product attention over each node's in-neighbours, an
// output projection, dropout, residual + LayerNorm, then a feed-forward block with its own
// residual + LayerNorm.
//
//   post-norm (default, the original Transformer):
//     h = norm1(x + dropout(attn_out(attention(x))))
//     y = norm2(h + dropout(ffn(h)))
//   pre-norm (pre_norm = true; more stable for deep stacks):
//     h = x + dropout(attn_out(attention(norm1(x))))
//     y = h + dropout(ffn(norm2(h)))
//   attention(z): q, k, v = lin_query(z), lin_key(z), lin_value(z) viewed [N, H, C=d/H];
//                 softmax_j(q_i . k_j / sqrt(C)) over edges j -> i, attention dropout; heads concatenated
//   ffn(z) = lin2(dropout(act(lin1(z))))  with act GELU (default) or ReLU
//
// Hyper-parameters: GraphTransformerOptions (channels = d must be divisible by heads).
// Parameters (d = channels, F = ffn_hidden; torch.nn.Linear default init, LayerNorm ones/zeros):
//   lin_query.weight [d, d], lin_query.bias [d]; lin_key.*, lin_value.* the same
//   attn_out.weight  [d, d], attn_out.bias [d]
//   norm1.weight [d], norm1.bias [d]
//   ffn.lin1.weight [F, d], ffn.lin1.bias [F]; ffn.lin2.weight [d, F], ffn.lin2.bias [d]
//   norm2.weight [d], norm2.bias [d]
// Dropout sites are keyed by the step seed passed to forward and a per-site constant.
//
// Example:
//   GraphTransformerBlock block({.channels = 64, .heads = 8, .dropout = 0.1f}, "blocks.0", seed);
//   Var y = block.forward(tape, graph, x /*[N, 64]*/, step_seed);     // [N, 64]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/graph/graph.hpp"
#include "edgeattn/nn/linear.hpp"

namespace edgeattn::nn {

enum class FfnActivation { gelu, relu };

struct GraphTransformerOptions {
  int64_t channels = 0;    ///< model width d
  int64_t heads = 1;       ///< d % heads == 0
  int64_t ffn_hidden = 0;  ///< 0: 2 * channels
  float dropout = 0.1f;    ///< after attention, inside and after the feed-forward block
  float attention_dropout = 0.f;
  FfnActivation activation = FfnActivation::gelu;
  bool pre_norm = false;
  float layer_norm_eps = 1e-5f;
};

class GraphTransformerBlock {
 public:
  GraphTransformerBlock(const GraphTransformerOptions& options, const std::string& name = "",
                        uint64_t seed = 0);
  GraphTransformerBlock(const GraphTransformerBlock&) = delete;
  GraphTransformerBlock& operator=(const GraphTransformerBlock&) = delete;

  /// x: [N, d], graph N x N -> [N, d]
  autograd::Var forward(autograd::Tape& tape, const Graph& graph, autograd::Var x, uint64_t step_seed,
                        Tensor* attention = nullptr);

  const GraphTransformerOptions& options() const { return options_; }
  std::vector<autograd::Parameter*> parameters();

  Linear lin_query, lin_key, lin_value, attn_out;
  autograd::Parameter norm1_weight, norm1_bias;  ///< "norm1.weight", "norm1.bias" [d]
  Linear ffn_lin1, ffn_lin2;                     ///< "ffn.lin1", "ffn.lin2"
  autograd::Parameter norm2_weight, norm2_bias;  ///< [d]

 private:
  GraphTransformerOptions options_;
};

}  // namespace edgeattn::nn
