// Evaluation of a deep model on a large graph: the eval-mode forward on one tape (every layer's
// tensors and their backward state held to the end) against layer-wise inference
// (nn::Model::inference: one tape per layer, dropped once its output is taken). Both give the
// same logits bit for bit; the counters say what each needs.
//
//   graph     R-MAT, 2^17 = 131,072 nodes, 1,310,720 edges + one self-loop per node
//   features  128 dense float32 columns
//   models    gat and transformer, 3 layers x 4 heads x 64 (hidden width 256), 16 classes
//
// Names: model_inference/<kind>/<forward|inference>. Wall time per evaluation (UseRealTime).
// Counters: peak_MB, the high-water mark of tensor storage in use during the evaluation beyond
// what was in use before it (core/tensor.hpp: TensorCacheStats::peak_in_use_bytes), and
// layer_MB, the size of one hidden layer's output [N, 256], for scale.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/graph/generators.hpp"
#include "edgeattn/nn/model.hpp"

namespace edgeattn::bench {
namespace {

constexpr int64_t kNodes = int64_t{1} << 17, kEdges = 10 * kNodes, kFeatures = 128, kClasses = 16;

const Graph& raw_graph() {
  static const Graph g = rmat_graph(kNodes, kEdges, 3);
  return g;
}

const data::Features& features() {
  static const data::Features x = [] {
    Tensor t = Tensor::uninitialized({kNodes, kFeatures});
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data()[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.f;
    return data::Features(std::move(t));
  }();
  return x;
}

void BM_Inference(benchmark::State& state, nn::ModelKind kind, bool layer_wise) {
  nn::Model model({.kind = kind,
                   .in_channels = kFeatures,
                   .hidden = 64,
                   .heads = 4,
                   .num_classes = kClasses,
                   .layers = 3,
                   .seed = 1});
  const Graph g = model.prepare_graph(raw_graph());
  const data::Features& x = features();
  double peak = 0;
  for (auto _ : state) {
    reset_tensor_peak();
    const size_t before = tensor_cache_stats().in_use_bytes;
    if (layer_wise) {
      const Tensor logits = model.inference(g, x);
      benchmark::DoNotOptimize(logits.data());
    } else {
      autograd::Tape tape;
      tape.training = false;
      const autograd::Var logits = model.forward(tape, g, x, 0);
      benchmark::DoNotOptimize(tape.value(logits).data());
    }
    peak = std::max(peak, static_cast<double>(tensor_cache_stats().peak_in_use_bytes - before));
  }
  state.counters["peak_MB"] = peak / 1e6;
  state.counters["layer_MB"] = static_cast<double>(kNodes * 256 * sizeof(float)) / 1e6;
  state.counters["edges"] = static_cast<double>(g.num_edges());
}

void register_all() {
  for (nn::ModelKind kind : {nn::ModelKind::gat, nn::ModelKind::transformer})
    for (bool layer_wise : {false, true})
      benchmark::RegisterBenchmark(
          (std::string("model_inference/") + nn::to_string(kind) + (layer_wise ? "/inference" : "/forward"))
              .c_str(),
          BM_Inference, kind, layer_wise)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
}

const bool registered = (register_all(), true);

}  // namespace
}  // namespace edgeattn::bench
