#include "edgeattn/data/splits.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "edgeattn/data/planetoid.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;

Labels make_labels(std::vector<int32_t> classes, int64_t num_classes) {
  Labels l;
  l.classes = std::move(classes);
  l.num_classes = num_classes;
  return l;
}

/// 3 classes of 40, 30 and 20 nodes interleaved, and every 7th node unlabelled.
Labels three_classes() {
  std::vector<int32_t> c;
  for (int i = 0; i < 130; ++i) c.push_back(i % 7 == 6 ? -1 : (i % 3 == 0 ? 0 : i % 3 == 1 ? 1 : 2));
  return make_labels(c, 3);
}

/// The documented algorithm, written out plainly as the oracle: full per-class candidate lists,
/// partial Fisher-Yates with rejection-sampled bounded draws on std::mt19937_64.
Split oracle(const Labels& labels, int64_t per_class, int64_t num_val, int64_t num_test, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto draw = [&](uint64_t n) {
    for (;;) {
      const uint64_t r = rng();
      if (r >= (~n + 1) % n) return r % n;
    }
  };
  const auto pick = [&](std::vector<int64_t> v, size_t k) {
    for (size_t i = 0; i < k; ++i) std::swap(v[i], v[i + draw(v.size() - i)]);
    v.resize(k);
    return v;
  };
  Split s;
  std::set<int64_t> train;
  for (int32_t c = 0; c < labels.num_classes; ++c) {
    std::vector<int64_t> members;
    for (size_t i = 0; i < labels.classes.size(); ++i)
      if (labels.classes[i] == c) members.push_back(static_cast<int64_t>(i));
    for (const int64_t v : pick(members, static_cast<size_t>(per_class))) train.insert(v);
  }
  std::vector<int64_t> rest;
  for (size_t i = 0; i < labels.classes.size(); ++i)
    if (labels.classes[i] != -1 && !train.count(static_cast<int64_t>(i)))
      rest.push_back(static_cast<int64_t>(i));
  const std::vector<int64_t> chosen = pick(rest, static_cast<size_t>(num_val + num_test));
  s.train.assign(train.begin(), train.end());
  s.val.assign(chosen.begin(), chosen.begin() + num_val);
  s.test.assign(chosen.begin() + num_val, chosen.end());
  std::sort(s.val.begin(), s.val.end());
  std::sort(s.test.begin(), s.test.end());
  return s;
}

TEST(Splits, Mt19937_64IsTheStandardEngine) {
  // [rand.predef]: the 10000th output of a default-constructed mt19937_64 is 9981545732273789042.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ull);
}

TEST(Splits, RandomSplitTakesPerClassTrainNodesThenValAndTestFromTheRest) {
  const Labels labels = three_classes();
  const Split s = random_split(labels, 5, 20, 30, 42);
  EXPECT_EQ(s.train.size(), 15u);
  EXPECT_EQ(s.val.size(), 20u);
  EXPECT_EQ(s.test.size(), 30u);
  std::vector<int> per_class(3, 0);
  for (const int64_t v : s.train) ++per_class[static_cast<size_t>(labels.classes[static_cast<size_t>(v)])];
  EXPECT_EQ(per_class, (std::vector<int>{5, 5, 5}));
  std::set<int64_t> all;
  for (const auto* part : {&s.train, &s.val, &s.test}) {
    EXPECT_TRUE(std::is_sorted(part->begin(), part->end()));
    for (const int64_t v : *part) {
      EXPECT_NE(labels.classes[static_cast<size_t>(v)], -1) << "unlabelled node " << v << " chosen";
      EXPECT_TRUE(all.insert(v).second) << "node " << v << " in two parts";
    }
  }
}

TEST(Splits, RandomSplitFollowsTheDocumentedAlgorithm) {
  const Labels labels = three_classes();
  for (const uint64_t seed : {0ull, 1ull, 42ull, 0xdeadbeefull}) {
    const Split got = random_split(labels, 4, 10, 25, seed), want = oracle(labels, 4, 10, 25, seed);
    EXPECT_EQ(got.train, want.train) << seed;
    EXPECT_EQ(got.val, want.val) << seed;
    EXPECT_EQ(got.test, want.test) << seed;
  }
}

TEST(Splits, RandomSplitIsDeterministicPerSeedAndVariesAcrossSeeds) {
  const Labels labels = three_classes();
  const Split a = random_split(labels, 5, 20, 30, 7), b = random_split(labels, 5, 20, 30, 7);
  const Split c = random_split(labels, 5, 20, 30, 8);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.val, b.val);
  EXPECT_EQ(a.test, b.test);
  EXPECT_NE(a.train, c.train);
}

TEST(Splits, RandomSplitPicksEveryNodeOfAClassAboutEquallyOften) {
  const Labels labels = make_labels(std::vector<int32_t>(10, 0), 1);
  std::vector<int> hits(10, 0);
  for (uint64_t seed = 0; seed < 10000; ++seed)
    ++hits[static_cast<size_t>(random_split(labels, 1, 0, 0, seed).train[0])];
  for (int i = 0; i < 10; ++i) {
    EXPECT_GT(hits[static_cast<size_t>(i)], 850) << i;  // expected 1000, sd about 30
    EXPECT_LT(hits[static_cast<size_t>(i)], 1150) << i;
  }
}

TEST(Splits, RandomSplitRejectsSizesThatDoNotFit) {
  const Labels labels = three_classes();
  expect_throw_naming<InvalidArgument>(
      [] {
        (void)random_split(make_labels({0, 0, 0, 1, 1, 2, -1, -1}, 3), 2, 0, 0, 0);
      },
      {"class 2 has 1 labelled nodes", "per_class = 2"});
  const auto labelled = static_cast<int64_t>(labels.classes.size()) -
                        std::count(labels.classes.begin(), labels.classes.end(), -1);
  expect_throw_naming<InvalidArgument>(
      [&] { (void)random_split(labels, 5, labelled - 15, 1, 0); },
      {"num_val + num_test = " + std::to_string(labelled - 14), "only " + std::to_string(labelled - 15)});
  EXPECT_NO_THROW((void)random_split(labels, 5, labelled - 15, 0, 0));
  expect_throw_naming<InvalidArgument>([&] { (void)random_split(labels, -1, 0, 0, 0); },
                                       {"per_class = -1", "non-negative"});
  Labels multi = labels;
  multi.multi_hot = Tensor({130, 3});
  expect_throw_naming<InvalidArgument>([&] { (void)random_split(multi, 1, 0, 0, 0); }, {"multi-label"});
}

TEST(Splits, FullSplitTrainsOnEveryLabelledNodeOutsideValAndTest) {
  const Labels labels = make_labels({0, 1, -1, 1, 0, 0, 1}, 2);
  const Split s = full_split(labels, Split{{0}, {1, 3}, {5}});
  EXPECT_EQ(s.train, (std::vector<int64_t>{0, 4, 6}));
  EXPECT_EQ(s.val, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(s.test, (std::vector<int64_t>{5}));
  expect_throw_naming<InvalidArgument>(
      [&] {
        (void)full_split(labels, Split{{}, {9}, {}});
      },
      {"node 9", "[0, 7)"});
}

TEST(Splits, PlanetoidRandomSplitOnCoraHasTheUsualSizes) {
  Dataset ds = load_planetoid(std::string(EDGEATTN_SOURCE_DIR) + "/datasets/cora/planetoid", "cora");
  ds.splits["random"] = random_split(ds.labels, 20, 500, 1000, 12345);
  ds.validate();
  EXPECT_EQ(ds.split("random").train.size(), 140u);
  EXPECT_EQ(ds.split("random").val.size(), 500u);
  EXPECT_EQ(ds.split("random").test.size(), 1000u);
}

TEST(Splits, StratifiedKFoldTestsEveryItemOnceWithEachClassSpreadEvenly) {
  Labels labels;
  labels.num_classes = 3;
  for (int i = 0; i < 103; ++i) labels.classes.push_back(i % 7 == 0 ? -1 : (i % 5 == 0 ? 2 : i % 2));
  const std::vector<Split> folds = stratified_kfold(labels, 10, 0.1, 4);
  ASSERT_EQ(folds.size(), 10u);
  std::vector<int> tested(labels.classes.size(), 0);
  std::vector<int64_t> per_class(3, 0);
  for (const int32_t c : labels.classes)
    if (c >= 0) ++per_class[static_cast<size_t>(c)];
  for (const Split& f : folds) {
    for (const int64_t i : f.test) ++tested[static_cast<size_t>(i)];
    // Disjoint parts that together hold every labelled item.
    std::vector<int64_t> all = f.train;
    all.insert(all.end(), f.val.begin(), f.val.end());
    all.insert(all.end(), f.test.begin(), f.test.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
    EXPECT_EQ(static_cast<int64_t>(all.size()), per_class[0] + per_class[1] + per_class[2]);
    EXPECT_TRUE(std::is_sorted(f.test.begin(), f.test.end()));
    // Each class's share of the test fold is within one item of its tenth.
    for (int c = 0; c < 3; ++c) {
      const auto in_test = std::count_if(f.test.begin(), f.test.end(), [&](int64_t i) {
        return labels.classes[static_cast<size_t>(i)] == c;
      });
      EXPECT_LE(std::abs(static_cast<double>(in_test) - per_class[static_cast<size_t>(c)] / 10.0), 1.0)
          << "class " << c;
    }
    EXPECT_NEAR(static_cast<double>(f.val.size()), 0.1 * static_cast<double>(f.val.size() + f.train.size()),
                2.0);
  }
  for (size_t i = 0; i < labels.classes.size(); ++i)
    EXPECT_EQ(tested[i], labels.classes[i] == -1 ? 0 : 1) << i;
  // Deterministic for a seed, different for another.
  EXPECT_EQ(stratified_kfold(labels, 10, 0.1, 4)[3].test, folds[3].test);
  EXPECT_NE(stratified_kfold(labels, 10, 0.1, 5)[3].test, folds[3].test);
  expect_throw_naming<InvalidArgument>([&] { stratified_kfold(labels, 1, 0.1, 0); }, {"k = 1", ">= 2"});
  expect_throw_naming<InvalidArgument>([&] { stratified_kfold(labels, 10, 1.0, 0); }, {"val_fraction"});
}

}  // namespace
}  // namespace edgeattn::data
