// The fused forward's and backward's instantiations for CausalPattern: every score, compile-time shape
// and normalisation (parallel_forward_impl.hpp, parallel_backward_impl.hpp). One pattern per file,
// so that a build spreads the kernels over its cores: in one file, the backward's ASan + UBSan
// compile alone took 27 of CI's minutes.
#include "kernels/parallel/parallel_backward_impl.hpp"
#include "kernels/parallel/parallel_forward_impl.hpp"

namespace edgeattn::kernels::detail {
template void forward_pattern<CausalPattern>(const CausalPattern&, const KernelArgs&, const ForwardBuffers&);
template void backward_pattern<CausalPattern>(const CausalPattern&, const KernelArgs&, const BackwardInputs&,
                                              const BackwardBuffers&);
}  // namespace edgeattn::kernels::detail
