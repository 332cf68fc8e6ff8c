// Parameter initialisation, deterministic from a seed, as PyTorch Geometric and PyTorch do it.
//
//   glorot(shape)            U(-a, a), a = sqrt(6 / (shape[-2] + shape[-1]))   PyG inits.glorot
//                            (Glorot & Bengio 2010; for a Linear weight [out, in]: fan_out + fan_in;
//                            for GATConv's att_src [1, H, C]: H + C, exactly as PyG computes it)
//   torch_linear_weight      U(-1/sqrt(in), 1/sqrt(in)) for weight [out, in]: torch.nn.Linear's
//                            kaiming_uniform_(a=sqrt(5)), PyG Linear's default weight_initializer
//   uniform(shape, bound)    U(-bound, bound); PyG Linear's default bias: bound = 1/sqrt(in)
//   zeros(shape)             PyG inits.zeros (GATConv's bias)
//
// Values are pure functions of (seed, element index), from Philox4x32-10 (core/rng.hpp): no
// state, no dependence on order or threads. Layers derive one seed per parameter from the model
// seed and the parameter's full dotted name (`derive_seed`), so adding a layer or reordering
// construction never changes the other parameters' initial values.
//
// Example:
//   Tensor w = edgeattn::nn::glorot({64, 1433}, edgeattn::nn::derive_seed(42, "conv1.lin.weight"));
#pragma once

#include <cstdint>
#include <string_view>

#include "edgeattn/core/tensor.hpp"

namespace edgeattn::nn {

/// A seed for the parameter `name` under the model seed `seed` (FNV-1a of the name, mixed with
/// the seed through Philox).
uint64_t derive_seed(uint64_t seed, std::string_view name);

/// The dropout seed of site `site` (a per-site constant) in the step `step_seed`: every dropout
/// and attention-dropout site of a model gets an independent mask per step.
uint64_t site_seed(uint64_t step_seed, uint64_t site);

/// Elements uniform in [-bound, bound), element k a function of (seed, k). bound >= 0.
Tensor uniform(Shape shape, float bound, uint64_t seed);

/// PyG's glorot: rank >= 2; a = sqrt(6 / (shape[-2] + shape[-1])). InvalidArgument for rank < 2.
Tensor glorot(Shape shape, uint64_t seed);

/// torch.nn.Linear's default weight init for weight: [out, in]: U(-1/sqrt(in), 1/sqrt(in)).
Tensor torch_linear_weight(Shape shape, uint64_t seed);

/// All zeros.
Tensor zeros(Shape shape);

}  // namespace edgeattn::nn
