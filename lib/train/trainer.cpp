#include "edgeattn/train/trainer.hpp"

#include <chrono>
#include <cmath>

#include "edgeattn/autograd/ops/loss.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/train/metrics.hpp"

namespace edgeattn::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The training loss of `logits` on the tape (cross-entropy, or BCE for multi-label data).
autograd::Var loss_of(autograd::Tape& tape, autograd::Var logits, const data::Labels& labels,
                      std::span<const int64_t> nodes) {
  if (labels.multi_label())
    return autograd::bce_with_logits(tape, logits, tape.constant_ref(labels.multi_hot), nodes);
  return autograd::cross_entropy(tape, logits, labels.classes, nodes);
}

}  // namespace

uint64_t step_seed(uint64_t seed, int64_t epoch) {
  const auto r =
      philox4x32(seed, {static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32), 0x5eed, 0});
  return (uint64_t{r[0]} << 32) | r[1];
}

Evaluation evaluate(const autograd::Tape& tape, autograd::Var logits, const data::Labels& labels,
                    std::span<const int64_t> nodes) {
  Evaluation e;
  if (nodes.empty()) return e;
  // Loss on a scratch tape over a constant copy-free reference to the logits.
  autograd::Tape scratch;
  scratch.training = false;
  const autograd::Var x = scratch.constant_ref(tape.value(logits));
  e.loss = static_cast<double>(scratch.value(loss_of(scratch, x, labels, nodes)).data()[0]);
  e.accuracy = score(labels.metric(), tape.value(logits), labels, nodes);
  return e;
}

TrainResult fit(const ForwardFn& forward, std::vector<autograd::Parameter*> parameters,
                const data::Labels& labels, const data::Split& split, const TrainConfig& config) {
  if (config.epochs < 1) raise<InvalidArgument>("fit: epochs is ", config.epochs, ", expected >= 1");
  if (config.patience < 0) raise<InvalidArgument>("fit: patience is ", config.patience, ", expected >= 0");
  if (split.train.empty()) raise<InvalidArgument>("fit: the split has no training nodes");
  const auto start = Clock::now();
  Adam optimizer(parameters, config.optimizer);
  EarlyStopping stopper(parameters,
                        {.patience = std::max<int64_t>(config.patience, 1), .criterion = config.criterion});
  TrainResult result;
  double train_seconds = 0;
  autograd::Tape tape;
  // Activations go as soon as the backward is past them, so the gradients reuse their blocks.
  tape.release_in_backward = true;
  for (int64_t epoch = 0; epoch < config.epochs; ++epoch) {
    EpochStats s;
    s.epoch = epoch;
    auto t0 = Clock::now();
    tape.clear();
    tape.training = true;
    tape.profiling = config.profile;
    optimizer.zero_grad();
    const autograd::Var logits = forward(tape, step_seed(config.seed, epoch));
    const autograd::Var loss = loss_of(tape, logits, labels, split.train);
    s.train_loss = static_cast<double>(tape.value(loss).data()[0]);
    tape.backward(loss);
    const auto t_step = Clock::now();
    optimizer.step();
    if (config.profile) {
      autograd::OpTime& adam = result.op_times["adam_step"];
      adam.forward_seconds += seconds_since(t_step);
      ++adam.forward_calls;
    }
    tape.profiling = false;
    s.train_seconds = seconds_since(t0);
    train_seconds += s.train_seconds;

    t0 = Clock::now();
    tape.clear();
    tape.training = false;
    const autograd::Var eval_logits = forward(tape, 0);
    const Evaluation tr = evaluate(tape, eval_logits, labels, split.train);
    const Evaluation va = evaluate(tape, eval_logits, labels, split.val);
    const Evaluation te = evaluate(tape, eval_logits, labels, split.test);
    s.train_accuracy = tr.accuracy;
    s.val_loss = va.loss;
    s.val_accuracy = va.accuracy;
    s.test_loss = te.loss;
    s.test_accuracy = te.accuracy;
    s.eval_seconds = seconds_since(t0);
    if (!std::isfinite(s.train_loss))
      raise<InvalidArgument>("fit: the training loss became ", s.train_loss, " at epoch ", epoch,
                             " (learning rate too high?)");
    result.history.push_back(s);
    result.epochs_run = epoch + 1;

    const bool stop = config.patience > 0 ? stopper.update(epoch, s.val_loss, s.val_accuracy) : false;
    if (config.on_epoch && !config.on_epoch(s)) break;
    if (stop) break;
  }
  if (config.patience > 0) {
    stopper.restore_best();
    result.best_epoch = stopper.best_epoch();
  } else {
    result.best_epoch = result.epochs_run - 1;
  }
  // The kept weights' metrics: re-evaluate (cheap, and exact even when the best epoch was not the last).
  tape.clear();
  tape.training = false;
  const autograd::Var logits = forward(tape, 0);
  const Evaluation va = evaluate(tape, logits, labels, split.val);
  const Evaluation te = evaluate(tape, logits, labels, split.test);
  result.val_accuracy = va.accuracy;
  result.val_loss = va.loss;
  result.test_accuracy = te.accuracy;
  result.test_loss = te.loss;
  for (const auto& [op, t] : tape.profile()) result.op_times[op] = t;
  result.seconds_per_epoch = train_seconds / static_cast<double>(result.epochs_run);
  result.total_seconds = seconds_since(start);
  return result;
}

}  // namespace edgeattn::train
