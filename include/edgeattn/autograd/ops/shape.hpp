// Shape ops with backward: reshape, head mean, concatenation along the last dimension, the
// leading rows of a matrix, and the expansion of a part's rows to its sources (SourceExpansion).
//
// Example (GAT heads: concat for hidden layers, mean for the output layer):
//   Var hidden = reshape(tape, heads_out, {n, heads * dim});   // [N, H, D] -> [N, H*D]
//   Var logits = mean_heads(tape, heads_out);                   // [N, H, D] -> [N, D]
#pragma once

#include <functional>
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

/// How a part's own rows become its sources' rows, where other sources' rows live elsewhere
/// (distributed training: dist::halo_expansion). Both are functions on values, of any row width:
///   expand(own [num_own, ...]) -> [num_src, ...]: the own rows first, then the other sources'
///     rows (received from where they live);
///   reduce(g [num_src, ...]) -> [num_own, ...]: expand's adjoint, the own rows' gradient plus
///     what the other sources' rows contribute to the rows they were made from, summed in an
///     order that does not depend on timing.
/// Both may be collectives (every rank calls them in the same sequence): ops that take them call
/// each exactly once per forward or backward, needed or not.
struct SourceExpansion {
  std::function<Tensor(ConstView)> expand;
  std::function<Tensor(ConstView)> reduce;
  /// How many parts (ranks) call expand and reduce together: every one must run the same sequence
  /// of them, so a part may take a path of its own only when it is the only one.
  int parts = 1;
  explicit operator bool() const { return static_cast<bool>(expand); }
};

/// own: [num_own, ...] -> sources.expand(own) [num_src >= num_own, ...]; the gradient is
/// sources.reduce(dy) (run in backward even where own needs none: it may be a collective).
/// InvalidArgument without both functions; ShapeError when expand's result does not keep own's
/// trailing dimensions or has fewer rows.
Var expand_sources(Tape& tape, Var own, const SourceExpansion& sources);

}  // namespace edgeattn::autograd
