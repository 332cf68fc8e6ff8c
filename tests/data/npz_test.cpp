#include "edgeattn/data/npz.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>

#include "data/zip_archive.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/npy.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::make_zip;
using edgeattn::testing::npy_bytes;
using edgeattn::testing::raw;
using edgeattn::testing::ZipEntry;

const std::string kDatasets = std::string(EDGEATTN_SOURCE_DIR) + "/datasets";
const std::string kFixtures = std::string(EDGEATTN_SOURCE_DIR) + "/tests/data/fixtures/npz";

/// Options without designated initializers (GCC 12 warns about the members they leave out).
NpzOptions opts(bool undirected, SelfLoops loops = SelfLoops::keep, std::string name = {}) {
  NpzOptions o;
  o.undirected = undirected;
  o.self_loops = loops;
  o.name = std::move(name);
  return o;
}

std::vector<int64_t> row_ptr(const Graph& g) { return {g.row_ptr().begin(), g.row_ptr().end()}; }
std::vector<int32_t> col_idx(const Graph& g) { return {g.col_idx().begin(), g.col_idx().end()}; }

/// Unique unordered non-self pairs {u, v} among the graph's edges.
int64_t undirected_pairs(const Graph& g) {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (int64_t v = 0; v < g.num_dst(); ++v)
    for (const int32_t u : g.row(v))
      if (u != v)
        pairs.emplace_back(std::min<int32_t>(u, static_cast<int32_t>(v)),
                           std::max<int32_t>(u, static_cast<int32_t>(v)));
  std::sort(pairs.begin(), pairs.end());
  return std::unique(pairs.begin(), pairs.end()) - pairs.begin();
}

std::map<std::string, int> class_histogram(const Dataset& ds) {
  std::map<std::string, int> h;
  for (const int32_t c : ds.labels.classes) ++h[ds.labels.class_names.at(static_cast<size_t>(c))];
  return h;
}

// --- the shipped gnn-benchmark files (statistics from datasets/PROVENANCE.md §3.2-3.3) -----------

TEST(LoadNpz, CoraHasTheRecordedStatistics) {
  const Dataset ds = load_npz(kDatasets + "/cora/npz/cora.npz");
  EXPECT_EQ(ds.name, "cora");
  EXPECT_EQ(ds.format, "npz");
  EXPECT_EQ(ds.num_nodes(), 2708);
  EXPECT_EQ(ds.num_edges(), 5429);
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 0);
  EXPECT_EQ(undirected_pairs(ds.graph), 5278);
  EXPECT_TRUE(ds.edge_weight.empty());
  ASSERT_TRUE(ds.features.is_sparse());
  EXPECT_EQ(ds.num_features(), 1433);
  EXPECT_EQ(ds.features.nnz(), 49216);
  const auto values = ds.features.sparse().values();
  EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](float x) { return x == 1.f; }));
  EXPECT_EQ(ds.num_classes(), 7);
  EXPECT_EQ(class_histogram(ds), (std::map<std::string, int>{{"Case_Based", 298},
                                                             {"Genetic_Algorithms", 418},
                                                             {"Neural_Networks", 818},
                                                             {"Probabilistic_Methods", 426},
                                                             {"Reinforcement_Learning", 217},
                                                             {"Rule_Learning", 180},
                                                             {"Theory", 351}}));
  EXPECT_EQ(ds.node_names.size(), 2708u);
  EXPECT_TRUE(ds.splits.empty());
  EXPECT_TRUE(ds.default_split.empty());
  ASSERT_EQ(ds.sources.size(), 1u);
  EXPECT_EQ(ds.sources[0].bytes, 540580);  // PROVENANCE.md §1
}

TEST(LoadNpz, CoraUndirectedHasBothDirectionsOfEveryPair) {
  const Dataset ds = load_npz(kDatasets + "/cora/npz/cora.npz", opts(true));
  EXPECT_EQ(ds.num_edges(), 2 * 5278);
  EXPECT_EQ(undirected_pairs(ds.graph), 5278);
}

TEST(LoadNpz, CiteseerHasTheRecordedStatistics) {
  const Dataset ds = load_npz(kDatasets + "/citeseer/npz/citeseer.npz");
  EXPECT_EQ(ds.num_nodes(), 3312);
  EXPECT_EQ(ds.num_edges(), 4715);
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 124);
  EXPECT_EQ(undirected_pairs(ds.graph), 4536);
  EXPECT_EQ(ds.num_features(), 3703);
  EXPECT_EQ(ds.features.nnz(), 105165);
  EXPECT_EQ(ds.num_classes(), 6);
  EXPECT_EQ(class_histogram(ds),
            (std::map<std::string, int>{
                {"Agents", 596}, {"AI", 249}, {"DB", 701}, {"IR", 668}, {"ML", 590}, {"HCI", 508}}));
}

TEST(LoadNpz, CiteseerSelfLoopPolicies) {
  const std::string path = kDatasets + "/citeseer/npz/citeseer.npz";
  const Dataset removed = load_npz(path, opts(false, SelfLoops::remove));
  EXPECT_EQ(removed.num_edges(), 4715 - 124);
  EXPECT_EQ(removed.graph.degree_stats().self_loops, 0);
  const Dataset sym = load_npz(path, opts(true));
  EXPECT_EQ(sym.num_edges(), 2 * 4536 + 124);
  const Dataset sym_no_loops = load_npz(path, opts(true, SelfLoops::remove));
  EXPECT_EQ(sym_no_loops.num_edges(), 2 * 4536);
  const Dataset added = load_npz(path, opts(true, SelfLoops::add));
  EXPECT_EQ(added.num_edges(), 2 * 4536 + 3312);
  EXPECT_TRUE(added.edge_weight.empty());
}

TEST(LoadNpz, RecompressedCoraWithDeflateAndZip64LoadsIdentically) {
  // Every member of the shipped (stored) archive, re-packed deflated with numpy's ZIP64 local
  // headers, a ZIP64 end record, and (for half the members) data descriptors.
  const std::string stored = read_file(kDatasets + "/cora/npz/cora.npz");
  const ZipArchive zip(stored, "cora.npz");
  std::vector<ZipEntry> entries;
  for (size_t i = 0; i < zip.members().size(); ++i) {
    const ZipMember& m = zip.members()[i];
    entries.push_back({.name = m.name,
                       .data = zip.extract(m),
                       .deflate = true,
                       .local_zip64 = true,
                       .central_zip64 = i % 3 == 0,
                       .descriptor = i % 2 == 0});
  }
  const std::string repacked = make_zip(entries, true);
  EXPECT_LT(repacked.size(), stored.size() / 2);
  const Dataset a = load_npz(kDatasets + "/cora/npz/cora.npz");
  const Dataset b = load_npz_from_bytes(repacked, "cora-deflated.npz", opts(false, SelfLoops::keep, "cora"));
  EXPECT_EQ(row_ptr(a.graph), row_ptr(b.graph));
  EXPECT_EQ(col_idx(a.graph), col_idx(b.graph));
  EXPECT_EQ(a.features.sparse(), b.features.sparse());
  EXPECT_EQ(a.labels.classes, b.labels.classes);
  EXPECT_EQ(a.labels.class_names, b.labels.class_names);
  EXPECT_EQ(a.node_names, b.node_names);
}

TEST(LoadNpz, MappedFileGzipCopyAndBytesAllGiveTheSameDataset) {
  // load_npz maps the file and releases each member's pages as it goes; a gzip copy goes through
  // memory instead; load_npz_from_bytes reads a buffer. All three must agree.
  const std::string path = kDatasets + "/cora/npz/cora.npz";
  const std::string bytes = read_file(path);
  const edgeattn::testing::TempDir dir;
  const std::filesystem::path gz = dir / "cora_copy.npz";
  write_file_atomic(gz, edgeattn::testing::gzip(bytes));
  const Dataset mapped = load_npz(path);
  const Dataset from_gz = load_npz(gz, opts(false, SelfLoops::keep, "cora"));
  const Dataset from_bytes = load_npz_from_bytes(bytes, path);
  for (const Dataset* other : {&from_gz, &from_bytes}) {
    EXPECT_EQ(row_ptr(mapped.graph), row_ptr(other->graph));
    EXPECT_EQ(col_idx(mapped.graph), col_idx(other->graph));
    EXPECT_EQ(mapped.features.sparse(), other->features.sparse());
    EXPECT_EQ(mapped.labels.classes, other->labels.classes);
    EXPECT_EQ(mapped.node_names, other->node_names);
  }
}

TEST(LoadNpz, ConsumedArraysGiveTheSameDatasetAsBorrowedOnes) {
  const std::string path = kFixtures + "/tiny_stored.npz";
  std::map<std::string, NpyArray> arrays = parse_npz(read_file(path), path);
  const Dataset borrowed = dataset_from_npz_arrays(arrays, path);
  ASSERT_FALSE(arrays.empty());
  const Dataset consumed = dataset_from_npz_arrays(std::move(arrays), path);
  EXPECT_EQ(row_ptr(borrowed.graph), row_ptr(consumed.graph));
  EXPECT_EQ(col_idx(borrowed.graph), col_idx(consumed.graph));
  EXPECT_EQ(borrowed.edge_weight, consumed.edge_weight);
  const Tensor a = borrowed.features.to_dense(), b = consumed.features.to_dense();
  EXPECT_EQ(std::vector<float>(a.span().begin(), a.span().end()),
            std::vector<float>(b.span().begin(), b.span().end()));
  EXPECT_EQ(borrowed.labels.classes, consumed.labels.classes);
  EXPECT_EQ(borrowed.node_names, consumed.node_names);
}

// --- a 4-node file written by Python's zipfile as numpy does (see fixtures/npz/README.md) --------
//   stored entries r -> c: 0->1, 1->0, 1->2, 2->0 (weight 2.5), 3->3

TEST(LoadNpz, TinyFileAsStoredKeepsDirectionAndWeights) {
  for (const char* file : {"tiny_stored.npz", "tiny_deflated.npz", "tiny_streamed.npz"}) {
    SCOPED_TRACE(file);
    const Dataset ds = load_npz(kFixtures + "/" + file);
    EXPECT_EQ(ds.name, std::string(file).substr(0, std::string(file).size() - 4));
    // Row = destination: row 0 holds sources 1 and 2.
    EXPECT_EQ(row_ptr(ds.graph), (std::vector<int64_t>{0, 2, 3, 4, 5}));
    EXPECT_EQ(col_idx(ds.graph), (std::vector<int32_t>{1, 2, 0, 1, 3}));
    EXPECT_EQ(ds.edge_weight, (std::vector<float>{1, 2.5f, 1, 1, 1}));
    const Tensor x = ds.features.to_dense();
    EXPECT_EQ(std::vector<float>(x.span().begin(), x.span().end()),
              (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 2, 3, 4, 0, 0}));
    EXPECT_EQ(ds.labels.classes, (std::vector<int32_t>{0, 2, 1, 2}));
    EXPECT_EQ(ds.labels.class_names, (std::vector<std::string>{"alpha", "beta", "gamma"}));
    EXPECT_EQ(ds.num_classes(), 3);
    EXPECT_EQ(ds.node_names, (std::vector<std::string>{"n0", "n1",
                                                       "n\xC3\xA9"
                                                       "2",
                                                       "n3"}));
  }
}

TEST(LoadNpz, TinyFileUndirectedTakesStoredWeightsAndMirrorsTheRest) {
  const Dataset ds = load_npz(kFixtures + "/tiny_deflated.npz", opts(true));
  EXPECT_EQ(row_ptr(ds.graph), (std::vector<int64_t>{0, 2, 4, 6, 7}));
  EXPECT_EQ(col_idx(ds.graph), (std::vector<int32_t>{1, 2, 0, 2, 0, 1, 3}));
  EXPECT_EQ(ds.edge_weight, (std::vector<float>{1, 2.5f, 1, 1, 2.5f, 1, 1}));
  const Dataset no_loops = load_npz(kFixtures + "/tiny_deflated.npz", opts(true, SelfLoops::remove));
  EXPECT_EQ(row_ptr(no_loops.graph), (std::vector<int64_t>{0, 2, 4, 6, 6}));
  EXPECT_EQ(no_loops.edge_weight, (std::vector<float>{1, 2.5f, 1, 1, 2.5f, 1}));
}

// --- layouts built in the test --------------------------------------------------------------------

std::map<std::string, std::string> csr_adjacency_3() {
  // 3 nodes, entries 0->1, 0->2, 2->1, weights 1
  return {{"adj_data", npy_bytes("<f4", {3}, raw<float>({1, 1, 1}))},
          {"adj_indices", npy_bytes("<i8", {3}, raw<int64_t>({1, 2, 1}))},
          {"adj_indptr", npy_bytes("<i8", {4}, raw<int64_t>({0, 2, 2, 3}))},
          {"adj_shape", npy_bytes("<i8", {2}, raw<int64_t>({3, 3}))}};
}

std::string zip_of(const std::map<std::string, std::string>& members) {
  std::vector<ZipEntry> entries;
  for (const auto& [k, v] : members) entries.push_back({.name = k + ".npy", .data = v, .deflate = true});
  return make_zip(entries);
}

TEST(LoadNpz, DenseMatricesAndMultiLabelLabels) {
  const std::map<std::string, std::string> m = {
      {"adj_matrix", npy_bytes("<f8", {2, 2}, raw<double>({0, 1, 0, 0}))},
      {"attr_matrix", npy_bytes("<f4", {2, 3}, raw<float>({1, 2, 3, 4, 5, 6}))},
      {"labels", npy_bytes("|b1", {2, 2}, raw<uint8_t>({1, 1, 0, 1}))}};
  const Dataset ds = load_npz_from_bytes(zip_of(m), "dense.npz");
  EXPECT_EQ(row_ptr(ds.graph), (std::vector<int64_t>{0, 0, 1}));  // 0 -> 1
  EXPECT_EQ(col_idx(ds.graph), (std::vector<int32_t>{0}));
  EXPECT_FALSE(ds.features.is_sparse());
  EXPECT_EQ(ds.features.dense()(1, 2), 6.f);
  ASSERT_TRUE(ds.labels.multi_label());
  EXPECT_EQ(ds.num_classes(), 2);
  EXPECT_EQ(ds.labels.multi_hot(1, 0), 0.f);
  EXPECT_EQ(ds.labels.multi_hot(1, 1), 1.f);
}

// A stored (uncompressed) float32 attr_matrix in C order is copied from the archive straight into
// the features tensor; every other layout goes through an NpyArray. Both give the same features.
std::string zip_with_attr(const std::map<std::string, std::string>& members, const std::string& attr,
                          bool deflate_attr) {
  std::vector<ZipEntry> entries;
  for (const auto& [k, v] : members) entries.push_back({.name = k + ".npy", .data = v, .deflate = true});
  entries.push_back({.name = "attr_matrix.npy", .data = attr, .deflate = deflate_attr});
  return make_zip(entries);
}

std::vector<float> dense_values(const Dataset& ds) {
  const Tensor& f = ds.features.dense();
  return {f.span().begin(), f.span().end()};
}

TEST(LoadNpz, StoredFloat32FeaturesMatchEveryOtherLayout) {
  auto m = csr_adjacency_3();
  m["attr_names"] = npy_bytes("<U1", {4}, raw<uint32_t>({'a', 'b', 'c', 'd'}));
  const std::vector<float> values = {0.5f, -1.f, 2.f, 3.25f, 4.f, 5.f, -6.f, 7.f, 8.f, 9.5f, 10.f, 11.f};
  const std::string c_order = npy_bytes("<f4", {3, 4}, raw<float>(std::vector<float>(values)));
  const Dataset stored = load_npz_from_bytes(zip_with_attr(m, c_order, false), "stored.npz");
  ASSERT_FALSE(stored.features.is_sparse());
  EXPECT_EQ(stored.features.rows(), 3);
  EXPECT_EQ(stored.features.cols(), 4);
  EXPECT_EQ(dense_values(stored), values);
  // deflated (the NpyArray path), float64, big-endian and Fortran order: the same values
  EXPECT_EQ(dense_values(load_npz_from_bytes(zip_with_attr(m, c_order, true), "deflated.npz")), values);
  std::vector<double> as_double(values.begin(), values.end());
  EXPECT_EQ(
      dense_values(load_npz_from_bytes(
          zip_with_attr(m, npy_bytes("<f8", {3, 4}, raw<double>(std::move(as_double))), false), "f8.npz")),
      values);
  std::string swapped = raw<float>(std::vector<float>(values));
  for (size_t i = 0; i < swapped.size(); i += 4) std::reverse(swapped.begin() + i, swapped.begin() + i + 4);
  EXPECT_EQ(
      dense_values(load_npz_from_bytes(zip_with_attr(m, npy_bytes(">f4", {3, 4}, swapped), false), "be.npz")),
      values);
  std::vector<float> columns;
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 3; ++r) columns.push_back(values[static_cast<size_t>(r * 4 + c)]);
  EXPECT_EQ(
      dense_values(load_npz_from_bytes(
          zip_with_attr(m, npy_bytes("<f4", {3, 4}, raw<float>(std::move(columns)), /*fortran=*/true), false),
          "fortran.npz")),
      values);
}

TEST(LoadNpz, StoredFloat32FeaturesWithTheWrongShapeNameTheMember) {
  const auto m = csr_adjacency_3();
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(zip_with_attr(m, npy_bytes("<f4", {2, 2}, raw<float>({1, 2, 3, 4})), false),
                                  "rows.npz");
      },
      {"rows.npz:attr_matrix.npy", "2 rows, expected one per node (3)"});
  // data shorter than the header says: the general path's error, naming the member
  std::string short_data = npy_bytes("<f4", {3, 2}, raw<float>({1, 2, 3, 4, 5, 6}));
  short_data.resize(short_data.size() - 4);
  expect_throw_naming<ParseError>(
      [&] { (void)load_npz_from_bytes(zip_with_attr(m, short_data, false), "short.npz"); },
      {"short.npz:attr_matrix.npy", "expected 24"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(zip_with_attr(m, npy_bytes("<f4", {3}, raw<float>({1, 2, 3})), false),
                                  "rank.npz");
      },
      {"rank.npz:attr_matrix.npy"});
}

TEST(LoadNpz, CsrMultiLabelsAndUnsortedFeatureColumns) {
  auto m = csr_adjacency_3();
  m["labels_data"] = npy_bytes("<f4", {3}, raw<float>({1, 1, 1}));
  m["labels_indices"] = npy_bytes("<i4", {3}, raw<int32_t>({2, 0, 1}));
  m["labels_indptr"] = npy_bytes("<i4", {4}, raw<int32_t>({0, 2, 2, 3}));
  m["labels_shape"] = npy_bytes("<i8", {2}, raw<int64_t>({3, 3}));
  // row 0 lists columns 3, 1, 3: repeats are summed, as scipy does
  m["attr_data"] = npy_bytes("<f4", {3}, raw<float>({1, 2, 4}));
  m["attr_indices"] = npy_bytes("<i4", {3}, raw<int32_t>({3, 1, 3}));
  m["attr_indptr"] = npy_bytes("<i4", {4}, raw<int32_t>({0, 3, 3, 3}));
  m["attr_shape"] = npy_bytes("<i8", {2}, raw<int64_t>({3, 4}));
  const Dataset ds = load_npz_from_bytes(zip_of(m), "ml.npz");
  ASSERT_TRUE(ds.labels.multi_label());
  const Tensor& y = ds.labels.multi_hot;
  EXPECT_EQ(std::vector<float>(y.span().begin(), y.span().end()),
            (std::vector<float>{1, 0, 1, 0, 0, 0, 0, 1, 0}));
  const auto& f = ds.features.sparse();
  EXPECT_EQ(std::vector<int32_t>(f.row_indices(0).begin(), f.row_indices(0).end()),
            (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(std::vector<float>(f.row_values(0).begin(), f.row_values(0).end()), (std::vector<float>{2, 5}));
}

TEST(LoadNpz, NotesIgnoredMembersAndSkipsPickledNames) {
  auto m = csr_adjacency_3();
  m["idx_to_node"] = npy_bytes("|O", {1}, "\x80\x02}q\x00.");
  m["node_names"] = npy_bytes("|O", {3}, "\x80\x02]q\x00.");
  m["labels"] = npy_bytes("<i8", {3}, raw<int64_t>({0, -1, 1}));
  const Dataset ds = load_npz_from_bytes(zip_of(m), "extra.npz");
  EXPECT_EQ(ds.labels.classes, (std::vector<int32_t>{0, -1, 1}));
  EXPECT_EQ(ds.num_classes(), 2);
  EXPECT_TRUE(ds.node_names.empty());
  const auto has_note = [&](const std::string& needle) {
    return std::any_of(ds.notes.begin(), ds.notes.end(),
                       [&](const std::string& n) { return n.find(needle) != std::string::npos; });
  };
  EXPECT_TRUE(has_note("ignored member 'idx_to_node.npy'"));
  EXPECT_TRUE(has_note("node_names.npy: pickled object array"));
}

TEST(LoadNpz, InconsistentArraysAreParseErrorsNamingTheMember) {
  const auto with = [](const std::string& key, const std::string& value) {
    auto m = csr_adjacency_3();
    m[key] = value;
    return zip_of(m);
  };
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(with("adj_indptr", npy_bytes("<i8", {3}, raw<int64_t>({0, 2, 3}))),
                                  "e.npz");
      },
      {"e.npz:adj_indptr.npy", "3 entries", "expected adj_shape[0] + 1 = 4"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(with("adj_indices", npy_bytes("<i8", {3}, raw<int64_t>({1, 7, 1}))),
                                  "e.npz");
      },
      {"e.npz:adj_indices.npy", "entry 1 is 7", "[0, 3)"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(with("adj_indptr", npy_bytes("<i8", {4}, raw<int64_t>({0, 2, 1, 3}))),
                                  "e.npz");
      },
      {"e.npz:adj_indptr.npy", "entry 2 (1) is less than entry 1 (2)"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(with("adj_shape", npy_bytes("<i8", {2}, raw<int64_t>({3, 4}))), "e.npz");
      },
      {"e.npz", "square"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(with("labels", npy_bytes("<i8", {2}, raw<int64_t>({0, 1}))), "e.npz");
      },
      {"e.npz:labels.npy", "2 labels", "one per node (3)"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(with("labels", npy_bytes("<f4", {3}, raw<float>({0, 0.5f, 1}))), "e.npz");
      },
      {"e.npz:labels.npy", "element 1", "0.5"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(with("labels", npy_bytes("<i4", {3}, raw<int32_t>({0, -2, 1}))), "e.npz");
      },
      {"e.npz:labels.npy", "node 1 has label -2"});
  expect_throw_naming<ParseError>(
      [&] {
        auto m = csr_adjacency_3();
        m["labels"] = npy_bytes("<i4", {3}, raw<int32_t>({0, 1, 2}));
        m["class_names"] = npy_bytes("<U1", {2}, edgeattn::testing::utf32({"a", "b"}, 1));
        (void)load_npz_from_bytes(zip_of(m), "e.npz");
      },
      {"e.npz:labels.npy", "node 2 has label 2", "class_names lists only 2"});
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(
            with("node_names", npy_bytes("<U1", {1}, edgeattn::testing::utf32({"a"}, 1))), "e.npz");
      },
      {"e.npz:node_names.npy", "1 names", "one per node (3)"});
  expect_throw_naming<ParseError>(
      [&] {
        auto m = csr_adjacency_3();
        m.erase("adj_indices");
        (void)load_npz_from_bytes(zip_of(m), "e.npz");
      },
      {"e.npz", "'adj_data' but no 'adj_indices'"});
  expect_throw_naming<ParseError>([&] { (void)load_npz_from_bytes(zip_of({}), "empty.npz"); },
                                  {"empty.npz", "no adjacency"});
  // Two adjacencies: neither is dropped silently.
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(
            with("adj_matrix", npy_bytes("<f4", {3, 3}, raw<float>({1, 0, 0, 0, 1, 0, 0, 0, 1}))), "e.npz");
      },
      {"e.npz", "both adj_matrix and sparse adj_*"});
  // The direction flag is a boolean, not any integer.
  expect_throw_naming<ParseError>(
      [&] {
        (void)load_npz_from_bytes(with("adj_rows_are_destinations", npy_bytes("<i8", {}, raw<int64_t>({5}))),
                                  "e.npz");
      },
      {"adj_rows_are_destinations", "expected a boolean (0 or 1), found 5"});
  // NaN edge weights, as the text formats refuse them.
  expect_throw_naming<InvalidArgument>(
      [&] {
        (void)load_npz_from_bytes(
            with("adj_data",
                 npy_bytes("<f4", {3}, raw<float>({1.f, std::numeric_limits<float>::quiet_NaN(), 1.f}))),
            "e.npz");
      },
      {"the weight of edge", "is nan"});
}

TEST(LoadNpz, MissingFileIsAnIoErrorNamingIt) {
  expect_throw_naming<IoError>([] { (void)load_npz("/nonexistent/cora.npz"); }, {"/nonexistent/cora.npz"});
}

}  // namespace
}  // namespace edgeattn::data
