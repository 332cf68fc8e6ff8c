// Dense matrix products for the autograd layer: C = op(A) . op(B), tiled over C and run in
// parallel, one single-threaded BLAS GEMM (kernels::gemm) per tile. When op(B) is the size of a
// layer's weight (k <= 512, n <= 256) and A is not transposed (a layer's forward x W^T and its
// input gradient dy W), op(B) is packed once and each row block of C is computed by edgeattn's
// register-blocked microkernel instead (1.3-1.5x BLAS at these shapes).
//
//   matmul:  c [m, n] (+)= op(a) . op(b),  op(a): [m, k], op(b): [k, n]
//            op(a) = a ([m, k]) or a^T (a: [k, m]); likewise op(b).
//
// Tiles are fixed by the shapes alone (never by the thread count) and each element of C is
// computed by exactly one GEMM (or microkernel chain) over the full k, so results are bit-identical for any
// number of threads. A C of only a few tiles with a long k (a weight gradient dy^T x over many rows) is split
// along k instead: fixed chunks of >= 8192 (at most 64 chunks), partial products in parallel, summed in chunk
// order; also fixed by the shapes alone. The serial oracle (double accumulation) is
// kernels/reference/reference_matmul.cpp.
//
// Example (a linear layer's forward y = x W^T and its input gradient dx = dy W):
//   edgeattn::kernels::matmul(x, false, w, true, y);     // x: [N, in], w: [out, in], y: [N, out]
//   edgeattn::kernels::matmul(dy, false, w, false, dx);  // dy: [N, out], dx: [N, in]
//   edgeattn::kernels::matmul(dy, true, x, false, dw, /*accumulate=*/true);  // dw += dy^T x
#pragma once

#include <string>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::kernels {

/// c = op(a) . op(b), or c += op(a) . op(b) when `accumulate`. All rank 2; ShapeError naming
/// the operand when the extents do not match.
void matmul(ConstView a, bool trans_a, ConstView b, bool trans_b, View c, bool accumulate = false);

/// The BLAS under matmul's tiles and the dense attention path: the kernel set OpenBLAS chose for
/// this CPU when it loaded, and its build. OpenBLAS picks the kernels from the CPU's id; a CPU
/// newer than the OpenBLAS build may get an older core's kernels (AVX2 on an AVX-512 machine runs
/// sgemm at about half the rate). The environment variable OPENBLAS_CORETYPE, read as OpenBLAS
/// loads, forces a choice among the names that build accepts (Debian's 0.3.21: e.g. "Haswell",
/// "SkylakeX", "Zen"; an unknown name is ignored). `edgeattn bench limits` reports the core and
/// the GEMM rate beside the FMA peak.
///   edgeattn::kernels::blas_info().core    // e.g. "Cooperlake"
struct BlasInfo {
  std::string core;    ///< openblas_get_corename(), e.g. "Cooperlake", "Haswell", "Zen"
  std::string config;  ///< openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY ..."
};
BlasInfo blas_info();

}  // namespace edgeattn::kernels
