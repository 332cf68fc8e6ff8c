#include "bench_context.hpp"

#include <cstdlib>
#include <string>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn::bench {
namespace {

MachineLimits& limits_storage() {
  static MachineLimits limits;
  return limits;
}

// SplitMix64 finaliser (Steele, Lea, Flood, OOPSLA 2014): a cheap, well-mixed hash of the index,
// enough for benchmark inputs whose only job is to be reproducible and not degenerate.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

const MachineLimits& machine_limits() { return limits_storage(); }

void set_machine_limits(const MachineLimits& limits) { limits_storage() = limits; }

int threads_from_env() {
  const char* text = std::getenv("EDGEATTN_BENCH_THREADS");
  if (text == nullptr || *text == '\0') return 2;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > 1024)
    raise<InvalidArgument>("EDGEATTN_BENCH_THREADS is \"", text, "\", expected an integer in [1, 1024]");
  return static_cast<int>(value);
}

bool large_cases_enabled() {
  const char* text = std::getenv("EDGEATTN_BENCH_LARGE");
  return text != nullptr && std::string(text) == "1";
}

void set_traffic_counters(benchmark::State& state, double edges, double bytes, double seconds) {
  using benchmark::Counter;
  const double calls_per_s = seconds > 0.0 ? static_cast<double>(state.iterations()) / seconds : 0.0;
  state.counters["edges"] = Counter(edges);
  state.counters["edges_per_s"] = Counter(edges, Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_call"] = Counter(bytes);
  const double gbps = bytes * calls_per_s * 1e-9;
  state.counters["GBps"] = Counter(gbps);
  const double stream = machine_limits().stream_triad_gbps;
  if (stream > 0.0) state.counters["stream_fraction"] = Counter(gbps / stream);
}

void set_flop_counters(benchmark::State& state, double flops, double seconds) {
  using benchmark::Counter;
  const double calls_per_s = seconds > 0.0 ? static_cast<double>(state.iterations()) / seconds : 0.0;
  const double gflops = flops * calls_per_s * 1e-9;
  state.counters["GFLOPps"] = Counter(gflops);
  const double peak = machine_limits().fma_peak_gflops;
  if (peak > 0.0) state.counters["fma_fraction"] = Counter(gflops / peak);
}

Tensor random_tensor(Shape shape, uint64_t seed, float lo, float hi) {
  Tensor t(shape);
  float* data = t.data();
  const uint64_t key = mix(seed);
  const float width = hi - lo;
  parallel_for(0, t.numel(), int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t bits = mix(key ^ static_cast<uint64_t>(i));
      data[i] = lo + width * (static_cast<float>(bits >> 40) * (1.0f / 16777216.0f));  // 24 bits
    }
  });
  return t;
}

}  // namespace edgeattn::bench
