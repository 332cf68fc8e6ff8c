// Serial, double-accumulating dense and sparse products: the test oracle of kernels/spmm.hpp and
// kernels/matmul.hpp. Written for clarity, never used on a hot path. Same contracts as the fast
// kernels (y is overwritten, or accumulated into when `accumulate`); shapes are assumed valid.
#pragma once

#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/kernels/spmm.hpp"

namespace edgeattn::kernels {

/// y [rows, m] (+)= x [rows, cols] . b [cols, m]
void reference_spmm(const CsrMatrix& x, ConstView b, View y, bool accumulate = false);
/// y [cols, m] (+)= x^T . b [rows, m]
void reference_spmm_transposed(const CsrMatrix& x, ConstView b, View y, bool accumulate = false);
/// x with the dropout applied entry by entry (EntryDropout, kernels/spmm.hpp): kept values
/// scaled, dropped ones 0, the pattern unchanged (as autograd::dropout makes it).
CsrMatrix reference_dropped(const CsrMatrix& x, const EntryDropout& drop);
/// y [rows, m] (+)= dropout(x) . b: reference_spmm of reference_dropped(x, drop).
void reference_spmm_dropped(const CsrMatrix& x, const EntryDropout& drop, ConstView b, View y,
                            bool accumulate = false);
/// y [cols, m] (+)= dropout(x)^T . b, the same way.
void reference_spmm_transposed_dropped(const CsrMatrix& x, const EntryDropout& drop, ConstView b, View y,
                                       bool accumulate = false);
/// c [m, n] (+)= op(a) . op(b)
void reference_matmul(ConstView a, bool trans_a, ConstView b, bool trans_b, View c, bool accumulate = false);

}  // namespace edgeattn::kernels
