#include "edgeattn/data/dataset.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "edgeattn/graph/build.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;

Dataset tiny() {
  Dataset ds;
  ds.name = "tiny";
  const std::vector<int64_t> src = {0, 1, 1, 2}, dst = {1, 0, 2, 1};
  ds.graph = build_graph(3, 3, src, dst);
  ds.features = Features(CsrMatrix(3, 4, {0, 1, 1, 3}, {2, 0, 3}, {1.f, 1.f, 1.f}));
  ds.labels.classes = {0, 1, -1};
  ds.labels.num_classes = 2;
  ds.splits["public"] = Split{{0}, {1}, {2}};
  ds.default_split = "public";
  return ds;
}

TEST(Dataset, ReportsItsSizes) {
  const Dataset ds = tiny();
  ds.validate();
  EXPECT_EQ(ds.num_nodes(), 3);
  EXPECT_EQ(ds.num_edges(), 4);
  EXPECT_EQ(ds.num_features(), 4);
  EXPECT_TRUE(ds.features.is_sparse());
  EXPECT_EQ(ds.features.nnz(), 3);
  EXPECT_DOUBLE_EQ(ds.features.density(), 0.25);
  EXPECT_EQ(ds.split().train, std::vector<int64_t>{0});
}

TEST(Dataset, DenseAndSparseFeaturesAgree) {
  const Dataset ds = tiny();
  const Features dense(ds.features.to_dense());
  EXPECT_FALSE(dense.is_sparse());
  EXPECT_EQ(dense.nnz(), 3);
  EXPECT_EQ(CsrMatrix::from_dense(dense.dense()), ds.features.sparse());
  expect_throw_naming<InvalidArgument>([&] { (void)dense.sparse(); }, {"dense"});
}

TEST(Dataset, UnknownSplitListsTheAvailableOnes) {
  expect_throw_naming<InvalidArgument>([] { (void)tiny().split("random"); }, {"'random'", "public"});
}

TEST(Dataset, ValidateNamesALabelOutOfRange) {
  Dataset ds = tiny();
  ds.labels.classes[2] = 7;
  expect_throw_naming<InvalidArgument>([&] { ds.validate(); }, {"node 2", "label 7", "[0, 2)"});
}

TEST(Dataset, ValidateRejectsOverlappingSplits) {
  Dataset ds = tiny();
  ds.splits["public"].test = {0};
  expect_throw_naming<InvalidArgument>([&] { ds.validate(); }, {"node 0", "test"});
}

TEST(Dataset, ValidateRejectsFeaturesOfTheWrongHeight) {
  Dataset ds = tiny();
  ds.features = Features(Tensor({2, 4}));
  expect_throw_naming<InvalidArgument>([&] { ds.validate(); }, {"features have 2 rows", "3"});
}

TEST(Dataset, ValidateNamesANonFiniteEdgeWeight) {
  Dataset ds = tiny();                      // CSR: 0 <- 1; 1 <- 0, 2; 2 <- 1
  ds.edge_weight = {1.f, 0.5f, -2.f, 3.f};  // negative weights are allowed (signed graphs)
  ds.validate();
  ds.edge_weight[2] = std::numeric_limits<float>::quiet_NaN();
  expect_throw_naming<InvalidArgument>([&] { ds.validate(); },
                                       {"the weight of edge 2 -> 1 is nan", "finite"});
  ds.edge_weight[2] = -std::numeric_limits<float>::infinity();
  expect_throw_naming<InvalidArgument>([&] { ds.validate(); }, {"edge 2 -> 1 is -inf"});
}

TEST(Dataset, ValidateNamesANonFiniteFeature) {
  // Dense: every position of a block of the scan, and past the first block.
  for (const int64_t at : {int64_t{0}, int64_t{4095}, int64_t{4096}, int64_t{9001}, int64_t{3 * 5000 - 1}}) {
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()}) {
      Dataset ds = tiny();
      Tensor x({3, 5000});
      x.data()[at] = bad;
      x.data()[(at + 1) % x.numel()] = 1e38f;  // large but finite
      ds.features = Features(x);
      ds.sources = {{"feats.npy", "", 0}};
      std::ostringstream value;
      value << bad;
      expect_throw_naming<InvalidArgument>(
          [&] { ds.validate(); },
          {"Dataset 'tiny'",
           "feature [" + std::to_string(at / 5000) + ", " + std::to_string(at % 5000) + "] is " + value.str(),
           "expected a finite value", "read from feats.npy"});
    }
  }
  // Sparse: named by row and column.
  Dataset ds = tiny();
  ds.features = Features(CsrMatrix(3, 4, {0, 1, 1, 3}, {2, 0, 3}, {1.f, 1.f, std::nanf("")}));
  expect_throw_naming<InvalidArgument>([&] { ds.validate(); }, {"feature [2, 3] is nan"});
  // Finite ones pass, including the largest and the subnormal.
  ds.features = Features(CsrMatrix(3, 4, {0, 1, 1, 3}, {2, 0, 3},
                                   {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                                    std::numeric_limits<float>::denorm_min()}));
  ds.validate();
}

TEST(Dataset, MaskMarksTheListedNodes) { EXPECT_EQ(to_mask({0, 2}, 4), (std::vector<uint8_t>{1, 0, 1, 0})); }

}  // namespace
}  // namespace edgeattn::data
