// Graph transforms. Most are "row rebuilds": count each new row's edges in parallel, prefix-sum
// the counts into row_ptr, then fill each row in parallel, writing its columns and the old CSR
// position of each edge. The fill of a row depends only on the input, so the result is the same
// for any thread count. `to_undirected` goes through build_graph (symmetrize + merge), whose
// input-order map is exactly the old-edge map because the input edge list is the CSR order.
#include "edgeattn/graph/transforms.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn {
namespace {

constexpr int64_t kRowGrain = 2048;

void require_square(const Graph& g, const char* what) {
  if (g.num_dst() != g.num_src())
    raise<GraphError>(what, ": needs a square graph, got num_dst=", g.num_dst(), ", num_src=", g.num_src());
}

// Builds a graph whose row i has count(i) edges, written by fill(i, cols, old) into the spans.
template <class Count, class Fill>
TransformedGraph rebuild_rows(int64_t num_dst, int64_t num_src, Count&& count, Fill&& fill) {
  std::vector<int64_t> row_ptr(static_cast<size_t>(num_dst) + 1, 0);
  parallel_for(0, num_dst, kRowGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) row_ptr[static_cast<size_t>(i) + 1] = count(i);
  });
  std::partial_sum(row_ptr.begin(), row_ptr.end(), row_ptr.begin());
  const auto num_edges = static_cast<size_t>(row_ptr.back());
  std::vector<int32_t> cols(num_edges);
  std::vector<int64_t> old(num_edges);
  parallel_for(0, num_dst, kRowGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const auto begin = static_cast<size_t>(row_ptr[static_cast<size_t>(i)]);
      const auto len = static_cast<size_t>(row_ptr[static_cast<size_t>(i) + 1]) - begin;
      fill(i, std::span<int32_t>(cols).subspan(begin, len), std::span<int64_t>(old).subspan(begin, len));
    }
  });
  TransformedGraph out;
  out.graph = Graph::from_csr(num_dst, num_src, std::move(row_ptr), std::move(cols), CsrCheck::sort);
  out.old_edge = std::move(old);
  return out;
}

bool has_loop(const Graph& g, int64_t i) {
  const auto row = g.row(i);
  return std::binary_search(row.begin(), row.end(), static_cast<int32_t>(i));
}

}  // namespace

void check_permutation(std::span<const int64_t> perm, int64_t n, const char* what) {
  if (static_cast<int64_t>(perm.size()) != n)
    raise<GraphError>(what, " has ", perm.size(), " entries, expected num_nodes = ", n);
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t v = perm[i];
    if (v < 0 || v >= n) raise<GraphError>(what, "[", i, "] is ", v, ", expected in [0, ", n, ")");
    if (seen[static_cast<size_t>(v)])
      raise<GraphError>(what, "[", i, "] is ", v, ", which appears earlier: expected a permutation of [0, ",
                        n, ")");
    seen[static_cast<size_t>(v)] = 1;
  }
}

std::vector<int64_t> invert_permutation(std::span<const int64_t> perm) {
  const auto n = static_cast<int64_t>(perm.size());
  check_permutation(perm, n, "invert_permutation: perm");
  std::vector<int64_t> inv(perm.size());
  for (int64_t i = 0; i < n; ++i) inv[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
  return inv;
}

TransformedGraph add_self_loops(const Graph& g) {
  require_square(g, "add_self_loops");
  const auto row_ptr = g.row_ptr();
  return rebuild_rows(
      g.num_dst(), g.num_src(), [&](int64_t i) { return g.degree(i) + (has_loop(g, i) ? 0 : 1); },
      [&](int64_t i, std::span<int32_t> cols, std::span<int64_t> old) {
        const auto row = g.row(i);
        const int64_t base = row_ptr[static_cast<size_t>(i)];
        const bool add = cols.size() > row.size();
        size_t out = 0;
        bool placed = !add;
        for (size_t k = 0; k < row.size(); ++k) {
          if (!placed && row[k] > i) {
            cols[out] = static_cast<int32_t>(i);
            old[out++] = -1;
            placed = true;
          }
          cols[out] = row[k];
          old[out++] = base + static_cast<int64_t>(k);
        }
        if (!placed) {
          cols[out] = static_cast<int32_t>(i);
          old[out] = -1;
        }
      });
}

TransformedGraph remove_self_loops(const Graph& g) {
  require_square(g, "remove_self_loops");
  const auto row_ptr = g.row_ptr();
  return rebuild_rows(
      g.num_dst(), g.num_src(),
      [&](int64_t i) {
        const auto row = g.row(i);
        const auto [lo, hi] = std::equal_range(row.begin(), row.end(), static_cast<int32_t>(i));
        return g.degree(i) - static_cast<int64_t>(hi - lo);
      },
      [&](int64_t i, std::span<int32_t> cols, std::span<int64_t> old) {
        const auto row = g.row(i);
        const int64_t base = row_ptr[static_cast<size_t>(i)];
        size_t out = 0;
        for (size_t k = 0; k < row.size(); ++k) {
          if (row[k] == i) continue;
          cols[out] = row[k];
          old[out++] = base + static_cast<int64_t>(k);
        }
      });
}

UndirectedGraph to_undirected(const Graph& g) {
  require_square(g, "to_undirected");
  const int64_t n = g.num_dst();
  // The input edge list in CSR order: edge k is col_idx[k] -> row of k.
  std::vector<int32_t> src(g.col_idx().begin(), g.col_idx().end());
  std::vector<int32_t> dst(src.size());
  const auto row_ptr = g.row_ptr();
  parallel_for(0, n, kRowGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::fill(dst.begin() + row_ptr[static_cast<size_t>(i)],
                dst.begin() + row_ptr[static_cast<size_t>(i) + 1], static_cast<int32_t>(i));
  });
  Graph built =
      build_graph(n, n, std::span<const int32_t>(src), std::span<const int32_t>(dst),
                  {.self_loops = SelfLoops::keep, .duplicates = Duplicates::merge, .symmetrize = true});
  UndirectedGraph out;
  out.old_edge.assign(built.input_edge_of_csr().begin(), built.input_edge_of_csr().end());
  // Freed, not cleared (`v = {}` keeps the capacity): 8 bytes an edge the rest does not read.
  std::vector<int32_t>().swap(src);
  std::vector<int32_t>().swap(dst);
  // The reverse of new edge i <- j is j <- i; find its first occurrence in the input's row j.
  out.old_reverse_edge.resize(out.old_edge.size());
  const auto new_ptr = built.row_ptr();
  const auto new_col = built.col_idx();
  parallel_for(0, n, kRowGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      for (int64_t p = new_ptr[static_cast<size_t>(i)]; p < new_ptr[static_cast<size_t>(i) + 1]; ++p) {
        const int32_t j = new_col[static_cast<size_t>(p)];
        const auto row = g.row(j);
        const auto it = std::lower_bound(row.begin(), row.end(), static_cast<int32_t>(i));
        out.old_reverse_edge[static_cast<size_t>(p)] =
            (it != row.end() && *it == i) ? row_ptr[static_cast<size_t>(j)] + (it - row.begin()) : -1;
      }
  });
  // Drop the builder's input maps: they describe a temporary edge list, not the caller's.
  out.graph = Graph::from_csr(n, n, std::vector<int64_t>(new_ptr.begin(), new_ptr.end()),
                              std::vector<int32_t>(new_col.begin(), new_col.end()));
  return out;
}

bool is_symmetric(const Graph& g) {
  if (g.num_dst() != g.num_src()) return false;
  const auto& t = g.transpose();
  // Symmetric iff the CSC (sources' destination lists) equals the CSR, row by row.
  return std::equal(t.col_ptr.begin(), t.col_ptr.end(), g.row_ptr().begin()) &&
         std::equal(t.row_idx.begin(), t.row_idx.end(), g.col_idx().begin());
}

TransformedGraph permute(const Graph& g, std::span<const int64_t> new_of_old) {
  require_square(g, "permute");
  const int64_t n = g.num_dst();
  check_permutation(new_of_old, n, "permute: new_of_old");
  const std::vector<int64_t> old_of_new = invert_permutation(new_of_old);
  const auto row_ptr = g.row_ptr();
  return rebuild_rows(
      n, n, [&](int64_t i) { return g.degree(old_of_new[static_cast<size_t>(i)]); },
      [&](int64_t i, std::span<int32_t> cols, std::span<int64_t> old) {
        const int64_t src_row = old_of_new[static_cast<size_t>(i)];
        const auto row = g.row(src_row);
        const int64_t base = row_ptr[static_cast<size_t>(src_row)];
        thread_local std::vector<std::pair<int32_t, int64_t>> scratch;
        scratch.resize(row.size());
        for (size_t k = 0; k < row.size(); ++k)
          scratch[k] = {static_cast<int32_t>(new_of_old[static_cast<size_t>(row[k])]),
                        base + static_cast<int64_t>(k)};
        std::sort(scratch.begin(), scratch.end());
        for (size_t k = 0; k < row.size(); ++k) {
          cols[k] = scratch[k].first;
          old[k] = scratch[k].second;
        }
      });
}

TransformedGraph induced_subgraph(const Graph& g, std::span<const int64_t> nodes) {
  require_square(g, "induced_subgraph");
  const int64_t n = g.num_dst();
  std::vector<int64_t> new_of_old(static_cast<size_t>(n), -1);
  for (size_t k = 0; k < nodes.size(); ++k) {
    const int64_t v = nodes[k];
    if (v < 0 || v >= n)
      raise<GraphError>("induced_subgraph: nodes[", k, "] is ", v, ", expected in [0, ", n, ")");
    if (new_of_old[static_cast<size_t>(v)] >= 0)
      raise<GraphError>("induced_subgraph: nodes[", k, "] is ", v, ", which appears earlier at nodes[",
                        new_of_old[static_cast<size_t>(v)], "]: expected distinct nodes");
    new_of_old[static_cast<size_t>(v)] = static_cast<int64_t>(k);
  }
  const auto m = static_cast<int64_t>(nodes.size());
  const auto row_ptr = g.row_ptr();
  return rebuild_rows(
      m, m,
      [&](int64_t i) {
        const auto row = g.row(nodes[static_cast<size_t>(i)]);
        return static_cast<int64_t>(std::count_if(
            row.begin(), row.end(), [&](int32_t j) { return new_of_old[static_cast<size_t>(j)] >= 0; }));
      },
      [&](int64_t i, std::span<int32_t> cols, std::span<int64_t> old) {
        const int64_t src_row = nodes[static_cast<size_t>(i)];
        const auto row = g.row(src_row);
        const int64_t base = row_ptr[static_cast<size_t>(src_row)];
        size_t out = 0;
        for (size_t k = 0; k < row.size(); ++k) {
          const int64_t j = new_of_old[static_cast<size_t>(row[k])];
          if (j < 0) continue;
          cols[out] = static_cast<int32_t>(j);
          old[out++] = base + static_cast<int64_t>(k);
        }
        // Columns are ascending already when `nodes` is sorted; otherwise sort the row.
        if (!std::is_sorted(cols.begin(), cols.end())) {
          thread_local std::vector<std::pair<int32_t, int64_t>> scratch;
          scratch.resize(cols.size());
          for (size_t k = 0; k < cols.size(); ++k) scratch[k] = {cols[k], old[k]};
          std::sort(scratch.begin(), scratch.end());
          for (size_t k = 0; k < cols.size(); ++k) {
            cols[k] = scratch[k].first;
            old[k] = scratch[k].second;
          }
        }
      });
}

}  // namespace edgeattn
