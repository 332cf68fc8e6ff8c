// Element-wise arithmetic with backward: residual add, difference, product, bias broadcast,
// scaling, and a per-row gate (TransformerConv's beta).
//
// Example (a residual connection with a bias):
//   Var y = add(tape, x, add_bias(tape, linear(tape, x, w), b));   // x, y: [N, F], b: [F]
#pragma once

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::autograd {

/// a, b: same shape -> a + b
Var add(Tape& tape, Var a, Var b);

/// a, b: same shape -> a - b
Var sub(Tape& tape, Var a, Var b);

/// a, b: same shape -> a * b (element-wise)
Var mul(Tape& tape, Var a, Var b);

/// x: [N, F], s: [N, 1] -> y[i, f] = x[i, f] * s[i, 0] (one gate value per row)
Var scale_rows(Tape& tape, Var x, Var s);

/// x: [..., F], bias: [F] -> x + bias broadcast over every leading index
Var add_bias(Tape& tape, Var x, Var bias);

/// x: any shape -> factor * x
Var scale(Tape& tape, Var x, float factor);

}  // namespace edgeattn::autograd
