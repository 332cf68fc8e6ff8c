// Helpers shared by the nn layer tests: parameter name/shape listings, small prepared graphs and
// sparse features.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/nn/prepare_graph.hpp"
#include "support/test_graphs.hpp"

namespace edgeattn::testing {

/// name -> shape string, e.g. {"lin.weight", "[6, 5]"}.
inline std::map<std::string, std::string> names_and_shapes(const std::vector<autograd::Parameter*>& ps) {
  std::map<std::string, std::string> out;
  for (auto* p : ps) out[p->name] = p->value.shape().str();
  return out;
}

/// A random square graph (uniform edges, some rows isolated) with one self-loop per node.
inline Graph prepared_random_graph(int64_t n, int64_t edges, uint64_t seed) {
  return nn::prepare_graph(uniform_graph(n, n, edges, seed), true);
}

/// Binary features at about `density`, at least one entry per row.
inline CsrMatrix sparse_features(int64_t n, int64_t f, float density, uint64_t seed) {
  const Tensor u = random_tensor({n, f}, seed, 0.f, 1.f);
  Tensor x({n, f});
  for (int64_t i = 0; i < n; ++i) {
    x(i, i % f) = 1.f;
    for (int64_t j = 0; j < f; ++j)
      if (u(i, j) < density) x(i, j) = 1.f;
  }
  return CsrMatrix::from_dense(x);
}

/// Undirected graph from an edge list (both directions stored).
inline Graph undirected(int64_t n, std::vector<int64_t> src, std::vector<int64_t> dst) {
  return build_graph(n, n, src, dst, {.symmetrize = true});
}

}  // namespace edgeattn::testing
