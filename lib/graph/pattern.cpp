// Structured attention patterns: validating constructors, the row counts that fix each
// pattern's CSR edge numbering, and the free functions over the Pattern variant.
//
// A structured pattern stores only its parameters and O(num_dst) row offsets; `materialize` is
// the one place that expands a pattern into an explicit CSR (for tests, export and the serial
// reference kernels), and it uses the same for_each_in_row the fast kernels use, so both see the
// same edge numbering.
#include "edgeattn/graph/pattern.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"

namespace edgeattn {

namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();

/// Positions are stored as int32 column / row indices, so a size must be in [0, 2^31 - 1].
void check_size(const char* who, const char* name, int64_t value) {
  if (value < 0) raise<InvalidArgument>(who, ": ", name, " is ", value, ", expected >= 0");
  if (value > kMaxIndex)
    raise<InvalidArgument>(who, ": ", name, " is ", value, ", expected <= ", kMaxIndex,
                           " (indices are 32-bit)");
}

void check_non_negative(const char* who, const char* name, int64_t value) {
  if (value < 0) raise<InvalidArgument>(who, ": ", name, " is ", value, ", expected >= 0");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

CompletePattern::CompletePattern(int64_t num_dst, int64_t num_src) {
  check_size("CompletePattern", "num_dst", num_dst);
  check_size("CompletePattern", "num_src", num_src);
  init_rows(num_dst, num_src, [num_src](int64_t) { return num_src; });
}

CausalPattern::CausalPattern(int64_t num_dst, int64_t num_src) {
  check_size("CausalPattern", "num_dst", num_dst);
  check_size("CausalPattern", "num_src", num_src);
  shift_ = num_src - num_dst;
  init_rows(num_dst, num_src, [s = shift_](int64_t i) { return std::max<int64_t>(0, i + s + 1); });
}

WindowPattern::WindowPattern(int64_t n, int64_t left, int64_t right, int64_t dilation)
    : left_(left), right_(right), dilation_(dilation) {
  check_size("WindowPattern", "n", n);
  check_non_negative("WindowPattern", "left", left);
  check_non_negative("WindowPattern", "right", right);
  if (dilation < 1) raise<InvalidArgument>("WindowPattern: dilation is ", dilation, ", expected >= 1");
  init_rows(n, n, [&](int64_t i) {
    return std::min(left, i / dilation) + std::min(right, (n - 1 - i) / dilation) + 1;
  });
}

WindowPattern WindowPattern::sliding(int64_t n, int64_t w, bool causal, int64_t dilation) {
  check_non_negative("WindowPattern::sliding", "w", w);
  return WindowPattern(n, w, causal ? 0 : w, dilation);
}

BlockDiagonalPattern::BlockDiagonalPattern(std::vector<int64_t> block_starts,
                                           std::vector<int64_t> valid_lengths) {
  constexpr const char* who = "BlockDiagonalPattern";
  if (block_starts.empty())
    raise<InvalidArgument>(who, ": block_starts is empty, expected num_blocks + 1 entries starting at 0");
  if (block_starts[0] != 0)
    raise<InvalidArgument>(who, ": block_starts[0] is ", block_starts[0], ", expected 0");
  for (size_t b = 1; b < block_starts.size(); ++b)
    if (block_starts[b] < block_starts[b - 1])
      raise<InvalidArgument>(who, ": block_starts[", b, "] is ", block_starts[b],
                             ", expected >= block_starts[", b - 1, "] = ", block_starts[b - 1],
                             " (non-decreasing)");
  check_size(who, "block_starts.back() (the sequence length)", block_starts.back());
  const size_t blocks = block_starts.size() - 1;
  if (valid_lengths.size() != blocks)
    raise<InvalidArgument>(who, ": valid_lengths has ", valid_lengths.size(),
                           " entries, expected one per block (block_starts.size() - 1 = ", blocks, ")");
  for (size_t b = 0; b < blocks; ++b) {
    const int64_t size = block_starts[b + 1] - block_starts[b];
    if (valid_lengths[b] < 0 || valid_lengths[b] > size)
      raise<InvalidArgument>(who, ": valid_lengths[", b, "] is ", valid_lengths[b], ", expected in [0, ",
                             size, "] (the size of block ", b, ")");
  }
  const int64_t n = block_starts.back();
  starts_ = std::make_shared<const std::vector<int64_t>>(std::move(block_starts));
  valid_ = std::make_shared<const std::vector<int64_t>>(std::move(valid_lengths));
  init_rows(n, n, [this](int64_t i) { return (*valid_)[static_cast<size_t>(block_of(i))]; });
}

BlockDiagonalPattern BlockDiagonalPattern::padded_batch(int64_t seq_len, std::vector<int64_t> valid_lengths) {
  check_size("BlockDiagonalPattern::padded_batch", "seq_len", seq_len);
  const auto blocks = static_cast<int64_t>(valid_lengths.size());
  if (seq_len > 0 && blocks > kMaxIndex / seq_len)
    raise<InvalidArgument>("BlockDiagonalPattern::padded_batch: seq_len * valid_lengths.size() is ", seq_len,
                           " * ", blocks, ", expected <= ", kMaxIndex, " (indices are 32-bit)");
  std::vector<int64_t> starts(static_cast<size_t>(blocks) + 1);
  for (int64_t b = 0; b <= blocks; ++b) starts[static_cast<size_t>(b)] = b * seq_len;
  return BlockDiagonalPattern(std::move(starts), std::move(valid_lengths));
}

WindowGlobalPattern::WindowGlobalPattern(int64_t n, int64_t radius, std::vector<int64_t> global_tokens)
    : radius_(radius) {
  constexpr const char* who = "WindowGlobalPattern";
  check_size(who, "n", n);
  check_non_negative(who, "radius", radius);
  for (size_t k = 0; k < global_tokens.size(); ++k)
    if (global_tokens[k] < 0 || global_tokens[k] >= n)
      raise<InvalidArgument>(who, ": global_tokens[", k, "] is ", global_tokens[k], ", expected in [0, ", n,
                             ")");
  std::sort(global_tokens.begin(), global_tokens.end());
  global_tokens.erase(std::unique(global_tokens.begin(), global_tokens.end()), global_tokens.end());
  auto flags = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n), uint8_t{0});
  for (int64_t g : global_tokens) (*flags)[static_cast<size_t>(g)] = 1;
  globals_ = std::make_shared<const std::vector<int64_t>>(std::move(global_tokens));
  is_global_ = std::move(flags);

  const std::vector<int64_t>& g = *globals_;
  const auto c = [&g](int64_t x) {
    return static_cast<int64_t>(std::lower_bound(g.begin(), g.end(), x) - g.begin());
  };
  const int64_t r = std::min(radius, n);
  const auto num_globals = static_cast<int64_t>(g.size());
  init_rows(n, n, [&](int64_t i) -> int64_t {
    if ((*is_global_)[static_cast<size_t>(i)] != 0) return n;
    const int64_t lo = std::max<int64_t>(0, i - r);
    const int64_t hi = std::min(n - 1, i + r);
    return (hi - lo + 1) + num_globals - (c(hi + 1) - c(lo));
  });
}

bool CsrPattern::contains(int64_t i, int64_t j) const {
  if (i < 0 || i >= g_->num_dst() || j < 0 || j >= g_->num_src()) return false;
  const std::span<const int32_t> row = g_->row(i);
  return std::binary_search(row.begin(), row.end(), static_cast<int32_t>(j));
}

// ---------------------------------------------------------------------------------------------
// Free functions over the Pattern variant
// ---------------------------------------------------------------------------------------------

int64_t num_dst(const Pattern& p) {
  return visit_pattern(p, [](const auto& q) { return static_cast<int64_t>(q.num_dst()); });
}

int64_t num_src(const Pattern& p) {
  return visit_pattern(p, [](const auto& q) { return static_cast<int64_t>(q.num_src()); });
}

int64_t num_edges(const Pattern& p) {
  return visit_pattern(p, [](const auto& q) { return static_cast<int64_t>(q.num_edges()); });
}

double density(const Pattern& p) {
  const int64_t nd = num_dst(p), ns = num_src(p);
  if (nd == 0 || ns == 0) return 0.0;
  return static_cast<double>(num_edges(p)) / (static_cast<double>(nd) * static_cast<double>(ns));
}

std::string describe(const Pattern& p) {
  // Built with to_string, not a stream: attention_forward and attention_backward describe their
  // pattern on every call (the forward's signature), and a stream's locale setup cost more than
  // the rest of the string.
  const auto n = [](int64_t v) { return std::to_string(v); };
  return std::visit(
      [&n](const auto& q) -> std::string {
        using T = std::decay_t<decltype(q)>;
        if constexpr (std::is_same_v<T, Graph>) {
          return "graph(num_dst=" + n(q.num_dst()) + ", num_src=" + n(q.num_src()) +
                 ", num_edges=" + n(q.num_edges()) + ")";
        } else if constexpr (std::is_same_v<T, CompletePattern>) {
          return "complete(" + n(q.num_dst()) + "x" + n(q.num_src()) + ")";
        } else if constexpr (std::is_same_v<T, CausalPattern>) {
          return "causal(" + n(q.num_dst()) + "x" + n(q.num_src()) + ")";
        } else if constexpr (std::is_same_v<T, WindowPattern>) {
          return "window(n=" + n(q.num_dst()) + ", left=" + n(q.left()) + ", right=" + n(q.right()) +
                 ", dilation=" + n(q.dilation()) + ")";
        } else if constexpr (std::is_same_v<T, BlockDiagonalPattern>) {
          return "block_diagonal(n=" + n(q.num_dst()) + ", blocks=" + n(q.num_blocks()) +
                 ", num_edges=" + n(q.num_edges()) + ")";
        } else {
          static_assert(std::is_same_v<T, WindowGlobalPattern>, "describe: unhandled Pattern alternative");
          return "window_global(n=" + n(q.num_dst()) + ", radius=" + n(q.radius()) +
                 ", globals=" + n(static_cast<int64_t>(q.global_tokens().size())) + ")";
        }
      },
      p);
}

namespace {

/// Expands a structured pattern row by row, in parallel over its own partition.
template <class P>
Graph materialize_rows(const P& p) {
  const std::span<const int64_t> offsets = p.row_offsets();
  std::vector<int64_t> row_ptr(offsets.begin(), offsets.end());
  std::vector<int32_t> col_idx(static_cast<size_t>(p.num_edges()));
  int32_t* cols = col_idx.data();
  parallel_for_chunks(p.partition(), [&](size_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) p.for_each_in_row(i, [cols](int32_t j, int64_t e) { cols[e] = j; });
  });
  return Graph::from_csr(p.num_dst(), p.num_src(), std::move(row_ptr), std::move(col_idx));
}

}  // namespace

Graph materialize(const Pattern& p) {
  return std::visit(
      [](const auto& q) -> Graph {
        if constexpr (std::is_same_v<std::decay_t<decltype(q)>, Graph>)
          return q;
        else
          return materialize_rows(q);
      },
      p);
}

std::optional<Pattern> structured_equivalent(const Graph& graph) {
  const int64_t nd = graph.num_dst(), ns = graph.num_src();
  if (nd == 0 || ns == 0 || graph.num_edges() == 0) return std::nullopt;
  const std::span<const int64_t> ptr = graph.row_ptr();
  const std::span<const int32_t> col = graph.col_idx();
  // Row i's extent [first, last] (empty rows: first > last), from its ends alone.
  auto extent = [&](int64_t i) -> std::pair<int64_t, int64_t> {
    const int64_t b = ptr[static_cast<size_t>(i)], e = ptr[static_cast<size_t>(i) + 1];
    if (b == e) return {1, 0};
    return {col[static_cast<size_t>(b)], col[static_cast<size_t>(e) - 1]};
  };
  // The forms a graph may equal. Row i of each is one range, clipped to [0, ns): complete
  // [0, ns - 1], causal [0, i + shift], square window [i - left, i + right].
  enum class Form { complete, causal, window };
  const int64_t shift = ns - nd;
  const int64_t l0 = extent(0).second;
  int64_t left = 0, right = 0;
  if (nd == ns) {  // a window's right reach shows in row 0, its left reach in the last row
    right = l0;
    const auto [fl, ll] = extent(nd - 1);
    left = ll == ns - 1 ? nd - 1 - fl : -1;
  }
  auto expected = [&](Form form, int64_t i) -> std::pair<int64_t, int64_t> {
    switch (form) {
      case Form::complete:
        return {0, ns - 1};
      case Form::causal:
        return i + shift < 0 ? std::pair<int64_t, int64_t>{1, 0}
                             : std::pair<int64_t, int64_t>{0, std::min(ns - 1, i + shift)};
      case Form::window:
        break;
    }
    return {std::max<int64_t>(0, i - left), std::min(ns - 1, i + right)};
  };
  // O(num_dst): every row's extent and length match the form's.
  auto rows_match = [&](Form form) {
    if (form == Form::window && (nd != ns || left < 0)) return false;
    for (int64_t i = 0; i < nd; ++i) {
      const auto [f, l] = extent(i);
      const auto [ef, el] = expected(form, i);
      const int64_t len = ptr[static_cast<size_t>(i) + 1] - ptr[static_cast<size_t>(i)];
      if (len != std::max<int64_t>(0, el - ef + 1) || (len > 0 && (f != ef || l != el))) return false;
    }
    return true;
  };
  std::optional<Form> form;
  for (const Form candidate : {Form::complete, Form::causal, Form::window})
    if (rows_match(candidate)) {
      form = candidate;
      break;
    }
  if (!form) return std::nullopt;
  // O(num_edges): each row's sources are consecutive (no duplicate hides a missing source).
  std::atomic<bool> consecutive{true};
  parallel_for(0, nd, 64, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e && consecutive.load(std::memory_order_relaxed); ++i) {
      const auto lo = static_cast<size_t>(ptr[static_cast<size_t>(i)]);
      const auto hi = static_cast<size_t>(ptr[static_cast<size_t>(i) + 1]);
      for (size_t k = lo + 1; k < hi; ++k)
        if (col[k] != col[k - 1] + 1) {
          consecutive.store(false, std::memory_order_relaxed);
          break;
        }
    }
  });
  if (!consecutive.load()) return std::nullopt;
  switch (*form) {
    case Form::complete:
      return Pattern(CompletePattern(nd, ns));
    case Form::causal:
      return Pattern(CausalPattern(nd, ns));
    case Form::window:
      break;
  }
  return Pattern(WindowPattern(nd, left, right));
}

}  // namespace edgeattn
