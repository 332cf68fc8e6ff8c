#include "edgeattn/data/ogb.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::expect_throw_naming;

/// A fresh OGB-format directory per test, written with gzip like OGB's downloads.
class OgbDir : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_);
    // 5 nodes; edges 0->1, 1->2, 2->0, 3->4, 4->4 (a self-loop)
    put("raw/num-node-list.csv.gz", "5\n");
    put("raw/num-edge-list.csv.gz", "5\n");
    put("raw/edge.csv.gz", "0,1\n1,2\n2,0\n3,4\n4,4\n");
    put("raw/node-feat.csv.gz", "0.5,1\n-2,0\n3.25,4\n0,0\n1e-3,-7\n");
    put("raw/node-label.csv.gz", "2\n0\nnan\n1\n2\n");
    put("split/time/train.csv.gz", "3\n0\n");
    put("split/time/valid.csv.gz", "1\n");
    put("split/time/test.csv.gz", "4\n2\n");
    put("split/random/train.csv.gz", "0\n1\n");
    put("split/random/valid.csv.gz", "2\n");
    put("split/random/test.csv.gz", "3\n");
  }
  void put(const std::string& rel, const std::string& text, bool compress = true) {
    fs::create_directories((dir_ / rel).parent_path());
    write_file_atomic(dir_ / rel, compress ? edgeattn::testing::gzip(text) : text);
  }
  std::string path(const std::string& rel) const { return (dir_ / rel).string(); }

  edgeattn::testing::TempDir tmp_;  // removed after the test
  fs::path dir_ = tmp_ / "ogbn-tiny";
};

std::vector<int64_t> row_ptr(const Graph& g) { return {g.row_ptr().begin(), g.row_ptr().end()}; }
std::vector<int32_t> col_idx(const Graph& g) { return {g.col_idx().begin(), g.col_idx().end()}; }

OgbOptions opts(bool undirected, SelfLoops loops = SelfLoops::keep, std::string split = {}) {
  OgbOptions o;
  o.undirected = undirected;
  o.self_loops = loops;
  o.split = std::move(split);
  return o;
}

TEST_F(OgbDir, LoadsGraphFeaturesLabelsAndSplits) {
  const Dataset ds = load_ogb_node_dataset(dir_);
  EXPECT_EQ(ds.name, "ogbn-tiny");
  EXPECT_EQ(ds.format, "ogb");
  EXPECT_EQ(ds.num_nodes(), 5);
  // Row = destination: node 0 hears from 2, node 1 from 0, node 2 from 1, node 4 from 3 and 4.
  EXPECT_EQ(row_ptr(ds.graph), (std::vector<int64_t>{0, 1, 2, 3, 3, 5}));
  EXPECT_EQ(col_idx(ds.graph), (std::vector<int32_t>{2, 0, 1, 3, 4}));
  EXPECT_TRUE(ds.edge_weight.empty());
  ASSERT_FALSE(ds.features.is_sparse());
  const Tensor& x = ds.features.dense();
  EXPECT_EQ(x.shape(), Shape({5, 2}));
  EXPECT_EQ(std::vector<float>(x.span().begin(), x.span().end()),
            (std::vector<float>{0.5f, 1, -2, 0, 3.25f, 4, 0, 0, 1e-3f, -7}));
  EXPECT_EQ(ds.labels.classes, (std::vector<int32_t>{2, 0, -1, 1, 2}));
  EXPECT_EQ(ds.num_classes(), 3);
  ASSERT_EQ(ds.splits.size(), 2u);
  EXPECT_EQ(ds.default_split, "time");  // preferred over "random", which sorts first
  EXPECT_EQ(ds.split().train, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(ds.split().val, (std::vector<int64_t>{1}));
  EXPECT_EQ(ds.split().test, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(ds.split("random").train, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ds.sources.size(), 11u);
}

TEST_F(OgbDir, UndirectedAddsReverseEdgesAndPoliciesApplyToSelfLoops) {
  const Dataset ds = load_ogb_node_dataset(dir_, opts(true, SelfLoops::remove));
  EXPECT_EQ(row_ptr(ds.graph), (std::vector<int64_t>{0, 2, 4, 6, 7, 8}));
  EXPECT_EQ(col_idx(ds.graph), (std::vector<int32_t>{1, 2, 0, 2, 0, 1, 4, 3}));
  const Dataset added = load_ogb_node_dataset(dir_, opts(false, SelfLoops::add));
  EXPECT_EQ(added.num_edges(), 4 + 5);
}

TEST_F(OgbDir, DefaultSplitFollowsTheOptionThenTheRule) {
  EXPECT_EQ(load_ogb_node_dataset(dir_, opts(false, SelfLoops::keep, "random")).default_split, "random");
  fs::remove_all(dir_ / "split/time");
  EXPECT_EQ(load_ogb_node_dataset(dir_).default_split, "random");
  expect_throw_naming<InvalidArgument>(
      [&] { (void)load_ogb_node_dataset(dir_, opts(false, SelfLoops::keep, "time")); },
      {"no split 'time'", "random"});
  fs::remove_all(dir_ / "split");
  const Dataset none = load_ogb_node_dataset(dir_);
  EXPECT_TRUE(none.splits.empty());
  EXPECT_TRUE(none.default_split.empty());
}

TEST_F(OgbDir, MultiColumnLabelsAreMultiLabelAndOneColumnEdgeFeaturesAreWeights) {
  put("raw/node-label.csv.gz", "1,0,1\n0,0,0\n0,1,0\n1,1,1\n0,0,1\n");
  put("raw/edge-feat.csv.gz", "1\n0.5\n1\n2\n1\n");
  const Dataset ds = load_ogb_node_dataset(dir_);
  ASSERT_TRUE(ds.labels.multi_label());
  EXPECT_EQ(ds.num_classes(), 3);
  const Tensor& y = ds.labels.multi_hot;
  EXPECT_EQ(std::vector<float>(y.span().begin(), y.span().end()),
            (std::vector<float>{1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1}));
  // CSR order (by destination): 2->0 (1), 0->1 (1), 1->2 (0.5), 3->4 (2), 4->4 (1)
  EXPECT_EQ(ds.edge_weight, (std::vector<float>{1, 1, 0.5f, 2, 1}));
}

TEST_F(OgbDir, SeveralEdgeFeatureColumnsAreEdgeAttributesInCsrOrder) {
  put("raw/edge-feat.csv.gz", "1,2\n3,4\n5,6\n7,8\n9,10\n");
  const auto rows = [](const Tensor& t) { return std::vector<float>(t.span().begin(), t.span().end()); };
  const Dataset ds = load_ogb_node_dataset(dir_);
  EXPECT_TRUE(ds.edge_weight.empty());
  ASSERT_EQ(ds.edge_attr.shape(), Shape({5, 2}));
  // CSR order (by destination): 2->0, 0->1, 1->2, 3->4, 4->4
  EXPECT_EQ(rows(ds.edge_attr), (std::vector<float>{5, 6, 1, 2, 3, 4, 7, 8, 9, 10}));
  // Undirected, self-loops removed: each reverse edge copies its edge's row; the loop's row goes.
  const Dataset u = load_ogb_node_dataset(dir_, opts(true, SelfLoops::remove));
  EXPECT_EQ(col_idx(u.graph), (std::vector<int32_t>{1, 2, 0, 2, 0, 1, 4, 3}));
  EXPECT_EQ(rows(u.edge_attr), (std::vector<float>{1, 2, 5, 6, 1, 2, 3, 4, 5, 6, 3, 4, 7, 8, 7, 8}));
  // An added self-loop has no attributes of its own: zeros.
  const Dataset added = load_ogb_node_dataset(dir_, opts(false, SelfLoops::add));
  ASSERT_EQ(added.edge_attr.shape(), Shape({9, 2}));
  EXPECT_EQ(added.edge_attr(0, 0), 0.f);  // 0->0, added
  EXPECT_EQ(added.edge_attr(1, 1), 6.f);  // 2->0
  // Turned off, they are left out and a note says so.
  OgbOptions off;
  off.edge_attr = false;
  const Dataset plain = load_ogb_node_dataset(dir_, off);
  EXPECT_TRUE(plain.edge_attr.absent());
  EXPECT_TRUE(std::any_of(plain.notes.begin(), plain.notes.end(), [](const std::string& n) {
    return n.find("2 edge feature columns not loaded") != std::string::npos;
  }));
  put("raw/edge-feat.csv.gz", "1,2\n3,4\n5,6\n7,8\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/edge-feat.csv.gz"), "4 rows", "one per edge (5)"});
}

TEST_F(OgbDir, UncompressedFilesLoadToo) {
  fs::remove(dir_ / "raw/edge.csv.gz");
  put("raw/edge.csv", "0,1\n1,2\n2,0\n3,4\n4,4\n", false);
  EXPECT_EQ(load_ogb_node_dataset(dir_).num_edges(), 5);
}

TEST_F(OgbDir, MissingFilesAreIoErrorsNamingThem) {
  fs::remove(dir_ / "raw/edge.csv.gz");
  expect_throw_naming<IoError>([&] { (void)load_ogb_node_dataset(dir_); },
                               {path("raw/edge.csv.gz"), "no such file"});
  fs::remove(dir_ / "raw/num-node-list.csv.gz");
  expect_throw_naming<IoError>([&] { (void)load_ogb_node_dataset(dir_); },
                               {path("raw/num-node-list.csv.gz")});
  expect_throw_naming<IoError>([&] { (void)load_ogb_node_dataset(dir_ / "nope"); },
                               {"nope", "not a directory"});
}

TEST_F(OgbDir, MissingSplitPartIsAnIoErrorNamingIt) {
  fs::remove(dir_ / "split/random/valid.csv.gz");
  expect_throw_naming<IoError>([&] { (void)load_ogb_node_dataset(dir_); },
                               {path("split/random/valid.csv.gz")});
}

TEST_F(OgbDir, CountsThatDisagreeNameBothFiles) {
  put("raw/num-edge-list.csv.gz", "6\n");
  expect_throw_naming<ParseError>(
      [&] { (void)load_ogb_node_dataset(dir_); },
      {path("raw/edge.csv.gz"), "5 edges", path("raw/num-edge-list.csv.gz") + ":1 says 6"});
  put("raw/num-edge-list.csv.gz", "5\n");
  put("raw/node-feat.csv.gz", "1,2\n3,4\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/node-feat.csv.gz"), "2 rows, expected one per node (5 in"});
  put("raw/node-feat.csv.gz", "1,2\n3,4\n5\n6,7\n8,9\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/node-feat.csv.gz") + ":3", "1 values, expected 2"});
  put("raw/node-feat.csv.gz", "1\n2\n3\n4\n5\n6\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/node-feat.csv.gz") + ":6", "more rows than the 5 nodes"});
  put("raw/node-feat.csv.gz", "1\n2\n3\n4\n5\n");
  put("raw/node-label.csv.gz", "0\n1\n2\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/node-label.csv.gz"), "3 rows, expected one per node (5"});
  put("raw/num-node-list.csv.gz", "5\n7\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/num-node-list.csv.gz") + ":2", "exactly one graph"});
}

TEST_F(OgbDir, BadIdsAndValuesNameTheFileAndLine) {
  put("raw/edge.csv.gz", "0,1\n1,2\n2,5\n3,4\n4,4\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/edge.csv.gz") + ":3", "target node id 5", "[0, 5)"});
  put("raw/edge.csv.gz", "0,1\n1,x\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/edge.csv.gz") + ":2", "target node id", "'x'"});
  put("raw/edge.csv.gz", "0,1,7\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/edge.csv.gz") + ":1", "'7'"});
  put("raw/edge.csv.gz", "0,1\n1,2\n2,0\n3,4\n4,4\n");
  put("raw/node-label.csv.gz", "0\n1.5\n2\n0\n1\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/node-label.csv.gz") + ":2", "'1.5'", "class id"});
  put("raw/node-label.csv.gz", "0,1\n1,2\n0,0\n0,0\n1,1\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("raw/node-label.csv.gz") + ":2", "'2'", "not 0 or 1"});
  put("raw/node-label.csv.gz", "0\n1\n2\n0\n1\n");
  put("split/time/test.csv.gz", "4\n9\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_); },
                                  {path("split/time/test.csv.gz") + ":2", "node id 9", "[0, 5)"});
  put("split/time/test.csv.gz", "4\n2\n4\n");
  expect_throw_naming<ParseError>(
      [&] { (void)load_ogb_node_dataset(dir_); },
      {path("split/time/test.csv.gz") + ":3", "node 4 is listed again (first on line 1)"});
  put("split/time/test.csv.gz", "4\n0\n");
  expect_throw_naming<ParseError>(
      [&] { (void)load_ogb_node_dataset(dir_); },
      {path("split/time/test.csv.gz") + ":2", "node 0 is also in", path("split/time/train.csv.gz")});
}

TEST_F(OgbDir, EdgeFeaturesAverageIntoNodeFeaturesWhenThereAreNone) {
  // ogbn-proteins' layout: no node-feat.csv, 2 edge feature columns.
  fs::remove(dir_ / "raw/node-feat.csv.gz");
  put("raw/edge-feat.csv.gz", "1,10\n3,30\n5,50\n7,70\n9,90\n");
  OgbOptions o = opts(/*undirected=*/true);
  o.node_features_from_edges = true;
  const Dataset ds = load_ogb_node_dataset(dir_, o);
  const Tensor& x = ds.features.dense();
  ASSERT_EQ(x.shape(), Shape({5, 2}));
  // Edges 0-1 (1), 1-2 (3), 2-0 (5), 3-4 (7), 4-4 (9, a self-loop, counted once): each node the
  // mean over the edges it touches.
  EXPECT_EQ(std::vector<float>(x.span().begin(), x.span().end()),
            (std::vector<float>{3, 30, 2, 20, 4, 40, 7, 70, 8, 80}));
  // Directed: only the edges a node receives; node 3 receives none.
  o.undirected = false;
  const Tensor y = load_ogb_node_dataset(dir_, o).features.dense();
  EXPECT_EQ(std::vector<float>(y.span().begin(), y.span().end()),
            (std::vector<float>{5, 50, 1, 10, 3, 30, 0, 0, 8, 80}));
  // Without the option there are no node features (the edge features stay edge attributes).
  const Dataset plain = load_ogb_node_dataset(dir_);
  EXPECT_EQ(plain.features.cols(), 0);
  EXPECT_EQ(plain.edge_attr.shape(), Shape({5, 2}));
  put("raw/edge-feat.csv.gz", "1,10\n3\n5,50\n7,70\n9,90\n");
  expect_throw_naming<ParseError>([&] { (void)load_ogb_node_dataset(dir_, o); },
                                  {path("raw/edge-feat.csv.gz") + ":2", "expected 2"});
}

}  // namespace
}  // namespace edgeattn::data
