// Named datasets fetched through the registry from a loopback server: OGB's zip unpacked whole,
// LINQS members taken out of a .tgz and verified, single files verified, the bundled part of a
// dataset completed in the cache, and the errors of offline mode and missing files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "edgeattn/core/file_io.hpp"
#include "edgeattn/core/sha256.hpp"
#include "edgeattn/data/registry.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"
#include "support/http_server.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::gzip;
using edgeattn::testing::HttpServer;
using edgeattn::testing::make_tar;
using edgeattn::testing::make_zip;

const fs::path kShipped = fs::path(EDGEATTN_SOURCE_DIR) / "datasets";

// A bundled file's content (it may be stored as .gz).
std::string shipped(const std::string& rel) { return read_file(find_plain_or_gz(kShipped / rel).value()); }

// OGB's arxiv.zip layout (arxiv/raw, arxiv/split/time, arxiv/mapping), five nodes.
std::string ogb_zip() {
  return make_zip({{.name = "arxiv/raw/num-node-list.csv.gz", .data = gzip("5\n")},
                   {.name = "arxiv/raw/num-edge-list.csv.gz", .data = gzip("4\n")},
                   {.name = "arxiv/raw/edge.csv.gz", .data = gzip("0,1\n1,2\n2,0\n3,4\n")},
                   {.name = "arxiv/raw/node-feat.csv.gz", .data = gzip("1,0\n0,1\n1,1\n0,0\n2,2\n")},
                   {.name = "arxiv/raw/node-label.csv.gz", .data = gzip("0\n1\n0\n1\n0\n")},
                   {.name = "arxiv/raw/node_year.csv.gz", .data = gzip("2019\n2019\n2020\n2020\n2020\n")},
                   {.name = "arxiv/split/time/train.csv.gz", .data = gzip("0\n1\n")},
                   {.name = "arxiv/split/time/valid.csv.gz", .data = gzip("2\n")},
                   {.name = "arxiv/split/time/test.csv.gz", .data = gzip("3\n4\n")},
                   {.name = "arxiv/mapping/README.md", .data = "mapping\n", .deflate = true}});
}

class RegistryDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.root = root_;
    options_.download_options.offline = false;  // ctest runs with EDGEATTN_OFFLINE=1; this is loopback
    options_.download_options.mirror.clear();
    options_.download_options.retry_delay = std::chrono::milliseconds(10);
    options_.download_options.max_attempts = 2;
    options_.download_options.progress_bar = false;
    options_.log = [this](const std::string& line) { log_.push_back(line); };
  }
  LoadOptions with(const std::vector<ManifestEntry>& m, const std::string& format = {}) {
    manifest_ = m;
    LoadOptions o = options_;
    o.manifest = manifest_;
    o.format = format;
    return o;
  }
  ManifestEntry arxiv_row() const {
    return {.dataset = "ogbn-arxiv",
            .format = "ogb",
            .path = "ogbn-arxiv/ogb/",
            .sha256 = {},
            .bytes = -1,
            .url = server_.url("/ogb/arxiv.zip"),
            .member = "arxiv/"};
  }
  void serve_cora_tgz(const std::string& content) {
    server_.serve("/lbc/cora.tgz",
                  gzip(make_tar({{.name = "cora/README", .data = shipped("cora/linqs/README")},
                                 {.name = "cora/cora.cites", .data = shipped("cora/linqs/cora.cites")},
                                 {.name = "cora/cora.content", .data = content}})));
  }

  edgeattn::testing::TempDir temp_;
  fs::path root_ = temp_.path();
  LoadOptions options_;
  std::vector<ManifestEntry> manifest_;
  std::vector<std::string> log_;
  HttpServer server_;
};

TEST_F(RegistryDownload, AnOgbArchiveIsDownloadedUnpackedAndLoadedWithItsOfficialSplit) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  server_.serve("/ogb/arxiv.zip", ogb_zip());
  const LoadOptions o = with({arxiv_row()});
  const Dataset ds = load_dataset("ogbn-arxiv", o);
  EXPECT_EQ(ds.name, "ogbn-arxiv");
  EXPECT_EQ(ds.num_nodes(), 5);
  EXPECT_EQ(ds.num_edges(), 4);  // arxiv stays directed, as OGB stores it
  EXPECT_EQ(ds.default_split, "time");
  EXPECT_EQ(ds.split().train, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(fs::is_regular_file(root_ / "ogbn-arxiv/ogb/mapping/README.md"));
  // The archive and the staging tree are gone; only the unpacked directory stays.
  EXPECT_TRUE(fs::is_empty(root_ / ".downloads"));
  ASSERT_EQ(log_.size(), 2u);
  EXPECT_NE(log_[0].find("downloading " + server_.url("/ogb/arxiv.zip")), std::string::npos);

  // The second load finds the directory: no request, even offline.
  LoadOptions offline = o;
  offline.download_options.offline = true;
  EXPECT_EQ(load_dataset("ogbn-arxiv", offline).num_nodes(), 5);
  EXPECT_EQ(server_.requests("/ogb/arxiv.zip"), 1);
}

TEST_F(RegistryDownload, OgbnProteinsGetsNodeFeaturesFromItsEdgesAndOgbsRocAucMetric) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  // proteins.zip's layout: 112 binary tasks (3 here), 8 edge features (2 here), no node features.
  server_.serve(
      "/ogb/proteins.zip",
      make_zip({{.name = "proteins/raw/num-node-list.csv.gz", .data = gzip("4\n")},
                {.name = "proteins/raw/num-edge-list.csv.gz", .data = gzip("3\n")},
                {.name = "proteins/raw/edge.csv.gz", .data = gzip("0,1\n1,2\n2,3\n")},
                {.name = "proteins/raw/edge-feat.csv.gz", .data = gzip("0.5,1\n0.25,0\n1,1\n")},
                {.name = "proteins/raw/node-label.csv.gz", .data = gzip("1,0,1\n0,0,1\n1,1,0\n0,1,0\n")},
                {.name = "proteins/raw/node_species.csv.gz", .data = gzip("3702\n3702\n4932\n4932\n")},
                {.name = "proteins/split/species/train.csv.gz", .data = gzip("0\n1\n")},
                {.name = "proteins/split/species/valid.csv.gz", .data = gzip("2\n")},
                {.name = "proteins/split/species/test.csv.gz", .data = gzip("3\n")}}));
  const Dataset ds = load_dataset("ogbn-proteins", with({{.dataset = "ogbn-proteins",
                                                          .format = "ogb",
                                                          .path = "ogbn-proteins/ogb/",
                                                          .sha256 = {},
                                                          .bytes = -1,
                                                          .url = server_.url("/ogb/proteins.zip"),
                                                          .member = "proteins/"}}));
  EXPECT_EQ(ds.num_edges(), 6);  // both directions, as OGB adds them
  EXPECT_TRUE(ds.labels.multi_label());
  EXPECT_EQ(ds.num_classes(), 3);
  EXPECT_EQ(ds.labels.metric(), "rocauc");
  EXPECT_EQ(ds.default_split, "species");
  ASSERT_EQ(ds.num_features(), 2);
  const Tensor& x = ds.features.dense();
  EXPECT_FLOAT_EQ(x(1, 0), 0.375f);  // node 1: edges 0-1 (0.5) and 1-2 (0.25)
  EXPECT_FLOAT_EQ(x(3, 1), 1.0f);
  // The edge features stay edge attributes too (for GATConv's edge_dim), both directions.
  ASSERT_EQ(ds.edge_attr.shape(), Shape({6, 2}));
  EXPECT_FLOAT_EQ(ds.edge_attr(0, 0), 0.5f);  // 1 -> 0, the reverse of 0 -> 1
}

TEST_F(RegistryDownload, OgbnPapers100MIsReadFromOgbsBinaryLayout) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  // papers100M-bin.zip's layout, with the six-node instance numpy wrote in OGB's format.
  const fs::path fixture = fs::path(EDGEATTN_SOURCE_DIR) / "examples/edgeattn/testdata/ogb_bin";
  std::vector<edgeattn::testing::ZipEntry> entries;
  for (const char* rel : {"raw/data.npz", "raw/node-label.npz", "split/time/train.csv.gz",
                          "split/time/valid.csv.gz", "split/time/test.csv.gz"})
    entries.push_back({.name = std::string("papers100M-bin/") + rel,
                       .data = fs::path(rel).extension() == ".gz"
                                   ? gzip(read_file(fixture / rel))  // as shipped
                                   : read_file(fixture / rel)});
  server_.serve("/ogb/papers100M-bin.zip", make_zip(entries));
  const LoadOptions o = with({{.dataset = "ogbn-papers100M",
                               .format = "ogb",
                               .path = "ogbn-papers100M/ogb/",
                               .sha256 = {},
                               .bytes = -1,
                               .url = server_.url("/ogb/papers100M-bin.zip"),
                               .member = "papers100M-bin/"}});
  const Dataset ds = load_dataset("ogbn-papers100M", o);
  EXPECT_EQ(ds.num_nodes(), 6);
  EXPECT_EQ(ds.num_edges(), 8);  // citations stay directed
  EXPECT_EQ(ds.num_features(), 2);
  EXPECT_EQ(ds.labels.classes, (std::vector<int32_t>{0, 1, -1, 0, 2, -1}));
  EXPECT_EQ(ds.default_split, "time");
  EXPECT_TRUE(fs::exists(root_ / "ogbn-papers100M/ogb/raw/data.npz"));
}

TEST_F(RegistryDownload, PpiIsUnpackedFromGraphSagesZipAndLoadedWithItsSplit) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  // ppi.zip's layout (GraphSAGE): ppi/ppi-{G,id_map,class_map}.json, ppi/ppi-feats.npy, walks.
  server_.serve(
      "/graphsage/ppi.zip",
      make_zip(
          {{.name = "ppi/ppi-G.json",
            .data = "{\"directed\": false, \"nodes\": [{\"id\": 0, \"val\": false, \"test\": false},"
                    " {\"id\": 1, \"val\": false, \"test\": false}, {\"id\": 2, \"val\": true,"
                    " \"test\": false}], \"links\": [{\"source\": 0, \"target\": 1}]}",
            .deflate = true},
           {.name = "ppi/ppi-id_map.json", .data = "{\"0\": 0, \"1\": 1, \"2\": 2}"},
           {.name = "ppi/ppi-class_map.json", .data = "{\"0\": [1, 0], \"1\": [0, 1], \"2\": [1, 1]}"},
           {.name = "ppi/ppi-feats.npy",
            .data = edgeattn::testing::npy_bytes("<f8", {3, 1}, edgeattn::testing::raw<double>({1, 2, 3}))},
           {.name = "ppi/ppi-walks.txt", .data = "0\t1\n"}}));
  const Dataset ds = load_dataset("ppi", with({{.dataset = "ppi",
                                                .format = "graphsage",
                                                .path = "ppi/graphsage/",
                                                .sha256 = {},
                                                .bytes = -1,
                                                .url = server_.url("/graphsage/ppi.zip"),
                                                .member = "ppi/"}}));
  EXPECT_EQ(ds.num_nodes(), 3);
  EXPECT_EQ(ds.num_edges(), 2);
  EXPECT_TRUE(ds.labels.multi_label());
  EXPECT_EQ(ds.split().val, (std::vector<int64_t>{2}));
  EXPECT_FLOAT_EQ(ds.features.dense()(2, 0), 3.f);
}

TEST_F(RegistryDownload, ATuDatasetIsUnpackedFromItsZipAsManyGraphs) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  // MUTAG.zip's layout: MUTAG/MUTAG_A.txt, _graph_indicator, _graph_labels, _node_labels, ...
  server_.serve("/graphkerneldatasets/MUTAG.zip",
                make_zip({{.name = "MUTAG/MUTAG_A.txt", .data = "1, 2\n2, 1\n3, 4\n4, 3\n", .deflate = true},
                          {.name = "MUTAG/MUTAG_graph_indicator.txt", .data = "1\n1\n2\n2\n"},
                          {.name = "MUTAG/MUTAG_graph_labels.txt", .data = "1\n-1\n"},
                          {.name = "MUTAG/MUTAG_node_labels.txt", .data = "0\n1\n2\n0\n"},
                          {.name = "MUTAG/MUTAG_edge_labels.txt", .data = "0\n0\n1\n1\n"},
                          {.name = "MUTAG/README.txt", .data = "MUTAG\n"}}));
  const Dataset ds = load_dataset("mutag", with({{.dataset = "mutag",
                                                  .format = "tu",
                                                  .path = "mutag/tu/",
                                                  .sha256 = {},
                                                  .bytes = -1,
                                                  .url = server_.url("/graphkerneldatasets/MUTAG.zip"),
                                                  .member = "MUTAG/"}}));
  EXPECT_EQ(ds.name, "mutag");
  EXPECT_EQ(ds.num_graphs(), 2);
  EXPECT_EQ(ds.graph_labels.classes, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(ds.num_features(), 3);  // one-hot node labels 0..2
}

TEST_F(RegistryDownload, LinqsMembersAreTakenFromTheTarballAndVerifiedAgainstTheRealManifest) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  // LINQS's cora.tgz layout, served through a mirror of its real URL: the compiled-in manifest's
  // rows and checksums decide what is taken out and whether it is right.
  serve_cora_tgz(shipped("cora/linqs/cora.content"));
  LoadOptions o = options_;
  o.format = "linqs";
  o.download_options.mirror = "https://linqs-data.soe.ucsc.edu/public/lbc/=" + server_.url("/lbc/");
  const Dataset ds = load_dataset("cora", o);
  EXPECT_EQ(ds.format, "linqs");
  EXPECT_EQ(ds.num_nodes(), 2708);
  EXPECT_EQ(server_.requests("/lbc/cora.tgz"), 1);  // one archive for both members
  EXPECT_TRUE(fs::is_regular_file(root_ / "cora/linqs/cora.cites"));
  EXPECT_FALSE(fs::exists(root_ / "cora/linqs/README"));  // provenance, not data: not asked for
}

TEST_F(RegistryDownload, AMemberWithTheWrongChecksumIsNeverPlaced) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  std::string content = shipped("cora/linqs/cora.content");
  content[100] = content[100] == '0' ? '1' : '0';
  serve_cora_tgz(content);
  LoadOptions o = options_;
  o.format = "linqs";
  o.download_options.mirror = "https://linqs-data.soe.ucsc.edu/public/lbc/=" + server_.url("/lbc/");
  expect_throw_naming<ChecksumError>(
      [&] { load_dataset("cora", o); },
      {"member cora/cora.content", (root_ / "cora/linqs/cora.content").string(), sha256_hex(content),
       "b8ebed0fd45e53995abafd1b70cf6a9fcc8f86abc5826d69b97fe6ca46e9c8ee", "not placed"});
  EXPECT_FALSE(fs::exists(root_ / "cora/linqs/cora.content"));
  EXPECT_FALSE(fs::exists(root_ / ".downloads/cora.tgz.unpacking"));
}

TEST_F(RegistryDownload, ASingleFileIsDownloadedAgainstItsChecksum) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  const std::string karate = shipped("karate/adjlist/karate.adjlist");
  server_.serve("/deepwalk/karate.adjlist", karate);
  const ManifestEntry row{.dataset = "karate",
                          .format = "adjlist",
                          .path = "karate/adjlist/karate.adjlist",
                          .sha256 = sha256_hex(karate),
                          .bytes = static_cast<int64_t>(karate.size()),
                          .url = server_.url("/deepwalk/karate.adjlist"),
                          .member = {}};
  EXPECT_EQ(load_dataset("karate", with({row})).num_nodes(), 34);
  EXPECT_EQ(read_file(root_ / "karate/adjlist/karate.adjlist"), karate);
}

TEST_F(RegistryDownload, TheBundledPartOfADatasetIsCompletedInTheCache) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  // The bundled Cora plus one file it lacks: all of it ends up together in the per-user cache.
  std::vector<ManifestEntry> rows;
  for (const ManifestEntry& e : manifest())
    if (e.dataset == "cora" && e.format == "planetoid") rows.push_back(e);
  server_.serve("/extra", "extra");
  rows.push_back({.dataset = "cora",
                  .format = "planetoid",
                  .path = "cora/planetoid/extra.txt",
                  .sha256 = sha256_hex("extra"),
                  .bytes = 5,
                  .url = server_.url("/extra"),
                  .member = {}});
  LoadOptions o = with(rows);
  o.root.clear();
  const char* data_env = std::getenv("EDGEATTN_DATA");
  ASSERT_EQ(data_env, nullptr) << "this test needs the default search order";
  ::setenv("XDG_CACHE_HOME", root_.c_str(), 1);
  const Dataset ds = load_dataset("cora", o);
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(ds.num_nodes(), 2708);
  EXPECT_EQ(read_file(root_ / "edgeattn/cora/planetoid/extra.txt"), "extra");
  EXPECT_TRUE(fs::exists(root_ / "edgeattn/cora/planetoid/ind.cora.x"));
  EXPECT_EQ(fs::path(ds.sources.front().path).parent_path(), root_ / "edgeattn/cora/planetoid");
}

TEST_F(RegistryDownload, OfflineAMissingFileNamesItsChecksumUrlAndTheWayOut) {
  const std::string karate = "0 1\n";
  const ManifestEntry row{.dataset = "karate",
                          .format = "adjlist",
                          .path = "karate/adjlist/karate.adjlist",
                          .sha256 = sha256_hex(karate),
                          .bytes = 4,
                          .url = server_.url("/k"),
                          .member = {}};
  LoadOptions o = with({row});
  o.download_options.offline = true;
  try {
    load_dataset("karate", o);
    FAIL() << "expected DownloadError";
  } catch (const DownloadError& e) {
    EXPECT_EQ(e.kind(), DownloadError::Kind::offline);
    for (const std::string& needle : {(root_ / "karate/adjlist/karate.adjlist").string(), sha256_hex(karate),
                                      std::string("4 bytes"), server_.url("/k"), std::string("offline")})
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << "\nlacks " << needle;
  }
  o.download_options.offline = false;
  o.download = false;
  expect_throw_naming<DownloadError>([&] { load_dataset("karate", o); }, {"LoadOptions::download = false"});
  EXPECT_EQ(server_.requests("/k"), 0);
}

TEST_F(RegistryDownload, AnArchiveThatIsNotThereNamesTheDatasetAndTheUrl) {
  if (!downloads_available()) GTEST_SKIP() << "built without downloads";
  try {
    load_dataset("ogbn-arxiv", with({arxiv_row()}));
    FAIL() << "expected DownloadError";
  } catch (const DownloadError& e) {
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_NE(std::string(e.what()).find("dataset 'ogbn-arxiv' (ogb)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(server_.url("/ogb/arxiv.zip")), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(root_ / "ogbn-arxiv"));
}

TEST(RegistryManifest, EveryRowHasAKnownDatasetAndAnHttpsUrl) {
  for (const ManifestEntry& e : manifest()) {
    const std::vector<std::string> formats = dataset_formats(e.dataset);
    EXPECT_NE(std::find(formats.begin(), formats.end(), e.format), formats.end()) << e.path;
    EXPECT_EQ(e.url.rfind("https://", 0), 0u) << e.path;
    EXPECT_EQ(e.is_directory(), !e.member.empty() && e.member.back() == '/') << e.path;
  }
  for (const std::string& name : dataset_names())
    for (const std::string& format : dataset_formats(name)) {
      const auto rows = std::count_if(manifest().begin(), manifest().end(), [&](const ManifestEntry& e) {
        return e.dataset == name && e.format == format;
      });
      EXPECT_GT(rows, 0) << name << " " << format;
    }
}

}  // namespace
}  // namespace edgeattn::data
