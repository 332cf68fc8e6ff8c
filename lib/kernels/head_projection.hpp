// Per-head linear maps used to reduce the bilinear and perceptron scores to the canonical edge
// forms of attention_backend.hpp, with their backward:
//   apply:     y[n, h, :] = W_h x[n, h, :]        x: [N, H, In], W: [H, Out, In], y: [N, H, Out]
//   backward:  dx[n, h, :] = W_h^T dy[n, h, :],   dW_h = sum_n dy[n, h, :] x[n, h, :]^T
// The reference twin uses plain loops; the fast one calls single-threaded BLAS per head, in parallel
// over heads and row blocks.
#pragma once

#include <cstdint>

namespace edgeattn::kernels {

struct HeadMap {
  int64_t rows = 0;     // N
  int64_t heads = 0;    // H
  int64_t in_dim = 0;   // In
  int64_t out_dim = 0;  // Out
};

/// y = per-head W x. `y` is overwritten.
void head_map_forward(const HeadMap& m, const float* x, const float* w, float* y, bool reference);

/// dx += W^T dy (if dx), dw += dy^T x (if dw). Both are accumulated into (caller zero-fills).
void head_map_backward(const HeadMap& m, const float* x, const float* w, const float* dy, float* dx,
                       float* dw, bool reference);

}  // namespace edgeattn::kernels
