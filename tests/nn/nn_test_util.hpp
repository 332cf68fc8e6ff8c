// Helpers shared by the nn layer tests: parameter name/shape listings, small prepared graphs,
// sparse features, and the per-edge definitions (in double) the layers are checked against.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/graph/build.hpp"
#include "edgeattn/nn/linear.hpp"
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

/// y = W x (+ b) of a Linear in double: [rows of x, out] row-major.
inline std::vector<double> affine(const nn::Linear& lin, const Tensor& x) {
  const int64_t n = x.dim(0), in = x.dim(1), out = lin.weight.value.dim(0);
  std::vector<double> y(static_cast<size_t>(n * out));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < out; ++k) {
      double s = lin.bias.value.absent() ? 0.0 : double(lin.bias.value.data()[k]);
      for (int64_t q = 0; q < in; ++q) s += double(lin.weight.value(k, q)) * x(i, q);
      y[size_t(i * out + k)] = s;
    }
  return y;
}

/// (W_e x_e)[col] in double: a lin_edge weight [H*C, F] applied to row e of attr [E, F].
inline double edge_projection(const Tensor& we, const Tensor& attr, int64_t e, int64_t col) {
  double t = 0;
  for (int64_t f = 0; f < attr.dim(1); ++f) t += double(we(col, f)) * attr(e, f);
  return t;
}

/// Graph attention written out per edge, in double: out[i, h*C + d] += sum over the in-edges e
/// (j -> i) of softmax_e(score(i, j, e, h)) * value(j, e, h, d), into `out` [N, H*C] (which may
/// hold a skip term already). Rows without in-edges are left as they are.
template <class Score, class Value>
void attend_per_edge(const Graph& g, int64_t heads, int64_t c, Score&& score, Value&& value,
                     std::vector<double>& out) {
  for (int64_t i = 0; i < g.num_dst(); ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t begin = g.row_ptr()[size_t(i)], end = g.row_ptr()[size_t(i) + 1];
      if (begin == end) continue;
      std::vector<double> s;
      for (int64_t e = begin; e < end; ++e) s.push_back(score(i, int64_t{g.col_idx()[size_t(e)]}, e, h));
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double v : s) sum += std::exp(v - m);
      for (int64_t e = begin; e < end; ++e) {
        const int64_t j = g.col_idx()[size_t(e)];
        const double alpha = std::exp(s[size_t(e - begin)] - m) / sum;
        for (int64_t d = 0; d < c; ++d) out[size_t((i * heads + h) * c + d)] += alpha * value(j, e, h, d);
      }
    }
}

}  // namespace edgeattn::testing
