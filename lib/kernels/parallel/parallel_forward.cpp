// Fused graph-attention forward: the dispatch. The kernel and its design are in
// parallel_forward_impl.hpp; each pattern's instantiations are compiled in a file of their own
// (instantiations/<pattern>_forward.cpp).
#include "kernels/parallel/parallel_forward_impl.hpp"

namespace edgeattn::kernels {
namespace detail {

extern template void forward_pattern<CsrPattern>(const CsrPattern&, const KernelArgs&, const ForwardBuffers&);
extern template void forward_pattern<CompletePattern>(const CompletePattern&, const KernelArgs&,
                                                      const ForwardBuffers&);
extern template void forward_pattern<CausalPattern>(const CausalPattern&, const KernelArgs&,
                                                    const ForwardBuffers&);
extern template void forward_pattern<WindowPattern>(const WindowPattern&, const KernelArgs&,
                                                    const ForwardBuffers&);
extern template void forward_pattern<BlockDiagonalPattern>(const BlockDiagonalPattern&, const KernelArgs&,
                                                           const ForwardBuffers&);
extern template void forward_pattern<WindowGlobalPattern>(const WindowGlobalPattern&, const KernelArgs&,
                                                          const ForwardBuffers&);

}  // namespace detail

void parallel_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out) {
  if (tiled_applies(p, a, out.alpha != nullptr)) return tiled_forward(p, a, out);
  visit_pattern(p, [&](const auto& pattern) { detail::forward_pattern(pattern, a, out); });
}

}  // namespace edgeattn::kernels
