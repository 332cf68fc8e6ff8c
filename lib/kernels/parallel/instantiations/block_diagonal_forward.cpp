// The fused forward's instantiations for BlockDiagonalPattern: every score, compile-time shape and
// normalisation (parallel_forward_impl.hpp). One pattern and one direction per file, so that a
// build spreads the kernels over its cores: a file holding both directions of a pattern took up to
// 205 s of a 2-core CI build with ASan + UBSan, and ran last, alone.
#include "kernels/parallel/parallel_forward_impl.hpp"

namespace edgeattn::kernels::detail {
template void forward_pattern<BlockDiagonalPattern>(const BlockDiagonalPattern&, const KernelArgs&,
                                                    const ForwardBuffers&);
}  // namespace edgeattn::kernels::detail
