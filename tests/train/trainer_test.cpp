// The training loop's guards: a loss that turns NaN, in training or only in evaluation (nodes that
// training never reads), ends the run with an error naming the loss and the epoch, instead of
// early stopping choosing weights against a NaN loss and the run reporting NaN metrics.
#include "edgeattn/train/trainer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "edgeattn/autograd/ops.hpp"
#include "support/expect_error.hpp"

namespace edgeattn::train {
namespace {

using edgeattn::testing::expect_throw_naming;

// Six nodes of two classes, one feature each, logits = x W: node `bad` has a NaN feature.
struct Tiny {
  Tensor x{{6, 1}};
  autograd::Parameter w;
  data::Labels labels;
  data::Split split{{0, 1}, {2, 3}, {4, 5}};
  explicit Tiny(int64_t bad) {
    for (int64_t i = 0; i < 6; ++i) x.data()[i] = i % 2 ? 1.f : -1.f;
    if (bad >= 0) x.data()[bad] = std::numeric_limits<float>::quiet_NaN();
    w.name = "w";
    w.value = Tensor({2, 1});
    w.value.data()[0] = 0.5f;
    w.value.data()[1] = -0.5f;
    labels.classes = {0, 1, 0, 1, 0, 1};
    labels.num_classes = 2;
  }
  TrainResult fit(int64_t epochs, int64_t eval_every = 1) {
    TrainConfig tc;
    tc.epochs = epochs;
    tc.patience = 0;
    tc.eval_every = eval_every;
    const auto forward = [&](autograd::Tape& tape, uint64_t) {
      return autograd::linear(tape, tape.constant(x), tape.parameter(w));
    };
    return train::fit(forward, {&w}, labels, split, tc);
  }
};

TEST(Trainer, ARunOnFiniteInputsReportsFiniteMetrics) {
  const TrainResult r = Tiny(-1).fit(5);
  EXPECT_TRUE(std::isfinite(r.val_loss));
  EXPECT_TRUE(std::isfinite(r.test_loss));
}

TEST(Trainer, ANaNTrainingLossIsAnError) {
  expect_throw_naming<InvalidArgument>([] { Tiny(1).fit(5); },
                                       {"training loss became nan at epoch 0", "non-finite input features"});
}

TEST(Trainer, ANaNOnlyInEvaluationIsAnErrorToo) {
  // The NaN feature of a validation node leaves the first training loss finite, but not the
  // weights (its zero gradient times NaN), so the first evaluation is where it shows.
  for (const int64_t bad : {3, 5})
    expect_throw_naming<InvalidArgument>(
        [&] { Tiny(bad).fit(5); },
        {"validation loss became nan at epoch 0", "while the training loss is", "non-finite input features"});
  // An epoch that eval_every skips has NaN metrics by design; the next training loss is the guard.
  expect_throw_naming<InvalidArgument>([] { Tiny(5).fit(5, 2); }, {"training loss became nan at epoch 1"});
}

}  // namespace
}  // namespace edgeattn::train
