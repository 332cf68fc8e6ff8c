// Generation speed of the synthetic graphs, in generated edges per second, at about 10M edges on
// 1M nodes:
//   generators/erdos_renyi_graph   uniform G(n, m) (graph/generators.hpp), duplicates merged
//   generators/rmat_graph          R-MAT with Graph500's a = .57, b = .19, c = .19 (d = .05)
//   generators/sbm_dataset/F:0     stochastic block model (data/synthetic.hpp), 10 classes,
//                                  expected degree 8 in-class + 2 out-of-class: ~10M directed
//                                  edges; graph, labels and split only
//   generators/sbm_dataset/F:16    the same with 16 Gaussian features per node
// Each counts the edges of the Graph it returns (after merging), in the console's edges_per_s.
// Every case includes building the CSR Graph; one call takes a second or more, so a run is one
// iteration per case.
#include <benchmark/benchmark.h>

#include <exception>
#include <string>

#include "bench_context.hpp"
#include "edgeattn/data/synthetic.hpp"
#include "edgeattn/graph/generators.hpp"

namespace edgeattn::bench {
namespace {

constexpr int64_t kNodes = 1000000;
constexpr int64_t kEdges = 10000000;
constexpr uint64_t kSeed = 20240601;

template <class Generate>
void run(benchmark::State& state, Generate&& generate) {
  try {
    int64_t edges = 0;
    const LoopClock clock;
    for (auto _ : state) {
      edges = generate();
      benchmark::ClobberMemory();
    }
    const double seconds = clock.seconds();
    state.counters["edges"] = static_cast<double>(edges);
    state.counters["edges_per_s"] =
        benchmark::Counter(static_cast<double>(edges) * static_cast<double>(state.iterations()) / seconds);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_all() {
  benchmark::RegisterBenchmark("generators/erdos_renyi_graph",
                               [](benchmark::State& s) {
                                 run(s, [] { return erdos_renyi_graph(kNodes, kEdges, kSeed).num_edges(); });
                               })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("generators/rmat_graph",
                               [](benchmark::State& s) {
                                 run(s, [] {
                                   return rmat_graph(kNodes, kEdges, kSeed,
                                                     RmatParams{.a = 0.57, .b = 0.19, .c = 0.19, .d = 0.05})
                                       .num_edges();
                                 });
                               })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (int64_t f : {0, 16}) {
    const std::string name = "generators/sbm_dataset/F:" + std::to_string(f);
    benchmark::RegisterBenchmark(name.c_str(),
                                 [f](benchmark::State& s) {
                                   run(s, [f] {
                                     const data::SbmConfig cfg{.num_nodes = kNodes,
                                                               .num_classes = 10,
                                                               .expected_in_degree = 8,
                                                               .expected_out_degree = 2,
                                                               .feature_dim = f,
                                                               .seed = kSeed};
                                     return data::sbm_dataset(cfg).num_edges();
                                   });
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

[[maybe_unused]] const bool registered = (register_all(), true);

}  // namespace
}  // namespace edgeattn::bench
