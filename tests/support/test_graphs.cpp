#include "support/test_graphs.hpp"

#include <cmath>

#include "edgeattn/core/rng.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::testing {
namespace {

// Uniform in [0, 1) from the counter-based generator, indexed by (stream, index).
float uniform(uint64_t seed, int64_t stream, int64_t index) {
  return edge_uniform(seed, index, stream, 0x5eed);
}

}  // namespace

Graph uniform_graph(int64_t num_dst, int64_t num_src, int64_t num_edges, uint64_t seed) {
  std::vector<int64_t> src(static_cast<size_t>(num_edges)), dst(static_cast<size_t>(num_edges));
  for (int64_t e = 0; e < num_edges; ++e) {
    src[static_cast<size_t>(e)] = static_cast<int64_t>(uniform(seed, 1, e) * static_cast<float>(num_src));
    dst[static_cast<size_t>(e)] = static_cast<int64_t>(uniform(seed, 2, e) * static_cast<float>(num_dst));
  }
  return build_graph(num_dst, num_src, src, dst,
                     {.self_loops = SelfLoops::keep, .duplicates = Duplicates::merge});
}

Graph power_law_graph(int64_t n, int64_t num_edges, uint64_t seed) {
  std::vector<int64_t> src, dst;
  const int64_t isolated_begin = n / 2, isolated_end = n / 2 + std::max<int64_t>(1, n / 10);
  for (int64_t e = 0; e < num_edges; ++e) {
    // dst ~ n * u^3: heavily skewed towards low ids (hubs).
    const float u = uniform(seed, 3, e);
    int64_t d = static_cast<int64_t>(static_cast<float>(n) * u * u * u);
    if (d >= isolated_begin && d < isolated_end) d = isolated_end % n;
    src.push_back(static_cast<int64_t>(uniform(seed, 4, e) * static_cast<float>(n)));
    dst.push_back(std::min(d, n - 1));
  }
  for (int64_t i = 0; i < n; i += 3) {
    if (i >= isolated_begin && i < isolated_end) continue;
    src.push_back(i);
    dst.push_back(i);
  }
  return build_graph(n, n, src, dst, {.self_loops = SelfLoops::keep, .duplicates = Duplicates::merge});
}

Graph four_node_graph() { return Graph::from_csr(4, 4, {0, 2, 4, 4, 7}, {0, 1, 0, 2, 1, 2, 3}); }

Tensor random_tensor(Shape shape, uint64_t seed, float lo, float hi) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = lo + (hi - lo) * uniform(seed, 5, i);
  return t;
}

Graph hub_row_graph(int64_t n) {
  std::vector<int64_t> row_ptr = {0, n};
  std::vector<int32_t> cols(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) cols[static_cast<size_t>(j)] = static_cast<int32_t>(j);
  return Graph::from_csr(1, n, std::move(row_ptr), std::move(cols));
}

Graph hub_columns_graph(int64_t n, bool square) {
  std::vector<int64_t> row_ptr(static_cast<size_t>(n) + 1);
  std::vector<int32_t> cols(static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    row_ptr[static_cast<size_t>(i) + 1] = 2 * (i + 1);
    cols[static_cast<size_t>(2 * i)] = 0;
    cols[static_cast<size_t>(2 * i) + 1] = 1;
  }
  return Graph::from_csr(n, square ? n : 2, std::move(row_ptr), std::move(cols));
}

}  // namespace edgeattn::testing
