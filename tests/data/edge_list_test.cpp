#include "edgeattn/data/edge_list.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;

std::vector<int64_t> vec(std::span<const int64_t> s) { return {s.begin(), s.end()}; }
std::vector<int32_t> vec(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

void expect_edge_list_error(const std::string& text, const EdgeListOptions& o,
                            std::initializer_list<std::string> needles) {
  expect_throw_naming<ParseError>([&] { (void)parse_edge_list(text, "e.txt", o); }, needles);
}

TEST(EdgeList, ReadsTwoColumnsWithCommentsTabsAndCrlf) {
  const Dataset ds = parse_edge_list(
      "# SNAP header\n0 1\r\n1\t2\n\n% other comment\n  2   0  \r\n3 0 # trailing\n", "e.txt");
  EXPECT_EQ(ds.name, "e.txt");
  EXPECT_EQ(ds.format, "edge-list");
  EXPECT_EQ(ds.num_nodes(), 4);
  // Edge u v is u -> v, stored in row v.
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 2, 3, 4, 4}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{2, 3, 0, 1}));
  EXPECT_TRUE(ds.edge_weight.empty());
  EXPECT_TRUE(ds.node_names.empty());
  EXPECT_EQ(ds.num_features(), 0);
  ds.validate();
}

TEST(EdgeList, AnEmptyListHasNoNodes) {
  EXPECT_EQ(parse_edge_list("# nothing\n", "e").num_nodes(), 0);
  EXPECT_EQ(parse_edge_list("", "e", {.num_nodes = 3}).num_nodes(), 3);
}

TEST(EdgeList, ThirdColumnGivesWeightsInCsrOrder) {
  const Dataset ds = parse_edge_list("0 2 0.5\n1 2 1.5\n2 0 -2\n", "e");
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{2, 0, 1}));
  EXPECT_EQ(ds.edge_weight, (std::vector<float>{-2.f, 0.5f, 1.5f}));
}

TEST(EdgeList, UndirectedMirrorsCarryTheWeightOfTheirEdge) {
  const Dataset ds = parse_edge_list("0 1 3\n1 2 4\n", "e", {.undirected = true});
  // rows: 0 <- {1}, 1 <- {0, 2}, 2 <- {1}
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{1, 0, 2, 1}));
  EXPECT_EQ(ds.edge_weight, (std::vector<float>{3.f, 3.f, 4.f, 4.f}));
}

TEST(EdgeList, SelfLoopAndDuplicatePoliciesApply) {
  const std::string text = "0 1 1\n0 1 2\n1 1 5\n";
  const Dataset merged = parse_edge_list(text, "e");
  EXPECT_EQ(vec(merged.graph.col_idx()), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(merged.edge_weight, (std::vector<float>{1.f, 5.f}));  // the first copy's weight
  const Dataset kept = parse_edge_list(text, "e", {.duplicates = Duplicates::keep});
  EXPECT_EQ(kept.edge_weight, (std::vector<float>{1.f, 2.f, 5.f}));
  const Dataset no_loops = parse_edge_list(text, "e", {.self_loops = SelfLoops::remove});
  EXPECT_EQ(vec(no_loops.graph.col_idx()), (std::vector<int32_t>{0}));
  expect_edge_list_error(text, {.duplicates = Duplicates::error},
                         {"e.txt:2:", "repeated", "(0 -> 1)", "line 1"});
  // A repeated self-loop is no error when self-loops are removed anyway.
  EXPECT_EQ(parse_edge_list("1 1\n1 1\n0 1\n", "e",
                            {.self_loops = SelfLoops::remove, .duplicates = Duplicates::error})
                .num_edges(),
            1);
}

TEST(EdgeList, RelabelMapsHugeSparseIdsInOrderOfFirstAppearance) {
  const Dataset ds =
      parse_edge_list("1000000000000 5\n5 77\n# c\n77 1000000000000\nabc 5\n", "e", {.relabel = true});
  EXPECT_EQ(ds.node_names, (std::vector<std::string>{"1000000000000", "5", "77", "abc"}));
  // edges 0->1, 1->2, 2->0, 3->1
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 1, 3, 4, 4}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{2, 0, 3, 1}));
  ds.validate();
}

// Relabelling against a plain std::unordered_map, on tokens chosen to stress the hash table:
// short ones (stored packed in their slot) and long ones (hashed, compared with the text), pairs
// that share their first 8 bytes or differ only in length ("1234567" / "12345678" / "123456789"),
// more distinct ids than the table is first sized for (so it grows), and a last token that ends
// the text, with fewer than 8 bytes after its start.
TEST(EdgeList, RelabelGivesTheIndicesOfAPlainHashMap) {
  uint64_t state = 11;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  const std::vector<std::string> stems = {"",         "1234567",   "12345678", "123456789",
                                          "abcdefgh", "abcdefghX", "n"};
  auto token = [&] {
    const std::string& stem = stems[next() % stems.size()];
    const uint64_t id = next() % 40000;
    return next() % 3 == 0 ? std::to_string(id) + stem : stem + std::to_string(id);
  };
  std::string text;
  std::vector<std::string> src, dst;
  for (int k = 0; k < 20000; ++k) {
    src.push_back(token());
    dst.push_back(token());
    text += src.back() + (k % 2 ? "\t" : " ") + dst.back() + "\n";
  }
  src.push_back("12345678");  // the last token ends the text
  dst.push_back("7");
  text += src.back() + " " + dst.back();

  std::unordered_map<std::string, int32_t> index;
  std::vector<std::string> names;
  auto id = [&](const std::string& t) {
    const auto [it, inserted] = index.emplace(t, static_cast<int32_t>(names.size()));
    if (inserted) names.push_back(t);
    return it->second;
  };
  std::vector<int32_t> want_src, want_dst;
  for (size_t k = 0; k < src.size(); ++k) {
    want_src.push_back(id(src[k]));
    want_dst.push_back(id(dst[k]));
  }
  const Dataset ds = parse_edge_list(text, "e", {.duplicates = Duplicates::keep, .relabel = true});
  EXPECT_EQ(ds.node_names, names);
  ASSERT_EQ(ds.num_edges(), static_cast<int64_t>(src.size()));
  const auto row_ptr = ds.graph.row_ptr();
  const auto cols = ds.graph.col_idx();
  const auto csr_of_input = ds.graph.csr_edge_of_input();
  for (size_t k = 0; k < src.size(); ++k) {
    const int64_t e = csr_of_input[k];
    ASSERT_EQ(cols[static_cast<size_t>(e)], want_src[k]) << "edge " << k;
    ASSERT_TRUE(row_ptr[static_cast<size_t>(want_dst[k])] <= e &&
                e < row_ptr[static_cast<size_t>(want_dst[k]) + 1])
        << "edge " << k;
  }
  // The adjacency-list reader looks ids up the same way.
  const Dataset adj = parse_adjacency_list(text, "a", {.duplicates = Duplicates::keep, .relabel = true});
  EXPECT_EQ(adj.node_names, names);
}

// Relabelled ids are looked up a few tokens after they are read; an id error on one line must
// still be reported before a parse error on a later line.
TEST(EdgeList, AnIdErrorIsReportedBeforeAParseErrorOnALaterLine) {
  expect_edge_list_error("a b\nc d\n0 1 2 3\n", {.relabel = true, .max_nodes = 2},
                         {"e.txt:2:", "max_nodes = 2", "'c'"});
  expect_edge_list_error("a b\nc d\n0 1 2 3\n", {.relabel = true, .max_nodes = 10},
                         {"e.txt:3:", "expected 2 columns"});
  expect_throw_naming<ParseError>(
      [] { (void)parse_adjacency_list("a b c\nd\n", "a.txt", {.relabel = true, .max_nodes = 2}); },
      {"a.txt:1:", "max_nodes = 2", "'c'"});
}

TEST(EdgeList, IdsAsGivenHonourNumNodesAndOneBased) {
  const Dataset padded = parse_edge_list("0 1\n", "e", {.num_nodes = 5});
  EXPECT_EQ(padded.num_nodes(), 5);
  EXPECT_EQ(padded.graph.degree(4), 0);
  const Dataset one = parse_edge_list("1 2\n3 1\n", "e", {.one_based = true});
  EXPECT_EQ(one.num_nodes(), 3);
  EXPECT_EQ(vec(one.graph.col_idx()), (std::vector<int32_t>{2, 0}));
}

TEST(EdgeList, BadIdsNameTheLine) {
  expect_edge_list_error("0 1\n# c\n-3 1\n", {}, {"e.txt:3:", "source id >= 0", "-3"});
  expect_edge_list_error("1 0\n", {.one_based = true}, {"e.txt:1:", "target id >= 1", "found 0"});
  expect_edge_list_error("0 1\n0 5\n", {.num_nodes = 5}, {"e.txt:2:", "below num_nodes = 5", "found 5"});
  expect_edge_list_error("0 1\n0 7\n", {.max_nodes = 4}, {"e.txt:2:", "below max_nodes = 4", "found 7"});
  expect_edge_list_error("a b\nc d\ne f\n", {.relabel = true, .max_nodes = 4},
                         {"e.txt:3:", "max_nodes = 4", "'e'"});
  expect_edge_list_error("0 x\n", {}, {"e.txt:1:", "target id", "'x'"});
  expect_edge_list_error("0 99999999999999999999\n", {}, {"e.txt:1:", "out of range"});
  expect_edge_list_error("0\n", {}, {"e.txt:1:", "target id", "end of the line"});
  expect_edge_list_error("a\n", {.relabel = true}, {"e.txt:1:", "target id", "end of the line"});
}

TEST(EdgeList, MixedOrExtraColumnsNameTheLine) {
  expect_edge_list_error("0 1\n1 2\n2 0 0.5\n", {},
                         {"e.txt:3:", "expected 2 columns (as on line 1)", "found 3"});
  expect_edge_list_error("# w\n0 1 1\n1 2\n", {},
                         {"e.txt:3:", "expected 3 columns (as on line 2)", "found 2"});
  expect_edge_list_error("0 1 1 1\n", {}, {"e.txt:1:", "at most 3 columns", "'1'"});
  expect_edge_list_error("0 1 heavy\n", {}, {"e.txt:1:", "weight", "'heavy'"});
  expect_edge_list_error("0 1 nan\n", {}, {"e.txt:1:", "finite weight"});
}

// Plain "u<TAB>v" lines take a fast path; lines with comments, signs or odd spacing take the
// general one. Both must give the same graph, maps and line numbers, whatever the mixture.
TEST(EdgeList, FastAndGeneralLinesGiveTheSameGraph) {
  uint64_t state = 7;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  std::string fast = "# header\n", general = "# header\n", mixed = "# header\n";
  for (int k = 0; k < 3000; ++k) {
    const std::string u = std::to_string(next() % 500), v = std::to_string(next() % 500);
    fast += u + "\t" + v + (k % 7 == 0 ? "\r\n" : "\n");
    general += " " + u + " " + v + " # edge " + std::to_string(k) + "\n";
    switch (next() % 5) {
      case 0:
        mixed += u + "  \t " + v + " \r\n";
        break;  // fast: runs of blanks
      case 1:
        mixed += "+" + u + " " + v + "\n";
        break;  // general: a sign
      case 2:
        mixed += u + " " + v + " % c\n";
        break;  // general: a trailing comment
      case 3:
        mixed += "000" + u + "\t" + v + "\n";
        break;  // fast: leading zeros
      default:
        mixed += "\t" + u + "\t" + v + "\n";
        break;  // general: leading blank
    }
  }
  fast += "1 2";  // no newline at the end
  general += "1 2";
  mixed += "1 2";
  for (const Duplicates dup : {Duplicates::merge, Duplicates::keep}) {
    const Dataset a = parse_edge_list(fast, "e", {.duplicates = dup});
    for (const std::string* text : {&general, &mixed}) {
      const Dataset b = parse_edge_list(*text, "e", {.duplicates = dup});
      EXPECT_EQ(b.num_nodes(), a.num_nodes());
      EXPECT_EQ(vec(b.graph.row_ptr()), vec(a.graph.row_ptr()));
      EXPECT_EQ(vec(b.graph.col_idx()), vec(a.graph.col_idx()));
      EXPECT_EQ(vec(b.graph.input_edge_of_csr()), vec(a.graph.input_edge_of_csr()));
      EXPECT_EQ(vec(b.graph.csr_edge_of_input()), vec(a.graph.csr_edge_of_input()));
    }
  }
  // Errors on fast-path lines name the same line as on general ones.
  expect_edge_list_error(fast + "\n3\t500\n", {.num_nodes = 500},
                         {"e.txt:3003:", "below num_nodes = 500", "found 500"});
  auto error_of = [](const std::string& text) {
    try {
      (void)parse_edge_list(text, "e.txt", {.duplicates = Duplicates::error});
    } catch (const ParseError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(fast).find("repeated"), std::string::npos);  // 3000 draws from 500^2 pairs repeat
  EXPECT_EQ(error_of(fast), error_of(general));
  EXPECT_EQ(error_of(fast), error_of(mixed));
  expect_edge_list_error("0\t1\n\n1\t1\n0\t1\n", {.duplicates = Duplicates::error},
                         {"e.txt:4:", "repeated", "(0 -> 1)", "line 1"});
  expect_edge_list_error("0\t1\n1\t2\t0.5\n", {}, {"e.txt:2:", "expected 2 columns (as on line 1)"});
  expect_edge_list_error("3\t1234567890123456789\n", {}, {"e.txt:1:", "target id", "below max_nodes"});
}

TEST(EdgeList, InvalidOptionsAreRejected) {
  expect_throw_naming<InvalidArgument>(
      [] { (void)parse_edge_list("", "e", {.num_nodes = 10, .max_nodes = 5}); },
      {"num_nodes", "10", "max_nodes = 5"});
  // A Graph holds at most 2^31 - 1 nodes, so a larger max_nodes could only fail later.
  expect_throw_naming<InvalidArgument>(
      [] { (void)parse_edge_list("0 1\n", "e", {.max_nodes = int64_t{1} << 31}); },
      {"max_nodes", "2147483648", "2147483647", "node limit"});
  expect_throw_naming<InvalidArgument>([] { (void)parse_edge_list("0 1\n", "e", {.max_nodes = -1}); },
                                       {"max_nodes", "-1"});
}

TEST(AdjacencyList, ReadsNeighbourListsAndIsolatedNodes) {
  const Dataset ds = parse_adjacency_list("# adj\n0 1 2\r\n1 0\n2\t0\n3\n", "a.adjlist");
  EXPECT_EQ(ds.format, "adjlist");
  EXPECT_EQ(ds.num_nodes(), 4);
  // v n means v -> n (row n lists v)
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 2, 3, 4, 4}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{1, 2, 0, 0}));
  const Dataset rel = parse_adjacency_list("x y\nz\n", "a", {.undirected = true, .relabel = true});
  EXPECT_EQ(rel.node_names, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(rel.num_edges(), 2);
  expect_throw_naming<ParseError>(
      [] { (void)parse_adjacency_list("1 2\n2 0\n", "a.adjlist", {.one_based = true}); },
      {"a.adjlist:2:", "neighbour id >= 1", "found 0"});
  expect_throw_naming<ParseError>([] { (void)parse_adjacency_list("1 2 q\n", "a.adjlist"); },
                                  {"a.adjlist:1:", "neighbour id", "'q'"});
  expect_throw_naming<ParseError>(
      [] { (void)parse_adjacency_list("0 1\n2 3\n0 1\n", "a.adjlist", {.duplicates = Duplicates::error}); },
      {"a.adjlist:3:", "repeated", "line 1"});
}

TEST(EdgeList, LoadReadsAFileAndRecordsItsSource) {
  const edgeattn::testing::TempDir dir;
  const std::string text = "0 1\n1 2\n";
  write_file_atomic(dir / "chain.txt", text);
  const Dataset ds = load_edge_list(dir / "chain.txt", {.undirected = true});
  EXPECT_EQ(ds.name, "chain");
  EXPECT_EQ(ds.num_edges(), 4);
  ASSERT_EQ(ds.sources.size(), 1u);
  EXPECT_EQ(ds.sources[0].bytes, 8);
  write_file_atomic(dir / "bad.txt", "0 1\n1 -2\n");
  expect_throw_naming<ParseError>([&] { (void)load_edge_list(dir / "bad.txt"); }, {"bad.txt:2:", "-2"});
  expect_throw_naming<IoError>([&] { (void)load_adjacency_list(dir / "none.adjlist"); }, {"none.adjlist"});
}

const std::string kKarate = std::string(EDGEATTN_SOURCE_DIR) + "/datasets/karate/adjlist/karate.adjlist";

TEST(Karate, HasTheRecordedStatistics) {
  const Dataset ds = load_karate(kKarate);
  EXPECT_EQ(ds.name, "karate");
  EXPECT_EQ(ds.num_nodes(), 34);
  EXPECT_EQ(ds.num_edges(), 156);
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 0);
  EXPECT_EQ(ds.graph.degree(0), 16);   // node 1
  EXPECT_EQ(ds.graph.degree(32), 12);  // node 33
  EXPECT_EQ(ds.graph.degree(33), 17);  // node 34
  EXPECT_EQ(ds.num_features(), 0);
  EXPECT_EQ(ds.node_names.front(), "1");
  EXPECT_EQ(ds.node_names.back(), "34");
  // Symmetric: every u -> v has v -> u.
  for (int64_t v = 0; v < ds.num_nodes(); ++v)
    for (const int32_t u : ds.graph.row(v)) {
      const auto r = ds.graph.row(u);
      EXPECT_TRUE(std::binary_search(r.begin(), r.end(), static_cast<int32_t>(v))) << u << " -> " << v;
    }
}

TEST(Karate, LabelsAreTheClubFactions) {
  const Dataset ds = load_karate(kKarate);
  EXPECT_EQ(ds.labels.num_classes, 2);
  EXPECT_EQ(ds.labels.class_names, (std::vector<std::string>{"Mr. Hi", "Officer"}));
  const std::vector<int32_t> expected = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0,
                                         0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(ds.labels.classes, expected);
  EXPECT_EQ(std::count(ds.labels.classes.begin(), ds.labels.classes.end(), 0), 17);
}

TEST(Karate, AnotherFileIsRejected) {
  const edgeattn::testing::TempDir dir;
  write_file_atomic(dir / "k.adjlist", "1 2\n2 1\n");
  expect_throw_naming<ParseError>([&] { (void)load_karate(dir / "k.adjlist"); },
                                  {"k.adjlist", "34 nodes", "found 2 nodes"});
}

// A stray huge id would make a graph of billions of nodes: refused against the load limit (here
// $EDGEATTN_MAX_LOAD_BYTES, so the test does not depend on the machine) before anything that size
// is allocated, naming the file, the id and the remedy.
TEST(EdgeList, AnIdBeyondTheLoadLimitIsRefusedBeforeTheGraphIsBuilt) {
  ::setenv("EDGEATTN_MAX_LOAD_BYTES", "1000000", 1);  // 1 MB: ~40k nodes
  EXPECT_EQ(parse_edge_list("0 1\n1 30000\n", "small.txt").num_nodes(), 30001);
  expect_throw_naming<ParseError>(
      [] { (void)parse_edge_list("0 1\n1 2000000000\n", "huge.txt"); },
      {"huge.txt", "the largest is 2000000000", "2000000001 nodes", "EDGEATTN_MAX_LOAD_BYTES", "relabel"});
  expect_throw_naming<ParseError>([] { (void)parse_adjacency_list("0 1\n1 100000\n", "huge.adjlist"); },
                                  {"huge.adjlist", "the largest is 100000"});
  EdgeListOptions one_based;
  one_based.one_based = true;
  expect_throw_naming<ParseError>([&] { (void)parse_edge_list("1 2\n2 100000\n", "b.txt", one_based); },
                                  {"the largest is 100000", "100000 nodes"});
  EdgeListOptions relabel;  // ids as labels: two nodes, whatever their values
  relabel.relabel = true;
  EXPECT_EQ(parse_edge_list("0 1\n1 2000000000\n", "labels.txt", relabel).num_nodes(), 3);
  ::unsetenv("EDGEATTN_MAX_LOAD_BYTES");
}

}  // namespace
}  // namespace edgeattn::data
