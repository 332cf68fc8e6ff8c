// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11 "Parallel random numbers:
// as easy as 1, 2, 3").
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

/// True when entry (dst, src, head) survives dropout with drop probability `p`.
/// The 16 random bits of head `head` of edge (dst, src): one Philox call yields 128 bits, enough
/// for 8 heads, so a multi-head kernel pays one call per 8 heads (dropout_keep_heads).
constexpr uint32_t edge_head_bits(const std::array<uint32_t, 4>& block, int64_t head) {
  return (block[static_cast<size_t>((head & 7) >> 1)] >> ((head & 1) * 16)) & 0xffffu;
}
constexpr std::array<uint32_t, 4> edge_head_block(uint64_t seed, int64_t dst, int64_t src,
                                                  int64_t head_block) {
  return philox4x32(seed, {static_cast<uint32_t>(dst), static_cast<uint32_t>(src),
                           static_cast<uint32_t>(head_block) ^ 0xd2000000u,
                           static_cast<uint32_t>((static_cast<uint64_t>(dst) >> 32) ^
                                                 ((static_cast<uint64_t>(src) >> 32) << 16))});
}

/// Attention dropout: keep alpha_{dst,src}^head with probability 1 - p (16-bit resolution).
constexpr bool dropout_keep(uint64_t seed, int64_t dst, int64_t src, int32_t head, float p) {
  if (p <= 0.f) return true;
  const auto block = edge_head_block(seed, dst, src, head >> 3);
  return static_cast<float>(edge_head_bits(block, head)) * (1.0f / 65536.0f) >= p;
}

/// factor[h] = keep_scale if dropout_keep(seed, dst, src, h, p) else 0, for h in [0, heads): the
/// same decisions as dropout_keep, at one Philox call per 8 heads.
inline void dropout_keep_heads(uint64_t seed, int64_t dst, int64_t src, int64_t heads, float p,
                               float keep_scale, float* factor) {
  for (int64_t h0 = 0; h0 < heads; h0 += 8) {
    const auto block = edge_head_block(seed, dst, src, h0 >> 3);
    const int64_t end = h0 + 8 < heads ? h0 + 8 : heads;
    for (int64_t h = h0; h < end; ++h)
      factor[h] = static_cast<float>(edge_head_bits(block, h)) * (1.0f / 65536.0f) >= p ? keep_scale : 0.f;
  }
}

}  // namespace edgeattn
