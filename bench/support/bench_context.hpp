// What every edgeattn benchmark shares: the run's thread count, the machine limits measured by the
// shared main (bench/support/main.cpp) before any benchmark runs, counters that put a figure next
// to those limits, and seeded input tensors.
//
// Environment (read by the shared main and by benchmark registration):
//   EDGEATTN_BENCH_THREADS  worker threads for the whole run, default 2 (a ThreadLimit in main)
//   EDGEATTN_BENCH_LARGE    "1" registers the cases that need minutes and ~16 GiB of memory
//
// Example (inside a benchmark function):
//   edgeattn::bench::LoopClock clock;
//   for (auto _ : state) run_kernel();
//   edgeattn::bench::set_traffic_counters(state, num_edges, bytes_per_call, clock.seconds());
//   // -> edges_per_s, bytes_per_call, GBps and stream_fraction in the console and JSON output
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "edgeattn/core/tensor.hpp"
#include "machine_limits.hpp"

namespace edgeattn::bench {

/// The limits the shared main measured; all zero if it did not run (then no *_fraction counter
/// is reported).
const MachineLimits& machine_limits();
void set_machine_limits(const MachineLimits& limits);

/// EDGEATTN_BENCH_THREADS, default 2. Throws InvalidArgument naming the variable when it is not
/// an integer in [1, 1024].
int threads_from_env();

/// True when EDGEATTN_BENCH_LARGE is "1".
bool large_cases_enabled();

/// Wall time of a benchmark's timed loop, for counters that are ratios rather than rates (the
/// console appends "/s" to every rate counter). Start it right before `for (auto _ : state)`.
class LoopClock {
 public:
  LoopClock() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// Counters of a memory-bound kernel that processes `edges` edges and moves `bytes` bytes per
/// call (per benchmark iteration); `seconds` is the LoopClock time of the whole timed loop.
///   edges           edges per call
///   edges_per_s     edges * iterations / wall seconds (a rate: register with UseRealTime())
///   bytes_per_call  the traffic model's bytes per call
///   GBps            1e-9 * bytes * iterations / seconds
///   stream_fraction GBps / measured STREAM triad (can exceed 1 when the working set is cached)
void set_traffic_counters(benchmark::State& state, double edges, double bytes, double seconds);

/// Counters of a compute-bound kernel doing `flops` useful flops per call:
///   GFLOPps         1e-9 * flops * iterations / seconds
///   fma_fraction    GFLOPps / measured FMA peak
void set_flop_counters(benchmark::State& state, double flops, double seconds);

/// Tensor of `shape` with values uniform in [lo, hi), a pure function of (seed, index), filled in
/// parallel (first touch by the threads that will read it).
Tensor random_tensor(Shape shape, uint64_t seed, float lo = -1.f, float hi = 1.f);

}  // namespace edgeattn::bench
