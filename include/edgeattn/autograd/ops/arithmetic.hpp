// Element-wise arithmetic with backward: residual add, bias broadcast, scaling.
//
// Example (a residual connection with a bias):
//   Var y = add(tape, x, add_bias(tape, linear(tape, x, w), b));   // x, y: [N, F], b: [F]
#pragma once

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::autograd {

/// a, b: same shape -> a + b
Var add(Tape& tape, Var a, Var b);

/// x: [..., F], bias: [F] -> x + bias broadcast over every leading index
Var add_bias(Tape& tape, Var x, Var bias);

/// x: any shape -> factor * x
Var scale(Tape& tape, Var x, float factor);

}  // namespace edgeattn::autograd
