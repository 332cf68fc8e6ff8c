#include "support/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "support/test_graphs.hpp"

namespace edgeattn::testing {

using autograd::Parameter;
using autograd::Tape;
using autograd::Var;

namespace {

double loss_value(const LossBuilder& build, bool training) {
  Tape tape;
  tape.training = training;
  const Var loss = build(tape);
  return tape.value(loss).data()[0];
}

}  // namespace

::testing::AssertionResult check_gradients(const std::vector<Parameter*>& params, const LossBuilder& build,
                                           const GradcheckOptions& options) {
  for (Parameter* p : params) p->zero_grad();
  {
    Tape tape;
    tape.training = options.training;
    const Var loss = build(tape);
    tape.backward(loss);
  }
  double worst_ratio = -1.0;
  std::ostringstream worst;
  int64_t checked = 0;
  for (Parameter* p : params) {
    float* v = p->value.data();
    for (int64_t i = 0; i < p->value.numel(); ++i) {
      const float saved = v[i];
      v[i] = saved + options.eps;
      const double plus = loss_value(build, options.training);
      v[i] = saved - options.eps;
      const double minus = loss_value(build, options.training);
      v[i] = saved;
      const double numeric = (plus - minus) / (2.0 * options.eps);
      const double analytic = p->grad.data()[i];
      const double err = std::fabs(analytic - numeric);
      const double allowed = options.atol + options.rtol * std::max(std::fabs(analytic), std::fabs(numeric));
      const double ratio = err / allowed;
      ++checked;
      if (!(ratio <= worst_ratio)) {  // also catches NaN
        worst_ratio = std::isnan(ratio) ? INFINITY : ratio;
        worst.str("");
        worst << "parameter '" << p->name << "' " << p->value.shape().str() << " element " << i
              << ": analytic " << analytic << ", numeric " << numeric << ", |diff| " << err << " (allowed "
              << allowed << ")";
      }
    }
  }
  if (checked == 0) return ::testing::AssertionFailure() << "no parameter elements to check";
  if (worst_ratio <= 1.0) return ::testing::AssertionSuccess() << "worst: " << worst.str();
  return ::testing::AssertionFailure()
         << "gradient mismatch, worst " << worst.str() << " (" << checked << " elements checked)";
}

Var weighted_sum(Tape& tape, Var x, uint64_t seed) {
  const Tensor& xv = tape.value(x);
  auto w = std::make_shared<const Tensor>(random_tensor({std::max<int64_t>(xv.numel(), 1)}, seed));
  double s = 0.0;
  for (int64_t i = 0; i < xv.numel(); ++i) s += static_cast<double>(xv.data()[i]) * w->data()[i];
  Tensor out{Shape()};
  out.data()[0] = static_cast<float>(s);
  return tape.record("weighted_sum", std::move(out), {x}, [x, w](autograd::BackwardContext& ctx) {
    if (!ctx.needs_grad(x)) return;
    const float g = ctx.grad_out().data()[0];
    float* dx = ctx.grad(x).data();
    for (int64_t i = 0; i < ctx.value(x).numel(); ++i) dx[i] += g * w->data()[i];
  });
}

}  // namespace edgeattn::testing
