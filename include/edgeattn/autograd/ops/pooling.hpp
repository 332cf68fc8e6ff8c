// Graph-level readouts with backward, for graph classification over a batch of graphs held as
// one block-diagonal graph (graph g owns the node rows [graph_ptr[g], graph_ptr[g + 1]);
// data::Dataset::graph_ptr).
//
//   global_pool            sum / mean / max over each graph's rows (PyG's global_add_pool,
//                          global_mean_pool, global_max_pool): kernels/pooling.hpp
//   global_attention_pool  out_g = sum_{v in g} softmax_{v in g}(gate_v) x_v  (PyG's
//                          AttentionalAggregation, the gated readout of Li et al. 2016): runs as
//                          graph attention from one virtual node per graph to its nodes, so the
//                          fused sparse kernel does forward and backward and nothing of size
//                          nodes x features is stored beyond x itself
//
// Example (a readout and a classifier on top of node embeddings h: [N, F]):
//   Var g = global_pool(tape, h, ds.graph_ptr, Pooling::mean);                 // [G, F]
//   Var a = global_attention_pool(tape, h, linear(tape, h, gate_w), ds.graph_ptr);  // [G, F]
//   Var logits = linear(tape, g, w_out);                                         // [G, C]
#pragma once

#include <cstdint>
#include <span>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/kernels/pooling.hpp"

namespace edgeattn::autograd {

/// x: [N, F] -> [G, F]; graph_ptr: [G + 1] from 0 to N (copied). Empty graphs pool to 0.
Var global_pool(Tape& tape, Var x, std::span<const int64_t> graph_ptr, Pooling kind);

/// x: [N, F], gate: [N, 1] -> [G, F]; empty graphs give 0. ShapeError naming the operand.
Var global_attention_pool(Tape& tape, Var x, Var gate, std::span<const int64_t> graph_ptr);

}  // namespace edgeattn::autograd
