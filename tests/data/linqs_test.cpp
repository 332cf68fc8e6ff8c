#include "edgeattn/data/linqs.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
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

std::map<std::string, int64_t> class_counts(const Dataset& ds) {
  std::map<std::string, int64_t> counts;
  for (const int32_t c : ds.labels.classes) ++counts[ds.labels.class_names.at(static_cast<size_t>(c))];
  return counts;
}

int64_t count_notes_containing(const Dataset& ds, const std::string& needle) {
  return std::count_if(ds.notes.begin(), ds.notes.end(),
                       [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

// Four papers, 3 words, 2 classes; paper "z9" is unknown, "p2" cites itself.
const std::string kContent =
    "p1\t1\t0\t1\tTheory\n"
    "p2\t0\t0\t0\tAI\r\n"
    "p3\t0\t1\t0\tTheory\n"
    "\n"
    "p4\t1\t1\t1\tML\n";
const std::string kCites =
    "p1\tp3\n"   // p3 -> p1
    "p2\tp1\n"   // p1 -> p2
    "z9\tp4\n"   // unknown
    "p2\tp2\n"   // self-citation
    "p3\tp1\n"   // p1 -> p3 (the reverse of line 1)
    "p1\tp3\n";  // repeats line 1

TEST(Linqs, ReadsContentAndCitesInFileOrder) {
  const Dataset ds = parse_linqs(kContent, "t.content", kCites, "t.cites");
  EXPECT_EQ(ds.format, "linqs");
  EXPECT_EQ(ds.name, "t");
  EXPECT_EQ(ds.node_names, (std::vector<std::string>{"p1", "p2", "p3", "p4"}));
  ASSERT_TRUE(ds.features.is_sparse());
  const CsrMatrix& x = ds.features.sparse();
  EXPECT_EQ(x.rows(), 4);
  EXPECT_EQ(x.cols(), 3);
  EXPECT_EQ(vec(x.indptr()), (std::vector<int64_t>{0, 2, 2, 3, 6}));
  EXPECT_EQ(vec(x.indices()), (std::vector<int32_t>{0, 2, 1, 0, 1, 2}));
  EXPECT_EQ(std::vector<float>(x.values().begin(), x.values().end()), std::vector<float>(6, 1.f));
  // Class ids follow the sorted class names.
  EXPECT_EQ(ds.labels.class_names, (std::vector<std::string>{"AI", "ML", "Theory"}));
  EXPECT_EQ(ds.labels.classes, (std::vector<int32_t>{2, 0, 2, 1}));
  EXPECT_EQ(ds.labels.num_classes, 3);
  // Undirected, self-citation removed, repeats merged: {p1-p3, p1-p2}.
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 2, 3, 4, 4}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{1, 2, 0, 0}));
  EXPECT_EQ(ds.notes,
            (std::vector<std::string>{"t.cites:3: cites unknown paper 'z9'; skipped",
                                      "t.cites: skipped 1 of 6 citation lines that name unknown papers",
                                      "t.cites: removed 1 self-citations"}));
  ds.validate();
}

TEST(Linqs, AByteOrderMarkIsNotPartOfTheFirstId) {
  // Saved by a Windows editor: a UTF-8 BOM before the first paper id of either file.
  const std::string bom = "\xEF\xBB\xBF";
  const Dataset plain = parse_linqs(kContent, "t.content", kCites, "t.cites");
  const Dataset marked =
      parse_linqs(bom + std::string(kContent), "t.content", bom + std::string(kCites), "t.cites");
  EXPECT_EQ(marked.num_nodes(), plain.num_nodes());
  EXPECT_EQ(marked.num_edges(), plain.num_edges());
  EXPECT_EQ(marked.node_names, plain.node_names);
  EXPECT_EQ(marked.notes, plain.notes);
}

TEST(Linqs, DirectedKeepsCitingToCitedAndSelfCitationsOnRequest) {
  const Dataset ds =
      parse_linqs(kContent, "t.content", kCites, "t.cites", {.directed = true, .keep_self_citations = true});
  // p3 -> p1, p1 -> p2, p2 -> p2, p1 -> p3
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 1, 3, 4, 4}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{2, 0, 1, 0}));
  EXPECT_EQ(count_notes_containing(ds, "self-citations"), 0);
}

TEST(Linqs, CitationOfTwoUnknownPapersNamesBoth) {
  const Dataset ds = parse_linqs(kContent, "t.content", "a\tb\n", "t.cites");
  EXPECT_EQ(ds.notes.at(0), "t.cites:1: cites unknown papers 'b' and 'a'; skipped");
  EXPECT_EQ(ds.num_edges(), 0);
}

TEST(Linqs, MalformedContentNamesTheLine) {
  auto content_error = [](const std::string& text, std::initializer_list<std::string> needles) {
    expect_throw_naming<ParseError>([&] { (void)parse_linqs(text, "t.content", "", "t.cites"); }, needles);
  };
  content_error("p1\t1\t0\tA\np2\t1\tA\n",
                {"t.content:2:", "expected 2 word fields (as on line 1)", "found 1"});
  content_error("p1\t1\t0\tA\np2\t1\t2\tA\n", {"t.content:2:", "0 or 1 for word 2", "'2'"});
  content_error("p1\t1\t0\tA\np2\t1\t10\tA\n", {"t.content:2:", "0 or 1 for word 2", "'10'"});
  content_error("p1\t1\t\tA\n", {"t.content:1:", "0 or 1 for word 2", "''"});
  content_error("p1\t1\t0\tA\np1\t0\t0\tB\n", {"t.content:2:", "new paper id", "'p1'", "line 1"});
  content_error("p1 1 0 A\n", {"t.content:1:", "<paper id><TAB>", "'p1 1 0 A'"});
  content_error("p1\tA\n", {"t.content:1:", "word fields and a class label"});
  content_error("p1\t1\t0\t\n", {"t.content:1:", "class label", "empty field"});
  content_error("\t1\t0\tA\n", {"t.content:1:", "paper id", "empty field"});
  content_error("\n\n", {"t.content:3:", "at least one paper"});
}

TEST(Linqs, MalformedCitesNameTheLine) {
  expect_throw_naming<ParseError>([] { (void)parse_linqs(kContent, "t.content", "p1\tp2\np3\n", "t.cites"); },
                                  {"t.cites:2:", "citing paper id", "end of the line"});
  expect_throw_naming<ParseError>([] { (void)parse_linqs(kContent, "t.content", "p1\tp2\tp3\n", "t.cites"); },
                                  {"t.cites:1:", "end of the citation", "'p3'"});
}

const std::string kData = std::string(EDGEATTN_SOURCE_DIR) + "/datasets";

TEST(Linqs, CoraHasTheRecordedStatistics) {
  const Dataset ds = load_linqs(kData + "/cora/linqs", "cora");
  EXPECT_EQ(ds.name, "cora");
  EXPECT_EQ(ds.num_nodes(), 2708);
  EXPECT_EQ(ds.num_features(), 1433);
  EXPECT_EQ(ds.features.nnz(), 49216);
  EXPECT_EQ(ds.num_edges(), 10556);  // 5278 undirected pairs
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 0);
  EXPECT_TRUE(ds.notes.empty());
  EXPECT_EQ(class_counts(ds), (std::map<std::string, int64_t>{{"Case_Based", 298},
                                                              {"Genetic_Algorithms", 418},
                                                              {"Neural_Networks", 818},
                                                              {"Probabilistic_Methods", 426},
                                                              {"Reinforcement_Learning", 217},
                                                              {"Rule_Learning", 180},
                                                              {"Theory", 351}}));
  EXPECT_EQ(ds.labels.class_names.front(), "Case_Based");
  ASSERT_EQ(ds.sources.size(), 2u);
  EXPECT_EQ(ds.sources[0].bytes, 7823427);
  EXPECT_EQ(ds.sources[1].bytes, 69928);
  // The 5429 cites lines are distinct and none is a self-citation, so directed keeps them all.
  EXPECT_EQ(load_linqs(kData + "/cora/linqs", "cora", {.directed = true}).num_edges(), 5429);
}

TEST(Linqs, CiteSeerHasTheRecordedStatistics) {
  const Dataset ds = load_linqs(kData + "/citeseer/linqs", "citeseer");
  EXPECT_EQ(ds.num_nodes(), 3312);
  EXPECT_EQ(ds.num_features(), 3703);
  EXPECT_EQ(ds.features.nnz(), 105165);
  EXPECT_EQ(ds.num_edges(), 2 * 4536);
  EXPECT_EQ(ds.graph.degree_stats().self_loops, 0);
  EXPECT_EQ(count_notes_containing(ds, "cites unknown paper"), 17);
  EXPECT_EQ(count_notes_containing(ds, "skipped 17 of 4732 citation lines"), 1);
  EXPECT_EQ(count_notes_containing(ds, "removed 124 self-citations"), 1);
  EXPECT_EQ(class_counts(ds),
            (std::map<std::string, int64_t>{
                {"Agents", 596}, {"AI", 249}, {"DB", 701}, {"IR", 668}, {"ML", 590}, {"HCI", 508}}));
  // Some ids are not numbers.
  EXPECT_TRUE(std::find(ds.node_names.begin(), ds.node_names.end(), "abberley99thisl") !=
              ds.node_names.end());

  const Dataset kept =
      load_linqs(kData + "/citeseer/linqs", "citeseer", {.directed = true, .keep_self_citations = true});
  EXPECT_EQ(kept.num_edges(), 4732 - 17);
  EXPECT_EQ(kept.graph.degree_stats().self_loops, 124);
}

TEST(Linqs, PubMedCitesAloneHaveTheRecordedStatistics) {
  const std::string text = read_file(kData + "/pubmed/linqs/Pubmed-Diabetes.DIRECTED.cites.tab.gz");
  const Dataset kept = parse_pubmed_cites(text, "cites.tab", {.directed = true, .keep_self_citations = true});
  EXPECT_EQ(kept.num_nodes(), 19717);
  EXPECT_EQ(static_cast<int64_t>(kept.node_names.size()), 19717);
  EXPECT_EQ(kept.num_edges(), 44338);
  EXPECT_EQ(kept.graph.degree_stats().self_loops, 3);
  const Dataset ds = parse_pubmed_cites(text, "cites.tab");
  EXPECT_EQ(ds.num_edges(), 2 * 44324);
  EXPECT_EQ(ds.notes, (std::vector<std::string>{"cites.tab: removed 3 self-citations"}));
  ds.validate();
}

// PubMed-Diabetes NODE.paper.tab layout (PROVENANCE.md 3.2), with 3 words and 2 classes.
const std::string kPubmedNodes =
    "NODE\tpaper\n"
    "cat=1,2,3:label\tnumeric:w-rat:0.0\tnumeric:w-cell:0.0\tnumeric:w-insulin:0.0\tstring:summary\n"
    "111\tlabel=2\tw-insulin=0.5\tw-rat=0.25\tsummary=w-insulin,w-rat\n"
    "222\tlabel=1\tsummary=\n"
    "333\tlabel=2\tw-cell=0.125\tsummary=w-cell\n";
const std::string kPubmedCites =
    "DIRECTED\tcites\n"
    "NO_FEATURES\n"
    "7\tpaper:111\t|\tpaper:222\n"
    "9\tpaper:333\t|\tpaper:111\n"
    "12\tpaper:333\t|\tpaper:999\n";

TEST(Linqs, PubMedNodesGiveTfIdfFeaturesInSchemaOrder) {
  const Dataset ds = parse_pubmed_diabetes(kPubmedNodes, "n.tab", kPubmedCites, "c.tab", {.directed = true});
  EXPECT_EQ(ds.name, "pubmed");
  EXPECT_EQ(ds.node_names, (std::vector<std::string>{"111", "222", "333"}));
  const CsrMatrix& x = ds.features.sparse();
  EXPECT_EQ(x.cols(), 3);
  EXPECT_EQ(vec(x.indptr()), (std::vector<int64_t>{0, 2, 2, 3}));
  EXPECT_EQ(vec(x.indices()), (std::vector<int32_t>{0, 2, 1}));
  EXPECT_EQ(std::vector<float>(x.values().begin(), x.values().end()),
            (std::vector<float>{0.25f, 0.5f, 0.125f}));
  EXPECT_EQ(ds.labels.class_names, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(ds.labels.classes, (std::vector<int32_t>{1, 0, 1}));
  // 111 -> 222, 333 -> 111 (field 2 cites field 4); 999 is unknown.
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 1, 2, 2}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(ds.notes.at(0), "c.tab:5: cites unknown paper '999'; skipped");
  ds.validate();
}

TEST(Linqs, MalformedPubMedFilesNameTheLine) {
  auto nodes_error = [](const std::string& text, std::initializer_list<std::string> needles) {
    expect_throw_naming<ParseError>(
        [&] { (void)parse_pubmed_diabetes(text, "n.tab", kPubmedCites, "c.tab"); }, needles);
  };
  const std::string head = "NODE\tpaper\ncat=1,2:label\tnumeric:w-a:0.0\tstring:summary\n";
  nodes_error(head + "1\tlabel=1\tw-b=0.5\n", {"n.tab:3:", "declared in the schema (line 2)", "'w-b'"});
  nodes_error(head + "1\tlabel=1\tw-a=x\n", {"n.tab:3:", "finite number for 'w-a'", "'x'"});
  nodes_error(head + "1\tlabel=1\tw-a\n", {"n.tab:3:", "'name=value'", "'w-a'"});
  nodes_error(head + "1\tw-a=0.5\n", {"n.tab:3:", "'label=<class>'"});
  nodes_error(head + "1\tlabel=1\tw-a=0.5\tw-a=0.5\n", {"n.tab:3:", "at most once"});
  nodes_error(head + "1\tlabel=1\n1\tlabel=2\n", {"n.tab:4:", "new paper id", "'1'", "line 3"});
  nodes_error("NODE\tpaper\ncat=1,2:label\tw-a\n", {"n.tab:2:", "schema entry", "'w-a'"});
  nodes_error("NODE\tpaper\nnumeric:w-a:0.0\n", {"n.tab:2:", "'cat=...:label'"});
  nodes_error("NODE\tpaper\n", {"n.tab:2:", "schema line"});
  nodes_error("", {"n.tab:1:", "header line"});

  auto cites_error = [](const std::string& text, std::initializer_list<std::string> needles) {
    expect_throw_naming<ParseError>([&] { (void)parse_pubmed_cites(text, "c.tab"); }, needles);
  };
  cites_error("DIRECTED\tcites\nNO_FEATURES\n1\tpaper:1\t|\tpaper:2\n2\tpaper:1\t-\tpaper:2\n",
              {"c.tab:4:", "'|'", "'-'"});
  cites_error("DIRECTED\tcites\nNO_FEATURES\n1\tpmid:1\t|\tpaper:2\n",
              {"c.tab:3:", "paper:<pmid>", "'pmid:1'"});
  cites_error("DIRECTED\tcites\nNO_FEATURES\n1\tpaper:1\t|\tpaper:\n",
              {"c.tab:3:", "cited paper", "'paper:'"});
  cites_error("DIRECTED\tcites\nNO_FEATURES\n1\tpaper:1\t|\n",
              {"c.tab:3:", "cited paper", "end of the line"});
  cites_error("DIRECTED\tcites\n", {"c.tab:2:", "NO_FEATURES"});
}

TEST(Linqs, LoadFindsPlainOrGzipFilesAndNamesWhatIsMissing) {
  const edgeattn::testing::TempDir dir;
  write_file_atomic(dir / "Pubmed-Diabetes.NODE.paper.tab", kPubmedNodes);
  write_file_atomic(dir / "Pubmed-Diabetes.DIRECTED.cites.tab", kPubmedCites);
  const Dataset ds = load_linqs(dir.path(), "pubmed");
  EXPECT_EQ(ds.name, "pubmed");
  EXPECT_EQ(ds.num_nodes(), 3);
  EXPECT_EQ(ds.num_edges(), 4);
  ASSERT_EQ(ds.sources.size(), 2u);
  EXPECT_EQ(ds.sources[0].path, (dir / "Pubmed-Diabetes.NODE.paper.tab").string());

  // The repository ships PubMed's cites but not its NODE file.
  expect_throw_naming<IoError>([] { (void)load_linqs(kData + "/pubmed/linqs", "pubmed"); },
                               {"Pubmed-Diabetes.NODE.paper.tab", ".gz"});
  expect_throw_naming<IoError>([] { (void)load_linqs(kData + "/karate", "cora"); }, {"cora.content"});
  expect_throw_naming<InvalidArgument>([] { (void)load_linqs(kData, "ogbn-arxiv"); },
                                       {"'ogbn-arxiv'", "cora, citeseer or pubmed"});
}

}  // namespace
}  // namespace edgeattn::data
