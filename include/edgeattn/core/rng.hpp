// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11 "Parallel random numbers: as
// easy as 1, 2, 3") for general use, and a SplitMix64-based hash for attention-dropout masks.
//
// A value is a pure function of (key, counter): no state, no order dependence. Attention dropout
// keys its mask by (seed, destination, source, head), so forward and backward regenerate the same
// mask without storing it, every path (reference, parallel, dense) drops the same entries, and the
// mask does not depend on how edges are stored or ordered.
//
// Example:
//   bool keep = edgeattn::dropout_keep(seed, dst, src, head, /*p=*/0.6f);
#pragma once

#include <array>
#include <cstdint>

namespace edgeattn {

/// Philox4x32 with 10 rounds: 128 random bits from a 64-bit key and a 128-bit counter.
constexpr std::array<uint32_t, 4> philox4x32(uint64_t key, std::array<uint32_t, 4> ctr) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ k0, static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

/// Uniform float in [0, 1) for the entry (dst, src, head) under `seed`.
constexpr float edge_uniform(uint64_t seed, int64_t dst, int64_t src, int32_t head) {
  const auto r =
      philox4x32(seed, {static_cast<uint32_t>(dst), static_cast<uint32_t>(src), static_cast<uint32_t>(head),
                        static_cast<uint32_t>((static_cast<uint64_t>(dst) >> 32) ^
                                              ((static_cast<uint64_t>(src) >> 32) << 16))});
  return static_cast<float>(r[0] >> 8) * (1.0f / 16777216.0f);  // 24 random bits
}

/// The SplitMix64 finaliser (Steele, Lea & Flood, OOPSLA 2014; Java's SplittableRandom): a
/// bijective 64-bit mix whose outputs over a counter pass BigCrush.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// The destination's half of edge_head_bits64: one mix per row, which a kernel hoists out of the
/// row's edges (edge_row_bits64 then costs one mix an edge and vectorises over edges).
constexpr uint64_t edge_row_key(uint64_t seed, int64_t dst) {
  return mix64(seed ^ (static_cast<uint64_t>(dst) * 0x9e3779b97f4a7c15ULL));
}

/// edge_head_bits64(seed, dst, src, quad) from row = edge_row_key(seed, dst).
constexpr uint64_t edge_row_bits64(uint64_t row, int64_t src, int64_t quad) {
  const uint64_t counter = (static_cast<uint64_t>(src) << 8) | static_cast<uint64_t>(quad & 0xff);
  return mix64(row + counter * 0xd1342543de82ef95ULL);
}

/// 64 random bits for heads [4 quad, 4 quad + 4) of the edge (dst, src): 16 bits per head. Keyed
/// by seed and destination, then counted by (source, quad); two mixes of a few multiplies each,
/// several times cheaper than a Philox call per edge, which dominated the attention kernels of
/// small training graphs (the mask is regenerated in forward and in both backward passes).
constexpr uint64_t edge_head_bits64(uint64_t seed, int64_t dst, int64_t src, int64_t quad) {
  return edge_row_bits64(edge_row_key(seed, dst), src, quad);
}

/// 16 random bits of head `head` of the edge (dst, src).
constexpr uint32_t edge_head_bits(uint64_t seed, int64_t dst, int64_t src, int64_t head) {
  return static_cast<uint32_t>(edge_head_bits64(seed, dst, src, head >> 2) >> ((head & 3) * 16)) & 0xffffu;
}

/// The row half of sparse_entry_draw: one 64-bit mix per row of the matrix, which a kernel
/// walking a row computes once.
constexpr uint64_t sparse_row_key(uint64_t key, int64_t row) {
  return mix64(key + static_cast<uint64_t>(row) * 0x9e3779b97f4a7c15ULL);
}

/// sparse_entry_draw(key, row, col) from row_key = sparse_row_key(key, row): MurmurHash3's
/// 32-bit finaliser (fmix32, a bijection with full avalanche) of the column under the row's key.
/// Two 32-bit multiplies, a third of the cost of a 64-bit mix per entry.
constexpr uint32_t sparse_entry_draw_in_row(uint64_t row_key, int64_t col) {
  uint32_t h =
      (static_cast<uint32_t>(row_key) ^ static_cast<uint32_t>(col)) + static_cast<uint32_t>(row_key >> 32);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h >> 16;
}

/// The 16-bit draw of entry (row, col) of a sparse matrix under a dropout site's stream key, so
/// the mask follows the entry, not its slot in the value array (autograd::dropout on a CsrMatrix
/// and the SpMM kernels that drop entries on the fly, kernels/spmm.hpp, share it). Kept when the
/// draw is >= dropout_threshold16(p).
constexpr uint32_t sparse_entry_draw(uint64_t key, int64_t row, int64_t col) {
  return sparse_entry_draw_in_row(sparse_row_key(key, row), col);
}

/// The 16-bit values attention dropout keeps are those >= this: bits / 65536 >= p exactly when
/// bits >= ceil(65536 p), as both sides are exact in float (bits < 2^16, and scaling by 2^16 is
/// exact). 0 for p <= 0 (keep all); at most 65536 for p < 1.
constexpr uint32_t dropout_threshold16(float p) {
  if (!(p > 0.f)) return 0;
  const float scaled = p * 65536.0f;
  if (scaled >= 65536.0f) return 65536;
  auto t = static_cast<uint32_t>(scaled);  // truncates: t <= scaled < t + 1
  return static_cast<float>(t) < scaled ? t + 1 : t;
}

/// Attention dropout: keep alpha_{dst,src}^head with probability 1 - p (16-bit resolution: the
/// head's 16 bits, read as bits / 65536, are >= p).
constexpr bool dropout_keep(uint64_t seed, int64_t dst, int64_t src, int32_t head, float p) {
  if (p <= 0.f) return true;
  return edge_head_bits(seed, dst, src, head) >= dropout_threshold16(p);
}

/// factor[h] = keep_scale if dropout_keep(seed, dst, src, h, p) else 0, for h in [0, heads), from
/// row = edge_row_key(seed, dst) and threshold = dropout_threshold16(p): the same decisions as
/// dropout_keep, at one 64-bit mix per 4 heads and integer comparisons. A kernel walking
/// destination rows computes the row key once per row; the 8-head GAT layer's forward and
/// destination pass spent two mixes a quad of heads per edge before.
inline void dropout_keep_heads_row(uint64_t row, int64_t src, int64_t heads, uint32_t threshold,
                                   float keep_scale, float* factor) {
  for (int64_t h0 = 0; h0 < heads; h0 += 4) {
    const uint64_t bits = edge_row_bits64(row, src, h0 >> 2);
    const int64_t end = h0 + 4 < heads ? h0 + 4 : heads;
    for (int64_t h = h0; h < end; ++h)
      factor[h] = ((bits >> ((h - h0) * 16)) & 0xffffu) >= threshold ? keep_scale : 0.f;
  }
}

/// dropout_keep_heads_row for one edge given by its ends (the backward's source pass, where the
/// destination changes from edge to edge).
inline void dropout_keep_heads(uint64_t seed, int64_t dst, int64_t src, int64_t heads, float p,
                               float keep_scale, float* factor) {
  dropout_keep_heads_row(edge_row_key(seed, dst), src, heads, dropout_threshold16(p), keep_scale, factor);
}

/// Head 0 of n edges of one destination: factor[k] = keep_scale if dropout_keep(seed, dst,
/// src[k], 0, p) else 0, with row = edge_row_key(seed, dst). The same decisions as
/// dropout_keep_heads with one head; one mix an edge, in a loop that vectorises over the edges
/// (the single-head kernels' blocks).
inline void dropout_keep_row(uint64_t row, const int32_t* src, int64_t n, uint32_t threshold,
                             float keep_scale, float* factor) {
#pragma omp simd
  for (int64_t k = 0; k < n; ++k)
    factor[k] =
        static_cast<uint32_t>(edge_row_bits64(row, src[k], 0) & 0xffffu) >= threshold ? keep_scale : 0.f;
}

/// Head 0 of n edges into one source: factor[k] = keep_scale if dropout_keep(seed, dst[k], src,
/// 0, p) else 0 (the source-side twin of dropout_keep_row: both mixes an edge, vectorised over
/// the edges).
inline void dropout_keep_col(uint64_t seed, const int32_t* dst, int64_t n, int64_t src, uint32_t threshold,
                             float keep_scale, float* factor) {
#pragma omp simd
  for (int64_t k = 0; k < n; ++k)
    factor[k] = static_cast<uint32_t>(edge_head_bits64(seed, dst[k], src, 0) & 0xffffu) >= threshold
                    ? keep_scale
                    : 0.f;
}

}  // namespace edgeattn
