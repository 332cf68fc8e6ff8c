#include "edgeattn/data/registry.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "edgeattn/core/file_io.hpp"
#include "edgeattn/core/sha256.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::TempDir;

const fs::path kShipped = fs::path(EDGEATTN_SOURCE_DIR) / "datasets";

LoadOptions at(const fs::path& root, const std::string& format = {}, bool verify = true) {
  LoadOptions o;
  o.root = root;
  o.format = format;
  o.verify = verify;
  return o;
}

// A private data root holding a copy of the shipped files of one dataset/format; removed with
// the returned TempDir.
TempDir copy_root(const std::string& dataset, const std::string& format) {
  TempDir root;
  fs::create_directories(root / dataset / format);
  for (const auto& e : fs::directory_iterator(kShipped / dataset / format))
    fs::copy_file(e.path(), root / dataset / format / e.path().filename());
  return root;
}

std::string gzip(const std::string& plain) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, plain.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  zs.avail_in = static_cast<uInt>(plain.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(Registry, ManifestListsEveryShippedFileWithItsContentChecksum) {
  int checked = 0;
  for (const ManifestEntry& e : manifest()) {
    fs::path stored = kShipped / e.path;
    if (!fs::exists(stored)) stored += ".gz";
    if (!fs::exists(stored)) continue;  // not shipped (e.g. ind.pubmed.allx)
    EXPECT_EQ(sha256_hex(read_file(stored)), e.sha256) << e.path;
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

TEST(Registry, LoadsCoraByNameAndRecordsVerifiedSources) {
  const Dataset cora = load_dataset("cora", at(kShipped));
  EXPECT_EQ(cora.name, "cora");
  EXPECT_EQ(cora.format, "planetoid");
  EXPECT_EQ(cora.num_nodes(), 2708);
  EXPECT_EQ(cora.num_edges(), 10556);
  EXPECT_EQ(cora.split().train.size(), 140u);
  ASSERT_EQ(cora.sources.size(), 8u);
  for (const SourceFile& s : cora.sources) EXPECT_EQ(s.sha256.size(), 64u) << s.path;
}

TEST(Registry, LinqsAndNpzFormatsGetASeededRandomSplit) {
  const Dataset a = load_dataset("cora", at(kShipped, "npz"));
  const Dataset b = load_dataset("cora", at(kShipped, "npz"));
  EXPECT_EQ(a.default_split, "random");
  EXPECT_EQ(a.split().train.size(), 140u);
  EXPECT_EQ(a.split().val.size(), 500u);
  EXPECT_EQ(a.split().test.size(), 1000u);
  EXPECT_EQ(a.split().train, b.split().train);
}

// As PyG's read_npz (CitationFull) and DGL's GNNBenchmarkDataset load these files: every stored
// edge in both directions, self-loops removed. Cora's 5429 stored edges are 5278 pairs; CiteSeer's
// 4715 include 124 self-loops and become 9072 edges (PyG 2.8.1's counts for both).
TEST(Registry, NamedNpzDatasetsAreUndirectedWithoutSelfLoopsAsPygLoadsThem) {
  for (const auto& [name, edges] :
       std::vector<std::pair<std::string, int64_t>>{{"cora", 10556}, {"citeseer", 9072}}) {
    const Dataset ds = load_dataset(name, at(kShipped, "npz"));
    EXPECT_EQ(ds.num_edges(), edges) << name;
    const Graph& g = ds.graph;
    std::set<std::pair<int64_t, int64_t>> pairs;
    for (int64_t dst = 0; dst < g.num_dst(); ++dst)
      for (int64_t e = g.row_ptr()[dst]; e < g.row_ptr()[dst + 1]; ++e) {
        EXPECT_NE(g.col_idx()[e], dst) << name << ": self-loop at node " << dst;
        pairs.emplace(g.col_idx()[e], dst);
      }
    for (const auto& [src, dst] : pairs)
      EXPECT_TRUE(pairs.count({dst, src})) << name << ": " << src << " -> " << dst;
  }
  // By path, the file loads as stored.
  EXPECT_EQ(load_dataset_path(kShipped / "cora/npz/cora.npz").num_edges(), 5429);
}

TEST(Registry, KarateLoadsWithItsTwoFactions) {
  const Dataset k = load_dataset("karate", at(kShipped));
  EXPECT_EQ(k.num_nodes(), 34);
  EXPECT_EQ(k.num_edges(), 156);
  EXPECT_EQ(k.num_classes(), 2);
}

TEST(Registry, AModifiedFileIsAChecksumErrorNamingBothDigests) {
  const TempDir root_dir = copy_root("cora", "planetoid");
  const fs::path& root = root_dir.path();
  std::string y = read_file(root / "cora/planetoid/ind.cora.y");
  y[y.size() / 2] ^= 1;
  write_file_atomic(root / "cora/planetoid/ind.cora.y", y);
  expect_throw_naming<ChecksumError>(
      [&] { load_dataset("cora", at(root)); },
      {"ind.cora.y", sha256_hex(y), "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1"});
  // Opting out of verification skips the check (the loader's own checks still apply) and says so.
  expect_throw_naming<ParseError>([&] { load_dataset("cora", at(root, "", false)); },
                                  {"ind.cora.y", "one-hot"});
  const Dataset ds = load_dataset("cora", at(kShipped, "", false));
  EXPECT_NE(
      std::find(ds.notes.begin(), ds.notes.end(), "checksums not verified (LoadOptions::verify = false)"),
      ds.notes.end());
}

TEST(Registry, AMissingFileNamesItsChecksumAndWhereItIsPublished) {
  const TempDir root_dir = copy_root("cora", "planetoid");
  const fs::path& root = root_dir.path();
  fs::remove(root / "cora/planetoid/ind.cora.tx");
  expect_throw_naming<IoError>(
      [&] { load_dataset("cora", at(root)); },
      {"ind.cora.tx", "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a", "148025 bytes",
       "https://github.com/kimiyoung/planetoid/raw/master/data/ind.cora.tx"});
}

TEST(Registry, PubmedWithoutAllxSaysWhichFileToFetch) {
  expect_throw_naming<IoError>(
      [&] { load_dataset("pubmed", at(kShipped)); },
      {"ind.pubmed.allx", "508e538e2abdccdd54c4d3e9f49d638b4af7107d85845f66ddea5a5152658b7e", "7578385 bytes",
       "kimiyoung/planetoid"});
}

TEST(Registry, AGzipCopyVerifiesByItsContent) {
  const TempDir root_dir = copy_root("cora", "planetoid");
  const fs::path& root = root_dir.path();
  const std::string tx = read_file(root / "cora/planetoid/ind.cora.tx");
  fs::remove(root / "cora/planetoid/ind.cora.tx");
  write_file_atomic(root / "cora/planetoid/ind.cora.tx.gz", gzip(tx));
  EXPECT_EQ(load_dataset("cora", at(root)).num_nodes(), 2708);
}

TEST(Registry, TheDataRootComesFromTheEnvironment) {
  const TempDir root_dir = copy_root("karate", "adjlist");
  const fs::path& root = root_dir.path();
  ::setenv("EDGEATTN_DATA", root.c_str(), 1);
  EXPECT_EQ(default_data_root(), root);
  EXPECT_EQ(load_dataset("karate").num_nodes(), 34);
  fs::remove(root / "karate/adjlist/karate.adjlist");
  expect_throw_naming<IoError>([&] { load_dataset("karate"); }, {root.string(), "karate.adjlist"});
  ::unsetenv("EDGEATTN_DATA");
}

TEST(Registry, UnknownNamesAndFormatsListTheKnownOnes) {
  // Every known name, in sorted order.
  std::string known;
  for (const std::string& name : dataset_names()) known += (known.empty() ? "" : ", ") + name;
  expect_throw_naming<InvalidArgument>([] { load_dataset("corra"); },
                                       {"'corra'", "(known: " + known + ";", "load_dataset_path"});
  // A path given as a name: the error says it exists and which function reads it.
  const std::string file = (kShipped / "karate/adjlist/karate.adjlist").string();
  expect_throw_naming<InvalidArgument>([&] { load_dataset(file); },
                                       {"'" + file + "'", "existing file", "load_dataset_path"});
  const std::string dir = (kShipped / "cora/planetoid").string();
  expect_throw_naming<InvalidArgument>([&] { load_dataset(dir); },
                                       {"existing directory", "load_dataset_path"});
  EXPECT_THAT(known,
              ::testing::HasSubstr("citeseer, coauthor-cs, coauthor-physics, collab, cora, cora-full"));
  expect_throw_naming<InvalidArgument>([] { load_dataset("karate", at({}, "npz")); },
                                       {"no format 'npz'", "adjlist"});
}

TEST(Registry, PathsLoadInAnySupportedFormat) {
  EXPECT_EQ(load_dataset_path(kShipped / "cora/planetoid").num_nodes(), 2708);
  EXPECT_EQ(load_dataset_path(kShipped / "citeseer/npz/citeseer.npz").num_nodes(), 3312);
  EXPECT_EQ(load_dataset_path(kShipped / "cora/linqs").num_nodes(), 2708);
  EXPECT_EQ(load_dataset_path(kShipped / "karate/adjlist/karate.adjlist").num_nodes(), 34);
  expect_throw_naming<IoError>([] { load_dataset_path("/no/such/graph.mtx"); }, {"/no/such/graph.mtx"});
  expect_throw_naming<InvalidArgument>([] { load_dataset_path(""); }, {"the path is empty"});
  {
    // A LINQS directory too small for the default split (20 per class / 500 / 1000) loads without
    // one, saying why, instead of failing the load.
    const TempDir small;
    write_file_atomic(small.path() / "cora.content", "p1\t1\t0\tA\np2\t0\t1\tB\np3\t1\t1\tA\n");
    write_file_atomic(small.path() / "cora.cites", "p1\tp2\np2\tp3\n");
    const Dataset ds = load_dataset_path(small.path());
    EXPECT_EQ(ds.num_nodes(), 3);
    EXPECT_TRUE(ds.splits.empty());
    EXPECT_TRUE(std::any_of(ds.notes.begin(), ds.notes.end(), [](const std::string& n) {
      return n.find("no split: the files carry none, and the default one") != std::string::npos &&
             n.find("--split random:P,V,T") != std::string::npos;
    }));
  }
  // A device is no dataset (it read as an empty graph), and a FIFO must not block the load.
  expect_throw_naming<IoError>([] { load_dataset_path("/dev/urandom"); },
                               {"/dev/urandom", "not a regular file"});
  const TempDir dir;
  const auto fifo = dir.path() / "edges.txt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_throw_naming<IoError>([&] { load_dataset_path(fifo); }, {fifo.string(), "not a regular file"});
}

}  // namespace
}  // namespace edgeattn::data
