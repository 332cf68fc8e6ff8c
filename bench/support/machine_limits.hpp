// What the machine can do at best, measured at startup, so every benchmark figure can be read as
// a fraction of a limit rather than as a bare number (STYLE.md, practice 11).
//
//   stream_triad_gbps  a[i] = b[i] + s * c[i] over three float arrays of 64 MiB each (well beyond
//                      the last-level cache), parallel with oneTBB, best of 5 repetitions. Bytes
//                      counted the STREAM way (McCalpin, "Memory Bandwidth and Machine Balance",
//                      1995): 3 arrays x 4 bytes x n per pass, no write-allocate traffic.
//   fma_peak_gflops    every thread runs independent chains of vector fused multiply-adds
//                      (__m512 when AVX-512F is available, else __m256), enough chains to cover the
//                      FMA latency; 2 flops per lane per FMA, summed over threads.
//   blas_gemm_gflops   kernels::matmul of two 1024 x 1024 float matrices (tiles of
//                      single-threaded OpenBLAS sgemm, as the dense path and wide products run),
//                      best of 5; with blas_core, the kernel set OpenBLAS chose for this CPU. Far
//                      below the FMA peak (under ~30%), OpenBLAS has likely taken an older core's
//                      kernels: set OPENBLAS_CORETYPE (include/edgeattn/kernels/matmul.hpp).
//
// Applications (the benchmark main, `edgeattn bench`) call this once; it takes about half a
// second and allocates 192 MiB for the duration of the call.
//
// Example:
//   edgeattn::bench::MachineLimits m = edgeattn::bench::measure_machine_limits(2);
//   double fraction = achieved_gbps / m.stream_triad_gbps;
#pragma once

#include <cstdint>
#include <string>

namespace edgeattn::bench {

struct MachineLimits {
  double stream_triad_gbps = 0.0;  ///< best STREAM triad bandwidth, 1e9 bytes per second
  double fma_peak_gflops = 0.0;    ///< float32 FMA throughput, 1e9 flops per second, all threads
  /// Random gather of 256-byte rows from a 256 MiB table (the access of attention over a random
  /// graph: one source row per edge), with software prefetch; 1e9 bytes of rows per second.
  double random_gather_gbps = 0.0;
  std::string blas_core;          ///< OpenBLAS's kernel set (kernels::blas_info().core)
  double blas_gemm_gflops = 0.0;  ///< kernels::matmul at 1024^3 (OpenBLAS tiles), 1e9 flops per second
  int threads = 0;                ///< threads the measurements ran on
  std::string cpu_model;          ///< "model name" from /proc/cpuinfo, "unknown" if absent
};

/// Measures every limit above on `threads` threads (a oneTBB arena of that size for the triad, the
/// gather and the GEMM, one std::thread per FMA stream, started together). Throws InvalidArgument
/// when threads < 1. Runs inside any active ThreadLimit: a limit below `threads` caps the arenas.
MachineLimits measure_machine_limits(int threads);

/// Just the random-row gather: `rows` rows of 64 floats, `gathers` random row reads.
double measure_random_gather_gbps(int threads, int64_t rows, int64_t gathers);

/// Just the triad, for callers that want another array size: `elements` floats per array.
double measure_stream_triad_gbps(int threads, int64_t elements, int repetitions = 5);

/// Just the BLAS rate: kernels::matmul of two n x n matrices in an arena of `threads`, the best
/// of `repetitions` after one warm-up.
double measure_blas_gemm_gflops(int threads, int64_t n = 1024, int repetitions = 5);

/// Just the FMA peak; each thread runs for about `seconds` per repetition.
double measure_fma_peak_gflops(int threads, double seconds = 0.05, int repetitions = 5);

}  // namespace edgeattn::bench
