#include "data/edge_assembly.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "edgeattn/core/error.hpp"

namespace edgeattn::data {
namespace {

// True when every final weight is 1 given that every stored weight is 1: no two stored entries
// were merged into one CSR edge. (An edge with a stored entry weighs the sum of its stored
// entries; one reached only by mirrors weighs the sum of those, and two mirrors meet only where
// the entries they mirror do; an added self-loop weighs 1.) One bit per edge instead of the
// general sums' 17 bytes: on a 10M-entry file those were ~380 MB of fresh memory, written and
// freed at every load of an unweighted graph, whose weights most files store as ones.
bool stored_entries_distinct(const Graph& graph, size_t stored) {
  std::vector<bool> seen(static_cast<size_t>(graph.num_edges()));
  const auto csr_of = graph.csr_edge_of_input();
  for (size_t k = 0; k < stored; ++k) {
    const int64_t e = csr_of[k];
    if (e < 0) continue;  // a removed self-loop
    if (seen[static_cast<size_t>(e)]) return false;
    seen[static_cast<size_t>(e)] = true;
  }
  return true;
}

}  // namespace

AssembledGraph assemble_graph(int64_t num_nodes, std::vector<int64_t> src, std::vector<int64_t> dst,
                              const std::vector<float>& weight, bool undirected, SelfLoops self_loops,
                              std::span<const float> edge_attr, int64_t edge_attr_dim) {
  AssembledGraph out;
  const size_t stored = src.size();
  out.stored_entries = static_cast<int64_t>(stored);
  for (size_t k = 0; k < stored; ++k) out.stored_self_loops += src[k] == dst[k];
  if (undirected) {  // mirrors follow the stored entries, so the stored direction is seen first
    src.reserve(2 * stored);
    dst.reserve(2 * stored);
    for (size_t k = 0; k < stored; ++k) {
      src.push_back(dst[k]);
      dst.push_back(src[k]);
    }
  }
  out.graph = build_graph(num_nodes, num_nodes, std::span<const int64_t>(src), std::span<const int64_t>(dst),
                          {.self_loops = self_loops, .duplicates = Duplicates::merge, .symmetrize = false});
  if (edge_attr_dim > 0)
    out.edge_attr = edge_rows_in_csr_order(out.graph, edge_attr, edge_attr_dim, static_cast<int64_t>(stored));
  if (weight.empty()) return out;
  if (std::all_of(weight.begin(), weight.end(), [](float w) { return w == 1.f; }) &&
      stored_entries_distinct(out.graph, stored))
    return out;

  const int64_t m = out.graph.num_edges();
  std::vector<double> from_stored(static_cast<size_t>(m), 0.0), from_mirror(static_cast<size_t>(m), 0.0);
  std::vector<uint8_t> has_stored(static_cast<size_t>(m), 0);
  const auto csr_of = out.graph.csr_edge_of_input();
  for (size_t k = 0; k < csr_of.size(); ++k) {
    const int64_t e = csr_of[k];
    if (e < 0) continue;  // a removed self-loop
    const size_t ek = static_cast<size_t>(e);
    if (k < stored) {
      from_stored[ek] += weight[k];
      has_stored[ek] = 1;
    } else {
      from_mirror[ek] += weight[k - stored];
    }
  }
  std::vector<float> w(static_cast<size_t>(m), 1.f);
  bool all_one = true;
  const auto input_of = out.graph.input_edge_of_csr();
  for (size_t e = 0; e < w.size(); ++e) {
    if (input_of[e] >= 0) w[e] = static_cast<float>(has_stored[e] ? from_stored[e] : from_mirror[e]);
    all_one &= w[e] == 1.f;
  }
  if (!all_one) out.edge_weight = std::move(w);
  return out;
}

Tensor edge_rows_in_csr_order(const Graph& graph, std::span<const float> attr, int64_t d, int64_t stored) {
  if (d <= 0 || static_cast<int64_t>(attr.size()) != stored * d)
    raise<ShapeError>("edge attributes: ", attr.size(), " values for ", stored, " stored edges of ", d,
                      " attributes each");
  const int64_t m = graph.num_edges();
  Tensor out({m, d}, 0.f);
  std::vector<uint8_t> has_stored(static_cast<size_t>(m), 0);
  const auto csr_of = graph.csr_edge_of_input();
  // Stored entries first, then mirrors where no stored entry landed; sums in input order.
  for (const bool mirrors : {false, true}) {
    for (size_t k = 0; k < csr_of.size(); ++k) {
      const int64_t e = csr_of[k];
      const bool is_mirror = static_cast<int64_t>(k) >= stored;
      if (e < 0 || is_mirror != mirrors) continue;  // e < 0: a removed self-loop
      if (mirrors && has_stored[static_cast<size_t>(e)]) continue;
      if (!mirrors) has_stored[static_cast<size_t>(e)] = 1;
      const float* a =
          attr.data() + (is_mirror ? static_cast<int64_t>(k) - stored : static_cast<int64_t>(k)) * d;
      float* o = out.data() + e * d;
      for (int64_t c = 0; c < d; ++c) o[c] += a[c];
    }
  }
  return out;
}

}  // namespace edgeattn::data
