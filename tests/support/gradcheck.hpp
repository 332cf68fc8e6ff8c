// Finite-difference gradient checks for autograd ops and layers.
//
// `check_gradients(params, build)` records the loss on a fresh tape with `build`, runs backward
// to get the analytic gradients (Parameter::grad), then perturbs every element of every
// parameter by +-eps and compares (f(p + eps) - f(p - eps)) / (2 eps) with the analytic value:
//   |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|)
// It reports the worst element (parameter name, flat index, both values). Values are float32, so
// eps trades truncation error (~eps^2) against rounding (~1e-7 * |f| / eps): eps = 1e-2..1e-3
// with rtol ~1e-2 and atol ~1e-3 suits losses of order 1. Keep inputs away from the kinks of
// relu/leaky_relu/elu (|x| > eps) so both sides of the difference use the same branch.
//
// Example:
//   Parameter w{"w", random_tensor({3, 4}, 1)};
//   EXPECT_TRUE(check_gradients({&w}, [&](Tape& t) {
//     return weighted_sum(t, relu(t, t.parameter(w)), /*seed=*/7);
//   }));
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "edgeattn/autograd/tape.hpp"

namespace edgeattn::testing {

struct GradcheckOptions {
  float eps = 3e-3f;
  float rtol = 2e-2f;
  float atol = 2e-3f;
  /// Run the builder with tape.training = this (dropout is deterministic for a fixed seed).
  bool training = true;
};

/// Builds a scalar loss on the given (fresh) tape, using tape.parameter(p) for each checked p.
using LossBuilder = std::function<autograd::Var(autograd::Tape&)>;

/// Success, or a failure message naming the worst element of the worst parameter.
::testing::AssertionResult check_gradients(const std::vector<autograd::Parameter*>& params,
                                           const LossBuilder& build, const GradcheckOptions& options = {});

/// sum_i x_i * w_i with fixed pseudo-random weights w in [-1, 1) from `seed`: a scalar whose
/// gradient exercises every element of x differently (a plain sum would hide errors that are
/// constant across elements, e.g. in softmax outputs whose rows sum to 1).
autograd::Var weighted_sum(autograd::Tape& tape, autograd::Var x, uint64_t seed);

}  // namespace edgeattn::testing
