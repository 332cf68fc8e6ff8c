#include "kernels/blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <mutex>

extern "C" {
// OpenBLAS extensions (declared here to not depend on which cblas.h is found first).
int openblas_get_parallel(void);  // 0: sequential build, 1: pthreads, 2: OpenMP
void openblas_set_num_threads(int);
}

namespace edgeattn::kernels {
namespace {

void pin_blas_to_one_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (openblas_get_parallel() != 0) openblas_set_num_threads(1);
  });
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t x = 0; x < n; ++x) c[r * ldc + x] = beta == 0.f ? 0.f : beta * c[r * ldc + x];
    return;
  }
  pin_blas_to_one_thread();
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(std::max<int64_t>(lda, 1)), b,
              static_cast<blasint>(std::max<int64_t>(ldb, 1)), beta, c,
              static_cast<blasint>(std::max<int64_t>(ldc, 1)));
}

}  // namespace edgeattn::kernels
