// Layer normalisation with backward (Ba, Kiros, Hinton 2016), PyTorch's nn.LayerNorm over the
// last dimension:
//   y = (x - mean) / sqrt(var + eps) * gamma + beta,   mean/var over the last dim (biased var)
//
// Example (a graph-transformer block's post-norm):
//   Var y = layer_norm(tape, add(tape, x, attn), tape.parameter(gamma), tape.parameter(beta));
#pragma once

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::autograd {

/// x: [..., F], gamma: [F] or none (1), beta: [F] or none (0) -> [..., F]. eps > 0.
Var layer_norm(Tape& tape, Var x, Var gamma, Var beta, float eps = 1e-5f);

}  // namespace edgeattn::autograd
