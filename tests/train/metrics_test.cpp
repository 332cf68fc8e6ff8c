#include "edgeattn/train/metrics.hpp"

#include <gtest/gtest.h>

#include "edgeattn/train/early_stopping.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::train {
namespace {

TEST(Metrics, AccuracyCountsArgMaxHitsOverTheGivenNodes) {
  const Tensor logits({4, 3}, std::vector<float>{0, 1, 0, /**/ 2, 1, 0, /**/ 0, 0, 5, /**/ 1, 1, 1});
  const std::vector<int32_t> labels = {1, 1, 2, 0};
  const std::vector<int64_t> all = {0, 1, 2, 3}, some = {1};
  EXPECT_DOUBLE_EQ(accuracy(logits, labels, all), 0.75);  // node 3 ties -> class 0: correct
  EXPECT_DOUBLE_EQ(accuracy(logits, labels, some), 0.0);
  EXPECT_EQ(predict_classes(logits), (std::vector<int32_t>{1, 0, 2, 0}));
}

TEST(Metrics, AccuracyRejectsAnUnlabelledNode) {
  const Tensor logits({2, 2});
  const std::vector<int32_t> labels = {0, -1};
  const std::vector<int64_t> nodes = {1};
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { accuracy(logits, labels, nodes); },
                                                          {"node 1", "no label"});
}

TEST(Metrics, MicroF1PoolsAllClasses) {
  // predictions (logit > 0): node0 {0, 1}, node1 {2}; truth: node0 {0}, node1 {1, 2}
  const Tensor logits({2, 3}, std::vector<float>{1, 1, -1, -1, -1, 1});
  const Tensor targets({2, 3}, std::vector<float>{1, 0, 0, 0, 1, 1});
  const std::vector<int64_t> nodes = {0, 1};
  EXPECT_DOUBLE_EQ(micro_f1(logits, targets, nodes), 2.0 * 2 / (2.0 * 2 + 1 + 1));  // TP 2, FP 1, FN 1
}

TEST(EarlyStopping, StopsAfterPatienceEpochsWithoutProgressAndRestoresTheBestWeights) {
  autograd::Parameter p;
  p.name = "w";
  p.value = Tensor({1}, 0.f);
  EarlyStopping stop({&p}, {.patience = 2});
  const double losses[] = {1.0, 0.8, 0.9, 0.95, 0.97};
  const double accs[] = {0.5, 0.6, 0.55, 0.55, 0.55};
  bool stopped = false;
  int64_t epoch = 0;
  for (; epoch < 5 && !stopped; ++epoch) {
    p.value(0) = static_cast<float>(epoch);
    stopped = stop.update(epoch, losses[epoch], accs[epoch]);
  }
  EXPECT_TRUE(stopped);
  EXPECT_EQ(epoch, 4);  // epochs 2 and 3 made no progress
  EXPECT_EQ(stop.best_epoch(), 1);
  stop.restore_best();
  EXPECT_EQ(p.value(0), 1.f);
}

TEST(EarlyStopping, ProgressOnOneCriterionResetsPatienceWithoutSaving) {
  autograd::Parameter p;
  p.name = "w";
  p.value = Tensor({1}, 0.f);
  EarlyStopping stop({&p}, {.patience = 2});
  stop.update(0, 1.0, 0.5);
  p.value(0) = 1.f;
  EXPECT_FALSE(stop.update(1, 1.1, 0.7));  // accuracy improved, loss did not: progress, no save
  EXPECT_EQ(stop.best_epoch(), 0);
  EXPECT_EQ(stop.epochs_without_improvement(), 0);
}

}  // namespace
}  // namespace edgeattn::train
