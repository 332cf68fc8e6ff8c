// The serial neighbour-sampling oracle: each step exactly as graph/neighbor_sampler.hpp words it.
#include "reference_neighbor_sampler.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace edgeattn::reference {

std::vector<int64_t> sample_row(int64_t degree, int64_t fanout, bool replace, uint64_t seed, int64_t hop,
                                int64_t node) {
  std::vector<int64_t> picked;
  if (fanout == -1 || (!replace && degree <= fanout)) {
    for (int64_t p = 0; p < degree; ++p) picked.push_back(p);
  } else if (replace) {
    if (degree == 0) return picked;
    for (int64_t t = 0; t < fanout; ++t)
      picked.push_back(static_cast<int64_t>(
          neighbor_draw(seed, hop, node, static_cast<uint64_t>(t), static_cast<uint64_t>(degree))));
    std::sort(picked.begin(), picked.end());
  } else {
    // Floyd's algorithm (Bentley & Floyd, CACM 1987): a uniform k-subset of [0, d) in k draws.
    std::set<int64_t> chosen;
    for (int64_t t = 0; t < fanout; ++t) {
      const int64_t j = degree - fanout + t;
      const auto r = static_cast<int64_t>(
          neighbor_draw(seed, hop, node, static_cast<uint64_t>(t), static_cast<uint64_t>(j + 1)));
      chosen.insert(chosen.contains(r) ? j : r);
    }
    picked.assign(chosen.begin(), chosen.end());
  }
  return picked;
}

namespace {

// The sum of leaves [lo, hi) of the padded row: a power-of-two range, halved.
double range_sum(const std::vector<double>& leaf, size_t lo, size_t hi) {
  if (hi - lo == 1) return leaf[lo];
  const size_t mid = lo + (hi - lo) / 2;
  return range_sum(leaf, lo, mid) + range_sum(leaf, mid, hi);
}

// The leaf of [lo, hi) that x (in [0, its sum)) falls on, never entering a half whose sum is 0.
size_t descend(const std::vector<double>& leaf, size_t lo, size_t hi, double x) {
  if (hi - lo == 1) return lo;
  const size_t mid = lo + (hi - lo) / 2;
  const double left = range_sum(leaf, lo, mid), right = range_sum(leaf, mid, hi);
  if (left != 0.0 && (right == 0.0 || x < left)) return descend(leaf, lo, mid, x);
  return descend(leaf, mid, hi, x - left);
}

}  // namespace

std::vector<int64_t> sample_weighted_row(std::span<const float> w, int64_t fanout, bool replace,
                                         uint64_t seed, int64_t hop, int64_t node) {
  std::vector<int64_t> positive;  // the in-edges that can be picked
  for (size_t q = 0; q < w.size(); ++q)
    if (w[q] > 0.f) positive.push_back(static_cast<int64_t>(q));
  const auto p = static_cast<int64_t>(positive.size());
  if (fanout == -1 || (!replace && p <= fanout)) return positive;
  std::vector<int64_t> picked;
  if (p == 0) return picked;  // with replacement: nothing to draw from
  // The weights padded with zeros to a power of two; each pick descends from the whole range with
  // x = u_t times its sum. Without replacement a picked in-edge's weight becomes 0 for the next.
  std::vector<double> leaf(std::bit_ceil(w.size()), 0.0);
  for (size_t q = 0; q < w.size(); ++q) leaf[q] = static_cast<double>(w[q]);
  for (int64_t t = 0; t < fanout; ++t) {
    const double x =
        neighbor_unit(seed, hop, node, static_cast<uint64_t>(t)) * range_sum(leaf, 0, leaf.size());
    const size_t q = descend(leaf, 0, leaf.size(), x);
    picked.push_back(static_cast<int64_t>(q));
    if (!replace) leaf[q] = 0.0;
  }
  std::sort(picked.begin(), picked.end());
  return picked;
}

Block sample_block(const Graph& graph, std::span<const int64_t> dst_nodes, int64_t fanout, bool replace,
                   uint64_t seed, int64_t hop, SourceOrder order, std::span<const float> weights) {
  const bool square = graph.num_dst() == graph.num_src();
  Block block;
  block.dst_nodes.assign(dst_nodes.begin(), dst_nodes.end());
  // Each destination's sampled edges as (global source, input CSR position), in row order.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> sampled;
  for (int64_t v : dst_nodes) {
    const int64_t base = graph.row_ptr()[static_cast<size_t>(v)];
    const auto row = graph.row(v);
    auto& edges = sampled.emplace_back();
    const std::vector<int64_t> picked =
        weights.empty()
            ? reference::sample_row(graph.degree(v), fanout, replace, seed, hop, v)
            : reference::sample_weighted_row(
                  weights.subspan(static_cast<size_t>(base), static_cast<size_t>(graph.degree(v))), fanout,
                  replace, seed, hop, v);
    for (int64_t p : picked) edges.emplace_back(row[static_cast<size_t>(p)], base + p);
  }
  // Numbering: the destinations first (square graphs), then the new sources.
  std::map<int64_t, int32_t> local_of;
  auto number = [&](int64_t global) {
    if (local_of.try_emplace(global, static_cast<int32_t>(block.src_nodes.size())).second)
      block.src_nodes.push_back(global);
  };
  if (square)
    for (int64_t v : dst_nodes) number(v);
  if (order == SourceOrder::appearance) {
    for (const auto& edges : sampled)
      for (const auto& [global, e] : edges) number(global);
  } else {
    std::set<int64_t> fresh;
    for (const auto& edges : sampled)
      for (const auto& [global, e] : edges)
        if (!local_of.contains(global)) fresh.insert(global);
    for (int64_t global : fresh) number(global);
  }

  std::vector<int64_t> row_ptr{0};
  std::vector<int32_t> col_idx;
  for (const auto& sampled_row : sampled) {
    std::vector<std::pair<int32_t, int64_t>> edges;  // (local source, input CSR position)
    for (const auto& [global, e] : sampled_row) edges.emplace_back(local_of.at(global), e);
    std::sort(edges.begin(), edges.end());
    for (const auto& [j, e] : edges) {
      col_idx.push_back(j);
      block.edge_ids.push_back(e);
    }
    row_ptr.push_back(static_cast<int64_t>(col_idx.size()));
  }
  block.graph =
      Graph::from_csr(static_cast<int64_t>(dst_nodes.size()), static_cast<int64_t>(block.src_nodes.size()),
                      std::move(row_ptr), std::move(col_idx), CsrCheck::sort);
  return block;
}

SampledSubgraph sample_neighbors(const Graph& graph, std::span<const int64_t> seeds,
                                 const NeighborSamplerOptions& options) {
  SampledSubgraph out;
  out.seeds.assign(seeds.begin(), seeds.end());
  std::vector<int64_t> dst = out.seeds;
  for (size_t h = 0; h < options.fanouts.size(); ++h) {
    Block block = reference::sample_block(graph, dst, options.fanouts[h], options.replace, options.seed,
                                          static_cast<int64_t>(h), options.order, options.weights);
    dst = block.src_nodes;
    out.blocks.insert(out.blocks.begin(), std::move(block));
  }
  if (!out.blocks.empty()) out.input_nodes = out.blocks.front().src_nodes;
  return out;
}

}  // namespace edgeattn::reference
