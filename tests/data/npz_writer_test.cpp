#include "edgeattn/data/npz_writer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "data/zip_archive.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/npz.hpp"
#include "edgeattn/graph/build.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::TempDir;

/// 5 nodes, directed edges 0->1, 2->1, 1->3, 3->3 (a self-loop), 4->0, 1->0; node 2 has no
/// in-edges. Dense features, one unlabelled node, a split.
Dataset small_directed_dataset() {
  const std::vector<int32_t> src = {0, 2, 1, 3, 4, 1};
  const std::vector<int32_t> dst = {1, 1, 3, 3, 0, 0};
  Dataset ds;
  ds.name = "small";
  ds.graph = build_graph(5, 5, std::span<const int32_t>(src), std::span<const int32_t>(dst));
  const std::vector<float> x = {0.5f, -1.f, 2.f, 0.25f, 3.f, -0.125f, 7.f, 8.f, 1e-3f, -4.f};
  ds.features = Features(Tensor({5, 2}, std::span<const float>(x)));
  ds.labels.classes = {0, 2, 1, -1, 2};
  ds.labels.num_classes = 3;
  ds.splits["mine"] = Split{{0, 4}, {1}, {2}};
  ds.default_split = "mine";
  return ds;
}

template <class T>
std::vector<T> values_of(const NpyArray& a) {
  std::vector<T> v(a.bytes.size() / sizeof(T));
  std::memcpy(v.data(), a.bytes.data(), a.bytes.size());
  return v;
}

TEST(NpzWriter, WritesTheDocumentedMembersWithExactDtypesAndValues) {
  const Dataset ds = small_directed_dataset();
  const TempDir dir;
  const auto path = dir / "members.npz";
  write_npz(ds, path);
  const auto arrays = read_npz(path);
  EXPECT_EQ(arrays.size(), 12u);
  // Row i lists the sources of the edges into i: row 0 = {1, 4}, row 1 = {0, 2}, row 3 = {1, 3}.
  const NpyArray& indptr = arrays.at("adj_indptr");
  EXPECT_EQ(indptr.dtype.descr, "<i8");
  EXPECT_EQ(values_of<int64_t>(indptr), (std::vector<int64_t>{0, 2, 4, 4, 6, 6}));
  const NpyArray& indices = arrays.at("adj_indices");
  EXPECT_EQ(indices.dtype.descr, "<i4");
  EXPECT_EQ(values_of<int32_t>(indices), (std::vector<int32_t>{1, 4, 0, 2, 1, 3}));
  const NpyArray& data = arrays.at("adj_data");
  EXPECT_EQ(data.dtype.descr, "<f4");
  EXPECT_EQ(values_of<float>(data), std::vector<float>(6, 1.f));
  EXPECT_EQ(values_of<int64_t>(arrays.at("adj_shape")), (std::vector<int64_t>{5, 5}));
  const NpyArray& flag = arrays.at("adj_rows_are_destinations");
  EXPECT_EQ(flag.dtype.descr, "|b1");
  EXPECT_TRUE(flag.shape.empty());
  EXPECT_EQ(flag.bytes, std::string(1, '\1'));
  const NpyArray& x = arrays.at("attr_matrix");
  EXPECT_EQ(x.dtype.descr, "<f4");
  EXPECT_EQ(x.shape, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(values_of<float>(x),
            (std::vector<float>{0.5f, -1.f, 2.f, 0.25f, 3.f, -0.125f, 7.f, 8.f, 1e-3f, -4.f}));
  EXPECT_EQ(arrays.at("labels").dtype.descr, "<i8");
  EXPECT_EQ(values_of<int64_t>(arrays.at("labels")), (std::vector<int64_t>{0, 2, 1, -1, 2}));
  EXPECT_EQ(values_of<int64_t>(arrays.at("idx_train")), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(values_of<int64_t>(arrays.at("idx_val")), (std::vector<int64_t>{1}));
  EXPECT_EQ(values_of<int64_t>(arrays.at("idx_test")), (std::vector<int64_t>{2}));
  EXPECT_EQ(arrays.at("split_names").dtype.descr, "<U4");
  EXPECT_EQ(arrays.at("split_names").to_strings(), std::vector<std::string>{"mine"});
  EXPECT_EQ(arrays.at("dataset_name").to_strings(), std::vector<std::string>{"small"});
  EXPECT_TRUE(arrays.at("dataset_name").shape.empty());
}

TEST(NpzWriter, RoundTripsThroughTheReaderKeepingEdgeDirections) {
  const Dataset ds = small_directed_dataset();
  const TempDir dir;
  const auto path = dir / "round_trip.npz";
  write_npz(ds, path);
  const Dataset back = load_npz(path);
  EXPECT_EQ(back.format, "npz");
  EXPECT_EQ(back.name, "small");  // the dataset's own name, not the file's
  const auto rp = ds.graph.row_ptr(), rp2 = back.graph.row_ptr();
  const auto ci = ds.graph.col_idx(), ci2 = back.graph.col_idx();
  EXPECT_EQ(std::vector<int64_t>(rp.begin(), rp.end()), std::vector<int64_t>(rp2.begin(), rp2.end()));
  EXPECT_EQ(std::vector<int32_t>(ci.begin(), ci.end()), std::vector<int32_t>(ci2.begin(), ci2.end()));
  EXPECT_TRUE(back.edge_weight.empty());
  ASSERT_FALSE(back.features.is_sparse());
  const Tensor& x = back.features.dense();
  EXPECT_EQ(std::vector<float>(x.data(), x.data() + x.numel()),
            std::vector<float>(ds.features.dense().data(), ds.features.dense().data() + 10));
  EXPECT_EQ(back.labels.classes, ds.labels.classes);
  EXPECT_EQ(back.labels.num_classes, 3);
  EXPECT_EQ(back.default_split, "mine");
  EXPECT_EQ(back.split().train, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(back.split().val, (std::vector<int64_t>{1}));
  EXPECT_EQ(back.split().test, (std::vector<int64_t>{2}));
}

TEST(NpzWriter, SparseFeaturesStaySparseAndEdgeWeightsAreKept) {
  Dataset ds = small_directed_dataset();
  const std::vector<int64_t> rows = {0, 3, 4};
  const std::vector<int64_t> cols = {1, 0, 1};
  const std::vector<float> vals = {2.f, -3.f, 0.5f};
  ds.features = Features(CsrMatrix::from_triplets(5, 2, rows, cols, vals));
  ds.edge_weight = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  const TempDir dir;
  const auto path = dir / "sparse.npz";
  write_npz(ds, path);
  const Dataset back = load_npz(path);
  ASSERT_TRUE(back.features.is_sparse());
  EXPECT_EQ(back.features.sparse(), ds.features.sparse());
  const Tensor x = back.features.to_dense();
  EXPECT_EQ(std::vector<float>(x.data(), x.data() + x.numel()),
            (std::vector<float>{0.f, 2.f, 0.f, 0.f, 0.f, 0.f, -3.f, 0.f, 0.f, 0.5f}));
  EXPECT_EQ(back.edge_weight, ds.edge_weight);
}

TEST(NpzWriter, EverySplitNamesAndTheDefaultRoundTrip) {
  Dataset ds = small_directed_dataset();
  ds.splits["alpha"] = Split{{1}, {2}, {0, 4}};               // sorts before the default
  ds.splits["r:3,8,10"] = Split{{2, 3}, {0}, {1}};            // any name
  ds.node_names = {"a", "b", "c", "d", "\xc3\xa9t\xc3\xa9"};  // UTF-8 ("ete" with accents)
  ds.labels.class_names = {"x", "y", "z"};
  const TempDir dir;
  write_npz(ds, dir / "all.npz");
  const Dataset back = load_npz(dir / "all.npz");
  EXPECT_EQ(back.default_split, "mine");
  ASSERT_EQ(back.splits.size(), 3u);
  for (const auto& [name, s] : ds.splits) {
    ASSERT_TRUE(back.splits.contains(name)) << name;
    EXPECT_EQ(back.splits.at(name).train, s.train) << name;
    EXPECT_EQ(back.splits.at(name).val, s.val) << name;
    EXPECT_EQ(back.splits.at(name).test, s.test) << name;
  }
  EXPECT_EQ(back.node_names, ds.node_names);
  EXPECT_EQ(back.labels.class_names, ds.labels.class_names);
  EXPECT_TRUE(back.notes.empty() ||
              std::none_of(back.notes.begin(), back.notes.end(), [](const std::string& n) {
                return n.find("ignored member") != std::string::npos;
              }));
}

TEST(NpzWriter, WhatTheLayoutCannotHoldIsRefusedNotDropped) {
  const TempDir dir;
  Dataset with_attr = small_directed_dataset();
  with_attr.edge_attr = Tensor({6, 2});
  expect_throw_naming<InvalidArgument>([&] { write_npz(with_attr, dir / "a.npz"); },
                                       {"dataset 'small' has edge attributes", "nothing was written"});
  EXPECT_FALSE(std::filesystem::exists(dir / "a.npz"));
  Dataset graphs = small_directed_dataset();
  graphs.graph_ptr = {0, 5};
  expect_throw_naming<InvalidArgument>([&] { write_npz(graphs, dir / "g.npz"); }, {"many graphs"});
}

TEST(NpzWriter, Zip64MembersReadBackAndExtraMembersAreAppended) {
  const Dataset ds = small_directed_dataset();
  NpzWriteOptions options;
  options.force_zip64 = true;
  const std::vector<float> a = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  options.extra.push_back({"att_src", make_npy(std::span<const float>(a), {2, 3})});
  const TempDir dir;
  const auto path = dir / "zip64.npz";
  write_npz(ds, path, options);
  const std::string bytes = read_file(path);
  const ZipArchive zip(bytes, path.string());
  ASSERT_EQ(zip.members().size(), 13u);
  EXPECT_EQ(zip.members().back().name, "att_src.npy");
  for (const ZipMember& m : zip.members()) EXPECT_EQ(m.method, 0) << m.name;
  const auto arrays = read_npz(path);
  EXPECT_EQ(arrays.at("att_src").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of<float>(arrays.at("att_src")), a);
  const Dataset back = load_npz(path);
  EXPECT_EQ(back.num_edges(), 6);
  EXPECT_EQ(back.split().train, (std::vector<int64_t>{0, 4}));
}

TEST(NpzWriter, NpyDataStartsAtA64ByteBoundaryWithAVersion1Header) {
  const std::vector<int64_t> v = {1, 2, 3};
  const std::string b = npy_bytes(make_npy(std::span<const int64_t>(v), {3}));
  // 10 bytes of magic, version and length + a 58-character dict + '\n' need 69 bytes -> 128.
  ASSERT_EQ(b.size(), 128u + 24u);
  EXPECT_EQ(b.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));  // header length 118
  EXPECT_EQ(b[127], '\n');
  EXPECT_NE(b.find("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
  EXPECT_EQ(parse_npy(b, "v").to_int64s(), v);
}

TEST(NpzWriter, RejectsMismatchedShapesAndDuplicateKeys) {
  const std::vector<float> v = {1.f, 2.f, 3.f};
  expect_throw_naming<InvalidArgument>(
      [&] {
        make_npy(std::span<const float>(v), {2, 2});
      },
      {"4 elements", "3 values"});
  const std::vector<NpzMember> members = {{"a", make_npy(std::span<const float>(v), {3})},
                                          {"a", make_npy(std::span<const float>(v), {3})}};
  expect_throw_naming<InvalidArgument>([&] { npz_bytes(members); }, {"'a'", "twice"});
}

TEST(NpzReader, RejectsAnIncompleteOrUnsortedSplit) {
  const Dataset ds = small_directed_dataset();
  auto members = dataset_npz_members(ds);
  std::erase_if(members, [](const NpzMember& m) { return m.key == "idx_val"; });
  expect_throw_naming<ParseError>([&] { load_npz_from_bytes(npz_bytes(members), "no_val.npz"); },
                                  {"no_val.npz", "idx_val"});
  auto unsorted = dataset_npz_members(ds);
  const std::vector<int64_t> train = {4, 0};
  for (NpzMember& m : unsorted)
    if (m.key == "idx_train") m.array = make_npy(std::span<const int64_t>(train), {2});
  expect_throw_naming<ParseError>([&] { load_npz_from_bytes(npz_bytes(unsorted), "unsorted.npz"); },
                                  {"unsorted.npz:idx_train.npy", "entry 1", "sorted"});
}

TEST(NpzReader, WithoutTheFlagRowsAreSourcesAsInGnnBenchmarkFiles) {
  auto members = dataset_npz_members(small_directed_dataset());
  std::erase_if(members, [](const NpzMember& m) { return m.key == "adj_rows_are_destinations"; });
  const Dataset reversed = load_npz_from_bytes(npz_bytes(members), "reversed.npz");
  // Stored row 0 = {1, 4} now means edges 0 -> 1 and 0 -> 4: node 1's row holds source 0.
  const auto row1 = reversed.graph.row(1);
  EXPECT_EQ(std::vector<int32_t>(row1.begin(), row1.end()), (std::vector<int32_t>{0, 3}));
}

}  // namespace
}  // namespace edgeattn::data
