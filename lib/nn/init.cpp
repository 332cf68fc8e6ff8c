#include "edgeattn/nn/init.hpp"

#include <cmath>

#include "edgeattn/core/rng.hpp"

namespace edgeattn::nn {
namespace {
constexpr uint32_t kInitStream = 0x696e6974u;  // "init"
constexpr uint32_t kSeedStream = 0x73656564u;  // "seed"
constexpr uint32_t kSiteStream = 0x73697465u;  // "site"
}  // namespace

uint64_t derive_seed(uint64_t seed, std::string_view name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  const auto r =
      philox4x32(seed, {static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32), kSeedStream, 0u});
  return (static_cast<uint64_t>(r[0]) << 32) | r[1];
}

uint64_t site_seed(uint64_t step_seed, uint64_t site) {
  const auto r = philox4x32(
      step_seed, {static_cast<uint32_t>(site), static_cast<uint32_t>(site >> 32), kSiteStream, 1u});
  return (static_cast<uint64_t>(r[0]) << 32) | r[1];
}

Tensor uniform(Shape shape, float bound, uint64_t seed) {
  if (!(bound >= 0.f)) raise<InvalidArgument>("uniform: bound is ", bound, ", expected >= 0");
  Tensor t(shape);
  float* d = t.data();
  const int64_t n = t.numel();
  for (int64_t b = 0; b * 4 < n; ++b) {
    const auto u = static_cast<uint64_t>(b);
    const auto r =
        philox4x32(seed, {static_cast<uint32_t>(u), static_cast<uint32_t>(u >> 32), kInitStream, 0u});
    for (int64_t k = 0; k < 4 && 4 * b + k < n; ++k) {
      const float unit = static_cast<float>(r[static_cast<size_t>(k)] >> 8) * (1.0f / 16777216.0f);  // [0, 1)
      d[4 * b + k] = bound * (2.f * unit - 1.f);
    }
  }
  return t;
}

Tensor glorot(Shape shape, uint64_t seed) {
  if (shape.rank() < 2) raise<InvalidArgument>("glorot: shape ", shape.str(), " has rank < 2");
  const int64_t fans = shape[shape.rank() - 2] + shape[shape.rank() - 1];
  const float a = fans > 0 ? std::sqrt(6.f / static_cast<float>(fans)) : 0.f;
  return uniform(shape, a, seed);
}

Tensor torch_linear_weight(Shape shape, uint64_t seed) {
  if (shape.rank() != 2)
    raise<InvalidArgument>("torch_linear_weight: shape ", shape.str(), ", expected [out, in]");
  const float a = shape[1] > 0 ? 1.f / std::sqrt(static_cast<float>(shape[1])) : 0.f;
  return uniform(shape, a, seed);
}

Tensor zeros(Shape shape) { return Tensor(shape); }

}  // namespace edgeattn::nn
