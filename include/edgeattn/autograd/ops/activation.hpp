// Element-wise activations with backward (any shape in, same shape out).
//
//   relu(x)              max(x, 0)
//   leaky_relu(x, s)     x if x > 0 else s * x                       (PyTorch default s = 0.01)
//   elu(x, alpha)        x if x > 0 else alpha * (exp(x) - 1)        (GAT's hidden activation)
//   gelu(x)              x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))    (exact form, PyTorch default)
//   sigmoid(x)           1 / (1 + exp(-x))                           (TransformerConv's beta gate)
//
// At the kink x = 0 the derivative taken is that of the x <= 0 branch (PyTorch's convention).
//
// Example:
//   Var h = elu(tape, graph_attention(tape, graph, vars, config));
#pragma once

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::autograd {

Var relu(Tape& tape, Var x);
Var leaky_relu(Tape& tape, Var x, float negative_slope = 0.01f);
/// alpha must be > 0 (InvalidArgument otherwise).
Var elu(Tape& tape, Var x, float alpha = 1.f);
Var gelu(Tape& tape, Var x);
Var sigmoid(Tape& tape, Var x);

}  // namespace edgeattn::autograd
