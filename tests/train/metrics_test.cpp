#include "edgeattn/train/metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "edgeattn/core/parallel.hpp"
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

TEST(Metrics, MicroF1WithNothingPositiveIsZeroAsSklearn) {
  const Tensor logits({2, 2}, std::vector<float>{-1, -1, -1, -1});
  const Tensor targets({2, 2}, std::vector<float>{0, 0, 0, 0});
  EXPECT_EQ(micro_f1(logits, targets, std::vector<int64_t>{0, 1}), 0.0);
}

// A NaN score used to spin the tie loop forever (NaN != NaN) after an unordered sort.
TEST(Metrics, RocAucOfANanScoreIsNanNotAHang) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor scores({2, 2}, std::vector<float>{1, nan, nan, 2});
  const Tensor targets({2, 2}, std::vector<float>{1, 0, 0, 1});
  EXPECT_TRUE(std::isnan(roc_auc(scores, targets, std::vector<int64_t>{0, 1})));
}

TEST(Metrics, RocAucOfAHandComputedCaseCountsTiesAsHalf) {
  // Class 0: positives score 0.9, 0.4; negatives 0.4, 0.1 -> pairs (0.9>0.4, 0.9>0.1, 0.4=0.4,
  // 0.4>0.1) = 3.5 of 4. Class 1 has only negatives among the nodes: left out of the mean.
  // Class 2: perfectly inverted -> 0.
  const Tensor scores({4, 3}, std::vector<float>{0.9f, 0, 0.1f, 0.4f, 0, 0.2f, 0.4f, 0, 0.8f, 0.1f, 0, 0.9f});
  const Tensor targets({4, 3}, std::vector<float>{1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0});
  const std::vector<int64_t> all = {0, 1, 2, 3};
  EXPECT_DOUBLE_EQ(roc_auc(scores, targets, all), (3.5 / 4 + 0.0) / 2);
}

TEST(Metrics, RocAucEqualsThePairwiseDefinitionOnRandomScoresWithTies) {
  std::mt19937 rng(3);
  const int64_t n = 300, c = 7;
  Tensor scores({n, c}), targets({n, c});
  for (int64_t i = 0; i < n * c; ++i) {
    scores.data()[i] = static_cast<float>(rng() % 20) / 4.f;  // many ties
    targets.data()[i] = static_cast<float>(rng() % 3 == 0);
  }
  std::vector<int64_t> nodes;
  for (int64_t i = 0; i < n; i += 2) nodes.push_back(i);
  double expected = 0;
  for (int64_t k = 0; k < c; ++k) {  // O(P * N): every (positive, negative) pair
    double wins = 0, pairs = 0;
    for (int64_t a : nodes)
      for (int64_t b : nodes)
        if (targets(a, k) == 1 && targets(b, k) == 0) {
          wins += scores(a, k) > scores(b, k) ? 1.0 : scores(a, k) == scores(b, k) ? 0.5 : 0.0;
          pairs += 1;
        }
    expected += wins / pairs;
  }
  EXPECT_NEAR(roc_auc(scores, targets, nodes), expected / c, 1e-12);
}

// Many nodes take the parallel passes (node pieces for the counts, classes for ROC-AUC): the
// serial loops' results at every thread count, and an error names the first bad node.
TEST(Metrics, ManyNodesGiveTheSerialResultsAtAnyThreadCount) {
  std::mt19937 rng(5);
  const int64_t n = 20000, c = 13;
  Tensor logits({n, c}), targets({n, c});
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n * c; ++i) {
    logits.data()[i] = static_cast<float>(static_cast<int>(rng() % 41) - 20) / 4.f;  // ties
    targets.data()[i] = static_cast<float>(rng() % 4 == 0);
  }
  for (auto& y : labels) y = static_cast<int32_t>(rng() % c);
  std::vector<int64_t> nodes;
  for (int64_t i = 0; i < n; i += 3) nodes.push_back((i * 7) % n);  // unsorted
  // The serial definitions: the first arg-max, and TP / FP / FN over every (node, class).
  std::vector<int32_t> predicted(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t k = 1; k < c; ++k)
      if (logits(i, k) > logits(i, best)) best = k;
    predicted[static_cast<size_t>(i)] = static_cast<int32_t>(best);
  }
  int64_t correct = 0, tp = 0, fp = 0, fn = 0;
  for (const int64_t i : nodes) {
    correct += predicted[static_cast<size_t>(i)] == labels[static_cast<size_t>(i)];
    for (int64_t k = 0; k < c; ++k) {
      const bool pred = logits(i, k) > 0.f, truth = targets(i, k) > 0.5f;
      tp += pred && truth;
      fp += pred && !truth;
      fn += !pred && truth;
    }
  }
  const double acc = static_cast<double>(correct) / static_cast<double>(nodes.size());
  const double f1 = 2.0 * static_cast<double>(tp) / static_cast<double>(2 * tp + fp + fn);
  // ROC-AUC: the mean of each class's AUC, each computed alone (one class: one task), in class
  // order.
  double auc_sum = 0;
  for (int64_t k = 0; k < c; ++k) {
    Tensor sk({n, 1}), tk({n, 1});
    for (int64_t i = 0; i < n; ++i) {
      sk.data()[i] = logits(i, k);
      tk.data()[i] = targets(i, k);
    }
    auc_sum += roc_auc(sk, tk, nodes);
  }
  const double auc_expected = auc_sum / static_cast<double>(c);
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    SCOPED_TRACE(std::to_string(threads) + " threads");
    EXPECT_EQ(predict_classes(logits), predicted);
    EXPECT_EQ(accuracy(logits, labels, nodes), acc);
    EXPECT_EQ(micro_f1(logits, targets, nodes), f1);
    EXPECT_EQ(roc_auc(logits, targets, nodes), auc_expected);
    std::vector<int64_t> bad = nodes;
    bad[5000] = n + 3;
    bad[6000] = -1;
    edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { accuracy(logits, labels, bad); },
                                                            {"accuracy", "node " + std::to_string(n + 3)});
    edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { micro_f1(logits, targets, bad); },
                                                            {"micro_f1", "node " + std::to_string(n + 3)});
    edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { roc_auc(logits, targets, bad); },
                                                            {"roc_auc", "node " + std::to_string(n + 3)});
  }
}

TEST(Metrics, RocAucIsUndefinedWithoutBothOutcomesAndScoreNamesTheMetric) {
  const Tensor scores({2, 1}, std::vector<float>{0.1f, 0.2f});
  const Tensor ones({2, 1}, std::vector<float>{1, 1});
  const std::vector<int64_t> all = {0, 1};
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { roc_auc(scores, ones, all); },
                                                          {"roc_auc", "both positive and negative"});
  data::Labels multi;
  multi.multi_hot = Tensor({2, 1}, std::vector<float>{1, 0});
  multi.num_classes = 1;
  multi.eval_metric = "rocauc";
  EXPECT_EQ(multi.metric(), "rocauc");
  EXPECT_DOUBLE_EQ(score(multi.metric(), scores, multi, all), 0.0);
  data::Labels single;
  single.classes = {0, 0};
  single.num_classes = 1;
  EXPECT_EQ(single.metric(), "accuracy");
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { score("rocauc", scores, single, all); },
                                                          {"'rocauc'", "multi-label"});
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { score("auroc", scores, single, all); },
                                                          {"'auroc'", "accuracy, micro_f1, rocauc"});
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

TEST(EarlyStopping, AnEvaluationStandingForSeveralEpochsCountsThemAll) {
  // eval_every = 3: each evaluation without progress adds 3 epochs against a patience of 7.
  autograd::Parameter p;
  p.name = "w";
  p.value = Tensor({1}, 0.f);
  EarlyStopping stop({&p}, {.patience = 7, .criterion = EarlyStoppingConfig::Criterion::loss});
  EXPECT_FALSE(stop.update(2, 1.0, 0.5, 3));
  EXPECT_FALSE(stop.update(5, 2.0, 0.5, 3));
  EXPECT_EQ(stop.epochs_without_improvement(), 3);
  EXPECT_FALSE(stop.update(8, 2.0, 0.5, 3));
  EXPECT_TRUE(stop.update(9, 2.0, 0.5, 1));  // 7 epochs since epoch 2
  EXPECT_EQ(stop.best_epoch(), 2);
  edgeattn::testing::expect_throw_naming<InvalidArgument>([&] { stop.update(10, 1.0, 0.5, 0); },
                                                          {"epochs is 0"});
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
