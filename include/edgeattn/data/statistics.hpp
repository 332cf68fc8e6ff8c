// The summary `edgeattn dataset info` prints: sizes, self-loops, isolated nodes, feature density,
// class balance, split sizes and the in-degree distribution.
//
// Example:
//   auto stats = edgeattn::data::describe(edgeattn::data::load_dataset("cora"));
//   stats.num_edges;         // 10556 directed edges as stored (5278 undirected pairs)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

struct DegreeSummary {
  int64_t min = 0, max = 0;
  double mean = 0;
  int64_t median = 0, p90 = 0, p99 = 0;
};

struct DatasetStats {
  std::string name, format;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;         ///< directed, as stored
  int64_t undirected_pairs = 0;  ///< unordered {u, v} pairs with u != v
  bool symmetric = false;        ///< every u->v has v->u
  int64_t self_loops = 0;
  int64_t isolated_nodes = 0;  ///< no in- or out-edge other than a self-loop
  int64_t num_features = 0;
  bool sparse_features = false;
  double feature_density = 0;
  int64_t num_classes = 0;
  bool multi_label = false;
  std::vector<int64_t> class_counts;  ///< single-label: nodes per class
  int64_t unlabelled = 0;
  std::string split;  ///< the default split's name
  int64_t train = 0, val = 0, test = 0;
  DegreeSummary in_degree;
  bool weighted = false;
  int64_t edge_dim = 0;  ///< columns of Dataset::edge_attr; 0 without edge features
};

DatasetStats describe(const Dataset& dataset);

}  // namespace edgeattn::data
