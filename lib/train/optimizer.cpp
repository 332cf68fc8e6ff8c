#include "edgeattn/train/optimizer.hpp"

#include <cmath>

#include "autograd/elementwise.hpp"
#include "edgeattn/core/error.hpp"

namespace edgeattn::train {

Adam::Adam(std::vector<autograd::Parameter*> parameters, AdamConfig config)
    : params_(std::move(parameters)), config_(config) {
  if (!(config_.lr >= 0.f)) raise<InvalidArgument>("Adam: lr is ", config_.lr, ", expected >= 0");
  if (!(config_.beta1 >= 0.f && config_.beta1 < 1.f))
    raise<InvalidArgument>("Adam: beta1 is ", config_.beta1, ", expected [0, 1)");
  if (!(config_.beta2 >= 0.f && config_.beta2 < 1.f))
    raise<InvalidArgument>("Adam: beta2 is ", config_.beta2, ", expected [0, 1)");
  if (!(config_.eps > 0.f)) raise<InvalidArgument>("Adam: eps is ", config_.eps, ", expected > 0");
  if (!(config_.weight_decay >= 0.f))
    raise<InvalidArgument>("Adam: weight_decay is ", config_.weight_decay, ", expected >= 0");
  for (const autograd::Parameter* p : params_) {
    if (p == nullptr) raise<InvalidArgument>("Adam: a parameter pointer is null");
    m_.emplace_back(static_cast<size_t>(p->value.numel()), 0.f);
    v_.emplace_back(static_cast<size_t>(p->value.numel()), 0.f);
  }
}

namespace {

struct AdamCoefficients {
  float b1, b2, l2, shrink, step_size, inv_sqrt_bc2, eps;
};

// One span of parameters: restrict pointers and no calls, so the loop vectorises (sqrt and
// divide included). Same arithmetic, in the same order, as the scalar loop it replaced.
void adam_span(int64_t n, AdamCoefficients c, const float* __restrict g, float* __restrict w,
               float* __restrict m, float* __restrict v) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float wi = w[i] * c.shrink;  // AdamW's decoupled decay (shrink = 1 for Adam)
    const float gi = g[i] + c.l2 * wi;
    const float mi = c.b1 * m[i] + (1.f - c.b1) * gi;
    const float vi = c.b2 * v[i] + (1.f - c.b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    // torch.optim.Adam: denom = sqrt(v) / sqrt(bc2) + eps; w -= lr / bc1 * m / denom
    w[i] = wi - c.step_size * mi / (std::sqrt(vi) * c.inv_sqrt_bc2 + c.eps);
  }
}

}  // namespace

void Adam::step() {
  ++steps_;
  const float b1 = config_.beta1, b2 = config_.beta2, lr = config_.lr, wd = config_.weight_decay;
  const double bc1 = 1.0 - std::pow(static_cast<double>(b1), static_cast<double>(steps_));
  const double bc2 = 1.0 - std::pow(static_cast<double>(b2), static_cast<double>(steps_));
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  for (size_t k = 0; k < params_.size(); ++k) {
    autograd::Parameter& p = *params_[k];
    if (p.grad.absent() || p.grad.numel() != p.value.numel())
      raise<ShapeError>("Adam: parameter '", p.name, "' has gradient of shape ", p.grad.shape().str(),
                        ", expected ", p.value.shape().str());
    float* w = p.value.data();
    const float* g = p.grad.data();
    float* m = m_[k].data();
    float* v = v_[k].data();
    const int64_t n = p.value.numel();
    const float shrink = config_.decoupled_weight_decay ? 1.f - lr * wd : 1.f;
    const float l2 = config_.decoupled_weight_decay ? 0.f : wd;
    autograd::detail::for_each_span(n, [&](int64_t b, int64_t e) {
      adam_span(e - b, {b1, b2, l2, shrink, step_size, inv_sqrt_bc2, config_.eps}, g + b, w + b, m + b,
                v + b);
    });
  }
}

void Adam::zero_grad() {
  for (autograd::Parameter* p : params_)
    if (!p->grad.absent()) autograd::detail::zero_into(p->grad.data(), p->grad.numel());
}

Adam make_adamw(std::vector<autograd::Parameter*> parameters, float lr, float weight_decay) {
  AdamConfig c;
  c.lr = lr;
  c.weight_decay = weight_decay;
  c.decoupled_weight_decay = true;
  return Adam(std::move(parameters), c);
}

void Adam::restore(State state) {
  if (state.m.size() != params_.size() || state.v.size() != params_.size())
    raise<InvalidArgument>("Adam::restore: the state has moments for ", state.m.size(), " and ",
                           state.v.size(), " parameters, the optimiser has ", params_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    const auto n = static_cast<size_t>(params_[k]->value.numel());
    if (state.m[k].size() != n || state.v[k].size() != n)
      raise<InvalidArgument>("Adam::restore: the moments of ", params_[k]->name, " have ", state.m[k].size(),
                             " and ", state.v[k].size(), " values, expected ", n);
  }
  if (state.steps < 0) raise<InvalidArgument>("Adam::restore: steps is ", state.steps, ", expected >= 0");
  m_ = std::move(state.m);
  v_ = std::move(state.v);
  steps_ = state.steps;
}

}  // namespace edgeattn::train
