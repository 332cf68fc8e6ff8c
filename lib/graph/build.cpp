// build_graph: COO edge list -> CSR by destination, applying the self-loop, duplicate and
// symmetrize policies and recording where every input edge went.
//
// Algorithm, O(E + N) plus a per-row sort that is skipped when a row arrives sorted; every step
// runs in parallel and none depends on the thread count:
//  1. Candidates are enumerated in a fixed order and tagged so that tag order is that order:
//       input edge k (kept by the self-loop policy)   tag k              in [0, M)
//       reverse of input edge k (symmetrize)          tag M + k          in [M, 2M)
//       self-loop of node i (SelfLoops::add)          tag 2M + i
//  2. Stable counting sort of the candidates by destination (detail::CountingSort), so each row's
//     tags ascend. A candidate travels as one key that orders by (source, tag): a uint64 packing
//     source << 32 | tag whenever the tags fit in 32 bits (one random write per candidate in
//     the scatter, one integer sort per row), else a 16-byte WideKey.
//  3. Each row's keys are sorted (rows are independent and every key is unique), and its output
//     edges counted.
//  4. Each run of equal (dst, src) is resolved: inputs come first (in input order), then reverse
//     edges, then an added self-loop. Under `keep` the run emits its inputs plus as many reverse
//     edges as exceed them (a reverse edge pairs with a coinciding input edge); under `merge` it
//     emits one edge, attributed to its first input edge if any. Step 3 counted each row's
//     output, so rows are written in parallel at their final offsets.
#include "edgeattn/graph/build.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include "core/huge_pages.hpp"
#include "core/prefetch.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "graph/build_wide_keys.hpp"
#include "graph/counting_sort.hpp"
#include "graph/trusted_csr.hpp"

namespace edgeattn {
namespace {

constexpr int64_t kMaxNodes = std::numeric_limits<int32_t>::max();
constexpr int64_t kEdgeGrain = int64_t{1} << 16;
// How many candidates ahead the count, the scatter and the row writer prefetch the slots they
// will update.
constexpr int kPrefetchItems = 16;

// A candidate edge as one sortable key: orders by (source, tag).
struct WideKey {
  int32_t src;
  int64_t tag;
  friend bool operator<(const WideKey& a, const WideKey& b) {
    return a.src != b.src ? a.src < b.src : a.tag < b.tag;
  }
};
inline uint64_t make_key(uint64_t*, int32_t src, int64_t tag) {
  return (uint64_t{static_cast<uint32_t>(src)} << 32) | static_cast<uint64_t>(tag);
}
inline int32_t src_of(uint64_t key) { return static_cast<int32_t>(key >> 32); }
inline int64_t tag_of(uint64_t key) { return static_cast<int64_t>(key & 0xffffffffu); }
inline WideKey make_key(WideKey*, int32_t src, int64_t tag) { return {src, tag}; }
inline int32_t src_of(const WideKey& key) { return key.src; }
inline int64_t tag_of(const WideKey& key) { return key.tag; }

// A run of equal sources [p, end) in a sorted row: how many of its candidates are input edges and
// how many reverse edges (the rest is at most one added self-loop).
struct Run {
  int64_t end, num_inputs, num_reverse;
};
template <class Key>
Run scan_run(const Key* keys, int64_t p, int64_t row_end, int64_t M) {
  Run run{p, 0, 0};
  const int32_t s = src_of(keys[p]);
  for (; run.end < row_end && src_of(keys[run.end]) == s; ++run.end) {
    const int64_t tag = tag_of(keys[run.end]);
    run.num_inputs += tag < M;
    run.num_reverse += tag >= M && tag < 2 * M;
  }
  return run;
}

// Steps 3 and 4a for rows [row_begin, row_end): sorts each row's keys and counts its output edges.
// Notes the repeated input pair (second k, first k) whose second occurrence comes first (for
// Duplicates::error). With row_ptr, stores each row's count in row_ptr[i + 1]. Without it
// (nullptr), stops at the first row whose count differs from its number of candidates (a merged
// duplicate, a reverse edge that pairs with an input) and returns that row, so that graphs whose
// rows all keep their candidates need no offsets besides the sort's. The row passes are functions
// of their own, with plain pointer arguments: inlined into the parallel loops' closures, GCC kept
// their pointers in memory and the loops ran up to 2x slower.
struct RowCounts {
  int64_t stopped_at;                  // row_end, or the first row whose count differs (no row_ptr)
  std::pair<int64_t, int64_t> repeat;  // {max, -1} if none
};
template <class Key>
[[gnu::noinline]] RowCounts sort_and_count_rows(int64_t row_begin, int64_t row_end, const int64_t* row_start,
                                                Key* keys, int64_t M, Duplicates dup, int64_t* row_ptr) {
  RowCounts result{row_end, {std::numeric_limits<int64_t>::max(), -1}};
  auto& repeat = result.repeat;
  for (int64_t i = row_begin; i < row_end; ++i) {
    const int64_t begin = row_start[i], end = row_start[i + 1];
    if (!std::is_sorted(keys + begin, keys + end)) std::sort(keys + begin, keys + end);
    int64_t n = 0;
    for (int64_t p = begin; p < end;) {
      const Run run = scan_run(keys, p, end, M);
      if (dup == Duplicates::keep) {
        n += std::max(run.num_inputs, run.num_reverse) + (run.end - p - run.num_inputs - run.num_reverse);
      } else {
        ++n;
        if (dup == Duplicates::error && run.num_inputs > 1 && tag_of(keys[p + 1]) < repeat.first)
          repeat = {tag_of(keys[p + 1]), tag_of(keys[p])};
      }
      p = run.end;
    }
    if (row_ptr != nullptr) {
      row_ptr[i + 1] = n;
    } else if (n != end - begin) {
      result.stopped_at = i;
      return result;
    }
  }
  return result;
}

// Step 4b for rows [row_begin, row_end): writes each row's edges at row_ptr[i] and both input maps.
template <class Key>
[[gnu::noinline]] void write_rows(int64_t row_begin, int64_t row_end, const int64_t* row_start,
                                  const Key* __restrict keys, int64_t M, Duplicates dup,
                                  const int64_t* row_ptr, int32_t* __restrict cols,
                                  int64_t* __restrict input_edge_of_csr,
                                  int64_t* __restrict csr_edge_of_input) {
  // csr_edge_of_input is written at random (by input edge): its slots are prefetched
  // kPrefetchItems keys ahead.
  const int64_t keys_end = row_start[row_end];
  int64_t ahead = row_start[row_begin];
  for (int64_t i = row_begin; i < row_end; ++i) {
    const int64_t end = row_start[i + 1];
    int64_t out = row_ptr[i];
    for (int64_t p = row_start[i]; p < end;) {
      const Run run = scan_run(keys, p, end, M);
      for (const int64_t until = std::min(keys_end, run.end + kPrefetchItems); ahead < until; ++ahead)
        if (const int64_t k = tag_of(keys[ahead]); k < M) detail::prefetch_write(csr_edge_of_input + k);
      const int32_t s = src_of(keys[p]);
      // Run [p, run.end): inputs at [p, p + num_inputs), then reverse edges, then an added loop.
      if (dup == Duplicates::keep) {
        for (int64_t r = p; r < p + run.num_inputs; ++r) {
          const int64_t k = tag_of(keys[r]);
          cols[out] = s;
          input_edge_of_csr[out] = k;
          csr_edge_of_input[k] = out++;
        }
        const int64_t extra = std::max<int64_t>(run.num_reverse - run.num_inputs, 0) +
                              (run.end - p - run.num_inputs - run.num_reverse);
        for (int64_t r = 0; r < extra; ++r) {
          cols[out] = s;
          input_edge_of_csr[out++] = -1;
        }
      } else {
        for (int64_t r = p; r < p + run.num_inputs; ++r) csr_edge_of_input[tag_of(keys[r])] = out;
        cols[out] = s;
        input_edge_of_csr[out++] = run.num_inputs > 0 ? tag_of(keys[p]) : -1;
      }
      p = run.end;
    }
  }
}

// Step 1: the candidate edges as items of the counting sort. Items [0, M) are the input edges
// (those the self-loop policy keeps); with symmetrize, items [M, 2M) their reverses (but for
// self-loops, their own reverses); then, with SelfLoops::add, one item per node.
template <class Index>
struct Candidates {
  const Index* src;
  const Index* dst;
  int64_t num_inputs;     // M
  bool drop_given_loops;  // SelfLoops::remove or add
  bool symmetrize;
  int64_t loop_items;  // first item of the added self-loops
  int64_t num_items;

  Candidates(const Index* s, const Index* d, int64_t M, int64_t num_dst, const BuildOptions& o)
      : src(s),
        dst(d),
        num_inputs(M),
        drop_given_loops(o.self_loops != SelfLoops::keep),
        symmetrize(o.symmetrize),
        loop_items(o.symmetrize ? 2 * M : M),
        num_items(loop_items + (o.self_loops == SelfLoops::add ? num_dst : 0)) {}

  int64_t max_tag() const {
    return num_items > loop_items ? 2 * num_inputs + (num_items - loop_items) - 1 : 2 * num_inputs - 1;
  }

  /// Calls f(tag, src, dst) for every candidate among items [begin, end), in item (= tag) order,
  /// and ahead(dst) for the destination of the input (or reverse) edge kAhead items further on, so
  /// that the callers can prefetch the random slots they are about to update.
  /// Every field is read into a local first, so the loops keep them in registers while f stores.
  template <int kAhead, class F, class Ahead>
  void for_each(int64_t begin, int64_t end, F&& f, Ahead&& ahead) const {
    const Index* const S = src;
    const Index* const D = dst;
    const int64_t M = num_inputs, loops_from = loop_items;
    const bool drop = drop_given_loops;
    for (int64_t k = begin, e = std::min(end, M); k < e; ++k) {
      if (k + kAhead < e) ahead(static_cast<int32_t>(D[k + kAhead]));
      const auto s = static_cast<int32_t>(S[k]), d = static_cast<int32_t>(D[k]);
      if (!drop || s != d) f(k, s, d);
    }
    if (symmetrize)
      for (int64_t t = std::max(begin, M), e = std::min(end, 2 * M); t < e; ++t) {
        if (t + kAhead < e) ahead(static_cast<int32_t>(S[t + kAhead - M]));
        const auto s = static_cast<int32_t>(S[t - M]), d = static_cast<int32_t>(D[t - M]);
        if (s != d) f(t, d, s);
      }
    for (int64_t t = std::max(begin, loops_from); t < end; ++t) {
      const auto i = static_cast<int32_t>(t - loops_from);
      f(2 * M + i, i, i);
    }
  }

  // The counting sort's two loops, as functions of their own: inlined into the parallel loop's
  // closure, GCC kept the cursor pointers in memory and the scatter ran 2x slower. Both update
  // slots at random destinations (far apart when there are many rows), so they prefetch them:
  // the count its counter, the scatter its cursor.
  [[gnu::noinline]] void count(int64_t begin, int64_t end, int64_t* __restrict count) const {
    for_each<kPrefetchItems>(
        begin, end, [count](int64_t, int32_t, int32_t d) { ++count[d]; },
        [count](int32_t d) { detail::prefetch_write(count + d); });
  }
  template <class Key>
  [[gnu::noinline]] void scatter(int64_t begin, int64_t end, int64_t* __restrict next,
                                 Key* __restrict out) const {
    for_each<kPrefetchItems>(
        begin, end,
        [next, out](int64_t tag, int32_t s, int32_t d) {
          out[next[d]++] = make_key(static_cast<Key*>(nullptr), s, tag);
        },
        [next](int32_t d) { detail::prefetch_write(next + d); });
  }
};

// Steps 2-4 of build_graph for candidates carried as `Key`s.
template <class Key, class Index>
Graph finish_build(int64_t num_dst, int64_t num_src, const Candidates<Index>& candidates, Duplicates dup) {
  const int64_t M = candidates.num_inputs;
  const Index* S = candidates.src;
  const Index* D = candidates.dst;
  // 2. Stable counting sort by destination. The keys are written by the scatter, never zeroed.
  detail::CountingSort by_dst(candidates.num_items, num_dst, [&](int64_t begin, int64_t end, int64_t* count) {
    candidates.count(begin, end, count);
  });
  const int64_t num_candidates = by_dst.num_sorted();
  auto keys = detail::huge_page_array_for_overwrite<Key>(static_cast<size_t>(num_candidates));
  by_dst.scatter(
      [&](int64_t begin, int64_t end, int64_t* next) { candidates.scatter(begin, end, next, keys.get()); });
  std::vector<int64_t> row_start = by_dst.release_key_start();

  // Row chunks of about equal candidate counts, for steps 3 and 4.
  const std::vector<int64_t> chunks =
      balanced_row_chunks(row_start, std::max<int64_t>(kEdgeGrain / 4, (num_candidates + num_dst) / 256));

  // 3. Sort each row by (source, tag), unless it arrived sorted; 4a. while the row is in cache,
  // count its output edges and, for Duplicates::error, note the repeated pair whose second
  // occurrence comes first in the input. Every row keeps all its candidates unless a duplicate is
  // merged or a reverse edge pairs with an input; until a chunk meets such a row it writes no
  // offsets, and if none does, the output offsets are row_start itself. Otherwise row_ptr is
  // allocated by the first chunk that needs it, and each chunk's rows before its first such row
  // (all of them if it has none) get their candidate counts afterwards.
  std::vector<int64_t> row_ptr;
  std::once_flag row_ptr_once;
  std::vector<std::pair<int64_t, int64_t>> repeat_of_chunk(
      chunks.size(), {std::numeric_limits<int64_t>::max(), -1});  // (second k, first k)
  std::vector<int64_t> counted_from(chunks.size());               // first row counted into row_ptr
  parallel_for_chunks(chunks, [&](size_t c, int64_t row_begin, int64_t row_end) {
    const int64_t stop = sort_and_count_rows(row_begin, row_end, row_start.data(), keys.get(), M, dup,
                                             static_cast<int64_t*>(nullptr))
                             .stopped_at;
    counted_from[c] = stop;
    if (stop == row_end) return;
    std::call_once(row_ptr_once,
                   [&] { row_ptr = detail::huge_page_vector<int64_t>(static_cast<size_t>(num_dst) + 1); });
    repeat_of_chunk[c] =
        sort_and_count_rows(stop, row_end, row_start.data(), keys.get(), M, dup, row_ptr.data()).repeat;
  });
  const auto repeat = *std::min_element(repeat_of_chunk.begin(), repeat_of_chunk.end());
  if (repeat.second >= 0)
    raise<GraphError>("build_graph: edge (src=", S[repeat.second], ", dst=", D[repeat.second],
                      ") appears at k=", repeat.second, " and k=", repeat.first, " (Duplicates::error)");
  const bool same_offsets = row_ptr.empty();
  if (!same_offsets) {
    parallel_for_chunks(chunks, [&](size_t c, int64_t row_begin, int64_t) {
      for (int64_t i = row_begin; i < counted_from[c]; ++i) row_ptr[i + 1] = row_start[i + 1] - row_start[i];
    });
    std::partial_sum(row_ptr.begin(), row_ptr.end(), row_ptr.begin());
  }
  const int64_t* out_start = same_offsets ? row_start.data() : row_ptr.data();
  const int64_t num_edges = out_start[num_dst];

  // 4b. Write the edges and both input maps.
  auto cols = detail::huge_page_vector<int32_t>(static_cast<size_t>(num_edges));
  auto input_edge_of_csr = detail::huge_page_vector<int64_t>(static_cast<size_t>(num_edges));
  auto csr_edge_of_input = detail::huge_page_vector<int64_t>(static_cast<size_t>(M), -1);
  parallel_for_chunks(chunks, [&](size_t, int64_t row_begin, int64_t row_end) {
    write_rows(row_begin, row_end, row_start.data(), keys.get(), M, dup, out_start, cols.data(),
               input_edge_of_csr.data(), csr_edge_of_input.data());
  });
  keys.reset();
  // Offsets from 0 to num_edges, columns in range and rows non-decreasing (repeated only under
  // Duplicates::keep), maps in range: all hold by construction, so no public check runs again.
  return detail::TrustedCsr::make(num_dst, num_src, same_offsets ? std::move(row_start) : std::move(row_ptr),
                                  std::move(cols), std::move(input_edge_of_csr),
                                  std::move(csr_edge_of_input));
}

template <class Index>
Graph build_graph_impl(int64_t num_dst, int64_t num_src, std::span<const Index> src,
                       std::span<const Index> dst, const BuildOptions& options, bool wide_keys = false) {
  if (num_dst < 0 || num_dst > kMaxNodes)
    raise<GraphError>("build_graph: num_dst is ", num_dst, ", expected in [0, ", kMaxNodes, "]");
  if (num_src < 0 || num_src > kMaxNodes)
    raise<GraphError>("build_graph: num_src is ", num_src, ", expected in [0, ", kMaxNodes, "]");
  if (src.size() != dst.size())
    raise<GraphError>("build_graph: src has ", src.size(), " entries and dst has ", dst.size(),
                      ", expected the same length");
  if (options.self_loops == SelfLoops::add && num_dst != num_src)
    raise<GraphError>("build_graph: SelfLoops::add needs a square graph, got num_dst=", num_dst,
                      " != num_src=", num_src);
  if (options.symmetrize && num_dst != num_src)
    raise<GraphError>("build_graph: symmetrize needs a square graph, got num_dst=", num_dst,
                      " != num_src=", num_src);

  const auto M = static_cast<int64_t>(src.size());
  const Index* S = src.data();
  const Index* D = dst.data();
  const int64_t bad = parallel_find_first(0, M, kEdgeGrain, [&](int64_t k) {
    const auto s = static_cast<int64_t>(S[k]), d = static_cast<int64_t>(D[k]);
    return (s < 0) | (s >= num_src) | (d < 0) | (d >= num_dst);
  });
  if (bad < M) {
    const auto s = static_cast<int64_t>(S[bad]), d = static_cast<int64_t>(D[bad]);
    if (s < 0 || s >= num_src)
      raise<GraphError>("build_graph: src[", bad, "] is ", s, ", expected in [0, num_src=", num_src, ")");
    raise<GraphError>("build_graph: dst[", bad, "] is ", d, ", expected in [0, num_dst=", num_dst, ")");
  }

  const Candidates<Index> candidates(S, D, M, num_dst, options);
  // 2.-4., on keys of the narrowest type that holds every tag.
  if (!wide_keys && candidates.max_tag() <= int64_t{std::numeric_limits<uint32_t>::max()})
    return finish_build<uint64_t>(num_dst, num_src, candidates, options.duplicates);
  return finish_build<WideKey>(num_dst, num_src, candidates, options.duplicates);
}

}  // namespace

Graph build_graph(int64_t num_dst, int64_t num_src, std::span<const int64_t> src,
                  std::span<const int64_t> dst, const BuildOptions& options) {
  return build_graph_impl<int64_t>(num_dst, num_src, src, dst, options);
}

Graph build_graph(int64_t num_dst, int64_t num_src, std::span<const int32_t> src,
                  std::span<const int32_t> dst, const BuildOptions& options) {
  return build_graph_impl<int32_t>(num_dst, num_src, src, dst, options);
}

namespace detail {

Graph build_graph_wide_keys(int64_t num_dst, int64_t num_src, std::span<const int64_t> src,
                            std::span<const int64_t> dst, const BuildOptions& options) {
  return build_graph_impl<int64_t>(num_dst, num_src, src, dst, options, /*wide_keys=*/true);
}

}  // namespace detail
}  // namespace edgeattn
