// Traffic and flop models of the fused sparse attention kernels, so a measured time becomes an
// achieved bandwidth that can be set against the STREAM triad (bench/README.md has the table).
//
// The model counts the bytes the algorithm must move when every gathered source row comes from
// memory, i.e. no reuse of a source row between the edges that touch it. That is the honest
// compulsory traffic for graphs whose source rows far exceed the last-level cache (100k and 1M
// nodes); for small graphs (Cora, 2708 nodes) the rows stay cached and the "bandwidth" is an
// effective one that may exceed STREAM.
//
// Forward, one pass per destination row (online softmax):
//   per edge          4 B column index + the source's key row (dot) or score_src (additive)
//                     + the source's value row
//   per destination   the query row (dot) or score_dst (additive) + the output row written
//                     + 8 B row offset + 4 B x heads row log-sum-exp written
// Backward, atomics-free in two passes (kernels/attention.hpp):
//   destination pass  per edge as forward; per destination: query + dout + out rows, log-sum-exp,
//                     row offset, and the query-side gradient row written
//   source pass       per edge: 4 B destination index (the transpose's 8 B CSR edge id only
//                     with an edge bias, not modelled), the destination's query (or score_dst)
//                     and dout rows, 8 B x heads of row stats
//                     (log-sum-exp and sum(dout * out)); per source: key and value rows read,
//                     their gradient rows written, 8 B column offset
//
// Example:
//   edgeattn::bench::AttentionShape s{.num_dst = n, .num_src = n, .num_edges = e, .heads = 8,
//                                     .qk_dim = 64, .value_dim = 64};
//   double bytes = edgeattn::bench::attention_forward_bytes(s);
#pragma once

#include <cstdint>

namespace edgeattn::bench {

struct AttentionShape {
  int64_t num_dst = 0;
  int64_t num_src = 0;
  int64_t num_edges = 0;
  int64_t heads = 0;
  /// Per-head length of query and key rows (dot-style scores); 0 for additive (GAT) scores,
  /// whose per-node operands are one scalar per head (score_dst, score_src).
  int64_t qk_dim = 0;
  int64_t value_dim = 0;
};

/// Bytes one forward call moves under the model above.
double attention_forward_bytes(const AttentionShape& s);
/// Bytes one backward call moves under the model above (forward not included).
double attention_backward_bytes(const AttentionShape& s);
/// Useful flops of one forward call: per edge and head, 2 * qk_dim for the score (2 for
/// additive) and 2 * value_dim for the weighted sum; exponentials and normalisation not counted.
double attention_forward_flops(const AttentionShape& s);

}  // namespace edgeattn::bench
