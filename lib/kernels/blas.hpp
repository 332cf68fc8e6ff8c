// Every BLAS call in edgeattn runs inside a oneTBB task on its own block, so BLAS itself must be
// single-threaded and safe to call from many threads at once. We link the pthread build of
// OpenBLAS (thread-safe; Debian's serial build is not, see cmake/FindEdgeattnBLAS.cmake) and pin
// it to one thread here, once, before the first GEMM. Every function that calls BLAS calls this
// first (it is a call_once, so the cost is one atomic load).
#pragma once

namespace edgeattn::kernels {

void ensure_single_threaded_blas();

}  // namespace edgeattn::kernels
