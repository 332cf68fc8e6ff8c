// The TUDataset text format: a MUTAG-like instance of three graphs written here, PyG's feature
// and label conventions, and the errors of each file.
#include "edgeattn/data/tu_dataset.hpp"

#include <gtest/gtest.h>

#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/registry.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::TempDir;

class TuDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    // Graph 1: nodes 1-3, a triangle (both directions); graph 2: nodes 4-5; graph 3: node 6 alone.
    put("_A.txt", "1, 2\n2, 1\n2, 3\n3, 2\n1, 3\n3, 1\n4, 5\n5, 4\n");
    put("_graph_indicator.txt", "1\n1\n1\n2\n2\n3\n");
    put("_graph_labels.txt", "-1\n1\n1\n");
    put("_node_labels.txt", "1\n3\n1\n2\n2\n3\n");
    put("_node_attributes.txt", "0.5, 1\n1.5, 2\n2.5, 3\n3.5, 4\n4.5, 5\n5.5, 6\n");
    put("_edge_labels.txt", "0\n0\n1\n1\n0\n0\n2\n2\n");
  }
  void put(const std::string& suffix, const std::string& text) {
    write_file_atomic(dir_ / ("TOY" + suffix), text);
  }
  std::string path(const std::string& suffix) const { return (dir_ / ("TOY" + suffix)).string(); }

  TempDir dir_;
};

TEST_F(TuDataset, LoadsTheGraphsAsOneBlockDiagonalGraphWithPygsFeaturesAndLabels) {
  const Dataset ds = load_tu_dataset(dir_.path());
  EXPECT_EQ(ds.name, "TOY");
  EXPECT_EQ(ds.format, "tu");
  EXPECT_EQ(ds.num_graphs(), 3);
  EXPECT_EQ(ds.graph_ptr, (std::vector<int64_t>{0, 3, 5, 6}));
  EXPECT_EQ(ds.num_nodes(), 6);
  EXPECT_EQ(ds.num_edges(), 8);
  // Graph labels -1, 1, 1 -> 0, 1, 1; the original values are the class names.
  EXPECT_EQ(ds.graph_labels.classes, (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(ds.graph_labels.num_classes, 2);
  EXPECT_EQ(ds.graph_labels.class_names, (std::vector<std::string>{"-1", "1"}));
  // Features: 2 attributes, then node labels 1..3 one-hot in 3 columns.
  ASSERT_EQ(ds.num_features(), 5);
  const Tensor& x = ds.features.dense();
  EXPECT_EQ(std::vector<float>(x.data() + 5, x.data() + 10), (std::vector<float>{1.5f, 2, 0, 0, 1}));
  EXPECT_TRUE(ds.labels.classes.empty());  // graph classification: no node labels
  EXPECT_EQ(load_dataset_path(dir_.path()).num_graphs(), 3);
}

TEST_F(TuDataset, EdgeAttributesThenOneHotEdgeLabelsAreEdgeFeaturesInCsrOrder) {
  const auto rows = [](const Tensor& t) { return std::vector<float>(t.span().begin(), t.span().end()); };
  // Edge labels 0..2 one-hot; CSR order by destination then source:
  // 2->1 (0), 3->1 (0), 1->2 (0), 3->2 (1), 1->3 (0), 2->3 (1), 5->4 (2), 4->5 (2)
  const Dataset labels_only = load_tu_dataset(dir_.path());
  ASSERT_EQ(labels_only.edge_attr.shape(), Shape({8, 3}));
  EXPECT_EQ(rows(labels_only.edge_attr), (std::vector<float>{1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0,  //
                                                             1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1}));
  // Attributes come first (PyG's order); a repeated edge sums its rows (PyG's coalesce).
  put("_A.txt", "1, 2\n2, 1\n2, 3\n3, 2\n1, 3\n3, 1\n4, 5\n5, 4\n4, 5\n");
  put("_edge_labels.txt", "0\n0\n1\n1\n0\n0\n2\n2\n2\n");
  put("_edge_attributes.txt", "1\n2\n3\n4\n5\n6\n7\n8\n0.5\n");
  const Dataset ds = load_tu_dataset(dir_.path());
  ASSERT_EQ(ds.edge_attr.shape(), Shape({8, 4}));
  EXPECT_EQ(rows(ds.edge_attr), (std::vector<float>{2, 1, 0, 0, 6, 1, 0, 0, 1, 1, 0, 0, 4,    0, 1, 0,  //
                                                    5, 1, 0, 0, 3, 0, 1, 0, 8, 0, 0, 1, 7.5f, 0, 0, 2}));
  EXPECT_NO_THROW(ds.validate());
  // Row counts must match _A.txt.
  put("_edge_attributes.txt", "1\n2\n");
  expect_throw_naming<ParseError>(
      [&] { load_tu_dataset(dir_.path()); },
      {path("_edge_attributes.txt"), "2 rows", "one per edge (9 in " + path("_A.txt")});
  put("_edge_attributes.txt", "1\n2\n3\n4, 4\n5\n6\n7\n8\n0.5\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_edge_attributes.txt") + ":4", "2 values, expected 1"});
  fs::remove(dir_ / "TOY_edge_attributes.txt");
  put("_edge_labels.txt", "0\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_edge_labels.txt"), "1 rows", "one per edge (9"});
  // Without edge files there are no edge features.
  fs::remove(dir_ / "TOY_edge_labels.txt");
  EXPECT_TRUE(load_tu_dataset(dir_.path()).edge_attr.absent());
}

// As PyG's read_tu_data: remove_self_loops (their edge features with them), then coalesce.
TEST_F(TuDataset, SelfLoopsAreRemovedWithTheirEdgeFeaturesAsPygDoes) {
  put("_A.txt", "1, 2\n2, 1\n2, 2\n2, 3\n3, 2\n1, 3\n3, 1\n4, 5\n5, 4\n5, 5\n");
  put("_edge_labels.txt", "0\n0\n1\n1\n1\n0\n0\n2\n2\n2\n");
  const Dataset ds = load_tu_dataset(dir_.path());
  EXPECT_EQ(ds.num_edges(), 8);
  const Graph& g = ds.graph;
  for (int64_t v = 0; v < g.num_dst(); ++v)
    for (int64_t e = g.row_ptr()[v]; e < g.row_ptr()[v + 1]; ++e) EXPECT_NE(g.col_idx()[e], v);
  ASSERT_EQ(ds.edge_attr.shape(), Shape({8, 3}));  // the loops' labels gone, the others in CSR order
  const std::vector<float> rows(ds.edge_attr.span().begin(), ds.edge_attr.span().end());
  EXPECT_EQ(rows, (std::vector<float>{1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0,  //
                                      1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1}));
  int notes = 0;
  for (const std::string& n : ds.notes) notes += n.find("2 self-loops removed") != std::string::npos;
  EXPECT_EQ(notes, 1);
}

// Several label columns: each shifted to start at 0 and one-hot encoded with its own max + 1
// classes, side by side (PyG's read_tu_data).
TEST_F(TuDataset, SeveralLabelColumnsAreEachOneHotEncoded) {
  put("_node_labels.txt", "1, 0\n3, 0\n1, 1\n2, 0\n2, 1\n3, 0\n");
  fs::remove(dir_ / "TOY_node_attributes.txt");
  const Dataset ds = load_tu_dataset(dir_.path());
  ASSERT_EQ(ds.num_features(), 5);  // 3 classes (1..3) + 2 classes (0..1)
  const Tensor& x = ds.features.dense();
  EXPECT_EQ(std::vector<float>(x.data(), x.data() + 15),
            (std::vector<float>{1, 0, 0, 1, 0, /**/ 0, 0, 1, 1, 0, /**/ 1, 0, 0, 0, 1}));
  put("_node_labels.txt", "1, 0\n3\n1, 1\n2, 0\n2, 1\n3, 0\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_node_labels.txt") + ":2", "1 labels, expected 2"});
}

TEST_F(TuDataset, WithoutNodeFilesThereAreNoFeatures) {
  fs::remove(dir_ / "TOY_node_labels.txt");
  fs::remove(dir_ / "TOY_node_attributes.txt");
  const Dataset ds = load_tu_dataset(dir_.path(), {.prefix = "TOY", .name = "toy"});
  EXPECT_EQ(ds.name, "toy");
  EXPECT_EQ(ds.num_features(), 0);
}

TEST_F(TuDataset, EachFileSaysWhatIsWrongWithIt) {
  put("_A.txt", "1, 2\n3, 4\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_A.txt") + ":2", "joins graph 1 to graph 2"});
  put("_A.txt", "1, 7\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_A.txt") + ":1", "node id 7", "[1, 6]"});
  put("_A.txt", "1 2 3\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); }, {path("_A.txt") + ":1"});
  put("_A.txt", "1, 2\n");

  put("_graph_indicator.txt", "1\n2\n1\n3\n3\n3\n");
  expect_throw_naming<ParseError>(
      [&] { load_tu_dataset(dir_.path()); },
      {path("_graph_indicator.txt") + ":3", "graph id 1 after graph 2", "grouped"});
  // Graph ids are 1-based: a 0 is named on its own line, not blamed on an edge of _A.txt.
  put("_graph_indicator.txt", "0\n1\n1\n2\n2\n3\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_graph_indicator.txt") + ":1", "graph id 0", "1-based"});
  put("_graph_indicator.txt", "1\n1\n1\n2\n2\n3\n");
  put("_graph_labels.txt", "1\n0\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_graph_labels.txt"), "2 rows, expected one per graph (3"});
  put("_graph_labels.txt", "1\n0\n1\n");
  put("_node_attributes.txt", "1, 2\n3\n1, 2\n1, 2\n1, 2\n1, 2\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_node_attributes.txt") + ":2", "1 values, expected 2"});
  put("_node_attributes.txt", "1\n2\n");
  expect_throw_naming<ParseError>([&] { load_tu_dataset(dir_.path()); },
                                  {path("_node_attributes.txt"), "2 rows, expected one per node (6"});
  fs::remove(dir_ / "TOY_graph_labels.txt");
  expect_throw_naming<IoError>([&] { load_tu_dataset(dir_.path()); },
                               {path("_graph_labels.txt"), "no such file"});
}

}  // namespace
}  // namespace edgeattn::data
