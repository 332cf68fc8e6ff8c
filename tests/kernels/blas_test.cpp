// kernels::gemm, the one BLAS call (kernels/blas.hpp): OpenBLAS's idle worker threads are gone
// once the library is loaded (they would spin on the cores oneTBB uses for ~0.1 s), its kernels are
// at least AVX2's where the CPU has AVX2 (it falls back to SSE3's on CPUs newer than its build),
// and gemm still computes C = alpha op(A) op(B) + beta C for every transpose afterwards, on shapes
// large enough that a threaded BLAS would split them.
#include "kernels/blas.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "edgeattn/kernels/matmul.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::kernels {
namespace {

// Threads of this process. ctest runs each test in a process of its own, and no test here has
// run anything in parallel before counting: gtest starts no threads, oneTBB starts its workers at
// the first parallel loop.
int64_t process_threads() {
  int64_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(Blas, NoIdleBlasThreadsOnceTheLibraryIsLoaded) {
  if (!std::filesystem::exists("/proc/self/task")) GTEST_SKIP() << "no /proc/self/task here";
  // OpenBLAS's pthread build starts one worker per further core as it loads (none on one core).
  EXPECT_EQ(process_threads(), 1) << "threads besides the test's own are running before any parallel work: "
                                     "OpenBLAS's workers were not stopped (kernels/blas.cpp)";
}

// On a CPU with AVX2 and FMA, OpenBLAS runs an AVX2 or AVX-512 kernel set: its own choice when it
// recognised the CPU, else the library's (kernels/blas.cpp: choose_blas_kernels). Meaningful on a
// CPU that OpenBLAS does not recognise (Intel family 6 model 207 with Debian's 0.3.21: Prescott
// before, SkylakeX after); elsewhere it checks that a recognised CPU's choice is kept.
TEST(Blas, KernelsUseAvx2OrAvx512WhereTheCpuHasThem) {
#if defined(__x86_64__) || defined(__i386__)
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr)
    GTEST_SKIP() << "OPENBLAS_CORETYPE is set: the user's choice";
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2 and FMA";
  const std::string core = blas_info().core;
  EXPECT_TRUE(core == "Haswell" || core == "Zen" || core == "SkylakeX" || core == "Cooperlake" ||
              core == "SapphireRapids")
      << "OpenBLAS runs the kernels of core '" << core << "' on a CPU with AVX2 and FMA";
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr) << "the choice left OPENBLAS_CORETYPE set";
#else
  GTEST_SKIP() << "not an x86 CPU";
#endif
}

TEST(Blas, GemmMatchesTheLoopForEveryTransposeAfterThePin) {
  const int64_t m = 190, k = 170, n = 210;  // above OpenBLAS's threading threshold
  const Tensor a = testing::random_tensor({m, k}, 1), at = testing::random_tensor({k, m}, 2);
  const Tensor b = testing::random_tensor({k, n}, 3), bt = testing::random_tensor({n, k}, 4);
  const Tensor c0 = testing::random_tensor({m, n}, 5);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string(ta ? "A^T" : "A") + (tb ? " B^T" : " B"));
      const Tensor& lhs = ta ? at : a;
      const Tensor& rhs = tb ? bt : b;
      std::vector<float> c(c0.data(), c0.data() + m * n);
      gemm(ta, tb, m, n, k, 0.5f, lhs.data(), ta ? m : k, rhs.data(), tb ? k : n, 2.f, c.data(), n);
      double worst = 0.0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0.0;
          for (int64_t p = 0; p < k; ++p)
            s += double(ta ? lhs.data()[p * m + i] : lhs.data()[i * k + p]) *
                 double(tb ? rhs.data()[j * k + p] : rhs.data()[p * n + j]);
          const double want = 0.5 * s + 2.0 * c0.data()[i * n + j];
          worst = std::max(worst, std::abs(want - double(c[size_t(i * n + j)])));
        }
      EXPECT_LT(worst, 1e-3);
    }
}

}  // namespace
}  // namespace edgeattn::kernels
