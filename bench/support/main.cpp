// The shared main of every edgeattn benchmark executable (instead of benchmark_main): limits the
// thread count for the whole run, measures the machine's limits on that many threads, records
// them in the benchmark context (console header and the JSON "context" object), then runs the
// benchmarks selected on the command line.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <exception>
#include <string>

#include "bench_context.hpp"
#include "edgeattn/core/parallel.hpp"
#include "machine_limits.hpp"

namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  namespace eb = edgeattn::bench;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    const int threads = eb::threads_from_env();
    edgeattn::ThreadLimit limit(threads);
    const eb::MachineLimits limits = eb::measure_machine_limits(threads);
    eb::set_machine_limits(limits);
    benchmark::AddCustomContext("edgeattn_threads", std::to_string(threads));
    benchmark::AddCustomContext("edgeattn_cpu_model", limits.cpu_model);
    benchmark::AddCustomContext("edgeattn_stream_triad_gbps", fixed(limits.stream_triad_gbps, 2));
    benchmark::AddCustomContext("edgeattn_fma_peak_gflops", fixed(limits.fma_peak_gflops, 1));
    benchmark::AddCustomContext("edgeattn_random_gather_gbps", fixed(limits.random_gather_gbps, 2));
    benchmark::AddCustomContext("edgeattn_blas_core", limits.blas_core);
    benchmark::AddCustomContext("edgeattn_blas_gemm_gflops", fixed(limits.blas_gemm_gflops, 1));
    benchmark::AddCustomContext("edgeattn_large_cases", eb::large_cases_enabled() ? "1" : "0");
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    benchmark::Shutdown();
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
