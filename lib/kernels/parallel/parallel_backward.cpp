// Fused graph-attention backward: the dispatch. The kernels and their design are in
// parallel_backward_impl.hpp; each pattern's instantiations are compiled in a file of their own
// (instantiations/<pattern>.cpp).
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

bool parallel_backward_writes_each_dv_once(const Pattern& p, const KernelArgs& a) {
  return !tiled_applies(p, a, /*want_alpha=*/false);
}

}  // namespace edgeattn::kernels
