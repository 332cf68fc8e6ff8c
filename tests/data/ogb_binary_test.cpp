// OGB's binary layout (ogbn-papers100M's): metadata, edge and feature blocks streamed from a small
// instance written here as np.savez_compressed writes it (deflated members, float16 features),
// the whole load through load_ogb_node_dataset and load_dataset_path, the memory estimate that
// refuses what does not fit, and the errors.
#include "edgeattn/data/ogb_binary.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/ogb.hpp"
#include "edgeattn/data/registry.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::make_zip;
using edgeattn::testing::npy_bytes;
using edgeattn::testing::raw;
using edgeattn::testing::ZipEntry;

// 6 nodes, 8 edges src -> dst; features (i, -i/2) in float16; labels 0, 1, NaN, 0, 2, NaN.
const std::vector<int64_t> kSrc = {0, 1, 0, 2, 3, 4, 4, 5}, kDst = {1, 0, 2, 0, 4, 3, 5, 4};

uint16_t half(float v) {  // exact for the small halves used here
  if (v == 0) return 0;
  const int e = std::ilogb(v);
  const auto mant = static_cast<uint16_t>(std::ldexp(std::fabs(v), 10 - e) - 1024);
  return static_cast<uint16_t>((v < 0 ? 0x8000 : 0) | ((e + 15) << 10) | mant);
}

class OgbBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "raw");
    std::vector<int64_t> edge_index = kSrc;
    edge_index.insert(edge_index.end(), kDst.begin(), kDst.end());
    std::vector<uint16_t> feat;
    for (int i = 0; i < 6; ++i) {
      feat.push_back(half(static_cast<float>(i)));
      feat.push_back(half(-0.5f * static_cast<float>(i)));
    }
    write_data({{"edge_index", npy_bytes("<i8", {2, 8}, raw(edge_index))},
                {"node_feat", npy_bytes("<f2", {6, 2}, raw(feat))},
                {"node_year", npy_bytes("<i8", {6, 1}, raw<int64_t>({2001, 2002, 2003, 2004, 2005, 2006}))},
                {"num_nodes_list", npy_bytes("<i8", {1}, raw<int64_t>({6}))},
                {"num_edges_list", npy_bytes("<i8", {1}, raw<int64_t>({8}))}});
    write_file_atomic(dir_ / "raw/node-label.npz",
                      make_zip({{.name = "node_label.npy",
                                 .data = npy_bytes("<f8", {6, 1}, raw<double>({0, 1, NAN, 0, 2, NAN})),
                                 .deflate = true}}));
    fs::create_directories(dir_ / "split/time");
    write_file_atomic(dir_ / "split/time/train.csv.gz", edgeattn::testing::gzip("0\n3\n"));
    write_file_atomic(dir_ / "split/time/valid.csv.gz", edgeattn::testing::gzip("1\n"));
    write_file_atomic(dir_ / "split/time/test.csv.gz", edgeattn::testing::gzip("4\n"));
  }
  void write_data(const std::vector<std::pair<std::string, std::string>>& members) {
    std::vector<ZipEntry> entries;
    for (const auto& [k, v] : members) entries.push_back({.name = k + ".npy", .data = v, .deflate = true});
    write_file_atomic(dir_ / "raw/data.npz", make_zip(entries));
  }
  std::string data_path() const { return (dir_ / "raw/data.npz").string(); }

  edgeattn::testing::TempDir tmp_;
  fs::path dir_ = tmp_ / "ogbn-tinypapers";
};

TEST_F(OgbBinary, InfoReadsTheMetadataWithoutLoadingTheArrays) {
  const OgbBinaryInfo info = ogb_binary_info(dir_);
  EXPECT_EQ(info.num_nodes, 6);
  EXPECT_EQ(info.num_edges, 8);
  EXPECT_EQ(info.num_features, 2);
  EXPECT_EQ(info.feature_dtype, "<f2");
  EXPECT_EQ(info.node_arrays, (std::vector<std::string>{"node_year"}));
  EXPECT_EQ(info.labelled, 4);
  EXPECT_EQ(info.num_classes, 3);
  ASSERT_EQ(info.splits.count("time"), 1u);
  EXPECT_EQ(info.splits.at("time"), (std::array<int64_t, 3>{2, 1, 1}));
  EXPECT_GT(info.compressed_bytes, 0u);
  // row_ptr + col + input maps + build arrays + float32 features + labels
  EXPECT_EQ(info.bytes_to_load(false), 8 * 7 + 4 * 8 + 16 * 8 + 16 * 8 + 4 * 6 * 2 + 4 * 6);
  EXPECT_GT(info.bytes_to_load(true), info.bytes_to_load(false));
}

TEST_F(OgbBinary, EdgesAndFeaturesStreamInBlocks) {
  std::vector<int64_t> src, dst, firsts;
  for_each_ogb_edge_block(dir_, 3,
                          [&](int64_t first, std::span<const int64_t> s, std::span<const int64_t> d) {
                            firsts.push_back(first);
                            EXPECT_LE(s.size(), 3u);
                            src.insert(src.end(), s.begin(), s.end());
                            dst.insert(dst.end(), d.begin(), d.end());
                          });
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(src, kSrc);
  EXPECT_EQ(dst, kDst);
  std::vector<float> x;
  for_each_ogb_feature_block(dir_, 4, [&](int64_t first, ConstView rows) {
    EXPECT_EQ(first, static_cast<int64_t>(x.size()) / 2);
    EXPECT_EQ(rows.dim(1), 2);
    x.insert(x.end(), rows.data(), rows.data() + rows.numel());
  });
  EXPECT_EQ(x, (std::vector<float>{0, -0.f, 1, -0.5f, 2, -1, 3, -1.5f, 4, -2, 5, -2.5f}));
  expect_throw_naming<InvalidArgument>([&] { for_each_ogb_edge_block(dir_, 0, {}); }, {"block is 0"});
}

TEST_F(OgbBinary, LoadsWholeThroughTheOgbLoaderWhenItFits) {
  const Dataset ds = load_ogb_node_dataset(dir_);
  EXPECT_EQ(ds.num_nodes(), 6);
  EXPECT_EQ(ds.num_edges(), 8);
  // CSR by destination: 0 <- 1, 2; 1 <- 0; 2 <- 0; 3 <- 4; 4 <- 3, 5; 5 <- 4
  EXPECT_EQ(std::vector<int32_t>(ds.graph.col_idx().begin(), ds.graph.col_idx().end()),
            (std::vector<int32_t>{1, 2, 0, 0, 4, 3, 5, 4}));
  EXPECT_EQ(ds.features.dense()(3, 1), -1.5f);
  EXPECT_EQ(ds.labels.classes, (std::vector<int32_t>{0, 1, -1, 0, 2, -1}));
  EXPECT_EQ(ds.num_classes(), 3);
  EXPECT_EQ(ds.default_split, "time");
  EXPECT_EQ(ds.split().train, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(load_dataset_path(dir_).num_edges(), 8);  // recognised by its raw/data.npz
  OgbOptions undirected;
  undirected.undirected = true;
  EXPECT_EQ(load_ogb_node_dataset(dir_, undirected).num_edges(), 8);  // every edge has its reverse already
}

TEST_F(OgbBinary, RefusesToLoadWhatDoesNotFitAndSaysHowToStreamIt) {
  OgbOptions small;
  small.max_bytes = 100;
  expect_throw_naming<InvalidArgument>(
      [&] { (void)load_ogb_node_dataset(dir_, small); },
      {"ogbn-tinypapers", "6 nodes, 8 edges", "needs about", "max_bytes", "for_each_ogb_edge_block"});
}

TEST_F(OgbBinary, InconsistentArraysAreNamed) {
  write_data({{"edge_index", npy_bytes("<i8", {2, 2}, raw<int64_t>({0, 1, 1, 9}))},
              {"num_nodes_list", npy_bytes("<i8", {1}, raw<int64_t>({6}))},
              {"num_edges_list", npy_bytes("<i8", {1}, raw<int64_t>({2}))}});
  expect_throw_naming<ParseError>([&] { for_each_ogb_edge_block(dir_, 8, [](auto, auto, auto) {}); },
                                  {data_path() + ":edge_index", "edge 1 is 1 -> 9", "[0, 6)"});
  write_data({{"edge_index", npy_bytes("<i8", {2, 2}, raw<int64_t>({0, 1, 1, 0}))},
              {"num_nodes_list", npy_bytes("<i8", {1}, raw<int64_t>({6}))},
              {"num_edges_list", npy_bytes("<i8", {1}, raw<int64_t>({3}))}});
  expect_throw_naming<ParseError>([&] { (void)ogb_binary_info(dir_); },
                                  {data_path() + ":edge_index", "(2, 2)", "expected (2, 3)"});
  write_data({{"edge_index", npy_bytes("<i8", {2, 0}, "")},
              {"node_feat", npy_bytes("<f4", {5, 2}, std::string(40, '\0'))},
              {"num_nodes_list", npy_bytes("<i8", {1}, raw<int64_t>({6}))},
              {"num_edges_list", npy_bytes("<i8", {1}, raw<int64_t>({0}))}});
  expect_throw_naming<ParseError>([&] { (void)ogb_binary_info(dir_); },
                                  {data_path() + ":node_feat", "(5, 2)", "(6, F)"});
  write_data({{"edge_index", npy_bytes("<i8", {2, 0}, "")},
              {"num_nodes_list", npy_bytes("<i8", {2}, raw<int64_t>({3, 3}))},
              {"num_edges_list", npy_bytes("<i8", {1}, raw<int64_t>({0}))}});
  expect_throw_naming<ParseError>([&] { (void)ogb_binary_info(dir_); },
                                  {"num_nodes_list", "exactly one graph"});
  fs::remove(dir_ / "raw/data.npz");
  expect_throw_naming<IoError>([&] { (void)ogb_binary_info(dir_); }, {data_path(), "no such file"});
}

}  // namespace
}  // namespace edgeattn::data
