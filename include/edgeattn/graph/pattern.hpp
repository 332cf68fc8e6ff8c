// Attention patterns: which (destination, source) pairs attend, as an explicit Graph or as a
// structured pattern stored in O(rows) memory (never O(N^2) indices).
//
//   pattern                 row i attends to sources j with ...
//   CompletePattern         every j                                   (dense attention)
//   CausalPattern           j <= i + (num_src - num_dst)              (decoder / KV-cache aligned)
//   WindowPattern           j = i + k*dilation, -left <= k <= right   (sliding window; causal: right=0)
//   BlockDiagonalPattern    j in i's block and j - block_start < valid_length[block]
//                                                                     (padded batch = masked softmax)
//   WindowGlobalPattern     |i - j| <= radius, or i or j is a global token (Longformer / BigBird)
//
// Every pattern, and Graph through CsrPattern, models the `AttentionPattern` concept below, which
// is what kernels are written against. Edges are numbered in CSR order: row by row, ascending
// source within a row; `row_offset(i)` is the number of edges in rows before i. Per-edge tensors
// (edge bias, returned attention weights) use this numbering for every pattern.
//
// Example:
//   edgeattn::Pattern p = edgeattn::WindowPattern::sliding(/*n=*/16384, /*w=*/256);
//   edgeattn::Graph g = edgeattn::materialize(p);     // explicit CSR, for tests or export
//   int64_t e = edgeattn::num_edges(p);
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

// Loop drivers the kernels must inline (CsrPattern::for_each_in_row).
#if defined(__GNUC__) || defined(__clang__)
#define EDGEATTN_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define EDGEATTN_ALWAYS_INLINE inline
#endif

#include "edgeattn/graph/graph.hpp"

namespace edgeattn {

// clang-format off
/// What kernels need from a pattern. `f(j, e)` / `f(i, e)` receive the neighbour and the CSR
/// edge number; neighbours arrive in ascending order.
template <class P>
concept AttentionPattern = requires(const P& p, int64_t i, bool (*pred)(int32_t, int64_t),
                                    void (*f)(int32_t, int64_t)) {
  { p.num_dst() } -> std::convertible_to<int64_t>;
  { p.num_src() } -> std::convertible_to<int64_t>;
  { p.num_edges() } -> std::convertible_to<int64_t>;
  { p.row_offset(i) } -> std::convertible_to<int64_t>;   // i in [0, num_dst]
  { p.contains(i, i) } -> std::convertible_to<bool>;
  { p.partition() } -> std::convertible_to<std::span<const int64_t>>;
  p.for_each_in_row(i, f);   // sources of row i
  p.for_each_in_col(i, f);   // destinations attending source i (the transpose)
};

/// Patterns whose every row is one contiguous source range [first, last): kernels may tile them.
template <class P>
concept ContiguousRowPattern = AttentionPattern<P> && requires(const P& p, int64_t i) {
  { p.row_range(i) } -> std::convertible_to<std::pair<int64_t, int64_t>>;
};
// clang-format on

/// Shared row bookkeeping of the structured patterns: row offsets and the balanced partition,
/// computed once at construction (O(num_dst) memory).
class PatternRows {
 public:
  int64_t num_dst() const { return num_dst_; }
  int64_t num_src() const { return num_src_; }
  int64_t num_edges() const { return offsets_->back(); }
  int64_t row_offset(int64_t i) const { return (*offsets_)[static_cast<size_t>(i)]; }
  std::span<const int64_t> row_offsets() const { return *offsets_; }
  std::span<const int64_t> partition() const { return *partition_; }

 protected:
  /// `row_count(i)` gives the number of sources of row i.
  template <class RowCount>
  void init_rows(int64_t num_dst, int64_t num_src, RowCount&& row_count);

 private:
  int64_t num_dst_ = 0, num_src_ = 0;
  std::shared_ptr<const std::vector<int64_t>> offsets_;
  std::shared_ptr<const std::vector<int64_t>> partition_;
};

/// Every destination attends to every source.
class CompletePattern : public PatternRows {
 public:
  CompletePattern(int64_t num_dst, int64_t num_src);
  bool contains(int64_t i, int64_t j) const;
  std::pair<int64_t, int64_t> row_range(int64_t i) const;
  template <class F>
  void for_each_in_row(int64_t i, F&& f) const;
  template <class F>
  void for_each_in_col(int64_t j, F&& f) const;
};

/// Row i attends to sources j <= i + (num_src - num_dst): the causal mask, aligned to the end
/// when there are more sources than destinations (queries for the last positions of a sequence).
class CausalPattern : public PatternRows {
 public:
  explicit CausalPattern(int64_t n) : CausalPattern(n, n) {}
  CausalPattern(int64_t num_dst, int64_t num_src);
  bool contains(int64_t i, int64_t j) const;
  std::pair<int64_t, int64_t> row_range(int64_t i) const;
  template <class F>
  void for_each_in_row(int64_t i, F&& f) const;
  template <class F>
  void for_each_in_col(int64_t j, F&& f) const;

 private:
  int64_t shift_ = 0;  // num_src - num_dst
};

/// Sliding window over a sequence of n positions: row i attends to j = i + k*dilation for
/// k in [-left, right], 0 <= j < n.
class WindowPattern : public PatternRows {
 public:
  WindowPattern(int64_t n, int64_t left, int64_t right, int64_t dilation = 1);
  /// |i - j| <= w (in steps of `dilation`); causal: only j <= i.
  static WindowPattern sliding(int64_t n, int64_t w, bool causal = false, int64_t dilation = 1);

  int64_t left() const { return left_; }
  int64_t right() const { return right_; }
  int64_t dilation() const { return dilation_; }
  bool contains(int64_t i, int64_t j) const;
  /// [first, last) of row i's sources; the row is contiguous only when dilation == 1.
  std::pair<int64_t, int64_t> row_range(int64_t i) const;
  template <class F>
  void for_each_in_row(int64_t i, F&& f) const;
  template <class F>
  void for_each_in_col(int64_t j, F&& f) const;

 private:
  int64_t left_, right_, dilation_;
};

/// A batch of sequences laid end to end: block b spans rows/sources [start_b, start_{b+1}), and
/// every row of block b attends to the first valid_length[b] positions of its block. This is the
/// masked softmax of padded sequence batches (queries at padded positions still get an output).
class BlockDiagonalPattern : public PatternRows {
 public:
  /// block_starts: [B + 1] non-decreasing, from 0; valid_lengths: [B], each in [0, block size].
  BlockDiagonalPattern(std::vector<int64_t> block_starts, std::vector<int64_t> valid_lengths);
  /// B sequences of `seq_len` positions each.
  static BlockDiagonalPattern padded_batch(int64_t seq_len, std::vector<int64_t> valid_lengths);

  int64_t num_blocks() const;
  std::span<const int64_t> block_starts() const;
  std::span<const int64_t> valid_lengths() const;
  /// Block holding position i.
  int64_t block_of(int64_t i) const;
  bool contains(int64_t i, int64_t j) const;
  std::pair<int64_t, int64_t> row_range(int64_t i) const;
  template <class F>
  void for_each_in_row(int64_t i, F&& f) const;
  template <class F>
  void for_each_in_col(int64_t j, F&& f) const;

 private:
  std::shared_ptr<const std::vector<int64_t>> starts_, valid_;
};

/// Sliding window of radius w plus global tokens (Longformer, BigBird): a global token attends
/// to every position and every position attends to every global token.
class WindowGlobalPattern : public PatternRows {
 public:
  /// `global_tokens` need not be sorted; duplicates are merged; each must be in [0, n).
  WindowGlobalPattern(int64_t n, int64_t radius, std::vector<int64_t> global_tokens);

  int64_t radius() const { return radius_; }
  std::span<const int64_t> global_tokens() const;  // sorted, unique
  bool is_global(int64_t i) const;
  bool contains(int64_t i, int64_t j) const;
  template <class F>
  void for_each_in_row(int64_t i, F&& f) const;
  template <class F>
  void for_each_in_col(int64_t j, F&& f) const;

 private:
  /// Number of row i's sources that are < j (row i not global).
  int64_t rank_in_row(int64_t i, int64_t j) const;
  int64_t radius_;
  std::shared_ptr<const std::vector<int64_t>> globals_;
  std::shared_ptr<const std::vector<uint8_t>> is_global_;
};

/// An explicit Graph seen through the AttentionPattern concept (a non-owning view).
class CsrPattern {
 public:
  explicit CsrPattern(const Graph& g) : g_(&g), row_ptr_(g.row_ptr().data()), col_idx_(g.col_idx().data()) {}
  const Graph& graph() const { return *g_; }
  int64_t num_dst() const { return g_->num_dst(); }
  int64_t num_src() const { return g_->num_src(); }
  int64_t num_edges() const { return g_->num_edges(); }
  int64_t row_offset(int64_t i) const { return row_ptr_[i]; }
  std::span<const int64_t> partition() const { return g_->partition(); }
  bool contains(int64_t i, int64_t j) const;
  /// Inlined into the kernel that calls it (GCC, Clang): left out of line, the kernel's per-edge
  /// body reads its state through the closure in memory (GATv2's backward took 7% longer when its
  /// destination pass grew past the inliner's budget).
  template <class F>
  EDGEATTN_ALWAYS_INLINE void for_each_in_row(int64_t i, F&& f) const {
    for (int64_t e = row_ptr_[i], end = row_ptr_[i + 1]; e < end; ++e) f(col_idx_[e], e);
  }
  /// f(i, e) for the in-edges of column j; e comes from Graph::transpose_edges() (built on first
  /// use). A caller that needs no edge ids iterates Graph::transpose() directly.
  template <class F>
  void for_each_in_col(int64_t j, F&& f) const {
    const Transpose& t = g_->transpose();
    g_->transpose_edges().visit([&](auto edges) {
      for (int64_t p = t.col_ptr[static_cast<size_t>(j)]; p < t.col_ptr[static_cast<size_t>(j) + 1]; ++p)
        f(t.row_idx[static_cast<size_t>(p)], static_cast<int64_t>(edges[static_cast<size_t>(p)]));
    });
  }

 private:
  const Graph* g_;
  // The graph's arrays (immutable for its lifetime), read per row by the kernels' inner loops:
  // Graph's accessors are out of line.
  const int64_t* row_ptr_;
  const int32_t* col_idx_;
};

/// Any pattern the public API accepts.
using Pattern = std::variant<Graph, CompletePattern, CausalPattern, WindowPattern, BlockDiagonalPattern,
                             WindowGlobalPattern>;

/// Calls `f(p)` with the concrete pattern (a Graph arrives as CsrPattern).
template <class F>
decltype(auto) visit_pattern(const Pattern& pattern, F&& f) {
  return std::visit(
      [&](const auto& p) -> decltype(auto) {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>, Graph>)
          return f(CsrPattern(p));
        else
          return f(p);
      },
      pattern);
}

int64_t num_dst(const Pattern& p);
int64_t num_src(const Pattern& p);
int64_t num_edges(const Pattern& p);
/// num_edges / (num_dst * num_src); 0 when either is 0.
double density(const Pattern& p);
/// "complete(4096x4096)", "window(n=16384, left=256, right=256, dilation=1)", "graph(...)"
std::string describe(const Pattern& p);
/// The explicit CSR of any pattern (same edge numbering). O(num_edges) memory, by design.
Graph materialize(const Pattern& p);

/// The structured pattern an explicit graph equals, edge for edge in the same CSR numbering:
/// CompletePattern, CausalPattern (any shape, as CausalPattern(num_dst, num_src) aligns it), or a
/// square sliding WindowPattern (dilation 1, rows clipped at the ends); nullopt for any other
/// graph, including one with a duplicate edge. O(num_dst) when the row extents already rule the
/// forms out (any irregular sparse graph: usually at the first rows), else one O(num_edges) scan.
/// attention_forward/backward run a Graph through this on every path but the reference, so users
/// who pass the edges of a dense, causal or banded mask get the structured kernels.
///   std::optional<Pattern> p = structured_equivalent(materialize(CausalPattern(512)));  // causal(512x512)
std::optional<Pattern> structured_equivalent(const Graph& graph);

}  // namespace edgeattn

#include "edgeattn/graph/pattern_impl.hpp"  // IWYU pragma: export
