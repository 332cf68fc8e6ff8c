// Graph: validated CSR by destination, with caches prepared once on first use.
//
// Storage is split in two shared, immutable pieces so that copies and `with_input_maps` never copy
// edges or recompute caches:
//   Structure  the CSR arrays and the lazily built caches (transpose, degree stats, partition),
//              each guarded by its own std::once_flag so concurrent first calls build it once;
//   Data       a Structure plus the optional input-order maps of the builder.
#include "edgeattn/graph/graph.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <numeric>
#include <utility>

#include "core/huge_pages.hpp"
#include "core/prefetch.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "graph/counting_sort.hpp"
#include "graph/transpose_edges.hpp"
#include "graph/trusted_csr.hpp"

namespace edgeattn {
namespace {

// Column indices and transposed row indices are int32, so node counts must fit.
constexpr int64_t kMaxNodes = std::numeric_limits<int32_t>::max();

// The partition aims at about this many chunks; the floor keeps small graphs in few chunks so
// per-chunk scheduling overhead stays negligible. Both depend only on the graph.
constexpr int64_t kPartitionMinUnits = 2048;
constexpr int64_t kPartitionTargetChunks = 256;

// Chunks of the rows of `offsets` ([rows + 1]) holding about the same edges + rows: Graph's
// partition (destination rows) and source_partition (the transpose's columns).
std::vector<int64_t> edge_balanced_chunks(std::span<const int64_t> offsets, int64_t num_edges) {
  const int64_t units = num_edges + static_cast<int64_t>(offsets.size()) - 1;
  return balanced_row_chunks(offsets, std::max(kPartitionMinUnits, units / kPartitionTargetChunks));
}

// Items per parallel piece of the validity checks.
constexpr int64_t kCheckGrain = int64_t{1} << 16;

struct Structure {
  int64_t num_dst = 0;
  int64_t num_src = 0;
  std::vector<int64_t> row_ptr{0};  // [num_dst + 1]
  std::vector<int32_t> col_idx;     // [num_edges]

  mutable std::once_flag transpose_once, transpose_edges_once, stats_once, partition_once,
      source_partition_once;
  mutable Transpose transpose;
  mutable std::vector<int32_t> transpose_edges_narrow;  // num_edges <= g_narrow_edge_limit
  mutable std::vector<int64_t> transpose_edges_wide;    // otherwise
  mutable DegreeStats stats;
  mutable std::vector<int64_t> partition;
  mutable std::vector<int64_t> source_partition;

  int64_t num_edges() const { return static_cast<int64_t>(col_idx.size()); }
};

// Stable counting sort of the edges by source (detail::CountingSort, in parallel blocks of edges):
// within a column the destinations come out ascending, so the result is unique and does not
// depend on the thread count. O(E + num_src). Writes, at each edge's transpose position p, its
// row to rows[p] and its CSR position to ids[p], each where not null, and returns col_ptr.
//
// Both passes touch a cursor per edge at random (8 bytes a source: beyond L2 for a sampled
// block's 237k sources) and the scatter writes its outputs at random: each pass prefetches the
// cursor kAhead edges ahead, and the scatter prefetches the output slots kAhead / 2 edges ahead
// from the cursor's value then (exact unless the column recurs in between, and then a line off at
// most). Without it the scatter waited on every cursor load and output store in turn.
template <class Id>
std::vector<int64_t> sort_by_source(const Structure& s, int32_t* rows, Id* ids) {
  constexpr int64_t kAhead = 16;
  const int32_t* cols = s.col_idx.data();
  const int64_t* row_ptr = s.row_ptr.data();
  // Visits the edges [begin, end) in order with their rows: f(row, edge).
  auto for_each_edge = [&](int64_t begin, int64_t end, auto&& f) {
    if (begin >= end) return;
    int64_t row = std::upper_bound(row_ptr, row_ptr + s.num_dst + 1, begin) - row_ptr - 1;
    for (int64_t e = begin; e < end; ++e) {
      while (row_ptr[row + 1] <= e) ++row;
      f(row, e);
    }
  };
  detail::CountingSort by_src(s.num_edges(), s.num_src, [&](int64_t begin, int64_t end, int64_t* count) {
    for (int64_t e = begin; e < end; ++e) {
      if (e + kAhead < end) detail::prefetch_write(count + cols[e + kAhead]);
      ++count[cols[e]];
    }
  });
  by_src.scatter([&](int64_t begin, int64_t end, int64_t* next) {
    for_each_edge(begin, end, [&](int64_t row, int64_t e) {
      if (e + kAhead < end) detail::prefetch_write(next + cols[e + kAhead]);
      if (e + kAhead / 2 < end) {
        const int64_t q = next[cols[e + kAhead / 2]];
        if (rows) detail::prefetch_write(rows + q);
        if (ids) detail::prefetch_write(ids + q);
      }
      const int64_t p = next[cols[e]]++;
      if (rows) rows[p] = static_cast<int32_t>(row);
      if (ids) ids[p] = static_cast<Id>(e);
    });
  });
  return by_src.release_key_start();
}

Transpose build_transpose(const Structure& s) {
  Transpose t;
  t.row_idx = detail::huge_page_vector<int32_t>(s.col_idx.size());
  t.col_ptr = sort_by_source<int32_t>(s, t.row_idx.data(), nullptr);
  return t;
}

// The same sort again (stable, so the same positions), keeping the edge ids instead, as Id.
template <class Id>
std::vector<Id> build_transpose_edges(const Structure& s) {
  std::vector<Id> edges = detail::huge_page_vector<Id>(s.col_idx.size());
  (void)sort_by_source(s, nullptr, edges.data());
  return edges;
}

// Both from one sort: the transpose's rows and the edge ids at each position. The counting pass,
// the prefix sums and the scatter's reads of the columns and cursors are shared (a sampled batch's
// three blocks: 24-27 ms for the two sorts, 19-21 ms for one, medians on 2 threads).
template <class Id>
std::vector<Id> build_transpose_with_edges(const Structure& s, Transpose& t) {
  t.row_idx = detail::huge_page_vector<int32_t>(s.col_idx.size());
  std::vector<Id> edges = detail::huge_page_vector<Id>(s.col_idx.size());
  t.col_ptr = sort_by_source(s, t.row_idx.data(), edges.data());
  return edges;
}

int64_t g_narrow_edge_limit = std::numeric_limits<int32_t>::max();

DegreeStats build_degree_stats(const Structure& s) {
  DegreeStats d;
  if (s.num_dst == 0) return d;
  d.min_degree = std::numeric_limits<int64_t>::max();
  for (int64_t i = 0; i < s.num_dst; ++i) {
    const auto row = static_cast<size_t>(i);
    const int64_t deg = s.row_ptr[row + 1] - s.row_ptr[row];
    d.min_degree = std::min(d.min_degree, deg);
    d.max_degree = std::max(d.max_degree, deg);
    if (deg == 0) {
      ++d.isolated_rows;
      continue;
    }
    const auto b = static_cast<size_t>(s.row_ptr[row]), e = static_cast<size_t>(s.row_ptr[row + 1]);
    d.row_extent += int64_t{s.col_idx[e - 1]} - s.col_idx[b] + 1;
    for (size_t x = b; x < e; ++x) {
      if (s.col_idx[x] == i) ++d.self_loops;
      if (x > b && s.col_idx[x] == s.col_idx[x - 1]) ++d.duplicate_edges;
    }
  }
  d.mean_degree = static_cast<double>(s.num_edges()) / static_cast<double>(s.num_dst);
  return d;
}

// Validates the CSR arrays; with `sort`, sorts rows stably and permutes `input_map` alongside
// (creating it as the original positions if the caller gave none and some row had to move, so
// per-edge data in the caller's order stays reachable).
void validate_csr(int64_t num_dst, int64_t num_src, const std::vector<int64_t>& row_ptr,
                  std::vector<int32_t>& col_idx, CsrCheck check, std::vector<int64_t>& input_map) {
  if (num_dst < 0 || num_dst > kMaxNodes)
    raise<GraphError>("Graph::from_csr: num_dst is ", num_dst, ", expected in [0, ", kMaxNodes, "]");
  if (num_src < 0 || num_src > kMaxNodes)
    raise<GraphError>("Graph::from_csr: num_src is ", num_src, ", expected in [0, ", kMaxNodes, "]");
  if (static_cast<int64_t>(row_ptr.size()) != num_dst + 1)
    raise<GraphError>("Graph::from_csr: row_ptr has ", row_ptr.size(),
                      " entries, expected num_dst + 1 = ", num_dst + 1);
  if (row_ptr[0] != 0) raise<GraphError>("Graph::from_csr: row_ptr[0] is ", row_ptr[0], ", expected 0");
  const int64_t* offsets = row_ptr.data();
  const auto down = static_cast<size_t>(parallel_find_first(
      1, num_dst + 1, kCheckGrain, [&](int64_t i) { return offsets[i] < offsets[i - 1]; }));
  if (down <= static_cast<size_t>(num_dst))
    raise<GraphError>("Graph::from_csr: row_ptr[", down, "] is ", row_ptr[down], ", expected >= row_ptr[",
                      down - 1, "] = ", row_ptr[down - 1], " (offsets must be non-decreasing)");
  const auto num_edges = static_cast<int64_t>(col_idx.size());
  if (row_ptr.back() != num_edges)
    raise<GraphError>("Graph::from_csr: row_ptr[num_dst=", num_dst, "] is ", row_ptr.back(),
                      ", expected col_idx.size() = ", num_edges);
  const int32_t* cols = col_idx.data();
  const auto out_of_range = static_cast<size_t>(parallel_find_first(
      0, num_edges, kCheckGrain, [&](int64_t e) { return (cols[e] < 0) | (cols[e] >= num_src); }));
  if (out_of_range < col_idx.size())
    raise<GraphError>("Graph::from_csr: col_idx[", out_of_range, "] is ", col_idx[out_of_range],
                      ", expected in [0, num_src=", num_src, ")");
  if (!input_map.empty()) {
    if (static_cast<int64_t>(input_map.size()) != num_edges)
      raise<GraphError>("Graph::from_csr: input_edge_of_csr has ", input_map.size(),
                        " entries, expected 0 or num_edges = ", num_edges);
    const int64_t* map = input_map.data();
    const auto bad = static_cast<size_t>(
        parallel_find_first(0, num_edges, kCheckGrain, [&](int64_t e) { return map[e] < -1; }));
    if (bad < input_map.size())
      raise<GraphError>("Graph::from_csr: input_edge_of_csr[", bad, "] is ", input_map[bad],
                        ", expected >= -1");
  }

  // Rows that break the order: the first is found in parallel, the rest serially from there.
  const bool strict = check == CsrCheck::require_sorted;
  const int64_t first_unsorted = parallel_find_first(0, num_dst, kCheckGrain / 16, [&](int64_t i) {
    bool bad_row = false;
    for (int64_t e = offsets[i] + 1; e < offsets[i + 1]; ++e)
      bad_row |= strict ? cols[e - 1] >= cols[e] : cols[e - 1] > cols[e];
    return bad_row;
  });

  std::vector<std::pair<int32_t, int64_t>> scratch;  // (column, original position) of one row
  for (int64_t i = first_unsorted; i < num_dst; ++i) {
    const auto begin = static_cast<size_t>(row_ptr[static_cast<size_t>(i)]);
    const auto end = static_cast<size_t>(row_ptr[static_cast<size_t>(i) + 1]);
    for (size_t e = begin + 1; e < end; ++e) {
      const bool ok =
          check == CsrCheck::require_sorted ? col_idx[e - 1] < col_idx[e] : col_idx[e - 1] <= col_idx[e];
      if (ok) continue;
      if (check == CsrCheck::require_sorted)
        raise<GraphError>(
            "Graph::from_csr: row ", i, " is not strictly increasing: col_idx[", e - 1,
            "] = ", col_idx[e - 1], ", col_idx[", e, "] = ", col_idx[e],
            " (use CsrCheck::sort to sort rows; duplicates are not allowed when sorted is required)");
      // Sort this row stably, carrying the original positions along.
      if (input_map.empty()) {
        input_map.resize(col_idx.size());
        std::iota(input_map.begin(), input_map.end(), int64_t{0});
      }
      scratch.clear();
      for (size_t p = begin; p < end; ++p) scratch.emplace_back(col_idx[p], input_map[p]);
      std::stable_sort(scratch.begin(), scratch.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t p = begin; p < end; ++p) {
        col_idx[p] = scratch[p - begin].first;
        input_map[p] = scratch[p - begin].second;
      }
      break;
    }
  }
}

}  // namespace

struct Graph::Data {
  std::shared_ptr<const Structure> structure;
  std::vector<int64_t> input_edge_of_csr;  // [num_edges] or empty
  std::vector<int64_t> csr_edge_of_input;  // [input edges] or empty
};

Graph::Graph() {
  static const auto empty = [] {
    auto d = std::make_shared<Data>();
    d->structure = std::make_shared<Structure>();
    return std::shared_ptr<const Data>(std::move(d));
  }();
  data_ = empty;
}

Graph::Graph(std::shared_ptr<const Data> data) : data_(std::move(data)) {}

Graph Graph::from_csr(int64_t num_dst, int64_t num_src, std::vector<int64_t> row_ptr,
                      std::vector<int32_t> col_idx, CsrCheck check, std::vector<int64_t> input_edge_of_csr) {
  validate_csr(num_dst, num_src, row_ptr, col_idx, check, input_edge_of_csr);
  auto s = std::make_shared<Structure>();
  s->num_dst = num_dst;
  s->num_src = num_src;
  s->row_ptr = std::move(row_ptr);
  s->col_idx = std::move(col_idx);
  auto d = std::make_shared<Data>();
  d->structure = std::move(s);
  d->input_edge_of_csr = std::move(input_edge_of_csr);
  return Graph(std::move(d));
}

Graph detail::TrustedCsr::make(int64_t num_dst, int64_t num_src, std::vector<int64_t> row_ptr,
                               std::vector<int32_t> col_idx, std::vector<int64_t> input_edge_of_csr,
                               std::vector<int64_t> csr_edge_of_input) {
#ifdef EDGEATTN_CHECK_INTERNAL
  // Sanitizer builds re-check what the builder promises, with the public checks.
  // Rows may repeat a column (Duplicates::keep), so they are checked as CsrCheck::sort would sort
  // them: nothing may move.
  const Graph checked = Graph::from_csr(num_dst, num_src, row_ptr, col_idx, CsrCheck::sort, input_edge_of_csr)
                            .with_input_maps(input_edge_of_csr, csr_edge_of_input);
  if (!std::ranges::equal(checked.col_idx(), col_idx))
    throw std::logic_error("TrustedCsr::make: a row's columns are not in non-decreasing order");
#endif
  auto s = std::make_shared<Structure>();
  s->num_dst = num_dst;
  s->num_src = num_src;
  s->row_ptr = std::move(row_ptr);
  s->col_idx = std::move(col_idx);
  auto d = std::make_shared<Graph::Data>();
  d->structure = std::move(s);
  d->input_edge_of_csr = std::move(input_edge_of_csr);
  d->csr_edge_of_input = std::move(csr_edge_of_input);
  return Graph(std::move(d));
}

Graph Graph::with_input_maps(std::vector<int64_t> input_edge_of_csr,
                             std::vector<int64_t> csr_edge_of_input) const {
  const int64_t num_edges = this->num_edges();
  const auto num_inputs = static_cast<int64_t>(csr_edge_of_input.size());
  if (!input_edge_of_csr.empty() && static_cast<int64_t>(input_edge_of_csr.size()) != num_edges)
    raise<GraphError>("Graph::with_input_maps: input_edge_of_csr has ", input_edge_of_csr.size(),
                      " entries, expected 0 or num_edges = ", num_edges);
  const int64_t input_limit = num_inputs > 0 ? num_inputs : std::numeric_limits<int64_t>::max();
  const int64_t* to_input = input_edge_of_csr.data();
  const auto bad_e = static_cast<size_t>(
      parallel_find_first(0, static_cast<int64_t>(input_edge_of_csr.size()), kCheckGrain,
                          [&](int64_t e) { return (to_input[e] < -1) | (to_input[e] >= input_limit); }));
  if (bad_e < input_edge_of_csr.size())
    raise<GraphError>("Graph::with_input_maps: input_edge_of_csr[", bad_e, "] is ", input_edge_of_csr[bad_e],
                      ", expected in [-1, ", input_limit, ")");
  const int64_t* to_csr = csr_edge_of_input.data();
  const auto bad_k = static_cast<size_t>(parallel_find_first(
      0, num_inputs, kCheckGrain, [&](int64_t k) { return (to_csr[k] < -1) | (to_csr[k] >= num_edges); }));
  if (bad_k < csr_edge_of_input.size())
    raise<GraphError>("Graph::with_input_maps: csr_edge_of_input[", bad_k, "] is ", csr_edge_of_input[bad_k],
                      ", expected in [-1, ", num_edges, ")");
  auto d = std::make_shared<Data>();
  d->structure = data_->structure;
  d->input_edge_of_csr = std::move(input_edge_of_csr);
  d->csr_edge_of_input = std::move(csr_edge_of_input);
  return Graph(std::move(d));
}

int64_t Graph::num_dst() const { return data_->structure->num_dst; }
int64_t Graph::num_src() const { return data_->structure->num_src; }
int64_t Graph::num_edges() const { return data_->structure->num_edges(); }

double Graph::density() const {
  const auto& s = *data_->structure;
  if (s.num_dst == 0 || s.num_src == 0) return 0.0;
  return static_cast<double>(s.num_edges()) /
         (static_cast<double>(s.num_dst) * static_cast<double>(s.num_src));
}

std::span<const int64_t> Graph::row_ptr() const { return data_->structure->row_ptr; }
std::span<const int32_t> Graph::col_idx() const { return data_->structure->col_idx; }

std::span<const int32_t> Graph::row(int64_t i) const {
  const auto& s = *data_->structure;
  if (i < 0 || i >= s.num_dst)
    raise<InvalidArgument>("Graph::row: i is ", i, ", expected in [0, ", s.num_dst, ")");
  const auto b = static_cast<size_t>(s.row_ptr[static_cast<size_t>(i)]);
  const auto e = static_cast<size_t>(s.row_ptr[static_cast<size_t>(i) + 1]);
  return std::span<const int32_t>(s.col_idx).subspan(b, e - b);
}

int64_t Graph::degree(int64_t i) const {
  const auto& s = *data_->structure;
  if (i < 0 || i >= s.num_dst)
    raise<InvalidArgument>("Graph::degree: i is ", i, ", expected in [0, ", s.num_dst, ")");
  return s.row_ptr[static_cast<size_t>(i) + 1] - s.row_ptr[static_cast<size_t>(i)];
}

std::span<const int64_t> Graph::input_edge_of_csr() const { return data_->input_edge_of_csr; }
std::span<const int64_t> Graph::csr_edge_of_input() const { return data_->csr_edge_of_input; }

const Transpose& Graph::transpose() const {
  const Structure& s = *data_->structure;
  std::call_once(s.transpose_once, [&] { s.transpose = build_transpose(s); });
  return s.transpose;
}

TransposeEdges Graph::transpose_edges() const {
  const Structure& s = *data_->structure;
  std::call_once(s.transpose_edges_once, [&] {
    // Every reader of the edge ids walks the transpose too: when it does not exist yet, one sort
    // gives both (the same bits as the two sorts, which are stable). Another thread's transpose()
    // meanwhile waits on transpose_once, or has built it already and this sorts the ids alone.
    const bool narrow = s.num_edges() <= g_narrow_edge_limit;
    bool together = false;
    std::call_once(s.transpose_once, [&] {
      if (narrow)
        s.transpose_edges_narrow = build_transpose_with_edges<int32_t>(s, s.transpose);
      else
        s.transpose_edges_wide = build_transpose_with_edges<int64_t>(s, s.transpose);
      together = true;
    });
    if (together) return;
    if (narrow)
      s.transpose_edges_narrow = build_transpose_edges<int32_t>(s);
    else
      s.transpose_edges_wide = build_transpose_edges<int64_t>(s);
  });
  return {s.transpose_edges_narrow, s.transpose_edges_wide};
}

void detail::set_narrow_edge_limit(int64_t edges) {
  g_narrow_edge_limit = std::min<int64_t>(edges, std::numeric_limits<int32_t>::max());
}

const DegreeStats& Graph::degree_stats() const {
  const Structure& s = *data_->structure;
  std::call_once(s.stats_once, [&] { s.stats = build_degree_stats(s); });
  return s.stats;
}

std::span<const int64_t> Graph::partition() const {
  const Structure& s = *data_->structure;
  std::call_once(s.partition_once, [&] { s.partition = edge_balanced_chunks(s.row_ptr, s.num_edges()); });
  return s.partition;
}

std::span<const int64_t> Graph::source_partition() const {
  const Transpose& t = transpose();
  const Structure& s = *data_->structure;
  std::call_once(s.source_partition_once,
                 [&] { s.source_partition = edge_balanced_chunks(t.col_ptr, s.num_edges()); });
  return s.source_partition;
}

std::string Graph::describe() const {
  return detail::message("Graph(num_dst=", num_dst(), ", num_src=", num_src(), ", num_edges=", num_edges(),
                         ")");
}

std::vector<int64_t> balanced_row_chunks(std::span<const int64_t> row_offset, int64_t target) {
  if (row_offset.empty())
    raise<InvalidArgument>("balanced_row_chunks: row_offset is empty, expected num_rows + 1 >= 1 entries");
  if (target < 1) raise<InvalidArgument>("balanced_row_chunks: target is ", target, ", expected >= 1");
  const auto num_rows = static_cast<int64_t>(row_offset.size()) - 1;
  std::vector<int64_t> bounds{0};
  int64_t acc = 0;
  for (int64_t i = 0; i < num_rows; ++i) {
    const int64_t edges = row_offset[static_cast<size_t>(i) + 1] - row_offset[static_cast<size_t>(i)];
    if (edges < 0)
      raise<InvalidArgument>("balanced_row_chunks: row_offset[", i + 1, "] is ",
                             row_offset[static_cast<size_t>(i) + 1], ", expected >= row_offset[", i,
                             "] = ", row_offset[static_cast<size_t>(i)]);
    acc += edges + 1;
    if (acc >= target) {
      bounds.push_back(i + 1);
      acc = 0;
    }
  }
  if (bounds.back() != num_rows) bounds.push_back(num_rows);
  return bounds;
}

}  // namespace edgeattn
