// The per-edge kernels' building blocks:
// - branch-free float exp, log and tanh that GCC and Clang vectorise inside loops over heads and
//   features (no -ffast-math needed). exp: Cephes' expf polynomial after Cody-Waite range
//   reduction; max relative error ~1e-7 on [-87, 88]; exactly 0 below -87.3, so exp(-inf) = 0;
// - fixed-order reductions (dot, sum, max);
// - the online softmax with a lazily raised shift, and the value accumulation;
// - software prefetch of gathered rows, and streaming stores for outputs beyond the cache.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "core/prefetch.hpp"
#include "edgeattn/core/rng.hpp"

// Marks a kernel's per-edge lambda (the body passed to a pattern's for_each_in_row or
// for_each_in_col) to be inlined into the pattern's loop. GCC compiled the large ones as
// out-of-line calls made once per edge: each call then reloaded every loop-invariant constant
// (the exp polynomial's coefficients, the slope, the heads' masks: some 20 broadcasts) and
// spilled the caller's live vector registers, which are all caller-saved.
#if defined(__GNUC__)
#define EDGEATTN_EDGE_BODY __attribute__((always_inline))
#else
#define EDGEATTN_EDGE_BODY
#endif

namespace edgeattn::kernels {

inline float fast_exp(float x) {
  constexpr float kLo = -87.3365447505531f, kHi = 88.0f;
  // Below kLo the result is 0: compute exp(0) there, as p * scale near kLo would be a subnormal
  // product (slow on most cores, and vectorised loops meet -inf scores of masked entries).
  const float xc = x < kLo ? 0.f : std::clamp(x, kLo, kHi);
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

/// Natural log of a positive normal float, branch-free (vectorises like fast_exp): Cephes' logf
/// polynomial on the mantissa reduced to [sqrt(1/2), sqrt(2)); max relative error ~1e-7. Not for
/// zero, negative, subnormal, infinite or NaN arguments (callers guard those).
inline float fast_log(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  int32_t e = ((bits >> 23) & 0xff) - 126;  // x = f * 2^e, f in [0.5, 1)
  float f = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);
  const bool small = f < 0.707106781186547524f;  // then use 2f, e - 1
  e -= small ? 1 : 0;
  f = (small ? f + f : f) - 1.0f;
  const float z = f * f;
  float y = 7.0376836292E-2f;
  y = y * f - 1.1514610310E-1f;
  y = y * f + 1.1676998740E-1f;
  y = y * f - 1.2420140846E-1f;
  y = y * f + 1.4249322787E-1f;
  y = y * f - 1.6668057665E-1f;
  y = y * f + 2.0000714765E-1f;
  y = y * f - 2.4999993993E-1f;
  y = y * f + 3.3333331174E-1f;
  y = y * f * z;
  const float fe = static_cast<float>(e);
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  return (f + y) + 0.693359375f * fe;
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
// results independent of anything but the data. dot is always inlined: the attention kernels call
// it per edge and head with a compile-time length (8 or 64), and GCC left it out of line inside
// their large loop bodies (a call per 8-element dot in the backward).
[[gnu::always_inline]] inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float tail = 0.f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

/// out[h] = dot(a + 8 h, b + 8 h, 8) for h < 8: the eight per-head dot products of two rows of
/// 8 heads x 8 floats, bit for bit those of `dot` (the same products, summed in its order:
/// ((p0 + p4) + (p1 + p5)) + ((p2 + p6) + (p3 + p7)), then + 0), as one transposed reduction on
/// AVX2 instead of eight horizontal sums.
[[gnu::always_inline]] inline void dot_8x8(const float* a, const float* b, float* out) {
#if defined(__AVX2__)
  __m256 q[4];  // q[k]: heads 2k and 2k+1, lanes (p_l + p_{l+4}) for l < 4, one head per half
  for (int k = 0; k < 4; ++k) {
    const __m256 p0 = _mm256_mul_ps(_mm256_loadu_ps(a + 16 * k), _mm256_loadu_ps(b + 16 * k));
    const __m256 p1 = _mm256_mul_ps(_mm256_loadu_ps(a + 16 * k + 8), _mm256_loadu_ps(b + 16 * k + 8));
    q[k] = _mm256_add_ps(_mm256_permute2f128_ps(p0, p1, 0x20), _mm256_permute2f128_ps(p0, p1, 0x31));
  }
  // hadd pairs within each 128-bit half: [d0 d2 d4 d6 | d1 d3 d5 d7] after two rounds.
  const __m256 r = _mm256_hadd_ps(_mm256_hadd_ps(q[0], q[1]), _mm256_hadd_ps(q[2], q[3]));
  const __m256 d = _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_ps(out, _mm256_add_ps(d, _mm256_setzero_ps()));  // dot's "+ tail": -0 -> +0
#else
  for (int h = 0; h < 8; ++h) out[h] = dot(a + 8 * h, b + 8 * h, 8);
#endif
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

/// The online softmax's shift moves only when a score exceeds it by more than this, so weights
/// exp(s - m) stay below e^8 (no overflow for any degree) and most edges skip the rescale.
inline constexpr float kRescaleMargin = 8.f;

/// True when some head's score exceeds its shift by more than kRescaleMargin (always for the
/// first finite score of a row, whose shift starts at -FLT_MAX). Arrays hold padded_heads entries.
inline bool exceeds_shift(int64_t heads_padded, const float* __restrict s, const float* __restrict m) {
  int any = 0;
  for (int64_t h = 0; h < heads_padded; ++h) any |= s[h] > m[h] + kRescaleMargin ? 1 : 0;
  return any != 0;
}

/// Moves the shift to m' = max(m, s) and rescales the row's sums to it: c = exp(m - m'),
/// l *= c, acc[h, :] *= c[h].
inline void raise_shift(int64_t heads_padded, int64_t heads, int64_t dv, const float* __restrict s,
                        float* __restrict m, float* __restrict l, float* __restrict c,
                        float* __restrict acc) {
#pragma omp simd
  for (int64_t h = 0; h < heads_padded; ++h) {
    const float mn = m[h] > s[h] ? m[h] : s[h];
    c[h] = fast_exp(m[h] - mn);
    l[h] *= c[h];
    m[h] = mn;
  }
  for (int64_t h = 0; h < heads; ++h)
#pragma omp simd
    for (int64_t d = 0; d < dv; ++d) acc[h * dv + d] *= c[h];
}

/// w = exp(s - m), l += w, for every (padded) head.
inline void exp_shifted_sum(int64_t heads_padded, const float* __restrict s, const float* __restrict m,
                            float* __restrict w, float* __restrict l) {
#pragma omp simd
  for (int64_t h = 0; h < heads_padded; ++h) {
    w[h] = fast_exp(s[h] - m[h]);
    l[h] += w[h];
  }
}

/// Eight floats in one 256-bit register (a GCC/Clang vector extension): written out explicitly
/// so that the compiler keeps a tile of sums in registers (spmm.cpp, accumulate_8x8_rows).
using Lanes8 = float __attribute__((vector_size(32)));

inline Lanes8 load_lanes8(const float* p) {
  Lanes8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_lanes8(float* p, Lanes8 v) { std::memcpy(p, &v, sizeof v); }

/// dropout_keep_heads_row (core/rng.hpp) for 8 heads, as one vector: factor[h] = keep_scale if
/// head h's 16 draw bits are >= threshold, else +0; the same factors, bit for bit. The scalar
/// function writes its two 4-head halves with two 16-byte stores, and the 8 x 8 kernels read the
/// factors back with one 32-byte load, which the core cannot forward from two stores: on Zen 4
/// that stall was the largest single cost of the fused forward's block loop (perf annotate: about
/// a third of its samples). Stored with one 32-byte store (store_lanes8), a later load forwards.
inline Lanes8 dropout_keep_lanes8(uint64_t row, int64_t src, uint32_t threshold, float keep_scale) {
  using Int8 = int32_t __attribute__((vector_size(32)));
  const uint64_t bits[2] = {edge_row_bits64(row, src, 0), edge_row_bits64(row, src, 1)};
  Int8 draws;
  if constexpr (std::endian::native == std::endian::little) {
    using Draws16 = uint16_t __attribute__((vector_size(16)));
    Draws16 d16;  // lane h: bits >> 16 (h mod 4) of quad h / 4, as in dropout_keep_heads_row
    std::memcpy(&d16, bits, sizeof d16);
    draws = __builtin_convertvector(d16, Int8);
  } else {
    for (int h = 0; h < 8; ++h) draws[h] = static_cast<int32_t>((bits[h >> 2] >> (16 * (h & 3))) & 0xffffu);
  }
  const Int8 keep = draws >= static_cast<int32_t>(threshold);  // all ones or zero; threshold <= 65536
  return std::bit_cast<Lanes8>(std::bit_cast<Int8>(Lanes8{} + keep_scale) & keep);
}

/// factor[heads] = dropout_keep_heads_row's factors. With kHeads == 8 (the heads known at compile
/// time) one 32-byte store of dropout_keep_lanes8, which the 8-head kernels' vector loads forward.
template <int kHeads>
inline void store_keep_factors(uint64_t row, int64_t src, int64_t heads, uint32_t threshold, float keep_scale,
                               float* factor) {
  if constexpr (kHeads == 8)
    store_lanes8(factor, dropout_keep_lanes8(row, src, threshold, keep_scale));
  else
    dropout_keep_heads_row(row, src, heads, threshold, keep_scale, factor);
}

/// acc [8 heads x 8] += sum over k < n, in order, of w_k[h] * row_k[h, :], with w_k = weight(k)
/// (8 floats) and row_k = row(k) (64 floats): the 8 x 8 shape's weighted row sums over a run of
/// edges, with the accumulator held in eight registers across the run. Edge by edge through
/// memory, each edge's sums waited on the previous edge's stores of acc (a store-to-load
/// forwarding chain of about 10 cycles an edge). The products and sums are accumulate's, in the
/// same order: the same bits.
template <class Weight, class Row>
[[gnu::always_inline]] inline void accumulate_8x8_rows(float* acc, int64_t n, Weight&& weight, Row&& row) {
  Lanes8 r[8];
  for (int h = 0; h < 8; ++h) r[h] = load_lanes8(acc + 8 * h);
  for (int64_t k = 0; k < n; ++k) {
    const float* wk = weight(k);
    const float* vk = row(k);
    for (int h = 0; h < 8; ++h) r[h] += wk[h] * load_lanes8(vk + 8 * h);
  }
  for (int h = 0; h < 8; ++h) store_lanes8(acc + 8 * h, r[h]);
}

#if defined(__AVX__)
/// The lanes d < dv of a register (dv <= 8): the mask of a short row's masked loads and stores.
[[gnu::always_inline]] inline __m256i short_row_mask(int64_t dv) {
  return _mm256_castps_si256(_mm256_cmp_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7),
                                           _mm256_set1_ps(static_cast<float>(dv)), _CMP_LT_OQ));
}

/// r + sum over k < n, in order, of weight(k) * row(k)[:dv] in the lanes d < dv (the others:
/// r's, plus weight(k) * 0), r zero unless given: accumulate_short_rows' sums, for callers that
/// keep the result in a register.
template <class Weight, class Row>
[[gnu::always_inline]] inline __m256 short_row_sum(int64_t dv, int64_t n, Weight&& weight, Row&& row,
                                                   __m256 r = _mm256_setzero_ps()) {
  const __m256i mask = short_row_mask(dv);
  for (int64_t k = 0; k < n; ++k) {
    const __m256 w = _mm256_set1_ps(weight(k)), x = _mm256_maskload_ps(row(k), mask);
#if defined(__FMA__)
    r = _mm256_fmadd_ps(w, x, r);
#else
    r = _mm256_add_ps(r, _mm256_mul_ps(w, x));
#endif
  }
  return r;
}

/// Two such sums over the same rows, each row loaded once: r and u (both from zero) get
/// short_row_sum's bits with weight and with weight2.
template <class Weight, class Weight2, class Row>
[[gnu::always_inline]] inline void short_row_sums(int64_t dv, int64_t n, Weight&& weight, Weight2&& weight2,
                                                  Row&& row, __m256& r, __m256& u) {
  const __m256i mask = short_row_mask(dv);
  r = _mm256_setzero_ps();
  u = _mm256_setzero_ps();
  for (int64_t k = 0; k < n; ++k) {
    const __m256 x = _mm256_maskload_ps(row(k), mask);
    const __m256 w = _mm256_set1_ps(weight(k)), w2 = _mm256_set1_ps(weight2(k));
#if defined(__FMA__)
    r = _mm256_fmadd_ps(w, x, r);
    u = _mm256_fmadd_ps(w2, x, u);
#else
    r = _mm256_add_ps(r, _mm256_mul_ps(w, x));
    u = _mm256_add_ps(u, _mm256_mul_ps(w2, x));
#endif
  }
}
#endif

/// acc [dv] += sum over k < n, in order, of weight(k) * row(k)[:dv], for one head of at most 8
/// features: the single-head shape's weighted row sums over a run of edges, with the accumulator
/// in one register across the run (GAT's output layer: dv = number of classes, 7 on Cora). A row
/// is read with a masked load, so nothing past its dv floats is touched. Each term is one FMA
/// where the target has FMA (std::fma's rounding), else a product and a sum, whatever the compiler
/// contracts: optimised builds give accumulate's bits (GCC contracts its loop), sanitizer builds'
/// -O1 kernels do not contract. Passes whose results must agree bit for bit (the single-head
/// source pass from edge records and recomputing) therefore both sum with this function. Without
/// AVX, the plain loop.
template <class Weight, class Row>
[[gnu::always_inline]] inline void accumulate_short_rows(float* acc, int64_t dv, int64_t n, Weight&& weight,
                                                         Row&& row) {
#if defined(__AVX__)
  const __m256i mask = short_row_mask(dv);
  const __m256 r = short_row_sum(dv, n, weight, row, _mm256_maskload_ps(acc, mask));
  _mm256_maskstore_ps(acc, mask, r);
#else
  for (int64_t k = 0; k < n; ++k) {
    const float w = weight(k);
    const float* vk = row(k);
    for (int64_t d = 0; d < dv; ++d) acc[d] += w * vk[d];
  }
#endif
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

#if defined(__AVX__)
/// t[c] = column c of the 8 x 8 block whose rows are r[0..7] (unpack, shuffle and lane swaps;
/// r is overwritten).
[[gnu::always_inline]] inline void transpose_8x8_registers(__m256* r, __m256* t) {
  for (int k = 0; k < 4; ++k) {  // rows 2k, 2k+1 interleaved
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {  // four rows' columns together, within each 128-bit half
    r[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
    r[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
    r[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    r[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {  // the halves of rows 0-3 and 4-7: columns k and k + 4
    t[k] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x20);
    t[k + 4] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x31);
  }
}
#endif

/// d[c * ld + r] (+)= s[r * ls + c] for r, c < 8: one 8 x 8 block of a transpose (in registers
/// on AVX; a scalar loop elsewhere). Each element is moved (or added to its target) once, so the
/// results are those of the scalar loop, bit for bit.
template <bool kAccumulate>
[[gnu::always_inline]] inline void transpose_8x8(const float* s, int64_t ls, float* d, int64_t ld) {
#if defined(__AVX__)
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * ls);
  transpose_8x8_registers(r, t);
  for (int k = 0; k < 8; ++k) {
    float* out = d + k * ld;
    _mm256_storeu_ps(out, kAccumulate ? _mm256_add_ps(_mm256_loadu_ps(out), t[k]) : t[k]);
  }
#else
  for (int c = 0; c < 8; ++c)
    for (int r = 0; r < 8; ++r) {
      if constexpr (kAccumulate)
        d[c * ld + r] += s[r * ls + c];
      else
        d[c * ld + r] = s[r * ls + c];
    }
#endif
}

/// Asks for the cache lines of row [p, p + n) ahead of use (random gathers over explicit graphs).
/// Into L2 (locality 1), not L1: a gathered row is 4+ lines and several edges are in flight, which
/// would exhaust L1's miss buffers; measured ~20% faster on the 10M-edge GAT forward.
/// (detail::prefetch_read keeps the prefetches from being optimised away: lib/core/prefetch.hpp.)
inline void prefetch_row(const float* p, int64_t n) {
  for (int64_t x = 0; x < n; x += 16) detail::prefetch_read<1>(p + x);
}

/// The per-edge kernels size their prefetch distance in cache lines rather than edges: about
/// this many lines in flight per thread, between kPrefetchEdgesMin and kPrefetchEdgesMax edges
/// ahead. Measured on the 10M-edge GAT forward (5 lines per edge): 6 edges ahead 210 ms, 12-24
/// ahead 189-190 ms.
inline constexpr int64_t kPrefetchLines = 80;
inline constexpr int64_t kPrefetchEdgesMin = 2;
inline constexpr int64_t kPrefetchEdgesMax = 16;

/// Gathered arrays (a kernel's source rows: values and score terms) up to this size stay in a
/// core's cache (half of a 512 KiB L2): their rows are not prefetched.
inline constexpr int64_t kGatherCachedBytes = int64_t{256} << 10;

/// Bytes of `rows` gathered rows of `floats_per_row` floats.
inline int64_t gathered_bytes(int64_t rows, int64_t floats_per_row) { return rows * floats_per_row * 4; }

/// Cache lines of a gathered row of `floats` floats (at least one).
inline int64_t row_lines(int64_t floats) { return std::max<int64_t>(1, (floats * 4 + 63) / 64); }

/// Edges ahead to prefetch when each edge gathers `lines_per_edge` cache lines.
inline int64_t prefetch_distance(int64_t lines_per_edge) {
  return std::clamp<int64_t>(kPrefetchLines / std::max<int64_t>(1, lines_per_edge), kPrefetchEdgesMin,
                             kPrefetchEdgesMax);
}

}  // namespace edgeattn::kernels

namespace edgeattn::kernels {

/// Outputs at least this large are written with streaming (non-temporal) stores: they cannot
/// stay in a last-level cache anyway, and a streaming store skips the read of each line that a
/// normal store makes before overwriting it (the 10M-edge GAT forward writes 256 MB of output).
inline constexpr int64_t kStreamingStoreBytes = int64_t{32} << 20;

/// Streaming stores need 64-byte aligned rows of whole cache lines, and SSE2.
inline bool streaming_stores_apply(const float* out, int64_t rows, int64_t row_floats) {
#if defined(__SSE2__)
  return rows * row_floats * static_cast<int64_t>(sizeof(float)) >= kStreamingStoreBytes &&
         reinterpret_cast<uintptr_t>(out) % 64 == 0 && row_floats % 16 == 0;
#else
  (void)out, (void)rows, (void)row_floats;
  return false;
#endif
}

/// dst[0, n) = src[0, n) with non-temporal stores; dst 64-byte aligned and n a multiple of 16
/// (streaming_stores_apply). Call stream_fence() before another thread reads dst.
inline void stream_row(float* dst, const float* src, int64_t n) {
#if defined(__AVX512F__)
  for (int64_t x = 0; x < n; x += 16) _mm512_stream_ps(dst + x, _mm512_loadu_ps(src + x));
#elif defined(__AVX__)
  for (int64_t x = 0; x < n; x += 8) _mm256_stream_ps(dst + x, _mm256_loadu_ps(src + x));
#elif defined(__SSE2__)
  for (int64_t x = 0; x < n; x += 4) _mm_stream_ps(dst + x, _mm_loadu_ps(src + x));
#else
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
#endif
}

/// dst[0, n) = src[0, n): with streaming stores when `stream` (streaming_stores_apply held for
/// the whole output), else plain ones.
inline void store_row(float* dst, const float* src, int64_t n, bool stream) {
  if (stream)
    stream_row(dst, src, n);
  else
    std::copy_n(src, n, dst);
}

/// Orders this thread's streaming stores before its later stores (and the task's completion).
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace edgeattn::kernels
