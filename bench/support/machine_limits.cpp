// Machine limits: STREAM triad bandwidth and vector FMA peak (see machine_limits.hpp).
//
// Triad: the three arrays are first touched by the same threads, over the same static blocks, as
// the timed passes, so on a NUMA machine each block's pages live next to the core that streams
// them. One untimed pass warms the arena's workers; the best of the timed passes is reported, as
// STREAM does, because interference only ever makes a pass slower.
//
// FMA: each thread keeps kChains independent accumulators, each updated acc = acc * m + c. A chain
// is serially dependent, so with FMA latency L cycles and P FMA pipes at least L * P chains are
// needed to keep the pipes full (Zen 4 / Skylake-X: 4 cycles x 2 pipes = 8); 12 leaves slack. The
// multiplier and addend come from a volatile, the iteration count is a run-time value and the
// accumulators are summed into the returned value, so the compiler can neither fold nor drop the
// loop, and without -ffast-math it may not reassociate the chains either. acc converges to
// c / (1 - m) = 1, so no value ever becomes denormal or infinite (which would slow the FMAs).
#include "machine_limits.hpp"

#include <immintrin.h>
#include <sys/mman.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/kernels/matmul.hpp"

namespace edgeattn::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// STREAM triad
// ---------------------------------------------------------------------------------------------

struct AlignedFree {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using FloatArray = std::unique_ptr<float[], AlignedFree>;

// Deliberately not value-initialised: the pages are first touched by the parallel init below.
FloatArray allocate_uninitialised(int64_t n) {
  return FloatArray(
      static_cast<float*>(::operator new[](static_cast<size_t>(n) * sizeof(float), std::align_val_t{64})));
}

__attribute__((noinline)) void triad(float* __restrict a, const float* __restrict b,
                                     const float* __restrict c, float s, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

// Runs body(begin, end) over `threads` equal static blocks of [0, n), one per arena thread.
template <class Body>
void for_static_blocks(tbb::task_arena& arena, int threads, int64_t n, Body&& body) {
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int>(0, threads, 1),
        [&](const tbb::blocked_range<int>& r) {
          for (int t = r.begin(); t != r.end(); ++t) body(n * t / threads, n * (t + 1) / threads);
        },
        tbb::static_partitioner());
  });
}

// ---------------------------------------------------------------------------------------------
// FMA peak
// ---------------------------------------------------------------------------------------------

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec vset1(float x) { return _mm512_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec vadd(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline float vsum(Vec a) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, a);
  float s = 0.f;
  for (float x : lanes) s += x;
  return s;
}
#elif defined(__FMA__) && defined(__AVX__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec vset1(float x) { return _mm256_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vadd(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline float vsum(Vec a) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, a);
  float s = 0.f;
  for (float x : lanes) s += x;
  return s;
}
#else
#error "machine_limits.cpp needs AVX2+FMA or AVX-512F: configure with EDGEATTN_NATIVE=ON on x86-64"
#endif

constexpr int kChains = 12;
volatile float g_multiplier = 0.999999f;
volatile float g_addend = 1e-6f;

__attribute__((noinline)) float fma_chains(int64_t iterations, float start) {
  const Vec m = vset1(g_multiplier);
  const Vec c = vset1(g_addend);
  Vec acc[kChains];
#pragma GCC unroll 12
  for (int k = 0; k < kChains; ++k) acc[k] = vset1(start + 0.001f * static_cast<float>(k));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = vfma(acc[k], m, c);
  }
  Vec total = acc[0];
#pragma GCC unroll 12
  for (int k = 1; k < kChains; ++k) total = vadd(total, acc[k]);
  return vsum(total);
}

// Runs fma_chains(iterations) on `threads` threads released together; returns the wall time from
// release to the last thread's end.
double timed_fma_run(int threads, int64_t iterations, float& sink) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<float> results(static_cast<size_t>(threads), 0.f);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      results[static_cast<size_t>(t)] = fma_chains(iterations, static_cast<float>(t));
    });
  }
  while (ready.load() < threads) {
  }
  const auto start = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  const double elapsed = seconds_since(start);
  for (float r : results) sink += r;
  return elapsed;
}

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto first = line.find_first_not_of(" \t", colon + 1);
    return first == std::string::npos ? std::string("unknown") : line.substr(first);
  }
  return "unknown";
}

}  // namespace

// Sinks for results; globals the optimiser must assume are read elsewhere.
volatile float g_fma_sink = 0.f;
volatile float g_triad_sink = 0.f;

double measure_stream_triad_gbps(int threads, int64_t elements, int repetitions) {
  if (threads < 1)
    raise<InvalidArgument>("measure_stream_triad_gbps: threads is ", threads, ", expected >= 1");
  if (elements < threads)
    raise<InvalidArgument>("measure_stream_triad_gbps: elements is ", elements, ", expected >= threads (",
                           threads, ")");
  if (repetitions < 1)
    raise<InvalidArgument>("measure_stream_triad_gbps: repetitions is ", repetitions, ", expected >= 1");

  tbb::task_arena arena(threads);
  FloatArray a = allocate_uninitialised(elements);
  FloatArray b = allocate_uninitialised(elements);
  FloatArray c = allocate_uninitialised(elements);
  for_static_blocks(arena, threads, elements, [&](int64_t begin, int64_t end) {
    std::fill(a.get() + begin, a.get() + end, 0.f);
    std::fill(b.get() + begin, b.get() + end, 1.f);
    std::fill(c.get() + begin, c.get() + end, 2.f);
  });

  const float s = 3.f;
  const auto pass = [&] {
    for_static_blocks(arena, threads, elements,
                      [&](int64_t begin, int64_t end) { triad(a.get(), b.get(), c.get(), s, begin, end); });
  };
  pass();  // warm-up: wakes the workers, faults in any lazily mapped page
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = Clock::now();
    pass();
    best = std::min(best, seconds_since(start));
  }
  // Reading the result keeps the stores observable (a[i] is 1 + 3 * 2 everywhere).
  g_triad_sink = a[static_cast<size_t>(elements / 2)];
  const double bytes = 3.0 * sizeof(float) * static_cast<double>(elements);
  return bytes / best * 1e-9;
}

double measure_fma_peak_gflops(int threads, double seconds, int repetitions) {
  if (threads < 1) raise<InvalidArgument>("measure_fma_peak_gflops: threads is ", threads, ", expected >= 1");
  if (repetitions < 1)
    raise<InvalidArgument>("measure_fma_peak_gflops: repetitions is ", repetitions, ", expected >= 1");
  float sink = 0.f;
  // Calibrate the iteration count on one thread so each timed run lasts about `seconds`.
  int64_t iterations = 1 << 16;
  for (;;) {
    const auto start = Clock::now();
    sink += fma_chains(iterations, 0.5f);
    const double t = seconds_since(start);
    if (t > 0.01 || iterations > (int64_t{1} << 40)) {
      iterations = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iterations) * seconds / t));
      break;
    }
    iterations *= 4;
  }
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) best = std::min(best, timed_fma_run(threads, iterations, sink));
  g_fma_sink = sink;
  const double flops = 2.0 * kLanes * kChains * static_cast<double>(iterations) * threads;
  return flops / best * 1e-9;
}

double measure_random_gather_gbps(int threads, int64_t rows, int64_t gathers) {
  // Sum 100 random rows into each output row: the pull-style access of a fused attention kernel,
  // with the same L2 software prefetch a few gathers ahead, but none of its arithmetic.
  constexpr int64_t kWidth = 64, kPerRow = 100, kAhead = 24;
  const size_t bytes = static_cast<size_t>(rows * kWidth) * sizeof(float);
  float* table = static_cast<float*>(::operator new[](bytes, std::align_val_t{size_t{2} << 20}));
  std::unique_ptr<float[], void (*)(float*)> guard(
      table, [](float* p) { ::operator delete[](p, std::align_val_t{size_t{2} << 20}); });
#ifdef MADV_HUGEPAGE
  madvise(table, bytes, MADV_HUGEPAGE);  // as edgeattn's own large tensors
#endif
  std::fill_n(table, rows * kWidth, 1.f);
  std::vector<int32_t> index(static_cast<size_t>(gathers));
  uint64_t x = 0x9E3779B97F4A7C15ull;  // xorshift64
  for (auto& i : index) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    i = static_cast<int32_t>(x % static_cast<uint64_t>(rows));
  }
  const int64_t out_rows = gathers / kPerRow;
  std::vector<float> out(static_cast<size_t>(out_rows * kWidth));
  tbb::task_arena arena(threads);
  double best = 1e30;
  for (int pass = 0; pass < 4; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<int64_t>(0, out_rows, 256), [&](const tbb::blocked_range<int64_t>& r) {
            for (int64_t o = r.begin(); o < r.end(); ++o) {
              float acc[kWidth] = {};
              for (int64_t k = o * kPerRow; k < (o + 1) * kPerRow; ++k) {
                if (k + kAhead < gathers) {
                  const float* p =
                      table + static_cast<int64_t>(index[static_cast<size_t>(k + kAhead)]) * kWidth;
                  for (int64_t c = 0; c < kWidth; c += 16) __builtin_prefetch(p + c, 0, 1);
                }
                const float* row = table + static_cast<int64_t>(index[static_cast<size_t>(k)]) * kWidth;
                for (int64_t c = 0; c < kWidth; ++c) acc[c] += row[c];
              }
              std::copy_n(acc, kWidth, out.data() + o * kWidth);
            }
          });
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0) best = std::min(best, s);  // pass 0 warms the arena and the page tables
  }
  volatile float sink = out[0];
  (void)sink;
  return static_cast<double>(out_rows * kPerRow) * kWidth * sizeof(float) / best / 1e9;
}

double measure_blas_gemm_gflops(int threads, int64_t n, int repetitions) {
  if (threads < 1)
    raise<InvalidArgument>("measure_blas_gemm_gflops: threads is ", threads, ", expected >= 1");
  if (n < 1) raise<InvalidArgument>("measure_blas_gemm_gflops: n is ", n, ", expected >= 1");
  if (repetitions < 1)
    raise<InvalidArgument>("measure_blas_gemm_gflops: repetitions is ", repetitions, ", expected >= 1");
  // Values in [0.5, 1.5): nothing denormal, nothing that grows.
  Tensor a({n, n}), b({n, n}), c({n, n});
  for (int64_t k = 0; k < a.numel(); ++k) {
    a.data()[k] = 0.5f + static_cast<float>((k * 7919) % 1000) * 1e-3f;
    b.data()[k] = 0.5f + static_cast<float>((k * 104729) % 1000) * 1e-3f;
  }
  tbb::task_arena arena(threads);
  double best = 1e300;
  for (int pass = 0; pass <= repetitions; ++pass) {  // pass 0 warms the arena, pages and packing
    const auto start = Clock::now();
    arena.execute([&] { kernels::matmul(a, false, b, false, c); });
    if (pass > 0) best = std::min(best, seconds_since(start));
  }
  volatile float sink = c.data()[0];
  (void)sink;
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best * 1e-9;
}

MachineLimits measure_machine_limits(int threads) {
  if (threads < 1) raise<InvalidArgument>("measure_machine_limits: threads is ", threads, ", expected >= 1");
  MachineLimits m;
  m.threads = threads;
  m.cpu_model = read_cpu_model();
  // 16 Mi floats = 64 MiB per array, 192 MiB in all: twice a 32 MiB L3 per array, 6x for the set.
  constexpr int64_t kElements = int64_t{16} << 20;
  m.stream_triad_gbps = measure_stream_triad_gbps(threads, kElements, 5);
  m.fma_peak_gflops = measure_fma_peak_gflops(threads);
  // 1M rows of 256 B (256 MiB, 8x the L3), 10M gathers: the GAT benchmark graph's shape.
  m.random_gather_gbps = measure_random_gather_gbps(threads, int64_t{1} << 20, 10'000'000);
  m.blas_core = kernels::blas_info().core;
  m.blas_gemm_gflops = measure_blas_gemm_gflops(threads);
  return m;
}

}  // namespace edgeattn::bench
