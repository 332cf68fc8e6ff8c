// Branch-free float exp and tanh that GCC and Clang vectorise inside loops over heads and
// features (no -ffast-math needed). exp: Cephes' expf polynomial after Cody-Waite range
// reduction; max relative error ~1e-7 on [-87, 88]; exactly 0 below -87.3, so exp(-inf) = 0.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

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

inline float leaky_relu(float x, float slope) { return x > 0.f ? x : slope * x; }
/// Derivative of LeakyReLU; at 0 the left slope (matches the reference).
inline float leaky_relu_grad(float x, float slope) { return x > 0.f ? 1.f : slope; }

}  // namespace edgeattn::kernels
