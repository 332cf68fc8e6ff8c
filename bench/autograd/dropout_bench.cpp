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
// and the first of them over a batch's 240000 input rows (ascending) of a [250000, 100] feature
// matrix, as a sampled step runs it:
//
//   dropout_linear_gathered/fwd_bwd  the rows gathered into a copy (gather_rows), then the op
//   dropout_linear_selected/fwd_bwd  the op's row selection: the rows read in place
//
// and sparse input features at Cora's shape (2708 x 1433 with 49,216 entries, W [64, 1433],
// dropout 0.6, the GAT paper's first layer), the fused op against the unfused pair it replaces:
//
//   dropout_linear_sparse/fwd_bwd   dropout_linear(x, W): products over the kept entries
//   linear_of_dropout_sparse/fwd_bwd linear(dropout(x), W): a dropped copy of x, zeros multiplied
//
// Wall time per step (UseRealTime), including the loss that seeds a dense dy (sum(y * weights):
// two element-wise passes more). Counters: GBps / stream_fraction for the element-wise cases
// (x read and y written in the forward, dy read and dx written in the backward: 16 bytes per
// element), GFLOPps / fma_fraction for dropout_linear (the two products, 4 * N * in * out flops).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "bench_context.hpp"
#include "edgeattn/autograd/ops.hpp"

namespace edgeattn::bench {
namespace {

using namespace edgeattn::autograd;  // NOLINT(google-build-using-namespace): a .cpp, not a header

constexpr int64_t kInputRows = 240000, kFeatures = 100, kOut = 64, kHiddenRows = 150000, kTableRows = 250000;
constexpr float kP = 0.2f;

// The sum of y weighted by a fixed tensor, so the backward has a dense dy.
Var weighted_loss(Tape& t, Var y, const Tensor& weights) {
  return sum(t, mul(t, y, t.constant_ref(weights)));
}

// The timed loop: each step clears the tape and p's gradient, builds loss(tape, p's Var, seed) with
// a fresh seed and runs its backward. Returns the loop's wall seconds.
template <class Loss>
double time_steps(benchmark::State& state, Parameter& p, Loss loss) {
  Tape tape;
  uint64_t seed = 0;
  LoopClock clock;
  for (auto _ : state) {
    tape.clear();
    p.grad.fill(0.f);
    tape.backward(loss(tape, tape.parameter(p), ++seed));
    benchmark::DoNotOptimize(p.grad.data());
  }
  return clock.seconds();
}

// An element-wise op y = op(tape, x, seed) on x [rows, cols], forward and backward (dx).
template <class Op>
void element_wise(benchmark::State& state, int64_t rows, int64_t cols, uint64_t data_seed, Op op) {
  Parameter x{"x", random_tensor({rows, cols}, data_seed), {}};
  const Tensor weights = random_tensor({rows, cols}, data_seed + 1);
  const double seconds = time_steps(
      state, x, [&](Tape& t, Var xv, uint64_t seed) { return weighted_loss(t, op(t, xv, seed), weights); });
  set_traffic_counters(state, 0, 16.0 * static_cast<double>(rows * cols), seconds);
}

void BM_Dropout(benchmark::State& state) {
  element_wise(state, kInputRows, kFeatures, 1,
               [](Tape& t, Var x, uint64_t seed) { return dropout(t, x, kP, seed); });
}

void BM_EluDropout(benchmark::State& state) {
  element_wise(state, kHiddenRows, kOut, 6,
               [](Tape& t, Var x, uint64_t seed) { return elu_dropout(t, x, 1.f, kP, seed); });
}

void BM_DropoutLinear(benchmark::State& state) {
  const Tensor x = random_tensor({kInputRows, kFeatures}, 3);
  Parameter w{"w", random_tensor({kOut, kFeatures}, 4), {}};
  const Tensor weights = random_tensor({kInputRows, kOut}, 5);
  const double seconds = time_steps(state, w, [&](Tape& t, Var wv, uint64_t seed) {
    return weighted_loss(t, dropout_linear(t, t.constant_ref(x), kP, seed, wv), weights);
  });
  set_flop_counters(state, 4.0 * static_cast<double>(kInputRows * kFeatures * kOut), seconds);
}

// A sampled batch's input rows: kInputRows of kTableRows nodes, ascending (as the training loops
// number a block's sources), one in 25 skipped.
std::shared_ptr<const std::vector<int64_t>> batch_input_rows() {
  static_assert(kTableRows - kTableRows / 25 == kInputRows);
  auto rows = std::make_shared<std::vector<int64_t>>();
  for (int64_t i = 0; i < kTableRows; ++i)
    if (i % 25 != 7) rows->push_back(i);
  return rows;
}

// dropout_linear over a batch's input rows of the whole feature matrix x [250000, 100]: gathered
// into a copy first (gathered) or read in place (selected, dropout_linear's row selection).
template <class Op>
void batch_rows_dropout_linear(benchmark::State& state, Op op) {
  const Tensor x = random_tensor({kTableRows, kFeatures}, 3);
  const auto rows = batch_input_rows();
  Parameter w{"w", random_tensor({kOut, kFeatures}, 4), {}};
  const Tensor weights = random_tensor({kInputRows, kOut}, 5);
  const double seconds = time_steps(state, w, [&](Tape& t, Var wv, uint64_t seed) {
    return weighted_loss(t, op(t, x, rows, wv, seed), weights);
  });
  set_flop_counters(state, 4.0 * static_cast<double>(kInputRows * kFeatures * kOut), seconds);
}

void BM_DropoutLinearGathered(benchmark::State& state) {
  batch_rows_dropout_linear(state, [](Tape& t, const Tensor& x, const auto& rows, Var w, uint64_t seed) {
    return dropout_linear(t, t.constant(gather_rows(x.view(), *rows)), kP, seed, w);
  });
}

void BM_DropoutLinearSelected(benchmark::State& state) {
  batch_rows_dropout_linear(state, [](Tape& t, const Tensor& x, const auto& rows, Var w, uint64_t seed) {
    return dropout_linear(t, t.constant_ref(x), rows, kP, seed, w);
  });
}

// A random sparse [2708, 1433] matrix with Cora's 49,216 entries, values in [0, 1).
CsrMatrix cora_shaped_features() {
  constexpr int64_t kRows = 2708, kCols = 1433, kEntries = 49216;
  const Tensor u = random_tensor({kRows, kCols}, 7, 0.f, 1.f);
  const float keep = static_cast<float>(kEntries) / static_cast<float>(kRows * kCols);
  Tensor dense({kRows, kCols});
  for (int64_t i = 0; i < dense.numel(); ++i)
    if (u.data()[i] < keep) dense.data()[i] = u.data()[i] / keep;
  return CsrMatrix::from_dense(dense);
}

template <class Op>
void sparse_dropout_linear(benchmark::State& state, Op op) {
  const CsrMatrix x = cora_shaped_features();
  Parameter w{"w", random_tensor({kOut, x.cols()}, 8), {}};
  const Tensor weights = random_tensor({x.rows(), kOut}, 9);
  const double seconds = time_steps(state, w, [&](Tape& t, Var wv, uint64_t seed) {
    return weighted_loss(t, op(t, x, wv, seed), weights);
  });
  // The dense-equivalent work of the pair: 2 products of x's entries with W's rows.
  set_flop_counters(state, 4.0 * static_cast<double>(x.nnz() * kOut), seconds);
  state.counters["nnz"] = static_cast<double>(x.nnz());
}

void BM_DropoutLinearSparse(benchmark::State& state) {
  sparse_dropout_linear(state, [](Tape& t, const CsrMatrix& x, Var w, uint64_t seed) {
    return dropout_linear(t, x, 0.6f, seed, w);
  });
}

void BM_LinearOfDropoutSparse(benchmark::State& state) {
  sparse_dropout_linear(state, [](Tape& t, const CsrMatrix& x, Var w, uint64_t seed) {
    return linear(t, dropout(t, x, 0.6f, seed), w);
  });
}

BENCHMARK(BM_Dropout)->Name("dropout/fwd_bwd")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DropoutLinear)->Name("dropout_linear/fwd_bwd")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DropoutLinearGathered)
    ->Name("dropout_linear_gathered/fwd_bwd")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DropoutLinearSelected)
    ->Name("dropout_linear_selected/fwd_bwd")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EluDropout)->Name("elu_dropout/fwd_bwd")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DropoutLinearSparse)
    ->Name("dropout_linear_sparse/fwd_bwd")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_LinearOfDropoutSparse)
    ->Name("linear_of_dropout_sparse/fwd_bwd")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace edgeattn::bench
