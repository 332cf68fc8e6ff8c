#include "data/reader_support.hpp"

#include <algorithm>
#include <sstream>
#include <system_error>

#include "core/huge_pages.hpp"
#include "core/prefetch.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/ogb_binary.hpp"

namespace edgeattn::data::detail {

namespace {

template <class Index>
Graph build_weighted_graph_impl(int64_t num_nodes, std::span<const Index> src, std::span<const Index> dst,
                                std::span<const float> weight, const BuildOptions& options,
                                std::vector<float>& edge_weight, RepeatedWeights repeated) {
  Graph g = build_graph(num_nodes, num_nodes, src, dst, options);
  edge_weight.clear();
  if (weight.empty()) return g;
  const auto row_ptr = g.row_ptr();
  const auto col_idx = g.col_idx();
  const auto input = g.input_edge_of_csr();
  const auto num_edges = static_cast<size_t>(g.num_edges());
  edgeattn::detail::huge_page_reserve(edge_weight, num_edges);
  edge_weight.resize(num_edges);
  // Input edges first: a gather in CSR order from random input positions, prefetched some edges
  // ahead (the weights of a large file do not fit in cache).
  constexpr size_t kAhead = 16;
  bool added = false;
  for (size_t p = 0; p < num_edges; ++p) {
    if (p + kAhead < num_edges && input[p + kAhead] >= 0)
      edgeattn::detail::prefetch_read<3>(&weight[static_cast<size_t>(input[p + kAhead])]);
    const int64_t k = input[p];
    added |= k < 0;
    edge_weight[p] = k >= 0 ? weight[static_cast<size_t>(k)] : 1.f;  // 1: a self-loop added by SelfLoops::add
  }
  if (repeated == RepeatedWeights::sum && options.duplicates == Duplicates::merge) {
    // Later copies of a merged pair add their weights to the first copy's (in input order).
    const auto csr_of = g.csr_edge_of_input();
    for (size_t k = 0; k < weight.size() && k < csr_of.size(); ++k) {
      const int64_t e = csr_of[k];
      if (e >= 0 && input[static_cast<size_t>(e)] != static_cast<int64_t>(k))
        edge_weight[static_cast<size_t>(e)] += weight[k];
    }
  }
  if (!added || !options.symmetrize) return g;
  // A reverse edge d -> s added by symmetrize mirrors the input edge s -> d, stored in row s.
  for (int64_t d = 0, n = g.num_dst(); d < n; ++d) {
    for (int64_t p = row_ptr[static_cast<size_t>(d)]; p < row_ptr[static_cast<size_t>(d) + 1]; ++p) {
      const int32_t s = col_idx[static_cast<size_t>(p)];
      if (input[static_cast<size_t>(p)] >= 0 || s == d) continue;
      const auto row = g.row(s);
      const auto it = std::lower_bound(row.begin(), row.end(), static_cast<int32_t>(d));
      const int64_t q = row_ptr[static_cast<size_t>(s)] + (it - row.begin());
      edge_weight[static_cast<size_t>(p)] = weight[static_cast<size_t>(input[static_cast<size_t>(q)])];
    }
  }
  return g;
}

template <class Index>
void check_no_repeated_edges_impl(std::span<const Index> src, std::span<const Index> dst,
                                  std::span<const int64_t> line, bool drop_self_loops,
                                  const std::string& file) {
  std::vector<int64_t> order;
  order.reserve(src.size());
  for (size_t k = 0; k < src.size(); ++k)
    if (!drop_self_loops || src[k] != dst[k]) order.push_back(static_cast<int64_t>(k));
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    if (dst[ua] != dst[ub]) return dst[ua] < dst[ub];
    if (src[ua] != src[ub]) return src[ua] < src[ub];
    return a < b;
  });
  int64_t first = -1, second = -1;
  auto same = [&](int64_t a, int64_t b) {
    return src[static_cast<size_t>(a)] == src[static_cast<size_t>(b)] &&
           dst[static_cast<size_t>(a)] == dst[static_cast<size_t>(b)];
  };
  // Runs of one pair list its copies in input order; the run whose second copy is earliest wins.
  for (size_t i = 0; i + 1 < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && same(order[i], order[j])) ++j;
    if (j > i + 1 && (second < 0 || order[i + 1] < second)) {
      first = order[i];
      second = order[i + 1];
    }
    i = j;
  }
  if (second >= 0)
    raise<ParseError>(file, ":", line[static_cast<size_t>(second)],
                      ": expected no repeated edges (Duplicates::error), found the edge (",
                      src[static_cast<size_t>(second)], " -> ", dst[static_cast<size_t>(second)],
                      ") again, first listed on line ", line[static_cast<size_t>(first)]);
}

}  // namespace

Graph build_weighted_graph(int64_t num_nodes, std::span<const int64_t> src, std::span<const int64_t> dst,
                           std::span<const float> weight, const BuildOptions& options,
                           std::vector<float>& edge_weight, RepeatedWeights repeated) {
  return build_weighted_graph_impl(num_nodes, src, dst, weight, options, edge_weight, repeated);
}

Graph build_weighted_graph(int64_t num_nodes, std::span<const int32_t> src, std::span<const int32_t> dst,
                           std::span<const float> weight, const BuildOptions& options,
                           std::vector<float>& edge_weight, RepeatedWeights repeated) {
  return build_weighted_graph_impl(num_nodes, src, dst, weight, options, edge_weight, repeated);
}

void check_no_repeated_edges(std::span<const int64_t> src, std::span<const int64_t> dst,
                             std::span<const int64_t> line, bool drop_self_loops, const std::string& file) {
  check_no_repeated_edges_impl(src, dst, line, drop_self_loops, file);
}

void check_no_repeated_edges(std::span<const int32_t> src, std::span<const int32_t> dst,
                             std::span<const int64_t> line, bool drop_self_loops, const std::string& file) {
  check_no_repeated_edges_impl(src, dst, line, drop_self_loops, file);
}

std::filesystem::path existing_or_gz(const std::filesystem::path& path) {
  if (auto found = find_plain_or_gz(path)) return *found;
  raise<IoError>("cannot find '", path.string(), "' (nor '", path.string(), ".gz')");
}

std::string stem_without_gz(const std::filesystem::path& path) {
  std::filesystem::path p = path.filename();
  if (p.extension() == ".gz") p = p.stem();
  return p.stem().string();
}

void check_graph_fits(const std::string& where, int64_t num_nodes, int64_t num_edges,
                      const std::string& nodes_from, const std::string& hint) {
  // Per node: the row offsets of the graph and of its transpose (8 bytes each) and a label or
  // degree (8); per edge: the parsed pair (16), the column and the input maps (20).
  const double need = 24.0 * static_cast<double>(num_nodes) + 36.0 * static_cast<double>(num_edges);
  const auto limit = static_cast<double>(default_load_limit());
  if (need <= limit) return;
  const auto gb = [](double b) {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(1);
    os << b / 1e9 << " GB";
    return os.str();
  };
  raise<ParseError>(where, ": ", nodes_from, ", so the graph has ", num_nodes, " nodes",
                    num_edges > 0 ? edgeattn::detail::message(" (and ", num_edges, " edges)") : std::string(),
                    ": about ", gb(need), " of memory, more than the ", gb(limit),
                    " a load may take (3/4 of this machine's memory, or $EDGEATTN_MAX_LOAD_BYTES)",
                    hint.empty() ? "" : "; ", hint);
}

SourceFile source_file(const std::filesystem::path& path, size_t bytes) {
  SourceFile f;
  f.path = path.string();
  f.bytes = static_cast<int64_t>(bytes);
  return f;
}

}  // namespace edgeattn::data::detail
