#include "kernels/blas.hpp"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>

extern "C" {
// OpenBLAS extensions (declared here to not depend on which cblas.h is found first).
int openblas_get_parallel(void);  // 0: sequential build, 1: pthreads, 2: OpenMP
void openblas_set_num_threads(int);
}

namespace edgeattn::kernels {
namespace {

// `name` in the OpenBLAS this library is linked to (found from openblas_set_num_threads' address,
// so not another BLAS the process also loaded, e.g. numpy's), or null.
void* openblas_symbol(const char* name) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&openblas_set_num_threads), &info) == 0 || !info.dli_fname)
    return nullptr;
  void* lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);  // already loaded: a new reference
  if (!lib) return nullptr;
  void* symbol = dlsym(lib, name);
  dlclose(lib);  // the library stays loaded (we link it), and so does the symbol
  return symbol;
}

// One thread, and OpenBLAS's pthread build's idle worker threads stopped. That build starts them
// as it loads, and each spins (sched_yield) for about 2^28 cycles, ~0.1 s, before it sleeps;
// setting one thread does not stop them. Until they sleep they take the cores from oneTBB's
// workers, and a parallel loop waits for its slowest task: on a 2-core host every parallel loop
// of a process ran at half speed for its first ~0.1 s (a short attention benchmark, the first
// epochs of a Cora run; bench/RESULTS.md). blas_thread_shutdown_ is the function OpenBLAS's own
// fork handler stops them with; with one thread no call starts them again. Looked up, not linked:
// it is exported but not documented, and a build without it only keeps the spinning.
void pin_blas_to_one_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int parallel = openblas_get_parallel();
    if (parallel != 0) openblas_set_num_threads(1);
    if (parallel == 1)
      if (auto* shutdown = reinterpret_cast<int (*)()>(openblas_symbol("blas_thread_shutdown_"))) shutdown();
  });
}

// Pinned as the library loads, before anything runs in parallel (and by gemm, which may run
// before this file's initialisers).
[[maybe_unused]] const bool g_blas_pinned_at_load = (pin_blas_to_one_thread(), true);

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
