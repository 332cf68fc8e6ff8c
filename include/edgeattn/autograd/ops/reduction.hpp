// Reductions of a whole tensor to a scalar (shape [], rank 0), with backward. Sums run over
// fixed blocks in double and combine blocks in order: identical results for any thread count.
//
// Example (a test loss that weights every output element):
//   Var loss = sum(tape, mul_by_constant_weights);
#pragma once

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::autograd {

/// x: any shape -> [] holding the sum of all elements
Var sum(Tape& tape, Var x);

/// x: any shape with at least one element -> [] holding the mean
Var mean(Tape& tape, Var x);

}  // namespace edgeattn::autograd
