// LayerNorm: per-row statistics in double (F is small, rows are many), saved mean and 1/std for
// backward:  dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * gamma.
#include "edgeattn/autograd/ops/normalization.hpp"

#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/elementwise.hpp"

namespace edgeattn::autograd {

Var layer_norm(Tape& tape, Var x, Var gamma, Var beta, float eps) {
  const Tensor& xv = tape.value(x);
  if (xv.rank() < 1) raise<ShapeError>("layer_norm: x has shape ", xv.shape().str(), ", expected [..., F]");
  if (!(eps > 0.f)) raise<InvalidArgument>("layer_norm: eps is ", eps, ", expected > 0");
  const int64_t f = xv.dim(xv.rank() - 1), rows = f ? xv.numel() / f : 0;
  if (gamma) detail::expect_shape("layer_norm", "gamma", tape.value(gamma), {f});
  if (beta) detail::expect_shape("layer_norm", "beta", tape.value(beta), {f});
  // stats[2r] = mean, stats[2r + 1] = 1 / sqrt(var + eps)
  auto stats = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * rows));
  Tensor y(xv.shape());
  const float* xd = xv.data();
  const float* gd = gamma ? tape.value(gamma).data() : nullptr;
  const float* bd = beta ? tape.value(beta).data() : nullptr;
  float* yd = y.data();
  float* st = stats->data();
  detail::for_each_row_block(rows, f, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = xd + r * f;
      double mean = 0.0, var = 0.0;
      for (int64_t c = 0; c < f; ++c) mean += xr[c];
      mean /= static_cast<double>(f);
      for (int64_t c = 0; c < f; ++c) var += (xr[c] - mean) * (xr[c] - mean);
      var /= static_cast<double>(f);
      const auto rstd = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
      const auto m = static_cast<float>(mean);
      st[2 * r] = m;
      st[2 * r + 1] = rstd;
      for (int64_t c = 0; c < f; ++c) {
        const float xhat = (xr[c] - m) * rstd;
        yd[r * f + c] = xhat * (gd ? gd[c] : 1.f) + (bd ? bd[c] : 0.f);
      }
    }
  });
  return tape.record("layer_norm", std::move(y), {x, gamma, beta},
                     [x, gamma, beta, stats, rows, f](BackwardContext& ctx) {
                       const float* dy = ctx.grad_out().data();
                       const float* xd = ctx.value(x).data();
                       const float* st = stats->data();
                       if (ctx.needs_grad(x)) {
                         const float* gd = gamma ? ctx.value(gamma).data() : nullptr;
                         float* dx = ctx.grad(x).data();
                         detail::for_each_row_block(rows, f, [&](int64_t r0, int64_t r1) {
                           for (int64_t r = r0; r < r1; ++r) {
                             const float m = st[2 * r], rstd = st[2 * r + 1];
                             double sum_g = 0.0, sum_gx = 0.0;
                             for (int64_t c = 0; c < f; ++c) {
                               const float g = dy[r * f + c] * (gd ? gd[c] : 1.f);
                               sum_g += g;
                               sum_gx += g * ((xd[r * f + c] - m) * rstd);
                             }
                             const auto mean_g = static_cast<float>(sum_g / static_cast<double>(f));
                             const auto mean_gx = static_cast<float>(sum_gx / static_cast<double>(f));
                             for (int64_t c = 0; c < f; ++c) {
                               const float g = dy[r * f + c] * (gd ? gd[c] : 1.f);
                               const float xhat = (xd[r * f + c] - m) * rstd;
                               dx[r * f + c] += rstd * (g - mean_g - xhat * mean_gx);
                             }
                           }
                         });
                       }
                       if (ctx.needs_grad(gamma))
                         detail::column_sums(
                             rows, f,
                             [&](int64_t r, float* acc) {
                               const float m = st[2 * r], rstd = st[2 * r + 1];
                               for (int64_t c = 0; c < f; ++c)
                                 acc[c] += dy[r * f + c] * ((xd[r * f + c] - m) * rstd);
                             },
                             ctx.grad(gamma).data(), true);
                       if (ctx.needs_grad(beta))
                         detail::column_sums(
                             rows, f,
                             [&](int64_t r, float* acc) {
                               for (int64_t c = 0; c < f; ++c) acc[c] += dy[r * f + c];
                             },
                             ctx.grad(beta).data(), true);
                     });
}

}  // namespace edgeattn::autograd
