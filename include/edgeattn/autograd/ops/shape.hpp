// Shape ops with backward: reshape, head mean, concatenation along the last dimension, the
// leading rows of a matrix.
//
// Example (GAT heads: concat for hidden layers, mean for the output layer):
//   Var hidden = reshape(tape, heads_out, {n, heads * dim});   // [N, H, D] -> [N, H*D]
//   Var logits = mean_heads(tape, heads_out);                   // [N, H, D] -> [N, D]
#pragma once

#include <initializer_list>

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::autograd {

/// x: any shape -> `shape` with the same element count (ShapeError otherwise). The output shares
/// x's storage (no copy: recorded values are never written again); the gradient is reshaped back.
Var reshape(Tape& tape, Var x, Shape shape);

/// x: [N, H, D] -> [N, D], the mean over heads
Var mean_heads(Tape& tape, Var x);

/// xs: each [..., F_i] with equal leading extents -> [..., sum F_i]
Var concat(Tape& tape, std::initializer_list<Var> xs);

/// x: [N, ...] -> its first `rows` rows [rows, ...] (0 <= rows <= N, ShapeError otherwise); the
/// gradient flows into those rows. A sampled block's destination nodes are the first of its
/// sources (graph/neighbor_sampler.hpp): x_dst = leading_rows(tape, x_src, block.num_dst()).
Var leading_rows(Tape& tape, Var x, int64_t rows);

}  // namespace edgeattn::autograd
