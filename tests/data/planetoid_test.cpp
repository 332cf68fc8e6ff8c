#include "edgeattn/data/planetoid.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "data/pickle.hpp"
#include "edgeattn/core/file_io.hpp"
#include "support/expect_error.hpp"
#include "support/pickle_writer.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

namespace fs = std::filesystem;
using edgeattn::testing::expect_throw_naming;

fs::path planetoid_dir(const std::string& ds) {
  return fs::path(EDGEATTN_SOURCE_DIR) / "datasets" / ds / "planetoid";
}
fs::path planetoid_file(const std::string& ds, const std::string& object) {
  return planetoid_dir(ds) / ("ind." + ds + "." + object);
}

/// test.index read the plain way (one decimal id per line), independently of the loader.
std::vector<int64_t> test_index_of(const std::string& ds) {
  const std::string text = read_file(planetoid_file(ds, "test.index"));
  std::vector<int64_t> ids;
  size_t b = 0;
  while (b < text.size()) {
    const size_t e = text.find('\n', b);
    ids.push_back(std::stoll(text.substr(b, e - b)));
    b = e + 1;
  }
  return ids;
}

std::vector<int64_t> range(int64_t b, int64_t e) {
  std::vector<int64_t> v;
  for (int64_t i = b; i < e; ++i) v.push_back(i);
  return v;
}

std::vector<int32_t> cols_of(const CsrMatrix& m, int64_t r) {
  return {m.row_indices(r).begin(), m.row_indices(r).end()};
}
std::vector<float> vals_of(const CsrMatrix& m, int64_t r) {
  return {m.row_values(r).begin(), m.row_values(r).end()};
}

bool has_note(const Dataset& ds, const std::string& needle) {
  return std::any_of(ds.notes.begin(), ds.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

/// A scratch directory holding copies of one dataset's Planetoid files, removed afterwards.
class Scratch {
 public:
  explicit Scratch(const std::string& ds, bool copy = true) : ds_(ds) {
    if (copy)
      for (const auto& entry : fs::directory_iterator(planetoid_dir(ds)))
        fs::copy_file(entry.path(), dir_ / entry.path().filename());
  }
  const fs::path& dir() const { return dir_.path(); }
  fs::path file(const std::string& object) const { return dir_ / ("ind." + ds_ + "." + object); }
  void write(const std::string& object, const std::string& bytes) const {
    write_file_atomic(file(object), bytes);
  }

 private:
  std::string ds_;
  edgeattn::testing::TempDir dir_;
};

// --- the recorded statistics (datasets/PROVENANCE.md §3.1) ---------------------------------------

TEST(Planetoid, CoraHasTheRecordedStatistics) {
  const Dataset ds = load_planetoid(planetoid_dir("cora"), "cora");
  EXPECT_EQ(ds.name, "cora");
  EXPECT_EQ(ds.format, "planetoid");
  EXPECT_EQ(ds.num_nodes(), 2708);
  EXPECT_EQ(ds.num_edges(), 10556);  // 5278 undirected pairs, both directions
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 0);
  EXPECT_EQ(ds.num_features(), 1433);
  ASSERT_TRUE(ds.features.is_sparse());
  EXPECT_EQ(ds.features.nnz(), 49216);  // = LINQS cora.content's ones
  EXPECT_EQ(ds.num_classes(), 7);
  EXPECT_EQ(ds.default_split, "public");
  const Split& s = ds.split();
  EXPECT_EQ(s.train, range(0, 140));
  EXPECT_EQ(s.val, range(140, 640));
  std::vector<int64_t> test = test_index_of("cora");
  std::sort(test.begin(), test.end());
  EXPECT_EQ(s.test, test);
  EXPECT_EQ(s.test, range(1708, 2708));  // contiguous for Cora
  std::vector<int64_t> per_class(7, 0);
  for (const int64_t v : s.train) ++per_class[static_cast<size_t>(ds.labels.classes[static_cast<size_t>(v)])];
  EXPECT_EQ(per_class, std::vector<int64_t>(7, 20));
  EXPECT_EQ(std::count(ds.labels.classes.begin(), ds.labels.classes.end(), -1), 0);
  EXPECT_TRUE(has_note(ds, "collapsed 302 duplicate"));
  EXPECT_FALSE(has_note(ds, "self-loops"));
  EXPECT_FALSE(has_note(ds, "differs"));
  ASSERT_EQ(ds.sources.size(), 8u);
  EXPECT_EQ(ds.sources[0].path, planetoid_file("cora", "x").string());
  EXPECT_EQ(ds.sources[0].bytes, 22119);
  EXPECT_EQ(ds.sources[7].bytes, 5000);
  EXPECT_TRUE(ds.sources[0].sha256.empty());
}

TEST(Planetoid, CiteSeerHasTheRecordedStatistics) {
  const Dataset ds = load_planetoid(planetoid_dir("citeseer"), "citeseer");
  EXPECT_EQ(ds.num_nodes(), 3327);
  EXPECT_EQ(ds.num_edges(), 9104);
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 0);
  EXPECT_EQ(ds.graph.degree_stats().isolated_rows, 48);  // no neighbour but themselves
  EXPECT_EQ(ds.num_features(), 3703);
  EXPECT_EQ(ds.features.nnz(), 105165);
  EXPECT_EQ(ds.num_classes(), 6);
  const Split& s = ds.split("public");
  EXPECT_EQ(s.train, range(0, 120));
  EXPECT_EQ(s.val, range(120, 620));
  EXPECT_EQ(s.test.size(), 1000u);
  std::vector<int64_t> per_class(6, 0);
  for (const int64_t v : s.train) ++per_class[static_cast<size_t>(ds.labels.classes[static_cast<size_t>(v)])];
  EXPECT_EQ(per_class, std::vector<int64_t>(6, 20));
  EXPECT_TRUE(has_note(ds, "removed 124 self-loops"));
  EXPECT_TRUE(has_note(ds, "collapsed 236 duplicate"));
}

TEST(Planetoid, CiteSeerKeepsItsSelfLoopsWhenAsked) {
  const Dataset ds = load_planetoid(planetoid_dir("citeseer"), "citeseer", {.self_loops = SelfLoops::keep});
  EXPECT_EQ(ds.num_edges(), 9104 + 124);
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 124);
  EXPECT_TRUE(has_note(ds, "kept 124 self-loops"));
  const Dataset added = load_planetoid(planetoid_dir("citeseer"), "citeseer", {.self_loops = SelfLoops::add});
  EXPECT_EQ(added.num_edges(), 9104 + 3327);
}

TEST(Planetoid, CiteSeerGapIdsHaveNoFeaturesNoLabelAndNoSplit) {
  const Dataset ds = load_planetoid(planetoid_dir("citeseer"), "citeseer");
  const std::vector<int64_t> gaps = {2407, 2489, 2553, 2682, 2781, 2953, 3042, 3063,
                                     3212, 3214, 3250, 3292, 3305, 3306, 3309};
  // Degrees counted with Python from ind.citeseer.graph (self-loops excluded).
  const std::vector<int64_t> degree = {1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1};
  const CsrMatrix& f = ds.features.sparse();
  for (size_t k = 0; k < gaps.size(); ++k) {
    const int64_t v = gaps[k];
    EXPECT_EQ(ds.labels.classes[static_cast<size_t>(v)], -1) << v;
    EXPECT_TRUE(f.row_indices(v).empty()) << v;
    EXPECT_EQ(ds.graph.degree(v), degree[k]) << v;
    for (const auto& [name, split] : ds.splits)
      for (const auto* part : {&split.train, &split.val, &split.test})
        EXPECT_FALSE(std::binary_search(part->begin(), part->end(), v)) << name << " holds " << v;
  }
  EXPECT_EQ(std::count(ds.labels.classes.begin(), ds.labels.classes.end(), -1), 15);
  EXPECT_TRUE(has_note(ds, "15 test-range ids have no feature row"));
  EXPECT_TRUE(has_note(ds, "2407 2489 2553"));
  // Every listed test id is in the public test split; the test range minus them is the gaps.
  std::vector<int64_t> test = test_index_of("citeseer");
  std::sort(test.begin(), test.end());
  EXPECT_EQ(ds.split().test, test);
  EXPECT_EQ(test.front(), 2312);
  EXPECT_EQ(test.back(), 3326);
}

// --- node order -------------------------------------------------------------------------------

void expect_test_rows_follow_test_index(const std::string& name) {
  const Dataset ds = load_planetoid(planetoid_dir(name), name);
  const Pickle tx_p = read_pickle(planetoid_file(name, "tx"));
  const CsrMatrix& tx = tx_p.root().as_csr(tx_p.name());
  const Pickle ty_p = read_pickle(planetoid_file(name, "ty"));
  const NdArray& ty = ty_p.root().as_ndarray(ty_p.name());
  const std::vector<int64_t> test = test_index_of(name);
  const CsrMatrix& f = ds.features.sparse();
  for (size_t i = 0; i < test.size(); ++i) {
    const int64_t v = test[i];
    ASSERT_EQ(cols_of(f, v), cols_of(tx, static_cast<int64_t>(i)))
        << "node " << v << " (line " << i + 1 << ")";
    ASSERT_EQ(vals_of(f, v), vals_of(tx, static_cast<int64_t>(i))) << "node " << v;
    const int64_t c = ds.labels.classes[static_cast<size_t>(v)];
    ASSERT_EQ(ty.integer_at(static_cast<int64_t>(i) * ty.shape[1] + c), 1) << "node " << v;
  }
}

TEST(Planetoid, NodeTestIndexIGetsRowIOfTx) {
  expect_test_rows_follow_test_index("cora");
  expect_test_rows_follow_test_index("citeseer");
  // Concrete rows, read with Python: ind.cora.test.index line 1 is 2692, and tx row 0 holds these
  // words; line 1000 names the node holding tx row 999.
  const Dataset cora = load_planetoid(planetoid_dir("cora"), "cora");
  EXPECT_EQ(cols_of(cora.features.sparse(), 2692),
            (std::vector<int32_t>{311, 314, 353, 505, 510, 621, 1075, 1132, 1171, 1226, 1230, 1301, 1379,
                                  1389, 1392}));
  const int64_t last = test_index_of("cora").back();
  EXPECT_EQ(cols_of(cora.features.sparse(), last),
            (std::vector<int32_t>{30,  65,  432,  548,  570,  610,  690,  720,  724,  749,
                                  763, 993, 1058, 1143, 1150, 1170, 1177, 1205, 1274, 1392}));
}

TEST(Planetoid, NonTestNodesTakeAllxRowsAndXIsItsPrefix) {
  for (const std::string name : {"cora", "citeseer"}) {
    SCOPED_TRACE(name);
    const Dataset ds = load_planetoid(planetoid_dir(name), name);
    const Pickle allx_p = read_pickle(planetoid_file(name, "allx")),
                 x_p = read_pickle(planetoid_file(name, "x"));
    const CsrMatrix& allx = allx_p.root().as_csr(allx_p.name());
    const CsrMatrix& x = x_p.root().as_csr(x_p.name());
    for (int64_t r = 0; r < allx.rows(); ++r) {
      ASSERT_EQ(cols_of(ds.features.sparse(), r), cols_of(allx, r)) << r;
      ASSERT_EQ(vals_of(ds.features.sparse(), r), vals_of(allx, r)) << r;
    }
    for (int64_t r = 0; r < x.rows(); ++r) ASSERT_EQ(cols_of(x, r), cols_of(allx, r)) << r;
    EXPECT_EQ(allx.nnz() + read_pickle(planetoid_file(name, "tx")).root().as_csr("tx").nnz(),
              ds.features.nnz());
  }
}

TEST(Planetoid, GraphIsSymmetricWithSortedRows) {
  for (const std::string name : {"cora", "citeseer"}) {
    const Dataset ds = load_planetoid(planetoid_dir(name), name);
    for (int64_t u = 0; u < ds.num_nodes(); ++u) {
      const auto row = ds.graph.row(u);
      ASSERT_TRUE(std::is_sorted(row.begin(), row.end()));
      for (const int32_t v : row) {
        const auto back = ds.graph.row(v);
        ASSERT_TRUE(std::binary_search(back.begin(), back.end(), static_cast<int32_t>(u)))
            << name << ": " << v << "->" << u;
      }
    }
  }
}

TEST(Planetoid, FullSplitTrainsOnEveryOtherLabelledNode) {
  const Dataset cora = load_planetoid(planetoid_dir("cora"), "cora", {.default_split = "full"});
  EXPECT_EQ(cora.default_split, "full");
  EXPECT_EQ(cora.split().train.size(), 2708u - 1500u);
  EXPECT_EQ(cora.split().val, cora.split("public").val);
  EXPECT_EQ(cora.split().test, cora.split("public").test);
  std::vector<int64_t> expected =
      range(0, 140);  // public train, then everything after val up to the test ids
  for (const int64_t v : range(640, 1708)) expected.push_back(v);
  EXPECT_EQ(cora.split().train, expected);
  const Dataset citeseer = load_planetoid(planetoid_dir("citeseer"), "citeseer");
  EXPECT_EQ(citeseer.split("full").train.size(), 3327u - 1500u - 15u);
  expect_throw_naming<InvalidArgument>(
      [] { (void)load_planetoid(planetoid_dir("cora"), "cora", {.default_split = "random"}); },
      {"'random'", "public", "full"});
}

// --- PubMed --------------------------------------------------------------------------------------

TEST(Planetoid, PubmedWithoutAllxExplainsWhereToGetIt) {
  expect_throw_naming<IoError>(
      [] { (void)load_planetoid(planetoid_dir("pubmed"), "pubmed"); },
      {"ind.pubmed.allx", "508e538e2abdccdd54c4d3e9f49d638b4af7107d85845f66ddea5a5152658b7e", "7578385",
       "https://github.com/kimiyoung/planetoid", "data/ind.pubmed.allx"});
}

TEST(Planetoid, PubmedLoadsWithASyntheticAllx) {
  const Scratch s("pubmed");
  // allx: its first 60 rows are ind.pubmed.x (as in the real file); the rest are made up.
  const Pickle x_p = read_pickle(planetoid_file("pubmed", "x"));
  const CsrMatrix& x = x_p.root().as_csr(x_p.name());
  std::vector<int32_t> indptr{0}, indices;
  std::vector<float> data;
  for (int64_t r = 0; r < 18717; ++r) {
    if (r < x.rows()) {
      indices.insert(indices.end(), x.row_indices(r).begin(), x.row_indices(r).end());
      data.insert(data.end(), x.row_values(r).begin(), x.row_values(r).end());
    } else {
      const auto a = static_cast<int32_t>(r % 500), b = static_cast<int32_t>((r * 7 + 3) % 500);
      indices.push_back(std::min(a, b));
      data.push_back(0.25f);
      if (a != b) {
        indices.push_back(std::max(a, b));
        data.push_back(0.5f);
      }
    }
    indptr.push_back(static_cast<int32_t>(indices.size()));
  }
  s.write("allx", testing::csr_pickle(18717, 500, indptr, indices, data));

  const Dataset ds = load_planetoid(s.dir(), "pubmed");
  EXPECT_EQ(ds.num_nodes(), 19717);
  EXPECT_EQ(ds.num_edges(), 88648);  // 44324 undirected pairs
  EXPECT_EQ(ds.num_features(), 500);
  EXPECT_EQ(ds.num_classes(), 3);
  EXPECT_EQ(ds.features.nnz(), static_cast<int64_t>(indices.size()) + 50140);
  EXPECT_EQ(ds.split().train, range(0, 60));
  EXPECT_EQ(ds.split().val, range(60, 560));
  EXPECT_EQ(ds.split().test, range(18717, 19717));
  EXPECT_EQ(ds.split("full").train.size(), 19717u - 1500u);
  EXPECT_TRUE(has_note(ds, "removed 3 self-loops"));
  EXPECT_TRUE(has_note(ds, "collapsed 25 duplicate"));
  EXPECT_FALSE(has_note(ds, "differs"));
  // Test node 18747 (line 1 of ind.pubmed.test.index) holds tx row 0's TF-IDF values.
  EXPECT_EQ(ds.features.sparse().row_indices(18747)[0], 2);
  EXPECT_EQ(ds.features.sparse().row_values(18747)[0], 0.01934375986456871f);
  EXPECT_EQ(cols_of(ds.features.sparse(), 100), (std::vector<int32_t>{100, 203}));
}

// --- .gz copies ---------------------------------------------------------------------------------

uint32_t crc32(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (const char ch : s) {
    c ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/// A gzip file whose deflate stream uses stored (uncompressed) blocks: valid gzip, no zlib needed.
std::string gzip_stored(const std::string& data) {
  std::string out = {'\x1f', '\x8b', '\x08', '\0', '\0', '\0', '\0', '\0', '\0', '\xff'};
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(65535, data.size() - pos);
    const bool last = pos + n == data.size();
    out += static_cast<char>(last ? 1 : 0);
    for (const uint32_t v : {static_cast<uint32_t>(n), static_cast<uint32_t>(~n & 0xffffu)}) {
      out += static_cast<char>(v & 0xff);
      out += static_cast<char>((v >> 8) & 0xff);
    }
    out.append(data, pos, n);
    pos += n;
  } while (pos < data.size());
  for (const uint32_t v : {crc32(data), static_cast<uint32_t>(data.size())})
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

TEST(Planetoid, ReadsGzipCopiesOfTheFiles) {
  const Scratch s("cora");
  for (const std::string object : {"graph", "test.index", "allx"}) {
    s.write(object + ".gz", gzip_stored(read_file(s.file(object))));
    fs::remove(s.file(object));
  }
  const Dataset ds = load_planetoid(s.dir(), "cora");
  EXPECT_EQ(ds.num_edges(), 10556);
  EXPECT_EQ(ds.features.nnz(), 49216);
  EXPECT_EQ(ds.sources[6].path, s.file("graph").string() + ".gz");
}

// --- malformed inputs ----------------------------------------------------------------------------

std::string one_hot(int64_t rows, int64_t classes, int64_t bad_row = -1) {
  std::vector<int32_t> v(static_cast<size_t>(rows * classes), 0);
  for (int64_t r = 0; r < rows; ++r) v[static_cast<size_t>(r * classes + r % classes)] = 1;
  if (bad_row >= 0) v[static_cast<size_t>(bad_row * classes + (bad_row + 1) % classes)] = 1;
  return testing::int32_matrix_pickle(rows, classes, v);
}

TEST(Planetoid, MissingFileNamesIt) {
  const Scratch s("cora");
  fs::remove(s.file("ty"));
  expect_throw_naming<IoError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                               {s.file("ty").string(), "missing"});
}

TEST(Planetoid, RowCountsThatDisagreeNameBothFiles) {
  const Scratch s("cora");
  s.write("y", one_hot(141, 7));
  expect_throw_naming<InvalidArgument>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                       {"ind.cora.x has 140 rows", "ind.cora.y has 141"});
  s.write("y", one_hot(140, 7));
  s.write("ty", one_hot(999, 7));
  expect_throw_naming<InvalidArgument>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                       {"ind.cora.tx has 1000 rows", "ind.cora.ty has 999"});
  s.write("ty", one_hot(1000, 6));
  expect_throw_naming<InvalidArgument>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                       {"ind.cora.ty has 6 classes", "ind.cora.ally has 7"});
}

TEST(Planetoid, FeatureColumnsThatDisagreeNameBothFiles) {
  const Scratch s("cora");
  s.write("tx", testing::csr_pickle(1000, 1432, std::vector<int32_t>(1001, 0), {}, {}));
  expect_throw_naming<InvalidArgument>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                       {"ind.cora.tx has 1432 feature columns", "ind.cora.allx has 1433"});
}

TEST(Planetoid, OneHotRowsWithoutExactlyOneOneAreRejected) {
  const Scratch s("cora");
  s.write("ally", one_hot(1708, 7, /*bad_row=*/3));
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.ally", "row 3 has 2 ones"});
}

TEST(Planetoid, GraphIdsOutOfRangeAreRejected) {
  const Scratch s("cora");
  std::vector<std::vector<int64_t>> lists(2708);
  for (int64_t u = 0; u + 1 < 2708; ++u) {
    lists[static_cast<size_t>(u)].push_back(u + 1);
    lists[static_cast<size_t>(u + 1)].push_back(u);
  }
  lists[5].push_back(5000);
  s.write("graph", testing::graph_pickle(lists));
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.graph: byte", "node 5 lists neighbour 5000", "[0, 2708)"});
  lists[5].pop_back();
  lists.pop_back();  // 2707 keys, but test ids reach 2707
  lists.back().pop_back();
  s.write("graph", testing::graph_pickle(lists));
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.test.index:", "2707"});
  s.write("graph", read_file(planetoid_file("cora", "y")));
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.graph", "defaultdict", "numpy.ndarray"});
}

TEST(Planetoid, BadTestIndexFilesAreRejectedNamingTheLine) {
  const Scratch s("cora");
  const std::string good = read_file(planetoid_file("cora", "test.index"));
  const auto with_line = [&](int line, const std::string& text) {
    std::string out;
    size_t b = 0;
    for (int l = 1; b < good.size(); ++l) {
      const size_t e = good.find('\n', b);
      out += (l == line ? text : good.substr(b, e - b)) + "\n";
      b = e + 1;
    }
    return out;
  };
  s.write("test.index", with_line(3, "2692"));  // line 1 is 2692 already
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.test.index:3", "2692", "repeats line 1"});
  s.write("test.index", with_line(4, "99"));
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.test.index:4", "99", "outside"});
  s.write("test.index", with_line(5, "27o8"));
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.test.index:5", "27o8"});
  s.write("test.index", good.substr(0, good.size() - 5));  // 999 ids
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.test.index", "999 ids", "1000"});
}

TEST(Planetoid, TestIdsMustStartRightAfterAllx) {
  const Scratch s("cora");
  // Drop allx's last row: the test ids (1708..2707) no longer start at len(allx) = 1707.
  const Pickle allx_p = read_pickle(planetoid_file("cora", "allx"));
  const CsrMatrix& allx = allx_p.root().as_csr(allx_p.name());
  const int64_t keep = 1707, nnz = allx.indptr()[keep];
  s.write("allx",
          testing::csr_pickle(keep, 1433,
                              std::vector<int32_t>(allx.indptr().begin(), allx.indptr().begin() + keep + 1),
                              std::vector<int32_t>(allx.indices().begin(), allx.indices().begin() + nnz),
                              std::vector<float>(allx.values().begin(), allx.values().begin() + nnz)));
  s.write("ally", one_hot(keep, 7));
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {"ind.cora.test.index", "smallest test id is 1708", "len(allx) = 1707"});
}

TEST(Planetoid, CorruptPicklesNameTheFile) {
  const Scratch s("cora");
  std::string x = read_file(s.file("x"));
  x.resize(x.size() / 2);
  s.write("x", x);
  expect_throw_naming<ParseError>([&] { (void)load_planetoid(s.dir(), "cora"); },
                                  {s.file("x").string() + ": byte"});
}

}  // namespace
}  // namespace edgeattn::data
