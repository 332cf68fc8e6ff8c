// The one way edgeattn calls BLAS.
//
// Every BLAS call runs inside a oneTBB task on its own block, so BLAS itself must be
// single-threaded and safe to call from many threads at once. We link the pthread build of
// OpenBLAS (thread-safe; Debian's serial build is not, see cmake/FindEdgeattnBLAS.cmake), and
// the library pins it to one thread and stops its idle worker threads when it is loaded (they
// would otherwise spin on the cores oneTBB uses; blas.cpp), and `gemm` before its first call.
#pragma once

#include <cstdint>

namespace edgeattn::kernels {

/// Row-major C = alpha op(A) op(B) + beta C, with op(A) m x k and op(B) k x n, single-threaded.
/// Tolerates empty shapes (k == 0 scales C by beta; cblas rejects a zero leading dimension).
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace edgeattn::kernels
