// The fused backward's instantiations for CausalPattern: every score, compile-time shape and
// normalisation (parallel_backward_impl.hpp). One pattern and one direction per file, so that a
// build spreads the kernels over its cores (the forward's are in causal_forward.cpp).
#include "kernels/parallel/parallel_backward_impl.hpp"

namespace edgeattn::kernels::detail {
template void backward_pattern<CausalPattern>(const CausalPattern&, const KernelArgs&, const BackwardInputs&,
                                              const BackwardBuffers&);
}  // namespace edgeattn::kernels::detail
