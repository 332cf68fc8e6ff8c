// Synthetic node-classification datasets: a stochastic block model (Holland, Laskey & Leinhardt
// 1983) with class-correlated Gaussian features, for tests, demos and benchmarks at any size.
//
// Graph. Nodes fall into num_classes blocks (the class is the label). Each unordered pair {u, v},
// u != v, is an edge independently with probability p_in when u and v share a block, p_out
// otherwise; the graph stores both directions (symmetric, no self-loops, no repeats). The
// probabilities come from the expected degrees, with s = num_nodes / num_classes the mean block:
//   p_in = expected_in_degree / (s - 1),   p_out = expected_out_degree / (num_nodes - s)
// so with equal blocks a node has on average expected_in_degree neighbours in its class and
// expected_out_degree outside it. Homophily (fraction of same-class edges) is about
// d_in / (d_in + d_out).
//
// Features. Class c has a mean vector mu_c = signal * g_c, g_c ~ N(0, I_F) drawn once per dataset;
// node v of class y gets x_v = mu_y + noise * eps_v, eps_v ~ N(0, I_F). Difficulty: two class
// means are at distance about signal * sqrt(2 F), so the nearest-class-mean (linear, Bayes-optimal
// for known means) classifier confuses a given pair with probability about
//   Phi(-(signal / noise) * sqrt(F / 2))                          (Phi: standard normal CDF)
// e.g. F = 16, signal / noise = 0.5 -> 2.3% per pair; signal = 0 gives chance accuracy 1/K, so a
// model must then use the graph. feature_dim = 0 gives a dataset without features.
//
// Split "random" (the default): train_per_class nodes of every class, then num_val, then num_test
// (-1: all remaining) nodes, drawn uniformly at random.
//
// Node ids: with shuffle_nodes (default) the blocks are spread over the id range by a seeded
// random permutation, as real datasets are; without it block c is a contiguous id range.
//
// Everything is a pure function of the config: node v's candidate edges, features and split
// priority draw from Philox streams keyed by (seed, v) (core/rng.hpp), so the dataset is identical
// for any thread count. Edges are sampled by geometric skipping (O(edges), not O(nodes^2)).
//
// Example:
//   edgeattn::data::SbmConfig cfg{.num_nodes = 10000, .num_classes = 5, .expected_in_degree = 8,
//                                 .expected_out_degree = 2, .feature_dim = 32, .signal = 0.3f};
//   edgeattn::data::Dataset ds = edgeattn::data::sbm_dataset(cfg);
//   ds.split().train.size();   // 5 * 20
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

struct SbmConfig {
  int64_t num_nodes = 3000;
  int64_t num_classes = 5;
  /// [num_classes] nodes per class, summing to num_nodes; empty: as equal as possible (the first
  /// num_nodes % num_classes classes get one node more).
  std::vector<int64_t> block_sizes = {};
  double expected_in_degree = 8.0;   ///< mean same-class neighbours (equal blocks)
  double expected_out_degree = 2.0;  ///< mean other-class neighbours (equal blocks)
  int64_t feature_dim = 16;          ///< F; 0 for no features
  float signal = 1.f;                ///< scale of the class means
  float noise = 1.f;                 ///< standard deviation of the per-node noise
  int64_t train_per_class = 20;
  int64_t num_val = 500;
  int64_t num_test = 1000;  ///< -1: every node not in train or val
  bool shuffle_nodes = true;
  uint64_t seed = 0;
};

/// The SBM dataset (name "sbm", format "synthetic"). Throws InvalidArgument naming the field when
/// the config is out of range (sizes, degrees giving p > 1, a class smaller than
/// train_per_class, or more split nodes than there are).
Dataset sbm_dataset(const SbmConfig& config);

}  // namespace edgeattn::data
