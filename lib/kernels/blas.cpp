#include "kernels/blas.hpp"

#include <cblas.h>

#include <mutex>

extern "C" {
// OpenBLAS extensions (declared here to not depend on which cblas.h is found first).
int openblas_get_parallel(void);  // 0: sequential build, 1: pthreads, 2: OpenMP
void openblas_set_num_threads(int);
}

namespace edgeattn::kernels {

void ensure_single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (openblas_get_parallel() != 0) openblas_set_num_threads(1);
  });
}

}  // namespace edgeattn::kernels
