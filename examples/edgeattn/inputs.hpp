// Random attention operands for the tool's demo and benchmarks.
#pragma once

#include <cstdint>

#include "edgeattn/core/tensor.hpp"
#include "edgeattn/kernels/attention.hpp"

namespace edgeattn::cli {

/// Values uniform in [-1, 1), a pure function of (seed, stream, index); filled in parallel.
Tensor random_tensor(Shape shape, uint64_t seed, uint32_t stream);

/// Owned operands of one score family; `inputs` views them. Not copyable (the views would dangle),
/// movable (tensors keep their heap storage when moved).
struct Operands {
  Tensor query, key, value, score_dst, score_src, weight, key_weight, att;
  AttentionInputs inputs;

  Operands() = default;
  Operands(const Operands&) = delete;
  Operands& operator=(const Operands&) = delete;
  Operands(Operands&&) = default;
  Operands& operator=(Operands&&) = default;
};

/// What `score` needs, with H heads and head_dim D for keys and values:
///   dot_product, bilinear, gatv2, perceptron: query [Nd, H, D], key [Ns, H, D];
///   additive: score_dst [Nd, H], score_src [Ns, H];
///   bilinear: weight [H, D, D]; gatv2: att [H, D]; perceptron: weight, key_weight [H, D, D], att [H, D]
///   (hidden size = D); always value [Ns, H, D].
Operands make_operands(Score score, int64_t num_dst, int64_t num_src, int64_t heads, int64_t head_dim,
                       uint64_t seed);

}  // namespace edgeattn::cli
