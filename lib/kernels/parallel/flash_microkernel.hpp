// Register-blocked building blocks of the tiled (flash) attention kernels, behind one interface
// with three vector-width policies:
//   Portable  8 lanes as plain arrays (scalar code the compiler may vectorise)  4 x 16 tile
//   Avx2      __m256 with FMA                          (__AVX2__ && __FMA__)    6 x 16 tile
//   Avx512    __m512                                   (__AVX512F__)           12 x 32 tile
// `Best` is the widest compiled in; tests instantiate the others directly.
//
// The one product every attention step reduces to (BLIS's micro-kernel shape, Van Zee and van de
// Geijn 2015): C[MR x NR] (+)= A(MR x k) B(k x NR), held in MR x NR/lanes vector registers, with
//   A(i, kk) = a[i * ars + kk * acs]   broadcast one element at a time (any strides: row-major, or
//                                      the transpose of a row-major tile for P^T dO and dS^T Q)
//   B(kk, :) = b[kk * ldb + 0 .. NR)   one row of NR contiguous floats (a K^T panel or a row-major
//                                      V, K, Q or dO block whose width is padded to NR)
// Products over a whole tile (`gemm_tile`) walk NR-wide column panels and MR-row strips; a strip
// of fewer than MR rows takes the instantiation for its exact height. Every C element is summed in
// the order kk = 0, 1, ..., k-1 whatever the tile position, so results do not depend on tiling
// across tasks.
//
// Row operations of the online softmax (max, exp, sum, scale) run on whole vectors: every row
// width here is a multiple of NR. The vector exp is fast_exp's (vector_math.hpp) Cephes
// polynomial, with FMA contractions (relative error <= ~2e-7 on [-87, 88], exactly 0 below -87.3
// and for -inf).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kernels/vector_math.hpp"

namespace edgeattn::kernels::flash {

/// fast_exp's constants (vector_math.hpp), shared by the vector versions.
struct ExpConstants {
  static constexpr float kLo = -87.3365447505531f, kHi = 88.0f, kLog2e = 1.44269504088896341f;
  static constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: rounds to nearest integer
  static constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  static constexpr float kP0 = 1.9875691500E-4f, kP1 = 1.3981999507E-3f, kP2 = 8.3334519073E-3f,
                         kP3 = 4.1665795894E-2f, kP4 = 1.6666665459E-1f, kP5 = 5.0000001201E-1f;
};

/// 8 lanes as a plain array: the fallback on any target, and the oracle-side twin of the SIMD
/// policies in the tests.
struct Portable {
  static constexpr const char* kName = "portable";
  static constexpr int kLanes = 8;
  static constexpr int kRows = 4;  // MR
  static constexpr int kVecs = 2;  // NR = kVecs * kLanes
  struct V {
    float x[kLanes];
  };
  static V zero() { return set1(0.f); }
  static V set1(float a) {
    V r;
    for (int l = 0; l < kLanes; ++l) r.x[l] = a;
    return r;
  }
  static V load(const float* p) {
    V r;
    for (int l = 0; l < kLanes; ++l) r.x[l] = p[l];
    return r;
  }
  static void store(float* p, V a) {
    for (int l = 0; l < kLanes; ++l) p[l] = a.x[l];
  }
  static V fmadd(V a, V b, V c) {  // a * b + c
    for (int l = 0; l < kLanes; ++l) c.x[l] = a.x[l] * b.x[l] + c.x[l];
    return c;
  }
  static V mul(V a, V b) {
    for (int l = 0; l < kLanes; ++l) a.x[l] *= b.x[l];
    return a;
  }
  static V add(V a, V b) {
    for (int l = 0; l < kLanes; ++l) a.x[l] += b.x[l];
    return a;
  }
  static V sub(V a, V b) {
    for (int l = 0; l < kLanes; ++l) a.x[l] -= b.x[l];
    return a;
  }
  static V max(V a, V b) {
    for (int l = 0; l < kLanes; ++l) a.x[l] = a.x[l] > b.x[l] ? a.x[l] : b.x[l];
    return a;
  }
  /// a where b > 0, else 0 (relu's derivative mask).
  static V where_positive(V a, V b) {
    for (int l = 0; l < kLanes; ++l) a.x[l] = b.x[l] > 0.f ? a.x[l] : 0.f;
    return a;
  }
  static V exp(V a) {
    for (int l = 0; l < kLanes; ++l) a.x[l] = fast_exp(a.x[l]);
    return a;
  }
  static float reduce_max(V a) {
    float m = a.x[0];
    for (int l = 1; l < kLanes; ++l) m = m > a.x[l] ? m : a.x[l];
    return m;
  }
  static float reduce_add(V a) {  // the order of Avx2::reduce_add
    return ((a.x[0] + a.x[4]) + (a.x[2] + a.x[6])) + ((a.x[1] + a.x[5]) + (a.x[3] + a.x[7]));
  }
};

#if defined(__AVX2__) && defined(__FMA__)
struct Avx2 {
  static constexpr const char* kName = "avx2";
  static constexpr int kLanes = 8;
  static constexpr int kRows = 6;  // 12 accumulators + 2 B vectors + 1 broadcast of 16 ymm
  static constexpr int kVecs = 2;
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float a) { return _mm256_set1_ps(a); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V a) { _mm256_storeu_ps(p, a); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V where_positive(V a, V b) { return _mm256_and_ps(a, _mm256_cmp_ps(b, zero(), _CMP_GT_OQ)); }
  static V exp(V x) {
    using C = ExpConstants;
    // Below kLo the result is 0; those lanes compute exp(0) instead, as p * 2^n near kLo would be a
    // subnormal product (a microcode assist per lane: masked scores are -inf).
    const V below = _mm256_cmp_ps(x, set1(C::kLo), _CMP_LT_OQ);
    const V xc = _mm256_andnot_ps(below, _mm256_min_ps(_mm256_max_ps(x, set1(C::kLo)), set1(C::kHi)));
    const V t = _mm256_fmadd_ps(xc, set1(C::kLog2e), set1(C::kMagic));
    const V n = _mm256_sub_ps(t, set1(C::kMagic));
    V r = _mm256_fnmadd_ps(n, set1(C::kLn2Hi), xc);
    r = _mm256_fnmadd_ps(n, set1(C::kLn2Lo), r);
    V p = _mm256_fmadd_ps(set1(C::kP0), r, set1(C::kP1));
    p = _mm256_fmadd_ps(p, r, set1(C::kP2));
    p = _mm256_fmadd_ps(p, r, set1(C::kP3));
    p = _mm256_fmadd_ps(p, r, set1(C::kP4));
    p = _mm256_fmadd_ps(p, r, set1(C::kP5));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, set1(1.f)));
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127 - 0x4B400000)), 23);
    const V y = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    return _mm256_andnot_ps(below, y);
  }
  static float reduce_max(V a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static float reduce_add(V a) {  // ((0+4) + (2+6)) + ((1+5) + (3+7))
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};
#endif

#if defined(__AVX512F__)
struct Avx512 {
  static constexpr const char* kName = "avx512";
  static constexpr int kLanes = 16;
  static constexpr int kRows = 12;  // 24 accumulators + 2 B vectors + 1 broadcast of 32 zmm
  static constexpr int kVecs = 2;
  using V = __m512;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float a) { return _mm512_set1_ps(a); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V a) { _mm512_storeu_ps(p, a); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V where_positive(V a, V b) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(b, zero(), _CMP_GT_OQ), a);
  }
  static V exp(V x) {
    using C = ExpConstants;
    // As Avx2::exp: lanes below kLo compute exp(0), then 0.
    const __mmask16 keep = _mm512_cmp_ps_mask(x, set1(C::kLo), _CMP_NLT_UQ);
    const V xc = _mm512_maskz_mov_ps(keep, _mm512_min_ps(_mm512_max_ps(x, set1(C::kLo)), set1(C::kHi)));
    const V t = _mm512_fmadd_ps(xc, set1(C::kLog2e), set1(C::kMagic));
    const V n = _mm512_sub_ps(t, set1(C::kMagic));
    V r = _mm512_fnmadd_ps(n, set1(C::kLn2Hi), xc);
    r = _mm512_fnmadd_ps(n, set1(C::kLn2Lo), r);
    V p = _mm512_fmadd_ps(set1(C::kP0), r, set1(C::kP1));
    p = _mm512_fmadd_ps(p, r, set1(C::kP2));
    p = _mm512_fmadd_ps(p, r, set1(C::kP3));
    p = _mm512_fmadd_ps(p, r, set1(C::kP4));
    p = _mm512_fmadd_ps(p, r, set1(C::kP5));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, set1(1.f)));
    const __m512i bits =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(127 - 0x4B400000)), 23);
    const V y = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
    return _mm512_maskz_mov_ps(keep, y);
  }
  static float reduce_max(V a) {
    __m256 h = _mm256_max_ps(_mm512_castps512_ps256(a),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static float reduce_add(V a) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};
#endif

#if defined(__AVX512F__)
using Best = Avx512;
#elif defined(__AVX2__) && defined(__FMA__)
using Best = Avx2;
#else
using Best = Portable;
#endif

/// Columns of one register tile (NR): every padded width below is a multiple of it.
template <class P>
inline constexpr int64_t kPanel = int64_t{P::kVecs} * P::kLanes;

/// n rounded up to whole panels of NR columns.
template <class P, int64_t NR = kPanel<P>>
constexpr int64_t round_up_panel(int64_t n) {
  return (n + NR - 1) / NR * NR;
}

/// The register tile of products with a small right operand (a layer's weight,
/// kernels/packed_gemm.cpp) whose width fills 2 * NR-column panels as well as NR-column ones;
/// elsewhere the policy's own tile. On AVX-512, 6 x 64 instead of 12 x 32: the same 24
/// accumulators, and per step of k 6 broadcasts and 4 row loads instead of 12 and 2. Measured on a
/// 2-core Zen 4 (FMA peak 230 GFLOP/s), [1M, 128] x [128, 64] with A in cache: 184 -> 210 GFLOP/s;
/// in a 1M-node GAT epoch the wide products took 13% fewer samples (bench/RESULTS.md). Every C
/// element is the same chain of FMAs either way: the same bits (tests/kernels/packed_gemm_test).
template <class P>
struct WideTile {
  static constexpr bool kEnabled = false;
  static constexpr int kRows = P::kRows, kVecs = P::kVecs;
};

/// The same for a right operand whose width fits a half panel (n <= 16 on AVX-512: an output
/// layer's classes), which the policy's tile pads to a whole one: 12 x 16, half the FMAs of
/// 12 x 32 for the same broadcasts. [1M, 64] x [64, 8], A in cache, 2 threads, 2-core Zen 4:
/// 25 ms in 32-column panels, 11 ms in this tile (15-22 ms through PackedRight, whose 8 columns
/// are written back from a padded block). The same bits again.
template <class P>
struct NarrowTile {
  static constexpr bool kEnabled = false;
  static constexpr int kRows = P::kRows, kVecs = P::kVecs;
};

#if defined(__AVX512F__)
template <>
struct NarrowTile<Avx512> {
  static constexpr bool kEnabled = true;
  static constexpr int kRows = 12, kVecs = 1;  // 12 accumulators + 1 B vector + 1 broadcast
};

template <>
struct WideTile<Avx512> {
  static constexpr bool kEnabled = true;
  static constexpr int kRows = 6, kVecs = 4;  // 24 accumulators + 4 B vectors + 1 broadcast
};
#endif

/// C[MR x NR] = (kAccumulate ? C : 0) + sum_{kk < k} A(i, kk) B(kk, :), see the file comment;
/// NR = NV * lanes (the policy's panel unless a WideTile or NarrowTile asks for another).
template <class P, int MR, bool kAccumulate, int NV = P::kVecs>
inline void micro(int64_t k, const float* __restrict a, int64_t ars, int64_t acs, const float* __restrict b,
                  int64_t ldb, float* __restrict c, int64_t ldc) {
  using V = typename P::V;
  constexpr int L = P::kLanes;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = kAccumulate ? P::load(c + i * ldc + v * L) : P::zero();
  for (int64_t kk = 0; kk < k; ++kk) {
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = P::load(b + kk * ldb + v * L);
    const float* ak = a + kk * acs;
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V ai = P::set1(ak[i * ars]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = P::fmadd(ai, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) P::store(c + i * ldc + v * L, acc[i][v]);
}

using MicroFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t);

/// micro<P, m, kAccumulate, NV> for m = 1..MR, indexed by m - 1.
template <class P, bool kAccumulate, int NV = P::kVecs, size_t... I>
constexpr std::array<MicroFn, sizeof...(I)> micro_table(std::index_sequence<I...>) {
  return {&micro<P, static_cast<int>(I) + 1, kAccumulate, NV>...};
}

/// C[m x n] (+)= A(m x k) B(k x n) for n a multiple of NR = NV * lanes: column panel p of B
/// starts at b + p * panel_stride (NR for a row-major B; k * NR for packed panels), rows ldb
/// apart; strips of MR rows (the policy's tile unless a WideTile or NarrowTile gives another).
template <class P, bool kAccumulate, int MR = P::kRows, int NV = P::kVecs>
void gemm_tile(int64_t m, int64_t n, int64_t k, const float* a, int64_t ars, int64_t acs, const float* b,
               int64_t ldb, int64_t panel_stride, float* c, int64_t ldc) {
  static constexpr auto kTable = micro_table<P, kAccumulate, NV>(std::make_index_sequence<MR>());
  constexpr int64_t NR = int64_t{NV} * P::kLanes;
  for (int64_t j = 0; j < n; j += NR) {
    const float* bp = b + (j / NR) * panel_stride;
    int64_t i = 0;
    for (; i + MR <= m; i += MR)
      micro<P, MR, kAccumulate, NV>(k, a + i * ars, ars, acs, bp, ldb, c + i * ldc + j, ldc);
    if (i < m)
      kTable[static_cast<size_t>(m - i - 1)](k, a + i * ars, ars, acs, bp, ldb, c + i * ldc + j, ldc);
  }
}

/// Packs rows [0, n) of a row-major src (row stride lds, width w) as NR-wide panels of its
/// transpose times `scale`: dst[p][x][c] = scale * src[(p * NR + c) * lds + x], x < w; rows past
/// n are zero. dst holds round_up_panel<P, NR>(n) * w floats.
template <class P, int64_t NR = kPanel<P>>
void pack_transposed_panels(int64_t n, int64_t w, const float* src, int64_t lds, float scale, float* dst) {
  for (int64_t p0 = 0; p0 < n; p0 += NR) {
    float* panel = dst + p0 * w;
    const int64_t rows = std::min(NR, n - p0);
    for (int64_t c = 0; c < NR; ++c) {
      const float* s = src + (p0 + c) * lds;
      if (c < rows)
        for (int64_t x = 0; x < w; ++x) panel[x * NR + c] = scale * s[x];
      else
        for (int64_t x = 0; x < w; ++x) panel[x * NR + c] = 0.f;
    }
  }
}

/// dst[r][0, wp) = src[r][0, w) then zeros, for r < n: a row-major operand with its width padded
/// to wp = round_up_panel<P, NR>(w).
template <class P, int64_t NR = kPanel<P>>
void pack_rows(int64_t n, int64_t w, const float* src, int64_t lds, float* dst) {
  const int64_t wp = round_up_panel<P, NR>(w);
  for (int64_t r = 0; r < n; ++r) {
    const float* s = src + r * lds;
    float* d = dst + r * wp;
    std::copy_n(s, w, d);
    for (int64_t x = w; x < wp; ++x) d[x] = 0.f;
  }
}

/// max(init, row[0, n)), n a multiple of the lane count.
template <class P>
float row_max(const float* row, int64_t n, float init) {
  typename P::V m = P::set1(init);
  for (int64_t x = 0; x < n; x += P::kLanes) m = P::max(m, P::load(row + x));
  return P::reduce_max(m);
}

/// row[x] = exp(row[x] - shift); returns the sum (fixed order). n a multiple of the lane count.
template <class P>
float exp_shifted_row(float* row, int64_t n, float shift) {
  using V = typename P::V;
  const V s = P::set1(shift);
  V acc = P::zero();
  for (int64_t x = 0; x < n; x += P::kLanes) {
    const V e = P::exp(P::sub(P::load(row + x), s));
    P::store(row + x, e);
    acc = P::add(acc, e);
  }
  return P::reduce_add(acc);
}

/// row[x] = max(row[x], 0) (masked entries hold -inf and become 0). A NaN stays NaN, as in the
/// reference and per-edge kernels (std::max(s, 0)): max(0, x) returns x when x is NaN, on every
/// policy (vmaxps returns its second operand then).
template <class P>
void relu_row(float* row, int64_t n) {
  for (int64_t x = 0; x < n; x += P::kLanes) P::store(row + x, P::max(P::zero(), P::load(row + x)));
}

/// row[x] *= c, n a multiple of the lane count.
template <class P>
void scale_row(float* row, int64_t n, float c) {
  const typename P::V s = P::set1(c);
  for (int64_t x = 0; x < n; x += P::kLanes) P::store(row + x, P::mul(P::load(row + x), s));
}

/// The softmax score gradient on one row: ds[x] = p[x] * (dp[x] - d). n a multiple of the lanes.
template <class P>
void softmax_grad_row(const float* p, float* ds, int64_t n, float d) {
  const typename P::V dv = P::set1(d);
  for (int64_t x = 0; x < n; x += P::kLanes)
    P::store(ds + x, P::mul(P::load(p + x), P::sub(P::load(ds + x), dv)));
}

/// The relu score gradient on one row: ds[x] = p[x] > 0 ? dp[x] : 0.
template <class P>
void relu_grad_row(const float* p, float* ds, int64_t n) {
  for (int64_t x = 0; x < n; x += P::kLanes)
    P::store(ds + x, P::where_positive(P::load(ds + x), P::load(p + x)));
}

}  // namespace edgeattn::kernels::flash
