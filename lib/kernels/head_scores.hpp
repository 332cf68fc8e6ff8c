// Internal: the row loops of GAT's per-node score terms, shared by autograd::head_scores,
// autograd::gat_attention (which recomputes them in its backward and must get the same bits) and
// the attention dispatch's additive score taken from the value (AttentionInputs::att_dst/att_src).
//
//   s[i, k] = <h[i, k, :], a[k, :]>        h [rows, heads, d], a [heads, d] -> s [rows, heads]
//   dh[i, k, :] += ds[i, k] a[k, :]        (the backward's h term)
#pragma once

#include <cstdint>

#include "kernels/vector_math.hpp"

namespace edgeattn::kernels {

/// One head's term <h, a> over d features, summed in index order (the scalar loop below, and the
/// one-head kernels that compute a source's term from its gathered value row: the same bits).
[[gnu::always_inline]] inline float head_score(const float* __restrict h, const float* __restrict a,
                                               int64_t d) {
  float acc = 0.f;
  for (int64_t c = 0; c < d; ++c) acc += h[c] * a[c];
  return acc;
}

/// Each head's d products are summed in index order. GAT's 8 heads x 8 on AVX with FMA take a
/// row's heads as the 8 lanes of one register (the row transposed in registers, a transposed once
/// per call) and sum with one fused multiply-add a term, s = fma(h_7, a_7, ... fma(h_0, a_0, 0)):
/// eight FMAs a row instead of eight dependent chains of eight (2x faster over 1M rows), and the
/// bits of the scalar loop as optimised builds contract it. Every other shape (and target) runs
/// that scalar loop, its contraction into FMAs left to the compiler.
inline void head_scores_rows(int64_t rows, int64_t heads, int64_t d, const float* __restrict h,
                             const float* __restrict a, float* __restrict s) {
#if defined(__AVX__) && defined(__FMA__)
  if (heads == 8 && d == 8) {
    __m256 r[8], at[8];
    for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(a + 8 * k);
    transpose_8x8_registers(r, at);  // at[c] = a[:, c], the heads in lanes
    for (int64_t i = 0; i < rows; ++i) {
      __m256 ht[8];
      for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(h + i * 64 + 8 * k);
      transpose_8x8_registers(r, ht);    // ht[c] = h[i, :, c]
      __m256 acc = _mm256_setzero_ps();  // the scalar loop's acc = 0: -0 products sum to +0
      for (int c = 0; c < 8; ++c) acc = _mm256_fmadd_ps(ht[c], at[c], acc);
      _mm256_storeu_ps(s + i * 8, acc);
    }
    return;
  }
#endif
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < heads; ++k) s[i * heads + k] = head_score(h + (i * heads + k) * d, a + k * d, d);
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
