#include "edgeattn/nn/positional_encoding.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"

// LAPACK from the linked OpenBLAS (LP64: 32-bit integers; gfortran passes string lengths last).
extern "C" void ssyevr_(const char* jobz, const char* range, const char* uplo, const int* n, float* a,
                        const int* lda, const float* vl, const float* vu, const int* il, const int* iu,
                        const float* abstol, int* m, float* w, float* z, const int* ldz, int* isuppz,
                        float* work, const int* lwork, int* iwork, const int* liwork, int* info,
                        size_t jobz_len, size_t range_len, size_t uplo_len);

namespace edgeattn::nn {

Tensor sinusoidal_encoding(int64_t positions, int64_t dim, float base) {
  if (positions < 0 || dim < 1 || !(base > 1.f))
    raise<InvalidArgument>("sinusoidal_encoding: positions=", positions, ", dim=", dim, ", base=", base,
                           ", expected positions >= 0, dim >= 1, base > 1");
  Tensor pe({positions, dim});
  for (int64_t i = 0; 2 * i < dim; ++i) {
    const double freq =
        std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    for (int64_t pos = 0; pos < positions; ++pos) {
      const double angle = static_cast<double>(pos) * freq;
      pe(pos, 2 * i) = static_cast<float>(std::sin(angle));
      if (2 * i + 1 < dim) pe(pos, 2 * i + 1) = static_cast<float>(std::cos(angle));
    }
  }
  return pe;
}

Tensor random_walk_encoding(const Graph& graph, int64_t k) {
  if (graph.num_dst() != graph.num_src())
    raise<InvalidArgument>("random_walk_encoding: graph has num_dst=", graph.num_dst(),
                           ", num_src=", graph.num_src(), ", expected a square graph");
  if (k < 1) raise<InvalidArgument>("random_walk_encoding: k is ", k, ", expected >= 1");
  const int64_t n = graph.num_dst();
  Tensor pe({n, k});
  float* out = pe.data();
  // Each node's walk is independent and serial: the result does not depend on the split.
  parallel_for(0, n, 16, [&](int64_t b, int64_t e) {
    std::vector<double> cur(static_cast<size_t>(n), 0.0), next(static_cast<size_t>(n), 0.0);
    std::vector<int32_t> active, next_active;
    std::vector<uint8_t> in_next(static_cast<size_t>(n), 0);
    for (int64_t start = b; start < e; ++start) {
      active.assign(1, static_cast<int32_t>(start));
      cur[static_cast<size_t>(start)] = 1.0;
      for (int64_t t = 0; t < k; ++t) {
        next_active.clear();
        for (int32_t i : active) {
          const double mass = cur[static_cast<size_t>(i)];
          cur[static_cast<size_t>(i)] = 0.0;
          const auto row = graph.row(i);
          if (row.empty() || mass == 0.0) continue;
          const double share = mass / static_cast<double>(row.size());
          for (int32_t j : row) {
            if (!in_next[static_cast<size_t>(j)]) {
              in_next[static_cast<size_t>(j)] = 1;
              next_active.push_back(j);
            }
            next[static_cast<size_t>(j)] += share;
          }
        }
        out[start * k + t] = static_cast<float>(next[static_cast<size_t>(start)]);
        // next becomes cur; cur is all zeros again (its active entries were cleared above).
        for (int32_t j : next_active) in_next[static_cast<size_t>(j)] = 0;
        std::swap(cur, next);
        std::swap(active, next_active);
      }
      for (int32_t i : active) cur[static_cast<size_t>(i)] = 0.0;
    }
  });
  return pe;
}

Tensor laplacian_encoding(const Graph& graph, int64_t k, Tensor* eigenvalues) {
  const int64_t n = graph.num_dst();
  if (graph.num_src() != n)
    raise<InvalidArgument>("laplacian_encoding: graph has num_dst=", n, ", num_src=", graph.num_src(),
                           ", expected a square graph");
  if (n > kMaxLaplacianNodes)
    raise<InvalidArgument>(
        "laplacian_encoding: graph has ", n, " nodes, above the limit of ", kMaxLaplacianNodes,
        " (dense eigendecomposition: O(N^2) memory, O(N^3) time); use random_walk_encoding");
  if (k < 1 || k > n - 1)
    raise<InvalidArgument>("laplacian_encoding: k is ", k, ", expected in [1, num_nodes - 1 = ", n - 1, "]");
  // Symmetrised binary adjacency without self-loops, then L = I - D^-1/2 A D^-1/2.
  std::vector<float> a(static_cast<size_t>(n * n), 0.f);
  for (int64_t i = 0; i < n; ++i)
    for (int32_t j : graph.row(i))
      if (j != i) a[static_cast<size_t>(i * n + j)] = a[static_cast<size_t>(j * n + i)] = 1.f;
  std::vector<double> inv_sqrt(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double deg = 0.0;
    for (int64_t j = 0; j < n; ++j) deg += a[static_cast<size_t>(i * n + j)];
    inv_sqrt[static_cast<size_t>(i)] = deg > 0.0 ? 1.0 / std::sqrt(deg) : 0.0;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float& v = a[static_cast<size_t>(i * n + j)];
      v = static_cast<float>((i == j ? 1.0 : 0.0) -
                             v * inv_sqrt[static_cast<size_t>(i)] * inv_sqrt[static_cast<size_t>(j)]);
    }
  const int ni = static_cast<int>(n), il = 2, iu = static_cast<int>(k + 1);
  const float zero = 0.f, abstol = 0.f;
  int m = 0, info = 0, lwork = -1, liwork = -1, iwork_query = 0;
  float work_query = 0.f;
  std::vector<float> w(static_cast<size_t>(n)), z(static_cast<size_t>(n * k));
  std::vector<int> isuppz(static_cast<size_t>(2 * k));
  ssyevr_("V", "I", "U", &ni, a.data(), &ni, &zero, &zero, &il, &iu, &abstol, &m, w.data(), z.data(), &ni,
          isuppz.data(), &work_query, &lwork, &iwork_query, &liwork, &info, 1, 1, 1);
  if (info != 0) raise<InvalidArgument>("laplacian_encoding: ssyevr workspace query failed, info=", info);
  lwork = static_cast<int>(work_query);
  liwork = iwork_query;
  std::vector<float> work(static_cast<size_t>(std::max(lwork, 1)));
  std::vector<int> iwork(static_cast<size_t>(std::max(liwork, 1)));
  ssyevr_("V", "I", "U", &ni, a.data(), &ni, &zero, &zero, &il, &iu, &abstol, &m, w.data(), z.data(), &ni,
          isuppz.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1, 1);
  if (info != 0 || m != k)
    raise<InvalidArgument>("laplacian_encoding: ssyevr failed (info=", info, ", found ", m, " of ", k,
                           " eigenvectors)");
  Tensor pe({n, k});
  for (int64_t c = 0; c < k; ++c)  // z is column-major [n, k]
    for (int64_t i = 0; i < n; ++i) pe(i, c) = z[static_cast<size_t>(c * n + i)];
  if (eigenvalues) {
    *eigenvalues = Tensor({k});
    for (int64_t c = 0; c < k; ++c) eigenvalues->data()[c] = w[static_cast<size_t>(c)];
  }
  return pe;
}

Tensor laplacian_encoding_per_graph(const Graph& graph, std::span<const int64_t> graph_ptr, int64_t k) {
  const int64_t n = graph.num_dst();
  if (graph.num_src() != n)
    raise<InvalidArgument>("laplacian_encoding_per_graph: graph has num_dst=", n,
                           ", num_src=", graph.num_src(), ", expected a square graph");
  if (k < 1) raise<InvalidArgument>("laplacian_encoding_per_graph: k is ", k, ", expected >= 1");
  if (graph_ptr.size() < 2 || graph_ptr.front() != 0 || graph_ptr.back() != n)
    raise<InvalidArgument>("laplacian_encoding_per_graph: graph_ptr must run from 0 to num_nodes = ", n,
                           " in at least 2 entries");
  Tensor pe({n, k}, 0.f);
  const auto row_ptr = graph.row_ptr();
  const auto col_idx = graph.col_idx();
  for (size_t g = 0; g + 1 < graph_ptr.size(); ++g) {
    const int64_t a = graph_ptr[g], b = graph_ptr[g + 1];
    if (b < a)
      raise<InvalidArgument>("laplacian_encoding_per_graph: graph_ptr[", g + 1, "] = ", b,
                             " is below graph_ptr[", g, "] = ", a, ", expected non-decreasing");
    const int64_t size = b - a;
    if (size < 2) continue;  // no eigenvector past the first: zeros
    if (size > kMaxLaplacianNodes)
      raise<InvalidArgument>("laplacian_encoding_per_graph: graph ", g, " has ", size,
                             " nodes, above the limit of ", kMaxLaplacianNodes,
                             " (dense eigendecomposition); use random_walk_encoding");
    // The block's rows, renumbered from 0; an edge leaving the block is an input error.
    std::vector<int64_t> sub_ptr(static_cast<size_t>(size + 1), 0);
    std::vector<int32_t> sub_col;
    sub_col.reserve(static_cast<size_t>(row_ptr[static_cast<size_t>(b)] - row_ptr[static_cast<size_t>(a)]));
    for (int64_t i = a; i < b; ++i) {
      for (int64_t e = row_ptr[static_cast<size_t>(i)]; e < row_ptr[static_cast<size_t>(i) + 1]; ++e) {
        const int32_t j = col_idx[static_cast<size_t>(e)];
        if (j < a || j >= b)
          raise<InvalidArgument>("laplacian_encoding_per_graph: edge ", j, " -> ", i, " joins graph ", g,
                                 " (nodes ", a, "..", b - 1, ") to another; expected a block-diagonal graph");
        sub_col.push_back(static_cast<int32_t>(j - a));
      }
      sub_ptr[static_cast<size_t>(i - a + 1)] = static_cast<int64_t>(sub_col.size());
    }
    const Graph sub = Graph::from_csr(size, size, std::move(sub_ptr), std::move(sub_col));
    const int64_t cols = std::min(k, size - 1);  // a graph of `size` nodes has size - 1 of them
    const Tensor block = laplacian_encoding(sub, cols);
    for (int64_t i = 0; i < size; ++i)
      for (int64_t c = 0; c < cols; ++c) pe(a + i, c) = block(i, c);
  }
  return pe;
}

Tensor random_sign_flip(const Tensor& pe, uint64_t seed) {
  if (pe.rank() != 2)
    raise<ShapeError>("random_sign_flip: pe has shape ", pe.shape().str(), ", expected [N, k]");
  Tensor out(pe);
  const int64_t n = pe.dim(0), k = pe.dim(1);
  for (int64_t c = 0; c < k; ++c) {
    if (philox4x32(seed, {static_cast<uint32_t>(c), 0x7369676eu, 0u, 0u})[0] & 1u) continue;  // "sign"
    for (int64_t i = 0; i < n; ++i) out(i, c) = -out(i, c);
  }
  return out;
}

Tensor append_columns(const Tensor& x, const Tensor& extra) {
  if (x.rank() != 2 || extra.rank() != 2 || extra.dim(0) != x.dim(0))
    raise<ShapeError>("append_columns: x has shape ", x.shape().str(), " and extra ", extra.shape().str(),
                      ", expected [N, a] and [N, b]");
  const int64_t n = x.dim(0), a = x.dim(1), b = extra.dim(1);
  Tensor out({n, a + b});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < a; ++j) out(i, j) = x(i, j);
    for (int64_t j = 0; j < b; ++j) out(i, a + j) = extra(i, j);
  }
  return out;
}

CsrMatrix append_columns(const CsrMatrix& x, const Tensor& extra) {
  if (extra.rank() != 2 || extra.dim(0) != x.rows())
    raise<ShapeError>("append_columns: x (sparse) has ", x.rows(), " rows and extra has shape ",
                      extra.shape().str(), ", expected [", x.rows(), ", b]");
  const int64_t n = x.rows(), a = x.cols(), b = extra.dim(1);
  std::vector<int64_t> indptr(static_cast<size_t>(n + 1), 0);
  std::vector<int32_t> indices;
  std::vector<float> values;
  indices.reserve(static_cast<size_t>(x.nnz() + n * b));
  values.reserve(indices.capacity());
  for (int64_t i = 0; i < n; ++i) {
    const auto ri = x.row_indices(i);
    const auto rv = x.row_values(i);
    indices.insert(indices.end(), ri.begin(), ri.end());
    values.insert(values.end(), rv.begin(), rv.end());
    for (int64_t j = 0; j < b; ++j) {
      indices.push_back(static_cast<int32_t>(a + j));
      values.push_back(extra(i, j));
    }
    indptr[static_cast<size_t>(i + 1)] = static_cast<int64_t>(indices.size());
  }
  return CsrMatrix(n, a + b, std::move(indptr), std::move(indices), std::move(values), "append_columns");
}

}  // namespace edgeattn::nn
