// Node-classification models from nn/model.hpp on a Cora-sized synthetic input: one training step
// (forward + cross-entropy + backward, no optimiser) and one evaluation forward, for every model
// kind. The GAT row is the per-epoch target (PyG: ~96 ms per Cora epoch on 2 threads).
//
//   graph     2,708 nodes, 10,556 uniform random edges + one self-loop per node (Cora's sizes)
//   features  1,433 binary features at 1.27% density, sparse (CSR)
//   models    gat: the GAT paper's Cora model (8 heads x 8 hidden, dropout 0.6); gatv2 and
//             transformer with the same sizes; graph_transformer: 2 blocks of width 64, 8 heads
//
// Names: gat_model/<kind>/<train|eval>. Wall time per step (UseRealTime). Counters fwd_ms and
// bwd_ms split a training step into its forward (incl. loss) and backward halves.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/graph/generators.hpp"
#include "edgeattn/nn/model.hpp"

namespace edgeattn::bench {
namespace {

constexpr int64_t kNodes = 2708, kFeatures = 1433, kClasses = 7;

struct Input {
  Graph raw;
  data::Features features;
  std::vector<int32_t> labels;
  std::vector<int64_t> train;

  Input() {
    raw = erdos_renyi_graph(kNodes, 10556, 1);
    std::vector<int64_t> r, c;
    for (int64_t i = 0; i < kNodes; ++i)
      for (int64_t j = 0; j < kFeatures; ++j)
        if (edge_uniform(2, i, j, 0x6265) < 0.0127f) r.push_back(i), c.push_back(j);
    features =
        data::Features(CsrMatrix::from_triplets(kNodes, kFeatures, r, c, std::vector<float>(r.size(), 1.f)));
    for (int64_t i = 0; i < kNodes; ++i) labels.push_back(static_cast<int32_t>(i % kClasses));
    for (int64_t i = 0; i < 140; ++i) train.push_back(i);
  }
};

const Input& input() {
  static const Input in;
  return in;
}

void BM_Model(benchmark::State& state, nn::ModelKind kind, bool train) {
  const Input& in = input();
  nn::ModelConfig cfg{.kind = kind, .in_channels = kFeatures, .num_classes = kClasses, .seed = 1};
  if (kind == nn::ModelKind::graph_transformer) cfg.dropout = cfg.attention_dropout = 0.1f;
  nn::Model model(cfg);
  const Graph g = model.prepare_graph(in.raw);
  const data::Features x = model.prepare_features(in.raw, in.features);
  autograd::Tape tape;
  tape.training = train;
  uint64_t step = 0;
  double fwd = 0, bwd = 0;
  using clock = std::chrono::steady_clock;
  for (auto _ : state) {
    tape.clear();
    const auto t0 = clock::now();
    const autograd::Var logits = model.forward(tape, g, x, ++step);
    if (train) {
      const autograd::Var loss = autograd::cross_entropy(tape, logits, in.labels, in.train);
      const auto t1 = clock::now();
      for (auto* p : model.parameters()) p->zero_grad();
      tape.backward(loss);
      const auto t2 = clock::now();
      fwd += std::chrono::duration<double, std::milli>(t1 - t0).count();
      bwd += std::chrono::duration<double, std::milli>(t2 - t1).count();
    }
    benchmark::DoNotOptimize(tape.value(logits).data());
  }
  if (train && state.iterations() > 0) {
    state.counters["fwd_ms"] = fwd / static_cast<double>(state.iterations());
    state.counters["bwd_ms"] = bwd / static_cast<double>(state.iterations());
  }
  state.counters["edges"] = static_cast<double>(g.num_edges());
  state.counters["params"] = static_cast<double>(model.num_parameters());
}

void register_all() {
  for (nn::ModelKind kind : {nn::ModelKind::gat, nn::ModelKind::gatv2, nn::ModelKind::transformer,
                             nn::ModelKind::graph_transformer})
    for (bool train : {true, false})
      benchmark::RegisterBenchmark(
          (std::string("gat_model/") + nn::to_string(kind) + (train ? "/train" : "/eval")).c_str(), BM_Model,
          kind, train)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
}

const bool registered = (register_all(), true);

}  // namespace
}  // namespace edgeattn::bench
