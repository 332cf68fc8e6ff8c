#include "kernels/blas.hpp"

#include <cblas.h>
#include <dlfcn.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "edgeattn/kernels/matmul.hpp"  // BlasInfo

extern "C" {
// OpenBLAS extensions (declared here to not depend on which cblas.h is found first).
int openblas_get_parallel(void);  // 0: sequential build, 1: pthreads, 2: OpenMP
void openblas_set_num_threads(int);
char* openblas_get_corename(void);
char* openblas_get_config(void);
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

// The kernel set of an x86 CPU with AVX2 and FMA that OpenBLAS (dynamic-architecture build) did
// not recognise. OpenBLAS picks its kernels from the CPU's family and model as it loads; Debian's
// 0.3.21 does not know newer models (an Intel Xeon of family 6 model 207, AVX-512) and falls back to
// Prescott's SSE3 kernels, which ran sgemm at 63 GFLOP/s there against 248-290 with SkylakeX's
// (2 threads, FMA peak 350: `edgeattn bench limits`). So when the user has not chosen
// (OPENBLAS_CORETYPE unset) and the chosen core predates AVX2, choose again as OPENBLAS_CORETYPE
// would: SkylakeX's kernels where the CPU has AVX-512 F/BW/VL/DQ, else Zen's (AMD) or Haswell's.
// gotoblas_dynamic_quit/init are what OpenBLAS's own constructor runs; they are exported, not
// documented, so they are looked up, and a build without them (one target) keeps its choice.
// Runs as the library loads, before any call into BLAS from edgeattn.
void choose_blas_kernels() {
#if defined(__x86_64__) || defined(__i386__)
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the user's choice stands
  const char* current = openblas_get_corename();
  if (current == nullptr) return;
  for (const char* modern : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})
    if (strcasecmp(current, modern) == 0) return;
  __builtin_cpu_init();
  const char* target = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    target = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    target = __builtin_cpu_is("amd") ? "Zen" : "Haswell";
  if (target == nullptr) return;  // an older CPU: OpenBLAS's choice is as good as any
  auto* quit = reinterpret_cast<void (*)()>(openblas_symbol("gotoblas_dynamic_quit"));
  auto* init = reinterpret_cast<void (*)()>(openblas_symbol("gotoblas_dynamic_init"));
  if (quit == nullptr || init == nullptr) return;
  setenv("OPENBLAS_CORETYPE", target, 1);
  quit();
  init();  // reads OPENBLAS_CORETYPE; falls back itself where the CPU lacks the target's ISA
  unsetenv("OPENBLAS_CORETYPE");
#endif
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
    choose_blas_kernels();
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

BlasInfo blas_info() {
  pin_blas_to_one_thread();  // the kernels chosen (choose_blas_kernels), even from a static initialiser
  auto text = [](const char* p) { return p ? std::string(p) : std::string("unknown"); };
  return {.core = text(openblas_get_corename()), .config = text(openblas_get_config())};
}

}  // namespace edgeattn::kernels
