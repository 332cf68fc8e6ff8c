// The tiled backward (tiled_backward_impl.hpp) on the Avx512 SIMD policy: one policy per file, so
// that a build spreads the three over its cores (empty where the build does not target it).
#include "kernels/parallel/tiled_backward_impl.hpp"

#if defined(__AVX512F__)
namespace edgeattn::kernels::detail {
template void tiled_backward_with<flash::Avx512>(const Pattern&, const KernelArgs&, const BackwardInputs&,
                                                 const BackwardBuffers&);
}  // namespace edgeattn::kernels::detail
#endif
