// matmul and linear (dense and sparse input): forward and backward through the kernels layer.
#include "edgeattn/autograd/ops/linear.hpp"

#include <memory>
#include <utility>

#include "autograd/elementwise.hpp"
#include "edgeattn/kernels/matmul.hpp"
#include "edgeattn/kernels/spmm.hpp"

namespace edgeattn::autograd {
namespace {

void check_bias(const char* op, const Tape& tape, Var bias, int64_t out) {
  if (bias) detail::expect_shape(op, "bias", tape.value(bias), {out});
}

}  // namespace

Var matmul(Tape& tape, Var x, Var w) {
  const Tensor& xv = tape.value(x);
  const Tensor& wv = tape.value(w);
  detail::expect_rank("matmul", "x", xv, 2, "[N, K]");
  detail::expect_shape("matmul", "w", wv, {xv.dim(1), kAny});
  Tensor y = Tensor::uninitialized({xv.dim(0), wv.dim(1)});  // matmul overwrites it
  kernels::matmul(xv, false, wv, false, y);
  return tape.record("matmul", std::move(y), {x, w}, [x, w](BackwardContext& ctx) {
    const Tensor& dy = ctx.grad_out();
    if (ctx.needs_grad(x))  // dx [N, K] += dy [N, M] w^T
      kernels::matmul(dy, false, ctx.value(w), true, ctx.grad(x), true);
    if (ctx.needs_grad(w))  // dw [K, M] += x^T dy
      kernels::matmul(ctx.value(x), true, dy, false, ctx.grad(w), true);
  });
}

Var linear(Tape& tape, Var x, Var weight, Var bias) {
  const Tensor& xv = tape.value(x);
  const Tensor& wv = tape.value(weight);
  detail::expect_rank("linear", "x", xv, 2, "[N, in]");
  detail::expect_shape("linear", "weight", wv, {kAny, xv.dim(1)});
  check_bias("linear", tape, bias, wv.dim(0));
  Tensor y = Tensor::uninitialized({xv.dim(0), wv.dim(0)});  // matmul overwrites it
  kernels::matmul(xv, false, wv, true, y);                   // y = x w^T
  if (bias) detail::add_bias_rows(y, tape.value(bias));
  return tape.record("linear", std::move(y), {x, weight, bias}, [x, weight, bias](BackwardContext& ctx) {
    const Tensor& dy = ctx.grad_out();
    if (ctx.needs_grad(x)) {  // dx [N, in] = dy [N, out] w [out, in], handed over (moved when x has none yet)
      Tensor dx = Tensor::uninitialized(ctx.value(x).shape());  // matmul overwrites it
      kernels::matmul(dy, false, ctx.value(weight), false, dx);
      ctx.add_grad(x, std::move(dx));
    }
    if (ctx.needs_grad(weight))  // dw [out, in] += dy^T x
      kernels::matmul(dy, true, ctx.value(x), false, ctx.grad(weight), true);
    detail::bias_backward(ctx, bias);
  });
}

Var linear(Tape& tape, CsrMatrix x, Var weight, Var bias) {
  const Tensor& wv = tape.value(weight);
  if (wv.rank() != 2 || wv.dim(1) != x.cols())
    raise<ShapeError>("linear (sparse x): weight has shape ", wv.shape().str(),
                      ", expected [out, in=", x.cols(), "] for x of shape [", x.rows(), ", ", x.cols(), "]");
  const int64_t out = wv.dim(0), in = wv.dim(1);
  check_bias("linear (sparse x)", tape, bias, out);
  // SpMM wants the weight as [in, out] rows: one small transpose instead of strided gathers.
  Tensor wt = Tensor::uninitialized({in, out});  // transpose_into and spmm overwrite their outputs
  detail::transpose_into(wv.data(), out, in, wt.data(), false);
  Tensor y = Tensor::uninitialized({x.rows(), out});
  kernels::spmm(x, wt, y);
  if (bias) detail::add_bias_rows(y, tape.value(bias));
  auto xs = std::make_shared<const CsrMatrix>(std::move(x));
  return tape.record("linear_sparse", std::move(y), {weight, bias},
                     [xs, weight, bias, in, out](BackwardContext& ctx) {
                       if (ctx.needs_grad(weight)) {  // dw = (x^T dy)^T
                         Tensor dwt = Tensor::uninitialized({in, out});
                         kernels::spmm_transposed(*xs, ctx.grad_out(), dwt);
                         detail::transpose_into(dwt.data(), in, out, ctx.grad(weight).data(), true);
                       }
                       detail::bias_backward(ctx, bias);
                     });
}

}  // namespace edgeattn::autograd
