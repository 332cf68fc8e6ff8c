#include "traffic_model.hpp"

namespace edgeattn::bench {
namespace {

constexpr double kFloat = 4.0;
constexpr double kIndex32 = 4.0;
constexpr double kOffset64 = 8.0;

// Bytes of one node's query-or-key row (or its per-head score scalars for additive scores).
double qk_row(const AttentionShape& s) {
  return kFloat * static_cast<double>(s.heads) * static_cast<double>(s.qk_dim > 0 ? s.qk_dim : 1);
}
double value_row(const AttentionShape& s) {
  return kFloat * static_cast<double>(s.heads) * static_cast<double>(s.value_dim);
}
double per_head_stat(const AttentionShape& s) { return kFloat * static_cast<double>(s.heads); }

}  // namespace

double attention_forward_bytes(const AttentionShape& s) {
  const double per_edge = kIndex32 + qk_row(s) + value_row(s);
  const double per_dst = qk_row(s) + value_row(s) + kOffset64 + per_head_stat(s);
  return per_edge * static_cast<double>(s.num_edges) + per_dst * static_cast<double>(s.num_dst);
}

double attention_backward_bytes(const AttentionShape& s) {
  const double edges = static_cast<double>(s.num_edges);
  // Destination pass: recompute each row's weights, accumulate the query-side gradient.
  const double dst_pass =
      (kIndex32 + qk_row(s) + value_row(s)) * edges +
      (2 * qk_row(s) + 2 * value_row(s) + per_head_stat(s) + kOffset64) * static_cast<double>(s.num_dst);
  // Source pass over the transpose: gather destination-side rows, write key/value gradients. (The
  // transpose's 8-byte CSR edge ids are read only with an edge bias, which the model leaves out.)
  const double src_pass = (kIndex32 + qk_row(s) + value_row(s) + 2 * per_head_stat(s)) * edges +
                          (2 * qk_row(s) + 2 * value_row(s) + kOffset64) * static_cast<double>(s.num_src);
  return dst_pass + src_pass;
}

double attention_forward_flops(const AttentionShape& s) {
  const double score = s.qk_dim > 0 ? 2.0 * static_cast<double>(s.qk_dim) : 2.0;
  return static_cast<double>(s.num_edges) * static_cast<double>(s.heads) *
         (score + 2.0 * static_cast<double>(s.value_dim));
}

}  // namespace edgeattn::bench
