// Activations: one parallel element loop forward, one backward. Backward reads whichever of x
// or y gives the derivative most cheaply (relu, elu: y; leaky_relu, gelu: x).
#include "edgeattn/autograd/ops/activation.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "autograd/elementwise.hpp"
#include "kernels/vector_math.hpp"

namespace edgeattn::autograd {
namespace {

// y = f(x) element-wise (f branch-free, so the loop vectorises).
template <class F>
Tensor map(const Tensor& x, F f) {
  Tensor y = Tensor::uninitialized(x.shape());
  const float* xd = x.data();
  float* yd = y.data();
  detail::for_each_span(x.numel(), [&](int64_t b, int64_t e) { detail::map_span(xd + b, yd + b, e - b, f); });
  return y;
}

// out[i] = g[i] * d(in[i])
template <class D>
inline void chain_span(const float* __restrict g, const float* __restrict in, float* __restrict out,
                       int64_t n, D d) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] * d(in[i]);
}

// dx += dy * d(in_i) element-wise; `input` is x or y, whichever `d` reads. The product goes into
// a fresh tensor that becomes x's gradient when x has none yet (no zero-fill, no extra pass).
template <class D>
void backward_map(BackwardContext& ctx, Var x, const Tensor& input, D d) {
  if (!ctx.needs_grad(x)) return;
  const float* g = ctx.grad_out().data();
  const float* in = input.data();
  Tensor dx = Tensor::uninitialized(input.shape());
  float* dxd = dx.data();
  detail::for_each_span(input.numel(),
                        [&](int64_t b, int64_t e) { chain_span(g + b, in + b, dxd + b, e - b, d); });
  ctx.add_grad(x, std::move(dx));
}

}  // namespace

Var relu(Tape& tape, Var x) {
  Tensor y = map(tape.value(x), [](float v) { return v > 0.f ? v : 0.f; });
  return tape.record("relu", std::move(y), {x}, [x](BackwardContext& ctx) {
    backward_map(ctx, x, ctx.out(), [](float y) { return y > 0.f ? 1.f : 0.f; });
  });
}

Var leaky_relu(Tape& tape, Var x, float negative_slope) {
  const float s = negative_slope;
  Tensor y = map(tape.value(x), [s](float v) { return v > 0.f ? v : s * v; });
  return tape.record("leaky_relu", std::move(y), {x}, [x, s](BackwardContext& ctx) {
    backward_map(ctx, x, ctx.value(x), [s](float v) { return v > 0.f ? 1.f : s; });
  });
}

Var elu(Tape& tape, Var x, float alpha) {
  if (!(alpha > 0.f)) raise<InvalidArgument>("elu: alpha is ", alpha, ", expected > 0");
  Tensor y = map(tape.value(x), [alpha](float v) { return kernels::elu(v, alpha); });
  return tape.record("elu", std::move(y), {x}, [x, alpha](BackwardContext& ctx) {
    backward_map(ctx, x, ctx.out(), [alpha](float yv) { return kernels::elu_grad_from_output(yv, alpha); });
  });
}

Var gelu(Tape& tape, Var x) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  constexpr float kInvSqrt2Pi = 0.39894228040143268f;
  Tensor y = map(tape.value(x), [](float v) { return 0.5f * v * (1.f + std::erf(v * kInvSqrt2)); });
  return tape.record("gelu", std::move(y), {x}, [x](BackwardContext& ctx) {
    // d/dx x Phi(x) = Phi(x) + x phi(x)
    backward_map(ctx, x, ctx.value(x), [](float v) {
      return 0.5f * (1.f + std::erf(v * kInvSqrt2)) + v * kInvSqrt2Pi * std::exp(-0.5f * v * v);
    });
  });
}

Var sigmoid(Tape& tape, Var x) {
  // Both branches are exact and never overflow: exp of a non-positive number only.
  Tensor y = map(tape.value(x), [](float v) {
    if (v >= 0.f) return 1.f / (1.f + std::exp(-v));
    const float e = std::exp(v);
    return e / (1.f + e);
  });
  return tape.record("sigmoid", std::move(y), {x}, [x](BackwardContext& ctx) {
    backward_map(ctx, x, ctx.out(), [](float s) { return s * (1.f - s); });
  });
}

}  // namespace edgeattn::autograd
