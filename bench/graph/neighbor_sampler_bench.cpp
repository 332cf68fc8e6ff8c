// What a sampled training step does before its first op (issue 23), on a products-like graph: the
// stochastic block model of bench/peers/sbm_input.py (250k nodes, 47 classes, mean degree 50,
// 100 features, 8 % of the nodes for training), 1024 seeds, fanouts 15,10,5 (3 layers):
//   sampler/sample_neighbors   graph/neighbor_sampler.hpp: the three blocks
//   sampler/prepare_blocks     nn::prepare_graph(block, add_self_loops) per block, as
//                              nn::Model::forward does every step (self-loops, row partition;
//                              the transpose waits for the backward, Graph::transpose_edges)
//   sampler/gather_inputs      gather_rows(features, input_nodes): [~237k, 100] floats
// each with the blocks' new sources numbered by first appearance (/ascending:0) or by ascending
// id (/ascending:1, what the training loops use: NeighborSamplerOptions::order), and
//   sampler/sample_neighbors_weighted   the same blocks sampled by edge weight
//                              (NeighborSamplerOptions::weights: seeded uniform weights in [0.5, 2),
//                              a tenth of them 0), /replace:0|1; ascending order. A weighted row
//                              reads all its in-edges' weights (mean in-degree 50) where a uniform
//                              one draws only its fanout.
// Each iteration takes the next batch of a fixed seed shuffle (so the caches see new nodes, as in
// training), with the batch index as the sampling seed. Counters: sampled_edges per batch (before
// self-loops) and edges_per_s; gather_inputs reports bytes_per_call and GBps against STREAM.
//
//   build/release/bench/graph_neighbor_sampler_bench --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <exception>
#include <random>
#include <vector>

#include "bench_context.hpp"
#include "edgeattn/data/synthetic.hpp"
#include "edgeattn/graph/neighbor_sampler.hpp"
#include "edgeattn/nn/prepare_graph.hpp"
#include "edgeattn/train/trainer.hpp"

namespace edgeattn::bench {
namespace {

constexpr int64_t kNodes = 250000;
constexpr int64_t kClasses = 47;
constexpr int64_t kBatch = 1024;

struct Input {
  data::Dataset ds;
  std::vector<int64_t> train;  // shuffled

  Input() {
    ds = data::sbm_dataset({.num_nodes = kNodes,
                            .num_classes = kClasses,
                            .expected_in_degree = 40.0,
                            .expected_out_degree = 10.0,
                            .feature_dim = 100,
                            .signal = 0.3f,
                            .noise = 1.f,
                            .train_per_class = (kNodes * 8 / 100 + kClasses / 2) / kClasses,
                            .num_val = kNodes * 2 / 100,
                            .num_test = -1,
                            .shuffle_nodes = true,
                            .seed = 1});
    train = train::shuffled(ds.split(ds.default_split).train, 7);  // as fit_minibatch orders an epoch
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<float> u(0.5f, 2.f);
    weights.resize(static_cast<size_t>(ds.graph.num_edges()));
    for (float& w : weights) w = rng() % 10 == 0 ? 0.f : u(rng);
  }
  std::vector<float> weights;  // [num_edges], for sampler/sample_neighbors_weighted
  std::span<const int64_t> batch(int64_t b) const {
    const int64_t batches = static_cast<int64_t>(train.size()) / kBatch;
    return std::span<const int64_t>(train).subspan(static_cast<size_t>((b % batches) * kBatch), kBatch);
  }
  SampledSubgraph sample(int64_t b, SourceOrder order, bool weighted = false, bool replace = false) const {
    return sample_neighbors(
        ds.graph, batch(b),
        {.fanouts = {15, 10, 5},
         .replace = replace,
         .seed = static_cast<uint64_t>(b),
         .order = order,
         .weights = weighted ? std::span<const float>(weights) : std::span<const float>()});
  }
};

const Input& input() {
  static const Input in;
  return in;
}

int64_t sampled_edges(const SampledSubgraph& s) {
  int64_t e = 0;
  for (const Block& b : s.blocks) e += b.num_edges();
  return e;
}

template <class Body>
void run(benchmark::State& state, Body&& body) {
  try {
    const Input& in = input();
    int64_t b = 0, edges = 0;
    const LoopClock clock;
    for (auto _ : state) {
      edges += body(in, b++);
      benchmark::ClobberMemory();
    }
    const double seconds = clock.seconds();
    state.counters["sampled_edges"] = static_cast<double>(edges) / static_cast<double>(state.iterations());
    state.counters["edges_per_s"] = benchmark::Counter(static_cast<double>(edges) / seconds);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The benchmark's argument: 0 numbers each block's new sources by appearance, 1 ascending.
SourceOrder order_of(const benchmark::State& state) {
  return state.range(0) ? SourceOrder::ascending : SourceOrder::appearance;
}

// kBatches batches sampled outside the timed region, reused in turn; false (the case skipped with
// the error) when sampling throws.
constexpr int64_t kBatches = 20;
bool presample(benchmark::State& state, std::vector<SampledSubgraph>& batches) {
  try {
    for (int64_t b = 0; b < kBatches; ++b) batches.push_back(input().sample(b, order_of(state)));
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

void register_all() {
  benchmark::RegisterBenchmark(
      "sampler/sample_neighbors",
      [](benchmark::State& s) {
        const SourceOrder order = order_of(s);
        run(s, [&](const Input& in, int64_t b) { return sampled_edges(in.sample(b, order)); });
      })
      ->ArgName("ascending")
      ->DenseRange(0, 1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("sampler/sample_neighbors_weighted",
                               [](benchmark::State& s) {
                                 const bool replace = s.range(0) != 0;
                                 run(s, [&](const Input& in, int64_t b) {
                                   return sampled_edges(in.sample(b, SourceOrder::ascending, true, replace));
                                 });
                               })
      ->ArgName("replace")
      ->DenseRange(0, 1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(
      "sampler/prepare_blocks",
      [](benchmark::State& s) {
        std::vector<SampledSubgraph> batches;
        if (!presample(s, batches)) return;
        run(s, [&](const Input&, int64_t b) {
          const SampledSubgraph& sub = batches[static_cast<size_t>(b % kBatches)];
          for (const Block& blk : sub.blocks)
            benchmark::DoNotOptimize(nn::prepare_graph(blk.graph, true, nn::InputOrder::drop).num_edges());
          return sampled_edges(sub);
        });
      })
      ->ArgName("ascending")
      ->DenseRange(0, 1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(
      "sampler/gather_inputs",
      [](benchmark::State& s) {
        std::vector<SampledSubgraph> batches;
        if (!presample(s, batches)) return;
        const ConstView x = input().ds.features.dense().view();
        int64_t bytes = 0;
        const LoopClock clock;
        int64_t b = 0;
        for (auto _ : s) {
          const SampledSubgraph& sub = batches[static_cast<size_t>(b++ % kBatches)];
          const Tensor rows = gather_rows(x, sub.input_nodes);
          bytes += 2 * rows.numel() * static_cast<int64_t>(sizeof(float));  // read + write
          benchmark::DoNotOptimize(rows.data());
        }
        set_traffic_counters(
            s, 0, static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(1, s.iterations())),
            clock.seconds());
      })
      ->ArgName("ascending")
      ->DenseRange(0, 1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

[[maybe_unused]] const bool registered = (register_all(), true);

}  // namespace
}  // namespace edgeattn::bench
