// Adam and AdamW over a model's parameters.
//
//   Adam  (Kingma & Ba 2015), with L2 weight decay added to the gradient as torch.optim.Adam and
//         the GAT paper do (weight_decay 5e-4 on Cora):      g <- g + wd * w
//   AdamW (Loshchilov & Hutter 2019), decoupled decay:     w <- w - lr * wd * w, then the Adam step
//
// Both keep first and second moments per parameter element and use bias correction; the update
// is elementwise and deterministic.
//
// Example:
//   edgeattn::train::Adam opt(model.parameters(), {.lr = 0.005f, .weight_decay = 5e-4f});
//   for (int epoch = 0; epoch < 200; ++epoch) {
//     opt.zero_grad();
//     ... forward, tape.backward(loss) ...
//     opt.step();
//   }
#pragma once

#include <cstdint>
#include <vector>

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::train {

struct AdamConfig {
  float lr = 0.001f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.f;
  /// false: L2 added to the gradient (Adam); true: decoupled decay (AdamW).
  bool decoupled_weight_decay = false;
};

class Adam {
 public:
  /// The parameters must outlive the optimiser. Throws InvalidArgument for a negative lr,
  /// betas outside [0, 1), eps <= 0 or negative weight decay.
  Adam(std::vector<autograd::Parameter*> parameters, AdamConfig config);

  /// One update from the accumulated gradients.
  void step();
  /// Zeroes every parameter's gradient.
  void zero_grad();

  int64_t steps() const { return steps_; }
  /// The moments (per parameter, [numel] each) and the step count, for a training checkpoint.
  struct State {
    int64_t steps = 0;
    std::vector<std::vector<float>> m, v;
  };
  State state() const { return {steps_, m_, v_}; }
  /// Continues from a saved state. InvalidArgument unless it has one moment vector per
  /// parameter of the parameter's size (naming the parameter).
  void restore(State state);
  const AdamConfig& config() const { return config_; }
  void set_lr(float lr) { config_.lr = lr; }

 private:
  std::vector<autograd::Parameter*> params_;
  std::vector<std::vector<float>> m_, v_;
  AdamConfig config_;
  int64_t steps_ = 0;
};

/// AdamW with PyTorch's defaults (weight_decay 0.01) unless given.
Adam make_adamw(std::vector<autograd::Parameter*> parameters, float lr, float weight_decay = 0.01f);

}  // namespace edgeattn::train
