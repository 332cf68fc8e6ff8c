#include "edgeattn/autograd/ops/arithmetic.hpp"

#include <utility>

#include "autograd/elementwise.hpp"

namespace edgeattn::autograd {

Var add(Tape& tape, Var a, Var b) {
  const Tensor& av = tape.value(a);
  const Tensor& bv = tape.value(b);
  if (!(av.shape() == bv.shape()))
    raise<ShapeError>("add: b has shape ", bv.shape().str(), ", expected the shape of a ", av.shape().str());
  Tensor y(av.shape());
  float* yd = y.data();
  const float *ad = av.data(), *bd = bv.data();
  detail::for_each_index(y.numel(), [&](int64_t i) { yd[i] = ad[i] + bd[i]; });
  return tape.record("add", std::move(y), {a, b}, [a, b](BackwardContext& ctx) {
    const Tensor& dy = ctx.grad_out();
    for (Var v : {a, b})
      if (ctx.needs_grad(v)) detail::add_into(ctx.grad(v).data(), dy.data(), dy.numel());
  });
}

Var sub(Tape& tape, Var a, Var b) {
  const Tensor& av = tape.value(a);
  const Tensor& bv = tape.value(b);
  if (!(av.shape() == bv.shape()))
    raise<ShapeError>("sub: b has shape ", bv.shape().str(), ", expected the shape of a ", av.shape().str());
  Tensor y(av.shape());
  float* yd = y.data();
  const float *ad = av.data(), *bd = bv.data();
  detail::for_each_index(y.numel(), [&](int64_t i) { yd[i] = ad[i] - bd[i]; });
  return tape.record("sub", std::move(y), {a, b}, [a, b](BackwardContext& ctx) {
    const Tensor& dy = ctx.grad_out();
    if (ctx.needs_grad(a)) detail::add_into(ctx.grad(a).data(), dy.data(), dy.numel());
    if (ctx.needs_grad(b)) {
      const float* g = dy.data();
      float* db = ctx.grad(b).data();
      detail::for_each_index(dy.numel(), [&](int64_t i) { db[i] -= g[i]; });
    }
  });
}

Var mul(Tape& tape, Var a, Var b) {
  const Tensor& av = tape.value(a);
  const Tensor& bv = tape.value(b);
  if (!(av.shape() == bv.shape()))
    raise<ShapeError>("mul: b has shape ", bv.shape().str(), ", expected the shape of a ", av.shape().str());
  Tensor y(av.shape());
  float* yd = y.data();
  const float *ad = av.data(), *bd = bv.data();
  detail::for_each_index(y.numel(), [&](int64_t i) { yd[i] = ad[i] * bd[i]; });
  return tape.record("mul", std::move(y), {a, b}, [a, b](BackwardContext& ctx) {
    const float* g = ctx.grad_out().data();
    const int64_t n = ctx.grad_out().numel();
    // da += dy * b, db += dy * a (a and b may be the same Var: both terms land in one gradient).
    if (ctx.needs_grad(a)) {
      const float* bd = ctx.value(b).data();
      float* da = ctx.grad(a).data();
      detail::for_each_index(n, [&](int64_t i) { da[i] += g[i] * bd[i]; });
    }
    if (ctx.needs_grad(b)) {
      const float* ad = ctx.value(a).data();
      float* db = ctx.grad(b).data();
      detail::for_each_index(n, [&](int64_t i) { db[i] += g[i] * ad[i]; });
    }
  });
}

Var scale_rows(Tape& tape, Var x, Var s) {
  const Tensor& xv = tape.value(x);
  const Tensor& sv = tape.value(s);
  detail::expect_rank("scale_rows", "x", xv, 2, "[N, F]");
  const int64_t rows = xv.dim(0), cols = xv.dim(1);
  detail::expect_shape("scale_rows", "s", sv, {rows, 1});
  Tensor y(xv.shape());
  float* yd = y.data();
  const float *xd = xv.data(), *sd = sv.data();
  detail::for_each_row_block(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) yd[r * cols + c] = xd[r * cols + c] * sd[r];
  });
  return tape.record("scale_rows", std::move(y), {x, s}, [x, s, rows, cols](BackwardContext& ctx) {
    const float* g = ctx.grad_out().data();
    if (ctx.needs_grad(x)) {  // dx[r, c] += dy[r, c] s[r]
      const float* sd = ctx.value(s).data();
      float* dx = ctx.grad(x).data();
      detail::for_each_row_block(rows, cols, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] += g[r * cols + c] * sd[r];
      });
    }
    if (ctx.needs_grad(s)) {  // ds[r] += sum_c dy[r, c] x[r, c]
      const float* xd = ctx.value(x).data();
      float* ds = ctx.grad(s).data();
      detail::for_each_row_block(rows, cols, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          float acc = 0.f;
          for (int64_t c = 0; c < cols; ++c) acc += g[r * cols + c] * xd[r * cols + c];
          ds[r] += acc;
        }
      });
    }
  });
}

Var add_bias(Tape& tape, Var x, Var bias) {
  const Tensor& xv = tape.value(x);
  const Tensor& bv = tape.value(bias);
  if (xv.rank() < 1) raise<ShapeError>("add_bias: x has shape ", xv.shape().str(), ", expected [..., F]");
  const int64_t cols = xv.dim(xv.rank() - 1), rows = cols ? xv.numel() / cols : 0;
  detail::expect_shape("add_bias", "bias", bv, {cols});
  Tensor y = Tensor::uninitialized(xv.shape());  // every element is written
  float* yd = y.data();
  const float *xd = xv.data(), *bd = bv.data();
  detail::for_each_row_block(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) yd[r * cols + c] = xd[r * cols + c] + bd[c];
  });
  return tape.record("add_bias", std::move(y), {x, bias}, [x, bias, rows, cols](BackwardContext& ctx) {
    if (ctx.needs_grad(bias)) {
      const float* g = ctx.grad_out().data();
      detail::column_sums(
          rows, cols,
          [&](int64_t r, float* acc) {
            for (int64_t c = 0; c < cols; ++c) acc[c] += g[r * cols + c];
          },
          ctx.grad(bias).data(), true);
    }
    if (ctx.needs_grad(x)) ctx.add_grad(x, ctx.take_grad_out());  // dx = dy, handed on
  });
}

Var scale(Tape& tape, Var x, float factor) {
  const Tensor& xv = tape.value(x);
  Tensor y(xv.shape());
  float* yd = y.data();
  const float* xd = xv.data();
  detail::for_each_index(y.numel(), [&](int64_t i) { yd[i] = factor * xd[i]; });
  return tape.record("scale", std::move(y), {x}, [x, factor](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    const float* g = ctx.grad_out().data();
    float* dx = ctx.grad(x).data();
    detail::for_each_index(ctx.grad_out().numel(), [&](int64_t i) { dx[i] += factor * g[i]; });
  });
}

}  // namespace edgeattn::autograd
