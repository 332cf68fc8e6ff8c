#include "edgeattn/data/statistics.hpp"

#include <algorithm>

namespace edgeattn::data {

DatasetStats describe(const Dataset& ds) {
  DatasetStats s;
  s.name = ds.name;
  s.format = ds.format;
  const Graph& g = ds.graph;
  const int64_t n = g.num_dst();
  s.num_nodes = n;
  s.num_edges = g.num_edges();
  s.weighted = !ds.edge_weight.empty();
  s.edge_dim = ds.edge_attr.absent() ? 0 : ds.edge_attr.dim(1);

  // Rows are sorted, so "v -> u exists" is a binary search in row u... of the transpose: edge
  // j -> i is stored in row i; its reverse i -> j is stored in row j.
  std::vector<uint8_t> touched(static_cast<size_t>(n), 0);
  int64_t reciprocated = 0, non_loop = 0;
  std::vector<int64_t> degrees(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto row = g.row(i);
    degrees[static_cast<size_t>(i)] = static_cast<int64_t>(row.size());
    for (size_t k = 0; k < row.size(); ++k) {
      const int32_t j = row[k];
      if (k > 0 && row[k - 1] == j) continue;  // a duplicate edge is one pair
      if (j == i) {
        ++s.self_loops;
        continue;
      }
      ++non_loop;
      touched[static_cast<size_t>(i)] = touched[static_cast<size_t>(j)] = 1;
      if (j < n) {
        const auto back = g.row(j);
        if (std::binary_search(back.begin(), back.end(), static_cast<int32_t>(i))) {
          ++reciprocated;
          if (j < i) --s.undirected_pairs;  // counted once below for each direction present
        }
      }
      ++s.undirected_pairs;
    }
  }
  s.symmetric = reciprocated == non_loop;
  s.isolated_nodes = std::count(touched.begin(), touched.end(), uint8_t{0});

  if (!degrees.empty()) {
    s.in_degree.min = *std::min_element(degrees.begin(), degrees.end());
    s.in_degree.max = *std::max_element(degrees.begin(), degrees.end());
    s.in_degree.mean = static_cast<double>(s.num_edges) / static_cast<double>(n);
    std::vector<int64_t> sorted = degrees;
    std::sort(sorted.begin(), sorted.end());
    const auto at = [&](double q) {
      return sorted[static_cast<size_t>(q * static_cast<double>(sorted.size() - 1))];
    };
    s.in_degree.median = at(0.5);
    s.in_degree.p90 = at(0.9);
    s.in_degree.p99 = at(0.99);
  }

  s.num_features = ds.features.cols();
  s.sparse_features = ds.features.is_sparse();
  s.feature_density = ds.features.density();
  s.num_classes = ds.labels.num_classes;
  s.multi_label = ds.labels.multi_label();
  if (!s.multi_label && !ds.labels.classes.empty()) {
    s.class_counts.assign(static_cast<size_t>(s.num_classes), 0);
    for (const int32_t c : ds.labels.classes) {
      if (c < 0)
        ++s.unlabelled;
      else
        ++s.class_counts[static_cast<size_t>(c)];
    }
  }
  if (!ds.default_split.empty()) {
    const Split& split = ds.split();
    s.split = ds.default_split;
    s.train = static_cast<int64_t>(split.train.size());
    s.val = static_cast<int64_t>(split.val.size());
    s.test = static_cast<int64_t>(split.test.size());
  }
  return s;
}

}  // namespace edgeattn::data
