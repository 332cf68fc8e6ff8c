// Internal: the row loops of GAT's per-node score terms, shared by autograd::head_scores,
// autograd::gat_attention (which recomputes them in its backward and must get the same bits) and
// the attention dispatch's additive score taken from the value (AttentionInputs::att_dst/att_src).
//
//   s[i, k] = <h[i, k, :], a[k, :]>        h [rows, heads, d], a [heads, d] -> s [rows, heads]
//   dh[i, k, :] += ds[i, k] a[k, :]        (the backward's h term)
#pragma once

#include <cstdint>

namespace edgeattn::kernels {

/// The d products of a head go through a vectorised multiply, then a sum in index order (the same
/// order as a scalar loop).
inline void head_scores_rows(int64_t rows, int64_t heads, int64_t d, const float* __restrict h,
                             const float* __restrict a, float* __restrict s) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < heads; ++k) {
      const float* hk = h + (i * heads + k) * d;
      const float* ak = a + k * d;
      float acc = 0.f;
      for (int64_t c = 0; c < d; ++c) acc += hk[c] * ak[c];
      s[i * heads + k] = acc;
    }
}

inline void head_scores_backward_rows(int64_t rows, int64_t heads, int64_t d, const float* __restrict g,
                                      const float* __restrict a, float* __restrict dh) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < heads; ++k) {
      const float gk = g[i * heads + k];
      float* dhk = dh + (i * heads + k) * d;
      const float* ak = a + k * d;
#pragma omp simd
      for (int64_t c = 0; c < d; ++c) dhk[c] += gk * ak[c];
    }
}

}  // namespace edgeattn::kernels
