#include "kernels/head_projection.hpp"

#include <vector>

#include "edgeattn/core/parallel.hpp"
#include "kernels/blas.hpp"

namespace edgeattn::kernels {
namespace {

constexpr int64_t kRowBlock = 4096;

// x row n, head h: x + (n * H + h) * In  (row stride H * In)
void reference_forward(const HeadMap& m, const float* x, const float* w, float* y) {
  for (int64_t n = 0; n < m.rows; ++n)
    for (int64_t h = 0; h < m.heads; ++h)
      for (int64_t o = 0; o < m.out_dim; ++o) {
        double s = 0;
        for (int64_t i = 0; i < m.in_dim; ++i)
          s += static_cast<double>(w[(h * m.out_dim + o) * m.in_dim + i]) *
               x[(n * m.heads + h) * m.in_dim + i];
        y[(n * m.heads + h) * m.out_dim + o] = static_cast<float>(s);
      }
}

void reference_backward(const HeadMap& m, const float* x, const float* w, const float* dy, float* dx,
                        float* dw) {
  for (int64_t n = 0; n < m.rows; ++n)
    for (int64_t h = 0; h < m.heads; ++h)
      for (int64_t o = 0; o < m.out_dim; ++o) {
        const float g = dy[(n * m.heads + h) * m.out_dim + o];
        for (int64_t i = 0; i < m.in_dim; ++i) {
          if (dx) dx[(n * m.heads + h) * m.in_dim + i] += w[(h * m.out_dim + o) * m.in_dim + i] * g;
          if (dw) dw[(h * m.out_dim + o) * m.in_dim + i] += g * x[(n * m.heads + h) * m.in_dim + i];
        }
      }
}

}  // namespace

void head_map_forward(const HeadMap& m, const float* x, const float* w, float* y, bool reference) {
  if (m.rows == 0 || m.heads == 0 || m.out_dim == 0) return;
  if (reference) return reference_forward(m, x, w, y);
  const int64_t blocks = (m.rows + kRowBlock - 1) / kRowBlock;
  // Y_h[rows] = X_h[rows] W_h^T : [r, In] x [In, Out]
  parallel_for(0, blocks * m.heads, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t h = t % m.heads, r0 = (t / m.heads) * kRowBlock;
      const int64_t r = std::min(kRowBlock, m.rows - r0);
      gemm(false, true, r, m.out_dim, m.in_dim, 1.f, x + (r0 * m.heads + h) * m.in_dim, m.heads * m.in_dim,
           w + h * m.out_dim * m.in_dim, m.in_dim, 0.f, y + (r0 * m.heads + h) * m.out_dim,
           m.heads * m.out_dim);
    }
  });
}

void head_map_backward(const HeadMap& m, const float* x, const float* w, const float* dy, float* dx,
                       float* dw, bool reference) {
  if (m.rows == 0 || m.heads == 0 || m.out_dim == 0 || m.in_dim == 0) return;
  if (reference) return reference_backward(m, x, w, dy, dx, dw);
  const int64_t ldx = m.heads * m.in_dim, ldy = m.heads * m.out_dim;
  if (dx) {
    const int64_t blocks = (m.rows + kRowBlock - 1) / kRowBlock;
    // dX_h[rows] += dY_h[rows] W_h : [r, Out] x [Out, In]
    parallel_for(0, blocks * m.heads, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t h = t % m.heads, r0 = (t / m.heads) * kRowBlock;
        const int64_t r = std::min(kRowBlock, m.rows - r0);
        gemm(false, false, r, m.in_dim, m.out_dim, 1.f, dy + (r0 * m.heads + h) * m.out_dim, ldy,
             w + h * m.out_dim * m.in_dim, m.in_dim, 1.f, dx + (r0 * m.heads + h) * m.in_dim, ldx);
      }
    });
  }
  if (dw) {
    // dW_h += dY_h^T X_h : [Out, N] x [N, In]; one task per head keeps the sum order fixed.
    parallel_for(0, m.heads, 1, [&](int64_t b, int64_t e) {
      for (int64_t h = b; h < e; ++h)
        gemm(true, false, m.out_dim, m.in_dim, m.rows, 1.f, dy + h * m.out_dim, ldy, x + h * m.in_dim, ldx,
             1.f, dw + h * m.out_dim * m.in_dim, m.in_dim);
    });
  }
}

}  // namespace edgeattn::kernels
