// The tiled backward (tiled_backward_impl.hpp) on the Portable SIMD policy: one policy per file, so
// that a build spreads the three over its cores.
#include "kernels/parallel/tiled_backward_impl.hpp"

namespace edgeattn::kernels::detail {
template void tiled_backward_with<flash::Portable>(const Pattern&, const KernelArgs&, const BackwardInputs&,
                                                   const BackwardBuffers&);
}  // namespace edgeattn::kernels::detail
