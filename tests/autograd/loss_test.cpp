// Losses: hand-computed cross-entropy, the fused form equal to nll(log_softmax), stability for
// extreme logits, gradient checks, sum/mean reductions, and errors for bad labels and ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "edgeattn/autograd/ops.hpp"
#include "edgeattn/core/parallel.hpp"
#include "support/expect_error.hpp"
#include "support/gradcheck.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::autograd {
namespace {

using edgeattn::testing::check_gradients;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::random_tensor;
using edgeattn::testing::weighted_sum;

const std::vector<int32_t> kLabels = {2, -1, 0, 1, 1};
const std::vector<int64_t> kIds = {0, 2, 3, 3};

TEST(Loss, CrossEntropyMatchesHandComputedValue) {
  Tape tape;
  // logits [[0, 0, ln 2]] , label 2: -log(2 / 4) = ln 2
  const std::vector<int32_t> labels = {2};
  const std::vector<int64_t> ids = {0};
  const Var loss = cross_entropy(tape, tape.constant(Tensor({1, 3}, std::vector<float>{0, 0, std::log(2.f)})),
                                 labels, ids);
  EXPECT_EQ(tape.value(loss).rank(), 0);
  EXPECT_NEAR(tape.value(loss).data()[0], std::log(2.f), 1e-6f);
}

TEST(Loss, CrossEntropyEqualsNllOfLogSoftmax) {
  const Tensor x = random_tensor({5, 3}, 1, -3.f, 3.f);
  Tape tape;
  const Var c = tape.constant(x);
  const float fused = tape.value(cross_entropy(tape, c, kLabels, kIds)).data()[0];
  const float split = tape.value(nll_loss(tape, log_softmax(tape, c), kLabels, kIds)).data()[0];
  EXPECT_NEAR(fused, split, 1e-6f);
}

TEST(Loss, StaysFiniteForExtremeLogits) {
  Tape tape;
  const std::vector<int32_t> labels = {0, 1};
  const std::vector<int64_t> ids = {0, 1};
  const Var x = tape.constant(Tensor({2, 2}, std::vector<float>{1000.f, -1000.f, 1000.f, -1000.f}));
  EXPECT_NEAR(tape.value(cross_entropy(tape, x, labels, ids)).data()[0], 1000.f, 1e-3f);  // (0 + 2000) / 2
  const Var t = tape.constant(Tensor({2, 2}, std::vector<float>{1, 0, 0, 1}));
  // per element: 0, 0, 1000, 1000 -> mean 500
  EXPECT_NEAR(tape.value(bce_with_logits(tape, x, t, ids)).data()[0], 500.f, 1e-3f);
}

TEST(Loss, BceWithLogitsMatchesHandComputedValue) {
  Tape tape;
  const std::vector<int64_t> ids = {1};
  // node 1: x = [0, 2], t = [1, 0]: log 2 + log(1 + e^2)
  const Var loss = bce_with_logits(tape, tape.constant(Tensor({2, 2}, std::vector<float>{9, 9, 0, 2})),
                                   tape.constant(Tensor({2, 2}, std::vector<float>{0, 0, 1, 0})), ids);
  EXPECT_NEAR(tape.value(loss).data()[0], (std::log(2.f) + std::log1p(std::exp(2.f))) / 2.f, 1e-6f);
}

TEST(Loss, GradientsMatchFiniteDifferences) {
  Parameter x{"logits", random_tensor({5, 3}, 2, -2.f, 2.f), {}},
      t{"targets", random_tensor({5, 3}, 3, 0.f, 1.f), {}};
  EXPECT_TRUE(
      check_gradients({&x}, [&](Tape& tp) { return cross_entropy(tp, tp.parameter(x), kLabels, kIds); }));
  EXPECT_TRUE(check_gradients({&x}, [&](Tape& tp) { return nll_loss(tp, tp.parameter(x), kLabels, kIds); }));
  EXPECT_TRUE(
      check_gradients({&x}, [&](Tape& tp) { return weighted_sum(tp, log_softmax(tp, tp.parameter(x)), 4); }));
  EXPECT_TRUE(check_gradients(
      {&x, &t}, [&](Tape& tp) { return bce_with_logits(tp, tp.parameter(x), tp.parameter(t), kIds); }));
}

// An evaluation's many rows take the parallel path (terms computed in parallel, summed in id
// order; distinct sorted ids' gradient rows written in parallel): the loss and gradient must be
// the serial double loop's bits at every thread count. Repeated, unsorted ids stay serial and add
// into a shared row in id order.
TEST(Loss, CrossEntropyOverManyRowsIsTheSerialLoopAtAnyThreadCount) {
  const int64_t n = 3000, c = 7;
  const Tensor x = random_tensor({n, c}, 5, -4.f, 4.f);
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>((i * 5 + 3) % c);
  std::vector<int64_t> sorted;
  for (int64_t i = 1; i < n; i += 2) sorted.push_back(i);  // 1,500 distinct rows: parallel
  std::vector<int64_t> repeated;
  for (int64_t k = 0; k < 2000; ++k) repeated.push_back((k * 7919) % 600);  // unsorted, with repeats
  for (const std::vector<int64_t>* ids : {&sorted, &repeated}) {
    // The reference: the serial loop, in double, in id order.
    const float* xd = x.data();
    double total = 0.0;
    std::vector<float> grad_ref(static_cast<size_t>(n * c), 0.f);
    const double g = 1.0 / static_cast<double>(ids->size());
    for (const int64_t i : *ids) {
      const float* row = xd + i * c;
      const float m = *std::max_element(row, row + c);
      double s = 0.0;
      for (int64_t k = 0; k < c; ++k) s += std::exp(static_cast<double>(row[k]) - m);
      const double lse = m + std::log(s);
      total += lse - row[labels[static_cast<size_t>(i)]];
      for (int64_t k = 0; k < c; ++k)
        grad_ref[static_cast<size_t>(i * c + k)] += static_cast<float>(g * std::exp(row[k] - lse));
      grad_ref[static_cast<size_t>(i * c + labels[static_cast<size_t>(i)])] -= static_cast<float>(g);
    }
    const auto loss_ref = static_cast<float>(total / static_cast<double>(ids->size()));
    for (int threads : {1, 2, 4}) {
      ThreadLimit limit(threads);
      Parameter p{"logits", x, {}};
      Tape tape;
      const Var loss = cross_entropy(tape, tape.parameter(p), labels, *ids);
      EXPECT_EQ(tape.value(loss).data()[0], loss_ref) << threads << " threads, " << ids->size() << " ids";
      tape.backward(loss);
      EXPECT_EQ(std::vector<float>(p.grad.data(), p.grad.data() + n * c), grad_ref)
          << threads << " threads, " << ids->size() << " ids";
    }
  }
}

// Multi-label BCE over many rows (PPI-sized evaluations): each row summed in class order, the
// rows in id order, as the serial loop below; the gradients of logits and targets the serial
// loop's bits at every thread count, for distinct sorted ids (parallel) and repeated ones.
TEST(Loss, BceOverManyRowsIsTheSerialLoopAtAnyThreadCount) {
  const int64_t n = 3000, c = 20;
  const Tensor x = random_tensor({n, c}, 7, -6.f, 6.f);
  Tensor targets({n, c});
  for (int64_t e = 0; e < n * c; ++e) targets.data()[e] = static_cast<float>((e * 2654435761u >> 7) & 1u);
  std::vector<int64_t> sorted;
  for (int64_t i = 0; i < n; i += 3) sorted.push_back(i);  // 1,000 distinct rows: parallel
  std::vector<int64_t> repeated;
  for (int64_t k = 0; k < 1500; ++k) repeated.push_back((k * 7919) % 500);
  for (const std::vector<int64_t>* ids : {&sorted, &repeated}) {
    const float* xd = x.data();
    const float* td = targets.data();
    const double count = static_cast<double>(ids->size() * static_cast<size_t>(c));
    double total = 0.0;
    for (const int64_t i : *ids) {
      double row = 0.0;
      for (int64_t j = 0; j < c; ++j) {
        const double xe = xd[i * c + j], t = td[i * c + j];
        row += std::max(xe, 0.0) - xe * t + std::log1p(std::exp(-std::fabs(xe)));
      }
      total += row;
    }
    const auto loss_ref = static_cast<float>(total / count);
    std::vector<float> dx_ref(static_cast<size_t>(n * c), 0.f), dt_ref(static_cast<size_t>(n * c), 0.f);
    const double g = 1.0 / count;
    for (const int64_t i : *ids)
      for (int64_t j = 0; j < c; ++j) {
        const double xe = xd[i * c + j];
        const double sig = xe >= 0 ? 1.0 / (1.0 + std::exp(-xe)) : std::exp(xe) / (1.0 + std::exp(xe));
        dx_ref[static_cast<size_t>(i * c + j)] += static_cast<float>(g * (sig - td[i * c + j]));
        dt_ref[static_cast<size_t>(i * c + j)] -= static_cast<float>(g * xe);
      }
    for (int threads : {1, 2, 4}) {
      ThreadLimit limit(threads);
      Parameter px{"logits", x, {}}, pt{"targets", targets, {}};
      Tape tape;
      const Var loss = bce_with_logits(tape, tape.parameter(px), tape.parameter(pt), *ids);
      EXPECT_EQ(tape.value(loss).data()[0], loss_ref) << threads << " threads, " << ids->size() << " ids";
      tape.backward(loss);
      EXPECT_EQ(std::vector<float>(px.grad.data(), px.grad.data() + n * c), dx_ref) << threads << " threads";
      EXPECT_EQ(std::vector<float>(pt.grad.data(), pt.grad.data() + n * c), dt_ref) << threads << " threads";
    }
  }
}

TEST(Reduction, SumAndMeanMatchHandValuesAndGradients) {
  Tape tape;
  const Var x = tape.constant(Tensor({2, 2}, std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(tape.value(sum(tape, x)).data()[0], 10.f);
  EXPECT_EQ(tape.value(mean(tape, x)).data()[0], 2.5f);
  Parameter q{"q", random_tensor({3, 4}, 6), {}};
  EXPECT_TRUE(check_gradients({&q}, [&](Tape& t) { return mean(t, scale(t, t.parameter(q), 2.f)); }));
  EXPECT_TRUE(check_gradients({&q}, [&](Tape& t) { return sum(t, elu(t, t.parameter(q))); }));
  Parameter p{"p", random_tensor({70000}, 5), {}};  // several reduction blocks
  Tape t2;
  const Var loss = mean(t2, t2.parameter(p));
  t2.backward(loss);
  for (int64_t i = 0; i < p.grad.numel(); i += 9999) EXPECT_FLOAT_EQ(p.grad.data()[i], 1.f / 70000.f);
}

TEST(Loss, RejectsUnlabelledAndOutOfRangeNodes) {
  Tape tape;
  const Var x = tape.constant(Tensor({5, 3}));
  const std::vector<int64_t> with_unlabelled = {0, 1};
  expect_throw_naming<InvalidArgument>([&] { (void)cross_entropy(tape, x, kLabels, with_unlabelled); },
                                       {"cross_entropy", "node 1", "label -1", "unlabelled"});
  const std::vector<int64_t> out_of_range = {7};
  expect_throw_naming<InvalidArgument>([&] { (void)nll_loss(tape, x, kLabels, out_of_range); },
                                       {"nll_loss", "ids[0]", "7", "[0, 5)"});
  expect_throw_naming<InvalidArgument>([&] { (void)cross_entropy(tape, x, kLabels, {}); }, {"ids is empty"});
  const std::vector<int32_t> short_labels = {0, 1};
  expect_throw_naming<ShapeError>([&] { (void)cross_entropy(tape, x, short_labels, kIds); },
                                  {"labels", "2", "5"});
  const std::vector<int32_t> big_label = {3, 0, 0, 0, 0};
  expect_throw_naming<InvalidArgument>([&] { (void)cross_entropy(tape, x, big_label, kIds); },
                                       {"label 3", "[0, 3)"});
}

}  // namespace
}  // namespace edgeattn::autograd
