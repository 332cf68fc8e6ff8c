// build_graph: COO -> CSR with self-loop, duplicate and symmetrize policies, and the input maps.
#include "edgeattn/graph/build.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "graph/build_wide_keys.hpp"
#include "support/expect_error.hpp"

namespace edgeattn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using V = std::vector<int64_t>;

template <class T>
std::vector<T> vec(std::span<const T> s) {
  return {s.begin(), s.end()};
}

using testing::expect_throw_naming;

Graph build(int64_t nd, int64_t ns, const V& src, const V& dst, const BuildOptions& o = {}) {
  return build_graph(nd, ns, std::span<const int64_t>(src), std::span<const int64_t>(dst), o);
}

// ---------------------------------------------------------------------------------------------
// API, shapes and errors
// ---------------------------------------------------------------------------------------------

TEST(BuildGraph, EmptyEdgeListGivesEmptyRows) {
  const Graph g = build(0, 0, {}, {});
  EXPECT_EQ(g.num_edges(), 0);
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0));
  const Graph h = build(3, 2, {}, {});
  EXPECT_THAT(vec(h.row_ptr()), ElementsAre(0, 0, 0, 0));
  EXPECT_TRUE(h.csr_edge_of_input().empty());
}

TEST(BuildGraph, AddSelfLoopsToEmptyEdgeListGivesIdentity) {
  const Graph g = build(3, 3, {}, {}, {.self_loops = SelfLoops::add});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 1, 2));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(-1, -1, -1));
  EXPECT_TRUE(g.csr_edge_of_input().empty());
}

TEST(BuildGraph, Int32OverloadMatchesInt64) {
  const std::vector<int32_t> s32 = {2, 0, 1, 1, 0}, d32 = {0, 1, 2, 0, 1};
  const V s64(s32.begin(), s32.end()), d64(d32.begin(), d32.end());
  const BuildOptions o{.self_loops = SelfLoops::add, .duplicates = Duplicates::merge};
  const Graph a = build_graph(3, 3, std::span<const int32_t>(s32), std::span<const int32_t>(d32), o);
  const Graph b = build(3, 3, s64, d64, o);
  EXPECT_EQ(vec(a.row_ptr()), vec(b.row_ptr()));
  EXPECT_EQ(vec(a.col_idx()), vec(b.col_idx()));
  EXPECT_EQ(vec(a.input_edge_of_csr()), vec(b.input_edge_of_csr()));
  EXPECT_EQ(vec(a.csr_edge_of_input()), vec(b.csr_edge_of_input()));
}

TEST(BuildGraph, RejectsArraysOfDifferentLength) {
  expect_throw_naming<GraphError>([] { build(3, 3, {0, 1}, {0}); }, {"src has 2 entries", "dst has 1"});
}

TEST(BuildGraph, RejectsIndicesOutOfRangeNamingKAndValue) {
  expect_throw_naming<GraphError>([] { build(3, 3, {0, -1}, {0, 0}); }, {"src[1] is -1", "num_src=3"});
  expect_throw_naming<GraphError>([] { build(3, 4, {0, 3, 4}, {0, 0, 1}); }, {"src[2] is 4", "num_src=4"});
  expect_throw_naming<GraphError>([] { build(2, 4, {0, 3}, {1, 2}); }, {"dst[1] is 2", "num_dst=2"});
  const std::vector<int32_t> s = {0}, d = {-5};
  expect_throw_naming<GraphError>(
      [&] { build_graph(2, 2, std::span<const int32_t>(s), std::span<const int32_t>(d)); }, {"dst[0] is -5"});
}

TEST(BuildGraph, RejectsBadNodeCounts) {
  expect_throw_naming<GraphError>([] { build(-1, 3, {}, {}); }, {"num_dst is -1"});
  expect_throw_naming<GraphError>([] { build(1, int64_t{1} << 31, {}, {}); }, {"num_src is 2147483648"});
}

TEST(BuildGraph, SquareOnlyPoliciesRejectBipartiteShapes) {
  expect_throw_naming<GraphError>([] { build(2, 3, {0}, {1}, {.self_loops = SelfLoops::add}); },
                                  {"SelfLoops::add", "num_dst=2", "num_src=3"});
  expect_throw_naming<GraphError>([] { build(3, 2, {0}, {1}, {.symmetrize = true}); },
                                  {"symmetrize", "num_dst=3", "num_src=2"});
}

TEST(BuildGraph, DuplicatesErrorNamesTheFirstRepeatedPairAndBothPositions) {
  // (1 -> 0) at k = 0, 2, 3; (2 -> 1) at k = 1, 4. The first second-occurrence is k = 2.
  expect_throw_naming<GraphError>(
      [] {
        build(3, 3, {1, 2, 1, 1, 2}, {0, 1, 0, 0, 1}, {.duplicates = Duplicates::error});
      },
      {"src=1, dst=0", "k=0 and k=2", "Duplicates::error"});
  // Here the pair in the later row repeats first in input order.
  expect_throw_naming<GraphError>(
      [] {
        build(3, 3, {2, 2, 1, 1}, {1, 1, 0, 0}, {.duplicates = Duplicates::error});
      },
      {"src=2, dst=1", "k=0 and k=1"});
}

TEST(BuildGraph, DuplicatesErrorAcceptsAnInputEdgeAndItsReverse) {
  const Graph g = build(2, 2, {0, 1}, {1, 0}, {.duplicates = Duplicates::error, .symmetrize = true});
  EXPECT_EQ(g.num_edges(), 2);
}

// ---------------------------------------------------------------------------------------------
// Hand-checked small cases: exact CSR and both maps
// ---------------------------------------------------------------------------------------------

TEST(BuildGraph, HeaderExampleAddsOneSelfLoopPerNode) {
  const Graph g = build(3, 3, {0, 1, 1, 2}, {1, 0, 2, 1}, {.self_loops = SelfLoops::add});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 2, 5, 7));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 1, 0, 1, 2, 1, 2));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(-1, 1, 0, -1, 3, 2, -1));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(2, 1, 5, 4));
}

// k0: 0->0 (loop), k1: 1->0, k2: 2->2 (loop), k3: 0->2
const V kLoopSrc = {0, 1, 2, 0}, kLoopDst = {0, 0, 2, 2};

TEST(BuildGraph, SelfLoopsKeepKeepsThem) {
  const Graph g = build(3, 3, kLoopSrc, kLoopDst, {.self_loops = SelfLoops::keep});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 2, 2, 4));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 1, 0, 2));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(0, 1, 3, 2));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(0, 1, 3, 2));
}

TEST(BuildGraph, SelfLoopsRemoveDropsThemAndMapsThemToMinusOne) {
  const Graph g = build(3, 3, kLoopSrc, kLoopDst, {.self_loops = SelfLoops::remove});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 1, 1, 2));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(1, 0));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(1, 3));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(-1, 0, -1, 1));
}

TEST(BuildGraph, SelfLoopsAddReplacesGivenLoopsWithExactlyOnePerNode) {
  const Graph g = build(3, 3, kLoopSrc, kLoopDst, {.self_loops = SelfLoops::add});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 2, 3, 5));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 1, 1, 0, 2));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(-1, 1, -1, 3, -1));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(-1, 1, -1, 3));
  EXPECT_EQ(g.degree_stats().self_loops, 3);
}

// k0: 1->0, k1: 2->0, k2: 1->0, k3: 1->0, k4: 0->1
const V kDupSrc = {1, 2, 1, 1, 0}, kDupDst = {0, 0, 0, 0, 1};

TEST(BuildGraph, DuplicatesKeepKeepsInputOrderAmongEquals) {
  const Graph g = build(3, 3, kDupSrc, kDupDst, {.duplicates = Duplicates::keep});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 4, 5, 5));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(1, 1, 1, 2, 0));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(0, 2, 3, 1, 4));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(0, 3, 1, 2, 4));
}

TEST(BuildGraph, DuplicatesMergeMapsLaterCopiesToTheFirst) {
  const Graph g = build(3, 3, kDupSrc, kDupDst, {.duplicates = Duplicates::merge});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 2, 3, 3));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(1, 2, 0));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(0, 1, 4));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(0, 1, 0, 0, 2));
}

TEST(BuildGraph, SymmetrizeMergesAnEdgeWithTheReverseOfAnother) {
  // k0: 0->1, k1: 1->0 (reverse of k0), k2: 1->2 (reverse 2->1 is new), k3: 2->2 (its own reverse)
  const Graph g = build(3, 3, {0, 1, 1, 2}, {1, 0, 2, 2}, {.symmetrize = true});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 1, 3, 5));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(1, 0, 2, 1, 2));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(1, 0, -1, 2, 3));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(1, 0, 3, 4));
}

TEST(BuildGraph, SymmetrizeWithKeepGivesEqualMultiplicityBothWays) {
  // 0->1 twice and 1->0 once: the reverse of one 0->1 pairs with the given 1->0.
  const Graph g = build(2, 2, {0, 0, 1}, {1, 1, 0}, {.duplicates = Duplicates::keep, .symmetrize = true});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 2, 4));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(1, 1, 0, 0));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(2, -1, 0, 1));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(2, 3, 0));
}

TEST(BuildGraph, SymmetrizeWithAddedSelfLoops) {
  const Graph g = build(3, 3, {0, 2}, {1, 2}, {.self_loops = SelfLoops::add, .symmetrize = true});
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 2, 4, 5));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(0, 1, 0, 1, 2));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(-1, -1, 0, -1, -1));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(2, -1));
}

TEST(BuildGraph, BipartiteGraphWithIsolatedRows) {
  const Graph g = build(4, 5, {3, 0, 2, 4}, {1, 1, 0, 1});
  EXPECT_EQ(g.num_dst(), 4);
  EXPECT_EQ(g.num_src(), 5);
  EXPECT_THAT(vec(g.row_ptr()), ElementsAre(0, 1, 4, 4, 4));
  EXPECT_THAT(vec(g.col_idx()), ElementsAre(2, 0, 3, 4));
  EXPECT_THAT(vec(g.input_edge_of_csr()), ElementsAre(2, 1, 0, 3));
  EXPECT_THAT(vec(g.csr_edge_of_input()), ElementsAre(2, 1, 0, 3));
  EXPECT_EQ(g.degree_stats().isolated_rows, 2);
}

// ---------------------------------------------------------------------------------------------
// Random inputs against a brute force over std::map / std::multiset
// ---------------------------------------------------------------------------------------------

struct Expected {
  std::vector<int64_t> row_ptr;
  std::vector<int32_t> col_idx;
  std::vector<int64_t> input_edge_of_csr;
  std::vector<int64_t> csr_edge_of_input;
};

// Written from the policy descriptions, one pair at a time: for each (dst, src) in order, the
// input edges that land on it and the number of reverse edges (of other input edges) landing on it.
Expected brute_force(int64_t n_dst, int64_t n_src, const V& src, const V& dst, const BuildOptions& o) {
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> inputs;  // (dst, src) -> input ks
  std::map<std::pair<int64_t, int64_t>, int64_t> reverses;
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (size_t k = 0; k < src.size(); ++k) {
    const bool loop = src[k] == dst[k];
    if (loop && o.self_loops != SelfLoops::keep) continue;
    inputs[{dst[k], src[k]}].push_back(static_cast<int64_t>(k));
    pairs.insert({dst[k], src[k]});
    if (o.symmetrize && !loop) {
      ++reverses[{src[k], dst[k]}];
      pairs.insert({src[k], dst[k]});
    }
  }
  if (o.self_loops == SelfLoops::add)
    for (int64_t i = 0; i < n_dst; ++i) pairs.insert({i, i});

  Expected x;
  x.row_ptr.assign(static_cast<size_t>(n_dst) + 1, 0);
  x.csr_edge_of_input.assign(src.size(), -1);
  for (const auto& [d, s] : pairs) {
    const auto& ks = inputs[{d, s}];
    const int64_t nr = reverses[{d, s}];
    const bool added_loop = o.self_loops == SelfLoops::add && d == s;
    auto emit = [&](int64_t k) {
      x.col_idx.push_back(static_cast<int32_t>(s));
      x.input_edge_of_csr.push_back(k);
      ++x.row_ptr[static_cast<size_t>(d) + 1];
      return static_cast<int64_t>(x.col_idx.size()) - 1;
    };
    if (o.duplicates == Duplicates::keep) {
      for (int64_t k : ks) x.csr_edge_of_input[static_cast<size_t>(k)] = emit(k);
      for (int64_t r = static_cast<int64_t>(ks.size()); r < nr; ++r) emit(-1);
      if (added_loop) emit(-1);
    } else {
      const int64_t e = emit(ks.empty() ? -1 : ks.front());
      for (int64_t k : ks) x.csr_edge_of_input[static_cast<size_t>(k)] = e;
    }
  }
  for (size_t i = 1; i < x.row_ptr.size(); ++i) x.row_ptr[i] += x.row_ptr[i - 1];
  (void)n_src;
  return x;
}

// The built graph has the brute force's CSR and both input maps.
void expect_same_as(const Graph& g, const Expected& x) {
  EXPECT_EQ(vec(g.row_ptr()), x.row_ptr);
  EXPECT_EQ(vec(g.col_idx()), x.col_idx);
  EXPECT_EQ(vec(g.input_edge_of_csr()), x.input_edge_of_csr);
  EXPECT_EQ(vec(g.csr_edge_of_input()), x.csr_edge_of_input);
}

// Checks that hold whatever the algorithm: maps point to edges with the same endpoints.
void expect_maps_consistent(const Graph& g, const V& src, const V& dst) {
  const auto rp = g.row_ptr();
  const auto ci = g.col_idx();
  const auto iec = g.input_edge_of_csr();
  const auto cei = g.csr_edge_of_input();
  ASSERT_EQ(iec.size(), static_cast<size_t>(g.num_edges()));
  ASSERT_EQ(cei.size(), src.size());
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (int64_t e = rp[static_cast<size_t>(i)]; e < rp[static_cast<size_t>(i) + 1]; ++e) {
      const int64_t k = iec[static_cast<size_t>(e)];
      if (k < 0) continue;
      EXPECT_EQ(src[static_cast<size_t>(k)], ci[static_cast<size_t>(e)]);
      EXPECT_EQ(dst[static_cast<size_t>(k)], i);
      EXPECT_EQ(cei[static_cast<size_t>(k)], e);
    }
  for (size_t k = 0; k < src.size(); ++k) {
    const int64_t e = cei[k];
    if (e < 0) continue;
    EXPECT_EQ(ci[static_cast<size_t>(e)], src[k]);
    EXPECT_GE(e, rp[static_cast<size_t>(dst[k])]);
    EXPECT_LT(e, rp[static_cast<size_t>(dst[k]) + 1]);
  }
}

TEST(BuildGraphRandom, EveryPolicyCombinationMatchesBruteForce) {
  std::mt19937_64 rng(12345);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const bool square = trial % 3 != 0;
    const int64_t nd = 1 + static_cast<int64_t>(rng() % 25);
    const int64_t ns = square ? nd : 1 + static_cast<int64_t>(rng() % 25);
    const int64_t m = static_cast<int64_t>(rng() % 200);
    V src, dst;
    for (int64_t k = 0; k < m; ++k) {
      // Small ranges so duplicates, reverse pairs and self-loops are common.
      src.push_back(
          static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min<int64_t>(ns, 6 + trial % 20))));
      dst.push_back(
          static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min<int64_t>(nd, 6 + trial % 20))));
    }
    for (SelfLoops sl : {SelfLoops::keep, SelfLoops::remove, SelfLoops::add})
      for (Duplicates du : {Duplicates::keep, Duplicates::merge})
        for (bool sym : {false, true}) {
          if (!square && (sl == SelfLoops::add || sym)) continue;
          const BuildOptions o{.self_loops = sl, .duplicates = du, .symmetrize = sym};
          SCOPED_TRACE(::testing::Message()
                       << "trial " << trial << " self_loops " << static_cast<int>(sl) << " duplicates "
                       << static_cast<int>(du) << " symmetrize " << sym);
          const Expected x = brute_force(nd, ns, src, dst, o);
          // Both key layouts: packed uint64 keys (what these sizes use) and the 16-byte keys of
          // inputs beyond 2^31 edges.
          for (const Graph& g :
               {build(nd, ns, src, dst, o), detail::build_graph_wide_keys(nd, ns, src, dst, o)}) {
            expect_same_as(g, x);
            expect_maps_consistent(g, src, dst);
          }
          ++checked;
        }
  }
  EXPECT_GT(checked, 400);
}

TEST(BuildGraphRandom, MergedEdgeSetEqualsTheSetOfPairs) {
  std::mt19937_64 rng(777);
  const int64_t n = 300;
  V src, dst;
  for (int k = 0; k < 5000; ++k) {
    src.push_back(static_cast<int64_t>(rng() % n));
    dst.push_back(static_cast<int64_t>(rng() % n));
  }
  std::set<std::pair<int64_t, int64_t>> want;  // (dst, src)
  for (size_t k = 0; k < src.size(); ++k) {
    want.insert({dst[k], src[k]});
    want.insert({src[k], dst[k]});
  }
  const Graph g = build(n, n, src, dst, {.duplicates = Duplicates::merge, .symmetrize = true});
  std::set<std::pair<int64_t, int64_t>> got;
  for (int64_t i = 0; i < n; ++i)
    for (int32_t j : g.row(i))
      EXPECT_TRUE(got.insert({i, j}).second) << "duplicate (" << i << ", " << j << ")";
  EXPECT_EQ(got, want);
  // Symmetric: the transpose has the same rows.
  const Transpose& t = g.transpose();
  EXPECT_EQ(t.col_ptr, vec(g.row_ptr()));
  EXPECT_EQ(t.row_idx, vec(g.col_idx()));
}

TEST(BuildGraphRandom, ManyBlockBuildsMatchBruteForceForAnyThreadCount) {
  // 150k input edges on 400 nodes: with symmetrize that is 300k candidates, several counting-sort
  // blocks when threads allow, and rows of ~750 candidates with many duplicates, reverse pairs and
  // self-loops. Every thread count must give the brute force's graph and maps.
  std::mt19937_64 rng(2024);
  const int64_t n = 400, m = 150000;
  V src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) {
    src[static_cast<size_t>(k)] = static_cast<int64_t>(rng() % n);
    dst[static_cast<size_t>(k)] = k % 5 == 0 ? src[static_cast<size_t>(k)] : static_cast<int64_t>(rng() % n);
  }
  for (const BuildOptions o :
       {BuildOptions{.self_loops = SelfLoops::add, .duplicates = Duplicates::merge, .symmetrize = true},
        BuildOptions{.self_loops = SelfLoops::keep, .duplicates = Duplicates::keep, .symmetrize = true},
        BuildOptions{.self_loops = SelfLoops::remove, .duplicates = Duplicates::merge}}) {
    const Expected x = brute_force(n, n, src, dst, o);
    for (int threads : {1, 2, 4}) {
      SCOPED_TRACE(::testing::Message()
                   << threads << " threads, self_loops " << static_cast<int>(o.self_loops) << " duplicates "
                   << static_cast<int>(o.duplicates) << " symmetrize " << o.symmetrize);
      const ThreadLimit limit(threads);
      const Graph g = build(n, n, src, dst, o);
      expect_same_as(g, x);
    }
  }
}

TEST(BuildGraphRandom, RareMergesInSomeRowChunksMatchBruteForce) {
  // Rows keep all their candidates unless a duplicate is merged; row chunks write output offsets
  // only from the first row that loses one, and the other chunks' rows are filled in afterwards.
  // 100k rows of 1 or 2 random edges (no repeat but the planted ones), with copies planted
  // in a few rows: none, one in the first chunk's row 3, or rows in the middle and the last row.
  std::mt19937_64 rng(77);
  const int64_t n = 100000, m = 150000;
  V src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) {  // rows 0..n-1 once, then rows 0..49999 again, another source
    const auto first = k < n ? int64_t{0} : src[static_cast<size_t>(k - n)];
    src[static_cast<size_t>(k)] = (first + 1 + static_cast<int64_t>(rng() % (n - 1))) % n;
    dst[static_cast<size_t>(k)] = k % n;
  }
  const std::vector<std::vector<int64_t>> plants = {{}, {3}, {50001, 75000, n - 1}};
  for (const auto& rows : plants) {
    V s = src, d = dst;
    for (const int64_t row : rows) {  // a copy of the row's first edge, at the end of the input
      s.push_back(src[static_cast<size_t>(row)]);
      d.push_back(row);
    }
    for (const Duplicates dup : {Duplicates::merge, Duplicates::keep}) {
      const BuildOptions o{.duplicates = dup};
      const Expected x = brute_force(n, n, s, d, o);
      for (int threads : {1, 2, 4}) {
        SCOPED_TRACE(::testing::Message() << threads << " threads, " << rows.size()
                                          << " planted copies, duplicates " << static_cast<int>(dup));
        const ThreadLimit limit(threads);
        const Graph g = build(n, n, s, d, o);
        expect_same_as(g, x);
      }
    }
  }
}

TEST(BuildGraphRandom, DuplicatesErrorNamesTheSameFirstRepeatForAnyThreadCount) {
  // The repeat whose second occurrence comes first is found per row chunk, then combined. Edge k
  // goes into row k (so no repeat happens by chance), but for two copies: of edge 7 at k = 250000
  // (row 7) and of edge 200000 at k = 290000 (row 200000, in another chunk).
  std::mt19937_64 rng(5);
  const int64_t n = 300000, m = 300000;
  V src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) {
    src[static_cast<size_t>(k)] = static_cast<int64_t>(rng() % n);
    dst[static_cast<size_t>(k)] = k;
  }
  src[250000] = src[7];
  dst[250000] = dst[7];
  src[290000] = src[200000];
  dst[290000] = dst[200000];
  for (int threads : {1, 2, 4}) {
    const ThreadLimit limit(threads);
    expect_throw_naming<GraphError>([&] { build(n, n, src, dst, {.duplicates = Duplicates::error}); },
                                    {"appears at k=7 and k=250000"});
  }
}

TEST(BuildGraphRandom, OneMillionEdgesWithAHubRowBuildInLinearishTime) {
  // Guards against accidental quadratic behaviour on a hub row of 250k edges (quadratic would take
  // minutes); the bound is loose enough for sanitizer builds on a busy machine.
  std::mt19937_64 rng(99);
  const int64_t n = 100000, m = 1000000;
  V src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) {
    src[static_cast<size_t>(k)] = static_cast<int64_t>(rng() % n);
    dst[static_cast<size_t>(k)] = k % 4 == 0 ? 0 : static_cast<int64_t>(rng() % n);  // hub row 0
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Graph g = build(n, n, src, dst, {.self_loops = SelfLoops::add, .symmetrize = true});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(g.num_edges(), m);
  EXPECT_LT(seconds, 30.0);
  expect_maps_consistent(g, src, dst);
}

}  // namespace
}  // namespace edgeattn
