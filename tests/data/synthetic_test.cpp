#include "edgeattn/data/synthetic.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/transforms.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::data {
namespace {

bool same(const Dataset& a, const Dataset& b) {
  const Tensor fa = a.features.to_dense(), fb = b.features.to_dense();
  return std::ranges::equal(a.graph.row_ptr(), b.graph.row_ptr()) &&
         std::ranges::equal(a.graph.col_idx(), b.graph.col_idx()) && a.labels.classes == b.labels.classes &&
         std::ranges::equal(fa.span(), fb.span()) && a.split().train == b.split().train &&
         a.split().val == b.split().val && a.split().test == b.split().test;
}

SbmConfig medium() {
  return {.num_nodes = 20000,
          .num_classes = 4,
          .expected_in_degree = 8,
          .expected_out_degree = 2,
          .feature_dim = 16,
          .seed = 11};
}

// Fraction of test nodes whose nearest class mean (means estimated on the train nodes) is their class.
double nearest_mean_accuracy(const Dataset& ds) {
  const Tensor x = ds.features.to_dense();
  const int64_t k = ds.num_classes(), f = ds.num_features();
  std::vector<double> mean(static_cast<size_t>(k * f), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(k), 0);
  for (int64_t v : ds.split().train) {
    const int32_t c = ds.labels.classes[static_cast<size_t>(v)];
    ++count[static_cast<size_t>(c)];
    for (int64_t d = 0; d < f; ++d) mean[static_cast<size_t>(c * f + d)] += x(v, d);
  }
  for (int64_t c = 0; c < k; ++c)
    for (int64_t d = 0; d < f; ++d)
      mean[static_cast<size_t>(c * f + d)] /= static_cast<double>(count[static_cast<size_t>(c)]);
  int64_t correct = 0;
  for (int64_t v : ds.split().test) {
    int64_t best = -1;
    double best_dist = std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < k; ++c) {
      double dist = 0.0;
      for (int64_t d = 0; d < f; ++d) dist += std::pow(x(v, d) - mean[static_cast<size_t>(c * f + d)], 2);
      if (dist < best_dist) {
        best_dist = dist;
        best = c;
      }
    }
    correct += best == ds.labels.classes[static_cast<size_t>(v)];
  }
  return static_cast<double>(correct) / static_cast<double>(ds.split().test.size());
}

TEST(SbmDataset, IsIdenticalOnOneAndTwoThreads) {
  Dataset one, two;
  {
    ThreadLimit limit(1);
    one = sbm_dataset(medium());
  }
  {
    ThreadLimit limit(2);
    two = sbm_dataset(medium());
  }
  EXPECT_TRUE(same(one, two));
  SbmConfig other = medium();
  other.seed = 12;
  EXPECT_FALSE(same(one, sbm_dataset(other)));
}

TEST(SbmDataset, IsSymmetricWithoutLoopsOrRepeats) {
  const Dataset ds = sbm_dataset(medium());
  EXPECT_NO_THROW(ds.validate());
  EXPECT_TRUE(is_symmetric(ds.graph));
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 0);
  for (int64_t i = 0; i < ds.num_nodes(); ++i) {
    const auto row = ds.graph.row(i);
    ASSERT_TRUE(std::adjacent_find(row.begin(), row.end()) == row.end()) << "row " << i;
  }
}

TEST(SbmDataset, HasTheExpectedNumbersOfSameClassAndCrossClassEdges) {
  // Equal blocks of s = 5000: same-class pairs 4 * s (s - 1) / 2 at p_in = 8 / (s - 1) give 80,000
  // expected undirected edges (sd ~ 283); cross-class pairs N (N - s) / 2 at p_out = 2 / (N - s)
  // give 20,000 (sd ~ 141). Allow 5 sd.
  const Dataset ds = sbm_dataset(medium());
  int64_t same_class = 0, cross_class = 0;
  for (int64_t i = 0; i < ds.num_nodes(); ++i)
    for (int32_t j : ds.graph.row(i))
      (ds.labels.classes[static_cast<size_t>(i)] == ds.labels.classes[static_cast<size_t>(j)]
           ? same_class
           : cross_class)++;
  EXPECT_NEAR(static_cast<double>(same_class / 2), 80000.0, 5 * 283.0);
  EXPECT_NEAR(static_cast<double>(cross_class / 2), 20000.0, 5 * 141.0);
}

TEST(SbmDataset, MakesCompleteBlocksWhenPInIsOne) {
  // Blocks of 4 with expected_in_degree 3 = s - 1: p_in = 1, p_out = 0, so three 4-cliques.
  const Dataset ds = sbm_dataset({.num_nodes = 12,
                                  .num_classes = 3,
                                  .expected_in_degree = 3,
                                  .expected_out_degree = 0,
                                  .feature_dim = 0,
                                  .train_per_class = 1,
                                  .num_val = 3,
                                  .num_test = -1});
  EXPECT_EQ(ds.num_edges(), 36);
  for (int64_t i = 0; i < 12; ++i)
    for (int32_t j : ds.graph.row(i))
      EXPECT_EQ(ds.labels.classes[static_cast<size_t>(i)], ds.labels.classes[static_cast<size_t>(j)]);
  EXPECT_EQ(ds.graph.degree_stats().min_degree, 3);
  EXPECT_EQ(ds.graph.degree_stats().max_degree, 3);
  EXPECT_EQ(ds.num_features(), 0);
  EXPECT_EQ(ds.split().train.size(), 3u);
  EXPECT_EQ(ds.split().val.size(), 3u);
  EXPECT_EQ(ds.split().test.size(), 6u);
}

TEST(SbmDataset, DrawsTheRequestedSplitAndBlockSizes) {
  SbmConfig cfg = medium();
  cfg.block_sizes = {2000, 3000, 5000, 10000};
  const Dataset ds = sbm_dataset(cfg);
  std::vector<int64_t> per_class(4, 0), train_per_class(4, 0);
  for (int32_t c : ds.labels.classes) ++per_class[static_cast<size_t>(c)];
  for (int64_t v : ds.split().train)
    ++train_per_class[static_cast<size_t>(ds.labels.classes[static_cast<size_t>(v)])];
  EXPECT_EQ(per_class, (std::vector<int64_t>{2000, 3000, 5000, 10000}));
  EXPECT_EQ(train_per_class, (std::vector<int64_t>{20, 20, 20, 20}));
  EXPECT_EQ(ds.split().val.size(), 500u);
  EXPECT_EQ(ds.split().test.size(), 1000u);
  EXPECT_EQ(ds.default_split, "random");
  EXPECT_NO_THROW(ds.validate());  // the parts are disjoint and sorted
}

TEST(SbmDataset, KeepsBlocksContiguousWithoutShuffling) {
  SbmConfig cfg = medium();
  cfg.shuffle_nodes = false;
  const Dataset ds = sbm_dataset(cfg);
  EXPECT_TRUE(std::ranges::is_sorted(ds.labels.classes));
  EXPECT_EQ(ds.labels.classes[4999], 0);
  EXPECT_EQ(ds.labels.classes[5000], 1);
  EXPECT_FALSE(std::ranges::is_sorted(sbm_dataset(medium()).labels.classes));
}

TEST(SbmDataset, FeaturesSeparateClassesAtHighSignalAndNotAtZeroSignal) {
  SbmConfig cfg = medium();
  cfg.signal = 1.f;  // pairwise confusion ~ Phi(-sqrt(8)) = 0.2%
  EXPECT_GT(nearest_mean_accuracy(sbm_dataset(cfg)), 0.95);
  cfg.signal = 0.f;  // chance: 1/4; 1000 test nodes give sd ~ 0.014
  const double chance = nearest_mean_accuracy(sbm_dataset(cfg));
  EXPECT_GT(chance, 0.19);
  EXPECT_LT(chance, 0.31);
}

TEST(SbmDataset, RejectsConfigsOutOfRange) {
  using testing::expect_throw_naming;
  expect_throw_naming<InvalidArgument>([] { sbm_dataset({.num_nodes = 0}); }, {"num_nodes", "0"});
  expect_throw_naming<InvalidArgument>(
      [] { sbm_dataset({.num_nodes = 100, .num_classes = 4, .expected_in_degree = 30}); },
      {"expected_in_degree", "p_in <= 1"});
  expect_throw_naming<InvalidArgument>(
      [] {
        sbm_dataset({.num_nodes = 100, .num_classes = 2, .block_sizes = {50, 40}});
      },
      {"block_sizes", "90", "100"});
  expect_throw_naming<InvalidArgument>(
      [] { sbm_dataset({.num_nodes = 100, .num_classes = 2, .num_val = 50, .num_test = 50}); },
      {"num_val + num_test", "140", "100"});
  expect_throw_naming<InvalidArgument>(
      [] {
        sbm_dataset({.num_nodes = 100,
                     .num_classes = 2,
                     .block_sizes = {90, 10},
                     .train_per_class = 20,
                     .num_val = 0,
                     .num_test = 0});
      },
      {"class 1", "10 nodes", "train_per_class = 20"});
  expect_throw_naming<InvalidArgument>([] { sbm_dataset({.noise = -1.f}); }, {"noise", "-1"});
}

}  // namespace
}  // namespace edgeattn::data
