#include "edgeattn/data/matrix_market.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
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

void expect_parse_error(const std::string& text, std::initializer_list<std::string> needles) {
  expect_throw_naming<ParseError>([&] { (void)parse_matrix_market(text, "m.mtx"); }, needles);
}

TEST(MatrixMarket, ReadsARealGeneralMatrixWithCommentsBlankLinesAndCrlf) {
  const std::string text =
      "%%MatrixMarket matrix coordinate real general\r\n"
      "% a comment\r\n"
      "\r\n"
      "3 4 4\r\n"
      "1 2 0.5\r\n"
      "% between entries\n"
      "3 1 2\n"
      "2 2   -1\n"
      "1\t4\t4e0\n";
  const MatrixMarketData m = parse_matrix_market(text, "m.mtx");
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(m.cols, 4);
  EXPECT_EQ(m.field, MatrixMarketField::real);
  EXPECT_EQ(m.symmetry, MatrixMarketSymmetry::general);
  EXPECT_EQ(m.size_line, 4);
  EXPECT_EQ(m.row, (std::vector<int64_t>{0, 2, 1, 0}));
  EXPECT_EQ(m.col, (std::vector<int64_t>{1, 0, 1, 3}));
  EXPECT_EQ(m.value, (std::vector<double>{0.5, 2.0, -1.0, 4.0}));
}

TEST(MatrixMarket, BannerWordsAreCaseInsensitive) {
  const MatrixMarketData m =
      parse_matrix_market("%%matrixmarket MATRIX Coordinate Pattern SYMMETRIC\n2 2 1\n2 1\n", "m");
  EXPECT_EQ(m.field, MatrixMarketField::pattern);
  EXPECT_EQ(m.symmetry, MatrixMarketSymmetry::symmetric);
  EXPECT_TRUE(m.value.empty());
  EXPECT_EQ(m.nnz(), 1);
}

TEST(MatrixMarket, IntegerValuesAreReadAsIntegers) {
  const MatrixMarketData m = parse_matrix_market(
      "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 12345678901234\n2 1 -7\n", "m");
  EXPECT_EQ(m.field, MatrixMarketField::integer);
  EXPECT_EQ(m.value, (std::vector<double>{12345678901234.0, -7.0}));
}

TEST(MatrixMarket, AnEmptyMatrixHasNoEntries) {
  const MatrixMarketData m =
      parse_matrix_market("%%MatrixMarket matrix coordinate real general\n0 0 0\n", "m");
  EXPECT_EQ(m.nnz(), 0);
  const Dataset ds = matrix_market_graph(m, "m");
  EXPECT_EQ(ds.num_nodes(), 0);
}

TEST(MatrixMarket, GeneralMatrixBecomesAGraphWithWeightsInCsrOrder) {
  // Entry (i, j) is the edge i -> j, stored in row j of the CSR.
  const Dataset ds = parse_matrix_market_graph(
      "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 2 0.5\n3 1 2\n2 2 -1\n1 3 4\n", "g");
  EXPECT_EQ(ds.format, "matrix-market");
  EXPECT_EQ(ds.name, "g");
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{2, 0, 1, 0}));
  EXPECT_EQ(ds.edge_weight, (std::vector<float>{2.f, 0.5f, -1.f, 4.f}));
  ds.validate();
}

TEST(MatrixMarket, SymmetricMatrixGivesBothDirectionsAndTheDiagonalOnce) {
  const std::string text =
      "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n2 1 5\n3 3 7\n3 2 -2\n";
  const Dataset ds = parse_matrix_market_graph(text, "g");
  EXPECT_EQ(vec(ds.graph.row_ptr()), (std::vector<int64_t>{0, 1, 3, 5}));
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{1, 0, 2, 1, 2}));
  EXPECT_EQ(ds.edge_weight, (std::vector<float>{5.f, 5.f, -2.f, -2.f, 7.f}));

  const Dataset no_diag = parse_matrix_market_graph(text, "g", {.self_loops = SelfLoops::remove});
  EXPECT_EQ(vec(no_diag.graph.row_ptr()), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(vec(no_diag.graph.col_idx()), (std::vector<int32_t>{1, 0, 2, 1}));
  EXPECT_EQ(no_diag.edge_weight, (std::vector<float>{5.f, 5.f, -2.f, -2.f}));

  const Dataset added = parse_matrix_market_graph(text, "g", {.self_loops = SelfLoops::add});
  EXPECT_EQ(vec(added.graph.col_idx()), (std::vector<int32_t>{0, 1, 0, 1, 2, 1, 2}));
  EXPECT_EQ(added.edge_weight, (std::vector<float>{1.f, 5.f, 5.f, 1.f, -2.f, -2.f, 1.f}));
}

TEST(MatrixMarket, SkewSymmetricMirrorCarriesTheNegatedValue) {
  const Dataset ds = parse_matrix_market_graph(
      "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3.5\n", "g");
  EXPECT_EQ(vec(ds.graph.col_idx()), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(ds.edge_weight, (std::vector<float>{3.5f, -3.5f}));
}

TEST(MatrixMarket, PatternGraphHasNoWeightsAndRepeatedEntriesMerge) {
  const std::string text = "%%MatrixMarket matrix coordinate pattern general\n2 2 3\n1 2\n1 2\n2 1\n";
  const Dataset ds = parse_matrix_market_graph(text, "g");
  EXPECT_EQ(ds.num_edges(), 2);
  EXPECT_TRUE(ds.edge_weight.empty());
  EXPECT_EQ(parse_matrix_market_graph(text, "g", {.duplicates = Duplicates::keep}).num_edges(), 3);
}

// scipy.io.mmread(...).tocsr() sums repeated entries; so does the merged edge's weight.
TEST(MatrixMarket, RepeatedEntriesSumTheirValuesAsScipy) {
  const Dataset general = parse_matrix_market_graph(
      "%%MatrixMarket matrix coordinate real general\n2 2 4\n1 2 1.5\n2 1 7\n1 2 2.5\n1 2 -1\n", "g");
  EXPECT_EQ(vec(general.graph.col_idx()), (std::vector<int32_t>{1, 0}));  // row = destination
  EXPECT_EQ(general.edge_weight, (std::vector<float>{7.f, 3.f}));
  // Symmetric: each listed entry and its mirror; a repeated one adds to both.
  const Dataset symmetric = parse_matrix_market_graph(
      "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n2 1 4\n3 3 1\n2 1 5\n", "g");
  EXPECT_EQ(vec(symmetric.graph.col_idx()), (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(symmetric.edge_weight, (std::vector<float>{9.f, 9.f, 1.f}));
  // Kept apart, each copy keeps its own value.
  const Dataset kept =
      parse_matrix_market_graph("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 1.5\n1 2 2.5\n",
                                "g", {.duplicates = Duplicates::keep});
  EXPECT_EQ(kept.edge_weight, (std::vector<float>{1.5f, 2.5f}));
}

TEST(MatrixMarket, LoadReadsAFileAndRecordsItsSource) {
  const edgeattn::testing::TempDir dir;
  const std::string text = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 1\n";
  write_file_atomic(dir / "star.mtx", text);
  const Dataset ds = load_matrix_market_graph(dir / "star.mtx");
  EXPECT_EQ(ds.name, "star");
  EXPECT_EQ(ds.num_edges(), 4);
  ASSERT_EQ(ds.sources.size(), 1u);
  EXPECT_EQ(ds.sources[0].bytes, static_cast<int64_t>(text.size()));
  EXPECT_EQ(load_matrix_market(dir / "star.mtx").nnz(), 2);
  expect_throw_naming<IoError>([&] { (void)load_matrix_market(dir / "missing.mtx"); }, {"missing.mtx"});
}

TEST(MatrixMarket, UnsupportedLayoutsAndFieldsSayWhatIsSupported) {
  expect_parse_error("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
                     {"m.mtx:1:", "'array'", "coordinate"});
  expect_parse_error("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
                     {"m.mtx:1:", "'complex'", "real, integer or pattern"});
  expect_parse_error("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n",
                     {"m.mtx:1:", "'hermitian'", "general, symmetric or skew-symmetric"});
  expect_parse_error("%%MatrixMarket vector coordinate real general\n", {"m.mtx:1:", "'vector'"});
  expect_parse_error("%%MatrixMarket matrix coordinate pattern skew-symmetric\n1 1 0\n",
                     {"m.mtx:1:", "'pattern'"});
}

TEST(MatrixMarket, MalformedHeadersNameTheLine) {
  expect_parse_error("", {"m.mtx:1:", "banner", "empty file"});
  expect_parse_error("3 3 1\n1 1 1\n", {"m.mtx:1:", "banner", "found '3'"});
  expect_parse_error("%%MatrixMarket matrix coordinate real general extra\n",
                     {"m.mtx:1:", "end of the banner", "'extra'"});
  expect_parse_error("%%MatrixMarket matrix coordinate real general\n% only comments\n",
                     {"m.mtx:3:", "size line"});
  expect_parse_error("%%MatrixMarket matrix coordinate real general\n3 x 1\n",
                     {"m.mtx:2:", "number of columns", "'x'"});
  expect_parse_error("%%MatrixMarket matrix coordinate real general\n3 3\n",
                     {"m.mtx:2:", "number of entries", "end of the line"});
  expect_parse_error("%%MatrixMarket matrix coordinate real general\n-3 3 0\n",
                     {"m.mtx:2:", "non-negative", "-3"});
  expect_parse_error("%%MatrixMarket matrix coordinate real symmetric\n3 2 0\n",
                     {"m.mtx:2:", "square", "3 x 2"});
}

TEST(MatrixMarket, BadEntriesNameTheLine) {
  const std::string head = "%%MatrixMarket matrix coordinate real general\n3 3 2\n";
  expect_parse_error(head + "1 1 1\n", {"m.mtx:4:", "expected 2 entries", "found 1", "end of the file"});
  expect_parse_error(head + "1 1 1\n2 2 2\n3 3 3\n", {"m.mtx:5:", "no more entries", "declares 2"});
  expect_parse_error(head + "1 1 1\n4 1 1\n", {"m.mtx:4:", "row index in [1, 3]", "found 4"});
  expect_parse_error(head + "0 1 1\n1 1 1\n", {"m.mtx:3:", "row index in [1, 3]", "found 0"});
  expect_parse_error(head + "1 9 1\n1 1 1\n", {"m.mtx:3:", "column index in [1, 3]", "found 9"});
  expect_parse_error(head + "1 1\n1 1 1\n", {"m.mtx:3:", "a value", "end of the line"});
  expect_parse_error(head + "1 1 abc\n1 1 1\n", {"m.mtx:3:", "a value", "'abc'"});
  expect_parse_error(head + "1 1 nan\n1 1 1\n", {"m.mtx:3:", "finite value", "nan"});
  expect_parse_error(head + "1 1 1 1\n1 1 1\n", {"m.mtx:3:", "end of the entry", "'1'"});
  expect_parse_error("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 0.5\n",
                     {"m.mtx:3:", "end of the entry", "'0.5'"});
  expect_parse_error("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 0.5\n",
                     {"m.mtx:3:", "integer value", "'0.5'"});
  expect_parse_error("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n",
                     {"m.mtx:3:", "below the diagonal", "(1, 2)"});
  expect_parse_error("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n",
                     {"m.mtx:3:", "below the diagonal", "(1, 1)"});
}

TEST(MatrixMarket, GraphNeedsASquareMatrixWithinMaxNodes) {
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_matrix_market_graph("%%MatrixMarket matrix coordinate real general\n% c\n2 3 0\n",
                                        "r.mtx");
      },
      {"r.mtx:3:", "square", "2 x 3"});
  expect_throw_naming<ParseError>(
      [] {
        (void)parse_matrix_market_graph("%%MatrixMarket matrix coordinate real general\n9 9 0\n", "r.mtx",
                                        {.max_nodes = 8});
      },
      {"r.mtx:2:", "max_nodes = 8", "9"});
}

// A value token of one of the shapes decimal writers produce, or an edge case of the exact fast
// path (19 vs 20 significant digits, 2^53 vs 2^53 + 1, powers of ten at and beyond 10^±22).
std::string random_value_token(std::mt19937_64& rng, bool integer_only) {
  static const char* const kSpecial[] = {"0",
                                         "-0",
                                         "+7",
                                         "9007199254740992",
                                         "9007199254740993",
                                         "1234567890123456789",
                                         "12345678901234567890",
                                         "0.1",
                                         "-0.000001",
                                         ".5",
                                         "5.",
                                         "1e22",
                                         "1e23",
                                         "1E-22",
                                         "1e-23",
                                         "3.5e+2",
                                         "2.2250738585072014e-308",
                                         "1.7976931348623157e308",
                                         "4.9e-324",
                                         "0.30000000000000004",
                                         "123456789012345678e-5",
                                         "00000000000000000000001.5"};
  static const char* const kSpecialInteger[] = {
      "0", "-0", "+12", "12345678901234", "9007199254740993", "-9223372036854775807", "000123"};
  auto digits = [&](int n) {
    std::string d;
    for (int i = 0; i < n; ++i) d += static_cast<char>('0' + rng() % 10);
    return d;
  };
  if (rng() % 4 == 0) {
    if (integer_only) return kSpecialInteger[rng() % std::size(kSpecialInteger)];
    return kSpecial[rng() % std::size(kSpecial)];
  }
  std::string t = rng() % 3 == 0 ? "-" : "";
  t += digits(1 + static_cast<int>(rng() % (integer_only ? 15 : 12)));
  if (integer_only) return t;
  if (rng() % 4 != 0) {
    t += '.';
    t.append(digits(static_cast<int>(rng() % 12)));
  }
  if (rng() % 3 == 0) {  // append, not operator+: GCC 12 warns (-Wrestrict) on the temporaries
    t += rng() % 2 ? 'e' : 'E';
    t.append(std::to_string(static_cast<int>(rng() % 61) - 30));
  }
  return t;
}

TEST(MatrixMarket, ValuesAreTheCorrectlyRoundedDoublesOfTheirText) {
  // Plain lines take a fast path (an exact conversion in one IEEE operation where the digits
  // allow it); every value must still be the double std::from_chars gives, bit for bit.
  std::mt19937_64 rng(20261123);
  for (const bool integer_only : {false, true}) {
    std::vector<std::string> tokens;
    std::string text = std::string("%%MatrixMarket matrix coordinate ") +
                       (integer_only ? "integer" : "real") + " general\n50 50 4000\n";
    const char* const kGaps[] = {" ", "\t", "  ", " \t"};
    const char* const kEnds[] = {"\n", " \n", "\r\n", "\t\n"};
    for (int k = 0; k < 4000; ++k) {
      tokens.push_back(random_value_token(rng, integer_only));
      text += std::to_string(1 + rng() % 50) + kGaps[rng() % 4] + std::to_string(1 + rng() % 50) +
              kGaps[rng() % 4] + tokens.back() + (k + 1 < 4000 ? kEnds[rng() % 4] : "");
    }
    const MatrixMarketData m = parse_matrix_market(text, "m.mtx");
    ASSERT_EQ(m.value.size(), tokens.size());
    for (size_t k = 0; k < tokens.size(); ++k) {
      std::string_view t = tokens[k];
      if (t.front() == '+') t.remove_prefix(1);
      double expected = 0;
      if (integer_only) {
        int64_t n = 0;
        ASSERT_EQ(std::from_chars(t.data(), t.data() + t.size(), n).ec, std::errc()) << t;
        expected = static_cast<double>(n);
      } else {
        ASSERT_EQ(std::from_chars(t.data(), t.data() + t.size(), expected).ec, std::errc()) << t;
      }
      EXPECT_EQ(std::bit_cast<uint64_t>(m.value[k]), std::bit_cast<uint64_t>(expected))
          << "entry " << k << ": '" << tokens[k] << "' read as " << m.value[k];
    }
  }
}

TEST(MatrixMarket, TheGraphReaderGivesTheGraphOfTheParsedEntries) {
  // parse_matrix_market_graph reads the entries straight into 32-bit ids and float weights; it
  // must give what matrix_market_graph gives for the same text parsed into MatrixMarketData.
  std::mt19937_64 rng(7);
  const char* const kFields[] = {"real", "integer", "pattern"};
  const char* const kSymmetries[] = {"general", "symmetric", "skew-symmetric"};
  for (const char* field : kFields) {
    for (const char* symmetry : kSymmetries) {
      const std::string f = field, sym = symmetry;
      if (f == "pattern" && sym == "skew-symmetric") continue;
      std::string body;
      int nnz = 0;
      for (int k = 0; k < 600; ++k) {
        int64_t i = 1 + static_cast<int64_t>(rng() % 40), j = 1 + static_cast<int64_t>(rng() % 40);
        if (sym != "general" && i < j) std::swap(i, j);
        if (sym == "skew-symmetric" && i == j) continue;
        body += std::to_string(i) + " " + std::to_string(j);
        if (f != "pattern") {
          body += ' ';
          body.append(random_value_token(rng, f == "integer"));
        }
        body += k % 50 == 0 ? "\n% a comment\n\n" : "\n";
        ++nnz;
      }
      const std::string text = "%%MatrixMarket matrix coordinate " + f + " " + sym + "\n40 40 " +
                               std::to_string(nnz) + "\n" + body;
      for (const MatrixMarketGraphOptions options :
           {MatrixMarketGraphOptions{}, MatrixMarketGraphOptions{.self_loops = SelfLoops::add},
            MatrixMarketGraphOptions{.self_loops = SelfLoops::remove, .duplicates = Duplicates::keep}}) {
        const Dataset direct = parse_matrix_market_graph(text, "g", options);
        const Dataset via_data = matrix_market_graph(parse_matrix_market(text, "g"), "g", options);
        SCOPED_TRACE(f + " " + sym);
        EXPECT_EQ(vec(direct.graph.row_ptr()), vec(via_data.graph.row_ptr()));
        EXPECT_EQ(vec(direct.graph.col_idx()), vec(via_data.graph.col_idx()));
        EXPECT_EQ(direct.edge_weight, via_data.edge_weight);
        EXPECT_EQ(direct.edge_weight.empty(), f == "pattern");
      }
    }
  }
}

TEST(MatrixMarket, AHugeDeclaredEntryCountDoesNotAllocateUpFront) {
  expect_parse_error("%%MatrixMarket matrix coordinate real general\n3 3 4000000000000000000\n1 1 1\n",
                     {"m.mtx:4:", "expected 4000000000000000000 entries", "found 1"});
}

TEST(MatrixMarket, ASizeLineBeyondTheLoadLimitIsRefusedBeforeTheGraphIsBuilt) {
  ::setenv("EDGEATTN_MAX_LOAD_BYTES", "1000000", 1);  // 1 MB: ~40k nodes
  const std::string head = "%%MatrixMarket matrix coordinate pattern general\n";
  EXPECT_EQ(parse_matrix_market_graph(head + "30000 30000 1\n1 2\n", "small.mtx").num_nodes(), 30000);
  expect_throw_naming<ParseError>(
      [&] { (void)parse_matrix_market_graph(head + "2000000000 2000000000 1\n1 2\n", "huge.mtx"); },
      {"huge.mtx:2", "the size line declares 2000000000 rows", "EDGEATTN_MAX_LOAD_BYTES"});
  ::unsetenv("EDGEATTN_MAX_LOAD_BYTES");
}

}  // namespace
}  // namespace edgeattn::data
