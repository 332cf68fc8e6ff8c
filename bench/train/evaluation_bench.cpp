// What an evaluation costs after its forward: the loss and the metric of a split, at the sizes of
// the large named datasets, on one thread and on the run's threads (the serial loop and the
// parallel passes in the same run; each case's first argument is its thread count, capped by
// EDGEATTN_BENCH_THREADS):
//
//   cross_entropy/threads:T   the loss over ogbn-products' shape at a tenth: 225k test nodes of
//                             47 classes (logits [250000, 47]), the forward only (as evaluate())
//   accuracy/threads:T        the same split's arg-max accuracy
//   bce/threads:T             multi-label BCE over ogbn-proteins' 132,534 nodes x 112 tasks
//   micro_f1/threads:T        the same logits' micro-F1
//   roc_auc/threads:T         ROC-AUC of ogbn-proteins' test split (41,351 nodes x 112 tasks)
//
// Counters: elements (logits read) per call and their rate. Run the same binary with
// EDGEATTN_BENCH_THREADS=2 and compare threads:1 with threads:2 rows.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "bench_context.hpp"
#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/train/metrics.hpp"

namespace edgeattn::bench {
namespace {

constexpr int64_t kSingleNodes = 250000, kSingleClasses = 47, kSingleTest = 225000;
constexpr int64_t kMultiNodes = 132534, kTasks = 112, kMultiTest = 41351;

// Every `stride`-th node up to `count` of them, ascending (a split's sorted ids).
std::vector<int64_t> split_nodes(int64_t nodes, int64_t count) {
  std::vector<int64_t> ids;
  const double stride = static_cast<double>(nodes) / static_cast<double>(count);
  for (int64_t k = 0; k < count; ++k) ids.push_back(static_cast<int64_t>(static_cast<double>(k) * stride));
  return ids;
}

// Labels in [0, classes) or 0/1 targets at a quarter density, seeded by node.
std::vector<int32_t> class_labels(int64_t nodes, int64_t classes) {
  std::vector<int32_t> y(static_cast<size_t>(nodes));
  for (int64_t i = 0; i < nodes; ++i)
    y[static_cast<size_t>(i)] =
        static_cast<int32_t>((static_cast<uint64_t>(i) * 2654435761u >> 11) % classes);
  return y;
}

Tensor multi_hot(int64_t nodes, int64_t tasks) {
  const Tensor u = random_tensor({nodes, tasks}, 41, 0.f, 1.f);
  Tensor t({nodes, tasks});
  for (int64_t e = 0; e < t.numel(); ++e) t.data()[e] = u.data()[e] < 0.25f ? 1.f : 0.f;
  return t;
}

template <class Body>
void run(benchmark::State& state, int64_t elements, Body body) {
  ThreadLimit limit(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(body());
  state.counters["elements"] = static_cast<double>(elements);
  state.counters["elements_per_s"] =
      benchmark::Counter(static_cast<double>(elements) * state.iterations(), benchmark::Counter::kIsRate);
}

// Each shape's inputs, built once for all of its cases and thread counts.
struct SingleLabel {
  Tensor logits = random_tensor({kSingleNodes, kSingleClasses}, 31, -4.f, 4.f);
  std::vector<int32_t> labels = class_labels(kSingleNodes, kSingleClasses);
  std::vector<int64_t> test = split_nodes(kSingleNodes, kSingleTest);
};
const SingleLabel& single_label() {
  static const SingleLabel inputs;
  return inputs;
}

struct MultiLabel {
  Tensor logits = random_tensor({kMultiNodes, kTasks}, 32, -4.f, 4.f);
  Tensor targets = multi_hot(kMultiNodes, kTasks);
  std::vector<int64_t> all = split_nodes(kMultiNodes, kMultiNodes);
  std::vector<int64_t> test = split_nodes(kMultiNodes, kMultiTest);
};
const MultiLabel& multi_label() {
  static const MultiLabel inputs;
  return inputs;
}

void BM_CrossEntropy(benchmark::State& state) {
  const SingleLabel& in = single_label();
  run(state, kSingleTest * kSingleClasses, [&] {
    autograd::Tape tape;
    tape.training = false;
    const autograd::Var x = tape.constant_ref(in.logits);
    return tape.value(autograd::cross_entropy(tape, x, in.labels, in.test)).data()[0];
  });
}

void BM_Accuracy(benchmark::State& state) {
  const SingleLabel& in = single_label();
  run(state, kSingleTest * kSingleClasses, [&] { return train::accuracy(in.logits, in.labels, in.test); });
}

void BM_Bce(benchmark::State& state) {
  const MultiLabel& in = multi_label();
  run(state, kMultiNodes * kTasks, [&] {
    autograd::Tape tape;
    tape.training = false;
    const autograd::Var x = tape.constant_ref(in.logits), t = tape.constant_ref(in.targets);
    return tape.value(autograd::bce_with_logits(tape, x, t, in.all)).data()[0];
  });
}

void BM_MicroF1(benchmark::State& state) {
  const MultiLabel& in = multi_label();
  run(state, kMultiNodes * kTasks, [&] { return train::micro_f1(in.logits, in.targets, in.all); });
}

void BM_RocAuc(benchmark::State& state) {
  const MultiLabel& in = multi_label();
  run(state, kMultiTest * kTasks, [&] { return train::roc_auc(in.logits, in.targets, in.test); });
}

void thread_args(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1);
  if (threads_from_env() > 1) b->Arg(threads_from_env());
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_CrossEntropy)->Name("cross_entropy")->Apply(thread_args);
BENCHMARK(BM_Accuracy)->Name("accuracy")->Apply(thread_args);
BENCHMARK(BM_Bce)->Name("bce")->Apply(thread_args);
BENCHMARK(BM_MicroF1)->Name("micro_f1")->Apply(thread_args);
BENCHMARK(BM_RocAuc)->Name("roc_auc")->Apply(thread_args);

}  // namespace edgeattn::bench
