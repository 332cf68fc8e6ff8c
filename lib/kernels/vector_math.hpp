// Branch-free float exp and tanh that GCC and Clang vectorise inside loops over heads and
// features (no -ffast-math needed). exp: Cephes' expf polynomial after Cody-Waite range
// reduction; max relative error ~1e-7 on [-87, 88]; exactly 0 below -87.3, so exp(-inf) = 0.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "core/prefetch.hpp"

namespace edgeattn::kernels {

inline float fast_exp(float x) {
  constexpr float kLo = -87.3365447505531f, kHi = 88.0f;
  const float xc = std::clamp(x, kLo, kHi);
  // Round x*log2(e) to nearest with the 1.5*2^23 trick: the integer lands in t's low mantissa bits.
  const float t = xc * 1.44269504088896341f + 12582912.0f;
  const float n = t - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((std::bit_cast<int32_t>(t) - 0x4B400000 + 127) << 23);
  return x < kLo ? 0.f : p * scale;
}

/// tanh(x) = 1 - 2 / (exp(2x) + 1); absolute error ~1e-7.
inline float fast_tanh(float x) { return 1.f - 2.f / (fast_exp(2.f * x) + 1.f); }

// Both arms are computed before the select, so that loops over heads if-convert and vectorise:
// with `x > 0 ? x : slope * x`, GCC saw a conditional read of `slope` (a struct member in the
// score structs) and left the loops scalar, with a hard-to-predict branch per head.
inline float leaky_relu(float x, float slope) {
  const float negative = slope * x;
  return x > 0.f ? x : negative;
}
/// Derivative of LeakyReLU; at 0 the left slope (matches the reference).
inline float leaky_relu_grad(float x, float slope) {
  const float negative = slope;
  return x > 0.f ? 1.f : negative;
}

/// ELU: x for x > 0, alpha (e^x - 1) otherwise, with fast_exp (abs. error ~1e-7 on (-1, 0]; ELU's
/// negative branch needs no more, and libm's expm1f is a scalar call per element). exp of
/// min(x, 0), and both arms computed before the select, so element loops vectorise.
inline float elu(float x, float alpha) {
  const float negative = alpha * (fast_exp(std::min(x, 0.f)) - 1.f);
  return x > 0.f ? x : negative;
}
/// Derivative of ELU from its output y = elu(x, alpha): 1 where y > 0 (exactly where x > 0, as
/// alpha > 0), else alpha e^x = y + alpha.
inline float elu_grad_from_output(float y, float alpha) { return y > 0.f ? 1.f : y + alpha; }

}  // namespace edgeattn::kernels

namespace edgeattn::kernels {

// Reductions with a fixed association order over 8 independent lanes: GCC vectorises them without
// -ffast-math (which it needs to reassociate a plain `t += a[i] * b[i]`), and the fixed order keeps
// results independent of anything but the data.
inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float tail = 0.f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

inline float sum(const float* a, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k];
  float tail = 0.f;
  for (; i < n; ++i) tail += a[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

/// max(init, a[0..n)).
inline float max_of(const float* a, int64_t n, float init) {
  float acc[8] = {init, init, init, init, init, init, init, init};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] = acc[k] > a[i + k] ? acc[k] : a[i + k];
  for (; i < n; ++i) acc[0] = acc[0] > a[i] ? acc[0] : a[i];
  for (int k = 1; k < 8; ++k) acc[0] = acc[0] > acc[k] ? acc[0] : acc[k];
  return acc[0];
}

}  // namespace edgeattn::kernels

namespace edgeattn::kernels {

/// Per-edge state arrays are padded to a multiple of this many heads, so that the per-head
/// updates below run on whole 8-lane vectors with no remainder loop.
inline constexpr int64_t kHeadLanes = 8;
inline int64_t padded_heads(int64_t heads) { return (heads + kHeadLanes - 1) / kHeadLanes * kHeadLanes; }

/// One edge's step of the online softmax for all heads (Milakov & Gimelshein 2018):
///   m' = max(m, s);  c = exp(m - m');  w = exp(s - m');  l' = l c + w.
/// Arrays hold padded_heads(heads) entries.
inline void online_softmax_step(int64_t heads_padded, const float* __restrict s, float* __restrict m,
                                float* __restrict l, float* __restrict c, float* __restrict w) {
  for (int64_t h0 = 0; h0 < heads_padded; h0 += kHeadLanes)
#pragma omp simd
    for (int64_t k = 0; k < kHeadLanes; ++k) {
      const int64_t h = h0 + k;
      const float mn = m[h] > s[h] ? m[h] : s[h];
      c[h] = fast_exp(m[h] - mn);
      w[h] = fast_exp(s[h] - mn);
      l[h] = l[h] * c[h] + w[h];
      m[h] = mn;
    }
}

/// acc[h, :] = acc[h, :] * c[h] + w[h] * v[h, :] for every head (acc, v: [heads, dv]).
inline void rescale_accumulate(int64_t heads, int64_t dv, float* __restrict acc, const float* __restrict c,
                               const float* __restrict w, const float* __restrict v) {
  for (int64_t h = 0; h < heads; ++h)
#pragma omp simd
    for (int64_t d = 0; d < dv; ++d) acc[h * dv + d] = acc[h * dv + d] * c[h] + w[h] * v[h * dv + d];
}

/// acc[h, :] += w[h] * v[h, :] for every head.
inline void accumulate(int64_t heads, int64_t dv, float* __restrict acc, const float* __restrict w,
                       const float* __restrict v) {
  for (int64_t h = 0; h < heads; ++h)
#pragma omp simd
    for (int64_t d = 0; d < dv; ++d) acc[h * dv + d] += w[h] * v[h * dv + d];
}

}  // namespace edgeattn::kernels

namespace edgeattn::kernels {

/// Asks for the cache lines of row [p, p + n) ahead of use (random gathers over explicit graphs).
/// Into L2 (locality 1), not L1: a gathered row is 4+ lines and several edges are in flight, which
/// would exhaust L1's miss buffers; measured ~20% faster on the 10M-edge GAT forward.
/// (detail::prefetch_read keeps the prefetches from being optimised away: lib/core/prefetch.hpp.)
inline void prefetch_row(const float* p, int64_t n) {
  for (int64_t x = 0; x < n; x += 16) detail::prefetch_read<1>(p + x);
}

/// How many edges ahead the per-edge kernels prefetch the source rows of explicit graphs.
inline constexpr int64_t kPrefetchEdges = 6;

}  // namespace edgeattn::kernels
