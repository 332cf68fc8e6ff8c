#include "edgeattn/autograd/ops/reduction.hpp"

#include <utility>
#include <vector>

#include "autograd/elementwise.hpp"

namespace edgeattn::autograd {
namespace {

// Sum of all elements: fixed blocks in double, combined in order.
double total(const Tensor& x) {
  const int64_t n = x.numel();
  const int64_t blocks = (n + detail::kElementGrain - 1) / detail::kElementGrain;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  const float* d = x.data();
  parallel_for(0, n, detail::kElementGrain, [&](int64_t b, int64_t e) {
    double s = 0.0;
    for (int64_t i = b; i < e; ++i) s += d[i];
    partial[static_cast<size_t>(b / detail::kElementGrain)] = s;
  });
  double s = 0.0;
  for (const double p : partial) s += p;
  return s;
}

Var reduce(Tape& tape, Var x, const char* op, double factor) {
  Tensor y{Shape()};
  y.data()[0] = static_cast<float>(total(tape.value(x)) * factor);
  return tape.record(op, std::move(y), {x}, [x, factor](BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    const auto g = static_cast<float>(ctx.grad_out().data()[0] * factor);
    float* dx = ctx.grad(x).data();
    detail::for_each_index(ctx.value(x).numel(), [&](int64_t i) { dx[i] += g; });
  });
}

}  // namespace

Var sum(Tape& tape, Var x) { return reduce(tape, x, "sum", 1.0); }

Var mean(Tape& tape, Var x) {
  const int64_t n = tape.value(x).numel();
  if (n == 0)
    raise<ShapeError>("mean: x has shape ", tape.value(x).shape().str(), ", expected at least one element");
  return reduce(tape, x, "mean", 1.0 / static_cast<double>(n));
}

}  // namespace edgeattn::autograd
