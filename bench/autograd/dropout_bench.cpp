// Dense feature dropout at the sizes of a sampled mini-batch step (issue 23): the input features
// of the first layer's block (~240k sampled nodes x 100 features, dropped into the fused
// dropout + linear) and a hidden layer's output (150k x 64, the fused ELU + dropout). The mask is
// drawn in the forward and again in the backward, so each case's time is the mask twice plus its
// arithmetic.
//
//   dropout/fwd_bwd          y = dropout(x), then dx from dy          x [240000, 100]
//   dropout_linear/fwd_bwd   y = dropout(x) W^T, then dW (x constant)  x [240000, 100], W [64, 100]
//   elu_dropout/fwd_bwd      y = dropout(elu(x)), then dx              x [150000, 64]
//
// Wall time per step (UseRealTime), including the loss that seeds a dense dy (sum(y * weights):
// two element-wise passes more). Counters: GBps / stream_fraction for the element-wise cases
// (x read and y written in the forward, dy read and dx written in the backward: 16 bytes per
// element), GFLOPps / fma_fraction for dropout_linear (the two products, 4 * N * in * out flops).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "bench_context.hpp"
#include "edgeattn/autograd/ops.hpp"

namespace edgeattn::bench {
namespace {

using namespace edgeattn::autograd;  // NOLINT(google-build-using-namespace): a .cpp, not a header

constexpr int64_t kInputRows = 240000, kFeatures = 100, kOut = 64, kHiddenRows = 150000;
constexpr float kP = 0.2f;

// The sum of y weighted by a fixed tensor, so the backward has a dense dy.
Var weighted_loss(Tape& t, Var y, const Tensor& weights) {
  return sum(t, mul(t, y, t.constant_ref(weights)));
}

void BM_Dropout(benchmark::State& state) {
  Parameter x{"x", random_tensor({kInputRows, kFeatures}, 1), {}};
  const Tensor weights = random_tensor({kInputRows, kFeatures}, 2);
  Tape tape;
  uint64_t seed = 0;
  LoopClock clock;
  for (auto _ : state) {
    tape.clear();
    x.grad.fill(0.f);
    tape.backward(weighted_loss(tape, dropout(tape, tape.parameter(x), kP, ++seed), weights));
    benchmark::DoNotOptimize(x.grad.data());
  }
  set_traffic_counters(state, 0, 16.0 * static_cast<double>(kInputRows * kFeatures), clock.seconds());
}

void BM_DropoutLinear(benchmark::State& state) {
  const Tensor x = random_tensor({kInputRows, kFeatures}, 3);
  Parameter w{"w", random_tensor({kOut, kFeatures}, 4), {}};
  const Tensor weights = random_tensor({kInputRows, kOut}, 5);
  Tape tape;
  uint64_t seed = 0;
  LoopClock clock;
  for (auto _ : state) {
    tape.clear();
    w.grad.fill(0.f);
    const Var y = dropout_linear(tape, tape.constant_ref(x), kP, ++seed, tape.parameter(w));
    tape.backward(weighted_loss(tape, y, weights));
    benchmark::DoNotOptimize(w.grad.data());
  }
  set_flop_counters(state, 4.0 * static_cast<double>(kInputRows * kFeatures * kOut), clock.seconds());
}

void BM_EluDropout(benchmark::State& state) {
  Parameter x{"x", random_tensor({kHiddenRows, kOut}, 6), {}};
  const Tensor weights = random_tensor({kHiddenRows, kOut}, 7);
  Tape tape;
  uint64_t seed = 0;
  LoopClock clock;
  for (auto _ : state) {
    tape.clear();
    x.grad.fill(0.f);
    tape.backward(weighted_loss(tape, elu_dropout(tape, tape.parameter(x), 1.f, kP, ++seed), weights));
    benchmark::DoNotOptimize(x.grad.data());
  }
  set_traffic_counters(state, 0, 16.0 * static_cast<double>(kHiddenRows * kOut), clock.seconds());
}

BENCHMARK(BM_Dropout)->Name("dropout/fwd_bwd")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DropoutLinear)->Name("dropout_linear/fwd_bwd")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EluDropout)->Name("elu_dropout/fwd_bwd")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace edgeattn::bench
