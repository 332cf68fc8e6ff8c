// Fused graph-attention backward: the dispatch. The kernels and their design are in
// parallel_backward_impl.hpp; each pattern's instantiations are compiled in a file of their own
// (instantiations/<pattern>_backward.cpp).
#include "kernels/parallel/parallel_backward_impl.hpp"

namespace edgeattn::kernels {
namespace detail {

EdgeRecords g_edge_records = EdgeRecords::automatic;

extern template void backward_pattern<CsrPattern>(const CsrPattern&, const KernelArgs&, const BackwardInputs&,
                                                  const BackwardBuffers&);
extern template void backward_pattern<CompletePattern>(const CompletePattern&, const KernelArgs&,
                                                       const BackwardInputs&, const BackwardBuffers&);
extern template void backward_pattern<CausalPattern>(const CausalPattern&, const KernelArgs&,
                                                     const BackwardInputs&, const BackwardBuffers&);
extern template void backward_pattern<WindowPattern>(const WindowPattern&, const KernelArgs&,
                                                     const BackwardInputs&, const BackwardBuffers&);
extern template void backward_pattern<BlockDiagonalPattern>(const BlockDiagonalPattern&, const KernelArgs&,
                                                            const BackwardInputs&, const BackwardBuffers&);
extern template void backward_pattern<WindowGlobalPattern>(const WindowGlobalPattern&, const KernelArgs&,
                                                           const BackwardInputs&, const BackwardBuffers&);

}  // namespace detail

void parallel_backward(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                       const BackwardBuffers& g) {
  if (tiled_applies(p, a, /*want_alpha=*/false)) return tiled_backward(p, a, in, g);
  visit_pattern(p, [&](const auto& pattern) { detail::backward_pattern(pattern, a, in, g); });
}

void set_edge_records(EdgeRecords mode) { detail::g_edge_records = mode; }

// The destination terms pay where the backward's destination pass waits on memory: its gathered
// source rows (score term and value, 72 floats a source) beyond the last-level cache. Measured on
// 2 threads, 2-core Zen 3 (32 MiB L3): a sampled block of 237k sources (68 MB of rows), forward +
// backward 145 -> 120 ms; Cora (2708 sources, 0.8 MB), whose passes run from cache, 4.1 -> 4.5 ms
// an epoch (the edge records' source pass is cheaper there than recomputing the weights).
constexpr int64_t kDstTermsMinBytes = int64_t{16} << 20;

// One head (GAT's output layer): the terms, 2 dv floats a destination, are never larger than the
// output and value rows the backward holds, so they need no budget of their own. They are kept
// where the edge records are not (over their budget: both passes recompute every edge), and the
// recomputing destination pass would gather the rows from beyond the cache: there its score, exp,
// dropout hash and two dots an edge cost more than the forward's second sum over the rows it has
// just read. Where the records fit, the destination pass's per-edge work feeds them and the source
// pass reads them instead of recomputing; terms would trade that for 2 dv floats a node (47
// classes over 2.45M nodes: 0.9 GB against the records' 0.5 GB). Measured on 2 threads, 2-core
// Xeon (family 6 model 207): the 1M-node / 10M-edge R-MAT epoch's output layer (8 classes), see
// bench/RESULTS.md.
bool parallel_dst_terms_apply(const Pattern& p, const KernelArgs& a) {
  const Graph* g = std::get_if<Graph>(&p);
  if (g == nullptr || a.score.kind != EdgeScore::additive || a.norm != Normalization::softmax) return false;
  const bool eight = a.heads == 8 && a.dv == 8;
  if ((!eight && a.heads != 1) || a.bias || a.score.se || !(a.score.slope >= 0.f)) return false;
  // set_edge_records: never turns the terms off with the records, always forces both (tests).
  if (detail::g_edge_records != EdgeRecords::automatic) return detail::g_edge_records == EdgeRecords::always;
  if (gathered_bytes(g->num_src(), a.heads + a.heads * a.dv) < kDstTermsMinBytes) return false;
  const bool records =
      detail::edge_records_apply<CsrPattern, AdditiveScore<8>>(CsrPattern(*g), a, a.dv, /*softmax=*/true);
  return eight ? records : !records;
}

bool parallel_backward_writes_each_dv_once(const Pattern& p, const KernelArgs& a) {
  return !tiled_applies(p, a, /*want_alpha=*/false);
}

}  // namespace edgeattn::kernels
