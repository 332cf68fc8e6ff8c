// Structured attention patterns: each one, over a spread of parameters, is checked against a
// brute-force oracle built from `contains(i, j)` alone:
//   materialize == {(i, j) : contains(i, j)}, row offsets included;
//   for_each_in_row yields the materialised row with consecutive CSR edge numbers;
//   for_each_in_col yields the transpose, ascending, with the CSR edge number of each (i, j);
//   row_range agrees with the rows; the partition covers [0, num_dst].
// Plus hand-written small cases, parameter validation, and the O(rows) memory promise.
#include "edgeattn/graph/pattern.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/graph/graph.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn {
namespace {

static_assert(AttentionPattern<CompletePattern>);
static_assert(AttentionPattern<CausalPattern>);
static_assert(AttentionPattern<WindowPattern>);
static_assert(AttentionPattern<BlockDiagonalPattern>);
static_assert(AttentionPattern<WindowGlobalPattern>);
static_assert(AttentionPattern<CsrPattern>);
static_assert(ContiguousRowPattern<CompletePattern>);
static_assert(ContiguousRowPattern<CausalPattern>);
static_assert(ContiguousRowPattern<WindowPattern>);
static_assert(ContiguousRowPattern<BlockDiagonalPattern>);
static_assert(!ContiguousRowPattern<WindowGlobalPattern>);
static_assert(!ContiguousRowPattern<CsrPattern>);

using Rows = std::vector<std::vector<int32_t>>;
using Entries = std::vector<std::vector<std::pair<int32_t, int64_t>>>;  // (neighbour, edge)

/// The oracle: row i = every j in [0, num_src) with contains(i, j), ascending.
template <class P>
Rows brute_force_rows(const P& p) {
  Rows rows(static_cast<size_t>(p.num_dst()));
  for (int64_t i = 0; i < p.num_dst(); ++i)
    for (int64_t j = 0; j < p.num_src(); ++j)
      if (p.contains(i, j)) rows[static_cast<size_t>(i)].push_back(static_cast<int32_t>(j));
  return rows;
}

/// Transpose of CSR rows: for source j, the (destination, CSR edge) pairs in ascending destination.
Entries brute_force_columns(const Rows& rows, int64_t num_src) {
  Entries cols(static_cast<size_t>(num_src));
  int64_t e = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    for (int32_t j : rows[i]) cols[static_cast<size_t>(j)].emplace_back(static_cast<int32_t>(i), e++);
  return cols;
}

/// Runs every structural check of the file on one pattern.
template <class P>
void check_pattern(const P& p) {
  SCOPED_TRACE(describe(Pattern(p)));
  const int64_t nd = p.num_dst(), ns = p.num_src();
  const Rows rows = brute_force_rows(p);

  // (1) materialize == oracle, and the row offsets agree.
  const Graph g = materialize(Pattern(p));
  ASSERT_EQ(g.num_dst(), nd);
  ASSERT_EQ(g.num_src(), ns);
  int64_t expected_edges = 0;
  for (const auto& r : rows) expected_edges += static_cast<int64_t>(r.size());
  ASSERT_EQ(p.num_edges(), expected_edges);
  ASSERT_EQ(g.num_edges(), expected_edges);
  ASSERT_EQ(num_edges(Pattern(p)), expected_edges);
  int64_t offset = 0;
  for (int64_t i = 0; i <= nd; ++i) {
    ASSERT_EQ(p.row_offset(i), offset) << "row_offset(" << i << ")";
    ASSERT_EQ(g.row_ptr()[static_cast<size_t>(i)], offset) << "materialised row_ptr[" << i << "]";
    if (i < nd) {
      const auto& want = rows[static_cast<size_t>(i)];
      const auto got = g.row(i);
      ASSERT_EQ(std::vector<int32_t>(got.begin(), got.end()), want) << "materialised row " << i;
      offset += static_cast<int64_t>(want.size());
    }
  }

  // (2) for_each_in_row yields the row with edges numbered from row_offset(i).
  for (int64_t i = 0; i < nd; ++i) {
    std::vector<int32_t> js;
    std::vector<int64_t> es;
    p.for_each_in_row(i, [&](int32_t j, int64_t e) {
      js.push_back(j);
      es.push_back(e);
    });
    ASSERT_EQ(js, rows[static_cast<size_t>(i)]) << "for_each_in_row(" << i << ")";
    for (size_t k = 0; k < es.size(); ++k)
      ASSERT_EQ(es[k], p.row_offset(i) + static_cast<int64_t>(k)) << "row " << i << " position " << k;
  }

  // (3) for_each_in_col yields the transpose, ascending, with CSR edge numbers.
  const Entries cols = brute_force_columns(rows, ns);
  for (int64_t j = 0; j < ns; ++j) {
    std::vector<std::pair<int32_t, int64_t>> got;
    p.for_each_in_col(j, [&](int32_t i, int64_t e) { got.emplace_back(i, e); });
    ASSERT_EQ(got, cols[static_cast<size_t>(j)]) << "for_each_in_col(" << j << ")";
  }

  // (4) row_range brackets each row; for contiguous rows it is exactly the row.
  if constexpr (ContiguousRowPattern<P>) {
    for (int64_t i = 0; i < nd; ++i) {
      const auto [first, last] = p.row_range(i);
      const auto& row = rows[static_cast<size_t>(i)];
      if (row.empty()) {
        ASSERT_EQ(first, last) << "row_range of empty row " << i;
        continue;
      }
      ASSERT_EQ(first, row.front()) << "row_range(" << i << ").first";
      ASSERT_EQ(last, row.back() + 1) << "row_range(" << i << ").second";
      bool contiguous = true;
      if constexpr (std::is_same_v<P, WindowPattern>) contiguous = p.dilation() == 1;
      if (contiguous) {
        ASSERT_EQ(last - first, static_cast<int64_t>(row.size())) << "row " << i;
      }
    }
  }

  // (5) partition: from 0 to num_dst, monotone.
  const auto part = p.partition();
  ASSERT_FALSE(part.empty());
  EXPECT_EQ(part.front(), 0);
  EXPECT_EQ(part.back(), nd);
  for (size_t c = 1; c < part.size(); ++c) EXPECT_LE(part[c - 1], part[c]) << "partition[" << c << "]";

  // contains is false outside the index ranges rather than reading out of bounds.
  EXPECT_FALSE(p.contains(-1, 0));
  EXPECT_FALSE(p.contains(0, -1));
  EXPECT_FALSE(p.contains(nd, 0));
  EXPECT_FALSE(p.contains(0, ns));

  // Free functions over the variant agree with the members.
  EXPECT_EQ(num_dst(Pattern(p)), nd);
  EXPECT_EQ(num_src(Pattern(p)), ns);
  const double want_density =
      nd > 0 && ns > 0 ? static_cast<double>(expected_edges) / (double(nd) * double(ns)) : 0.0;
  EXPECT_DOUBLE_EQ(density(Pattern(p)), want_density);
}

Rows rows_of(const Graph& g) {
  Rows rows;
  for (int64_t i = 0; i < g.num_dst(); ++i) {
    const auto r = g.row(i);
    rows.emplace_back(r.begin(), r.end());
  }
  return rows;
}

/// Expects `make()` to throw InvalidArgument whose message names `operand`.
void expect_invalid(const std::function<void()>& make, const std::string& operand) {
  try {
    make();
    ADD_FAILURE() << "expected InvalidArgument naming '" << operand << "', nothing was thrown";
  } catch (const InvalidArgument& err) {
    EXPECT_NE(std::string(err.what()).find(operand), std::string::npos)
        << "message '" << err.what() << "' does not name '" << operand << "'";
  }
}

// ---------------------------------------------------------------------------------------------
// Hand-computed small cases
// ---------------------------------------------------------------------------------------------

TEST(PatternTest, WindowOfRadiusOneOnFivePositionsHasTheExpectedRows) {
  EXPECT_EQ(rows_of(materialize(WindowPattern(5, 1, 1))),
            (Rows{{0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4}}));
}

TEST(PatternTest, DilatedCausalWindowSkipsPositions) {
  // left 2, right 0, dilation 2: j in {i - 4, i - 2, i}.
  EXPECT_EQ(rows_of(materialize(WindowPattern::sliding(6, 2, /*causal=*/true, 2))),
            (Rows{{0}, {1}, {0, 2}, {1, 3}, {0, 2, 4}, {1, 3, 5}}));
}

TEST(PatternTest, CausalWithMoreSourcesIsAlignedToTheEnd) {
  EXPECT_EQ(rows_of(materialize(CausalPattern(3, 5))), (Rows{{0, 1, 2}, {0, 1, 2, 3}, {0, 1, 2, 3, 4}}));
}

TEST(PatternTest, CausalWithFewerSourcesLeavesLeadingRowsEmpty) {
  EXPECT_EQ(rows_of(materialize(CausalPattern(4, 2))), (Rows{{}, {}, {0}, {0, 1}}));
}

TEST(PatternTest, PaddedBatchAttendsOnlyToValidPositionsOfItsOwnSequence) {
  const auto p = BlockDiagonalPattern::padded_batch(3, {2, 0, 3});
  EXPECT_EQ(p.num_blocks(), 3);
  EXPECT_EQ(std::vector<int64_t>(p.block_starts().begin(), p.block_starts().end()),
            (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(rows_of(materialize(p)),
            (Rows{{0, 1}, {0, 1}, {0, 1}, {}, {}, {}, {6, 7, 8}, {6, 7, 8}, {6, 7, 8}}));
  EXPECT_EQ(p.block_of(0), 0);
  EXPECT_EQ(p.block_of(5), 1);
  EXPECT_EQ(p.block_of(8), 2);
}

TEST(PatternTest, EmptyBlocksAreSkippedByBlockOf) {
  const BlockDiagonalPattern p({0, 0, 2, 2, 2, 3}, {0, 1, 0, 0, 1});
  EXPECT_EQ(p.block_of(0), 1);
  EXPECT_EQ(p.block_of(1), 1);
  EXPECT_EQ(p.block_of(2), 4);
  EXPECT_EQ(rows_of(materialize(p)), (Rows{{0}, {0}, {2}}));
}

TEST(PatternTest, GlobalTokenAttendsToAllAndIsAttendedByAll) {
  const WindowGlobalPattern p(6, 1, {3, 3});
  EXPECT_EQ(std::vector<int64_t>(p.global_tokens().begin(), p.global_tokens().end()),
            (std::vector<int64_t>{3}));
  EXPECT_TRUE(p.is_global(3));
  EXPECT_FALSE(p.is_global(2));
  EXPECT_EQ(rows_of(materialize(p)),
            (Rows{{0, 1, 3}, {0, 1, 2, 3}, {1, 2, 3}, {0, 1, 2, 3, 4, 5}, {3, 4, 5}, {3, 4, 5}}));
}

TEST(PatternTest, DescribeNamesThePatternAndItsParameters) {
  EXPECT_EQ(describe(CompletePattern(4096, 4096)), "complete(4096x4096)");
  EXPECT_EQ(describe(WindowPattern::sliding(16384, 256)), "window(n=16384, left=256, right=256, dilation=1)");
  EXPECT_EQ(describe(CausalPattern(3, 5)), "causal(3x5)");
  EXPECT_EQ(describe(testing::four_node_graph()), "graph(num_dst=4, num_src=4, num_edges=7)");
  EXPECT_NE(describe(BlockDiagonalPattern::padded_batch(4, {1, 2})).find("block_diagonal"),
            std::string::npos);
  EXPECT_NE(describe(WindowGlobalPattern(8, 1, {0})).find("radius=1"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Every pattern against the brute-force oracle
// ---------------------------------------------------------------------------------------------

TEST(PatternTest, CompleteMatchesBruteForce) {
  for (int64_t nd : {0, 1, 2, 7, 33})
    for (int64_t ns : {0, 1, 5, 40}) check_pattern(CompletePattern(nd, ns));
}

TEST(PatternTest, CausalMatchesBruteForce) {
  for (int64_t n : {0, 1, 2, 17, 64}) check_pattern(CausalPattern(n));
  for (auto [nd, ns] : std::vector<std::pair<int64_t, int64_t>>{
           {3, 10}, {10, 3}, {1, 20}, {20, 1}, {0, 5}, {5, 0}, {31, 32}, {32, 31}})
    check_pattern(CausalPattern(nd, ns));
}

TEST(PatternTest, WindowMatchesBruteForce) {
  for (int64_t n : {0, 1, 2, 9, 41})
    for (int64_t left : {0, 1, 3, 50})
      for (int64_t right : {0, 2, 50})
        for (int64_t dilation : {1, 2, 3}) check_pattern(WindowPattern(n, left, right, dilation));
}

TEST(PatternTest, SlidingWindowMatchesBruteForce) {
  for (int64_t n : {1, 16, 37})
    for (int64_t w : {0, 1, 4, 100})
      for (bool causal : {false, true})
        for (int64_t dilation : {1, 2, 3}) {
          const auto p = WindowPattern::sliding(n, w, causal, dilation);
          EXPECT_EQ(p.left(), w);
          EXPECT_EQ(p.right(), causal ? 0 : w);
          check_pattern(p);
        }
}

TEST(PatternTest, WindowWithHugeExtentsDoesNotOverflow) {
  const int64_t huge = int64_t{1} << 62;
  check_pattern(WindowPattern(13, huge, huge, 1));
  check_pattern(WindowPattern(13, huge, 0, 5));
}

TEST(PatternTest, BlockDiagonalMatchesBruteForce) {
  check_pattern(BlockDiagonalPattern({0}, {}));
  check_pattern(BlockDiagonalPattern({0, 1}, {1}));
  check_pattern(BlockDiagonalPattern({0, 1}, {0}));
  check_pattern(BlockDiagonalPattern({0, 4, 4, 9, 16, 17}, {4, 0, 0, 7, 1}));
  check_pattern(BlockDiagonalPattern({0, 0, 5, 5, 12}, {0, 3, 0, 12 - 5}));
  check_pattern(BlockDiagonalPattern::padded_batch(8, {8, 0, 3, 1, 8, 5}));
  check_pattern(BlockDiagonalPattern::padded_batch(0, {0, 0}));
  check_pattern(BlockDiagonalPattern::padded_batch(5, {}));
}

TEST(PatternTest, WindowGlobalMatchesBruteForce) {
  for (int64_t n : {1, 2, 10, 37})
    for (int64_t radius : {0, 1, 3, 100}) {
      const std::vector<std::vector<int64_t>> global_sets = {{},
                                                             {0},
                                                             {n - 1},
                                                             {0, n - 1},
                                                             {n / 2},
                                                             {n / 2, 0, n / 2, n - 1, n / 3},
                                                             {n / 3, std::min(n - 1, n / 3 + 1)}};
      for (const auto& globals : global_sets) check_pattern(WindowGlobalPattern(n, radius, globals));
    }
  check_pattern(WindowGlobalPattern(0, 2, {}));
  // Every position global: the complete pattern.
  check_pattern(WindowGlobalPattern(6, 0, {5, 4, 3, 2, 1, 0}));
}

TEST(PatternTest, CsrPatternViewsAGraphThroughTheConcept) {
  const Graph g = testing::four_node_graph();
  const CsrPattern p(g);
  EXPECT_EQ(p.num_edges(), 7);
  EXPECT_TRUE(p.contains(3, 2));
  EXPECT_FALSE(p.contains(2, 2));
  EXPECT_FALSE(p.contains(1, 1));
  EXPECT_FALSE(p.contains(-1, 0));
  EXPECT_FALSE(p.contains(0, 4));
  const Rows rows = rows_of(g);
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<int32_t> js;
    p.for_each_in_row(i, [&](int32_t j, int64_t e) {
      EXPECT_EQ(e, p.row_offset(i) + static_cast<int64_t>(js.size()));
      js.push_back(j);
    });
    EXPECT_EQ(js, rows[static_cast<size_t>(i)]);
  }
  const Entries cols = brute_force_columns(rows, 4);
  for (int64_t j = 0; j < 4; ++j) {
    std::vector<std::pair<int32_t, int64_t>> got;
    p.for_each_in_col(j, [&](int32_t i, int64_t e) { got.emplace_back(i, e); });
    EXPECT_EQ(got, cols[static_cast<size_t>(j)]) << "column " << j;
  }
}

TEST(PatternTest, MaterializingAGraphReturnsTheSameGraph) {
  const Graph g = testing::uniform_graph(20, 30, 100, 7);
  const Graph m = materialize(Pattern(g));
  EXPECT_EQ(m.row_ptr().data(), g.row_ptr().data());  // shared storage, not a copy
  EXPECT_EQ(num_edges(Pattern(g)), g.num_edges());
}

TEST(PatternTest, CompletePatternOfTenBillionEdgesNeedsOnlyRowMemory) {
  const CompletePattern p(100000, 100000);
  EXPECT_EQ(p.num_edges(), int64_t{10000000000});
  EXPECT_EQ(num_edges(Pattern(p)), int64_t{10000000000});
  EXPECT_EQ(p.row_offsets().size(), size_t{100001});
  EXPECT_EQ(p.row_offset(99999), int64_t{99999} * 100000);
  EXPECT_LE(p.partition().size(), size_t{1000});
  EXPECT_DOUBLE_EQ(density(Pattern(p)), 1.0);
  int64_t count = 0, last_e = -1;
  p.for_each_in_row(99999, [&](int32_t, int64_t e) {
    ++count;
    last_e = e;
  });
  EXPECT_EQ(count, 100000);
  EXPECT_EQ(last_e, p.num_edges() - 1);
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

TEST(PatternTest, InvalidParametersThrowNamingTheParameter) {
  const int64_t too_big = int64_t{1} << 31;
  expect_invalid([] { CompletePattern(-1, 3); }, "num_dst");
  expect_invalid([] { CompletePattern(3, -1); }, "num_src");
  expect_invalid([=] { CompletePattern(too_big, 1); }, "num_dst");
  expect_invalid([] { CausalPattern(-2); }, "num_dst");
  expect_invalid([] { CausalPattern(2, -3); }, "num_src");
  expect_invalid([=] { CausalPattern(1, too_big); }, "num_src");
  expect_invalid([] { WindowPattern(-1, 1, 1); }, "n");
  expect_invalid([=] { WindowPattern(too_big, 1, 1); }, "n");
  expect_invalid([] { WindowPattern(10, -1, 1); }, "left");
  expect_invalid([] { WindowPattern(10, 1, -1); }, "right");
  expect_invalid([] { WindowPattern(10, 1, 1, 0); }, "dilation");
  expect_invalid([] { WindowPattern(10, 1, 1, -2); }, "dilation");
  expect_invalid([] { WindowPattern::sliding(10, -1); }, "w");
  expect_invalid([] { WindowPattern::sliding(10, 1, false, 0); }, "dilation");
  expect_invalid([] { BlockDiagonalPattern({}, {}); }, "block_starts");
  expect_invalid([] { BlockDiagonalPattern({1, 3}, {1}); }, "block_starts[0]");
  expect_invalid([] { BlockDiagonalPattern({0, 4, 2}, {1, 0}); }, "block_starts[2]");
  expect_invalid([] { BlockDiagonalPattern({0, 4, 6}, {1}); }, "valid_lengths");
  expect_invalid([] { BlockDiagonalPattern({0, 4}, {1, 1}); }, "valid_lengths");
  expect_invalid([] { BlockDiagonalPattern({0, 4, 6}, {1, 3}); }, "valid_lengths[1]");
  expect_invalid([] { BlockDiagonalPattern({0, 4, 6}, {-1, 2}); }, "valid_lengths[0]");
  expect_invalid([=] { BlockDiagonalPattern({0, too_big}, {0}); }, "block_starts");
  expect_invalid([] { BlockDiagonalPattern::padded_batch(-1, {0}); }, "seq_len");
  expect_invalid([] { BlockDiagonalPattern::padded_batch(4, {5}); }, "valid_lengths[0]");
  expect_invalid([] { BlockDiagonalPattern::padded_batch(int64_t{1} << 30, {1, 1, 1}); }, "seq_len");
  expect_invalid([] { WindowGlobalPattern(-1, 1, {}); }, "n");
  expect_invalid([] { WindowGlobalPattern(10, -1, {}); }, "radius");
  expect_invalid([] { WindowGlobalPattern(10, 1, {0, 10}); }, "global_tokens[1]");
  expect_invalid([] { WindowGlobalPattern(10, 1, {-1}); }, "global_tokens[0]");
}

TEST(StructuredEquivalent, RecognisesEveryMaterialisedCompleteCausalAndWindowPattern) {
  auto same = [](const Pattern& original, const char* what) {
    const std::optional<Pattern> back = structured_equivalent(materialize(original));
    ASSERT_TRUE(back.has_value()) << what << ": " << describe(original);
    EXPECT_EQ(back->index(), original.index()) << what << ": " << describe(*back);
    const Graph a = materialize(*back), b = materialize(original);
    EXPECT_EQ(std::vector<int64_t>(a.row_ptr().begin(), a.row_ptr().end()),
              std::vector<int64_t>(b.row_ptr().begin(), b.row_ptr().end()))
        << what;
    EXPECT_EQ(std::vector<int32_t>(a.col_idx().begin(), a.col_idx().end()),
              std::vector<int32_t>(b.col_idx().begin(), b.col_idx().end()))
        << what;
  };
  same(CompletePattern(7, 7), "complete square");
  same(CompletePattern(3, 9), "complete wide");
  same(CompletePattern(9, 3), "complete tall");
  same(CompletePattern(1, 1), "one edge");
  same(CausalPattern(8), "causal");
  same(CausalPattern(4, 10), "causal with more sources (KV cache)");
  same(CausalPattern(10, 4), "causal with fewer sources: leading rows empty");
  same(WindowPattern::sliding(20, 3), "sliding window");
  same(WindowPattern::sliding(20, 3, true), "causal sliding window");
  same(WindowPattern(20, 0, 4), "forward-looking window");
  same(WindowPattern(20, 5, 2), "asymmetric window");
}

TEST(StructuredEquivalent, RejectsGraphsThatDifferAnywhere) {
  // A complete graph with one edge missing, or a duplicate standing in for a missing source.
  const Graph full = materialize(CompletePattern(5, 5));
  std::vector<int64_t> ptr(full.row_ptr().begin(), full.row_ptr().end());
  std::vector<int32_t> col(full.col_idx().begin(), full.col_idx().end());
  {
    std::vector<int64_t> p = ptr;
    std::vector<int32_t> c = col;
    c.erase(c.begin() + 12);  // row 2 loses source 2
    for (size_t i = 3; i < p.size(); ++i) --p[i];
    EXPECT_FALSE(structured_equivalent(Graph::from_csr(5, 5, p, c)).has_value());
  }
  {
    std::vector<int32_t> c = col;
    c[17] = 1;  // row 3 = {0, 1, 1, 3, 4}: ends and length as complete, but 2 is missing
    EXPECT_FALSE(structured_equivalent(Graph::from_csr(5, 5, ptr, c, CsrCheck::sort)).has_value());
  }
  EXPECT_FALSE(structured_equivalent(testing::uniform_graph(50, 50, 400, 3)).has_value());
  EXPECT_FALSE(structured_equivalent(materialize(WindowPattern::sliding(20, 3, false, 2))).has_value())
      << "dilated windows are not contiguous";
  EXPECT_FALSE(structured_equivalent(Graph::from_csr(3, 3, {0, 0, 0, 0}, {})).has_value());
  EXPECT_FALSE(structured_equivalent(materialize(BlockDiagonalPattern::padded_batch(4, {4, 2}))).has_value());
}

}  // namespace
}  // namespace edgeattn
