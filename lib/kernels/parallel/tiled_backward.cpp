// Backward of the tiled schedule; see tiled_attention.hpp for the algorithm and its references. The
// schedule itself is tiled_backward_impl.hpp, compiled once per SIMD policy under instantiations/.
#include <algorithm>
#include <atomic>

#include "kernels/parallel/flash_microkernel.hpp"
#include "kernels/parallel/flash_schedule.hpp"
#include "kernels/parallel/tiled_attention.hpp"

namespace edgeattn::kernels {
namespace detail {
// Defined in tiled_backward_impl.hpp; instantiated in instantiations/tiled_backward_<policy>.cpp.
template <class Pol>
void tiled_backward_with(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                         const BackwardBuffers& g);
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
