// Inverted dropout with counter-based masks (a hash of a (seed, position) counter).
//
// Each element is kept with probability 1 - p and survivors are scaled by 1 / (1 - p), so the
// expected value is unchanged and evaluation needs no rescaling. Decisions are 16-bit draws (p is
// rounded up to a multiple of 2^-16, as the attention dropout's), two consecutive dense elements
// per 32-bit hash. The keep decision is a pure
// function of (seed, element): dense tensors key it by the flat element index, sparse matrices by
// (row, column), so masks are deterministic, independent of the thread count, and the sparse
// mask does not depend on how the matrix is stored. Use a different seed per step and per site.
// When !tape.training or p == 0 both are the identity (no copy of the dense value is recorded
// beyond the output itself). The mask is never stored: the backward draws it again.
//
// Example (GAT: dropout 0.6 on the sparse input features, then on the hidden features):
//   CsrMatrix xd = dropout(tape, features, 0.6f, step_seed ^ 1);   // same pattern, new values
//   Var h = dropout(tape, elu(tape, h1), 0.6f, step_seed ^ 2);
// A linear map of dropped sparse features is cheaper as one op, dropout_linear (below): its
// products skip the dropped entries instead of multiplying zeros.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "edgeattn/autograd/tape.hpp"
#include "edgeattn/core/sparse_matrix.hpp"

namespace edgeattn::autograd {

/// x: any shape -> same shape. p in [0, 1) (InvalidArgument otherwise).
Var dropout(Tape& tape, Var x, float p, uint64_t seed);

/// x: [rows, cols] CSR constant -> the same pattern with dropped entries set to 0 and kept ones
/// scaled by 1 / (1 - p). No gradient (x is a constant); feed the result to the sparse linear.
CsrMatrix dropout(const Tape& tape, const CsrMatrix& x, float p, uint64_t seed);

/// linear(tape, dropout(tape, x, p, seed), weight, bias) without the dropped copy of x: the same
/// mask, drawn block by block into a small buffer in the forward and drawn again for the
/// gradients, so the op stores only its output. For a large input (the node features of a big
/// graph) that is the largest activation of a training step not kept. The weight gradient is
/// summed from partials over fixed row blocks (bit-identical for any thread count); results equal
/// the unfused pair's up to float rounding. Not training, or p == 0: linear(x, weight, bias).
///   x: [N, in], weight: [out, in], bias: [out] or none -> [N, out]
///
///   Var h = dropout_linear(tape, tape.constant_ref(features), 0.6f, seed, tape.parameter(w));
Var dropout_linear(Tape& tape, Var x, float p, uint64_t seed, Var weight, Var bias = {});

/// The same over rows `rows` of x, without gathering them: linear(dropout(x[rows]), weight, bias),
/// each row read from x where it is (a sampled batch's input nodes, from the whole feature
/// matrix, perhaps memory-mapped) and the mask that of dropout on the gathered copy [N, in]
/// (keyed by its element index, so x[rows]'s row i draws what the copy's row i would). x must be
/// a constant: no gradient is scattered back to it (InvalidArgument otherwise, and for a row
/// outside [0, M)). The op keeps `rows` for its backward. The output equals dropout_linear on
/// tape.constant(gather_rows(x, rows)) bit for bit, and so does the weight gradient when training
/// with p > 0. Not training, or p == 0: the linear map of the selected rows.
///   x: [M, in], rows: [N] -> [N, out]
///
///   auto rows = std::make_shared<const std::vector<int64_t>>(batch.input_nodes);
///   Var h = dropout_linear(tape, tape.constant_ref(features), rows, 0.2f, seed, tape.parameter(w));
Var dropout_linear(Tape& tape, Var x, std::shared_ptr<const std::vector<int64_t>> rows, float p,
                   uint64_t seed, Var weight, Var bias = {});

/// linear(tape, dropout(tape, x, p, seed), weight, bias) for a sparse x, without the dropped copy:
/// the same mask (keyed by row and column), drawn on the fly by the SpMM kernels
/// (kernels/spmm.hpp's spmm_dropped) in the forward, which records the decisions (a byte per
/// entry) for the weight gradient; that reads x's values through x's transpose index (built once
/// per pattern and shared by copies) rather than a transposed copy per step. The products skip
/// the dropped entries. The same output and gradients as the unfused pair, bit for bit up to the
/// sign of a zero. Not training, or p == 0: linear(tape, x, weight, bias).
///   x: [N, in] CSR (by value: move it in, or copy it; a copy shares the pattern),
///   weight: [out, in], bias: [out] or none -> [N, out]
///
///   Var h = dropout_linear(tape, features, 0.6f, seed, tape.parameter(w));  // features: CsrMatrix
Var dropout_linear(Tape& tape, CsrMatrix x, float p, uint64_t seed, Var weight, Var bias = {});

/// dropout(tape, elu(tape, x, alpha), p, seed) as one op: the same values and gradients, bit for
/// bit, without storing the ELU output (the backward recomputes ELU's derivative from x).
///   x: any shape -> same shape
Var elu_dropout(Tape& tape, Var x, float alpha, float p, uint64_t seed);

/// The dense keep decision for element `index` (exposed for tests).
bool dropout_keeps_element(uint64_t seed, int64_t index, float p);

}  // namespace edgeattn::autograd
