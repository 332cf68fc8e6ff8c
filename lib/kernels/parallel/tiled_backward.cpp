// Backward of the tiled schedule; see tiled_attention.hpp for the algorithm and its references. The
// schedule itself is tiled_backward_impl.hpp, compiled once per SIMD policy under instantiations/.
#include "kernels/parallel/tiled_backward_impl.hpp"

namespace edgeattn::kernels {
namespace detail {
extern template void tiled_backward_with<flash::Portable>(const Pattern&, const KernelArgs&,
                                                          const BackwardInputs&, const BackwardBuffers&);
#if defined(__AVX2__) && defined(__FMA__)
extern template void tiled_backward_with<flash::Avx2>(const Pattern&, const KernelArgs&,
                                                      const BackwardInputs&, const BackwardBuffers&);
#endif
#if defined(__AVX512F__)
extern template void tiled_backward_with<flash::Avx512>(const Pattern&, const KernelArgs&,
                                                        const BackwardInputs&, const BackwardBuffers&);
#endif
}  // namespace detail

void set_tiled_budgets(int64_t dq_partial_floats, int64_t packed_floats) {
  flash::g_dq_partial_budget.store(std::max<int64_t>(dq_partial_floats, 0), std::memory_order_relaxed);
  flash::g_packed_budget.store(std::max<int64_t>(packed_floats, 0), std::memory_order_relaxed);
}

void tiled_backward(const Pattern& p, const KernelArgs& a, const BackwardInputs& in, const BackwardBuffers& g,
                    SimdPath path) {
  flash::with_policy(path, [&](auto policy) { detail::tiled_backward_with<decltype(policy)>(p, a, in, g); });
}

}  // namespace edgeattn::kernels
