// Orderings: RCM through Boost.Graph, AMD through SuiteSparse, degree sort, and locality metrics.
// RCM and AMD run on detail::undirected_pattern (symmetric, no loops, no repeats), which is
// exactly the input AMD documents as AMD_OK (sorted columns, no duplicates, diagonal ignored).
#include "edgeattn/graph/ordering.hpp"

#include <amd.h>

#include <algorithm>
#include <boost/graph/cuthill_mckee_ordering.hpp>
#include <cstdlib>
#include <new>
#include <numeric>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/boost_interop.hpp"
#include "edgeattn/graph/transforms.hpp"
#include "undirected_pattern.hpp"

namespace edgeattn {
namespace {

void require_square(const Graph& g, const char* what) {
  if (g.num_dst() != g.num_src())
    raise<GraphError>(what, ": needs a square graph, got num_dst=", g.num_dst(), ", num_src=", g.num_src());
}

}  // namespace

std::vector<int64_t> rcm_ordering(const Graph& graph) {
  require_square(graph, "rcm_ordering");
  const Graph sym = detail::undirected_pattern(graph);
  const auto bg = to_boost_csr<boost::directedS>(sym);
  std::vector<std::size_t> order;  // Cuthill-McKee: old ids in new order
  order.reserve(static_cast<size_t>(graph.num_dst()));
  // Picks a pseudo-peripheral start in each component (Boost's find_starting_node).
  boost::cuthill_mckee_ordering(bg, std::back_inserter(order));
  std::vector<int64_t> new_of_old(order.size());
  const size_t n = order.size();
  for (size_t k = 0; k < n; ++k) new_of_old[order[k]] = static_cast<int64_t>(n - 1 - k);  // reversed
  return new_of_old;
}

std::vector<int64_t> amd_ordering(const Graph& graph) {
  require_square(graph, "amd_ordering");
  const Graph sym = detail::undirected_pattern(graph);
  const int64_t n = sym.num_dst();
  if (n == 0) return {};  // amd_l_order rejects n = 0 as AMD_INVALID
  std::vector<SuiteSparse_long> ap(sym.row_ptr().begin(), sym.row_ptr().end());
  std::vector<SuiteSparse_long> ai(sym.col_idx().begin(), sym.col_idx().end());
  std::vector<SuiteSparse_long> p(static_cast<size_t>(n));  // p[k]: old id of new node k
  if (ai.empty()) ai.push_back(0);                          // AMD reads Ai even when nnz = 0
  const SuiteSparse_long status =
      amd_l_order(static_cast<SuiteSparse_long>(n), ap.data(), ai.data(), p.data(), nullptr, nullptr);
  if (status == AMD_OUT_OF_MEMORY) throw std::bad_alloc();
  if (status != AMD_OK && status != AMD_OK_BUT_JUMBLED)
    raise<GraphError>("amd_ordering: SuiteSparse amd_l_order returned status ", status, " for ",
                      sym.describe(), ", expected AMD_OK");
  std::vector<int64_t> old_of_new(p.begin(), p.end());
  return invert_permutation(old_of_new);
}

std::vector<int64_t> degree_ordering(const Graph& graph) {
  require_square(graph, "degree_ordering");
  const int64_t n = graph.num_dst();
  const auto& t = graph.transpose();
  std::vector<int64_t> degree(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto row = graph.row(i);
    const auto [lo, hi] = std::equal_range(row.begin(), row.end(), static_cast<int32_t>(i));
    const int64_t loops = hi - lo;
    degree[static_cast<size_t>(i)] =
        static_cast<int64_t>(row.size()) - loops +
        (t.col_ptr[static_cast<size_t>(i) + 1] - t.col_ptr[static_cast<size_t>(i)]) - loops;
  }
  std::vector<int64_t> old_of_new(static_cast<size_t>(n));
  std::iota(old_of_new.begin(), old_of_new.end(), 0);
  std::stable_sort(old_of_new.begin(), old_of_new.end(), [&](int64_t a, int64_t b) {
    return degree[static_cast<size_t>(a)] > degree[static_cast<size_t>(b)];
  });
  return invert_permutation(old_of_new);
}

Locality locality(const Graph& graph) {
  require_square(graph, "locality");
  Locality out;
  if (graph.num_edges() == 0) return out;
  // Per-chunk partials over the graph's fixed partition, combined in chunk order (exact integers).
  const auto bounds = graph.partition();
  std::vector<int64_t> chunk_max(bounds.size(), 0), chunk_sum(bounds.size(), 0);
  const auto row_ptr = graph.row_ptr();
  const auto col_idx = graph.col_idx();
  parallel_for_chunks(bounds, [&](size_t c, int64_t b, int64_t e) {
    int64_t mx = 0, sum = 0;
    for (int64_t i = b; i < e; ++i)
      for (int64_t p = row_ptr[static_cast<size_t>(i)]; p < row_ptr[static_cast<size_t>(i) + 1]; ++p) {
        const int64_t d = std::abs(i - static_cast<int64_t>(col_idx[static_cast<size_t>(p)]));
        mx = std::max(mx, d);
        sum += d;
      }
    chunk_max[c] = mx;
    chunk_sum[c] = sum;
  });
  int64_t total = 0;
  for (size_t c = 0; c < bounds.size(); ++c) {
    out.bandwidth = std::max(out.bandwidth, chunk_max[c]);
    total += chunk_sum[c];
  }
  out.mean_edge_distance = static_cast<double>(total) / static_cast<double>(graph.num_edges());
  return out;
}

int64_t bandwidth(const Graph& graph) { return locality(graph).bandwidth; }
double mean_edge_distance(const Graph& graph) { return locality(graph).mean_edge_distance; }

}  // namespace edgeattn
