// One training step of the paper's 2-layer GAT on a Cora-sized synthetic graph, through the
// autograd tape (autograd/ops.hpp): the per-epoch cost the target is about (>= 20x faster
// than PyG's ~96 ms per Cora epoch on 2 threads).
//
//   graph     2,708 nodes, uniform random edges + one self-loop per node (~13.3k edges, Cora's size)
//   features  1,433 binary features at 1.3% density (Cora's), sparse (CSR)
//   model     dropout 0.6 -> sparse linear 1433 -> 8x8 -> additive attention (8 heads, dropout 0.6)
//             -> bias -> ELU -> dropout 0.6 -> linear 64 -> 7 -> attention (1 head) -> bias
//             -> cross-entropy over 140 training nodes
//   modes     fwd (training-mode forward only), fwd_bwd (forward + backward = one epoch without
//             the optimiser step)
//
// Names: gat_step/<mode>. The reported time is wall time per step (UseRealTime).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bench_context.hpp"
#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/graph/generators.hpp"

namespace edgeattn::bench {
namespace {

using namespace edgeattn::autograd;  // NOLINT(google-build-using-namespace): a .cpp, not a header

constexpr int64_t kNodes = 2708, kFeatures = 1433, kHeads = 8, kHidden = 8, kClasses = 7;

float uniform(uint64_t seed, int64_t i, int64_t j) { return edge_uniform(seed, i, j, 0x6265); }

Tensor glorot(Shape shape, int64_t fan_in, int64_t fan_out, uint64_t seed) {
  Tensor t(shape);
  const float a = std::sqrt(6.f / static_cast<float>(fan_in + fan_out));
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = a * (2.f * uniform(seed, i, 0) - 1.f);
  return t;
}

struct Setup {
  Graph graph;
  CsrMatrix features;
  std::vector<int32_t> labels;
  std::vector<int64_t> train;
  std::vector<Parameter> params;

  Setup() {
    // 10,556 directed edges (Cora's count) + 2,708 self-loops.
    graph = erdos_renyi_graph(kNodes, 10556, 1, {.self_loops = SelfLoops::add});
    std::vector<int64_t> r, c;
    for (int64_t i = 0; i < kNodes; ++i)
      for (int64_t j = 0; j < kFeatures; ++j)
        if (uniform(2, i, j) < 0.0127f) r.push_back(i), c.push_back(j);
    features = CsrMatrix::from_triplets(kNodes, kFeatures, r, c, std::vector<float>(r.size(), 1.f));
    for (int64_t i = 0; i < kNodes; ++i) labels.push_back(static_cast<int32_t>(i % kClasses));
    for (int64_t i = 0; i < 140; ++i) train.push_back(i);
    params = {{"conv1.lin.weight", glorot({kHeads * kHidden, kFeatures}, kFeatures, kHeads * kHidden, 3), {}},
              {"conv1.att_src", glorot({kHeads, kHidden}, kHidden, 1, 4), {}},
              {"conv1.att_dst", glorot({kHeads, kHidden}, kHidden, 1, 5), {}},
              {"conv1.bias", Tensor({kHeads * kHidden}), {}},
              {"conv2.lin.weight", glorot({kClasses, kHeads * kHidden}, kHeads * kHidden, kClasses, 6), {}},
              {"conv2.att_src", glorot({1, kClasses}, kClasses, 1, 7), {}},
              {"conv2.att_dst", glorot({1, kClasses}, kClasses, 1, 8), {}},
              {"conv2.bias", Tensor({kClasses}), {}}};
    (void)graph.transpose();  // cached on the graph, as after a training loop's first step
    (void)graph.partition();
  }
};

Var gat_conv(Tape& t, const Graph& g, Var h, Parameter& att_src, Parameter& att_dst, int64_t heads,
             int64_t out, uint64_t seed) {
  const Var h3 = reshape(t, h, {g.num_src(), heads, out});
  return graph_attention(t, g,
                         {.value = h3,
                          .score_dst = head_scores(t, h3, t.parameter(att_dst)),
                          .score_src = head_scores(t, h3, t.parameter(att_src))},
                         {.score = Score::additive, .negative_slope = 0.2f, .dropout = 0.6f, .seed = seed});
}

Var step(Tape& t, Setup& s, uint64_t seed) {
  auto& p = s.params;
  Var h = linear(t, dropout(t, s.features, 0.6f, seed + 1), t.parameter(p[0]));
  h = gat_conv(t, s.graph, h, p[1], p[2], kHeads, kHidden, seed + 2);
  h = elu(t, add_bias(t, reshape(t, h, {kNodes, kHeads * kHidden}), t.parameter(p[3])));
  h = linear(t, dropout(t, h, 0.6f, seed + 3), t.parameter(p[4]));
  h = gat_conv(t, s.graph, h, p[5], p[6], 1, kClasses, seed + 4);
  const Var logits = add_bias(t, mean_heads(t, h), t.parameter(p[7]));
  return cross_entropy(t, logits, s.labels, s.train);
}

Setup& setup() {
  static Setup s;
  return s;
}

void BM_GatStep(benchmark::State& state, bool backward) {
  Setup& s = setup();
  Tape tape;
  uint64_t seed = 0;
  for (auto _ : state) {
    tape.clear();
    const Var loss = step(tape, s, seed += 16);
    if (backward) tape.backward(loss);
    benchmark::DoNotOptimize(tape.value(loss).data()[0]);
  }
  state.counters["edges"] = static_cast<double>(s.graph.num_edges());
  state.counters["feature_nnz"] = static_cast<double>(s.features.nnz());
}

BENCHMARK_CAPTURE(BM_GatStep, fwd, false)->Name("gat_step/fwd")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_GatStep, fwd_bwd, true)
    ->Name("gat_step/fwd_bwd")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace edgeattn::bench
