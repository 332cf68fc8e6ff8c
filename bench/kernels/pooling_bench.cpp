// Graph readouts (kernels/pooling.hpp): the parallel segment pooling against its serial reference,
// forward and backward, on a batch shaped like a graph-classification mini-batch scaled up:
// 4096 graphs of 1..64 nodes (~130k nodes), 128 features. The kernel streams x once (forward) or
// writes dx once (backward), so the figure to read is GBps against STREAM (stream_fraction).
//
// Names: pooling/<sum|mean|max>/<forward|backward>/<parallel|reference>
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "bench_context.hpp"
#include "edgeattn/kernels/pooling.hpp"
#include "kernels/reference/reference_pooling.hpp"

namespace edgeattn::bench {
namespace {

constexpr int64_t kGraphs = 4096, kFeatures = 128;

const std::vector<int64_t>& batch_ptr() {
  static const std::vector<int64_t> ptr = [] {
    std::mt19937 rng(1);
    std::vector<int64_t> p = {0};
    for (int64_t g = 0; g < kGraphs; ++g) p.push_back(p.back() + 1 + static_cast<int64_t>(rng() % 64));
    return p;
  }();
  return ptr;
}

void run(benchmark::State& state, Pooling kind, bool backward, bool reference) {
  const std::vector<int64_t>& ptr = batch_ptr();
  const int64_t n = ptr.back();
  const Tensor x = random_tensor({n, kFeatures}, 2);
  const Tensor dy = random_tensor({kGraphs, kFeatures}, 3);
  const kernels::PoolResult fwd = kernels::segment_pool(x, ptr, kind);
  LoopClock clock;
  for (auto _ : state) {
    if (backward) {
      Tensor dx = reference ? kernels::reference::segment_pool_backward(ptr, kind, dy, fwd.argmax, n, x)
                            : kernels::segment_pool_backward(ptr, kind, dy, fwd.argmax, n, x);
      benchmark::DoNotOptimize(dx.data());
    } else {
      kernels::PoolResult r =
          reference ? kernels::reference::segment_pool(x, ptr, kind) : kernels::segment_pool(x, ptr, kind);
      benchmark::DoNotOptimize(r.out.data());
    }
  }
  // Forward reads x and writes out; backward reads dy and writes dx (and the zero fill of dx).
  const double x_bytes = 4.0 * static_cast<double>(n * kFeatures), out_bytes = 4.0 * kGraphs * kFeatures;
  const double bytes = backward ? out_bytes + 2 * x_bytes : x_bytes + out_bytes;
  set_traffic_counters(state, static_cast<double>(n), bytes, clock.seconds());
  state.counters["nodes"] = static_cast<double>(n);
}

void register_all() {
  for (const Pooling kind : {Pooling::sum, Pooling::mean, Pooling::max})
    for (const bool backward : {false, true})
      for (const bool reference : {false, true}) {
        const std::string name = std::string("pooling/") + to_string(kind) +
                                 (backward ? "/backward" : "/forward") +
                                 (reference ? "/reference" : "/parallel");
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=](benchmark::State& s) { run(s, kind, backward, reference); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
}

[[maybe_unused]] const bool registered = (register_all(), true);

}  // namespace
}  // namespace edgeattn::bench
