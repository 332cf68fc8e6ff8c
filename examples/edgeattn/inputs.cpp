#include "inputs.hpp"

#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"

namespace edgeattn::cli {

Tensor random_tensor(Shape shape, uint64_t seed, uint32_t stream) {
  Tensor t(shape);
  float* data = t.data();
  const int64_t n = t.numel();
  // One philox block gives four 24-bit uniforms, for elements 4b .. 4b+3.
  parallel_for(0, (n + 3) / 4, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const auto block = static_cast<uint64_t>(b);
      const auto r =
          philox4x32(seed, {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), stream, 0});
      for (int64_t j = 0; j < 4 && 4 * b + j < n; ++j)
        data[4 * b + j] = static_cast<float>(r[static_cast<size_t>(j)] >> 8) * (2.f / 16777216.f) - 1.f;
    }
  });
  return t;
}

Operands make_operands(Score score, int64_t num_dst, int64_t num_src, int64_t heads, int64_t head_dim,
                       uint64_t seed) {
  Operands o;
  const int64_t h = heads, d = head_dim;
  o.value = random_tensor({num_src, h, d}, seed, 1);
  if (score == Score::additive) {
    o.score_dst = random_tensor({num_dst, h}, seed, 2);
    o.score_src = random_tensor({num_src, h}, seed, 3);
  } else {
    o.query = random_tensor({num_dst, h, d}, seed, 4);
    o.key = random_tensor({num_src, h, d}, seed, 5);
  }
  if (score == Score::bilinear || score == Score::perceptron) o.weight = random_tensor({h, d, d}, seed, 6);
  if (score == Score::perceptron) o.key_weight = random_tensor({h, d, d}, seed, 7);
  if (score == Score::gatv2 || score == Score::perceptron) o.att = random_tensor({h, d}, seed, 8);

  // Operands the score does not use stay default-constructed: their views are empty, which is
  // what attention_forward expects for "not given".
  const auto view = [](const Tensor& t) { return t.data() != nullptr ? t.view() : ConstView(); };
  o.inputs.query = view(o.query);
  o.inputs.key = view(o.key);
  o.inputs.value = view(o.value);
  o.inputs.score_dst = view(o.score_dst);
  o.inputs.score_src = view(o.score_src);
  o.inputs.weight = view(o.weight);
  o.inputs.key_weight = view(o.key_weight);
  o.inputs.att = view(o.att);
  return o;
}

}  // namespace edgeattn::cli
