// The GraphSAGE layout (PPI's): a small instance written here in the real file layout, with ids
// mapped to permuted feature rows, and the errors each file can cause.
#include "edgeattn/data/graphsage.hpp"

#include <gtest/gtest.h>

#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/registry.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::npy_bytes;
using edgeattn::testing::raw;
using edgeattn::testing::TempDir;

// Three graphs as in PPI: nodes 0-3 (train: a path 0-1-2-3), 4-5 (val), 6-7 (test). Node id k
// sits at feats.npy row kRow[k]; its features are (k, 10 k), its labels [k % 2, 1, 0].
constexpr int64_t kRow[8] = {3, 0, 1, 2, 7, 6, 5, 4};

std::string g_json(const std::string& extra_link = "") {
  std::string nodes, sep;
  for (int k = 0; k < 8; ++k) {
    nodes += sep + "{\"id\": " + std::to_string(k) + ", \"val\": " + (k == 4 || k == 5 ? "true" : "false") +
             ", \"test\": " + (k >= 6 ? "true" : "false") + ", \"feature\": null}";
    sep = ", ";
  }
  return "{\"directed\": false, \"graph\": {\"name\": \"tiny\"}, \"multigraph\": false, \"nodes\": [" +
         nodes +
         "], \"links\": [{\"source\": 0, \"target\": 1, \"train_removed\": false}, {\"source\": 1, "
         "\"target\": 2},"
         " {\"source\": 2, \"target\": 3}, {\"source\": 4, \"target\": 5, \"test_removed\": false},"
         " {\"source\": 6, \"target\": 7}" +
         extra_link + "]}";
}

class GraphSage : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string id_map = "{", class_map = "{";
    std::vector<double> feats(16);
    for (int k = 0; k < 8; ++k) {
      id_map += (k ? ", \"" : "\"") + std::to_string(k) + "\": " + std::to_string(kRow[k]);
      class_map += (k ? ", \"" : "\"") + std::to_string(k) + "\": [" + std::to_string(k % 2) + ", 1, 0]";
      feats[static_cast<size_t>(kRow[k] * 2)] = k;
      feats[static_cast<size_t>(kRow[k] * 2 + 1)] = 10.0 * k;
    }
    put("tiny-G.json", g_json());
    put("tiny-id_map.json", id_map + "}");
    put("tiny-class_map.json", class_map + "}");
    put("tiny-feats.npy", npy_bytes("<f8", {8, 2}, raw(feats)));  // float64, as GraphSAGE saved it
  }
  void put(const std::string& name, const std::string& bytes) { write_file_atomic(dir_ / name, bytes); }

  TempDir dir_;
};

TEST_F(GraphSage, LoadsGraphsLabelsFeaturesAndTheSplitInFeatureRowOrder) {
  const Dataset ds = load_graphsage(dir_.path());
  EXPECT_EQ(ds.name, "tiny");
  EXPECT_EQ(ds.format, "graphsage");
  ASSERT_EQ(ds.num_nodes(), 8);
  EXPECT_EQ(ds.num_edges(), 10);  // 5 links, both directions
  // Row r holds node id k with kRow[k] = r: features (k, 10k), labels [k % 2, 1, 0].
  for (int k = 0; k < 8; ++k) {
    const int64_t r = kRow[k];
    EXPECT_FLOAT_EQ(ds.features.dense()(r, 0), static_cast<float>(k));
    EXPECT_FLOAT_EQ(ds.features.dense()(r, 1), 10.f * k);
    EXPECT_EQ(ds.labels.multi_hot(r, 0), static_cast<float>(k % 2));
    EXPECT_EQ(ds.labels.multi_hot(r, 1), 1.f);
  }
  EXPECT_EQ(ds.num_classes(), 3);
  EXPECT_EQ(ds.labels.metric(), "micro_f1");
  // Link 0-1 joins rows 3 and 0.
  const auto row3 = ds.graph.row(3);
  EXPECT_NE(std::find(row3.begin(), row3.end(), 0), row3.end());
  EXPECT_EQ(ds.default_split, "graphsage");
  EXPECT_EQ(ds.split().train, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(ds.split().val, (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(ds.split().test, (std::vector<int64_t>{4, 5}));
  // No edge crosses from a val or test graph into the train graph: training is inductive.
  for (const int64_t v : ds.split().train)
    for (const int32_t u : ds.graph.row(v)) EXPECT_LT(u, 4);
  // By path too, and gzip copies load the same.
  EXPECT_EQ(load_dataset_path(dir_.path()).num_edges(), 10);
}

TEST_F(GraphSage, StringIdsAndSingleClassLabelsLoadAsInReddit) {
  put("tiny-G.json",
      "{\"directed\": true, \"nodes\": [{\"id\": \"a\"}, {\"id\": \"b\"}, {\"id\": \"c\", \"test\": true}],"
      " \"links\": [{\"source\": 0, \"target\": 2}]}");
  put("tiny-id_map.json", "{\"a\": 0, \"b\": 1, \"c\": 2}");
  put("tiny-class_map.json", "{\"a\": 1, \"b\": 0, \"c\": 4}");
  fs::remove(dir_ / "tiny-feats.npy");
  const Dataset ds = load_graphsage(dir_.path(), {.prefix = "tiny", .name = ""});
  EXPECT_EQ(ds.num_edges(), 1);  // directed: as stored
  EXPECT_EQ(ds.labels.classes, (std::vector<int32_t>{1, 0, 4}));
  EXPECT_EQ(ds.num_classes(), 5);
  EXPECT_EQ(ds.num_features(), 0);
  EXPECT_EQ(ds.split().test, (std::vector<int64_t>{2}));
}

TEST_F(GraphSage, EachFileSaysWhatIsWrongWithIt) {
  const std::string g = (dir_ / "tiny-G.json").string();
  put("tiny-G.json", g_json(", {\"source\": 6, \"target\": 9}"));
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {g, "link 5", "position 9", "8 nodes"});
  put("tiny-G.json", g_json().substr(0, 200));
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); }, {g, "malformed JSON"});
  put("tiny-G.json", g_json(", {\"source\": \"6\", \"target\": 7}"));
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); }, {g, "string source '6'"});
  // Flags are booleans: a 1 or a "yes" counted as false.
  auto replaced = [](std::string text, const std::string& from, const std::string& to) {
    return text.replace(text.find(from), from.size(), to);
  };
  put("tiny-G.json", replaced(g_json(), "\"id\": 3, \"val\": false, \"test\": false",
                              "\"id\": 3, \"val\": false, \"test\": 1"));
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {g, "node 3 has \"test\": 1, expected true or false"});
  put("tiny-G.json", replaced(g_json(), "\"id\": 2, \"val\": false", "\"id\": 2, \"val\": \"yes\""));
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); }, {g, "node 2 has \"val\": \"yes\""});
  put("tiny-G.json", replaced(g_json(), "\"directed\": false", "\"directed\": \"false\""));
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {g, "\"directed\" is \"false\", expected true or false"});
  put("tiny-G.json", g_json());

  // Features of another rank: the message gives the whole shape.
  put("tiny-feats.npy", npy_bytes("<f8", {8, 2, 1}, raw(std::vector<double>(16, 0.0))));
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {"tiny-feats.npy", "shape [8, 2, 1], expected [8, num_features]"});
  fs::remove(dir_ / "tiny-feats.npy");

  put("tiny-id_map.json", "{\"0\": 0}");
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {"tiny-id_map.json", "node '1'", "has no row"});
  put("tiny-id_map.json", "{\"0\": 0, \"1\": 0}");
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {"tiny-id_map.json", "row 0 is given to two nodes"});
  put("tiny-id_map.json", "{\"0\": \"x\"}");
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {"tiny-id_map.json", "node '0'", "'x'"});
  std::string ids = "{";
  for (int k = 0; k < 8; ++k)
    ids += (k ? ", \"" : "\"") + std::to_string(k) + "\": " + std::to_string(kRow[k]);
  put("tiny-id_map.json", ids + "}");

  put("tiny-class_map.json", "{\"0\": [1, 0, 1], \"1\": [1]}");
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {"tiny-class_map.json", "has 1 labels, expected 3"});
  put("tiny-class_map.json", "{\"0\": [2]}");
  expect_throw_naming<ParseError>([&] { load_graphsage(dir_.path()); },
                                  {"tiny-class_map.json", "node '0'", "0 or 1"});

  fs::remove(dir_ / "tiny-class_map.json");
  expect_throw_naming<IoError>([&] { load_graphsage(dir_.path()); }, {"tiny-class_map.json", "no such file"});
  expect_throw_naming<IoError>([&] { load_graphsage(dir_ / "nope"); }, {"nope", "not a directory"});
}

}  // namespace
}  // namespace edgeattn::data
