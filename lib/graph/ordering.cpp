// Orderings: RCM through Boost.Graph, AMD through SuiteSparse, degree sort, and locality metrics.
// RCM and AMD run on detail::undirected_pattern (symmetric, no loops, no repeats), which is
// exactly the input AMD documents as AMD_OK (sorted columns, no duplicates, diagonal ignored).
#include "edgeattn/graph/ordering.hpp"

#include <amd.h>

#include <algorithm>
#include <boost/graph/cuthill_mckee_ordering.hpp>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <iomanip>
#include <new>
#include <numeric>
#include <sstream>
#include <string>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/graph/boost_interop.hpp"
#include "edgeattn/graph/partition.hpp"
#include "edgeattn/graph/transforms.hpp"
#include "undirected_pattern.hpp"

namespace edgeattn {
namespace {

void require_square(const Graph& g, const char* what) {
  if (g.num_dst() != g.num_src())
    raise<GraphError>(what, ": needs a square graph, got num_dst=", g.num_dst(), ", num_src=", g.num_src());
}

// A pseudo-peripheral node of r's component (George & Liu 1979), as Boost's find_starting_node
// computes it: breadth-first from r; x = the node of least degree in the last level; repeat from
// x while the eccentricity grows. Boost's own search re-colours every vertex of the graph for
// each breadth-first search, O(n) per component: on a 1M-node R-MAT graph with 436k isolated
// nodes it took 11 minutes. This one touches only the component (`level` is reset on the nodes
// it visited), so all starts together cost O(n + edges) per round. On return `queue` holds r's
// component (the last search's visit order).
int32_t pseudo_peripheral_node(const Graph& sym, int32_t r, std::vector<int32_t>& level,
                               std::vector<int32_t>& queue) {
  // Breadth-first levels from u into `queue`; returns the eccentricity, x = last level's
  // least-degree node (the first such in visit order).
  auto sweep = [&](int32_t u, int32_t& x) {
    queue.clear();
    queue.push_back(u);
    level[size_t(u)] = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
      const int32_t v = queue[head];
      for (const int32_t w : sym.row(v))
        if (level[size_t(w)] < 0) {
          level[size_t(w)] = level[size_t(v)] + 1;
          queue.push_back(w);
        }
    }
    const int32_t ecc = level[size_t(queue.back())];
    x = queue.back();
    for (auto it = queue.rbegin(); it != queue.rend() && level[size_t(*it)] == ecc; ++it)
      if (sym.row(*it).size() <= sym.row(x).size()) x = *it;
    for (const int32_t v : queue) level[size_t(v)] = -1;
    return ecc;
  };
  int32_t x = r, y = r;
  int32_t ecc_r = sweep(r, x);
  int32_t ecc_x = sweep(x, y);
  while (ecc_x > ecc_r) {
    ecc_r = ecc_x;
    x = y;
    ecc_x = sweep(x, y);
  }
  return x;
}

}  // namespace

std::vector<int64_t> rcm_ordering(const Graph& graph) {
  require_square(graph, "rcm_ordering");
  const Graph sym = detail::undirected_pattern(graph);
  const int64_t n = sym.num_dst();
  if (n == 0) return {};
  using BoostGraph = decltype(to_boost_csr<boost::directedS>(sym));
  using Vertex = boost::graph_traits<BoostGraph>::vertex_descriptor;
  const BoostGraph bg = to_boost_csr<boost::directedS>(sym);
  // One start per component, in order of each component's smallest node (as Boost orders them):
  // a pseudo-peripheral node of it (an isolated node is its own).
  std::deque<Vertex> starts;
  {
    std::vector<int32_t> level(static_cast<size_t>(n), -1), queue;
    std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
    for (int32_t v = 0; v < n; ++v) {
      if (seen[size_t(v)]) continue;
      starts.push_back(static_cast<Vertex>(pseudo_peripheral_node(sym, v, level, queue)));
      for (const int32_t w : queue) seen[size_t(w)] = 1;  // v's component
    }
  }
  std::vector<boost::default_color_type> colors(static_cast<size_t>(n));
  std::vector<std::size_t> order;  // Cuthill-McKee: old ids in new order
  order.reserve(static_cast<size_t>(n));
  boost::cuthill_mckee_ordering(
      bg, std::move(starts), std::back_inserter(order),
      boost::make_iterator_property_map(colors.data(), get(boost::vertex_index, bg)),
      boost::make_out_degree_map(bg));
  std::vector<int64_t> new_of_old(order.size());
  for (size_t k = 0; k < order.size(); ++k)
    new_of_old[order[k]] = static_cast<int64_t>(order.size() - 1 - k);  // reversed
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

std::vector<int64_t> total_degrees(const Graph& graph) {
  require_square(graph, "total_degrees");
  const int64_t n = graph.num_dst();
  // Out-degrees counted off the columns, not read off the graph's transpose: building that (and
  // keeping it, cached on the graph) would cost a sampled run, which never needs it, 50 MB for a
  // 12.5M-edge graph.
  std::vector<int64_t> degree(static_cast<size_t>(n), 0);
  for (const int32_t j : graph.col_idx()) ++degree[static_cast<size_t>(j)];
  parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto row = graph.row(i);
      const auto [lo, hi] = std::equal_range(row.begin(), row.end(), static_cast<int32_t>(i));
      const int64_t loops = hi - lo;
      degree[static_cast<size_t>(i)] += static_cast<int64_t>(row.size()) - 2 * loops;
    }
  });
  return degree;
}

std::vector<int64_t> degree_ordering(const Graph& graph) {
  require_square(graph, "degree_ordering");
  const std::vector<int64_t> degree = total_degrees(graph);
  std::vector<int64_t> old_of_new(degree.size());
  std::iota(old_of_new.begin(), old_of_new.end(), 0);
  std::stable_sort(old_of_new.begin(), old_of_new.end(), [&](int64_t a, int64_t b) {
    return degree[static_cast<size_t>(a)] > degree[static_cast<size_t>(b)];
  });
  return invert_permutation(old_of_new);
}

int32_t degree_group(int64_t degree, double mean_degree) {
  // Groups by thresholds mean/2, mean, 2 mean, 4 mean, ...: group g >= 1 holds degrees in
  // [mean 2^(g-2), mean 2^(g-1)), group 0 those below mean / 2 (and every node when mean is 0).
  if (!(mean_degree > 0.0)) return 0;
  int32_t g = 0;
  for (double t = mean_degree / 2; static_cast<double>(degree) >= t && g < 62; t *= 2) ++g;
  return g;
}

std::vector<int64_t> degree_group_ordering(const Graph& graph) {
  require_square(graph, "degree_group_ordering");
  const std::vector<int64_t> degree = total_degrees(graph);
  const auto n = static_cast<int64_t>(degree.size());
  int64_t total = 0;
  for (const int64_t d : degree) total += d;
  const double mean = n > 0 ? static_cast<double>(total) / static_cast<double>(n) : 0.0;
  // A counting sort by group, highest group first, stable: ids ascending within a group.
  std::vector<int64_t> start(64, 0);
  std::vector<int32_t> group(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) {
    const int32_t g = degree_group(degree[static_cast<size_t>(v)], mean);
    group[static_cast<size_t>(v)] = g;
    ++start[static_cast<size_t>(63 - g)];  // slot 63 - g: the highest group counts first
  }
  int64_t sum = 0;
  for (int64_t& s : start) {
    const int64_t c = s;
    s = sum;
    sum += c;
  }
  std::vector<int64_t> new_of_old(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v)
    new_of_old[static_cast<size_t>(v)] = start[static_cast<size_t>(63 - group[static_cast<size_t>(v)])]++;
  return new_of_old;
}

std::vector<int64_t> partition_ordering(const Graph& graph, int64_t part_size) {
  require_square(graph, "partition_ordering");
  if (part_size < 1)
    raise<InvalidArgument>("partition_ordering: part_size is ", part_size, ", expected >= 1");
  const int64_t n = graph.num_dst();
  const int64_t parts = (n + part_size - 1) / part_size;
  std::vector<int64_t> new_of_old(static_cast<size_t>(n));
  std::iota(new_of_old.begin(), new_of_old.end(), 0);
  if (parts < 2) return new_of_old;
  if (!metis_available())
    raise<InvalidArgument>(
        "partition_ordering needs METIS: this edgeattn was built without it (install "
        "libmetis-dev and reconfigure with -DEDGEATTN_METIS=ON)");
  const std::vector<int32_t> part =
      partition_nodes(graph, {.parts = parts, .method = PartitionMethod::metis});
  // A counting sort by part, stable: ascending ids within a part.
  std::vector<int64_t> start(static_cast<size_t>(parts) + 1, 0);
  for (const int32_t p : part) ++start[static_cast<size_t>(p) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  for (int64_t v = 0; v < n; ++v)
    new_of_old[static_cast<size_t>(v)] = start[static_cast<size_t>(part[static_cast<size_t>(v)])]++;
  return new_of_old;
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

namespace {

// x with 3 significant digits.
std::string format_number(double x) {
  std::ostringstream os;
  os << std::setprecision(3) << x;
  return os.str();
}

}  // namespace

OrderingAdvice advise_ordering(const Graph& graph, int64_t row_bytes) {
  if (row_bytes < 1) raise<InvalidArgument>("advise_ordering: row_bytes is ", row_bytes, ", expected >= 1");
  OrderingAdvice a;
  const int64_t n = graph.num_dst();
  a.gathered_bytes = static_cast<double>(graph.num_src()) * static_cast<double>(row_bytes);
  const auto mb = [](double bytes) { return format_number(bytes / (1 << 20)) + " MiB"; };
  if (n != graph.num_src()) {
    a.reason = "a bipartite graph (" + std::to_string(n) + " x " + std::to_string(graph.num_src()) +
               ") has no one numbering to change";
    return a;
  }
  if (a.gathered_bytes <= kReorderCacheBytes) {
    a.reason = "the gathered rows (" + mb(a.gathered_bytes) + ") fit in a last-level cache (" +
               mb(kReorderCacheBytes) + ") in any order";
    return a;
  }
  std::vector<int64_t> degree = total_degrees(graph);
  int64_t total = 0;
  for (const int64_t d : degree) total += d;
  const auto mid = degree.begin() + n / 2;
  std::nth_element(degree.begin(), mid, degree.end());
  const double mean = static_cast<double>(total) / static_cast<double>(n);
  // A median of 0 (most nodes isolated) with edges elsewhere is as skewed as it gets.
  a.skew = *mid > 0 ? mean / static_cast<double>(*mid) : (total > 0 ? HUGE_VAL : 1.0);
  a.spread = graph.num_edges() > 0 ? locality(graph).mean_edge_distance / static_cast<double>(n) : 0.0;
  const std::string skew = "mean / median degree " + format_number(a.skew);
  const std::string spread = "mean edge span " + format_number(a.spread) + " of the nodes";
  if (!(a.skew > kReorderSkew)) {
    a.reason = "degrees are not skewed (" + skew + ", at most " + format_number(kReorderSkew) +
               "): no hubs to pack together";
    return a;
  }
  if (a.spread < kReorderSpread) {
    a.reason = "the numbering is already local (" + spread + ", below " + format_number(kReorderSpread) +
               "): renumbering could lose it";
    return a;
  }
  a.reorder = true;
  a.reason = "skewed degrees (" + skew + ") in a numbering without locality (" + spread +
             "), gathered rows of " + mb(a.gathered_bytes);
  return a;
}

int64_t bandwidth(const Graph& graph) { return locality(graph).bandwidth; }
double mean_edge_distance(const Graph& graph) { return locality(graph).mean_edge_distance; }

}  // namespace edgeattn
